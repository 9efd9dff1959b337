"""gelu, relu, sigmoid, tanh, exp, sqrt and erf.

BASIC against independent known values and against PyTorch's CPU ops (every float dtype, bf16
and f16 included, and special values); then every engine under test (see conftest) against
BASIC: odd sizes (whole and partial 16-lane vectors), strided and negative-stride views,
zero-size inputs, special and large values, relu's integer kernels. Results must have BASIC's
dtype and shape; relu equals BASIC's exactly, the others lie within a few units of the storage
dtype's epsilon. The two-operand ops are in test_op_arithmetic.py."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import (
    BINARY, FLOATS, INTS, KNOWN, SIGNED_ZEROS, SIZES, ULPS, assert_as_torch, basic, big, call_args, check, eps,
    from_torch, needs_torch, operands, require, run, sample, special_values, specials, to_torch, torch, views)


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_gelu_known_values():
    out = polyeng.gelu(np.array([-1.0, 0.0, 1.0, 3.0]))
    np.testing.assert_allclose(out, [-0.15865525393145707, 0.0, 0.8413447460685429, 2.9959503059051098],
                               rtol=1e-15)
    out = polyeng.gelu(np.array([-1.0, 1.0]), approximate="tanh")
    np.testing.assert_allclose(out, [-0.15880800939172324, 0.8411919906082768], rtol=1e-15)
    with pytest.raises(ValueError, match="approximate='erf'"):
        polyeng.gelu(np.ones(2), approximate="erf")


# (op, operands, the value to 17 digits): from tables of the functions, not from a library call
KNOWN_VALUES = [
    ("erf", (0.5,), 0.5204998778130465), ("erf", (1.0,), 0.8427007929497149), ("erf", (-2.0,), -0.9953222650189527),
    ("sigmoid", (0.0,), 0.5), ("sigmoid", (1.0,), 0.7310585786300049), ("sigmoid", (-1.0,), 0.2689414213699951),
    ("tanh", (1.0,), 0.7615941559557649), ("tanh", (0.5,), 0.46211715726000974), ("tanh", (-1.0,), -0.7615941559557649),
    ("sqrt", (2.0,), 1.4142135623730951), ("sqrt", (0.25,), 0.5), ("sqrt", (9.0,), 3.0),
    ("exp", (1.0,), 2.718281828459045), ("exp", (0.0,), 1.0), ("exp", (-1.0,), 0.36787944117144233),
    ("relu", (-1.5,), 0.0), ("relu", (2.5,), 2.5),
]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op,operands,value", KNOWN_VALUES,
                         ids=[f"{op}{operands}" for op, operands, _ in KNOWN_VALUES])
def test_known_values(op, operands, value, dtype):
    f = FLOATS[dtype]
    arrays = [np.full(5, v, np.float64).astype(f) for v in operands]
    got = basic(op, *arrays)
    assert got.dtype == f and got.shape == (5,)
    want = np.float64(value).astype(f).astype(np.float64)   # the value rounded to the storage dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * eps(f), atol=0)


# -- BASIC against PyTorch -------------------------------------------------------------------------


# op -> its PyTorch function (None without torch, when the comparisons skip)
TORCH_UNARY = {op: getattr(torch, op, None) for op in ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")}


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(TORCH_UNARY))
def test_unary_as_torch(op, dtype):
    f = FLOATS[dtype]
    x = np.concatenate([sample(op, 1000, f, 0), special_values(f)])
    assert_as_torch(basic(op, x), from_torch(TORCH_UNARY[op](to_torch(x))), op)
    view = x[::-3]
    assert_as_torch(basic(op, view), from_torch(TORCH_UNARY[op](to_torch(view))), op)


@needs_torch
def test_special_values_as_torch():
    nan, inf = np.nan, np.inf
    for f in FLOATS.values():
        x = np.array([-1.0, inf, -inf, nan, 1000.0, -1000.0, 0.0, -0.0], np.float64).astype(f)
        for op in TORCH_UNARY:
            assert_as_torch(basic(op, x), from_torch(TORCH_UNARY[op](to_torch(x))), op)
        base = np.array([0.0, -0.0, 0.0, -8.0, nan, 1.0, -1.0], np.float64).astype(f)
        exponent = np.array([-1.0, -1.0, 0.0, 1 / 3, 0.0, nan, inf], np.float64).astype(f)
        assert_as_torch(basic("pow", base, exponent), from_torch(torch.pow(to_torch(base), to_torch(exponent))), "pow")
        got = basic("sqrt", np.array([-0.0], f)).astype(np.float64)
        assert got[0] == 0 and np.signbit(got[0])


# -- gelu on every engine against BASIC ------------------------------------------------------------

def run_gelu(engine, x, approximate):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.gelu(x, approximate=approximate)


@pytest.mark.uses_ops("gelu")
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (16,), (13, 3), (3, 11), (5, 1000)])
def test_matches_basic(engine, shape, approximate, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(FLOATS[dtype])
    got, want = run_gelu(engine, x, approximate), run_gelu("basic", x, approximate)
    assert got.dtype == x.dtype and got.shape == x.shape
    tol = 8 * eps(x.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.uses_ops("gelu")
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values(engine, approximate, dtype):
    storage = FLOATS[dtype]
    big = 60000.0 if storage == np.float16 else 1e30
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, big, -big, 10.0, -10.0, 30.0, -30.0, 1e-30],
                 np.float64).astype(storage)
    got, want = run_gelu(engine, x, approximate), run_gelu("basic", x, approximate)
    tol = 8 * eps(storage)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


# -- relu, sigmoid, tanh, exp, sqrt and erf on every engine against BASIC --------------------------

UNARY = ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")
INTEGER_OPS = ("relu",)


DTYPE_CASES = [(op, d) for op in UNARY for d in FLOATS] + [(op, d) for op in INTEGER_OPS for d in INTS]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{op}-{d}" for op, d in DTYPE_CASES])
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    storage = {**FLOATS, **INTS}[dtype]
    for shape in SIZES:
        a, b = operands(op, shape, storage, seed=len(shape) + sum(shape))
        check(engine, op, *call_args(op, a, b))


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_non_contiguous_and_negative_stride_views(engine, op, dtype):
    a, b = operands(op, (9, 35), FLOATS[dtype])
    va, vb = views(a), views(b)
    for name in va:
        assert not va[name].flags.c_contiguous
        check(engine, op, *call_args(op, va[name], b))
        if op in BINARY:
            check(engine, op, a, vb[name])
            check(engine, op, va[name], vb["negative"])
            check(engine, op, va[name][:, :1], vb[name])   # a broadcast view against a strided one


@pytest.mark.parametrize("op", INTEGER_OPS)
def test_integer_views(engine, op):
    a, b = operands(op, (9, 35), np.int32)
    va, vb = views(a), views(b)
    for name in va:
        check(engine, op, *call_args(op, va[name], vb[name]))


@pytest.mark.parametrize("op", UNARY)
def test_zero_size_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16) + ((np.int8,) if op in INTEGER_OPS else ()):
        pairs = [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0)), ((0,), (1,))]
        for sa, sb in pairs if op in BINARY else [(s, None) for s in ((0,), (3, 0, 2), (0, 1), (2, 0))]:
            a, b = np.zeros(sa, dtype), np.ones(sb or (), dtype)
            want = check(engine, op, *call_args(op, a, b))
            assert want.size == 0 and want.shape == (np.broadcast_shapes(sa, sb) if op in BINARY else sa)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", UNARY)
def test_special_values_unary(engine, op, dtype):
    values = np.array(specials(FLOATS[dtype]), np.float64).astype(FLOATS[dtype])
    check(engine, op, values)
    check(engine, op, np.tile(values, 3)[::-1])   # past one 16-lane vector, negative stride


nan, inf = np.nan, np.inf


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", UNARY)
def test_known_special_results(engine, op, dtype):
    require(engine, op)
    f = FLOATS[dtype]
    args, expected = KNOWN[op]
    args = [[big(f) if v == "big" else v for v in a] * 3 for a in args]   # 3 copies: past 16 lanes
    got = run(engine, op, *(np.array(a, np.float64).astype(f) for a in args))
    expected = np.array(expected * 3, np.float64)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=ULPS.get(op, 0) * eps(f), atol=0,
                               equal_nan=True)
    if op in SIGNED_ZEROS:
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(got.astype(np.float64)[zero]), np.signbit(expected[zero]))
