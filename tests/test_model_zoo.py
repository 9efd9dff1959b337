"""The reference models of polyeng.model_zoo against their PyTorch twins, in float32, on BASIC and NUMBA."""
from __future__ import annotations

import numpy as np
import pytest

import polyeng
from polyeng import model_zoo

torch = pytest.importorskip("torch")

ENGINES = ["basic", "numba"]


def _check(got, want, label):
    diff = float(np.max(np.abs(got - want)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{label}: max abs diff {diff:.3g}")


@pytest.fixture(scope="module")
def encoder():
    fn = model_zoo.encoder_layer(hidden=64, heads=4, ffn=128, seed=3)
    return fn, model_zoo.to_torch_encoder_layer(fn)


@pytest.fixture(scope="module")
def lstm_lm():
    fn = model_zoo.lstm_language_model(vocab=50, embed=16, hidden=32, seed=4)
    return fn, model_zoo.to_torch_lstm_lm(fn)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", [1, 2])
def test_encoder_layer_matches_torch(encoder, engine, batch):
    fn, module = encoder
    x = np.random.default_rng(batch).standard_normal((batch, 16, 64)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    with polyeng.compute_eng(engine):
        got = fn(x)
    assert got.dtype == np.float32 and got.shape == (batch, 16, 64)
    _check(got, want, f"encoder on {engine}")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch", [1, 2])
def test_lstm_language_model_matches_torch(lstm_lm, engine, batch):
    fn, module = lstm_lm
    ids = np.random.default_rng(batch).integers(0, 50, (8, batch))
    with torch.no_grad():
        want = module(torch.from_numpy(ids)).numpy()
    with polyeng.compute_eng(engine):
        got = fn(ids)
    assert got.dtype == np.float32 and got.shape == (8, batch, 50)
    _check(got, want, f"lstm language model on {engine}")


def test_weights_come_from_the_seed():
    a, b = model_zoo.encoder_layer(64, 4, 128, seed=0), model_zoo.encoder_layer(64, 4, 128, seed=0)
    c = model_zoo.encoder_layer(64, 4, 128, seed=1)
    assert all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert not np.array_equal(a.weights["linear1.weight"], c.weights["linear1.weight"])
    assert all(w.dtype == np.float32 for w in a.weights.values())
    lm = model_zoo.lstm_language_model(vocab=50, embed=16, hidden=32)
    assert all(w.dtype == np.float32 for w in lm.weights.values())


def test_encoder_layer_rejects_heads_that_do_not_divide_hidden():
    with pytest.raises(ValueError, match="heads=5"):
        model_zoo.encoder_layer(hidden=64, heads=5)
