"""ONEDNN's batch_norm: ordinary calls are taken (not turned down) at every rank, with or without
weight and bias, 16-bit inputs with f32 or 16-bit statistics (where oneDNN computes bf16; turned
down elsewhere); results are BASIC's ``x * scale + shift``."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import onednn_computes_bf16, onednn_turns_down

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")


def run(engine, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.batch_norm(*args, **kwargs)


@pytest.mark.parametrize("dtype,stats", [(np.float32, np.float32), (dt.bfloat16, np.float32),
                                         (dt.bfloat16, dt.bfloat16)])
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 7), (2, 3, 4, 5), (1, 2, 3, 4, 5), (1, 2, 2, 2, 2, 3)])
@pytest.mark.parametrize("affine", [False, True])
def test_taken_and_matches_basic(shape, dtype, stats, affine):
    rng = np.random.default_rng(0)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    mean, var = rng.standard_normal(c).astype(stats), (np.abs(rng.standard_normal(c)) + 0.5).astype(stats)
    kw = {"weight": rng.standard_normal(c).astype(stats), "bias": rng.standard_normal(c).astype(stats)} if affine \
        else {}
    taken = dtype == np.float32 or onednn_computes_bf16()   # elsewhere bf16 is turned down: BASIC's results
    if taken:
        with polyeng.compute_eng("onednn"):
            assert polyeng.explain("batch_norm", x, mean, var, **kw).engine == "onednn"
    for view in (x, np.swapaxes(x, 0, -1).copy().swapaxes(0, -1)):
        if taken:
            got, want = run("onednn", view, mean, var, **kw), run("basic", view, mean, var, **kw)
        else:
            got, want = onednn_turns_down("batch_norm", view, mean, var, **kw)
        assert got.dtype == dtype and got.shape == shape
        tol = 2.0 ** -7 if dtype == dt.bfloat16 else 4 * 2.0 ** -23
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
