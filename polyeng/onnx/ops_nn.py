"""Converters of pooling and Resize: the ONNX ops whose attributes map onto polyeng's
PyTorch-style ops. Opset 22 only added bfloat16 to the pooling ops (LSTM and GRU are in
ops_recurrent.py)."""
from __future__ import annotations

import numpy as np

from .builder import Unsupported, Val, const
from .ops_conv import begin_end_pads
from .context import OnnxNode
from .host_ops import resize_arguments
from .registry import converter


def _symmetric(begin, end, kernel) -> bool:
    """Whether polyeng's pooling takes the padding as it is (the same at both ends, at most half the kernel)."""
    return begin == end and all(p <= k // 2 for p, k in zip(begin, kernel))


def _padded(n: OnnxNode, x: Val, begin: tuple, end: tuple, value) -> Val:
    """``x`` padded explicitly (``pad``, PyTorch's order: the last dim first) by ``value``."""
    if bool(n.attr("ceil_mode", 0)):
        raise Unsupported("ceil_mode=1 with pads that are not the same at both ends")
    order = tuple(p for b, e in zip(reversed(begin), reversed(end)) for p in (b, e))
    shape = None
    if x.shape is not None:
        shape = tuple(x.shape[:2]) + tuple(d + b + e if type(d) is int else None
                                           for d, b, e in zip(x.shape[2:], begin, end))
    (padded,) = n.b.emit("pad", {"x": x, "pads": order, "mode": "constant", "value": value},
                         [(x.dtype, shape)], names=[f"{n.output_names[0]}.padded"])
    return padded


def _spatial(n: OnnxNode, x: Val) -> int:
    if x.rank not in (4, 5):
        raise Unsupported(f"a {x.rank}-D input; polyeng pools 4-D (N, C, H, W) and 5-D inputs")
    return x.rank - 2


@converter("MaxPool")
def max_pool(n: OnnxNode) -> None:
    x = n.need(0, "X")
    spatial = _spatial(n, x)
    n.refuse_attrs(storage_order=0)
    if n.used(1):
        raise Unsupported("the Indices output is not computed")
    kernel = n.sizes("kernel_shape", spatial)
    strides, dilations = n.sizes("strides", spatial, 1), n.sizes("dilations", spatial, 1)
    begin, end = begin_end_pads(n, x, spatial, kernel, strides, dilations)
    if not _symmetric(begin, end, kernel):   # padded explicitly with the lowest value, which never wins
        lowest = -np.inf if np.dtype(x.dtype).kind == "f" else np.iinfo(np.dtype(x.dtype)).min
        x, begin = _padded(n, x, begin, end, lowest), (0,) * spatial
    args = {"x": x, "kernel_size": kernel, "stride": strides, "padding": begin, "dilation": dilations,
            "ceil_mode": bool(n.attr("ceil_mode", 0))}
    n.emit("max_pool2d" if spatial == 2 else "max_pool3d", args)


@converter("AveragePool")
def average_pool(n: OnnxNode) -> None:
    x = n.need(0, "X")
    spatial = _spatial(n, x)
    n.refuse_attrs(dilations=lambda v: all(int(d) == 1 for d in v))
    kernel = n.sizes("kernel_shape", spatial)
    strides = n.sizes("strides", spatial, 1)
    begin, end = begin_end_pads(n, x, spatial, kernel, strides, (1,) * spatial)
    include_pad = bool(n.attr("count_include_pad", 0))
    op = "avg_pool2d" if spatial == 2 else "avg_pool3d"
    args = {"kernel_size": kernel, "stride": strides, "ceil_mode": bool(n.attr("ceil_mode", 0))}
    if _symmetric(begin, end, kernel):
        n.emit(op, {"x": x, "padding": begin, "count_include_pad": include_pad, **args})
        return
    # zeros padded explicitly and counted; without count_include_pad each window's mean is then
    # rescaled by kernel size / its in-bounds taps, a constant of the spatial sizes
    padded = _padded(n, x, begin, end, 0.0)
    if include_pad:
        n.emit(op, {"x": padded, "padding": (0,) * spatial, "count_include_pad": True, **args})
        return
    sizes = None if x.shape is None else x.shape[2:]
    if sizes is None or any(type(d) is not int for d in sizes):
        raise Unsupported("pads that differ at the two ends on spatial sizes not fixed at load time")
    ones = np.pad(np.ones((1, 1) + tuple(sizes), np.float64), [(0, 0), (0, 0)] + list(zip(begin, end)))
    from ..engine.settings import compute_eng
    from ..ops import pooling
    with compute_eng("basic"):
        share = getattr(pooling, op)(ones, kernel, stride=strides, padding=0, count_include_pad=True)
    (mean,) = n.b.emit(op, {"x": padded, "padding": (0,) * spatial, "count_include_pad": True, **args},
                       [n.out_type()], names=[f"{n.output_names[0]}.with_pads"])
    n.emit("div", {"a": mean, "b": const(share.astype(np.dtype(x.dtype)), name=f"{n.name}.in_bounds_share")})


# One converter for every opset: scales and sizes are inputs throughout, and what opsets 18 and 19
# added (antialias, axes, keep_aspect_ratio_policy, half_pixel_symmetric) is refused unless inert.
@converter("Resize")
def resize(n: OnnxNode) -> None:
    x = n.need(0, "X")
    mode = n.attr("mode", "nearest")
    ctm = n.attr("coordinate_transformation_mode", "half_pixel")
    n.refuse_attrs(antialias=0, exclude_outside=0, keep_aspect_ratio_policy="stretch")
    if n.attr("axes") is not None:
        raise Unsupported("axes is not supported (give scales or sizes for every dim)")
    if x.rank is None or x.rank < 3:
        raise Unsupported("the input needs (N, C, spatial...) dims of known rank")
    spatial = x.rank - 2
    if mode == "nearest":
        nearest_mode = n.attr("nearest_mode", "round_prefer_floor")
        if ctm != "asymmetric" or nearest_mode != "floor":
            raise Unsupported(f"mode='nearest' with coordinate_transformation_mode={ctm!r} and "
                              f"nearest_mode={nearest_mode!r}; polyeng computes 'asymmetric' with 'floor' "
                              f"(PyTorch's nearest)")
    elif mode == "linear":
        if spatial != 2:
            raise Unsupported(f"mode='linear' on {spatial} spatial dims; polyeng interpolates 2 (bilinear)")
        if ctm not in ("align_corners", "half_pixel", "pytorch_half_pixel"):
            raise Unsupported(f"coordinate_transformation_mode={ctm!r} is not supported with mode='linear' "
                              f"(half_pixel, pytorch_half_pixel and align_corners are)")
    else:
        raise Unsupported(f"mode={mode!r} is not supported (nearest and linear are)")
    scales, sizes = n.val(2), n.val(3)
    if scales is not None and scales.is_const and scales.array.size == 0:
        scales = None
    if (scales is None) == (sizes is None):
        raise Unsupported("give exactly one of scales and sizes")
    given = scales if scales is not None else sizes
    if not given.is_const:   # sizes or scales computed from named dims: the resize reads them at run time
        n.emit("onnx.resize", {"x": x, "scales": scales, "sizes": sizes, "mode": mode, "ctm": ctm})
        return
    factor, size = resize_arguments(x.shape, None if scales is None else scales.array,
                                    None if sizes is None else sizes.array, Unsupported)
    if mode == "nearest":
        n.emit("upsample_nearest", {"x": x, "size": size, "scale_factor": factor})
        return
    out_dims = list(size) if size is not None else \
        [int(np.floor(d * s)) if type(d) is int else None for d, s in zip(x.shape[2:], factor)]
    align = ctm == "align_corners"
    if ctm == "pytorch_half_pixel":
        # as half_pixel except that an output dim of 1 reads source 0, which is align_corners' rule
        if all(d == 1 for d in out_dims):
            align = True
        elif any(d is None or d == 1 for d in out_dims) and (factor is None or min(factor) < 2.0):
            raise Unsupported("coordinate_transformation_mode='pytorch_half_pixel' where an output dim may be "
                              "1 (fixed sizes that are not 1, or scales of 2 or more, are supported)")
    n.emit("upsample_bilinear2d", {"x": x, "size": size, "scale_factor": factor, "align_corners": align})
