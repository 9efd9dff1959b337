"""gru: a multi-layer, optionally bidirectional GRU over a sequence (torch.nn.GRU).

The geometry every engine's kernel reads (``RecurrentShape``) and the checks of ``x``, ``params``
and ``h0`` are ``_recurrent``'s, shared with lstm.
"""
from __future__ import annotations

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend
from . import _recurrent

GATES = 3  # gate order in the stacked weights: reset (r), update (z), new (n)


def gru(x, params, h0=None, *, batch_first=False, bidirectional=False, reset_after=True):
    """Run a GRU over ``x`` and return ``(y, h_n)`` as ``torch.nn.GRU`` does.

    ``x`` is (L, N, in), (N, L, in) with ``batch_first``, or unbatched (L, in). ``params``
    holds one ``(w_ih, w_hh, b_ih, b_hh)`` per layer and direction, layer-major with the
    forward direction before the reverse one: ``w_ih`` (3H, in) (layers after the first
    take in = H * directions), ``w_hh`` (3H, H), biases (3H,) or None; the gates are
    stacked in the order r, z, n. ``h0`` is (layers * directions, N, H) ((layers *
    directions, H) when unbatched) and defaults to zeros. Each step computes::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h = (1 - z) * n + z * h

    ``reset_after=False`` applies the reset gate before the recurrent product instead,
    ``n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)`` (ONNX's GRU with linear_before_reset=0;
    PyTorch's is the default, linear_before_reset=1).

    ``y`` is (L, N, directions * H) ((N, L, ...) with ``batch_first``); for the reverse
    direction, ``y[t]`` is its state after reading ``x[L-1] ... x[t]``. ``h_n`` has ``h0``'s
    shape and holds each layer and direction's last state. An empty sequence (L = 0) gives
    an empty ``y`` and returns the initial state.
    """
    return run(SPEC, x=x, params=params, h0=h0, batch_first=batch_first, bidirectional=bidirectional,
               reset_after=reset_after)


def _validate(x, params, h0, batch_first, bidirectional, reset_after):
    reset_after = check.flag(reset_after, "reset_after")
    args = _recurrent.validate("gru", GATES, x, params, {"h0": h0}, batch_first, bidirectional)
    return dict(args, reset_after=reset_after)


def _prepare(args) -> Prepared:
    """y's shape, the input's dtype, and ``geometry``: the call's :class:`RecurrentShape`."""
    shape = _recurrent.geometry(args["x"].shape, args["params"], args["batch_first"], args["bidirectional"])
    return Prepared(shape.output_shape, args["x"].dtype, geometry=shape)


def _example(t, rng):
    hidden, inp = 16, 12
    params = [(t(3 * hidden, inp), t(3 * hidden, hidden), t(3 * hidden), t(3 * hidden)) for _ in range(2)]
    return (t(7, 3, inp), params), {"bidirectional": True}


def _warmup(t, rng):
    """``reset_after=False`` (NUMBA's step-by-step path), and one direction of one batch row (its
    loop by tasks; the example, two directions, runs by lanes)."""
    (x, params), kwargs = _example(t, rng)
    return [((x, params), dict(kwargs, reset_after=False)), ((x[:, :1], params[:1]), {})]


def _zero_size(z):
    return (z(5, 0, 4), [(z(6, 4), z(6, 2), z(6), z(6))]), {}, [(5, 0, 2), (1, 0, 2)]


SPEC = OpSpec(
    name="gru",
    function=gru,
    validate=_validate,
    category=Category.ALLOW,
    prepare=_prepare,
    # NUMBA's fused step; ONEDNN from 2**16 elements (input, weights and states) on an Intel Xeon
    # with AMX (2 cores), with the batch in lanes of one thread (``backends/onednn/_recurrent_lanes``):
    # it ran 1.10-1.13x NUMBA at 2**12.3 (batch 1), 0.72-0.90x at 2**14.4, 0.77-0.80x at 2**15.4,
    # 1.11-1.52x at 2**16.3 (batch 1), 1.24-1.46x at 2**16.7, 1.83-1.97x at 2**19.8. On an AMD EPYC
    # oneDNN's GRU ran reference code at 0.51x, 1.02x and 0.73x NUMBA at 2**16, 2**20 and 2**21
    # outputs (before the lanes): NUMBA there at every size
    recommend=_recommend.onednn_if(_recommend.at_least_by_vendor({"GenuineIntel": 1 << 16}, None),
                                   _recommend.jit_from(0)),
    preference=_recommend.PREFERENCE,
    chunking="recurrent", example=_example, zero_size=_zero_size, tolerance=64, warmup=_warmup,
)
SPECS = [SPEC]
