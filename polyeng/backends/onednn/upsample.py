"""upsample_nearest and upsample_bilinear2d on oneDNN's resampling primitive.

oneDNN maps output ``i`` of a dim to the source coordinate ``(i + 0.5) * in / out - 0.5``
(f32, from the sizes: the factors passed are ``out / in``). Nearest takes ``roundf`` of it,
linear interpolates between its neighbours with half-pixel centres (PyTorch's
``align_corners=False``). A call is accepted where this gives PyTorch's sources:

- nearest: the source index of every output equals the prepared rule's
  (``min(floor(i * step), in - 1)``), checked per dim on the table (integer upscales agree,
  ``scale_factor=0.5`` does not: oneDNN takes the odd pixels, PyTorch the even ones);
- bilinear: ``align_corners=False``, each dim's step ``in / out`` (PyTorch uses
  ``1 / scale_factor`` when given, which differs where ``in * scale_factor`` is not whole)
  and no dim of equal sizes with a scale_factor (PyTorch copies those).

Nearest copies values, so it runs any 1-, 2- or 4-byte type as a same-sized one oneDNN has
(bool and uint8 as u8, int32 as s32); 16-bit floats and 64-bit types are turned down (f16 and
bf16 may be computed through f32, which would quiet NaN payloads).

oneDNN 3.2's resampling faults on runs whose output is large for the threads it runs on: on
this CPU, linear f32 from about 3.3M values per thread (1x270x112x112 on one thread, 10x64x112x112
on two), nearest f32 between 3.2M and 6.4M per thread. A call is run in pieces of whole planes
(``MAX_RUN`` output items each, at most), each a run of its own; a call one of whose planes is
larger is turned down.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import Primitive, cached, desc
from ._threads import threads_for

# nearest copies bits: by item size, the oneDNN type it is copied as (f32 keeps every bit
# pattern, NaN payloads and subnormals included; oneDNN's s32 and bf16 go through f32 and
# would change some) and how many of them make one item (a last dim oneDNN keeps as it is)
NEAREST_AS = {1: (np.dtype(np.uint8), 1), 2: (np.dtype(np.uint8), 2), 4: (np.dtype(np.float32), 1),
              8: (np.dtype(np.float32), 2)}
LINEAR_TYPES = (dt.float32, dt.bfloat16, dt.float16)
MAX_RUN = 1 << 21   # oneDNN output items per run: below every size that faulted (see the module)


def _onednn_nearest(in_size: int, out_size: int) -> np.ndarray:
    """oneDNN's nearest source of every output position (``resampling_utils::nearest_idx``)."""
    f32 = np.float32
    y = np.arange(out_size, dtype=np.int64).astype(f32)
    s = ((y + f32(0.5)) * f32(in_size)) / f32(out_size) - f32(0.5)
    return (np.sign(s) * np.floor(np.abs(s) + f32(0.5))).astype(np.int64)   # roundf: half away from 0


def _nearest_reason(call):
    x, p = call.args["x"], call.prepared
    parts = NEAREST_AS[np.dtype(x.dtype).itemsize][1]
    if parts > 1 and len(p.axes) == 3:
        return (f"{x.dtype} is copied as {parts} oneDNN items in a fourth spatial dim, and oneDNN "
                f"resamples at most three")
    for axis in p.axes:
        if not np.array_equal(_onednn_nearest(axis.in_size, axis.out_size), axis.table()):
            return (f"oneDNN's nearest resampling rounds (i + 0.5) * in / out - 0.5 to its source; PyTorch's "
                    f"floor(i * step) picks other sources for {axis.in_size} -> {axis.out_size}")
    return None


def _linear_reason(call):
    x, p, args = call.args["x"], call.prepared, call.args
    if np.dtype(x.dtype) not in LINEAR_TYPES:
        return f"oneDNN's linear resampling takes f32, bf16 and f16, not {x.dtype}"
    if args["align_corners"]:
        return "oneDNN's linear resampling has half-pixel centres only (align_corners=False)"
    scales = args["scale_factor"] or (None, None)
    for in_size, out_size, scale in zip(x.shape[2:], p.shape[2:], scales):
        if in_size != out_size and not np.array_equal(_onednn_linear(in_size, out_size),
                                                      _torch_linear(in_size, out_size, scale)):
            how = "in / out" if scale is None else f"1 / scale_factor ({scale})"
            return (f"oneDNN's linear resampling maps {in_size} -> {out_size} to source coordinates "
                    f"((i + 0.5) * in) / out - 0.5, rounded otherwise than PyTorch's step * (i + 0.5) - 0.5 "
                    f"with step {how}")
    return None


def _onednn_linear(in_size: int, out_size: int) -> np.ndarray:
    """oneDNN's f32 source coordinate of every output position (``resampling_utils::linear_map``)."""
    f32 = np.float32
    y = np.arange(out_size, dtype=np.int64).astype(f32)
    return ((y + f32(0.5)) * f32(in_size)) / f32(out_size) - f32(0.5)


def _torch_linear(in_size: int, out_size: int, scale) -> np.ndarray:
    """PyTorch's f32 source coordinate before its clamp at 0 (``polyeng.ops.upsample.linear_source``);
    where both agree, so do the weights and neighbours (oneDNN weighs the edge pixel twice where
    PyTorch clamps, within rounding)."""
    f32 = np.float32
    step = f32(1.0 / scale) if scale is not None else f32(in_size) / f32(out_size)
    return step * (np.arange(out_size, dtype=np.int64).astype(f32) + f32(0.5)) - f32(0.5)


def _rule(reason_of):
    def rule(call):
        reason = reason_of(call)
        if reason or 0 in call.prepared.shape:
            return reason
        dtype, parts = _storage(call.op, call.args["x"].dtype)
        src, dst = _shapes(call.args["x"].shape, call.prepared.shape, parts)
        pieces = _pieces(dst)
        if pieces is not None and pieces[0][1] == 0:
            return (f"one plane of this call makes {math.prod(dst[2:])} oneDNN items, and oneDNN 3.2's "
                    f"resampling faults on runs of a few million (at most {MAX_RUN} are run at once)")
        try:
            _plan(call.op, *((src, dst) if pieces is None else _piece_shapes(src, dst, pieces[0][1])), dtype)
        except Exception as exc:
            return f"oneDNN has no {call.op} for this call: {exc}"
        return None
    return rule


def _storage(op, dtype):
    """(oneDNN's type, items per element)."""
    return NEAREST_AS[np.dtype(dtype).itemsize] if op == "upsample_nearest" else (np.dtype(dtype), 1)


def _shapes(x_shape, out_shape, parts):
    more = (parts,) if parts > 1 else ()
    return tuple(x_shape) + more, tuple(out_shape) + more


def _plan(op, src, dst, dtype):
    alg = C.RESAMPLING_NEAREST if op == "upsample_nearest" else C.RESAMPLING_LINEAR
    src, dst = tuple(src), tuple(dst)
    key = ("resampling", alg, src, dst, dtype.str)

    def build():
        src_md, dst_md = desc(src, dtype), desc(dst, dtype)
        return Primitive("dnnl_resampling_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg, None,
                         src_md.handle, dst_md.handle, None, keep=(src_md, dst_md))
    return cached(key, build)


def _pieces(dst_shape):
    """[(first plane, planes)] of the runs of a call whose output is ``dst_shape`` (oneDNN's, batch
    and channels first: N * C planes), each of at most ``MAX_RUN`` items; planes 0 where one plane
    is larger; None where the call is one run."""
    planes, plane = math.prod(dst_shape[:2]), math.prod(dst_shape[2:])
    if planes * plane <= MAX_RUN:
        return None
    per = MAX_RUN // plane
    if per == 0:
        return [(0, 0)]
    return [(start, min(per, planes - start)) for start in range(0, planes, per)]


def _piece_shapes(src_shape, dst_shape, planes):
    """The source and output shapes of a run of ``planes`` planes: one image of that many channels."""
    return (1, planes) + tuple(src_shape[2:]), (1, planes) + tuple(dst_shape[2:])


def _resample(op, p, x):
    dtype, parts = _storage(op, x.dtype)
    if 0 in p.shape:
        return np.zeros(p.shape, p.dtype)
    src_shape, dst_shape = _shapes(x.shape, p.shape, parts)
    src = np.ascontiguousarray(x).view(dtype).reshape(src_shape)
    out = np.empty(p.shape, p.dtype)
    dst = out.view(dtype).reshape(dst_shape)
    work = 1 if op == "upsample_nearest" else 4   # per output item
    pieces = _pieces(dst_shape)
    if pieces is None:
        prim = _plan(op, src_shape, dst_shape, dtype)
        prim.run({C.ARG_SRC: src, C.ARG_DST: dst}, threads_for(out.size * work))
        return out
    src_planes = src.reshape((-1,) + tuple(src_shape[2:]))
    dst_planes = dst.reshape((-1,) + tuple(dst_shape[2:]))
    for start, planes in pieces:
        piece_src, piece_dst = _piece_shapes(src_shape, dst_shape, planes)
        prim = _plan(op, piece_src, piece_dst, dtype)
        part = dst_planes[start:start + planes].reshape(piece_dst)
        prim.run({C.ARG_SRC: src_planes[start:start + planes].reshape(piece_src), C.ARG_DST: part},
                 threads_for(part.size * work))
    return out


@limit(_rule(_nearest_reason))
def upsample_nearest(p, x, size, scale_factor):
    return _resample("upsample_nearest", p, x)


@limit(_rule(_linear_reason))
def upsample_bilinear2d(p, x, size, scale_factor, align_corners):
    return _resample("upsample_bilinear2d", p, x)
