"""gelu (exact and tanh form) on every engine under test (see conftest) against BASIC: odd sizes
(whole and partial 16-element vectors), special and large values."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.uses_ops("gelu")
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}


def run(engine, x, approximate):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.gelu(x, approximate=approximate)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (16,), (13, 3), (3, 11), (5, 1000)])
def test_matches_basic(engine, shape, approximate, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(FLOATS[dtype])
    got, want = run(engine, x, approximate), run("basic", x, approximate)
    assert got.dtype == x.dtype and got.shape == x.shape
    tol = 8 * eps(x.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values(engine, approximate, dtype):
    storage = FLOATS[dtype]
    big = 60000.0 if storage == np.float16 else 1e30
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, big, -big, 10.0, -10.0, 30.0, -30.0, 1e-30],
                 np.float64).astype(storage)
    got, want = run(engine, x, approximate), run("basic", x, approximate)
    tol = 8 * eps(storage)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True)
