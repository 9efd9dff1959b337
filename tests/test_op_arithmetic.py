"""add, sub, mul, div and pow.

BASIC against independent known values and against PyTorch's CPU ops (every float dtype, bf16
and f16 included, special values, integer wrap-around), and result dtypes against numpy's
promotion with NEP 50 weak Python scalars. Then every engine under test (see conftest) against
BASIC: every storage dtype, odd sizes (whole and partial 16-lane vectors), broadcasting, Python
scalars, strided and negative-stride views, zero-size inputs, mixed dtypes, special values and
integer wrap-around; integer results equal BASIC's exactly, the others lie within a few units of
the storage dtype's epsilon.

Last, property tests for add, sub, mul and div on every engine that has all four: for any pair of
broadcastable shapes (0-d, size-1 and zero-size dimensions), any layout (strided, negative
strides) and any pair of polyeng's dtypes, the result dtype is numpy's promotion (bfloat16
promoting like float16, bf16 with f16 giving f32) or a TypeError naming both arguments, and the
values are numpy's own operation's: exactly for f32, f64 and integers, and for 16-bit results
the f32 result rounded once. Python scalars on either side are weak, as in numpy (NEP 50).
relu and the one-operand ops are in test_op_activation.py."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import (
    BINARY, FLOATS, INTS, KNOWN, SIGNED_ZEROS, SIZES, ULPS, assert_as_torch, assert_matches, basic, big,
    call_args, check, eps, from_torch, needs_torch, operands, require, run, sample, special_values, specials,
    to_torch, torch, views)
from support import random_values, run_on, turned_down


# -- known values on BASIC -------------------------------------------------------------------------


# (op, operands, the value to 17 digits): from tables of the functions, not from a library call
KNOWN_VALUES = [
    ("pow", (2.0, 10.0), 1024.0), ("pow", (9.0, 0.5), 3.0), ("pow", (2.0, -2.0), 0.25), ("pow", (-2.0, 3.0), -8.0),
    ("add", (0.75, 0.5), 1.25), ("sub", (1.0, 0.25), 0.75), ("mul", (1.5, -4.0), -6.0), ("div", (1.0, 3.0), 1 / 3),
    ("div", (-7.0, 2.0), -3.5),
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
TORCH_BINARY = {op: getattr(torch, op, None) for op in ("add", "sub", "mul", "div", "pow")}


@needs_torch
@pytest.mark.parametrize("dtype", ["s8", "u8", "s32", "s64"])
def test_integer_ops_as_torch(dtype):
    t = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}[dtype]
    info = np.iinfo(t)
    rng = np.random.default_rng(4)
    a = rng.integers(info.min, info.max, 500, dtype=t, endpoint=True)
    b = rng.integers(info.min, info.max, 500, dtype=t, endpoint=True)
    a[:3], b[:3] = [info.max, info.min, info.max], [1, 1, info.max]   # wrap-around, as torch wraps
    for op in ("add", "sub", "mul"):
        assert_as_torch(basic(op, a, b), from_torch(TORCH_BINARY[op](to_torch(a), to_torch(b))), op)
        assert_as_torch(basic(op, a, 3), from_torch(TORCH_BINARY[op](to_torch(a), 3)), op)
    assert_as_torch(basic("relu", a), from_torch(torch.relu(to_torch(a))), "relu")


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(TORCH_BINARY))
def test_binary_as_torch(op, dtype):
    f = FLOATS[dtype]
    a, b = sample(op, (40, 25), f, 1), sample(op, (40, 25), f, 2)
    if op == "pow":
        a = np.abs(a) + np.array(0.1, f)
    s = special_values(f)
    cases = [(a, b), (a[:, :1], b[:1]), (s[:, None], s[None, :]), (a.T, b[::-1].T)]
    for x, y in cases:
        assert_as_torch(basic(op, x, y), from_torch(TORCH_BINARY[op](to_torch(x), to_torch(y))), op)
    for scalar in (2.5, -3, 0.5):   # weak scalars: the array's dtype in torch as in polyeng
        assert_as_torch(basic(op, a, scalar), from_torch(TORCH_BINARY[op](to_torch(a), scalar)), op)
        if op != "pow":
            assert_as_torch(basic(op, scalar, b), from_torch(TORCH_BINARY[op](scalar, to_torch(b))), op)
    assert_as_torch(basic("pow", 2.5, a), from_torch(torch.pow(2.5, to_torch(a))), "pow")


# -- result dtypes on BASIC (NEP 50) ---------------------------------------------------------------

NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64]


def numpy_rule(op, a, b):
    """numpy's own result dtype for the operation (its true division for div, power for pow)."""
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power}[op]
    with np.errstate(all="ignore"):
        return ufunc(a, b).dtype


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_array_pairs_promote_as_numpy(op):
    for da in NUMPY_DTYPES:
        for db in NUMPY_DTYPES:
            a, b = np.arange(1, 4).astype(da), np.arange(2, 5).astype(db)
            expected = numpy_rule(op, a, b)
            if expected not in dt.SUPPORTED_DTYPES:   # int8 with uint8 is int16
                with pytest.raises(TypeError, match=rf"^{op}: a \({np.dtype(da)}\) and b \({np.dtype(db)}\) promote "
                                                    rf"to {expected}"):
                    basic(op, a, b)
                continue
            got = basic(op, a, b)
            assert got.dtype == expected, (op, da, db, got.dtype, expected)
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(got, {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op])


SCALARS = [2.5, -1.5, 1, -3, 0, 100, 2 ** 40]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_python_scalars_are_weak_as_in_numpy(op):
    for dtype in NUMPY_DTYPES:
        if op == "pow" and np.dtype(dtype).kind != "f":
            continue
        a = np.arange(1, 4).astype(dtype)
        for scalar in SCALARS:
            for args in ((a, scalar), (scalar, a)):
                try:
                    expected = numpy_rule(op, *args)
                except OverflowError:   # numpy 2: int8 + 1000 does not fit
                    with pytest.raises(ValueError, match=rf"={scalar} does not fit the other operand's dtype {a.dtype}"):
                        basic(op, *args)
                    continue
                got = basic(op, *args)
                assert got.dtype == expected, (op, dtype, args, got.dtype, expected)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_bfloat16_promotes_like_float16(op):
    """bf16 takes numpy's float16 rule (bf16 + 1 and bf16 * 2.5 stay bf16, bf16 + int8 is bf16,
    bf16 + int32 is f64), and bf16 with f16 is f32, the narrowest type that holds both."""
    x = np.array([1.0, 2.0, 4.0], dt.bfloat16)
    cases = [(x, 1, dt.bfloat16), (x, 2.5, dt.bfloat16), (0.5, x, dt.bfloat16), (x, x, dt.bfloat16),
             (x, np.float16([1, 2, 3]), np.float32), (np.float16([1, 2, 3]), x, np.float32),
             (x, np.float32([1, 2, 3]), np.float32), (np.float64([1, 2, 3]), x, np.float64)]
    if op != "pow":
        cases += [(x, np.int8([1, 2, 3]), dt.bfloat16), (np.uint8([1, 2, 3]), x, dt.bfloat16),
                  (x, np.int32([1, 2, 3]), np.float64), (np.int64([1, 2, 3]), x, np.float64)]
    for a, b, expected in cases:
        got = basic(op, a, b)
        assert got.dtype == np.dtype(expected), (op, a, b, got.dtype)
        wide = [np.asarray(v).astype(np.float64) if isinstance(v, np.ndarray) else v for v in (a, b)]
        want = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power}[op](*wide)
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(expected).astype(np.float64))


def test_the_examples_of_the_contract():
    f16 = np.array([1.5, -2.0, 3.25], np.float16)
    assert basic("mul", f16, 2.5).dtype == np.float16 and basic("mul", f16, 2.5).tolist() == [3.75, -5.0, 8.125]
    bf16 = basic("add", np.array([1.0, 2.0], dt.bfloat16), 1)
    assert bf16.dtype == dt.bfloat16 and bf16.astype(np.float32).tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match=r"b=1000 does not fit the other operand's dtype int8"):
        basic("add", np.array([1], np.int8), 1000)
    assert basic("add", np.array([1, 2], np.uint8), 2.5).dtype == np.float64
    quotient = basic("div", np.array([1, 2], np.int32), np.array([2, 4], np.int32))
    assert quotient.dtype == np.float64 and quotient.tolist() == [0.5, 0.5]
    assert basic("div", np.array([7], np.int8), 2).dtype == np.float64
    assert basic("add", 2, 3.5).dtype == np.float64 and basic("add", 2, 3).dtype == np.int64
    assert math.isinf(float(basic("pow", np.float32(0.0), -1)))


# -- every engine against BASIC --------------------------------------------------------------------

INTEGER_OPS = ("add", "sub", "mul", "div")


DTYPE_CASES = [(op, d) for op in BINARY for d in FLOATS] + [(op, d) for op in INTEGER_OPS for d in INTS]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{op}-{d}" for op, d in DTYPE_CASES])
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    storage = {**FLOATS, **INTS}[dtype]
    for shape in SIZES:
        a, b = operands(op, shape, storage, seed=len(shape) + sum(shape))
        check(engine, op, *call_args(op, a, b))


BROADCASTS = [((8, 1, 5), (1, 4, 1)), ((2, 64, 3, 3), (1, 64, 1, 1)), ((), (3, 17)), ((3, 17), ()),
              ((5, 1), (1, 17)), ((17,), (3, 1, 17)), ((1, 1), (1,)), ((4, 33), (33,))]


BROADCAST_CASES = [(op, d) for op in BINARY for d in ("f32", "bf16", "s32") if (op, d) != ("pow", "s32")]


@pytest.mark.parametrize("op,dtype", BROADCAST_CASES, ids=[f"{op}-{d}" for op, d in BROADCAST_CASES])
def test_broadcasting(engine, op, dtype):
    storage = {**FLOATS, **INTS}[dtype]
    for i, (sa, sb) in enumerate(BROADCASTS):
        a, _ = operands(op, sa, storage, seed=i)
        _, b = operands(op, sb, storage, seed=i + 100)
        want = check(engine, op, a, b)
        assert want.shape == np.broadcast_shapes(sa, sb)


def scalar_cases(op):
    """(array, scalar) pairs in both orders; the scalar is weak (NEP 50)."""
    f16, bf16, f32 = (operands(op, (37,), d)[0] for d in (np.float16, dt.bfloat16, np.float32))
    cases = [(f16, 2.5), (2.5, f16), (bf16, 1), (1, bf16), (f32, -1.5), (0.75, f32)]
    if op != "pow":
        s8, u8 = random_values(np.random.default_rng(1), (37,), np.int8), np.arange(37, dtype=np.uint8)
        cases += [(s8, 3), (-3, s8), (u8, 2.5), (7, u8), (np.arange(37, dtype=np.int64), 2 ** 40)]
    else:
        cases += [(f32, 3), (f32, 0.5), (f16, -2)]
    return cases


@pytest.mark.parametrize("op", BINARY)
def test_python_scalars_on_either_side(engine, op):
    for a, b in scalar_cases(op):
        check(engine, op, a, b)


@pytest.mark.parametrize("op", BINARY)
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


@pytest.mark.parametrize("op", BINARY)
def test_zero_size_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16) + ((np.int8,) if op in INTEGER_OPS else ()):
        pairs = [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0)), ((0,), (1,))]
        for sa, sb in pairs if op in BINARY else [(s, None) for s in ((0,), (3, 0, 2), (0, 1), (2, 0))]:
            a, b = np.zeros(sa, dtype), np.ones(sb or (), dtype)
            want = check(engine, op, *call_args(op, a, b))
            assert want.size == 0 and want.shape == (np.broadcast_shapes(sa, sb) if op in BINARY else sa)


MIXED = [(np.int8, dt.bfloat16), (np.int32, np.float16), (np.float16, dt.bfloat16), (np.float32, np.float64),
         (np.uint8, np.int32), (np.int64, np.float32), (np.uint8, np.float16), (dt.bfloat16, np.float32)]


@pytest.mark.parametrize("op", ("add", "sub", "mul", "div"))
def test_mixed_dtypes(engine, op):
    for first, second in MIXED:
        for da, db in ((first, second), (second, first)):
            a, _ = operands(op, (3, 37), da, seed=1)
            _, b = operands(op, (37,), db, seed=2)
            if np.dtype(db).kind in "iu":
                b = np.where(b == 0, 1, b)
            check(engine, op, a, b)


def test_pow_mixed_float_dtypes(engine):
    for first, second in [(np.float16, dt.bfloat16), (np.float32, np.float64), (dt.bfloat16, np.float32),
                          (np.float16, np.float64)]:
        for da, db in ((first, second), (second, first)):
            x, _ = operands("pow", (3, 37), da, seed=1)
            _, exponent = operands("pow", (37,), db, seed=2)
            check(engine, "pow", x, exponent)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", BINARY)
def test_special_values_binary(engine, op, dtype):
    values = np.array(specials(FLOATS[dtype]), np.float64).astype(FLOATS[dtype])
    check(engine, op, values[:, None], values[None, :])   # every pair, 400 elements


nan, inf = np.nan, np.inf


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", BINARY)
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


@pytest.mark.parametrize("dtype", list(INTS))
def test_integer_wrap_around(engine, dtype):
    require(engine, "add", "sub", "mul", "div", "relu")
    t = INTS[dtype]
    info = np.iinfo(t)
    hi, lo = np.array([info.max] * 17, t), np.array([info.min] * 17, t)
    one = np.ones(17, t)
    for op, args, expected in [("add", (hi, one), info.min), ("add", (hi, 1), info.min), ("sub", (lo, one), info.max),
                               ("sub", (lo, 1), info.max), ("mul", (hi, hi), 1),
                               ("mul", (lo, np.full(17, 2, t)), 0)]:
        out = run(engine, op, *args)
        assert out.dtype == t and (out == t(expected)).all(), (op, out)
        assert_matches(out, run("basic", op, *args), op)
    for op in ("add", "sub", "mul"):
        check(engine, op, *operands(op, (1031,), t, seed=5))   # the whole range: every sum wraps as in numpy
    relu = run(engine, "relu", np.array([info.min, -1 if info.min else 0, 0, 1, info.max] * 4, t))
    assert relu.dtype == t and relu.tolist() == [0, 0, 0, 1, info.max] * 4
    quotient = run(engine, "div", np.array([info.max, 7, 0, 1], t), np.array([1, 2, 0, 0], t))
    assert quotient.dtype == np.float64
    np.testing.assert_array_equal(quotient, [float(info.max), 3.5, np.nan, np.inf])


def test_int8_plus_one_wraps_to_minus_128(engine):
    require(engine, "add")
    out = run(engine, "add", np.full(33, 127, np.int8), 1)
    assert out.dtype == np.int8 and (out == -128).all()


# -- properties of add, sub, mul and div on every engine -------------------------------------------

OPS = ("add", "sub", "mul", "div")
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}
BF16, F16, F32 = dt.bfloat16, np.dtype(np.float16), np.dtype(np.float32)
DTYPES = tuple(d for d in dt.SUPPORTED_DTYPES if d != dt.bool_)   # bool is refused: tested with the bad inputs

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def arithmetic_engines():
    return [e.name for e in polyeng.engines() if e.available and set(OPS) <= set(e.ops)]


@pytest.fixture(scope="module", params=arithmetic_engines())
def on_engine(request):
    def run(op, a, b):
        if turned_down(request.param, op, a, b):   # an integer example on onednn: its semantics are BASIC's
            return run_on("basic", op, a, b)
        with polyeng.compute_eng(request.param, fallback=False):
            return getattr(polyeng, op)(a, b)
    return run


# ---------------------------------------------------------------------------
# The rule, stated without polyeng's code
# ---------------------------------------------------------------------------

def numpy_result_type(op, a, b):
    """numpy's result dtype; bfloat16, which numpy does not promote, takes float16's place, and
    with float16 itself gives float32."""
    if op == "div" and a.kind in "iu" and b.kind in "iu":
        return np.dtype(np.float64)   # true division of integers
    if BF16 in (a, b):
        if F16 in (a, b):
            return np.result_type(F32, *[d for d in (a, b) if d not in (F16, BF16)])
        stand_in = np.result_type(*[F16 if d == BF16 else d for d in (a, b)])
        return BF16 if stand_in == F16 else stand_in
    return np.result_type(a, b)


def numpy_values(op, a, b, result):
    """numpy's own operation on the values: integers as they are (wrapping), f32/f64 in that type,
    16-bit results computed in f32 and rounded once."""
    with np.errstate(all="ignore"):
        if result.kind in "iu":
            return UFUNCS[op](a, b)
        work = F32 if result.itemsize == 2 else result
        a = a.astype(work) if isinstance(a, np.ndarray) else a
        b = b.astype(work) if isinstance(b, np.ndarray) else b
        return np.asarray(UFUNCS[op](a, b)).astype(result)


def assert_same(got, want):
    """Equal dtype, shape and values, NaN matching NaN, and the sign of every zero."""
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    keep = ~np.isnan(w)
    np.testing.assert_array_equal(g[keep], w[keep])
    np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]))


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

def values(dtype, shape):
    """Arrays of ``dtype`` over its whole range: NaN, +-inf, -0.0 and subnormals among the floats,
    the extremes among the integers; bf16 from f32 values."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    else:
        width = {2: 16, 4: 32, 8: 64}[dtype.itemsize] if dtype != BF16 else 32
        elements = st.one_of(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]), st.floats(width=width))
    source = F32 if dtype == BF16 else dtype
    arrays = hnp.arrays(source, shape, elements=elements, fill=st.nothing())
    return arrays.map(lambda a: a.astype(BF16)) if dtype == BF16 else arrays


def laid_out(draw, array):
    """The same values as they are, through negative strides, or every other element of a wider array."""
    if not array.ndim:
        return array
    layout = draw(st.sampled_from(["contiguous", "negative", "strided"]))
    if layout == "negative":
        axis = draw(st.integers(0, array.ndim - 1))
        return np.flip(np.flip(array, axis).copy(), axis)
    if layout == "strided":
        return np.repeat(array, 2, axis=-1)[..., ::2]
    return array


@st.composite
def array_pairs(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                                    max_side=4)).input_shapes
    a_dtype, b_dtype = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    return (draw(st.sampled_from(OPS)), laid_out(draw, draw(values(a_dtype, shapes[0]))),
            laid_out(draw, draw(values(b_dtype, shapes[1]))))


PYTHON_SCALARS = st.one_of(st.integers(-300, 300), st.integers(-(2 ** 62), 2 ** 62), st.floats(width=64),
                           st.sampled_from([0.0, -0.0, 2.5, np.nan, np.inf, -np.inf]))


@st.composite
def array_scalar_cases(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    array = laid_out(draw, draw(values(draw(st.sampled_from(DTYPES)), shape)))
    return draw(st.sampled_from(OPS)), array, draw(PYTHON_SCALARS), draw(st.booleans())


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

@SETTINGS
@given(case=array_pairs())
def test_arrays_promote_and_compute_as_numpy(on_engine, case):
    op, a, b = case
    result = numpy_result_type(op, a.dtype, b.dtype)
    if result not in dt.SUPPORTED_DTYPES:   # int8 with uint8 is int16
        with pytest.raises(TypeError, match=rf"^{op}: a \({a.dtype}\) and b \({b.dtype}\) promote to {result}"):
            on_engine(op, a, b)
        return
    got = on_engine(op, a, b)
    assert got.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_same(got, numpy_values(op, a, b, result))


@SETTINGS
@given(case=array_scalar_cases())
def test_python_scalars_are_weak(on_engine, case):
    op, array, scalar, scalar_first = case
    args = (scalar, array) if scalar_first else (array, scalar)
    if array.dtype == BF16:
        # numpy has no bf16 rule of its own: the scalar takes the array's dtype, as float16's would
        with np.errstate(all="ignore"):
            weak = np.asarray(scalar, BF16)
        expected = numpy_values(op, *((weak, array) if scalar_first else (array, weak)), BF16)
    else:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = np.asarray(UFUNCS[op](*args))
        except OverflowError:   # numpy 2: a Python int out of the integer array's range
            with pytest.raises(ValueError, match=rf"={scalar} does not fit the other operand's dtype {array.dtype}"):
                on_engine(op, *args)
            return
    got = on_engine(op, *args)
    assert_same(got, expected)
