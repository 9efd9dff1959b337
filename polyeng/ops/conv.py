"""conv1d and conv2d (torch.nn.functional.conv1d/conv2d): cross-correlation with stride,
padding, dilation and groups, depthwise and grouped convolutions included.

``padding`` is an int, one int per spatial dim, ``(top, bottom, left, right)`` (conv1d:
``(left, right)``), ``"valid"`` (none) or ``"same"`` (the output as large as the input; stride
1 only, as in PyTorch, the odd pad on the bottom/right). Inputs are (N, C, *spatial) or unbatched
(C, *spatial); weights (out, in / groups, *kernel), in x's dtype or float32; bias (out,).

Every engine's kernels read one :class:`ConvGeometry`, with conv1d as conv2d over a height of 1,
and the algorithm chosen per shape (``explain`` names it):

- ``pointwise``: a 1x1 kernel with stride 1 and no padding is a matrix product per group on the
  input as it is, no copy;
- ``depthwise``: one input channel per group (``groups == in_channels``) is a sum of each tap's
  shifted plane times its weight, no copy;
- ``winograd``: a 3x3 kernel with stride 1 and no dilation, with enough channels per group and
  output pixels (``winograd_pays``), is Winograd's F(2x2, 3x3): 16 products per 2x2 output tile and
  channel pair instead of 36, as 16 matrix products over all tiles (``backends/_conv_winograd.py``);
- ``im2col``: the rest gathers each window into the columns of a matrix and multiplies it by the
  weights (one product per group, small images several at once).

Mixed precision: ALLOW (as matmul); 16-bit inputs are computed with f32 accumulation.
"""
from __future__ import annotations

from typing import NamedTuple

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend
from ._memory import check_output_size


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of ``x`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C / groups, KH, KW)."""
    return run(CONV2D, x=x, weight=weight, bias=bias, stride=stride, padding=padding, dilation=dilation,
               groups=groups)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of ``x`` (N, C, L) or (C, L) with ``weight`` (O, C / groups, K)."""
    return run(CONV1D, x=x, weight=weight, bias=bias, stride=stride, padding=padding, dilation=dilation,
               groups=groups)


class ConvGeometry(NamedTuple):
    """One validated call, as conv2d over (N, C, H, W) (conv1d: H = 1, a 1-tall kernel)."""
    batch: int          # N (1 for an unbatched input)
    channels: int       # C
    size: tuple         # (H, W)
    out_channels: int   # O
    kernel: tuple       # (KH, KW)
    stride: tuple
    dilation: tuple
    padding: tuple      # (top, bottom, left, right)
    groups: int
    out: tuple          # (OH, OW)
    algorithm: str      # "pointwise", "depthwise", "winograd" or "im2col"

    @property
    def group_in(self) -> int:
        return self.channels // self.groups

    @property
    def group_out(self) -> int:
        return self.out_channels // self.groups


def out_size(size: int, kernel: int, stride: int, begin: int, end: int, dilation: int) -> int:
    """PyTorch's output size of one dimension (may be < 1; validation rejects that)."""
    return (size + begin + end - dilation * (kernel - 1) - 1) // stride + 1


# Winograd for a 3x3, stride-1, undilated kernel with at least WINOGRAD_CHANNELS input and output
# channels per group and at least WINOGRAD_WORK output pixels times the fewer of them. Measured on
# NUMBA (1 thread, 2-core AMD EPYC, Winograd time / im2col time): 56x56 at 8 channels 0.80, 32x32 at
# 16 channels 0.75-0.80, 24x24 at 32-64 0.65-0.79, 14x14 at 64 0.83 and at 128 0.64, 16x16 at 64
# 0.79; 16x16 at 16-32 channels 0.99-1.21 (b1) and 0.76-1.09 (b8), 12x12 and 8x8 0.9-1.36, 32x32 at
# 8 channels 0.96-1.16: the transforms and the products of few channels cost what they save there.
WINOGRAD_CHANNELS = 8
WINOGRAD_WORK = 12288


def winograd_pays(kernel, stride, dilation, group_in, group_out, out) -> bool:
    fewer = min(group_in, group_out)
    return (kernel == (3, 3) and stride == (1, 1) and dilation == (1, 1) and fewer >= WINOGRAD_CHANNELS
            and out[0] * out[1] * fewer >= WINOGRAD_WORK)


def choose_algorithm(kernel, stride, dilation, padding, group_in, group_out, out) -> str:
    """The algorithm of one call (the ``algorithm`` of its ConvGeometry, named by ``explain``)."""
    if kernel == (1, 1) and stride == (1, 1) and not any(padding):
        return "pointwise"
    if group_in == 1:
        return "depthwise"
    if winograd_pays(kernel, stride, dilation, group_in, group_out, out):
        return "winograd"
    return "im2col"


def _padding(padding, nd: int, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    """(top, bottom, left, right) (conv1d: (0, 0, left, right)) of a validated ``padding``."""
    if isinstance(padding, str):
        mode = check.choice(padding, "padding", ("valid", "same"))
        if mode == "valid":
            return (0, 0, 0, 0)
        if any(s != 1 for s in stride):
            raise ValueError(f"padding='same' needs stride 1 (got stride={stride}), as in PyTorch")
        pads = []
        for k, d in zip(kernel[-nd:], dilation[-nd:]):
            total = d * (k - 1)
            pads += [total // 2, total - total // 2]
        return (0, 0, *pads) if nd == 1 else tuple(pads)
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * nd:
        pads = check.int_tuple(padding, 2 * nd, "padding", minimum=0, maximum=check.INT32_MAX)
        return (0, 0, *pads) if nd == 1 else pads
    try:
        pads = check.int_tuple(padding, nd, "padding", minimum=0, maximum=check.INT32_MAX)
    except ValueError:
        raise ValueError(f"padding={padding!r}: expected an int, {nd} ints, {2 * nd} ints "
                         f"({'left, right' if nd == 1 else 'top, bottom, left, right'}), 'valid' or 'same'") from None
    pads = tuple(p for p in pads for _ in (0, 1))
    return (0, 0, *pads) if nd == 1 else pads


def _validator(op: str, nd: int):
    def validate(x, weight, bias, stride, padding, dilation, groups):
        x = check.tensor(x, "x", floats_only=True, ranks=(nd + 1, nd + 2), op=op)
        weight = check.tensor(weight, "weight", floats_only=True, ranks=(nd + 2,), op=op, like=x.dtype)
        check.same_or_f32(weight, x.dtype, "weight")
        groups = check.integer(groups, "groups", minimum=1)
        stride = check.int_tuple(stride, nd, "stride", minimum=1, maximum=check.INT32_MAX)
        dilation = check.int_tuple(dilation, nd, "dilation", minimum=1, maximum=check.INT32_MAX)
        channels = x.shape[-nd - 1]
        out_channels, group_in = weight.shape[0], weight.shape[1]
        kernel = tuple(int(k) for k in weight.shape[2:])
        if channels % groups or out_channels % groups:
            raise ValueError(f"groups={groups} must divide x's channels ({channels}) and weight's out channels "
                             f"({out_channels})")
        if group_in * groups != channels:
            raise ValueError(f"weight has shape {check.shape_str(weight.shape)}: {group_in} input channels per "
                             f"group, but x {check.shape_str(x.shape)} has {channels} channels in {groups} "
                             f"group{'s' if groups > 1 else ''} (expected weight (O, {channels // groups}, ...))")
        if any(k == 0 for k in kernel) or out_channels == 0:
            raise ValueError(f"weight has shape {check.shape_str(weight.shape)}; expected non-zero out channels and "
                             f"kernel sizes")
        pads = _padding(padding, nd, kernel, stride, dilation)
        if bias is not None:
            bias = check.tensor(bias, "bias", floats_only=True, ranks=(1,), op=op, like=x.dtype)
            check.same_or_f32(bias, x.dtype, "bias")
            if bias.shape[0] != out_channels:
                raise ValueError(f"bias has shape {check.shape_str(bias.shape)}; expected ({out_channels},), one "
                                 f"per output channel")
        spatial = tuple(x.shape[-nd:])
        if any(s == 0 for s in spatial):
            raise ValueError(f"x has shape {check.shape_str(x.shape)}; {op} expects non-zero spatial sizes "
                             f"(the batch and channel dimensions may be 0)")
        sides = [(pads[0], pads[1]), (pads[2], pads[3])][-nd:]
        out = tuple(out_size(s, k, st, b, e, d) for s, k, st, (b, e), d in zip(spatial, kernel, stride, sides,
                                                                               dilation))
        if min(out) < 1:
            raise ValueError(f"x has shape {check.shape_str(x.shape)}: a kernel of {kernel} with dilation={dilation}"
                             f" and padding={padding!r} gives output size {out}; the kernel is larger than the "
                             f"padded input (each output size must be >= 1)")
        return {"x": x, "weight": weight, "bias": bias, "stride": stride, "padding": pads, "dilation": dilation,
                "groups": groups}
    return validate


def _prepare(nd: int):
    def prepare(args) -> Prepared:
        x, weight = args["x"], args["weight"]
        batched = x.ndim == nd + 2
        size = tuple(x.shape[-nd:])
        kernel = tuple(weight.shape[2:])
        stride, dilation, pads = args["stride"], args["dilation"], args["padding"]
        if nd == 1:
            size, kernel, stride, dilation = (1,) + size, (1,) + kernel, (1,) + stride, (1,) + dilation
        out = (out_size(size[0], kernel[0], stride[0], pads[0], pads[1], dilation[0]),
               out_size(size[1], kernel[1], stride[1], pads[2], pads[3], dilation[1]))
        groups = args["groups"]
        out_channels, group_in = int(weight.shape[0]), int(weight.shape[1])
        g = ConvGeometry(int(x.shape[0]) if batched else 1, int(x.shape[-nd - 1]), size, out_channels,
                         kernel, stride, dilation, pads, groups, out,
                         choose_algorithm(kernel, stride, dilation, pads, group_in, out_channels // groups, out))
        shape = ((x.shape[0],) if batched else ()) + (g.out_channels,) + out[2 - nd:]
        check_output_size(shape, x.dtype, CONV2D.name if nd == 2 else CONV1D.name,
                          f"x {check.shape_str(x.shape)} and weight {check.shape_str(weight.shape)}")
        return Prepared(shape, x.dtype, geometry=g, algorithm=g.algorithm)
    return prepare


def _spec(name, function, nd, example, zero_size, warmup=None):
    return OpSpec(name=name, function=function, validate=_validator(name, nd), category=Category.ALLOW,
                  prepare=_prepare(nd),
                  recommend=_recommend.pointwise_on_blas(_recommend.winograd_chunks_on_jit(
                      _recommend.onednn_if(_recommend.output_below(1 << 18), _recommend.jit_from(4096)))),
                  preference=_recommend.PREFERENCE,
                  chunking="conv", example=example, zero_size=zero_size, tolerance=64, warmup=warmup)


def _conv2d_warmup(t, rng):
    """Calls of conv2d's other kernels (the example is im2col): Winograd in chunks on numba's
    threads (an image of 4,160 tiles, a 512 KB output: a parallel launch) and in passes (20 tiles),
    depthwise by rows and channels last, and pointwise."""
    return [((t(1, 8, 128, 128), t(8, 8, 3, 3), t(8)), {"padding": 1}),
            ((t(1, 192, 8, 8), t(192, 192, 3, 3)), {"padding": 1}),
            ((t(1, 8, 20, 20), t(8, 1, 3, 3), t(8)), {"padding": 1, "groups": 8}),
            ((t(1, 8, 20, 20), t(8, 1, 3, 3)), {"stride": 2, "groups": 8}),
            ((t(1, 8, 6, 6), t(4, 8, 1, 1)), {})]


CONV2D = _spec("conv2d", conv2d, 2,
               lambda t, rng: ((t(2, 4, 9, 11), t(6, 2, 3, 3), t(6)), {"stride": 2, "padding": 1, "groups": 2}),
               lambda z: ((z(0, 3, 8, 8), z(4, 3, 3, 3)), {}, (0, 4, 6, 6)), _conv2d_warmup)
CONV1D = _spec("conv1d", conv1d, 1,
               lambda t, rng: ((t(2, 4, 13), t(6, 4, 3), t(6)), {"padding": "same", "dilation": 2}),
               lambda z: ((z(0, 3, 8), z(4, 3, 3)), {}, (0, 4, 6)))
SPECS = [CONV2D, CONV1D]
