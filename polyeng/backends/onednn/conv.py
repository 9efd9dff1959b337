"""conv1d and conv2d on oneDNN's convolution primitive (forward inference, direct algorithm).

conv2d is a 4-D convolution, conv1d a 3-D one; grouped and depthwise weights (O, C / groups,
*kernel) are read as 5-D (4-D for conv1d) grouped weights (groups, O / groups, C / groups,
*kernel) through strides, no copy. oneDNN's dilation is PyTorch's minus one; its left and right
padding take polyeng's four sides as they are.

The primitive chooses the layouts of its weights (``desc_any``); its source and destination are
blocked (16 channels innermost), what its fast kernels take, except for bf16 work on a CPU with
AMX-BF16, whose AMX kernels take channels last: there the primitive chooses them too
(``amx_first``). The input is reordered
into the source's layout (and type) by a cached reorder primitive that reads any strided view,
and the result back into a C-contiguous array of the call's dtype; the blocked copies live in
each thread's scratch (``_conv_scratch``), held from call to call. A weight that cannot change
(read-only: every constant of a graph) is reordered once (``_packed.py``), others on every call.

f32 work under a bf16 fp math mode gives oneDNN its input and weights in bf16 (the reorders
convert as they lay them out) with the fpmath attribute set, and keeps an f32 result. 16-bit
storage is computed as stored (f32 accumulation); f32 weights of a bf16 input are not rounded:
the input is widened to f32 instead, and the f32 result rounded once. Where a reorder would
convert a 16-bit float in oneDNN's scalar code (``_primitive.scalar_conversion``: bf16 without
AVX-512, f16 without AVX512-FP16), numpy converts (``dt.round_to``) and the reorder only lays
the data out. f64 has no oneDNN type; f16 primitives need AVX512-FP16.
Zero-size calls need no primitive: an empty result, or the bias alone without input channels.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .. import _conv_scratch as scratch
from .._loader import limit
from . import _constants as C
from . import _fpmath
from ._convert import converted, storage_of
from ._packed import constant, note_for, packed_weight
from ._lib import dims, new
from ._primitive import (Attr, Desc, Primitive, cached, data_type, desc, desc_any, elements_strides,
                         reorder, scalar_conversion)
from ._threads import threads_for

FLOATS = (dt.float32, dt.bfloat16, dt.float16)
F32 = np.dtype(np.float32)


def _rule(call):
    args = call.args
    arrays = [args[n] for n in ("x", "weight", "bias") if args.get(n) is not None]
    odd = sorted({str(a.dtype) for a in arrays if a.dtype not in FLOATS})
    if odd:
        return f"oneDNN's convolution takes f32, bf16 and f16 data, not {', '.join(odd)}"
    if _empty(call.prepared):
        return None   # no primitive needed
    try:   # build the primitive now (it is cached for the call): the reason when oneDNN has none
        _plan(call.prepared, args["x"], args["weight"], args["bias"] is not None)
    except Exception as exc:
        return f"oneDNN has no convolution for this call: {exc}"
    return None


def _empty(p) -> bool:
    g = p.geometry
    return 0 in p.shape or g.channels == 0


def _nonnegative(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or a C-contiguous copy where it has negative strides (oneDNN takes none)."""
    return np.ascontiguousarray(a) if a.strides and min(a.strides) < 0 else a


def _weight_view(p, weight):
    """The weights as grouped (G, O / G, C / G, *kernel) (a view, no copy unless of negative
    strides), and whether they are constant."""
    g = p.geometry
    weight = _nonnegative(weight)
    fixed = constant(weight)   # a copy is not: it is made on every call
    if g.groups > 1:
        so = weight.strides[0]
        weight = np.lib.stride_tricks.as_strided(
            weight, (g.groups, g.group_out) + weight.shape[1:], (g.group_out * so,) + weight.strides,
            writeable=False)
    return weight, fixed


def multiply_adds(g) -> int:
    """The multiply-adds of a convolution of geometry ``g`` (what decides its threads)."""
    return g.batch * g.out_channels * g.out[0] * g.out[1] * g.group_in * g.kernel[0] * g.kernel[1]


def _batched(a, rank: int):
    """``a`` (x or a residual) with non-negative strides and a leading batch of 1 when it has none."""
    a = _nonnegative(a)
    return a[None] if a.ndim == rank - 1 else a


# oneDNN 3.2's format tags (dnnl_types.h) of channels blocked by 16: dnnl_aBcd16b (nChw16c) and
# dnnl_aBc16b (nCw16c)
CHANNELS16 = {4: 78, 3: 56}


def _layout(kind: str, shape, dtype) -> Desc:
    """A source or destination descriptor: ``plain`` (C-contiguous), ``blocked`` (16 channels
    innermost) or ``any`` (the primitive chooses)."""
    if kind == "plain":
        return desc(shape, dtype)
    tag = CHANNELS16[len(shape)] if kind == "blocked" else C.FORMAT_TAG_ANY
    return Desc(new("dnnl_memory_desc_create_with_tag", len(shape), dims(shape), data_type(dtype), tag))


class _Plan:
    """The convolution primitive of one call signature, the layouts it chose and the reorders
    around it (made on first use, per strides and dtype of the array reordered).

    Its source and destination are tried in ``layouts`` order, the first one for which oneDNN has
    an optimised implementation (not ``ref``) kept; its weights are always the primitive's choice."""

    MAX_STEPS = 16

    def __init__(self, layouts, x_shape, w_shape, has_bias, out_shape, stride, dilation, pads, operands, result,
                 compute, residual=False, eltwise=None):
        nd = len(x_shape) - 2
        self.out_shape = out_shape
        left, right = (pads[0], pads[2]), (pads[1], pads[3])
        prim = error = None
        for kind in layouts:
            src_md, dst_md = _layout(kind, x_shape, operands), _layout(kind, out_shape, result)
            # post-ops (fused_conv): the residual, written into the destination first, summed into
            # the result, then the activation
            attr = Attr(compute, ((("sum",),) if residual else ()) + ((("eltwise",) + tuple(eltwise),) if eltwise else ()))
            wei_md = desc_any(w_shape, operands)
            bias_md = desc((out_shape[1],), F32) if has_bias else None
            try:
                candidate = Primitive("dnnl_convolution_forward_primitive_desc_create", C.FORWARD_INFERENCE,
                                      C.CONVOLUTION_DIRECT, src_md.handle, wei_md.handle,
                                      bias_md.handle if bias_md else None, dst_md.handle,
                                      dims(stride[-nd:]), dims([d - 1 for d in dilation[-nd:]]),
                                      dims(left[-nd:]), dims(right[-nd:]), attr.handle,
                                      keep=(src_md, wei_md, bias_md, dst_md, attr))
            except Exception as exc:
                error = error or exc
                continue
            if residual or eltwise:
                # a fusion on reference code loses far more than it saves; the gemm-based pointwise
                # convolution applies an eltwise post-op in a pass of its own, slower than the eltwise
                # primitive after it (MobileNetV3's 1x1 convolutions with hardswish: 1.8-2.4x)
                if candidate.impl.startswith("ref") or eltwise and "gemm" in candidate.impl:
                    error = error or RuntimeError(f"no fast code ({candidate.impl}) for these post-ops")
                    continue
            if prim is None or not candidate.impl.startswith("ref"):
                prim = candidate
            if not prim.impl.startswith("ref"):
                break
        if prim is None:
            raise error
        self.prim = prim
        self.operands, self.result = np.dtype(operands), np.dtype(result)
        self.src_md = prim.md(C.QUERY_SRC_MD)
        self.wei_md = prim.md(C.QUERY_WEIGHTS_MD)
        self.dst_md = prim.md(C.QUERY_DST_MD)
        # (role, shape, strides, dtype) or ("dst", dtype) -> a reorder, or None where none is needed
        self.steps: dict = {}

    def step(self, key, source, target):
        """The reorder for ``key`` from ``source()`` to ``target()`` (None when they are one layout)."""
        try:
            return self.steps[key]
        except KeyError:
            pass
        if len(self.steps) >= self.MAX_STEPS:
            self.steps.clear()
        source, target = source(), target()
        step = self.steps[key] = None if source == target else reorder(source, target)
        return step

    def into(self, role: str, a: np.ndarray, target_md, target) -> np.ndarray:
        """``a`` reordered into ``target_md`` (layout and ``target`` type) in this thread's scratch
        for ``role``, or ``a`` itself when it lies so already. Where that reorder would convert a
        16-bit float in oneDNN's scalar code (``scalar_conversion``), numpy converts ``a`` first
        (``dt.round_to``, BASIC's cast: widening is exact) and the reorder only lays it out."""
        a, step = self._laid_out(role, a, target_md, target)
        if step is None:
            return a
        buffer = scratch.arrays(np.uint8, (target_md.size,), slot="onednn-conv-" + role)[0]
        step.run({C.ARG_FROM: a, C.ARG_TO: buffer}, threads_for(a.size * 4))
        return buffer

    def _laid_out(self, role: str, a: np.ndarray, target_md, target) -> tuple:
        """(``a``, or numpy's conversion of it to ``target`` where the reorder would convert in
        oneDNN's scalar code; the reorder from that array into ``target_md``, None where none is
        needed)."""
        step = self._step_from(role, a, target_md)
        if step is not None and scalar_conversion(step, a.dtype, target):
            a = dt.round_to(a, target)
            step = self._step_from(role, a, target_md)
        return a, step

    def _step_from(self, role: str, a: np.ndarray, target_md):
        strides = elements_strides(a)
        return self.step((role, a.shape, strides, a.dtype.str), lambda: desc(a.shape, a.dtype, strides),
                         lambda: target_md)

    def _step_out(self, dtype):
        """The reorder of the result into a plain array of ``dtype`` (None: none needed)."""
        return self.step(("dst", dtype.str), lambda: self.dst_md, lambda: desc(self.out_shape, dtype))

    def run(self, x, w, weight_constant, bias, work, dtype, residual=None) -> np.ndarray:
        src = self.into("src", x, self.src_md, self.operands)
        if weight_constant:   # packed once; the last one is kept here for the next call with it
            last = self.__dict__.get("last_packed")
            if last is not None and last[0] is w:
                wei = last[1]
            else:
                wei = packed_weight(self.prim, w)
                self.last_packed = (w, wei)
        else:
            wei = self.into("weights", w, self.wei_md, self.operands)
        step = self._step_out(dtype)
        # a result oneDNN would round to 16 bits in its scalar code is laid out plain in its own
        # type, and numpy rounds it (``rounded``)
        rounded = step is not None and scalar_conversion(step, self.result, dtype)
        if rounded:
            step = self._step_out(self.result)
        out = np.empty(self.out_shape, self.result if rounded else dtype)
        dst = out if step is None else scratch.arrays(np.uint8, (self.dst_md.size,), slot="onednn-conv-dst")[0]
        args = {C.ARG_SRC: src, C.ARG_WEIGHTS: wei, C.ARG_DST: dst}
        if bias is not None:
            args[C.ARG_BIAS] = converted(bias, F32)
        if residual is not None:   # the sum post-op adds the result to it
            residual, fill = self._laid_out("residual", residual, self.dst_md, self.result)
            if fill is None:   # the residual lies as the destination does: plain, the result's type
                np.copyto(out if dst is out else dst.view(residual.dtype).reshape(residual.shape), residual)
            else:
                fill.run({C.ARG_FROM: residual, C.ARG_TO: dst}, threads_for(residual.size * 4))
        self.prim.run(args, threads_for(work))
        if step is not None:
            step.run({C.ARG_FROM: dst, C.ARG_TO: out}, threads_for(out.size * 4))
        return dt.round_to(out, dtype) if rounded else out


def blocks_of_16() -> bool:
    """Whether oneDNN has fast convolutions on channels blocked by 16 here: on CPUs with AVX-512.
    On AVX2 CPUs its fast kernels (``brgconv:avx2``, ``jit:avx2``) take channels last or blocks of 8,
    and a layout of 16 gets ``ref`` code."""
    return "avx512f" in _fpmath.cpu_flags()


def amx_first(operands) -> bool:
    """Whether a bf16 convolution lets oneDNN choose its layouts first: its AMX kernels (CPUs with
    AMX-BF16) take channels-last data, not the blocked layout. Measured at b8 on such a CPU, two
    threads: 3x3 64->64 at 56x56 3.4 ms with the primitive's layouts against 15.3 ms blocked
    (f32 9.5 ms), 3x3 128->128 at 28x28 3.1 against 20.9 ms (f32 13.0 ms), 1x1 256->64 1.3
    against 3.2 ms. Without AMX the blocked layout is the faster (see ``_plan``)."""
    return operands == dt.bfloat16 and "amx_bf16" in _fpmath.cpu_flags()


def _compute(p) -> str:
    return _fpmath.compute() if p.dtype == dt.float32 else "f32"


def _plan(p, x, weight, has_bias, residual=False, eltwise=None) -> _Plan:
    """The cached plan of a call; ``residual`` and ``eltwise`` ((alg, alpha, beta)) are fused_conv's
    post-ops, for which the layouts are fixed (the residual's descriptor is the result's)."""
    g = p.geometry
    nd = weight.ndim - 2
    compute = _compute(p)
    operands = storage_of(compute, x.dtype)
    if weight.dtype != x.dtype:   # f32 weights of a 16-bit input: computed in f32, unrounded
        operands = F32
    result = F32 if operands == F32 else np.dtype(p.dtype)
    x_shape = (g.batch, g.channels) + g.size[2 - nd:]
    w_shape = ((g.groups, g.group_out) if g.groups > 1 else (g.out_channels,)) + (g.group_in,) + g.kernel[2 - nd:]
    out_shape = (g.batch, g.out_channels) + g.out[2 - nd:]
    # An f32 pointwise convolution is a matrix product on the plain layouts (no reorders); the rest
    # run on channels blocked by 16, which the input and result are reordered to and from quickly
    # (the input widened or rounded as it is; by numpy where oneDNN's reorder would be scalar code).
    # Measured at 1 thread, 56x56: 256->64 1x1 plain 1.1 ms (b1) and 7.9 ms (b8), blocked 1.4 and
    # 12.1, any (channels last) 1.4 and 17.2; in bf16 plain 0.72 and 8.0, blocked 0.84 and 4.1; 3x3
    # 64->64 b8 blocked 18.0 ms (bf16 9.8), any 20.1 (11.8), plain 54; depthwise 3x3 of 96 channels
    # b8 blocked 4.6 ms, any 9.5, plain 33.
    plain = g.algorithm == "pointwise" and operands == F32
    layouts = ("plain", "any") if plain else ("blocked", "any")
    if amx_first(operands):
        layouts = ("any", "blocked")
    if residual:   # the destination's layout is known before the residual is written into it
        layouts = ("plain", "blocked") if plain else ("blocked",)
    if eltwise and plain:   # no reorders around a pointwise convolution: fused on its own layout or not at all
        layouts = ("plain",)
    args = (layouts, x_shape, w_shape, has_bias, out_shape, g.stride, g.dilation, g.padding, operands, result,
            compute, residual, eltwise)
    key = ("conv",) + args[:8] + (operands.str, result.str, compute, residual, eltwise)
    failed = _failed.get(key)
    if failed is not None:   # asked again on every call of a fused_conv that runs unfused
        raise RuntimeError(failed)
    try:
        return cached(key, lambda: _Plan(*args))
    except Exception as exc:
        if len(_failed) >= 1024:
            _failed.clear()
        _failed[key] = str(exc)
        raise


_failed: dict = {}   # plan key -> why oneDNN has none


def empty_result(p, weight, bias):
    """The result of a call with no elements or no input channels: zeros, or the bias alone."""
    out = np.zeros(p.shape, p.dtype)
    if bias is not None and out.size:
        out += bias.astype(p.dtype).reshape((-1,) + (1,) * (weight.ndim - 2))
    return out


def _conv(p, x, weight, bias, residual=None, eltwise=None):
    """The convolution, with fused_conv's post-ops when ``residual`` or ``eltwise`` is given (the
    caller checked that the call is not empty and that the plan builds)."""
    g = p.geometry
    if _empty(p):
        return empty_result(p, weight, bias)
    # what depends only on the call's signature and the weight object is kept on its prepared facts:
    # a graph calls each node with the same (constant) weight, and this path costs ~40 Python steps
    key = ("onednn conv", _compute(p), residual is not None, eltwise)
    held = p.__dict__.get(key)
    if held is not None and held[1] is weight and constant(weight):   # a weight made writeable again is not
        plan, _, w, work = held
        fixed = True
    else:
        plan = _plan(p, x, weight, bias is not None, residual is not None, eltwise)
        w, fixed = _weight_view(p, weight)
        work = multiply_adds(g)
        if fixed:   # a weight that cannot change: its views and packed copy may be kept
            p.__dict__[key] = (plan, weight, w, work)
    rank = len(plan.out_shape)
    return plan.run(_batched(x, rank), w, fixed, bias, work, np.dtype(p.dtype),
                    None if residual is None else _batched(residual, rank)).reshape(p.shape)


@limit(_rule)
def conv2d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


@limit(_rule)
def conv1d(p, x, weight, bias, stride, padding, dilation, groups):
    return _conv(p, x, weight, bias)


conv2d.note = conv1d.note = note_for("weight")
