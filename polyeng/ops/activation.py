"""Elementwise activations and functions of one array: gelu (torch.nn.functional.gelu, exact or
with the tanh approximation), relu, sigmoid, tanh, exp, sqrt and erf.

All take floating-point arrays; relu also takes integers. Special values are numpy's and
PyTorch's: ``sqrt(-1)`` is NaN, ``exp(inf)`` inf, ``erf(±inf)`` ±1, ``relu(NaN)`` NaN.
"""
from ..engine.mixed_precision import Category
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend


def gelu(x, approximate="none"):
    """``x * Phi(x)``; ``approximate="tanh"`` uses ``0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))``."""
    return run(GELU, x=x, approximate=approximate)


def relu(x):
    """``max(x, 0)`` elementwise, for floating-point and integer arrays; NaN stays NaN."""
    return run(RELU, x=x)


def sigmoid(x):
    """``1 / (1 + exp(-x))`` elementwise."""
    return run(SIGMOID, x=x)


def tanh(x):
    """The hyperbolic tangent elementwise."""
    return run(TANH, x=x)


def exp(x):
    """``e ** x`` elementwise; overflow is inf."""
    return run(EXP, x=x)


def sqrt(x):
    """The square root elementwise; NaN for negative values, -0.0 stays -0.0."""
    return run(SQRT, x=x)


def erf(x):
    """The error function elementwise; ``erf(±inf)`` is ±1."""
    return run(ERF, x=x)


def _validate_gelu(x, approximate):
    x = check.tensor(x, "x", floats_only=True, op="gelu")
    return {"x": x, "approximate": check.choice(approximate, "approximate", ("none", "tanh"))}


def _float_validator(op: str):
    def validate(x):
        return {"x": check.tensor(x, "x", floats_only=True, op=op)}
    return validate


def _validate_relu(x):
    x = check.tensor(x, "x")
    if x.dtype == dt.bool_:
        raise TypeError("x has dtype bool; relu expects a floating-point or integer array")
    return {"x": x}


def _spec(name, function, validate, category=Category.FOLLOW, min_elements=512, **catalogue):
    return OpSpec(name=name, function=function, validate=validate, category=category, chunking="elementwise",
                  prepare=check.like_input,
                  recommend=_recommend.jit_from(min_elements), preference=_recommend.PREFERENCE, **catalogue)


# gelu's exact form is 3.5x BASIC's erf loop at 512 elements, the tanh form within 10%
GELU = _spec("gelu", gelu, _validate_gelu,
             example=lambda t, rng: ((t(6, 31),), {"approximate": "none"}),
             warmup=lambda t, rng: [((t(6, 31),), {"approximate": "tanh"})],
             zero_size=lambda z: ((z(0),), {}, (0,)), tolerance=8)
# thresholds: where NUMBA overtook BASIC on f32 (NUMBA/BASIC speed just above and below)
# 1.36x at 2**15, 0.97x at 2**14
RELU = _spec("relu", relu, _validate_relu, min_elements=1 << 15,
             example=lambda t, rng: ((t(6, 31),), {}),
             zero_size=lambda z: ((z(0, 3),), {}, (0, 3)))
# 1.04x, 0.89x
SIGMOID = _spec("sigmoid", sigmoid, _float_validator("sigmoid"), min_elements=1 << 13,
                example=lambda t, rng: ((t(6, 31),), {}),
                zero_size=lambda z: ((z(2, 0),), {}, (2, 0)))
# 1.41x, 0.81x (numpy's is SIMD)
TANH = _spec("tanh", tanh, _float_validator("tanh"), min_elements=1 << 16, ufuncs=("tanh",),
             example=lambda t, rng: ((t(6, 31),), {}),
             zero_size=lambda z: ((z(0),), {}, (0,)))
# 1.45x, 0.80x
EXP = _spec("exp", exp, _float_validator("exp"), Category.DENY, min_elements=1 << 16, ufuncs=("exp",),
            example=lambda t, rng: ((t(6, 31),), {}),
            zero_size=lambda z: ((z(0, 5),), {}, (0, 5)))
# 1.07x, 0.83x
SQRT = _spec("sqrt", sqrt, _float_validator("sqrt"), min_elements=1 << 15, ufuncs=("sqrt",),
             example=lambda t, rng: ((abs(t(6, 31)),), {}),
             zero_size=lambda z: ((z(3, 0, 2),), {}, (3, 0, 2)))
# 1.16x, 0.87x (no numpy erf)
ERF = _spec("erf", erf, _float_validator("erf"), Category.DENY, min_elements=64,
            example=lambda t, rng: ((t(6, 31),), {}),
            zero_size=lambda z: ((z(0),), {}, (0,)))
SPECS = [GELU, RELU, SIGMOID, TANH, EXP, SQRT, ERF]
