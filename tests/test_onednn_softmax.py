"""ONEDNN's softmax and log_softmax: ordinary calls are taken (not turned down; bf16 ones where
oneDNN computes bf16), f32 log_softmax is turned down for its accuracy, and a row holding NaN or
+inf is NaN throughout along the last axis too, where oneDNN's own kernel leaves the other values
finite."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import onednn_computes_bf16, onednn_turns_down, sample_values

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")


def engine_of(op, *args, **kwargs):
    with polyeng.compute_eng("onednn"):
        return polyeng.explain(op, *args, **kwargs).engine


def on(engine, op, x, axis):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(x, axis=axis)


@pytest.mark.parametrize("shape,axis", [((8, 128), -1), ((4, 5, 33), 2), ((4, 5, 1), 1), ((7,), 0), ((), 0),
                                        ((3, 0), 1)])
def test_calls_are_taken(shape, axis):
    """bf16 where oneDNN computes it (an empty input needs no primitive); elsewhere turned down,
    another engine giving BASIC's results."""
    x = np.ones(shape, np.float32)
    assert engine_of("softmax", x, axis) == "onednn"
    assert engine_of("log_softmax", x, axis) != "onednn"   # f32: oneDNN's log is approximate
    for op in ("softmax", "log_softmax"):
        if onednn_computes_bf16() or x.size == 0:
            assert engine_of(op, x.astype(dt.bfloat16), axis) == "onednn"
        else:
            got, want = onednn_turns_down(op, sample_values(shape, dt.bfloat16), axis=axis)
            assert got.dtype == want.dtype == dt.bfloat16 and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0 ** -7, atol=1e-6)


def test_an_axis_before_the_last_is_turned_down_for_speed():
    x = np.ones((4, 5, 33), np.float32)
    with polyeng.compute_eng("onednn"):
        d = polyeng.explain("softmax", x, axis=1)
    assert d.engine != "onednn"
    assert "reference code" in next(c.reason for c in d.candidates if c.engine == "onednn")


@pytest.mark.parametrize("op,dtype", [("softmax", np.float32), ("softmax", dt.bfloat16),
                                      ("log_softmax", dt.bfloat16)])   # f32 log_softmax is turned down
def test_rows_with_nan_or_inf_are_nan(op, dtype):
    x = np.random.default_rng(0).standard_normal((6, 40)).astype(dtype)
    x[1, 3], x[3, 39], x[4, 0] = np.nan, np.inf, -np.inf
    for view, axis in ((x, 1), (np.ascontiguousarray(x.T).T, 1), (x[:, ::-1], 1)):
        if dtype == np.float32 or onednn_computes_bf16():
            got = on("onednn", op, view, axis).astype(np.float64)
        else:   # no bf16 softmax in oneDNN here: turned down, and the engine that runs it instead
            got = onednn_turns_down(op, view, axis=axis)[0].astype(np.float64)
        want = on("basic", op, view, axis).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=8 * (2.0 ** -7 if dtype == dt.bfloat16 else 2.0 ** -23),
                                   atol=1e-6, equal_nan=True)
