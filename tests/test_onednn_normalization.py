"""ONEDNN's layer_norm: ordinary calls are taken (not turned down), a normalized_shape of several
dimensions and 16-bit inputs with f32 or 16-bit weights included, and views are read right."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")


def engine_of(*args, **kwargs):
    with polyeng.compute_eng("onednn"):
        return polyeng.explain("layer_norm", *args, **kwargs).engine


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16])
@pytest.mark.parametrize("params", [None, np.float32, "same"])
def test_calls_are_taken(dtype, params):
    x = np.ones((8, 6, 32), dtype)
    for shape in ((32,), (6, 32)):
        w = None if params is None else np.ones(shape, dtype if params == "same" else params)
        assert engine_of(x, shape, weight=w, bias=w) == "onednn"
        assert engine_of(x, shape, weight=w) == "onednn"
    assert engine_of(np.ones((0, 4), dtype), 4) == "onednn"


def test_views_match_basic():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 10, 12)).astype(np.float32)
    w, b = rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32)
    for x in (base[:, ::2, ::2], base.transpose(1, 0, 2)[:, :5, :6], base[::-1, :5, 6:]):
        with polyeng.compute_eng("onednn", fallback=False):
            got = polyeng.layer_norm(x, (5, 6), weight=w, bias=b, eps=1e-3)
        with polyeng.compute_eng("basic"):
            want = polyeng.layer_norm(x, (5, 6), weight=w, bias=b, eps=1e-3)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
