"""Helpers the elementwise op tests share (test_op_activation.py, test_op_arithmetic.py and the
PyTorch comparisons of test_op_embedding.py and test_op_reduction.py): BASIC as the reference,
operands per op, the tolerance rules, non-contiguous views, special values, and PyTorch round trips."""
import numpy as np
import pytest

from support import SUBSET_ENGINES

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


def basic(op, *args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


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


# the two-operand ops: call_args and the tests tell them apart
BINARY = ("add", "sub", "mul", "div", "pow")


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
        reason = f"engine {engine!r} does not implement {', '.join(missing)}"
        if engine in SUBSET_ENGINES:   # by design: an expected failure naming the op, as conftest does
            pytest.xfail(reason)
        pytest.skip(reason)


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


def views(x):
    """Non-contiguous views of the values of ``x`` (2-D): transposed, negative strides, every
    other element, and a broadcast (zero-stride) row."""
    wide = np.repeat(x, 2, axis=1)
    return {"transposed": np.ascontiguousarray(x.T).T, "negative": np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
            "strided": wide[:, ::2], "flipped": x[::-1], "broadcast": np.broadcast_to(x[:1], x.shape)}


def big(dtype):
    return {np.dtype(np.float16): 60000.0, np.dtype(np.float64): 1e300}.get(np.dtype(dtype), 1e38)


def specials(dtype):
    tiny = 2.0 ** -14 if np.dtype(dtype) == np.float16 else float(np.finfo(np.float32 if np.dtype(dtype) ==
                                                                            dt.bfloat16 else dtype).tiny)
    return [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 20.0, -20.0, 88.5, -88.5,
            1000.0, -1000.0, big(dtype), -big(dtype), tiny, -tiny]


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
