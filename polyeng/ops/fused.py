"""fused_conv: ``activation(conv(x, weight, bias, ...) + residual)`` as one op, the node a graph's
``conv_activation`` and ``conv_residual`` fusions (``polyeng.graph.fusions``) make of a convolution
and the activation and residual add that read only its result.

``x``, ``weight``, ``bias``, ``stride``, ``padding``, ``dilation`` and ``groups`` are conv1d's
(a 3-D weight) or conv2d's (a 4-D weight), with their checks and errors. ``residual``, when given,
is added to the convolution's result: an array of that result's shape and of ``x``'s dtype (no
broadcasting). ``activation`` is one of ``ACTIVATIONS``, applied last:

- ``"none"``, ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"hardswish"``, ``"hardsigmoid"``,
  ``"silu"``, ``"gelu"`` (exact) and ``"gelu_tanh"``, as the ops of those names;
- ``"leaky_relu"`` with ``alpha`` its negative slope;
- ``"clip"`` with ``alpha`` and ``beta`` its bounds (``clip(y, alpha, beta)``).

The result equals the ops called one after another within the conv's tolerance, special values
included (a NaN stays a NaN through relu). ONEDNN runs it as one primitive: the residual and
the activation are post-ops applied as each block of the result is made, so the result is written
once. The other engines call their own conv, add and activation kernels one after another.

Mixed precision: ALLOW, as the convolution it starts from.
"""
from __future__ import annotations

import numpy as np

from ..engine.dispatch import run
from ..engine.mixed_precision import Category
from . import _checks as check
from . import _recommend
from .catalogue import OpSpec
from .conv import CONV1D, CONV2D

# activation -> (the op applied, its keyword arguments from alpha and beta)
ACTIVATIONS = {
    "none": None,
    "relu": ("relu", lambda a, b: {}),
    "sigmoid": ("sigmoid", lambda a, b: {}),
    "tanh": ("tanh", lambda a, b: {}),
    "hardswish": ("hardswish", lambda a, b: {}),
    "hardsigmoid": ("hardsigmoid", lambda a, b: {}),
    "silu": ("silu", lambda a, b: {}),
    "gelu": ("gelu", lambda a, b: {"approximate": "none"}),
    "gelu_tanh": ("gelu", lambda a, b: {"approximate": "tanh"}),
    "leaky_relu": ("leaky_relu", lambda a, b: {"negative_slope": a}),
    "clip": ("clip", lambda a, b: {"min": a, "max": b}),
}


def fused_conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, residual=None, activation="none",
               alpha=0.0, beta=0.0):
    """``activation(conv(x, weight, bias, stride, padding, dilation, groups) + residual)``: conv1d for
    a 3-D weight, conv2d for a 4-D one; ``residual`` (optional) has the convolution's result shape."""
    return run(FUSED_CONV, x=x, weight=weight, bias=bias, stride=stride, padding=padding, dilation=dilation,
               groups=groups, residual=residual, activation=activation, alpha=alpha, beta=beta)


def activation_call(activation: str, alpha: float, beta: float):
    """(op name, keyword arguments) of the activation, or None for ``"none"``."""
    found = ACTIVATIONS[activation]
    return None if found is None else (found[0], found[1](alpha, beta))


def conv_spec(weight):
    """The conv op a fused_conv call starts from: conv1d for a 3-D weight, conv2d for a 4-D one."""
    return CONV1D if weight.ndim == 3 else CONV2D


def _validate(x, weight, bias, stride, padding, dilation, groups, residual, activation, alpha, beta):
    weight_checked = check.tensor(weight, "weight", floats_only=True, ranks=(3, 4), op="fused_conv")
    conv = conv_spec(weight_checked)
    args = conv.validate(x=x, weight=weight_checked, bias=bias, stride=stride, padding=padding, dilation=dilation,
                         groups=groups)
    args["activation"] = check.choice(activation, "activation", tuple(ACTIVATIONS))
    args["alpha"] = _real(alpha, "alpha")
    args["beta"] = _real(beta, "beta")
    if args["activation"] == "clip" and args["alpha"] > args["beta"]:
        raise ValueError(f"activation='clip' needs alpha <= beta (the bounds); got alpha={alpha!r}, beta={beta!r}")
    if residual is not None:
        residual = check.tensor(residual, "residual", floats_only=True, op="fused_conv", like=args["x"].dtype)
        if residual.dtype != args["x"].dtype:
            raise TypeError(f"residual has dtype {residual.dtype}; fused_conv adds it to a result of x's dtype "
                            f"({args['x'].dtype})")
    args["residual"] = residual
    return args


def _real(value, name: str) -> float:
    value = check.real(value, name)
    if np.isnan(value):
        raise ValueError(f"{name}={value!r}: expected a number, not NaN")
    return value


def _prepare(args):
    conv = conv_spec(args["weight"])
    conv_args = {k: args[k] for k in ("x", "weight", "bias", "stride", "padding", "dilation", "groups")}
    p = conv.prepare(conv_args)
    residual = args["residual"]
    if residual is not None and tuple(residual.shape) != tuple(p.shape):
        raise ValueError(f"residual has shape {check.shape_str(residual.shape)}; fused_conv adds it to the "
                         f"convolution's result, of shape {check.shape_str(p.shape)} (no broadcasting)")
    p.conv = conv.name
    p.activation_call = activation_call(args["activation"], args["alpha"], args["beta"])
    return p


FUSED_CONV = OpSpec(
    name="fused_conv", function=fused_conv, validate=_validate, prepare=_prepare, category=Category.ALLOW,
    recommend=CONV2D.recommend, preference=_recommend.PREFERENCE, chunking="conv", tolerance=64,
    example=lambda t, rng: ((t(2, 4, 9, 11), t(6, 2, 3, 3), t(6)),
                            {"stride": 2, "padding": 1, "groups": 2, "residual": t(2, 6, 5, 6),
                             "activation": "hardswish"}),
    warmup=lambda t, rng: [((t(2, 4, 9, 11), t(6, 4, 1, 1), t(6)), {"activation": "relu"}),
                           ((t(2, 4, 13), t(6, 4, 3)), {"padding": 1, "activation": "silu"})],
    zero_size=lambda z: ((z(0, 3, 8, 8), z(4, 3, 3, 3)), {"activation": "relu"}, (0, 4, 6, 6)))
SPECS = [FUSED_CONV]
