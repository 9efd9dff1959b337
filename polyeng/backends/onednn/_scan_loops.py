"""The compiled scans of ``_scans.py`` (imported once numba is wanted): one pass each, on
integers where that lets LLVM vectorise the reduction without assuming that no NaN is met."""
from __future__ import annotations

import numpy as np

from ..numba._runtime import jit

ABS, INF = 0x7FFFFFFF, 0x7F800000
NEG_INF = -0x800000   # the int32 bits of -inf (0xFF800000)


@jit
def as_float(bits):
    """The f32 whose bits are int32 ``bits``, as a float."""
    word = np.empty(1, np.int32)
    word[0] = bits
    return np.float64(word.view(np.float32)[0])


@jit
def magnitude_bits(bits):
    """The largest ``|x|`` of f32 values given as their int32 bits (NaN if one is a NaN)."""
    m = np.int32(0)
    for i in range(bits.size):
        a = bits[i] & np.int32(ABS)
        m = a if a > m else m
    return as_float(m)


@jit
def extreme_keys(keys):
    """(largest, smallest, whether one is a NaN) of f32 values given as their int32 bits."""
    hi, lo, m = np.int32(-2147483648), np.int32(2147483647), np.int32(0)
    for i in range(keys.size):
        k = keys[i]
        a = k & np.int32(ABS)
        m = a if a > m else m
        # a negative number's bits flipped below its sign: larger magnitudes sort lower
        s = k ^ ((k >> np.int32(31)) & np.int32(ABS))
        hi = s if s > hi else hi
        lo = s if s < lo else lo
    # the flip undone (it is its own inverse)
    return (as_float(hi ^ ((hi >> np.int32(31)) & np.int32(ABS))),
            as_float(lo ^ ((lo >> np.int32(31)) & np.int32(ABS))), m > np.int32(INF))


@jit
def masked_rows(keys, row):
    """(the smallest value that is not -inf, or 0.0 if none; whether a row of ``row`` values is
    -inf only) of finite or -inf f32 values given as their int32 bits, rows of ``row`` one after
    another. Per row two loops of one integer reduction each, which LLVM vectorises (one loop of
    both did not: 3x the time)."""
    lo = np.int32(2147483647)
    whole = 0
    minus = np.int32(NEG_INF ^ ABS)   # -inf's key once the bits are made monotone: the lowest of all
    for start in range(0, keys.size, row):
        part = keys[start:start + row]
        count = np.int32(0)
        for i in range(row):
            count += np.int32(part[i] == np.int32(NEG_INF))
        for i in range(row):
            k = part[i]
            s = k ^ ((k >> np.int32(31)) & np.int32(ABS))
            s = np.int32(2147483647) if s == minus else s
            lo = s if s < lo else lo
        whole += count == row
    if lo == np.int32(2147483647):
        return 0.0, whole > 0
    return as_float(lo ^ ((lo >> np.int32(31)) & np.int32(ABS))), whole > 0


@jit
def doubt(mean, var):
    """Whether any row's statistics leave it in doubt (``normalization.may_be_constant``, in f32)."""
    count = 0
    scale = np.float32(2.0 ** -10)
    for i in range(mean.size):
        m = np.abs(mean[i]) * scale
        count += var[i] <= m * m
    return count > 0
