"""The benchmark workload, defined once: one entry per case with its shape and arguments.

``cases(scale)`` builds the calls; ``scale < 1`` shrinks the leading (batch-like) dimension
so the same cases run quickly in tests.
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


def _batch(n: int, scale: float) -> int:
    return max(1, int(round(n * scale)))


def _t(rng, dtype, *shape):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def _lstm(rng, dtype, scale):
    seq, batch, inp, hidden = 64, _batch(32, scale), 256, 256
    k = 1 / np.sqrt(hidden)
    w = lambda *s: (rng.uniform(-k, k, s)).astype(np.float32).astype(dtype)   # noqa: E731  torch's init range
    params = [(w(4 * hidden, inp), w(4 * hidden, hidden), w(4 * hidden), w(4 * hidden))]
    return (_t(rng, dtype, seq, batch, inp), params), {}


CASES = [
    Case("concat", "concat", lambda r, d, s: (([_t(r, d, _batch(8, s), 64, 56, 56), _t(r, d, _batch(8, s), 64, 56, 56)],),
                                              {"axis": 1})),
    Case("avg_pool2d", "avg_pool2d", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 112, 112), 3),
                                                      {"stride": 2, "padding": 1})),
    Case("max_pool2d", "max_pool2d", lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 112, 112), 3),
                                                      {"stride": 2, "padding": 1})),
    Case("max_pool3d", "max_pool3d", lambda r, d, s: ((_t(r, d, _batch(4, s), 32, 16, 56, 56), 3),
                                                      {"stride": 2, "padding": 1})),
    Case("layer_norm", "layer_norm", lambda r, d, s: ((_t(r, d, _batch(32, s), 512, 768), 768),
                                                      {"weight": _t(r, d, 768), "bias": _t(r, d, 768)})),
    Case("softmax axis=-1", "softmax", lambda r, d, s: ((_t(r, d, _batch(32, s), 12, 128, 128),), {"axis": -1})),
    Case("softmax axis=1", "softmax", lambda r, d, s: ((_t(r, d, _batch(32, s), 12, 128, 128),), {"axis": 1})),
    Case("upsample_bilinear2d", "upsample_bilinear2d",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0, "align_corners": False})),
    Case("upsample_bilinear2d align_corners", "upsample_bilinear2d",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0, "align_corners": True})),
    Case("upsample_nearest", "upsample_nearest",
         lambda r, d, s: ((_t(r, d, _batch(8, s), 64, 56, 56),), {"scale_factor": 2.0})),
    Case("permute_contiguous", "permute_contiguous",
         lambda r, d, s: ((_t(r, d, _batch(32, s), 128, 12, 64), (0, 2, 1, 3)), {})),
    Case("select", "select", lambda r, d, s: ((r.random((_batch(32, s), 12, 128, 128)) > 0.5,
                                              _t(r, d, _batch(32, s), 12, 128, 128), _t(r, d, 1, 1, 1, 128)), {})),
    Case("lstm", "lstm", _lstm),
    Case("matmul", "matmul", lambda r, d, s: ((_t(r, d, _batch(32, s) * 128, 768), _t(r, d, 768, 768)), {})),
]


def cases(scale: float = 1.0, dtype=np.float32, seed: int = 0):
    """(Case, args, kwargs) for every case, inputs of ``dtype`` drawn from a fixed seed."""
    rng = np.random.default_rng(seed)
    for case in CASES:
        args, kwargs = case.make(rng, dtype, scale)
        yield case, args, kwargs
