"""ONEDNN's layer_norm: ordinary calls are taken (not turned down), a normalized_shape of several
dimensions and 16-bit inputs with f32 or 16-bit weights included (where oneDNN computes bf16;
turned down elsewhere), and views are read right."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import onednn_computes_bf16, onednn_turns_down, sample_values

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")


def engine_of(*args, **kwargs):
    with polyeng.compute_eng("onednn"):
        return polyeng.explain("layer_norm", *args, **kwargs).engine


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16])
@pytest.mark.parametrize("params", [None, np.float32, "same"])
def test_calls_are_taken(dtype, params):
    """bf16 where oneDNN computes it; elsewhere turned down, another engine giving BASIC's results
    (an empty input needs no primitive: taken)."""
    taken = dtype == np.float32 or onednn_computes_bf16()
    x = np.ones((8, 6, 32), dtype) if taken else sample_values((8, 6, 32), dtype)
    for shape in ((32,), (6, 32)):
        kind = dtype if params == "same" else params
        w = None if params is None else np.ones(shape, kind) if taken else sample_values(shape, kind, seed=1)
        for kwargs in ({"weight": w, "bias": w}, {"weight": w}):
            if taken:
                assert engine_of(x, shape, **kwargs) == "onednn"
            else:
                got, want = onednn_turns_down("layer_norm", x, shape, **kwargs)
                assert got.dtype == want.dtype == dtype
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0 ** -7,
                                           atol=2.0 ** -7 * np.max(np.abs(want.astype(np.float64))))
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
