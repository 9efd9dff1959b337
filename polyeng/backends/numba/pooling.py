"""avg_pool2d/3d and max_pool2d/3d as NUMBA kernels.

Every call is pooled as 3-D over a (planes, D, H, W) view (2-D pooling is 3-D pooling with
D = 1 and a 1-tap depth window), so each storage dtype compiles one max and one avg kernel.
The parallel loop runs over output rows. For each in-bounds input row of a window and each
horizontal tap, the output columns whose taps all lie inside the row take a pass without
bounds checks that LLVM vectorizes across columns; the few columns at each edge take a
bounds-checked loop. Every output sees its taps in row-major window order, so max pooling
reproduces PyTorch's CPU kernel (and BASIC) bit for bit, with its NaN and first-tie rules,
and avg pooling sums in BASIC's order. The window geometry comes from ``polyeng.ops.pooling``.
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from ...engine import dtypes as dt
from ...ops.pooling import geometry
from ._runtime import FASTMATH, inline, jit, launch_lock
from ._storage import compute_dtype, kernel_view, narrow, widen

# The row loops are ordinary functions called from a small parallel loop (numba's parfor
# passes slow down a lot on large loop bodies). They are compiled with the kernels' preset
# but without ``jit``'s cache guard, which the calling kernel already holds and which does
# not nest; their machine code is cached inside the calling kernel's.
_rows = numba.njit(nogil=True, fastmath=FASTMATH, error_model="numpy")

_NO_INDEX = np.zeros((1, 1, 1, 1), dtype=np.int64)   # never touched without return_indices


@intrinsic
def _even_tap(typingctx, row, start, i):
    """``row[start + 2 * i]`` read as the low half of a double-width integer at ``i``.

    numba's array addressing hides the stride from LLVM, which then gathers stride-2 reads
    element by element; a unit-stride load of element pairs vectorizes. It also reads
    ``row[start + 2 * i + 1]``, so callers keep that inside the array.
    """
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        element = context.get_value_type(signature.args[0].dtype)
        bits = context.get_abi_sizeof(element) * 8
        pair = ir.IntType(2 * bits)
        first = builder.gep(data, [args[1]], inbounds=True)
        word = builder.load(builder.gep(builder.bitcast(first, pair.as_pointer()), [args[2]], inbounds=True),
                            align=bits // 8)
        low = builder.trunc(word, ir.IntType(bits))
        return low if isinstance(element, ir.IntType) else builder.bitcast(low, element)
    return row.dtype(row, types.intp, types.intp), codegen


@inline
def _tap(row, start, i, step):
    if step == 2:
        return _even_tap(row, start, i)
    return row[np.uint64(i * step + start)]   # unsigned: no negative-index wraparound code


@inline
def _first_tap(o, s, p, d):
    """Coordinate of the first in-bounds tap of window ``o`` (past it when none is inside)."""
    start = o * s - p
    if start < 0:
        start += ((-start + d - 1) // d) * d
    return start


@inline
def _interior(size, out, k, s, p, d):
    """[lo, hi): the output positions whose taps all lie inside [0, size), minus one more
    element at the end for stride-2 pair reads."""
    lo = min(out, (p + s - 1) // s)
    spare = 1 if s == 2 else 0
    hi = min(out, (size - 1 - spare - (k - 1) * d + p) // s + 1)
    return lo, max(lo, hi)


@inline
def _wins(v, m):
    # PyTorch's `val > max || isnan(val)`: a later NaN takes over, ties keep the first tap
    return v > m or v != v


@inline
def _max_pass(orow, irow, xrow, lo, hi, step, shift, base, want_index):
    """One horizontal tap into the best values of columns [lo, hi)."""
    for ow in range(lo, hi):
        i = np.uint64(ow)
        v = _tap(xrow, shift, ow, step)
        best = orow[i]
        win = _wins(widen(v), widen(best))
        orow[i] = v if win else best
        if want_index:
            irow[i] = base + ow * step + shift if win else irow[i]


@inline
def _max_checked(orow, irow, xrow, ow, col, dw, kw, width, base, want_index):
    """All horizontal taps of one edge column, skipping those outside the row."""
    best = orow[ow]
    for j in range(kw):
        if 0 <= col < width:
            v = xrow[col]
            if _wins(widen(v), widen(best)):
                best = v
                if want_index:
                    irow[ow] = base + col
        col += dw
    orow[ow] = best


@inline
def _max_row(orow, irow, xrow, lo, hi, out_w, width, kw, sw, pw, dw, base, want_index):
    """One in-bounds input row's taps into one output row (the row-major order per output)."""
    for ow in range(lo):
        _max_checked(orow, irow, xrow, ow, ow * sw - pw, dw, kw, width, base, want_index)
    for j in range(kw):
        # a literal step lets LLVM vectorize the reads (see _even_tap)
        if sw == 2:
            _max_pass(orow, irow, xrow, lo, hi, 2, j * dw - pw, base, want_index)
        else:
            _max_pass(orow, irow, xrow, lo, hi, sw, j * dw - pw, base, want_index)
    for ow in range(hi, out_w):
        _max_checked(orow, irow, xrow, ow, ow * sw - pw, dw, kw, width, base, want_index)


# The value-only and value-and-index row updates are compiled apart, each with its flag
# known, so both vectorize; everything above them is inlined into them.
@_rows
def _max_row_values(orow, irow, xrow, lo, hi, out_w, width, kw, sw, pw, dw, base):
    _max_row(orow, irow, xrow, lo, hi, out_w, width, kw, sw, pw, dw, base, False)


@_rows
def _max_row_index(orow, irow, xrow, lo, hi, out_w, width, kw, sw, pw, dw, base):
    _max_row(orow, irow, xrow, lo, hi, out_w, width, kw, sw, pw, dw, base, True)


@_rows
def _max_rows(x, out, index, want_index, lowest, first_row, end_row, geo):
    """Output rows [first_row, end_row), counted over (plane, od, oh)."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    out_d, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    low = lowest[0]
    lo, hi = _interior(width, out_w, kw, sw, pw, dw)
    for r in range(first_row, end_row):
        oh = r % out_h
        od = (r // out_h) % out_d
        p = r // (out_h * out_d)
        orow = out[p, od, oh]
        irow = index[p, od, oh] if want_index else index[0, 0, 0]
        for ow in range(out_w):
            orow[ow] = low
        if want_index:
            first = (_first_tap(od, sd, pd, dd) * height + _first_tap(oh, sh, ph, dh)) * width
            for ow in range(out_w):
                irow[ow] = first + _first_tap(ow, sw, pw, dw)
        for a in range(kd):
            iz = od * sd - pd + a * dd
            if iz < 0 or iz >= depth:
                continue
            for b in range(kh):
                iy = oh * sh - ph + b * dh
                if 0 <= iy < height:
                    if want_index:
                        _max_row_index(orow, irow, x[p, iz, iy], lo, hi, out_w, width, kw, sw, pw, dw,
                                       (iz * height + iy) * width)
                    else:
                        _max_row_values(orow, irow, x[p, iz, iy], lo, hi, out_w, width, kw, sw, pw, dw, 0)


@jit(parallel=True)
def _max_kernel(x, out, index, want_index, lowest, chunks, geo):
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    for c in prange(chunks):
        _max_rows(x, out, index, want_index, lowest, c * rows // chunks, (c + 1) * rows // chunks, geo)


@inline
def _sum_pass(total, xrow, lo, hi, step, shift):
    for ow in range(lo, hi):
        i = np.uint64(ow)
        total[i] += widen(_tap(xrow, shift, ow, step))


@_rows
def _sum_row(total, xrow, lo, hi, out_w, width, kw, sw, pw):
    """One in-bounds input row's taps added into one row of sums, in row-major tap order."""
    for ow in range(lo):
        for col in range(max(ow * sw - pw, 0), min(ow * sw - pw + kw, width)):
            total[ow] += widen(xrow[col])
    for j in range(kw):
        if sw == 2:
            _sum_pass(total, xrow, lo, hi, 2, j - pw)
        else:
            _sum_pass(total, xrow, lo, hi, sw, j - pw)
    for ow in range(hi, out_w):
        for col in range(max(ow * sw - pw, 0), min(ow * sw - pw + kw, width)):
            total[ow] += widen(xrow[col])


@inline
def _count(size, o, k, s, p, include_pad):
    """Divisor factor of window ``o`` along one dimension (as ``avg_divisor``)."""
    start = o * s - p
    end = min(start + k, size + p)
    if include_pad:
        return end - start
    return min(end, size) - max(start, 0)


@_rows
def _avg_rows(x, out, total, divisor, first_row, end_row, geo, include_pad, override):
    """Output rows [first_row, end_row); ``total`` and ``divisor`` are one row of scratch."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw = geo
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    out_d, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    lo, hi = _interior(width, out_w, kw, sw, pw, 1)
    for r in range(first_row, end_row):
        oh = r % out_h
        od = (r // out_h) % out_d
        p = r // (out_h * out_d)
        for ow in range(out_w):
            total[ow] = 0
        for a in range(kd):
            iz = od * sd - pd + a
            if iz < 0 or iz >= depth:
                continue
            for b in range(kh):
                iy = oh * sh - ph + b
                if iy < 0 or iy >= height:
                    continue
                _sum_row(total, x[p, iz, iy], lo, hi, out_w, width, kw, sw, pw)
        outer = _count(depth, od, kd, sd, pd, include_pad) * _count(height, oh, kh, sh, ph, include_pad)
        for ow in range(out_w):
            # the int64 divisor converted to the sum's type, then a true division (as PyTorch)
            divisor[ow] = override if override != 0 else outer * _count(width, ow, kw, sw, pw, include_pad)
        orow = out[p, od, oh]
        for ow in range(out_w):
            orow[ow] = narrow(total[ow] / divisor[ow], orow)


@jit(parallel=True)
def _avg_kernel(x, out, scratch, geo, include_pad, override):
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    chunks = scratch.shape[0]
    # one chunk of rows per scratch row: the sums and divisors live there, in compute precision
    for c in prange(chunks):
        _avg_rows(x, out, scratch[c, 0], scratch[c, 1], c * rows // chunks, (c + 1) * rows // chunks, geo,
                  include_pad, override)


# ---------------------------------------------------------------- Python side

def _lowest(dtype):
    """The value padding stands for (never wins), as the kernels see the dtype."""
    if dtype in dt.FLOAT_DTYPES:
        return kernel_view(np.array([-np.inf], dtype=dtype))
    if dtype == dt.bool_:
        return np.zeros(1, dtype=np.uint8)
    return np.array([np.iinfo(dtype).min], dtype=dtype)


_LOWEST = {}
# rows are split into at most this many parallel work items
_CHUNKS = 256


def _view(a):
    """``a`` as kernels see it: 16-bit floats as 16-bit ints, bool as uint8."""
    return a.view(np.uint8) if a.dtype == dt.bool_ else kernel_view(a)


def _as_3d(x, nd, kernel, stride, padding, dilation):
    """``x`` as a C-contiguous (planes, D, H, W) kernel view, and the 3-D window parameters."""
    spatial = x.shape[x.ndim - nd:]
    if nd == 2:
        spatial = (1,) + spatial
        kernel, stride, padding, dilation = (1,) + kernel, (1,) + stride, (0,) + padding, (1,) + dilation
    view = _view(np.ascontiguousarray(x)).reshape((-1,) + spatial)
    return view, kernel + stride + padding + dilation


def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    nd = len(kernel_size)
    g = geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    shape = x.shape[:x.ndim - nd] + g.out
    out = np.empty(shape, dtype=x.dtype)
    index = np.empty(shape, dtype=np.int64) if return_indices else _NO_INDEX
    if out.size:
        lowest = _LOWEST.get(x.dtype)
        if lowest is None:
            lowest = _LOWEST[x.dtype] = _lowest(x.dtype)
        view, params = _as_3d(x, nd, g.kernel, g.stride, g.padding, g.dilation)
        out_shape = view.shape[:1] + ((1,) if nd == 2 else ()) + g.out
        with launch_lock:
            _max_kernel(view, _view(out).reshape(out_shape), index.reshape(out_shape) if return_indices else index,
                        return_indices, lowest, min(out_shape[0] * out_shape[1] * out_shape[2], _CHUNKS), params)
    return (out, index) if return_indices else out


def avg_pool2d(p, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel_size)
    g = geometry(x.shape, kernel_size, stride, padding, None, ceil_mode)
    out = np.empty(x.shape[:x.ndim - nd] + g.out, dtype=x.dtype)
    if out.size:
        view, params = _as_3d(x, nd, g.kernel, g.stride, g.padding, (1,) * nd)
        out_shape = view.shape[:1] + ((1,) if nd == 2 else ()) + g.out
        rows = out_shape[0] * out_shape[1] * out_shape[2]
        scratch = np.empty((min(rows, _CHUNKS), 2, g.out[-1]), dtype=compute_dtype(x.dtype))
        with launch_lock:
            _avg_kernel(view, kernel_view(out).reshape(out_shape), scratch, params[:9], count_include_pad,
                        divisor_override or 0)
    return out


# 2-D and 3-D pooling share their kernels (2-D runs as 3-D with a 1-tap depth window)
# 2-D and 3-D take the same keyword arguments: one function serves both ranks.
avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
