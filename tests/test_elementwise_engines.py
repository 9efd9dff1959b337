"""add, sub, mul, div, pow, relu, sigmoid, tanh, exp, sqrt and erf on every engine under test (see
conftest) against BASIC: every storage dtype, odd sizes (whole and partial 16-lane vectors),
broadcasting, Python scalars, strided and negative-stride views, zero-size inputs, mixed dtypes,
special values and integer wrap-around.

Results must have BASIC's dtype and shape; integer results and relu equal BASIC's exactly, the
others lie within a few units of the storage dtype's epsilon."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import random_values

BINARY = ("add", "sub", "mul", "div", "pow")
UNARY = ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")
INTEGER_OPS = ("add", "sub", "mul", "div", "relu")
FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}
INTS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}
# Error allowed, in units of the result's epsilon (relative, and absolute near zero). + - * are
# correctly rounded in f32 and f64, and a 16-bit result is rounded once from f32.
ULPS = {"add": 1, "sub": 1, "mul": 1, "div": 2, "sqrt": 2, "pow": 8, "sigmoid": 8, "tanh": 8, "exp": 8,
        "erf": 8}
SIGNED_ZEROS = ("add", "sub", "mul", "div", "sqrt")   # IEEE fixes the sign of a zero result
SIZES = [(), (1,), (7,), (16,), (17,), (33,), (3, 5), (1031,), (3, 1000)]


def require(engine, *ops):
    """Skip, with conftest's reason, when ``engine`` lacks one of ``ops``."""
    record = next(r for r in polyeng.engines() if r.name == engine)
    missing = sorted(set(ops) - set(record.ops))
    if missing:
        pytest.skip(f"engine {engine!r} does not implement {', '.join(missing)}")


def run(engine, op, *args):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_matches(got, want, op):
    """``got`` (an engine's result) against BASIC's ``want``."""
    assert type(got) is np.ndarray
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    if op == "relu":   # exact; compared in f64, where numpy knows NaN for every storage dtype
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
        return
    tol = ULPS[op] * eps(want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
    if op in SIGNED_ZEROS:
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]), err_msg="sign of zero")


def check(engine, op, *args):
    require(engine, op)
    want = run("basic", op, *args)
    assert_matches(run(engine, op, *args), want, op)
    return want


def operands(op, shape, dtype, seed=0):
    """Values that keep each op in its domain and range, in ``dtype``."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return random_values(rng, shape, dtype), random_values(rng, shape, dtype)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    if op == "pow":
        a, b = np.abs(a) * 2 + 0.05, b * 1.5
    elif op == "sqrt":
        a = np.abs(a) * 10
    else:
        a, b = a * 3, b * 3
    return a.astype(dtype), b.astype(dtype)


def call_args(op, a, b):
    return (a, b) if op in BINARY else (a,)


DTYPE_CASES = [(op, d) for op in BINARY + UNARY for d in FLOATS] + [(op, d) for op in INTEGER_OPS for d in INTS]


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


def views(x):
    """Non-contiguous views of the values of ``x`` (2-D): transposed, negative strides, every
    other element, and a broadcast (zero-stride) row."""
    wide = np.repeat(x, 2, axis=1)
    return {"transposed": np.ascontiguousarray(x.T).T, "negative": np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
            "strided": wide[:, ::2], "flipped": x[::-1], "broadcast": np.broadcast_to(x[:1], x.shape)}


@pytest.mark.parametrize("op", BINARY + UNARY)
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


@pytest.mark.parametrize("op", BINARY + UNARY)
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


def big(dtype):
    return {np.dtype(np.float16): 60000.0, np.dtype(np.float64): 1e300}.get(np.dtype(dtype), 1e38)


def specials(dtype):
    tiny = 2.0 ** -14 if np.dtype(dtype) == np.float16 else float(np.finfo(np.float32 if np.dtype(dtype) ==
                                                                            dt.bfloat16 else dtype).tiny)
    return [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 20.0, -20.0, 88.5, -88.5,
            1000.0, -1000.0, big(dtype), -big(dtype), tiny, -tiny]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", BINARY)
def test_special_values_binary(engine, op, dtype):
    values = np.array(specials(FLOATS[dtype]), np.float64).astype(FLOATS[dtype])
    check(engine, op, values[:, None], values[None, :])   # every pair, 400 elements


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", UNARY)
def test_special_values_unary(engine, op, dtype):
    values = np.array(specials(FLOATS[dtype]), np.float64).astype(FLOATS[dtype])
    check(engine, op, values)
    check(engine, op, np.tile(values, 3)[::-1])   # past one 16-lane vector, negative stride


nan, inf = np.nan, np.inf
# op -> (operands, the defined result): the values themselves, not only agreement with BASIC
KNOWN = {
    "sqrt": (([-1.0, -inf, nan, 4.0, -0.0, inf],), [nan, nan, nan, 2.0, -0.0, inf]),
    "exp": (([inf, -inf, 0.0, nan, 1000.0, -1000.0],), [inf, 0.0, 1.0, nan, inf, 0.0]),
    "erf": (([inf, -inf, 0.0, nan, 10.0, -10.0],), [1.0, -1.0, 0.0, nan, 1.0, -1.0]),
    "tanh": (([inf, -inf, 0.0, nan, 1000.0, -1000.0],), [1.0, -1.0, 0.0, nan, 1.0, -1.0]),
    "sigmoid": (([1000.0, -1000.0, 0.0, nan, inf, -inf],), [1.0, 0.0, 0.5, nan, 1.0, 0.0]),
    "relu": (([nan, -inf, inf, -3.0, 3.0, -0.0],), [nan, 0.0, inf, 0.0, 3.0, 0.0]),
    "pow": (([0.0, -0.0, 2.0, -8.0, 4.0, nan, 1.0], [-1.0, -1.0, 10.0, 1 / 3, 0.5, 0.0, nan]),
            [inf, -inf, 1024.0, nan, 2.0, 1.0, 1.0]),
    "div": (([1.0, -1.0, 0.0, inf, 1.0, -0.0], [0.0, 0.0, 0.0, inf, -inf, 5.0]), [inf, -inf, nan, nan, -0.0, -0.0]),
    "add": (([inf, -inf, -0.0, 1.0], [-inf, -inf, -0.0, -1.0]), [nan, -inf, -0.0, 0.0]),
    "sub": (([inf, 0.0, -0.0], [inf, 0.0, 0.0]), [nan, 0.0, -0.0]),
    "mul": ((["big", 0.0, -0.0, -2.0], ["big", inf, 5.0, 0.0]), [inf, nan, -0.0, -0.0]),
}


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", BINARY + UNARY)
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
