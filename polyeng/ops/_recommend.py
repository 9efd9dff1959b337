"""Recommendation rules (step 4 of the selection): the engine each op prefers for a call.

NUMBA's kernels run on the calling thread below a 256 KB output (``backends/numba/_runtime.py``),
so a small call on either engine is one thread's work, on a busy machine as on an idle one;
each op prefers NUMBA from the size on which its kernel beats numpy and BASIC below it. The
thresholds are where NUMBA overtook BASIC in ``benchmarks/crossover.py`` (table in
docs/performance.md); the size is the number of elements of all array arguments. After the
recommendation, every op tries NUMBA, then BASIC (``PREFERENCE``).
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
