"""Recommendation rules (step 4 of the selection): the engine each op prefers for a call.

A NUMBA call pays a parallel launch (about 10-20 µs) that a small numpy call does not, so
each op prefers NUMBA from a size on and BASIC below it. The thresholds are where NUMBA
overtook BASIC in ``benchmarks/crossover.py`` (table in docs/performance.md); the size is
the number of elements of all array arguments. After the recommendation, every op tries
NUMBA, then BASIC (``PREFERENCE``).
"""
from __future__ import annotations

import math

JIT, REFERENCE = "numba", "basic"
PREFERENCE = (JIT,)


def elements(call) -> int:
    return sum(math.prod(t.shape) for t in call.tensors().values())


def jit_from(min_elements: int):
    """Recommend NUMBA for calls of at least ``min_elements`` elements, else BASIC."""
    def recommend(call):
        return JIT if elements(call) >= min_elements else REFERENCE
    recommend.min_elements = min_elements
    recommend.__doc__ = f"numba from {min_elements} elements, basic below"
    return recommend


def reference(call):
    """BASIC: the NUMBA kernel runs the same numpy BLAS call, so nothing is gained."""
    return REFERENCE
