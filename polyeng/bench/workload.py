"""The benchmark workload, defined once: one entry per case with its shape and arguments.

``cases(scale)`` builds the calls; ``scale < 1`` shrinks the leading (batch-like) dimension
so the same cases run quickly in tests. Each case also names its PyTorch equivalent (used by
``polyeng bench``), and ``moved_bytes`` says how many bytes a call reads and writes. The scripts
in ``benchmarks/`` of a source checkout measure this same workload.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Case:
    name: str      # e.g. "softmax axis=-1"
    op: str        # polyeng op name
    make: Callable  # (rng, dtype, scale) -> (args, kwargs)
    torch: Callable | None = None  # (torch, F, args, kwargs) with args as tensors -> a no-argument call
    moved: Callable | None = None  # (args, kwargs, result) -> bytes, where not every input byte is read


def _batch(n: int, scale: float) -> int:
    return max(1, int(round(n * scale)))


def _t(rng, dtype, *shape):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def _recurrent(gates: int):
    """An lstm (4 gates) or gru (3) case: one layer, seq 64, batch 32 (scaled), 256 -> 256."""
    def make(rng, dtype, scale):
        seq, batch, inp, hidden = 64, _batch(32, scale), 256, 256
        k = 1 / np.sqrt(hidden)
        w = lambda *s: (rng.uniform(-k, k, s)).astype(np.float32).astype(dtype)   # noqa: E731  torch's init range
        params = [(w(gates * hidden, inp), w(gates * hidden, hidden), w(gates * hidden), w(gates * hidden))]
        return (_t(rng, dtype, seq, batch, inp), params), {}
    return make


def _torch_recurrent(module_name: str):
    """torch.nn.LSTM or torch.nn.GRU holding the case's weights."""
    def build(torch, F, args, kwargs):
        x, params = args
        w_ih, w_hh = params[0][:2]
        module = getattr(torch.nn, module_name)(w_ih.shape[1], w_hh.shape[1], dtype=x.dtype)
        with torch.no_grad():
            for name, value in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), params[0]):
                getattr(module, name).copy_(value)

        def call():
            with torch.no_grad():
                return module(x)
        return call
    return build


def _conv(x_shape, w_shape, **kwargs):
    """A conv2d case of ResNet's or MobileNet's layers: the batch (first of ``x_shape``) scaled."""
    def make(r, d, s):
        x = _t(r, d, _batch(x_shape[0], s), *x_shape[1:])
        w = (_t(r, d, *w_shape) * (2.0 / np.prod(w_shape[1:])) ** 0.5).astype(d)
        return (x, w), kwargs
    return make


def _torch_conv(t, F, a, k):
    return lambda: F.conv2d(*a, **k)


def _torch_pool(name):
    return lambda t, F, a, k: lambda: getattr(F, name)(*a, **k)


def _torch_interpolate(mode):
    return lambda t, F, a, k: lambda: F.interpolate(a[0], mode=mode, **k)


CASES = [
    Case("concat", "concat", lambda r, d, s: (([_t(r, d, _batch(8, s), 64, 56, 56), _t(r, d, _batch(8, s), 64, 56, 56)],),
                                              {"axis": 1}),
         lambda t, F, a, k: lambda: t.cat(a[0], dim=k["axis"])),
    Case("avg_pool2d", "avg_pool2d", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 112, 112), 3),
                                                      {"stride": 2, "padding": 1}), _torch_pool("avg_pool2d")),
    Case("max_pool2d", "max_pool2d", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 112, 112), 3),
                                                      {"stride": 2, "padding": 1}), _torch_pool("max_pool2d")),
    Case("max_pool3d", "max_pool3d", lambda r, d, s: ((_t(r, d, _batch(4, s), 32, 16, 56, 56), 3),
                                                      {"stride": 2, "padding": 1}), _torch_pool("max_pool3d")),
    Case("conv2d 3x3 b1", "conv2d", _conv((1, 64, 56, 56), (64, 64, 3, 3), padding=1), _torch_conv),
    Case("conv2d 3x3 b8", "conv2d", _conv((8, 64, 56, 56), (64, 64, 3, 3), padding=1), _torch_conv),
    Case("conv2d 1x1 b1", "conv2d", _conv((1, 64, 56, 56), (256, 64, 1, 1)), _torch_conv),
    Case("conv2d 1x1 b8", "conv2d", _conv((8, 64, 56, 56), (256, 64, 1, 1)), _torch_conv),
    Case("conv2d depthwise b1", "conv2d", _conv((1, 96, 56, 56), (96, 1, 3, 3), padding=1, groups=96), _torch_conv),
    Case("conv2d depthwise b8", "conv2d", _conv((8, 96, 56, 56), (96, 1, 3, 3), padding=1, groups=96), _torch_conv),
    Case("layer_norm", "layer_norm", lambda r, d, s: ((_t(r, d, _batch(32, s), 512, 768), 768),
                                                      {"weight": _t(r, d, 768), "bias": _t(r, d, 768)}),
         lambda t, F, a, k: lambda: F.layer_norm(a[0], (a[1],), k["weight"], k["bias"])),
    Case("softmax axis=-1", "softmax", lambda r, d, s: ((_t(r, d, _batch(32, s), 12, 128, 128),), {"axis": -1}),
         lambda t, F, a, k: lambda: t.softmax(a[0], dim=k["axis"])),
    Case("softmax axis=1", "softmax", lambda r, d, s: ((_t(r, d, _batch(32, s), 12, 128, 128),), {"axis": 1}),
         lambda t, F, a, k: lambda: t.softmax(a[0], dim=k["axis"])),
    Case("upsample_bilinear2d", "upsample_bilinear2d",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0, "align_corners": False}),
         _torch_interpolate("bilinear")),
    Case("upsample_bilinear2d align_corners", "upsample_bilinear2d",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0, "align_corners": True}),
         _torch_interpolate("bilinear")),
    Case("upsample_nearest", "upsample_nearest",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0}), _torch_interpolate("nearest")),
    Case("permute_contiguous", "permute_contiguous",
         lambda r, d, s: ((_t(r, d, _batch(32, s), 128, 12, 64), (0, 2, 1, 3)), {}),
         lambda t, F, a, k: lambda: a[0].permute(*a[1]).contiguous()),
    Case("select", "select", lambda r, d, s: ((r.random((_batch(32, s), 12, 128, 128)) > 0.5,
                                              _t(r, d, _batch(32, s), 12, 128, 128), _t(r, d, 1, 1, 1, 128)), {}),
         lambda t, F, a, k: lambda: t.where(*a)),
    Case("lstm", "lstm", _recurrent(4), _torch_recurrent("LSTM")),
    Case("gru", "gru", _recurrent(3), _torch_recurrent("GRU")),
    Case("matmul", "matmul", lambda r, d, s: ((_t(r, d, _batch(32, s) * 128, 768), _t(r, d, 768, 768)), {}),
         lambda t, F, a, k: lambda: t.matmul(*a)),
    Case("add", "add", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56), _t(r, d, _batch(8, s), 64, 56, 56)), {}),
         lambda t, F, a, k: lambda: t.add(*a)),
    Case("mul by channel scale", "mul",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56), _t(r, d, 1, 64, 1, 1)), {}),
         lambda t, F, a, k: lambda: t.mul(*a)),
    Case("relu", "relu", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {}),
         lambda t, F, a, k: lambda: F.relu(a[0])),
    Case("sigmoid", "sigmoid", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {}),
         lambda t, F, a, k: lambda: t.sigmoid(a[0])),
    Case("exp", "exp", lambda r, d, s: ((_t(r, d, _batch(32, s), 512, 768),), {}),
         lambda t, F, a, k: lambda: t.exp(a[0])),
    Case("mean axis=-1", "mean", lambda r, d, s: ((_t(r, d, _batch(32, s), 512, 768),), {"axis": -1}),
         lambda t, F, a, k: lambda: t.mean(a[0], dim=k["axis"])),
    Case("embedding", "embedding",
         lambda r, d, s: ((r.integers(0, 30522, (_batch(32, s), 128)), _t(r, d, 30522, 768)), {}),
         lambda t, F, a, k: lambda: F.embedding(*a),
         # the ids and the rows they pick are read, not the whole table
         moved=lambda a, k, result: a[0].nbytes + 2 * result.nbytes),
]


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)


def moved_bytes(args, kwargs, result, case: Case | None = None) -> int:
    """Bytes a call reads (every input array, weights included, unless the case says otherwise)
    plus bytes it writes (every output)."""
    if case is not None and case.moved is not None:
        return case.moved(args, kwargs, result)
    return sum(a.nbytes for a in _arrays((args, kwargs))) + sum(a.nbytes for a in _arrays(result))


def cases(scale: float = 1.0, dtype=np.float32, seed: int = 0):
    """(Case, args, kwargs) for every case, inputs of ``dtype`` drawn from a fixed seed."""
    rng = np.random.default_rng(seed)
    for case in CASES:
        args, kwargs = case.make(rng, dtype, scale)
        yield case, args, kwargs
