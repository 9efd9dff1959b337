"""ONEDNN's pooling, upsample, concat, permute and cast kernels: that ordinary calls run on
oneDNN (not turned down), and max pooling's values (the shared suite checks them only with
return_indices, which ONEDNN turns down) against BASIC bit for bit, NaN and -inf windows too."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import onednn_computes_bf16, onednn_turns_down

pytestmark = pytest.mark.skipif("onednn" not in [e.name for e in polyeng.engines() if e.available],
                                reason="oneDNN is not available")


def run(engine, fn, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return fn(*args, **kwargs)


def on_onednn(fn, x, *args, **kwargs):
    """ONEDNN's result; for bf16 where oneDNN computes none, the call is turned down for that and
    this is the result of the engine that runs it instead."""
    if x.dtype == dt.bfloat16 and not onednn_computes_bf16():
        return onednn_turns_down(fn.__name__, x, *args, **kwargs)[0]
    return run("onednn", fn, x, *args, **kwargs)


def test_ordinary_calls_run_on_onednn():
    x = np.ones((2, 8, 16, 16), np.float32)
    calls = [(polyeng.max_pool2d, (x, 3, 2, 1), {}), (polyeng.avg_pool2d, (x, 2), {}),
             (polyeng.upsample_bilinear2d, (x,), {"scale_factor": 2.0}),
             (polyeng.upsample_nearest, (x,), {"scale_factor": 2}),
             (polyeng.concat, ([x, x],), {"axis": 1}), (polyeng.permute_contiguous, (x, (0, 2, 1, 3)), {}),
             # int8 -> f32: bf16 -> f32 is taken only where this CPU's reorder keeps -0.0 (test_onednn_cast.py)
             (polyeng.cast, (x.astype(np.int8), "float32"), {})]
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
                    np.testing.assert_array_equal(bits(on_onednn(polyeng.max_pool2d, y, **kwargs)), bits(want))
    x = sample(rng, (2, 3, 7, 9, 13), dtype)
    want = run("basic", polyeng.max_pool3d, x, 3, 2, 1)
    np.testing.assert_array_equal(bits(on_onednn(polyeng.max_pool3d, x, 3, 2, 1)), bits(want))


def test_max_pool_lowest_and_nan_windows():
    x = np.array([[1, np.nan, 5, -np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)[None, None]
    for y in (x, np.nan_to_num(x, nan=0.0, neginf=-np.inf)):
        want = run("basic", polyeng.max_pool2d, y, (1, 2))
        got = run("onednn", polyeng.max_pool2d, y, (1, 2))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op, dtype", [("upsample_bilinear2d", np.float32), ("upsample_bilinear2d", dt.bfloat16),
                                       ("upsample_nearest", np.float32), ("upsample_nearest", np.float64)],
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_upsample_runs_in_pieces_of_whole_planes_with_the_same_bits(monkeypatch, op, dtype):
    """A call larger than ``MAX_RUN`` output items runs as several runs of whole planes (oneDNN
    3.2 faults on large runs), each plane as in one run; the last piece may be smaller. Where
    oneDNN computes no bf16 a bf16 call is turned down, whole or in pieces."""
    from polyeng.backends.onednn import upsample
    x = np.random.default_rng(4).standard_normal((3, 5, 6, 7)).astype(dtype)
    fn = getattr(polyeng, op)
    if np.dtype(dtype) == dt.bfloat16 and not onednn_computes_bf16():
        for limit in (upsample.MAX_RUN, 4 * 12 * 14):
            monkeypatch.setattr(upsample, "MAX_RUN", limit)
            got, want = onednn_turns_down(op, x, scale_factor=2.0)
            assert got.dtype == want.dtype == dtype and got.shape == want.shape == (3, 5, 12, 14)
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0 ** -8, atol=0)
        return
    whole = run("onednn", fn, x, scale_factor=2.0)
    monkeypatch.setattr(upsample, "MAX_RUN", 4 * 12 * 14 * (2 if np.dtype(dtype).itemsize == 8 else 1))
    assert len(upsample._pieces((3, 5, 12, 14) + ((2,) if np.dtype(dtype).itemsize == 8 else ()))) == 4
    pieces = run("onednn", fn, x, scale_factor=2.0)
    np.testing.assert_array_equal(pieces.view(np.uint8), whole.view(np.uint8))
    if op == "upsample_nearest":   # copies: BASIC's bits too
        np.testing.assert_array_equal(pieces.view(np.uint8), run("basic", fn, x, scale_factor=2.0).view(np.uint8))


def test_a_plane_larger_than_a_run_is_turned_down(monkeypatch):
    from polyeng.backends.onednn import upsample
    monkeypatch.setattr(upsample, "MAX_RUN", 100)
    x = np.ones((1, 2, 8, 8), np.float32)
    with pytest.raises(polyeng.EngineError, match="one plane of this call makes 256 oneDNN items"):
        run("onednn", polyeng.upsample_bilinear2d, x, scale_factor=2.0)


def test_a_large_f32_upsample_on_one_thread_runs():
    """8x64x56x56 to 112x112 on one thread: one run of it faulted in oneDNN 3.2."""
    x = np.random.default_rng(5).standard_normal((8, 64, 56, 56)).astype(np.float32)
    with polyeng.num_threads(1):
        got = run("onednn", polyeng.upsample_bilinear2d, x, scale_factor=2.0)
        near = run("onednn", polyeng.upsample_nearest, x[:, :32], scale_factor=2.0)
    want = run("basic", polyeng.upsample_bilinear2d, x, scale_factor=2.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(near, np.repeat(np.repeat(x[:, :32], 2, axis=2), 2, axis=3))
