"""upsample_bilinear2d and upsample_nearest (torch.nn.functional.interpolate, modes "bilinear"
and "nearest"): signatures, argument checks, output sizes and the source coordinates every
engine's kernels gather from.

The coordinate rules are PyTorch's CPU ones with ``recompute_scale_factor=None``: when the
caller gives ``scale_factor`` the kernels use ``1 / scale_factor`` as the step, when the caller
gives ``size`` they use ``in / out``. For non-integer scales the two differ (``scale_factor=1.5``
on 5 pixels gives 7 outputs stepped by 1/1.5, ``size=7`` steps by 5/7).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared, later
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size


def upsample_bilinear2d(x, size=None, scale_factor=None, align_corners=False):
    """Resize the two spatial dims of ``x`` (N, C, H, W) by bilinear interpolation.

    Give exactly one of ``size`` (an int or ``(out_h, out_w)``) or ``scale_factor`` (a positive
    float or a pair; output size ``floor(in * scale)``). ``align_corners=True`` maps the corner
    pixel centres onto each other; ``False`` scales pixel areas, as in
    ``torch.nn.functional.interpolate(mode="bilinear")``. Float inputs only.
    """
    return run(UPSAMPLE_BILINEAR2D, x=x, size=size, scale_factor=scale_factor, align_corners=align_corners)


def upsample_nearest(x, size=None, scale_factor=None):
    """Resize the 1, 2 or 3 spatial dims of ``x`` (N, C, *spatial) by nearest-neighbour copying.

    Give exactly one of ``size`` or ``scale_factor``, each a single value or one per spatial
    dim. Output element ``i`` copies input ``min(floor(i * step), in - 1)`` along every spatial
    dim, ``step = 1 / scale_factor`` or ``in / out``: PyTorch's ``mode="nearest"`` rule,
    including its 2-D special cases for outputs exactly as long or twice as long as the input.
    Any dtype (ints and bool too); values are copied exactly.
    """
    return run(UPSAMPLE_NEAREST, x=x, size=size, scale_factor=scale_factor)


# --- argument checks ---------------------------------------------------------------------------

def _per_dim(value, n: int, name: str) -> tuple:
    """A single value or a sequence of exactly ``n`` (one per spatial dim), as ``n`` values; numpy
    arrays of numbers as their values (0-d: a single value), as the pooling sizes take them."""
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.dtype.kind in "iuf":
        value = value.item() if value.ndim == 0 else tuple(value.tolist())
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            count = f"{len(value)} {'entry' if len(value) == 1 else 'entries'}"
            raise ValueError(f"{name}={tuple(value)!r} has {count} but x has {n} spatial "
                             f"dim{'s' if n > 1 else ''}; expected a single value or {n}")
        return tuple(value)
    return (value,) * n


def _sizes(size, n: int) -> tuple:
    items = _per_dim(size, n, "size")
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral):
            raise TypeError(f"size={size!r}: expected an int or a sequence of {n} ints")
    items = tuple(int(item) for item in items)
    if min(items) < 1:
        raise ValueError(f"size={size!r}: every output size must be an int >= 1")
    return items


def _scales(scale_factor, n: int) -> tuple:
    items = _per_dim(scale_factor, n, "scale_factor")
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
            raise TypeError(f"scale_factor={scale_factor!r}: expected a positive float or a sequence "
                            f"of {n} positive floats")
        try:
            item = float(item)
        except OverflowError:   # an int past float's range (10 ** 400): not a finite scale either
            item = math.inf
        if not (math.isfinite(item) and item > 0):
            raise ValueError(f"scale_factor={scale_factor!r}: every value must be a finite number > 0")
        out.append(item)
    return tuple(out)


def _given(size, scale_factor):
    """The resize argument as the caller wrote it, formatted when an error message asks."""
    return lambda: f"size={size!r}" if size is not None else f"scale_factor={scale_factor!r}"


def _validate_resize(x, size, scale_factor, op: str) -> dict:
    """Checks shared by both ops, once ``x`` is known to have a supported rank."""
    n = len(x.shape) - 2
    if size is None and scale_factor is None:
        raise ValueError("size=None and scale_factor=None: expected exactly one of size or scale_factor")
    if size is not None and scale_factor is not None:
        raise ValueError(f"size={size!r} and scale_factor={scale_factor!r}: expected exactly one of "
                         f"size or scale_factor, not both")
    # what the caller gave, as written: only error messages read it
    given = _given(size, scale_factor)
    size = _sizes(size, n) if size is not None else None
    scale_factor = _scales(scale_factor, n) if scale_factor is not None else None
    spatial = tuple(int(s) for s in x.shape[2:])
    if min(spatial) < 1:
        raise ValueError(f"x has shape {check.shape_str(x.shape)}; {op} expects every spatial size "
                         f"(after N and C) to be >= 1")
    out = output_spatial(spatial, size, scale_factor)
    if min(out) < 1:
        raise ValueError(f"{given()} on spatial sizes {spatial} gives output sizes "
                         f"{out}; expected every output size >= 1 (floor(in * scale_factor))")
    check_output_size(tuple(x.shape[:2]) + out, x.dtype, op,
                      lambda: f"{given()} on x of shape {check.shape_str(x.shape)}")
    return {"x": x, "size": size, "scale_factor": scale_factor}


def _validate_bilinear(x, size, scale_factor, align_corners):
    x = check.tensor(x, "x", floats_only=True, ranks=(4,), op="upsample_bilinear2d")
    align_corners = check.flag(align_corners, "align_corners")
    args = _validate_resize(x, size, scale_factor, "upsample_bilinear2d")
    args["align_corners"] = align_corners
    return args


def _validate_nearest(x, size, scale_factor):
    x = check.tensor(x, "x", ranks=(3, 4, 5), op="upsample_nearest")
    return _validate_resize(x, size, scale_factor, "upsample_nearest")


# --- shape arithmetic shared by every engine ---------------------------------------------------

def output_spatial(in_spatial, size, scale_factor) -> tuple:
    """Output spatial sizes: ``size`` itself, or ``floor(in * scale)`` computed in double as torch does."""
    if size is not None:
        return tuple(size)
    return tuple(int(math.floor(i * s)) for i, s in zip(in_spatial, scale_factor))


def _prepare_bilinear(args) -> Prepared:
    """The output shape, ``coordinates`` (:func:`linear_source` of H and W), and ``rows_read``
    (:func:`rows_read` of H, built when first read), for kernels that interpolate along W first."""
    x = args["x"]
    coordinates = bilinear_coordinates(args, x.dtype)
    return Prepared(_output_shape(args), x.dtype, coordinates=coordinates,
                    rows_read=later(lambda: rows_read(*coordinates[0][:2])))


def _prepare_nearest(args) -> Prepared:
    """The output shape, and ``axes``: a :class:`NearestAxis` for every spatial dim."""
    return Prepared(_output_shape(args), args["x"].dtype, axes=nearest_axes(args))


def _output_shape(args) -> tuple:
    shape = tuple(int(s) for s in args["x"].shape)
    return shape[:2] + output_spatial(shape[2:], args["size"], args["scale_factor"])


def _scale_per_dim(scale_factor, n: int) -> tuple:
    return tuple(scale_factor) if scale_factor is not None else (None,) * n


def opmath_dtype(dtype) -> np.dtype:
    """The type torch does coordinate arithmetic in: f64 for f64 data, else f32."""
    return dt.float64 if np.dtype(dtype) == dt.float64 else dt.float32


def _step(in_size: int, out_size: int, scale, ft) -> np.floating:
    """torch's compute_scales_value: 1/scale_factor (in double, then rounded) when given, else in/out."""
    if scale is not None:
        return ft.type(1.0 / scale)
    return ft.type(in_size) / ft.type(out_size)


def linear_source(in_size: int, out_size: int, align_corners: bool, scale, dtype) -> tuple:
    """Along one spatial dim: ``(index0, index1, lambda0, lambda1)``, each of length ``out_size``,
    with output ``i = lambda0[i] * in[index0[i]] + lambda1[i] * in[index1[i]]``.

    ``scale`` is that dim's ``scale_factor`` or None; ``dtype`` the data's compute dtype, which
    picks f32 or f64 coordinate arithmetic as torch's opmath does.
    """
    ft = opmath_dtype(dtype)
    dst = np.arange(out_size, dtype=np.int64)
    if out_size == in_size:
        # torch copies here even when a scale_factor (e.g. 1.2 on 3 pixels) says otherwise
        return dst, dst.copy(), np.ones(out_size, ft), np.zeros(out_size, ft)
    if align_corners:
        step = ft.type(in_size - 1) / ft.type(out_size - 1) if out_size > 1 else ft.type(0)
        src = step * dst.astype(ft)
    else:
        step = _step(in_size, out_size, scale, ft)
        src = np.maximum(step * (dst.astype(ft) + ft.type(0.5)) - ft.type(0.5), ft.type(0))
    # torch floors with floorf, which rounds a double source index to float first
    index0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), in_size - 1)
    lambda1 = np.clip(src - index0.astype(ft), 0, 1).astype(ft)
    index1 = index0 + (index0 < in_size - 1)
    lambda0 = (ft.type(1) - lambda1).astype(ft)
    return index0, index1, lambda0, lambda1


def bilinear_coordinates(args, dtype) -> list:
    """``linear_source`` for H then W of a validated upsample_bilinear2d call."""
    shape = args["x"].shape
    in_spatial = tuple(int(s) for s in shape[2:])
    out = output_spatial(in_spatial, args["size"], args["scale_factor"])
    scales = _scale_per_dim(args["scale_factor"], 2)
    return [linear_source(i, o, args["align_corners"], s, dtype) for i, o, s in zip(in_spatial, out, scales)]


def rows_read(index0, index1) -> tuple:
    """``(rows, (slot0, slot1))``: the input rows that some output reads through ``index0`` or
    ``index1``, ascending, and for each output the positions among them of the two it reads
    (``rows[slot0[i]] == index0[i]``)."""
    rows = np.unique(np.concatenate([index0, index1]))
    return rows, (np.searchsorted(rows, index0), np.searchsorted(rows, index1))


class NearestAxis:
    """Along one spatial dim, the input position each output position copies, kept as its rule:
    a table would cost 8 bytes per output position, more than the output itself for a long
    1-D row of bytes. Kernels apply the rule to the positions they write (``sources``).

    The rule is ``min(floor(i * step), in - 1)`` with ``i`` and ``step`` in f32 whatever the
    data's dtype, as torch computes it (its 1-D and 3-D kernels use f64 for f64 data, which can
    move a rare index that lands within rounding of an integer; f32 keeps a copy op dtype-blind).
    With ``shortcuts`` (torch does this for 2 spatial dims only) an output exactly as long as the
    input is an identity copy and one exactly twice as long takes ``i >> 1``, whatever the
    scale_factor: ``scale_factor=1.2`` on 3 pixels gives 0, 1, 2 in 2-D but 0, 0, 1 in 1-D and 3-D.
    """

    __slots__ = ("in_size", "out_size", "step", "shift", "_repeat", "_table")

    def __init__(self, in_size: int, out_size: int, scale, *, shortcuts: bool):
        self.in_size, self.out_size = in_size, out_size
        self.step = _step(in_size, out_size, scale, dt.float32)   # np.float32
        # >= 0: the shortcut i >> shift (0 identity, 1 twice as long); -1: the step rule
        self.shift = -1
        if shortcuts and out_size in (in_size, 2 * in_size):
            self.shift = 0 if out_size == in_size else 1
        self._repeat = self._table = None
        if out_size <= _KEEP_TABLE:   # short: kept, so that calls pay nothing for it
            self._table = self.sources(np.arange(out_size, dtype=np.int64))

    def sources(self, positions: np.ndarray) -> np.ndarray:
        """The input positions (int64) that the output ``positions`` (an int64 array) copy."""
        if self._table is not None:
            return self._table[positions]
        if self.shift >= 0:
            return positions >> self.shift
        return np.minimum(np.floor(positions.astype(np.float32) * self.step).astype(np.int64), self.in_size - 1)

    def table(self) -> np.ndarray:
        """``sources`` of every output position: kept when the dim is short, else built afresh."""
        return self._table if self._table is not None else self.sources(np.arange(self.out_size, dtype=np.int64))

    @property
    def largest(self) -> int:
        """The largest input position read: the last output's (the rule never decreases)."""
        return int(self.sources(np.array([self.out_size - 1], np.int64))[0])

    @property
    def repeat(self) -> int:
        """``r`` when output ``i`` copies input ``i // r`` for every ``i`` (each input repeated
        ``r`` times: 1 for an identity copy), else 0. Checked a block of positions at a time, the
        last first: f32 positions past 2**24 are where a rule parts from a repeat."""
        if self._repeat is None:
            r = self.out_size // self.in_size
            same = r >= 1 and self.out_size == r * self.in_size
            if same and self.shift < 0:
                for lo in reversed(range(0, self.out_size, _CHECK_BLOCK)):
                    positions = np.arange(lo, min(lo + _CHECK_BLOCK, self.out_size), dtype=np.int64)
                    if not np.array_equal(self.sources(positions), positions // r):
                        same = False
                        break
            self._repeat = r if same else 0
        return self._repeat

    def __repr__(self) -> str:
        rule = f"shift={self.shift}" if self.shift >= 0 else f"step={self.step!r}"
        return f"NearestAxis({self.in_size} -> {self.out_size}, {rule})"


_CHECK_BLOCK = 1 << 16   # positions per block when checking a rule against a repeat
_KEEP_TABLE = 4096       # positions of the longest table an axis keeps (32 KB)


def nearest_axes(args) -> list:
    """A :class:`NearestAxis` for every spatial dim of a validated upsample_nearest call."""
    shape = args["x"].shape
    in_spatial = tuple(int(s) for s in shape[2:])
    out = output_spatial(in_spatial, args["size"], args["scale_factor"])
    scales = _scale_per_dim(args["scale_factor"], len(in_spatial))
    shortcuts = len(in_spatial) == 2
    return [NearestAxis(i, o, s, shortcuts=shortcuts) for i, o, s in zip(in_spatial, out, scales)]


UPSAMPLE_BILINEAR2D = OpSpec(
    name="upsample_bilinear2d",
    function=upsample_bilinear2d,
    validate=_validate_bilinear,
    prepare=_prepare_bilinear,
    category=Category.FOLLOW,
    recommend=_recommend.jit_from(4096), preference=_recommend.PREFERENCE,
    chunking="upsample",
    example=lambda t, rng: ((t(2, 3, 7, 9),), {"scale_factor": 2.0, "align_corners": False}),
    zero_size=lambda z: ((z(0, 2, 3, 3),), {"size": 6}, (0, 2, 6, 6)),
    tolerance=8,
)

UPSAMPLE_NEAREST = OpSpec(
    name="upsample_nearest",
    function=upsample_nearest,
    validate=_validate_nearest,
    prepare=_prepare_nearest,
    category=Category.FOLLOW,
    exact=True,
    recommend=_recommend.jit_from(16384), preference=_recommend.PREFERENCE,
    chunking="upsample",
    example=lambda t, rng: ((t(2, 3, 7, 9),), {"scale_factor": 2.0}),
    warmup=lambda t, rng: [((t(2, 3, 7, 9),), {"scale_factor": 3.0}), ((t(2, 3, 7, 9),), {"size": (5, 13)})],
    zero_size=lambda z: ((z(2, 0, 3),), {"scale_factor": 2}, (2, 0, 6)),
)

SPECS = [UPSAMPLE_BILINEAR2D, UPSAMPLE_NEAREST]
