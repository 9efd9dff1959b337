"""Small reference models written with polyeng ops only, for the benchmarks, the docs and the tests.

Each factory draws random float32 weights from a fixed seed and returns a plain function of the
model's input that closes over them, so ``polyeng.graph.trace`` turns the weights into graph
constants and the mixed precision pass sees a real model. The functions call polyeng ops and do
Python arithmetic on shapes only: no numpy call on an activation and no Python branch on a
value. The returned function carries ``.weights`` (name -> array, named as in the state dict of
the PyTorch module it mirrors) and ``.config`` (the factory's arguments); ``to_torch_*`` build that
module with the same weights, so every model has an independent reference.
"""
from __future__ import annotations

import math

import numpy as np

import polyeng


def _uniform(rng, shape, bound):
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def lstm_language_model(vocab=10000, embed=256, hidden=512, seed=0):
    """A word-level LSTM language model: embedding -> one-layer LSTM -> linear to the vocabulary.

    The returned ``fn(ids)`` takes int64 ids of shape (seq, batch) (time-major, as torch.nn.LSTM
    by default) and returns logits of shape (seq, batch, vocab). Weights follow PyTorch's
    initialisation: the embedding N(0, 1), the LSTM and the decoder uniform in +-1/sqrt(fan_in).
    """
    rng = np.random.default_rng(seed)
    lstm_bound = 1.0 / math.sqrt(hidden)
    weights = {
        "embedding.weight": rng.standard_normal((vocab, embed)).astype(np.float32),
        "lstm.weight_ih_l0": _uniform(rng, (4 * hidden, embed), lstm_bound),
        "lstm.weight_hh_l0": _uniform(rng, (4 * hidden, hidden), lstm_bound),
        "lstm.bias_ih_l0": _uniform(rng, (4 * hidden,), lstm_bound),
        "lstm.bias_hh_l0": _uniform(rng, (4 * hidden,), lstm_bound),
        "decoder.weight": _uniform(rng, (vocab, hidden), 1.0 / math.sqrt(hidden)),
        "decoder.bias": _uniform(rng, (vocab,), 1.0 / math.sqrt(hidden)),
    }
    table = weights["embedding.weight"]
    lstm_params = [(weights["lstm.weight_ih_l0"], weights["lstm.weight_hh_l0"],
                    weights["lstm.bias_ih_l0"], weights["lstm.bias_hh_l0"])]
    decoder_weight, decoder_bias = weights["decoder.weight"], weights["decoder.bias"]

    def lstm_lm(ids):
        x = polyeng.embedding(ids, table)
        y, _ = polyeng.lstm(x, lstm_params)
        return polyeng.linear(y, decoder_weight, decoder_bias)

    lstm_lm.weights = weights
    lstm_lm.config = {"vocab": vocab, "embed": embed, "hidden": hidden, "seed": seed}
    return lstm_lm


def encoder_layer(hidden=768, heads=12, ffn=3072, seed=0):
    """One post-norm transformer encoder layer (BERT-base sized by default).

    The returned ``fn(x)`` takes float32 ``x`` of shape (batch, seq, hidden) and computes what
    ``torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0, activation="gelu",
    batch_first=True, norm_first=False)`` does: self-attention from one fused q/k/v projection,
    residual add and layer norm, then a gelu feed-forward block, residual add and layer norm.
    Projections are uniform in +-1/sqrt(fan_in) as torch.nn.Linear's default; biases and the
    layer norms' affine parameters are small random values rather than PyTorch's zeros and
    ones, so that a mistake in using them shows in the output.
    """
    if hidden % heads:
        raise ValueError(f"hidden={hidden} is not a multiple of heads={heads}")
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    in_bound, ffn_bound = 1.0 / math.sqrt(hidden), 1.0 / math.sqrt(ffn)
    weights = {
        "self_attn.in_proj_weight": _uniform(rng, (3 * hidden, hidden), in_bound),
        "self_attn.in_proj_bias": _uniform(rng, (3 * hidden,), in_bound),
        "self_attn.out_proj.weight": _uniform(rng, (hidden, hidden), in_bound),
        "self_attn.out_proj.bias": _uniform(rng, (hidden,), in_bound),
        "linear1.weight": _uniform(rng, (ffn, hidden), in_bound),
        "linear1.bias": _uniform(rng, (ffn,), in_bound),
        "linear2.weight": _uniform(rng, (hidden, ffn), ffn_bound),
        "linear2.bias": _uniform(rng, (hidden,), ffn_bound),
        "norm1.weight": (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32),
        "norm1.bias": (0.1 * rng.standard_normal(hidden)).astype(np.float32),
        "norm2.weight": (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32),
        "norm2.bias": (0.1 * rng.standard_normal(hidden)).astype(np.float32),
    }
    w = dict(weights)
    scale = 1.0 / math.sqrt(head_dim)

    def encoder(x):
        seq = x.shape[1]
        qkv = polyeng.linear(x, w["self_attn.in_proj_weight"], w["self_attn.in_proj_bias"])
        # (batch, seq, 3, heads, head_dim) -> (3, batch, heads, seq, head_dim); -1 keeps the batch free
        qkv = polyeng.permute_contiguous(polyeng.reshape(qkv, (-1, seq, 3, heads, head_dim)), (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = polyeng.mul(polyeng.matmul(q, polyeng.permute_contiguous(k, (0, 1, 3, 2))), scale)
        context = polyeng.matmul(polyeng.softmax(scores, axis=-1), v)
        context = polyeng.reshape(polyeng.permute_contiguous(context, (0, 2, 1, 3)), (-1, seq, hidden))
        attn = polyeng.linear(context, w["self_attn.out_proj.weight"], w["self_attn.out_proj.bias"])
        x = polyeng.layer_norm(polyeng.add(x, attn), (hidden,), w["norm1.weight"], w["norm1.bias"], eps=1e-5)
        ff = polyeng.gelu(polyeng.linear(x, w["linear1.weight"], w["linear1.bias"]))
        ff = polyeng.linear(ff, w["linear2.weight"], w["linear2.bias"])
        return polyeng.layer_norm(polyeng.add(x, ff), (hidden,), w["norm2.weight"], w["norm2.bias"], eps=1e-5)

    encoder.weights = weights
    encoder.config = {"hidden": hidden, "heads": heads, "ffn": ffn, "seed": seed}
    return encoder


def _load(module, weights):
    import torch

    module.load_state_dict({name: torch.from_numpy(array.copy()) for name, array in weights.items()})
    return module.eval()


def to_torch_encoder_layer(fn):
    """The ``torch.nn.TransformerEncoderLayer`` (in eval mode) with ``fn``'s weights; ``fn`` comes
    from ``encoder_layer``."""
    import torch

    cfg = fn.config
    module = torch.nn.TransformerEncoderLayer(cfg["hidden"], cfg["heads"], cfg["ffn"], dropout=0.0,
                                              activation="gelu", batch_first=True, norm_first=False)
    return _load(module, fn.weights)


def to_torch_lstm_lm(fn):
    """A ``torch.nn.Module`` (in eval mode) computing ``fn``'s logits from (seq, batch) ids with
    ``fn``'s weights; ``fn`` comes from ``lstm_language_model``."""
    import torch

    class LstmLanguageModel(torch.nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, embed)
            self.lstm = torch.nn.LSTM(embed, hidden)
            self.decoder = torch.nn.Linear(hidden, vocab)

        def forward(self, ids):
            y, _ = self.lstm(self.embedding(ids))
            return self.decoder(y)

    cfg = fn.config
    return _load(LstmLanguageModel(cfg["vocab"], cfg["embed"], cfg["hidden"]), fn.weights)
