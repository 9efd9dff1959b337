"""batch_norm in its inference form (torch.nn.functional.batch_norm with ``training=False``):
each channel (axis 1) normalised by its running statistics, then scaled and shifted.

Every engine computes the same per-channel ``scale = weight / sqrt(running_var + eps)`` and
``shift = bias - running_mean * scale`` in the compute dtype (``affine``), then
``y = x * scale + shift`` elementwise, as PyTorch's CPU kernel does. Mixed precision: FOLLOW
(16-bit inputs are computed in f32 and written back 16-bit).
"""
from __future__ import annotations

import numpy as np

from ..engine.mixed_precision import Category
from ..engine import dtypes as dt
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def batch_norm(x, running_mean, running_var, weight=None, bias=None, eps=1e-5):
    """``(x - running_mean) / sqrt(running_var + eps) * weight + bias`` per channel of ``x`` (N, C, ...)."""
    return run(SPEC, x=x, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias, eps=eps)


def affine(running_mean, running_var, weight, bias, eps, compute) -> tuple:
    """(scale, shift), contiguous 1-D arrays of ``compute`` dtype, one value per channel."""
    compute = np.dtype(compute)
    mean = np.asarray(running_mean).astype(compute)
    scale = np.asarray(1, compute) / np.sqrt(np.asarray(running_var).astype(compute) + compute.type(eps))
    if weight is not None:
        scale = scale * np.asarray(weight).astype(compute)
    shift = -mean * scale
    if bias is not None:
        shift = shift + np.asarray(bias).astype(compute)
    return np.ascontiguousarray(scale, compute), np.ascontiguousarray(shift, compute)


def compute_dtype(storage) -> np.dtype:
    return dt.float64 if np.dtype(storage) == dt.float64 else dt.float32


def _validate(x, running_mean, running_var, weight, bias, eps):
    x = check.tensor(x, "x", floats_only=True, op="batch_norm")
    if len(x.shape) < 2:
        raise ValueError(f"x has shape {check.shape_str(x.shape)}; batch_norm expects (N, C, ...) with at least "
                         f"2 dimensions")
    channels = x.shape[1]
    found = {}
    for name, value, required in (("running_mean", running_mean, True), ("running_var", running_var, True),
                                  ("weight", weight, False), ("bias", bias, False)):
        if value is None:
            if required:
                raise TypeError(f"{name}=None: batch_norm's inference form needs the running statistics")
            found[name] = None
            continue
        value = check.tensor(value, name, floats_only=True, ranks=(1,), op="batch_norm", like=x.dtype)
        check.same_or_f32(value, x.dtype, name)
        if value.shape[0] != channels:
            raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected ({channels},), one value "
                             f"per channel of x {check.shape_str(x.shape)}")
        found[name] = value
    eps = check.eps(eps)
    return {"x": x, **found, "eps": eps}


SPEC = OpSpec(
    name="batch_norm",
    function=batch_norm,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=check.like_input,
    recommend=_recommend.jit_from(1 << 16), preference=_recommend.PREFERENCE,
    chunking="batch_norm",
    example=lambda t, rng: ((t(2, 5, 7, 9), t(5), abs(t(5)) + 0.5), {"weight": t(5), "bias": t(5)}),
    zero_size=lambda z: ((z(0, 3, 4), z(3), z(3) + 1), {}, (0, 3, 4)),
    tolerance=16,
)
SPECS = [SPEC]
