"""select: ``cond ? then : else_`` with the two-step broadcasting rule of the select proposal."""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size


def select(cond, then, else_, auto_broadcast="numpy"):
    """Elementwise ``then`` where ``cond`` is True, else ``else_``.

    ``auto_broadcast="numpy"``: ``then`` and ``else_`` broadcast to each other, then ``cond``
    broadcasts one way to that shape (it may not grow it). ``"none"``: all shapes equal.
    ``cond`` must be a bool array.
    """
    return run(SPEC, cond=cond, then=then, else_=else_, auto_broadcast=auto_broadcast)


def _validate(cond, then, else_, auto_broadcast):
    check.choice(auto_broadcast, "auto_broadcast", ("numpy", "none"))
    cond = check.tensor(cond, "cond")
    if np.dtype(cond.dtype) != dt.bool_:
        raise TypeError(f"cond has dtype {np.dtype(cond.dtype)}; select expects a bool cond "
                        f"(compare first, e.g. mask != 0)")
    if check.is_python_scalar(then) and not check.is_python_scalar(else_):
        else_ = check.tensor(else_, "else_")
        then = check.weak_scalar(then, else_.dtype, "then")
    elif check.is_python_scalar(else_) and not check.is_python_scalar(then):
        then = check.tensor(then, "then")
        else_ = check.weak_scalar(else_, then.dtype, "else_")
    then = check.tensor(then, "then")
    else_ = check.tensor(else_, "else_")
    check.promoted([("then", then.dtype), ("else_", else_.dtype)], "select")
    if auto_broadcast == "none":
        if not (tuple(cond.shape) == tuple(then.shape) == tuple(else_.shape)):
            raise ValueError(f"auto_broadcast='none' requires equal shapes; got cond {check.shape_str(cond.shape)}, "
                             f"then {check.shape_str(then.shape)}, else_ {check.shape_str(else_.shape)}")
    else:
        out = broadcast_value_shapes(then.shape, else_.shape)
        check_cond_shape(cond.shape, out)
    return {"cond": cond, "then": then, "else_": else_, "auto_broadcast": auto_broadcast}


def broadcast_value_shapes(then_shape, else_shape) -> tuple:
    """Step 1: ``then`` and ``else_`` broadcast to each other (numpy rules)."""
    try:
        return tuple(np.broadcast_shapes(tuple(then_shape), tuple(else_shape)))
    except ValueError:
        raise ValueError(f"then {check.shape_str(then_shape)} and else_ {check.shape_str(else_shape)} "
                         f"do not broadcast to each other") from None


def check_cond_shape(cond_shape, out_shape) -> None:
    """Step 2: ``cond`` broadcasts one way: right-aligned, each dim equal to the output's or 1."""
    ok = len(cond_shape) <= len(out_shape) and all(
        c == o or c == 1 for c, o in zip(reversed(tuple(cond_shape)), reversed(tuple(out_shape))))
    if not ok:
        raise ValueError(f"cond {check.shape_str(cond_shape)} does not broadcast one way to the shape of "
                         f"then/else_ {check.shape_str(out_shape)}: aligned from the right, each cond "
                         f"dimension must equal the output's or be 1, and cond may not add dimensions")


def _prepare(args) -> Prepared:
    """The broadcast shape of then/else_ and their promoted dtype."""
    then, else_ = args["then"], args["else_"]
    shape, dtype = broadcast_value_shapes(then.shape, else_.shape), dt.result_type(then.dtype, else_.dtype)
    # broadcasting (n, 1) against (1, m) can ask for far more than the inputs hold
    check_output_size(shape, dtype, "select", f"then {check.shape_str(then.shape)} and else_ "
                                              f"{check.shape_str(else_.shape)}")
    return Prepared(shape, dtype)


SPEC = OpSpec(
    name="select",
    function=select,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=_prepare,
    exact=True,
    # NUMBA's serial kernel (outputs under 256 KB) lost to np.where on every size measured;
    # from 2**17 elements (a 256 KB f32 output) its parallel launch wins
    recommend=_recommend.jit_from(1 << 17), preference=_recommend.PREFERENCE,
    chunking="elementwise",
    example=lambda t, rng: ((rng.random((2, 3, 8, 8)) > 0.5, t(2, 3, 8, 8), t(1, 1, 1, 8)), {}),
    zero_size=lambda z: ((z(0, 4).astype(bool), z(0, 4), z(1, 4)), {}, (0, 4)),
)
SPECS = [SPEC]
