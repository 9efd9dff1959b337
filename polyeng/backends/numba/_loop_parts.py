"""How NUMBA's recurrent loop (``_recurrence_loop``) cuts a layer's hidden units into parts, and
whether it makes their step products with ``_small_gemm``'s packed function: without numba, so
that lstm's recommendation (``ops/lstm.py``) can ask before any kernel loads."""
from __future__ import annotations

import functools

import numpy as np

UNITS_PER_PART = 32   # hidden units per part: four gates of 32 keep a part's product efficient


def parts_for(hidden: int, cores: int) -> int:
    return max(1, min(hidden // UNITS_PER_PART, 4 * cores))


@functools.lru_cache(maxsize=64)
def bounds_for(hidden: int, parts: int) -> np.ndarray:
    """The parts' first hidden units, and ``hidden`` last (kept: the same array for every call of a
    layer's shape; the loops only read it)."""
    return np.array([p * hidden // parts for p in range(parts + 1)], np.int64)


def whole_blocks(bounds, gates: int) -> bool:
    """Whether every part's gate columns (``gates`` per hidden unit) are whole blocks of
    ``_small_gemm``'s columns: its function makes the columns past the last whole block one at a
    time, slower than OpenBLAS (4x100 by 100x132 took 13.9 us against 11.4)."""
    from . import _small_gemm
    return not np.any(gates * np.diff(np.asarray(bounds)) % _small_gemm.BLOCK_COLS)


def own_products(dtype, bounds, gates: int) -> bool:
    """Whether the loop makes the step products of a layer cut at ``bounds`` computing in ``dtype``
    with ``_small_gemm``'s function: f32 on a CPU that wants it (AVX2 and FMA, no AVX-512), every
    part whole blocks of 16 columns (``_recurrence_loop.gemm_for`` and lstm's recommendation)."""
    from . import _small_gemm
    return np.dtype(dtype) == np.float32 and _small_gemm.wanted() and whole_blocks(bounds, gates)
