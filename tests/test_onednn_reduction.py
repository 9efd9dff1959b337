"""ONEDNN's mean, sum, amax and amin: ordinary calls are taken (not turned down; bf16 ones where
oneDNN computes bf16, elsewhere they are turned down), 16-bit sums accumulate in f32, and long
rows (summed in blocks: in place, with a tail block of their own, or padded) stay within a few
ulps of the exact sum."""
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


def run(op, *args, **kwargs):
    with polyeng.compute_eng("onednn", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16])
@pytest.mark.parametrize("op", ["mean", "sum"])
def test_float_calls_are_taken(op, dtype):
    """bf16 where oneDNN computes it; elsewhere turned down, another engine giving BASIC's results
    (an empty input needs no primitive: taken)."""
    if dtype == np.float32 or onednn_computes_bf16():
        x = np.ones((4, 6, 9), dtype)
        for axis in (None, -1, 0, (0, 2), 1):
            for keepdims in (False, True):
                assert engine_of(op, x, axis=axis, keepdims=keepdims) == "onednn"
        assert engine_of(op, x[:, ::2], axis=1) == "onednn"
    else:
        x = sample_values((4, 6, 9), dtype)
        for view, axis, keepdims in [(x, a, k) for a in (None, -1, 0, (0, 2), 1) for k in (False, True)] \
                + [(x[:, ::2], 1, False)]:
            got, want = onednn_turns_down(op, view, axis=axis, keepdims=keepdims)
            assert got.dtype == want.dtype == dtype and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0 ** -7,
                                       atol=2.0 ** -7 * np.max(np.abs(x.astype(np.float64))))
    assert engine_of(op, np.ones((3, 0), dtype), axis=1) == "onednn"


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_byte_extrema_are_taken(op, dtype):
    x = np.arange(24).astype(dtype).reshape(2, 3, 4)
    assert engine_of(op, x, axis=1) == "onednn"
    np.testing.assert_array_equal(run(op, x, axis=(0, 2)), getattr(np, op)(x, axis=(0, 2)))


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_float_and_s32_extrema_are_turned_down(op):
    for dtype in (np.float32, dt.bfloat16, np.int32):
        assert engine_of(op, np.ones((3, 4), dtype), axis=1) != "onednn"


@pytest.mark.parametrize("rows,n", [(1, 4096), (1, 4097), (1, 3 * 4096 + 5), (3, 4096 * 2), (3, 4096 + 7),
                                    (2, 4096 * 64 + 3)])
def test_long_rows_are_accurate(rows, n):
    x = (1.1 + 1e-3 * np.random.default_rng(rows + n).standard_normal((rows, n))).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=1)
    for op, want in (("sum", exact), ("mean", exact / n)):
        got = run(op, x, axis=1).astype(np.float64)
        assert np.max(np.abs(got - want) / want) <= 4 * 2.0 ** -23, op


def test_16_bit_sums_accumulate_in_f32():
    """On oneDNN where it computes bf16; elsewhere on the engine that runs the call it turns down."""
    values = np.ones(4096)
    values[::7] += 2.0 ** -6
    values[::13] -= 2.0 ** -5
    for x in (values, values.reshape(64, 64) * 3.0, np.broadcast_to(values, (3, 4096))):
        stored = x.astype(dt.bfloat16)
        for op in ("sum", "mean"):
            exact = getattr(stored.astype(np.float64), op)(axis=-1)
            got = run(op, stored, axis=-1) if onednn_computes_bf16() else onednn_turns_down(op, stored, axis=-1)[0]
            assert got.dtype == dt.bfloat16
            np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2.0 ** -8)
