"""ONEDNN's pooling, upsample, concat, permute and cast kernels: that ordinary calls run on
oneDNN (not turned down), and max pooling's values (the shared suite checks them only with
return_indices, which ONEDNN turns down) against BASIC bit for bit, NaN and -inf windows too."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif("onednn" not in [e.name for e in polyeng.engines() if e.available],
                                reason="oneDNN is not available")


def run(engine, fn, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return fn(*args, **kwargs)


def test_ordinary_calls_run_on_onednn():
    x = np.ones((2, 8, 16, 16), np.float32)
    calls = [(polyeng.max_pool2d, (x, 3, 2, 1), {}), (polyeng.avg_pool2d, (x, 2), {}),
             (polyeng.upsample_bilinear2d, (x,), {"scale_factor": 2.0}),
             (polyeng.upsample_nearest, (x,), {"scale_factor": 2}),
             (polyeng.concat, ([x, x],), {"axis": 1}), (polyeng.permute_contiguous, (x, (0, 2, 1, 3)), {}),
             (polyeng.cast, (x.astype(dt.bfloat16), "float32"), {})]
    with polyeng.compute_eng("onednn"):
        for fn, args, kwargs in calls:
            assert polyeng.explain(fn, *args, **kwargs).engine == "onednn", fn.__name__


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_max_pool_values_bit_exact(dtype):
    import sys, os
    sys.path.insert(0, os.path.dirname(__file__))
    from test_op_pooling import MAX_CASES, bits, fits, sample
    rng = np.random.default_rng(1)
    for shape in [(2, 3, 13, 17), (3, 7, 1), (1, 1, 1, 40)]:
        x = sample(rng, shape, dtype)
        clean = np.where(np.isnan(x.astype(np.float32)), 0, x).astype(dtype) if dtype in (np.float32, dt.bfloat16) else x
        for y in (x, clean):
            for kwargs in MAX_CASES:
                if fits(y, kwargs):
                    want = run("basic", polyeng.max_pool2d, y, **kwargs)
                    np.testing.assert_array_equal(bits(run("onednn", polyeng.max_pool2d, y, **kwargs)), bits(want))
    x = sample(rng, (2, 3, 7, 9, 13), dtype)
    want = run("basic", polyeng.max_pool3d, x, 3, 2, 1)
    np.testing.assert_array_equal(bits(run("onednn", polyeng.max_pool3d, x, 3, 2, 1)), bits(want))


def test_max_pool_lowest_and_nan_windows():
    x = np.array([[1, np.nan, 5, -np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)[None, None]
    for y in (x, np.nan_to_num(x, nan=0.0, neginf=-np.inf)):
        want = run("basic", polyeng.max_pool2d, y, (1, 2))
        got = run("onednn", polyeng.max_pool2d, y, (1, 2))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
