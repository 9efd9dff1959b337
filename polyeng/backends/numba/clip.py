"""clip as NUMBA kernels, on the storage dtype (16-bit floats as the integers ``kernel_view`` gives).

Comparisons are made on widened values and the element kept is the stored one, so the result is
BASIC's bit for bit (NaN payloads included). Bounds of another float dtype are rounded to x's on
the host first (as BASIC does), a missing bound is ±inf, which is never picked. Two kernels:
- both bounds one value (numbers, the common case): flat contiguous chunks of x run in parallel,
  the bounds loop constants;
- array bounds: the output (x's shape, x contiguous) cut into equal flat ranges, one per task,
  walked as rows of the innermost merged axis (``_broadcast``), along which each bound steps by
  1 (read as a slice) or by 0 (one value for the row); a bound with any other inner step is
  copied contiguous first.
"""
from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from ...engine import dtypes as dt
from ._broadcast import merged_layout, operand_view
from ._runtime import inline, jit, launch, threads_for
from ._storage import kernel_view, widen

_CHUNK = 16384                # elements per parallel task of the flat kernel
_TASK_ELEMENTS = 32 * 1024    # at least this much output per parallel task of the broadcast kernel


@jit(parallel=True)
def _clip_scalars(x, out, chunks, lo, hi):
    """lo, hi: the bounds as stored elements."""
    n = x.size
    flo, fhi = widen(lo), widen(hi)
    lo_nan, hi_nan = flo != flo, fhi != fhi
    for c in prange(chunks):
        start, stop = c * n // chunks, (c + 1) * n // chunks
        src, dst = x[start:stop], out[start:stop]   # indexed from 0 by range variables: vectorizable
        for i in range(stop - start):
            v = src[i]
            f = widen(v)
            low = (f < flo) | lo_nan      # a comparison with NaN is false: NaN in x stays
            held = lo if low else v
            fheld = flo if low else f
            dst[i] = hi if (fheld > fhi) | hi_nan else held


def _pick(v, k):
    """Element ``k`` of a bound's row: of an array, element k; of a broadcast row, its one value."""


@overload(_pick, inline="always")
def _pick_impl(v, k):
    if isinstance(v, types.Array):
        return lambda v, k: v[k]
    return lambda v, k: v


@inline
def _row(src, lo, hi, dst):
    for k in range(dst.size):
        v = src[k]
        f = widen(v)
        low_value, high_value = _pick(lo, k), _pick(hi, k)
        flo, fhi = widen(low_value), widen(high_value)
        low = (f < flo) | (flo != flo)
        held = low_value if low else v
        fheld = flo if low else f
        dst[k] = high_value if (fheld > fhi) | (fhi != fhi) else held


@inline
def _task(t, tasks, x, lo, hi, out, shape, strides, starts):
    """Task ``t`` of ``tasks``: its share of out (flat, C order over ``shape``, as x is). ``strides[i]``
    are bound i's element strides over the merged ``shape`` (innermost last, 0 or 1 there),
    ``starts[i]`` the place of its first element."""
    rank = shape.size
    length = shape[rank - 1]
    total = out.size
    sl, sh = strides[0, rank - 1], strides[1, rank - 1]
    pos, stop = t * total // tasks, (t + 1) * total // tasks
    index = np.zeros(rank, np.int64)
    rest = pos // length
    k = pos - rest * length   # where the task starts inside its first row
    lo_at, hi_at = starts[0], starts[1]
    for d in range(rank - 2, -1, -1):
        q = rest // shape[d]
        index[d] = rest - q * shape[d]
        rest = q
        lo_at += index[d] * strides[0, d]
        hi_at += index[d] * strides[1, d]
    while pos < stop:
        n = min(length - k, stop - pos)
        src, dst = x[pos:pos + n], out[pos:pos + n]
        if sl == 1 and sh == 1:
            _row(src, lo[lo_at + k:lo_at + k + n], hi[hi_at + k:hi_at + k + n], dst)
        elif sl == 1:
            _row(src, lo[lo_at + k:lo_at + k + n], hi[hi_at], dst)
        elif sh == 1:
            _row(src, lo[lo_at], hi[hi_at + k:hi_at + k + n], dst)
        else:
            _row(src, lo[lo_at], hi[hi_at], dst)
        pos += n
        k = 0
        d = rank - 2
        while d >= 0:
            index[d] += 1
            lo_at += strides[0, d]
            hi_at += strides[1, d]
            if index[d] < shape[d]:
                break
            lo_at -= shape[d] * strides[0, d]
            hi_at -= shape[d] * strides[1, d]
            index[d] = 0
            d -= 1


@jit(parallel=True)
def _clip_broadcast(x, lo, hi, out, shape, strides, starts, tasks):
    for t in prange(tasks):
        _task(t, tasks, x, lo, hi, out, shape, strides, starts)


def _bound(value, dtype, missing: float):
    if value is None:
        return np.asarray(missing, dtype)
    return value if value.dtype == dtype else dt.round_to(value, dtype)


def _read_only(a):
    a.flags.writeable = False   # one compiled type whether or not the caller's array is writable
    return a


def _layout(bounds, shape):
    """(flat views, merged shape, strides, starts) of the two bounds against x's ``shape``."""
    views = [operand_view(b, shape) for b in bounds]
    merged, strides = merged_layout(shape, [s for _, _, s in views])
    if any(s[-1] not in (0, 1) for s in strides):   # strided along the row: copy that bound
        views = [operand_view(np.ascontiguousarray(b), shape) if s[-1] not in (0, 1) else v
                 for b, v, s in zip(bounds, views, strides)]
        merged, strides = merged_layout(shape, [s for _, _, s in views])
    return ([v[0] for v in views], np.array(merged, np.int64), np.array(strides, np.int64),
            np.array([v[1] for v in views], np.int64))


def clip(p, x, min, max):   # noqa: A002 - the op's argument names
    return _clip(x, min, max)


def _clip(x, low, high):
    out = np.empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    lo, hi = kernel_view(_bound(low, x.dtype, -np.inf)), kernel_view(_bound(high, x.dtype, np.inf))
    src = _read_only(kernel_view(np.ascontiguousarray(x)).reshape(-1))
    dst = kernel_view(out).reshape(-1)
    if lo.size == 1 and hi.size == 1:
        chunks = min(-(-x.size // _CHUNK), 4 * threads_for(out.nbytes))
        launch(_clip_scalars, out.nbytes, src, dst, chunks, lo.reshape(-1)[0], hi.reshape(-1)[0])
        return out
    flats, shape, strides, starts = _layout((lo, hi), x.shape)
    tasks = max(1, min(-(-out.size // _TASK_ELEMENTS), 4 * threads_for(out.nbytes)))
    launch(_clip_broadcast, out.nbytes, src, flats[0], flats[1], dst, shape, strides, starts, tasks)
    return out
