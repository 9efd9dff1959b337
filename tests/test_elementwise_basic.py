"""The BASIC reference of add, sub, mul, div, pow, relu, sigmoid, tanh, exp, sqrt, erf, mean,
reshape and embedding: against known values, against PyTorch's CPU ops (every float dtype, bf16
and f16 included, and special values), and result dtypes against numpy's promotion with NEP 50
weak Python scalars. The other engines are checked against BASIC elsewhere."""
from __future__ import annotations

import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

torch = pytest.importorskip("torch")
F = torch.nn.functional

FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}
TORCH_DTYPES = {np.dtype(np.float16): torch.float16, dt.bfloat16: torch.bfloat16, np.dtype(np.float32): torch.float32,
                np.dtype(np.float64): torch.float64, np.dtype(np.int8): torch.int8, np.dtype(np.uint8): torch.uint8,
                np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64}


def basic(op, *args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


# ---------------------------------------------------------------- known values

# (op, operands, the value to 17 digits): from tables of the functions, not from a library call
KNOWN = [
    ("erf", (0.5,), 0.5204998778130465), ("erf", (1.0,), 0.8427007929497149), ("erf", (-2.0,), -0.9953222650189527),
    ("sigmoid", (0.0,), 0.5), ("sigmoid", (1.0,), 0.7310585786300049), ("sigmoid", (-1.0,), 0.2689414213699951),
    ("tanh", (1.0,), 0.7615941559557649), ("tanh", (0.5,), 0.46211715726000974), ("tanh", (-1.0,), -0.7615941559557649),
    ("sqrt", (2.0,), 1.4142135623730951), ("sqrt", (0.25,), 0.5), ("sqrt", (9.0,), 3.0),
    ("exp", (1.0,), 2.718281828459045), ("exp", (0.0,), 1.0), ("exp", (-1.0,), 0.36787944117144233),
    ("pow", (2.0, 10.0), 1024.0), ("pow", (9.0, 0.5), 3.0), ("pow", (2.0, -2.0), 0.25), ("pow", (-2.0, 3.0), -8.0),
    ("relu", (-1.5,), 0.0), ("relu", (2.5,), 2.5),
    ("add", (0.75, 0.5), 1.25), ("sub", (1.0, 0.25), 0.75), ("mul", (1.5, -4.0), -6.0), ("div", (1.0, 3.0), 1 / 3),
    ("div", (-7.0, 2.0), -3.5),
]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op,operands,value", KNOWN, ids=[f"{op}{operands}" for op, operands, _ in KNOWN])
def test_known_values(op, operands, value, dtype):
    f = FLOATS[dtype]
    arrays = [np.full(5, v, np.float64).astype(f) for v in operands]
    got = basic(op, *arrays)
    assert got.dtype == f and got.shape == (5,)
    want = np.float64(value).astype(f).astype(np.float64)   # the value rounded to the storage dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * eps(f), atol=0)


def test_known_values_of_mean_reshape_and_embedding():
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(basic("mean", x), 6.5)
    np.testing.assert_array_equal(basic("mean", x, 0), [5.0, 6.0, 7.0, 8.0])
    np.testing.assert_array_equal(basic("mean", x, 1, True), [[2.5], [6.5], [10.5]])
    np.testing.assert_array_equal(basic("mean", x, (0, 1), True), [[6.5]])
    np.testing.assert_array_equal(basic("reshape", x, (2, -1))[1], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0])
    np.testing.assert_array_equal(basic("embedding", np.array([2, 0, 2]), x), [x[2], x[0], x[2]])
    np.testing.assert_array_equal(basic("div", np.array([7, -7, 1]), np.array([2, 2, 0])), [3.5, -3.5, np.inf])
    assert basic("add", np.array([127], np.int8), 1).tolist() == [-128]


# ---------------------------------------------------------------- against PyTorch

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


UNARY = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp, "sqrt": torch.sqrt,
         "erf": torch.erf}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow}
# Units of the storage epsilon; 16-bit results are the f32 value rounded once, by torch as by BASIC.
ULPS = {"relu": 0, "add": 1, "sub": 1, "mul": 1, "div": 1, "sqrt": 1, "pow": 4, "sigmoid": 4, "tanh": 4, "exp": 4,
        "erf": 4}


def assert_as_torch(got, want, op):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    tol = ULPS[op] * eps(got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_as_torch(op, dtype):
    f = FLOATS[dtype]
    x = np.concatenate([sample(op, 1000, f, 0), special_values(f)])
    assert_as_torch(basic(op, x), from_torch(UNARY[op](to_torch(x))), op)
    view = x[::-3]
    assert_as_torch(basic(op, view), from_torch(UNARY[op](to_torch(view))), op)


@pytest.mark.parametrize("dtype", ["s8", "u8", "s32", "s64"])
def test_integer_ops_as_torch(dtype):
    t = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}[dtype]
    info = np.iinfo(t)
    rng = np.random.default_rng(4)
    a = rng.integers(info.min, info.max, 500, dtype=t, endpoint=True)
    b = rng.integers(info.min, info.max, 500, dtype=t, endpoint=True)
    a[:3], b[:3] = [info.max, info.min, info.max], [1, 1, info.max]   # wrap-around, as torch wraps
    for op in ("add", "sub", "mul"):
        assert_as_torch(basic(op, a, b), from_torch(BINARY[op](to_torch(a), to_torch(b))), op)
        assert_as_torch(basic(op, a, 3), from_torch(BINARY[op](to_torch(a), 3)), op)
    assert_as_torch(basic("relu", a), from_torch(torch.relu(to_torch(a))), "relu")


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_as_torch(op, dtype):
    f = FLOATS[dtype]
    a, b = sample(op, (40, 25), f, 1), sample(op, (40, 25), f, 2)
    if op == "pow":
        a = np.abs(a) + np.array(0.1, f)
    s = special_values(f)
    cases = [(a, b), (a[:, :1], b[:1]), (s[:, None], s[None, :]), (a.T, b[::-1].T)]
    for x, y in cases:
        assert_as_torch(basic(op, x, y), from_torch(BINARY[op](to_torch(x), to_torch(y))), op)
    for scalar in (2.5, -3, 0.5):   # weak scalars: the array's dtype in torch as in polyeng
        assert_as_torch(basic(op, a, scalar), from_torch(BINARY[op](to_torch(a), scalar)), op)
        if op != "pow":
            assert_as_torch(basic(op, scalar, b), from_torch(BINARY[op](scalar, to_torch(b))), op)
    assert_as_torch(basic("pow", 2.5, a), from_torch(torch.pow(2.5, to_torch(a))), "pow")


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_mean_as_torch(dtype):
    f = FLOATS[dtype]
    x = (np.random.default_rng(5).standard_normal((6, 7, 300)) + 1).astype(f)
    for axis in (None, 0, 2, -2, (0, 2)):
        for keepdims in (False, True):
            got = basic("mean", x, axis, keepdims)
            dims = () if axis is None else axis
            want = from_torch(torch.mean(to_torch(x), dim=dims if axis is not None else None, keepdim=keepdims)
                              if axis is not None else torch.mean(to_torch(x)))
            if axis is None and keepdims:
                want = want.reshape(1, 1, 1)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * eps(f),
                                       atol=2 * eps(f))


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_reshape_and_embedding_as_torch(dtype):
    f = FLOATS[dtype]
    x = sample("add", (4, 6, 5), f, 6)
    for target in ((-1,), (6, -1), (2, 3, 4, 5), (120, 1)):
        assert np.array_equal(basic("reshape", x, target), from_torch(to_torch(x).reshape(target)))
    weight = np.concatenate([sample("add", (9, 7), f, 7), special_values(f)[:7][None]])
    for ids in (np.array(3), np.array([9, 0, 9, 2]), np.arange(30).reshape(2, 3, 5) % 10, np.zeros((2, 0), np.int32)):
        got = basic("embedding", ids, weight)
        want = from_torch(F.embedding(torch.from_numpy(ids.astype(np.int64)), to_torch(weight)))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_special_values_as_torch():
    nan, inf = np.nan, np.inf
    for f in FLOATS.values():
        x = np.array([-1.0, inf, -inf, nan, 1000.0, -1000.0, 0.0, -0.0], np.float64).astype(f)
        for op in UNARY:
            assert_as_torch(basic(op, x), from_torch(UNARY[op](to_torch(x))), op)
        base = np.array([0.0, -0.0, 0.0, -8.0, nan, 1.0, -1.0], np.float64).astype(f)
        exponent = np.array([-1.0, -1.0, 0.0, 1 / 3, 0.0, nan, inf], np.float64).astype(f)
        assert_as_torch(basic("pow", base, exponent), from_torch(torch.pow(to_torch(base), to_torch(exponent))), "pow")
        got = basic("sqrt", np.array([-0.0], f)).astype(np.float64)
        assert got[0] == 0 and np.signbit(got[0])


# ---------------------------------------------------------------- result dtypes (NEP 50)

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
