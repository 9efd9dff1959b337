"""Logic: logical_and, logical_or, logical_xor and logical_not of bool arrays, and isnan and isinf
of any array, all giving bool arrays (torch.logical_and ..., torch.isnan, torch.isinf).

- The logical ops take bool operands only (arrays, array-likes or Python bools); numbers are a
  TypeError naming the argument, where numpy and PyTorch would read nonzero as True: a mask made
  by a comparison says which test it stands for. The binary ones broadcast as numpy does.
- isnan and isinf take every dtype. Floats (f16, bf16, f32, f64) are classified by their bits,
  so NaN payloads and either sign count; integers and bools are never NaN or infinite, so they
  give all False, as torch.isnan and torch.isinf do (numpy's isnan does the same).

AMP category DENY, with ``exact``: the graph pass gives a DENY node its float inputs back in their
original dtype, and an exact op is never converted per call, so no mixed precision changes a
result (an f32 beyond f16's range would be inf in f16, and isinf would say so). The logical ops
have no float inputs to convert in the first place; they are DENY all the same, so the whole
family reads one way.
"""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from .arithmetic import broadcast
from .compare import prepared_for


def logical_and(a, b):
    """``a and b`` elementwise for bool arrays, with numpy broadcasting."""
    return run(LOGICAL_AND, a=a, b=b)


def logical_or(a, b):
    """``a or b`` elementwise for bool arrays, with numpy broadcasting."""
    return run(LOGICAL_OR, a=a, b=b)


def logical_xor(a, b):
    """``a != b`` elementwise for bool arrays, with numpy broadcasting."""
    return run(LOGICAL_XOR, a=a, b=b)


def logical_not(x):
    """``not x`` elementwise for a bool array."""
    return run(LOGICAL_NOT, x=x)


def isnan(x):
    """Whether each element of ``x`` is NaN; all False for integers and bools (torch.isnan)."""
    return run(ISNAN, x=x)


def isinf(x):
    """Whether each element of ``x`` is +inf or -inf; all False for integers and bools (torch.isinf)."""
    return run(ISINF, x=x)


def _bool_operand(value, name: str, op: str):
    if isinstance(value, (int, float, complex, np.number)) and not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}={value!r}: {op} takes bool operands (True, False or bool arrays); "
                        f"compare first, e.g. {name} != 0")
    value = check.tensor(value, name)
    if value.dtype != dt.bool_:
        raise TypeError(f"{name} has dtype {np.dtype(value.dtype)}; {op} expects a bool array (numbers are not "
                        f"read as truth values): compare first, e.g. {name} != 0")
    return value


def _binary_validator(op: str):
    def validate(a, b):
        a, b = _bool_operand(a, "a", op), _bool_operand(b, "b", op)
        broadcast(a.shape, b.shape, ("a", "b"))
        return {"a": a, "b": b}
    return validate


def _validate_not(x):
    return {"x": _bool_operand(x, "x", "logical_not")}


def _validate_any(x):
    return {"x": check.tensor(x, "x")}


def _prepare_unary(args) -> Prepared:
    return Prepared(args["x"].shape, dt.bool_)


def _spec(name, function, validate, prepare, min_elements, **catalogue):
    return OpSpec(name=name, function=function, validate=validate, prepare=prepare, category=Category.DENY,
                  exact=True, chunking="elementwise", ufuncs=(name,), recommend=_recommend.jit_from(min_elements),
                  preference=_recommend.PREFERENCE, **catalogue)


def _binary_spec(name, function, min_elements, **catalogue):
    return _spec(name, function, _binary_validator(name), prepared_for(name), min_elements, **catalogue)


def _masks(t, *shapes):
    return tuple(t(*shape) > 0 for shape in shapes)


def _with_specials(x):
    """``x`` with NaN, -NaN, inf, -inf and -0.0 as its first elements."""
    flat = x.reshape(-1)
    flat[:5] = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0], np.float32).astype(x.dtype)
    return x


# thresholds: where NUMBA overtook BASIC, on the elements of all operands, in the quietest runs of
# the day (2 cores, load 0.8-1.2). numpy's bool loops move a byte an element at memory speed:
# logical_not 0.75-0.82x at 2**22, 0.60-0.85x at 2**23, 0.81x at 2**24, 1.06x at 2**25;
# logical_and 0.73-0.74x at 2**22, 0.80-1.06x at 2**23, 0.78-0.83x at 2**24-2**25, 1.10x at 2**26
LOGICAL_AND = _binary_spec("logical_and", logical_and, 1 << 26,
                           example=lambda t, rng: (_masks(t, (2, 3, 8, 8), (1, 3, 1, 1)), {}),
                           zero_size=lambda z: ((z(0, 3) > 0, z(1, 3) > 0), {}, (0, 3)))
LOGICAL_OR = _binary_spec("logical_or", logical_or, 1 << 26,
                          example=lambda t, rng: (_masks(t, (4, 33), (33,)), {}),
                          zero_size=lambda z: ((z(2, 0) > 0, True), {}, (2, 0)))
LOGICAL_XOR = _binary_spec("logical_xor", logical_xor, 1 << 26,
                           example=lambda t, rng: (_masks(t, (6, 31), (6, 31)), {}),
                           zero_size=lambda z: ((z(0, 1) > 0, z(4) > 0), {}, (0, 4)))
LOGICAL_NOT = _spec("logical_not", logical_not, _validate_not, _prepare_unary, 1 << 25,
                    example=lambda t, rng: (_masks(t, (6, 31)), {}),
                    zero_size=lambda z: ((z(0, 3) > 0,), {}, (0, 3)))
# on f32, the same runs: isnan 0.67x at 2**20, 0.73-1.22x at 2**21, 1.01-1.46x at 2**22, 1.01-1.58x
# at 2**23; isinf 0.86x at 2**21, 1.22x at 2**22, 1.08x at 2**23
ISNAN = _spec("isnan", isnan, _validate_any, _prepare_unary, 1 << 22,
              example=lambda t, rng: ((_with_specials(t(6, 31)),), {}),
              zero_size=lambda z: ((z(0, 3),), {}, (0, 3)))
ISINF = _spec("isinf", isinf, _validate_any, _prepare_unary, 1 << 22,
              example=lambda t, rng: ((_with_specials(t(4, 33)),), {}),
              zero_size=lambda z: ((z(2, 0),), {}, (2, 0)))
SPECS = [LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR, LOGICAL_NOT, ISNAN, ISINF]
