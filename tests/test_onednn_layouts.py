"""What the ONEDNN engine turns down for every op, and which weights it takes as constant."""
import numpy as np
import pytest

import polyeng

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available,
                                reason="onednn is unavailable")


def reason(op, *args, **kwargs):
    with polyeng.compute_eng("onednn"):
        d = polyeng.explain(op, *args, **kwargs)
    return next(c.reason for c in d.candidates if c.engine == "onednn"), d.engine


def test_strides_of_part_elements_are_turned_down_and_run_elsewhere():
    x = np.zeros((6, 8), [("a", "<f4"), ("b", "u1")])["a"]   # strides (40, 5)
    x[...] = np.arange(48, dtype=np.float32).reshape(6, 8)
    why, engine = reason("sum", x, axis=0)
    assert "not whole 4-byte elements" in why and engine != "onednn"
    with polyeng.compute_eng("onednn"):
        np.testing.assert_array_equal(polyeng.sum(x, axis=0), np.asarray(x).sum(axis=0))


def test_more_than_twelve_dimensions_are_turned_down():
    x = np.ones((1,) * 13 + (3,), np.float32)
    why, engine = reason("relu", x)
    assert "at most 12" in why and engine != "onednn"


def test_only_weights_no_one_can_write_count_as_constant():
    from polyeng.backends.onednn._packed import constant
    w = np.ones((4, 4), np.float32)
    assert not constant(w)
    frozen = w.copy()
    frozen.flags.writeable = False
    assert constant(frozen) and constant(frozen.T) and constant(frozen[::2])
    assert not constant(np.broadcast_to(w[0], (4, 4)))                      # a read-only view of w
    assert not constant(np.lib.stride_tricks.as_strided(w, w.shape, w.strides, writeable=False))
    assert not constant(np.lib.stride_tricks.sliding_window_view(w, (2, 2)))
    assert constant(np.frombuffer(b"\0" * 64, np.float32))                   # immutable bytes
    assert not constant(np.frombuffer(bytearray(64), np.float32))


def test_a_weight_viewed_through_as_strided_is_read_on_every_call():
    rng = np.random.default_rng(0)
    a, w = rng.random((8, 16), dtype=np.float32), rng.random((16, 8), dtype=np.float32)
    view = np.lib.stride_tricks.as_strided(w, w.shape, w.strides, writeable=False)
    with polyeng.compute_eng("onednn", fallback=False):
        polyeng.matmul(a, view)
        w *= 2
        got = polyeng.matmul(a, view)
    np.testing.assert_allclose(got, a @ w, rtol=1e-5)


def test_a_transposed_constant_is_not_copied_and_kept_on_every_call():
    from polyeng.backends.onednn import _packed
    w = np.random.default_rng(1).random((256, 256), dtype=np.float32)
    w.flags.writeable = False
    a = np.ones((4, 256), np.float32)
    before = len(_packed._packed)
    with polyeng.compute_eng("onednn", fallback=False):
        for _ in range(20):
            polyeng.matmul(a, w.T)   # read row-wise through a copy: not a constant
    assert len(_packed._packed) - before <= 1
