"""fused_conv on an engine without a fused kernel: its own conv, add and activation kernels called
one after another (``composed``), each with the prepared facts its op derives for these arrays.
The facts depend on shapes and dtypes only, so they are derived once per call signature and kept
on the fused call's prepared facts."""
from __future__ import annotations

import numpy as np

from ..ops.catalogue import lookup


def step_prepared(p, op: str, args: dict, first: str):
    """(prepared facts, validated attributes) of ``op`` on ``args``, kept on ``p`` by op and dtype
    (an engine that computes 16-bit storage in f32 asks for f32 facts); the attributes are the
    validated arguments less the arrays the caller passes (``first`` and ``b``)."""
    key = f"step {op} {args[first].dtype}"
    found = p.__dict__.get(key)
    if found is None:
        spec = lookup(op)
        validated = spec.validate(**args)
        attributes = {k: v for k, v in validated.items() if k not in (first, "b")}
        found = p.__dict__[key] = (spec.prepare(validated), attributes)
    return found


def composed(conv_kernels, arithmetic_kernels, activation_kernels, clip_kernels):
    """The fused_conv kernel made of an engine's family modules of conv, arithmetic, activation and
    clip kernels (looked up by op name at each call)."""
    def fused_conv(p, x, weight, bias, stride, padding, dilation, groups, residual, activation, alpha, beta):
        y = getattr(conv_kernels, p.conv)(p, x, weight, bias, stride, padding, dilation, groups)
        return finish(p, y, residual, arithmetic_kernels, activation_kernels, clip_kernels)
    return fused_conv


def finish(p, y, residual, arithmetic, activation, clip):
    """``y`` (the convolution's result) plus ``residual``, then the activation, with the kernels of
    an engine's ``arithmetic``, ``activation`` and ``clip`` modules."""
    if residual is not None:
        y = arithmetic.add(step_prepared(p, "add", {"a": y, "b": residual}, "a")[0], y, residual)
    if p.activation_call is not None:
        op, kwargs = p.activation_call
        step, attributes = step_prepared(p, op, {"x": y, **kwargs}, "x")
        y = getattr(clip if op == "clip" else activation, op)(step, y, **attributes)
    return y


def composed_softmax(arithmetic, softmax, logical, select):
    """The fused_softmax kernel made of an engine's family modules of arithmetic, softmax, logical
    and select kernels: add the mask, softmax, then select the fill where isnan."""
    def fused_softmax(p, x, mask, axis, nan_fill):
        y = x
        if mask is not None:
            y = arithmetic.add(step_prepared(p, "add", {"a": x, "b": mask}, "a")[0], x, mask)
        step, _ = step_prepared(p, "softmax", {"x": y, "axis": axis}, "x")
        y = softmax.softmax(step, y, axis)
        return y if nan_fill is None else fill_nan(p, y, nan_fill, logical, select)
    return fused_softmax


def fill_nan(p, y, nan_fill, logical, select):
    """``y`` with its NaNs replaced by ``nan_fill``, with an engine's isnan and select kernels."""
    nan = logical.isnan(step_prepared(p, "isnan", {"x": y}, "x")[0], y)
    fill = np.asarray(nan_fill, y.dtype)
    step, attributes = step_prepared(p, "select", {"cond": nan, "then": fill, "else_": y, "auto_broadcast": "numpy"},
                                     "cond")
    return select.select(step, nan, fill, y, attributes["auto_broadcast"])
