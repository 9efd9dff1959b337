"""avg_pool2d/3d and max_pool2d/3d as NUMBA kernels.

Every call is pooled as 3-D over a (planes, D, H, W) view (2-D pooling is 3-D pooling with
D = 1 and a 1-tap depth window), so each storage dtype compiles one max and one avg kernel.
The parallel loop runs over output rows. For each in-bounds input row of a window and each
horizontal tap, the inner output columns (whose taps all lie inside the row) take a pass
without bounds checks that LLVM vectorizes across columns; the few columns at each edge loop
over their in-bounds taps. Every output sees its taps in row-major window order, so max pooling
reproduces PyTorch's CPU kernel (and BASIC) bit for bit, with its NaN and first-tie rules,
and avg pooling sums in BASIC's order. The windows' in-bounds tap ranges, inner columns,
divisors and first-tap indices are the prepared call's (``polyeng.ops.pooling``).
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from ...engine import dtypes as dt
from ._runtime import FASTMATH, inline, jit, launch
from ._storage import compute_dtype, kernel_view, narrow, read_only, widen

# The row loops are ordinary functions called from a small parallel loop (numba's parfor
# passes slow down a lot on large loop bodies). They are compiled with the kernels' preset
# but without ``jit``'s cache guard, which the calling kernel already holds and which does
# not nest; their machine code is cached inside the calling kernel's.
_rows = numba.njit(nogil=True, fastmath=FASTMATH, error_model="numpy")

_NO_INDEX = np.zeros((1, 1, 1, 1), dtype=np.int64)   # never touched without return_indices
_NO_FIRST = np.zeros((1, 1, 1), dtype=np.int64)


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
def _wins(v, m):
    # PyTorch's `val > max || isnan(val)`: a later NaN takes over, ties keep the first tap
    return v > m or v != v


# The vectorized passes read tap j of columns [lo, hi) at ``ow * stride + j * dilation -
# padding``: that window arithmetic is inlined here for speed (a table lookup per element
# would stop LLVM vectorizing); tests/test_op_pooling.py, which compares every engine
# with BASIC, guards it against the prepared geometry.
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
def _max_edges(orow, irow, xrow, columns, ranges, at_w, dw, base, want_index):
    """The in-bounds horizontal taps of edge columns (``ranges`` from ``at_w`` on: see _max_rows)."""
    for ow in columns:
        best = orow[ow]
        col, end = ranges[0, at_w + ow], ranges[1, at_w + ow]
        while col < end:
            v = xrow[col]
            if _wins(widen(v), widen(best)):
                best = v
                if want_index:
                    irow[ow] = base + col
            col += dw
        orow[ow] = best


@inline
def _max_inner(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base, want_index):
    """One in-bounds input row's taps into the inner columns of one output row."""
    for j in range(kw):
        # a literal step lets LLVM vectorize the reads (see _even_tap)
        if sw == 2:
            _max_pass(orow, irow, xrow, lo, hi, 2, j * dw - pw, base, want_index)
        else:
            _max_pass(orow, irow, xrow, lo, hi, sw, j * dw - pw, base, want_index)


# The value-only and value-and-index updates of the inner columns are compiled apart, each
# with its flag known, so both vectorize; _max_inner and _max_pass are inlined into them.
@_rows
def _max_inner_values(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base):
    _max_inner(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base, False)


@_rows
def _max_inner_index(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base):
    _max_inner(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base, True)


@_rows
def _max_rows(x, out, index, first, want_index, lowest, first_row, end_row, ranges, row):
    """Output rows [first_row, end_row), counted over (plane, od, oh). ``ranges`` holds the first
    in-bounds tap (row 0) and the end (row 1) of the depth, height and width windows in turn;
    ``first`` the index of a window where nothing wins. Each in-bounds input row of a window
    updates the edge columns and the inner ones: every output sees its taps in row-major
    window order."""
    kw, sw, pw, dw, dd, dh, lo, hi = row
    height, width = x.shape[2], x.shape[3]
    out_d, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    at_h, at_w = out_d, out_d + out_h
    low = lowest[0]
    for r in range(first_row, end_row):
        oh = r % out_h
        od = (r // out_h) % out_d
        p = r // (out_h * out_d)
        orow = out[p, od, oh]
        irow = index[p, od, oh] if want_index else index[0, 0, 0]
        for ow in range(out_w):
            orow[ow] = low
        if want_index:
            for ow in range(out_w):
                irow[ow] = first[od, oh, ow]
        # while loops: a range with a run-time step divides to count its steps, once per row
        iz, end_z = ranges[0, od], ranges[1, od]
        while iz < end_z:
            iy, end_y = ranges[0, at_h + oh], ranges[1, at_h + oh]
            while iy < end_y:
                xrow = x[p, iz, iy]
                base = (iz * height + iy) * width
                _max_edges(orow, irow, xrow, range(lo), ranges, at_w, dw, base, want_index)
                if want_index:
                    _max_inner_index(orow, irow, xrow, lo, hi, kw, sw, pw, dw, base)
                else:
                    _max_inner_values(orow, irow, xrow, lo, hi, kw, sw, pw, dw, 0)
                _max_edges(orow, irow, xrow, range(hi, out_w), ranges, at_w, dw, base, want_index)
                iy += dh
            iz += dd


@jit(parallel=True)
def _max_kernel(x, out, index, first, want_index, lowest, chunks, ranges, row):
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    for c in prange(chunks):
        _max_rows(x, out, index, first, want_index, lowest, c * rows // chunks, (c + 1) * rows // chunks,
                  ranges, row)


@inline
def _sum_pass(total, xrow, lo, hi, step, shift):
    for ow in range(lo, hi):
        i = np.uint64(ow)
        total[i] += widen(_tap(xrow, shift, ow, step))


@inline
def _sum_edges(total, xrow, columns, ranges, at_w):
    """The in-bounds horizontal taps of edge columns, added (``ranges`` as in _max_rows)."""
    for ow in columns:
        for col in range(ranges[0, at_w + ow], ranges[1, at_w + ow]):
            total[ow] += widen(xrow[col])


@_rows
def _sum_inner(total, xrow, lo, hi, kw, sw, pw):
    """One in-bounds input row's taps added into the inner columns of one row of sums."""
    for j in range(kw):
        if sw == 2:
            _sum_pass(total, xrow, lo, hi, 2, j - pw)
        else:
            _sum_pass(total, xrow, lo, hi, sw, j - pw)


@_rows
def _avg_rows(x, out, scratch, divisors, first_row, end_row, ranges, row):
    """Output rows [first_row, end_row); ``scratch`` holds one row of sums and one of divisors,
    ``ranges`` is as in _max_rows. Each in-bounds input row of a window is added in row-major
    tap order."""
    total, divisor = scratch[0], scratch[1]
    kw, sw, pw, lo, hi = row
    out_d, out_h, out_w = out.shape[1], out.shape[2], out.shape[3]
    at_h, at_w = out_d, out_d + out_h
    for r in range(first_row, end_row):
        oh = r % out_h
        od = (r // out_h) % out_d
        p = r // (out_h * out_d)
        for ow in range(out_w):
            total[ow] = 0
        for iz in range(ranges[0, od], ranges[1, od]):
            for iy in range(ranges[0, at_h + oh], ranges[1, at_h + oh]):
                xrow = x[p, iz, iy]
                _sum_edges(total, xrow, range(lo), ranges, at_w)
                _sum_inner(total, xrow, lo, hi, kw, sw, pw)
                _sum_edges(total, xrow, range(hi, out_w), ranges, at_w)
        for ow in range(out_w):
            # the int64 divisor converted to the sum's type, then a true division (as PyTorch)
            divisor[ow] = divisors[od, oh, ow]
        orow = out[p, od, oh]
        for ow in range(out_w):
            orow[ow] = narrow(total[ow] / divisor[ow], orow)


@jit(parallel=True)
def _avg_kernel(x, out, scratch, divisors, ranges, row):
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    chunks = scratch.shape[0]
    # one chunk of rows per scratch row: the sums and divisors live there, in compute precision
    for c in prange(chunks):
        _avg_rows(x, out, scratch[c], divisors, c * rows // chunks, (c + 1) * rows // chunks, ranges, row)


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


def _as_3d(x, p):
    """``x`` as a C-contiguous (planes, D, H, W) kernel view, the output shape of that view, and
    the inner columns [lo, hi) the vectorized passes take."""
    g = p.geometry
    spatial, out = g.spatial, g.out
    if len(spatial) == 2:
        spatial, out = (1,) + spatial, (1,) + out
    view = _view(np.ascontiguousarray(x)).reshape((-1,) + spatial)
    lo, hi = p.inner[-1]
    if g.stride[-1] == 2:
        hi = max(lo, hi - 1)   # a pair read also loads the element after the last tap (see _even_tap)
    return view, view.shape[:1] + out, lo, hi


def max_pool2d(p, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    out = np.empty(p.shape, dtype=x.dtype)
    index = np.empty(p.shape, dtype=np.int64) if return_indices else _NO_INDEX
    if out.size:
        lowest = _LOWEST.get(x.dtype)
        if lowest is None:
            lowest = _LOWEST[x.dtype] = _lowest(x.dtype)
        g = p.geometry
        view, out_shape, lo, hi = _as_3d(x, p)
        first = p.first_index.reshape(out_shape[1:]) if return_indices else _NO_FIRST
        dilation = ((1,) + g.dilation)[-3:]
        row = (g.kernel[-1], g.stride[-1], g.padding[-1], g.dilation[-1], dilation[0], dilation[1], lo, hi)
        launch(_max_kernel, out.nbytes, read_only(view), _view(out).reshape(out_shape),
               index.reshape(out_shape) if return_indices else index, first, return_indices, lowest,
               min(out_shape[0] * out_shape[1] * out_shape[2], _CHUNKS), p.tap_ranges, row)
    return (out, index) if return_indices else out


def avg_pool2d(p, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    out = np.empty(p.shape, dtype=x.dtype)
    if out.size:
        g = p.geometry
        view, out_shape, lo, hi = _as_3d(x, p)
        rows = out_shape[0] * out_shape[1] * out_shape[2]
        scratch = np.empty((min(rows, _CHUNKS), 2, g.out[-1]), dtype=compute_dtype(x.dtype))
        launch(_avg_kernel, out.nbytes, read_only(view), kernel_view(out).reshape(out_shape), scratch,
               p.divisor.reshape(out_shape[1:]), p.tap_ranges, (g.kernel[-1], g.stride[-1], g.padding[-1], lo, hi))
    return out


# 2-D and 3-D pooling share their kernels (2-D runs as 3-D with a 1-tap depth window), and
# take the same keyword arguments: one function serves both ranks.
avg_pool3d = avg_pool2d
max_pool3d = max_pool2d
