"""One small, typical call per op: used by ``polyeng demo`` and the engine test suite."""
from __future__ import annotations

import numpy as np


def example_calls(rng: np.random.Generator | None = None, dtype=np.float32) -> dict:
    """op name -> (args, kwargs) for a small representative call with float inputs of ``dtype``."""
    rng = rng or np.random.default_rng(0)

    def t(*shape):
        return rng.standard_normal(shape).astype(dtype)

    hidden, inp = 16, 12
    lstm_params = [(t(4 * hidden, inp), t(4 * hidden, hidden), t(4 * hidden), t(4 * hidden)),
                   (t(4 * hidden, inp), t(4 * hidden, hidden), t(4 * hidden), t(4 * hidden))]
    return {
        "concat": (([t(2, 3, 5, 5), t(2, 4, 5, 5)],), {"axis": 1}),
        "avg_pool2d": ((t(2, 3, 11, 11), 3), {"stride": 2, "padding": 1}),
        "avg_pool3d": ((t(2, 3, 7, 9, 9), 3), {"stride": 2, "padding": 1}),
        "max_pool2d": ((t(2, 3, 11, 11), 3), {"stride": 2, "padding": 1}),
        "max_pool3d": ((t(2, 3, 7, 9, 9), 3), {"stride": 2, "padding": 1}),
        "lstm": ((t(7, 3, inp), lstm_params), {"bidirectional": True}),
        "layer_norm": ((t(4, 6, 32), 32), {"weight": t(32), "bias": t(32)}),
        "softmax": ((t(4, 5, 33),), {"axis": -1}),
        "log_softmax": ((t(4, 5, 33),), {"axis": 1}),
        "upsample_bilinear2d": ((t(2, 3, 7, 9),), {"scale_factor": 2.0, "align_corners": False}),
        "upsample_nearest": ((t(2, 3, 7, 9),), {"scale_factor": 2.0}),
        "permute_contiguous": ((t(2, 5, 3, 7), (0, 2, 1, 3)), {}),
        "select": ((rng.random((2, 3, 8, 8)) > 0.5, t(2, 3, 8, 8), t(1, 1, 1, 8)), {}),
        "matmul": ((t(4, 17, 24), t(24, 9)), {}),
        "linear": ((t(5, 24), t(9, 24), t(9)), {}),
        "gelu": ((t(6, 31),), {"approximate": "none"}),
        "cast": ((t(6, 31), "bfloat16"), {}),
        "add": ((t(2, 3, 8, 8), t(2, 3, 8, 8)), {}),
        "sub": ((t(2, 3, 8, 8), t(1, 3, 1, 1)), {}),
        "mul": ((t(2, 3, 8, 8), t(1, 3, 1, 1)), {}),
        "div": ((t(4, 33), 8.0), {}),
        "pow": ((np.abs(t(4, 33)), 1.5), {}),
        "relu": ((t(6, 31),), {}),
        "sigmoid": ((t(6, 31),), {}),
        "tanh": ((t(6, 31),), {}),
        "exp": ((t(6, 31),), {}),
        "sqrt": ((np.abs(t(6, 31)),), {}),
        "erf": ((t(6, 31),), {}),
        "mean": ((t(4, 5, 33),), {"axis": -1}),
        "reshape": ((t(4, 6, 8), (4, 2, -1)), {}),
        "embedding": ((rng.integers(0, 50, (3, 7)), t(50, 16)), {}),
    }
