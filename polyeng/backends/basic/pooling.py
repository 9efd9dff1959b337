"""avg_pool2d/3d and max_pool2d/3d in numpy.

Each kernel pads the input once, then visits the kernel offsets in row-major order,
combining one strided slice (that offset's tap of every window) per offset. The padding,
slices, divisor and tap indices are the prepared call's (``polyeng.ops.pooling``).
"""
import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit

# The padded copy may be this many times the input (plus a fixed allowance) before BASIC
# declines the call: windows far larger than the input (kernel_size=2**20 with padding=2**19)
# would pad a small input to terabytes, where the engines that clip windows need nothing.
PAD_GROWTH, PAD_ALLOWANCE = 16, 1 << 26


def _pad_limit(call):
    """The reason BASIC declines a call whose padded copy would dwarf its input, else None."""
    p, x = call.prepared, call.args["x"]
    extents, spatial = p.padded_extent, p.geometry.spatial
    lead = math.prod(x.shape[:x.ndim - len(extents)])
    padded = lead * math.prod(size + left + right for size, (left, right) in zip(spatial, extents))
    nbytes = padded * x.dtype.itemsize
    if nbytes <= PAD_GROWTH * x.nbytes + PAD_ALLOWANCE:
        return None
    return (f"BASIC pads x {tuple(x.shape)} to whole windows, which would take {nbytes} bytes here "
            f"(kernel_size {p.geometry.kernel}, padding {p.geometry.padding}); the other engines clip "
            f"windows instead")


def _pad(x, p, value):
    """``x`` padded on its spatial axes by ``p.padded_extent``, filled with ``value``."""
    extents, spatial = p.padded_extent, p.geometry.spatial
    if all(left == 0 and right == 0 for left, right in extents):
        return x
    lead = x.shape[:x.ndim - len(extents)]
    shape = lead + tuple(size + left + right for size, (left, right) in zip(spatial, extents))
    padded = np.full(shape, value, dtype=x.dtype)
    padded[(Ellipsis,) + tuple(slice(left, left + size) for size, (left, _) in zip(spatial, extents))] = x
    return padded


@limit(_pad_limit)
def avg_pool2d(p, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    # 16-bit storage is summed in f32 (the dispatcher normally hands f32 already)
    acc_dtype = dt.result_type(x.dtype, dt.float32)
    total = np.zeros(p.shape, dtype=acc_dtype)
    if total.size == 0:
        return total.astype(x.dtype)
    padded = _pad(x, p, 0)
    # zero padding adds nothing, so summing every tap in row-major order matches PyTorch's
    # in-bounds sum bit for bit
    for _, slices in p.taps:
        total += padded[(Ellipsis,) + slices]
    # divide (not multiply by a reciprocal) by the divisor converted to the sum's type, as PyTorch does
    total /= p.divisor.astype(acc_dtype)
    return total.astype(x.dtype, copy=False)


def _comparable(x):
    """``x`` in a dtype numpy compares quickly and exactly: 16-bit floats widen to f32, bool to uint8."""
    if x.dtype in dt.SIXTEEN_BIT_FLOATS:
        return x.astype(dt.float32)
    if x.dtype == dt.bool_:
        return x.view(np.uint8)
    return x


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


@limit(_pad_limit)
def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    work = _comparable(x)
    lowest = _lowest(work.dtype)
    best = np.full(p.shape, lowest, dtype=work.dtype)
    # a window whose taps never beat the lowest value reports its first in-bounds tap
    index = np.broadcast_to(p.first_index, best.shape).copy() if return_indices else None
    if best.size:
        padded = _pad(work, p, lowest)
        is_float = work.dtype.kind == "f"
        wins = np.empty(best.shape, dtype=bool)
        nan = np.empty(best.shape, dtype=bool) if is_float else None
        # strided reads are slow: with a step along the last axis, gather each offset's taps
        # into one contiguous buffer first, so the compare, NaN test and copy read it fast
        gathered = np.empty(best.shape, dtype=work.dtype) if p.geometry.stride[-1] > 1 else None
        for offsets, slices in p.taps:
            taps = padded[(Ellipsis,) + slices]
            if gathered is not None:
                np.copyto(gathered, taps)
                taps = gathered
            # PyTorch's rule `val > max || isnan(val)`: ties keep the first tap, a NaN
            # takes over (so the last NaN of a window is the one reported), padding never wins
            np.greater(taps, best, out=wins)
            if is_float:
                np.logical_or(wins, np.isnan(taps, out=nan), out=wins)
            np.copyto(best, taps, where=wins)
            if index is not None:
                at = sum(part[j] for part, j in zip(p.tap_index_parts, offsets))
                np.copyto(index, at, where=wins)
    values = best.astype(x.dtype, copy=False)
    return (values, index) if return_indices else values


# 2-D and 3-D take the same keyword arguments: one function serves both ranks.
avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
