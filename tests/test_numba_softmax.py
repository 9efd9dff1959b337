"""NUMBA softmax / log_softmax against BASIC: both kernel paths (last axis, inner > 1 with
partial lane blocks), odd sizes, 0-d input, and rows of -inf, +inf, NaN and huge values."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytest.importorskip("numba")

FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
OPS = ("softmax", "log_softmax")


def run(engine, op, x, axis):
    # BASIC's f32 result of a huge f16 log_softmax overflows f16 on the way back (-> -inf).
    with polyeng.compute_eng(engine, fallback=False), np.errstate(over="ignore"):
        return getattr(polyeng, op)(x, axis=axis)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_matches_basic(op, x, axis, ulps=8):
    got, want = run("numba", op, x, axis), run("basic", op, x, axis)
    assert got.dtype == x.dtype and got.shape == want.shape == x.shape
    got, want = got.astype(np.float64), want.astype(np.float64)
    finite = np.abs(x.astype(np.float64)[np.isfinite(x.astype(np.float64))])
    scale = max(1.0, float(finite.max())) if op == "log_softmax" and finite.size else 1.0
    tol = ulps * eps(x.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("shape,axis", [((4, 5, 33), 2), ((4, 5, 33), 1), ((4, 5, 33), 0), ((), 0),
                                        ((1,), 0), ((7,), 0), ((13, 1), 1), ((2, 600, 50), 1),
                                        ((3, 13, 7, 2), 1), ((1, 1, 1), 1)])
@pytest.mark.parametrize("op", OPS)
def test_matches_basic(op, shape, axis, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 4).astype(FLOATS[dtype])
    assert_matches_basic(op, x, axis)


def special_rows(dtype):
    big = float(np.finfo(np.float16).max) if dtype == np.float16 else 1e30
    nan, inf = np.nan, np.inf
    rows = [[-inf, -inf, -inf, -inf, -inf], [1.0, inf, 2.0, -inf, 0.0], [1.0, nan, 2.0, 3.0, 4.0],
            [nan, nan, nan, nan, nan], [-inf, 1.0, -inf, 2.0, -inf], [inf, inf, 1.0, 1.0, 1.0],
            [big, -big, big, 0.0, 1.0], [-big, -big, -big, -big, -big], [0.0, 0.0, 0.0, 0.0, 0.0]]
    return np.array(rows, np.float64).astype(dtype)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_special_values_along_both_paths(op, dtype):
    x = special_rows(FLOATS[dtype])
    assert_matches_basic(op, x, 1)                    # last axis
    assert_matches_basic(op, np.ascontiguousarray(x.T), 0)   # inner > 1
    assert_matches_basic(op, np.ascontiguousarray(x.T).reshape(5, 3, 3), 0)


@pytest.mark.parametrize("op", OPS)
def test_exact_values(op):
    x = np.array([[0.0, np.log(3.0)], [-np.inf, 5.0]], np.float32)
    got = run("numba", op, x, 1).astype(np.float64)
    want = np.array([[0.25, 0.75], [0.0, 1.0]])
    with np.errstate(divide="ignore"):
        want = want if op == "softmax" else np.log(want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_rows_sum_to_one_over_long_axis():
    x = np.random.default_rng(1).standard_normal((3, 5000)).astype(np.float32) * 10
    for axis in (0, 1):
        total = run("numba", "softmax", x, axis).astype(np.float64).sum(axis=axis)
        np.testing.assert_allclose(total, 1.0, rtol=1e-5)
