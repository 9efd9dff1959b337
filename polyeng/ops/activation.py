"""Elementwise activations and functions of one array: gelu (torch.nn.functional.gelu, exact or
with the tanh approximation), relu, sigmoid, tanh, exp, sqrt, erf, and hardswish, hardsigmoid,
silu, leaky_relu (torch.nn.functional's), log and reciprocal (torch.log, torch.reciprocal).

All take floating-point arrays; relu also takes integers. Special values are numpy's and
PyTorch's: ``sqrt(-1)`` is NaN, ``exp(inf)`` inf, ``erf(±inf)`` ±1, ``relu(NaN)`` NaN,
``log(0)`` -inf, ``log(-1)`` NaN, ``reciprocal(-0.0)`` -inf, ``silu(-inf)`` NaN (``-inf / inf``,
as PyTorch's formula gives), ``hardswish(-inf)`` NaN (``-inf * 0``).
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


def hardswish(x):
    """``x * relu6(x + 3) / 6`` elementwise (torch.nn.functional.hardswish): 0 at and below -3, x
    at and above 3; NaN stays NaN."""
    return run(HARDSWISH, x=x)


def hardsigmoid(x):
    """``relu6(x + 3) / 6`` elementwise (torch.nn.functional.hardsigmoid): 0 at and below -3, 1 at
    and above 3; NaN stays NaN."""
    return run(HARDSIGMOID, x=x)


def silu(x):
    """``x * sigmoid(x)``, computed as PyTorch does: ``x / (1 + exp(-x))`` (torch.nn.functional.silu)."""
    return run(SILU, x=x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x > 0``, else ``x * negative_slope`` (torch.nn.functional.leaky_relu);
    ``negative_slope`` is a real number. NaN stays NaN."""
    return run(LEAKY_RELU, x=x, negative_slope=negative_slope)


def log(x):
    """The natural logarithm elementwise: ``log(0)`` is -inf, NaN below 0, ``log(inf)`` inf."""
    return run(LOG, x=x)


def reciprocal(x):
    """``1 / x`` elementwise: ``1 / 0`` is inf, ``1 / -0.0`` -inf, ``1 / ±inf`` ±0."""
    return run(RECIPROCAL, x=x)


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


def _validate_leaky_relu(x, negative_slope):
    x = check.tensor(x, "x", floats_only=True, op="leaky_relu")
    return {"x": x, "negative_slope": check.real(negative_slope, "negative_slope")}


def _spec(name, function, validate, category=Category.FOLLOW, min_elements=512, onednn_from=None, **catalogue):
    recommend = _recommend.jit_from(min_elements)
    if onednn_from is not None:
        # ONEDNN from ``onednn_from`` to 2**20 elements, where it beat both (measured on 2 cores,
        # direct calls interleaved: relu 1.25-1.5x BASIC from 2**18, 0.34-0.85x below; sigmoid
        # 1.26-1.47x from 2**17; silu 1.04-1.11x from 2**17; hardswish 1.15-5.3x from 2**14; gelu
        # 1.4-1.6x NUMBA from 2**16); smaller calls cost less on numpy. The ops that are numpy
        # ufuncs keep numpy's bits on small calls, as traced numpy code expects
        recommend = _recommend.onednn_if(_recommend.between(onednn_from, 1 << 20), recommend)
    return OpSpec(name=name, function=function, validate=validate, category=category, chunking="elementwise",
                  prepare=check.like_input, recommend=recommend, preference=_recommend.PREFERENCE, **catalogue)


# gelu's exact form is 3.5x BASIC's erf loop at 512 elements, the tanh form within 10%
GELU = _spec("gelu", gelu, _validate_gelu, onednn_from=1 << 14,
             example=lambda t, rng: ((t(6, 31),), {"approximate": "none"}),
             warmup=lambda t, rng: [((t(6, 31),), {"approximate": "tanh"})],
             zero_size=lambda z: ((z(0),), {}, (0,)), tolerance=8)
# thresholds: where NUMBA overtook BASIC on f32 (NUMBA/BASIC speed just above and below)
# 1.36x at 2**15, 0.97x at 2**14
RELU = _spec("relu", relu, _validate_relu, min_elements=1 << 15, onednn_from=1 << 18,
             example=lambda t, rng: ((t(6, 31),), {}),
             zero_size=lambda z: ((z(0, 3),), {}, (0, 3)))
# 1.04x, 0.89x
SIGMOID = _spec("sigmoid", sigmoid, _float_validator("sigmoid"), min_elements=1 << 13, onednn_from=1 << 17,
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
# The thresholds below were measured as those above, on 2 cores with one kept busy by another
# process (NUMBA's parallel launch from 2**16 elements then often got one thread).
# 1.04x at 2**12, 0.89x at 2**11
HARDSWISH = _spec("hardswish", hardswish, _float_validator("hardswish"), min_elements=1 << 12, onednn_from=1 << 14,
                  example=lambda t, rng: ((t(6, 31) * 3,), {}),
                  zero_size=lambda z: ((z(0, 3),), {}, (0, 3)))
# 1.19x at 2**13, 0.93x at 2**12
HARDSIGMOID = _spec("hardsigmoid", hardsigmoid, _float_validator("hardsigmoid"), min_elements=1 << 13,
                    example=lambda t, rng: ((t(6, 31) * 3,), {}),
                    zero_size=lambda z: ((z(2, 0),), {}, (2, 0)))
# 1.03x at 2**17, 0.69x at 2**16 (numpy's exp is SIMD: NUMBA wins by its threads)
SILU = _spec("silu", silu, _float_validator("silu"), min_elements=1 << 17, onednn_from=1 << 17,
             example=lambda t, rng: ((t(6, 31),), {}),
             zero_size=lambda z: ((z(0),), {}, (0,)))
# 1.26x at 2**13, 0.93x at 2**12
LEAKY_RELU = _spec("leaky_relu", leaky_relu, _validate_leaky_relu, min_elements=1 << 13, onednn_from=1 << 18,
                   example=lambda t, rng: ((t(6, 31),), {"negative_slope": 0.2}),
                   zero_size=lambda z: ((z(0, 4),), {"negative_slope": 0.1}, (0, 4)))
# NUMBA/BASIC 0.4x at every size from 2**10 to 2**20 elements (numpy's AVX-512 logf is 2.3x NUMBA's
# correctly rounded kernel on one core): BASIC throughout
LOG = _spec("log", log, _float_validator("log"), Category.DENY, min_elements=1 << 24, ufuncs=("log",),
            example=lambda t, rng: ((abs(t(6, 31)),), {}),
            zero_size=lambda z: ((z(3, 0),), {}, (3, 0)))
# 1.09x at 2**19, 0.99x at 2**18 (NUMBA's loop is 2x numpy's on one core, but its call costs more)
RECIPROCAL = _spec("reciprocal", reciprocal, _float_validator("reciprocal"), Category.DENY, min_elements=1 << 19,
                   ufuncs=("reciprocal",),
                   example=lambda t, rng: ((t(6, 31),), {}),
                   zero_size=lambda z: ((z(0, 2, 3),), {}, (0, 2, 3)))
SPECS = [GELU, RELU, SIGMOID, TANH, EXP, SQRT, ERF, HARDSWISH, HARDSIGMOID, SILU, LEAKY_RELU, LOG, RECIPROCAL]
