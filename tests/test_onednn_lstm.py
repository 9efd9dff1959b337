"""lstm and gru on ONEDNN beyond the shared suite: ordinary f32 calls run on oneDNN (not turned
down), both GRU forms, the bf16 fp math mode (bf16 on a CPU with bf16 units, f32 elsewhere),
read-only weights reordered once, and an input of no features."""
import numpy as np
import pytest

import polyeng
from polyeng.backends.onednn import _recurrent
from support import bf16_fp_math_computes_bf16

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")

RNG = np.random.default_rng(3)


def make(kind, input_size, hidden, layers=1, dirs=1, bias=True):
    gates = 4 if kind == "lstm" else 3
    params = []
    for k in range(layers * dirs):
        layer_in = input_size if k < dirs else dirs * hidden
        params.append((RNG.uniform(-0.5, 0.5, (gates * hidden, layer_in)).astype(np.float32),
                       RNG.uniform(-0.5, 0.5, (gates * hidden, hidden)).astype(np.float32),
                       RNG.uniform(-0.5, 0.5, gates * hidden).astype(np.float32) if bias else None,
                       RNG.uniform(-0.5, 0.5, gates * hidden).astype(np.float32) if bias else None))
    return params


def on(engine, kind, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, kind)(*args, **kwargs)


CALLS = [("lstm", {}), ("gru", {"reset_after": True}), ("gru", {"reset_after": False})]


@pytest.mark.parametrize("kind,extra", CALLS)
@pytest.mark.parametrize("batch_first", [False, True])
def test_f32_runs_on_onednn(kind, extra, batch_first):
    params = make(kind, 6, 10, layers=2, dirs=2)
    x = RNG.standard_normal((3, 5, 6)).astype(np.float32)
    kwargs = dict(extra, bidirectional=True, batch_first=batch_first)
    with polyeng.compute_eng("onednn"):
        assert polyeng.explain(kind, x, params, **kwargs).engine == "onednn"
    expected, actual = on("basic", kind, x, params, **kwargs), on("onednn", kind, x, params, **kwargs)
    for e, a in zip(_flat(expected), _flat(actual)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)


def _flat(result):
    y, states = result
    return [y] + (list(states) if isinstance(states, tuple) else [states])


@pytest.mark.parametrize("kind,extra", CALLS)
def test_bf16_fp_math_mode(kind, extra):
    params = make(kind, 32, 48)
    x = RNG.standard_normal((12, 4, 32)).astype(np.float32)
    expected = on("basic", kind, x, params, **extra)
    with polyeng.fp_math_mode("bf16"), polyeng.compute_eng("onednn", fallback=False):
        decision = polyeng.explain(kind, x, params, **extra)
        actual = getattr(polyeng, kind)(x, params, **extra)
    assert decision.engine == "onednn"
    if not bf16_fp_math_computes_bf16():   # no bf16 units: the mode computes f32, strict's bits
        assert decision.compute_type == "f32"
        strict = on("onednn", kind, x, params, **extra)
        for e, s, a in zip(_flat(expected), _flat(strict), _flat(actual)):
            assert a.dtype == np.float32
            np.testing.assert_array_equal(a, s)
            np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)
        return
    assert decision.compute_type == "bf16"
    for e, a in zip(_flat(expected), _flat(actual)):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, e, rtol=0, atol=0.05)
    assert not np.array_equal(actual[0], expected[0])


@pytest.mark.parametrize("kind,extra", CALLS)
def test_read_only_weights_are_reordered_once(kind, extra):
    params = make(kind, 7, 9, layers=2, dirs=2)
    frozen = [tuple(None if a is None else a.copy() for a in entry) for entry in params]
    for entry in frozen:
        for a in entry:
            if a is not None:
                a.flags.writeable = False
    x = RNG.standard_normal((4, 3, 7)).astype(np.float32)
    expected = on("onednn", kind, x, params, bidirectional=True, **extra)
    first = on("onednn", kind, x, frozen, bidirectional=True, **extra)
    before = _recurrent.stats["reorders"]
    again = on("onednn", kind, x, frozen, bidirectional=True, **extra)
    assert _recurrent.stats["reorders"] == before
    for e, a, b in zip(_flat(expected), _flat(first), _flat(again)):
        np.testing.assert_array_equal(a, e)
        np.testing.assert_array_equal(b, e)


@pytest.mark.parametrize("kind,extra", CALLS)
def test_no_input_features_and_no_biases(kind, extra):
    gates = 4 if kind == "lstm" else 3
    params = [(np.zeros((gates * 5, 0), np.float32), RNG.uniform(-0.5, 0.5, (gates * 5, 5)).astype(np.float32),
               None, None)]
    x = np.zeros((3, 2, 0), np.float32)
    h0 = RNG.standard_normal((1, 2, 5)).astype(np.float32)
    states = (h0, h0 + 1) if kind == "lstm" else (h0,)
    expected, actual = on("basic", kind, x, params, *states, **extra), on("onednn", kind, x, params, *states, **extra)
    for e, a in zip(_flat(expected), _flat(actual)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)
