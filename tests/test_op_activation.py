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
from support import random_values

try:
    import torch
except ImportError:   # only the comparisons with PyTorch need it: they skip, the other tests run
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="could not import 'torch'")


FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


# -- known values on BASIC -------------------------------------------------------------------------

# The known values and argument rules are BASIC's: those tests take this fixture.
@pytest.fixture
def on_basic():
    with polyeng.compute_eng("basic", fallback=False):
        yield


@pytest.mark.usefixtures("on_basic")
def test_gelu_known_values():
    out = polyeng.gelu(np.array([-1.0, 0.0, 1.0, 3.0]))
    np.testing.assert_allclose(out, [-0.15865525393145707, 0.0, 0.8413447460685429, 2.9959503059051098],
                               rtol=1e-15)
    out = polyeng.gelu(np.array([-1.0, 1.0]), approximate="tanh")
    np.testing.assert_allclose(out, [-0.15880800939172324, 0.8411919906082768], rtol=1e-15)
    with pytest.raises(ValueError, match="approximate='erf'"):
        polyeng.gelu(np.ones(2), approximate="erf")


def basic(op, *args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


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

def to_torch(a):
    a = np.asarray(a)
    if a.dtype == dt.bfloat16:   # torch reads no ml_dtypes array; every bf16 value is an f32 value
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def from_torch(t):
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(dt.bfloat16)
    return t.numpy()


def special_values(dtype):
    big = 60000.0 if np.dtype(dtype) == np.float16 else 1e38
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1000.0, -1000.0, big, -big, 20.0, -20.0, 1e-3],
                    np.float64).astype(dtype)


def sample(op, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    if op == "sqrt":
        x = np.abs(x)
    return x.astype(dtype)


# op -> its PyTorch function (None without torch, when the comparisons skip)
TORCH_UNARY = {op: getattr(torch, op, None) for op in ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")}
# Units of the storage epsilon; 16-bit results are the f32 value rounded once, by torch as by BASIC.
TORCH_ULPS = {"relu": 0, "add": 1, "sub": 1, "mul": 1, "div": 1, "sqrt": 1, "pow": 4, "sigmoid": 4, "tanh": 4, "exp": 4,
              "erf": 4}


def assert_as_torch(got, want, op):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    tol = TORCH_ULPS[op] * eps(got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


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

# the two-operand ops (test_op_arithmetic.py): call_args and the tests below tell them apart
BINARY = ("add", "sub", "mul", "div", "pow")
UNARY = ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")
INTEGER_OPS = ("relu",)
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


DTYPE_CASES = [(op, d) for op in UNARY for d in FLOATS] + [(op, d) for op in INTEGER_OPS for d in INTS]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{op}-{d}" for op, d in DTYPE_CASES])
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    storage = {**FLOATS, **INTS}[dtype]
    for shape in SIZES:
        a, b = operands(op, shape, storage, seed=len(shape) + sum(shape))
        check(engine, op, *call_args(op, a, b))


def views(x):
    """Non-contiguous views of the values of ``x`` (2-D): transposed, negative strides, every
    other element, and a broadcast (zero-stride) row."""
    wide = np.repeat(x, 2, axis=1)
    return {"transposed": np.ascontiguousarray(x.T).T, "negative": np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
            "strided": wide[:, ::2], "flipped": x[::-1], "broadcast": np.broadcast_to(x[:1], x.shape)}


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


def big(dtype):
    return {np.dtype(np.float16): 60000.0, np.dtype(np.float64): 1e300}.get(np.dtype(dtype), 1e38)


def specials(dtype):
    tiny = 2.0 ** -14 if np.dtype(dtype) == np.float16 else float(np.finfo(np.float32 if np.dtype(dtype) ==
                                                                            dt.bfloat16 else dtype).tiny)
    return [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 20.0, -20.0, 88.5, -88.5,
            1000.0, -1000.0, big(dtype), -big(dtype), tiny, -tiny]


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
