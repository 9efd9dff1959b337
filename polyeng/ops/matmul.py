"""matmul (numpy rules) and linear (``x @ weight.T + bias``)."""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend
from ._memory import check_output_size


def matmul(a, b):
    """Matrix product with numpy's rules: 1-D operands are promoted and squeezed, leading
    (batch) dimensions broadcast; dtypes promote as in numpy."""
    return run(MATMUL, a=a, b=b)


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""
    return run(LINEAR, x=x, weight=weight, bias=bias)


def matmul_shapes(a_shape, b_shape) -> tuple:
    """``(output shape, batch shape)`` of ``a @ b`` under numpy's rules, or a ValueError naming
    both shapes. The batch shape is the broadcast of the dimensions before the last two, once
    1-D operands are promoted to matrices."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    for name, shape in (("a", a_shape), ("b", b_shape)):
        if len(shape) == 0:
            raise ValueError(f"{name} is 0-D; matmul expects arrays with at least one dimension")
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        raise ValueError(f"a {check.shape_str(a_shape)} and b {check.shape_str(b_shape)} do not chain: "
                         f"a's last dimension ({a2[-1]}) must equal b's "
                         f"{'only' if len(b_shape) == 1 else 'second-to-last'} dimension ({b2[-2]})")
    try:
        batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        raise ValueError(f"a {check.shape_str(a_shape)} and b {check.shape_str(b_shape)}: batch dimensions "
                         f"{a2[:-2]} and {b2[:-2]} do not broadcast") from None
    out = batch + (a2[-2], b2[-1])
    if len(a_shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b_shape) == 1:
        out = out[:-1]
    return out, batch


def _validate_matmul(a, b):
    a, b = check.tensor(a, "a"), check.tensor(b, "b")
    check.promoted([("a", a.dtype), ("b", b.dtype)], "matmul")
    matmul_shapes(a.shape, b.shape)
    return {"a": a, "b": b}


def _validate_linear(x, weight, bias):
    x = check.tensor(x, "x", floats_only=True, op="linear")
    if len(x.shape) == 0:
        raise ValueError("x is 0-D; linear expects an array with at least one dimension (..., in_features)")
    weight = check.tensor(weight, "weight", floats_only=True, ranks=(2,), op="linear", like=x.dtype)
    check.same_or_f32(weight, x.dtype, "weight")
    if weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight has shape {check.shape_str(weight.shape)} but x {check.shape_str(x.shape)} has "
                         f"{x.shape[-1]} features; expected weight (out_features, {x.shape[-1]})")
    if bias is not None:
        bias = check.tensor(bias, "bias", floats_only=True, ranks=(1,), op="linear", like=x.dtype)
        check.same_or_f32(bias, x.dtype, "bias")
        if bias.shape[0] != weight.shape[0]:
            raise ValueError(f"bias has shape {check.shape_str(bias.shape)}; expected ({weight.shape[0]},) "
                             f"to match weight's out_features")
    return {"x": x, "weight": weight, "bias": bias}


def _prepare_matmul(args) -> Prepared:
    """The product's shape and promoted dtype, and ``batch``: its broadcast batch dimensions.
    A product too large to allocate (broadcast batches, or (n, 1) @ (1, n)) is a ValueError."""
    a, b = args["a"], args["b"]
    shape, batch = matmul_shapes(a.shape, b.shape)
    dtype = dt.result_type(a.dtype, b.dtype)
    check_output_size(shape, dtype, "matmul", f"a {check.shape_str(a.shape)} and b {check.shape_str(b.shape)}")
    return Prepared(shape, dtype, batch=batch)


def _prepare_linear(args) -> Prepared:
    """The output's shape and dtype; one too large to allocate is a ValueError."""
    x, weight = args["x"], args["weight"]
    shape = tuple(x.shape[:-1]) + (weight.shape[0],)
    given = f"x {check.shape_str(x.shape)} and weight {check.shape_str(weight.shape)}"
    check_output_size(shape, x.dtype, "linear", given)
    return Prepared(shape, x.dtype)


MATMUL = OpSpec(name="matmul", function=matmul, validate=_validate_matmul, category=Category.ALLOW,
                prepare=_prepare_matmul,
                recommend=_recommend.products, preference=_recommend.PREFERENCE,
                chunking="matmul", ufuncs=("matmul",),
                example=lambda t, rng: ((t(4, 17, 24), t(24, 9)), {}),
                zero_size=lambda z: ((z(0, 5), z(5, 3)), {}, (0, 3)),
                tolerance=32)
LINEAR = OpSpec(name="linear", function=linear, validate=_validate_linear, category=Category.ALLOW,
                prepare=_prepare_linear,
                recommend=_recommend.products, preference=_recommend.PREFERENCE,
                chunking="linear",
                example=lambda t, rng: ((t(5, 24), t(9, 24), t(9)), {}),
                zero_size=lambda z: ((z(2, 0, 5), z(3, 5)), {}, (2, 0, 3)),
                tolerance=32)
SPECS = [MATMUL, LINEAR]
