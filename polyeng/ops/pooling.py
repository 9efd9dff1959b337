"""Average and max pooling over 2 or 3 spatial dimensions (torch.nn.functional.*_pool*d).

Besides the public functions and their argument checks, this module holds the window
geometry every engine's kernels share: output sizes, per-dimension window bounds, the
average-pooling divisor and the max-pooling "first valid tap" index. ``prepare`` hands all of
it to the kernels (see :func:`_windows`), which never derive it themselves.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared, later
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over ``kernel_size`` windows of the last two axes of ``x`` ((N, C, H, W) or (C, H, W)).

    ``stride`` defaults to ``kernel_size``. ``padding`` zeros are added on both sides (at most
    half the kernel). ``ceil_mode`` rounds the output size up, keeping a last window only if
    it starts inside the input or its left padding. The divisor is the window clipped to the
    padded input (``count_include_pad=True``), only its in-bounds part (``False``), or
    ``divisor_override``. Floating-point input only.
    """
    return run(AVG_POOL2D, x=x, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
               count_include_pad=count_include_pad, divisor_override=divisor_override)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """:func:`avg_pool2d` over the last three axes of ``x`` ((N, C, D, H, W) or (C, D, H, W))."""
    return run(AVG_POOL3D, x=x, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
               count_include_pad=count_include_pad, divisor_override=divisor_override)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over ``kernel_size`` windows (taps ``dilation`` apart) of the last two axes of ``x``.

    Padding never wins. NaN propagates; ties keep the first tap in row-major order. With
    ``return_indices`` also returns int64 indices into each flattened (H, W) plane, chosen as
    PyTorch does: the last NaN of a window, else its first maximum, else (a window of
    nothing but the lowest value, e.g. -inf) its first in-bounds tap. Any dtype; bool is
    pooled as logical or.
    """
    return run(MAX_POOL2D, x=x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
               ceil_mode=ceil_mode, return_indices=return_indices)


def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """:func:`max_pool2d` over the last three axes of ``x``; indices index the flattened (D, H, W) volume."""
    return run(MAX_POOL3D, x=x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
               ceil_mode=ceil_mode, return_indices=return_indices)


# ---------------------------------------------------------------- geometry shared by every engine

def output_size(size: int, kernel: int, stride: int, padding: int, dilation: int = 1,
                ceil_mode: bool = False) -> int:
    """PyTorch's ``pooling_output_shape`` for one dimension (may be < 1; validation rejects that)."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * padding - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    # in ceil mode the last window must start inside the input or its left padding
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


class Geometry(NamedTuple):
    """Per-dimension pooling parameters of one validated call (all tuples of spatial length)."""
    spatial: tuple
    out: tuple
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple


def geometry(x_shape, kernel_size, stride, padding, dilation=None, ceil_mode=False) -> Geometry:
    """The :class:`Geometry` of pooling an array of ``x_shape`` over its last ``len(kernel_size)`` axes."""
    nd = len(kernel_size)
    dilation = dilation or (1,) * nd
    spatial = tuple(int(s) for s in x_shape[-nd:])
    out = tuple(output_size(*dims, ceil_mode) for dims in zip(spatial, kernel_size, stride, padding, dilation))
    return Geometry(spatial, out, tuple(kernel_size), tuple(stride), tuple(padding), tuple(dilation))


def _prepare_avg(args) -> Prepared:
    """The output shape, the window facts of :func:`_windows` and ``divisor`` (int64, shape
    ``geometry.out``: :func:`avg_divisor`)."""
    x = args["x"]
    g = geometry(x.shape, args["kernel_size"], args["stride"], args["padding"], None, args["ceil_mode"])
    include_pad, override = args["count_include_pad"], args["divisor_override"]
    # later facts keep what their function reads: never the arguments, whose arrays a cached
    # plan would keep alive
    return Prepared(tuple(x.shape[:-len(g.out)]) + g.out, x.dtype, **_windows(g),
                    divisor=later(lambda: avg_divisor(g, include_pad, override)))


def _prepare_max(args) -> Prepared:
    """The output shape, the window facts of :func:`_windows` and, with ``return_indices``
    (None otherwise): ``first_index``, each window's index when no tap beats the lowest value
    (:func:`first_valid_index`), and ``tap_index_parts`` (:func:`tap_index_parts`)."""
    x = args["x"]
    g = geometry(x.shape, args["kernel_size"], args["stride"], args["padding"], args["dilation"],
                 args["ceil_mode"])
    indices = args["return_indices"]
    return Prepared(tuple(x.shape[:-len(g.out)]) + g.out, x.dtype, **_windows(g),
                    first_index=later(lambda: first_valid_index(g)) if indices else None,
                    tap_index_parts=later(lambda: tap_index_parts(g)) if indices else None)


def _windows(g: Geometry) -> dict:
    """What the kernels of both poolings read about the windows:

    - ``geometry``: the :class:`Geometry`;
    - ``tap_ranges``: the in-bounds taps of every window, laid out for 3-D kernels
      (:func:`tap_ranges`);
    - ``inner``: per dimension, (lo, hi): the windows with no tap outside the input
      (:func:`inner_windows`);
    - ``padded_extent`` and ``taps``: the padding that keeps every tap inside a padded array
      (:func:`padded_extent`) and the slices that pick each tap of every window from it
      (:func:`tap_slices`).
    """
    # each engine's kernels read some of these: built when first read (see Prepared)
    return {"geometry": g, "tap_ranges": later(lambda: tap_ranges(g)), "inner": later(lambda: inner_windows(g)),
            "padded_extent": later(lambda: padded_extent(g)), "taps": later(lambda: tap_slices(g))}


def window_starts(out_size: int, stride: int, padding: int) -> np.ndarray:
    """Input coordinate of each window's first tap (negative inside the left padding)."""
    return np.arange(out_size, dtype=np.int64) * stride - padding


def padded_extent(g: Geometry) -> tuple:
    """(left, right) padding per dimension so that every tap of every window reads inside the
    padded array; right may exceed ``padding`` in ceil mode, or be less when taps stop early."""
    extents = []
    for size, out, k, s, p, d in zip(g.spatial, g.out, g.kernel, g.stride, g.padding, g.dilation):
        last_tap = (out - 1) * s - p + (k - 1) * d
        extents.append((p, max(0, last_tap + 1 - size)))
    return tuple(extents)


def tap_slices(g: Geometry) -> tuple:
    """Per kernel offset in row-major order, ``(offsets, slices)``: the strided slices, one per
    spatial dim, that pick tap ``offsets`` of every window from an array padded by
    :func:`padded_extent`."""
    per_dim = [[slice(j * d, j * d + (o - 1) * s + 1, s) for j in range(k)]
               for k, d, o, s in zip(g.kernel, g.dilation, g.out, g.stride)]
    return tuple(zip(itertools.product(*(range(k) for k in g.kernel)), itertools.product(*per_dim)))


def avg_window_bounds(size: int, out_size: int, kernel: int, stride: int, padding: int) -> tuple:
    """(start, end, valid_start, valid_end) per output position: the window clipped to the padded
    input ``[-padding, size + padding)``, and its in-bounds part ``[0, size)``."""
    start = window_starts(out_size, stride, padding)
    end = np.minimum(start + kernel, size + padding)
    return start, end, np.maximum(start, 0), np.minimum(end, size)


def avg_divisor(g: Geometry, count_include_pad: bool, divisor_override) -> np.ndarray:
    """int64 divisor of every output position (shape ``g.out``), as PyTorch's CPU kernel: the
    window clipped to the padded bounds (ceil-mode overhang excluded) or its in-bounds part."""
    if divisor_override is not None:
        return np.full(g.out, divisor_override, dtype=np.int64)
    divisor = np.ones((), dtype=np.int64)
    for size, out, k, s, p in zip(g.spatial, g.out, g.kernel, g.stride, g.padding):
        start, end, valid_start, valid_end = avg_window_bounds(size, out, k, s, p)
        count = end - start if count_include_pad else valid_end - valid_start
        divisor = np.multiply.outer(divisor, count)
    return divisor


def max_window_bounds(size: int, out_size: int, kernel: int, stride: int, padding: int, dilation: int) -> tuple:
    """(first, end) per output position: the first in-bounds tap and the exclusive end, so the
    window's taps are ``range(first, end, dilation)`` (empty when ``first >= end``)."""
    return _tap_bounds(window_starts(out_size, stride, padding), size, kernel, dilation)


def _tap_bounds(start, size, kernel, dilation) -> tuple:
    """:func:`max_window_bounds` of windows starting at ``start`` (arguments broadcast)."""
    end = np.minimum(start + (kernel - 1) * dilation + 1, size)
    skipped = np.where(start < 0, (-start + dilation - 1) // dilation, 0)
    return start + skipped * dilation, end


def flat_index(coords, spatial) -> np.ndarray:
    """Row-major flat index of the outer product of per-dimension coordinate arrays."""
    index = np.zeros((), dtype=np.int64)
    for coord, size in zip(coords, spatial):
        index = np.add.outer(index * size, np.asarray(coord, dtype=np.int64))
    return index


def tap_ranges(g: Geometry) -> np.ndarray:
    """int64 array of shape (2, OD + OH + OW): :func:`max_window_bounds` of every window, the
    first in-bounds taps in row 0 and the exclusive ends in row 1, depth windows first, then
    height, then width. 2-D pooling is laid out as 3-D pooling with one depth window whose
    only tap is 0, as the JIT engines' kernels run it."""
    dims = list(zip(g.spatial, g.out, g.kernel, g.stride, g.padding, g.dilation))
    if len(dims) == 2:
        dims.insert(0, (1, 1, 1, 1, 0, 1))   # one depth window, one tap
    size, out, kernel, stride, padding, dilation = np.array(dims, np.int64).T
    # every dimension's windows at once: parameters repeated per window, windows numbered per dim
    window = np.arange(out.sum()) - np.repeat(np.cumsum(out) - out, out)
    start = window * np.repeat(stride, out) - np.repeat(padding, out)
    return np.stack(_tap_bounds(start, np.repeat(size, out), np.repeat(kernel, out), np.repeat(dilation, out)))


def inner_windows(g: Geometry) -> tuple:
    """Per dimension, (lo, hi) with ``lo <= hi``: windows ``lo .. hi - 1`` have every tap inside
    ``[0, size)``; the others reach into the padding or past the input."""
    bounds = []
    for size, out, k, s, p, d in zip(g.spatial, g.out, g.kernel, g.stride, g.padding, g.dilation):
        lo = min(out, -(-p // s))                               # the first window starting at >= 0
        hi = min(out, (size - 1 - (k - 1) * d + p) // s + 1)    # past the last ending at <= size - 1
        bounds.append((lo, max(lo, hi)))
    return tuple(bounds)


def first_valid_index(g: Geometry) -> np.ndarray:
    """Each window's index when nothing beats the lowest value: its first in-bounds tap, as
    PyTorch reports it (it can lie past the input when a dilated window has no tap inside)."""
    firsts = [max_window_bounds(*dims)[0] for dims in zip(g.spatial, g.out, g.kernel, g.stride, g.padding,
                                                         g.dilation)]
    return flat_index(firsts, g.spatial)


def tap_index_parts(g: Geometry) -> tuple:
    """Per dimension, an int64 array of shape ``(kernel, out)`` followed by ones for the later
    dimensions: ``parts[dim][j]`` is tap ``j``'s coordinate in each window times the dimension's
    row-major stride, so the flat index of the tap at ``offsets`` in every window (shape
    ``g.out``) is ``sum(part[j] for part, j in zip(parts, offsets))``."""
    parts, stride = [], 1
    for dim in reversed(range(len(g.spatial))):
        starts = window_starts(g.out[dim], g.stride[dim], g.padding[dim])
        coords = starts + np.arange(g.kernel[dim], dtype=np.int64)[:, None] * g.dilation[dim]
        parts.append((coords * stride).reshape(coords.shape + (1,) * (len(g.spatial) - 1 - dim)))
        stride *= g.spatial[dim]
    return tuple(reversed(parts))


# ---------------------------------------------------------------- validation

def _validate_common(op, nd, x, kernel_size, stride, padding, dilation, ceil_mode, floats_only):
    x = check.tensor(x, "x", floats_only=floats_only, ranks=(nd + 1, nd + 2), op=op)
    most = check.INT32_MAX   # PyTorch's bound; beyond it the kernels' index arithmetic overflows
    kernel = check.int_tuple(kernel_size, nd, "kernel_size", minimum=1, maximum=most)
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        stride = kernel  # PyTorch: an omitted or empty stride means the kernel size
    else:
        stride = check.int_tuple(stride, nd, "stride", minimum=1, maximum=most)
    pad = check.int_tuple(padding, nd, "padding", minimum=0, maximum=most)
    dil = check.int_tuple(dilation, nd, "dilation", minimum=1, maximum=most)
    ceil_mode = check.flag(ceil_mode, "ceil_mode")
    shape = tuple(x.shape)
    # an empty batch or channel axis gives an empty result; an empty window axis has no output
    if any(s == 0 for s in shape[-nd:]):
        raise ValueError(f"x has shape {check.shape_str(shape)}; {op} expects non-zero spatial sizes "
                         f"(the batch and channel dimensions may be 0)")
    # PyTorch's rule is on kernel_size itself, also for dilated max pooling
    if any(p > k // 2 for p, k in zip(pad, kernel)):
        note = " (dilation does not raise this limit)" if any(d != 1 for d in dil) else ""
        raise ValueError(f"padding={pad}: each value must be at most half of the kernel size; kernel_size="
                         f"{kernel} allows at most {tuple(k // 2 for k in kernel)}{note}")
    g = geometry(shape, kernel, stride, pad, dil, ceil_mode)
    if min(g.out) < 1:
        dilated = f", dilation={dil}" if any(d != 1 for d in dil) else ""
        raise ValueError(f"x has shape {check.shape_str(shape)}: kernel_size={kernel}{dilated} with padding={pad} "
                         f"and stride={stride} gives output size {g.out}; the window is larger than the "
                         f"padded input (each output size must be >= 1)")
    return {"x": x, "kernel_size": kernel, "stride": stride, "padding": pad, "dilation": dil,
            "ceil_mode": ceil_mode}


def _avg_validator(op, nd):
    def validate(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        args = _validate_common(op, nd, x, kernel_size, stride, padding, 1, ceil_mode, floats_only=True)
        del args["dilation"]
        args["count_include_pad"] = check.flag(count_include_pad, "count_include_pad")
        if divisor_override is not None:
            divisor_override = check.integer(divisor_override, "divisor_override", minimum=-check.INT64_MAX,
                                             maximum=check.INT64_MAX)   # the kernels divide in int64
            if divisor_override == 0:
                raise ValueError("divisor_override=0: expected a non-zero int or None")
        args["divisor_override"] = divisor_override
        return args
    return validate


def _max_validator(op, nd):
    def validate(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
        args = _validate_common(op, nd, x, kernel_size, stride, padding, dilation, ceil_mode, floats_only=False)
        args["return_indices"] = check.flag(return_indices, "return_indices")
        return args
    return validate


def _spec(name, function, nd, is_max, zero_size, warmup=None):
    validate = (_max_validator if is_max else _avg_validator)(name, nd)
    example = (lambda t, rng: ((t(2, 3, 11, 11), 3), {"stride": 2, "padding": 1})) if nd == 2 else \
        (lambda t, rng: ((t(2, 3, 7, 9, 9), 3), {"stride": 2, "padding": 1}))
    return OpSpec(name=name, function=function, validate=validate, category=Category.FOLLOW,
                  prepare=_prepare_max if is_max else _prepare_avg, exact=is_max,
                  recommend=_recommend.onednn_if(_recommend.always, _recommend.jit_from(256)),
                  preference=_recommend.PREFERENCE,
                  chunking="pooling", example=example, zero_size=zero_size, tolerance=4 if is_max else 8,
                  warmup=warmup)


AVG_POOL2D = _spec("avg_pool2d", avg_pool2d, 2, False, lambda z: ((z(0, 3, 8, 8), 2), {}, (0, 3, 4, 4)),
                   lambda t, rng: [((t(2, 3, 11, 11), 3), {"stride": 1})])
AVG_POOL3D = _spec("avg_pool3d", avg_pool3d, 3, False, lambda z: ((z(2, 0, 4, 4, 4), 2), {}, (2, 0, 2, 2, 2)))
MAX_POOL2D = _spec("max_pool2d", max_pool2d, 2, True, lambda z: ((z(0, 3, 8, 8), 2), {}, (0, 3, 4, 4)),
                   lambda t, rng: [((t(2, 3, 11, 11), 2), {"return_indices": True}),
                                   ((t(2, 3, 11, 11), 3), {"stride": 1})])
MAX_POOL3D = _spec("max_pool3d", max_pool3d, 3, True, lambda z: ((z(0, 1, 4, 4, 4), 2), {}, (0, 1, 2, 2, 2)))
SPECS = [AVG_POOL2D, AVG_POOL3D, MAX_POOL2D, MAX_POOL3D]

