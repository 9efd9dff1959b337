"""One small, typical call per op, from each op's ``OpSpec.example``: used by ``polyeng demo``,
``polyeng warmup`` and the engine test suite."""
from __future__ import annotations

import numpy as np

from .ops import catalogue


def example_calls(rng: np.random.Generator | None = None, dtype=np.float32) -> dict:
    """op name -> (args, kwargs) for a small representative call with float inputs of ``dtype``."""
    rng = rng or np.random.default_rng(0)

    def t(*shape):
        return rng.standard_normal(shape).astype(dtype)
    return {name: spec.example(t, rng) for name, spec in catalogue.specs().items() if spec.example is not None}


def zero_size_calls() -> dict:
    """op name -> (args, kwargs, result shape) for a call on zero-size float32 arrays."""
    def z(*shape):
        return np.zeros(shape, np.float32)
    return {name: spec.zero_size(z) for name, spec in catalogue.specs().items() if spec.zero_size is not None}
