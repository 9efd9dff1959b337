"""The calls each op's spec declares: one small, typical call per op (``OpSpec.example``, used by
``polyeng demo``, ``polyeng warmup`` and the engine test suite), a call on zero-size inputs
(``OpSpec.zero_size``) and the further calls ``polyeng warmup`` compiles (``OpSpec.warmup``)."""
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


def warmup_variants(rng: np.random.Generator | None = None, dtype=np.float32) -> list:
    """(op, args, kwargs) of the calls beyond the examples whose compiled kernels differ (``OpSpec.warmup``)."""
    rng = rng or np.random.default_rng(0)

    def t(*shape):
        return rng.standard_normal(shape).astype(dtype)
    return [(name, args, kwargs) for name, spec in catalogue.specs().items() if spec.warmup is not None
            for args, kwargs in spec.warmup(t, rng)]
