"""lstm: a multi-layer, optionally bidirectional LSTM over a sequence (torch.nn.LSTM without proj_size).

The geometry every engine's kernel reads (``RecurrentShape``) and the checks of ``x``, ``params``
and the states are ``_recurrent``'s, shared with gru.
"""
from __future__ import annotations

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _recommend
from . import _recurrent

GATES = 4  # gate order in the stacked weights: input, forget, cell (g), output


def lstm(x, params, h0=None, c0=None, *, batch_first=False, bidirectional=False):
    """Run an LSTM over ``x`` and return ``(y, (h_n, c_n))`` as ``torch.nn.LSTM`` does.

    ``x`` is (L, N, in), (N, L, in) with ``batch_first``, or unbatched (L, in). ``params``
    holds one ``(w_ih, w_hh, b_ih, b_hh)`` per layer and direction, layer-major with the
    forward direction before the reverse one: ``w_ih`` (4H, in) (layers after the first
    take in = H * directions), ``w_hh`` (4H, H), biases (4H,) or None; the gates are
    stacked in the order i, f, g, o. ``h0``/``c0`` are (layers * directions, N, H)
    ((layers * directions, H) when unbatched) and default to zeros.

    ``y`` is (L, N, directions * H) ((N, L, ...) with ``batch_first``); for the reverse
    direction, ``y[t]`` is its state after reading ``x[L-1] ... x[t]``. ``h_n``/``c_n``
    have ``h0``'s shape and hold each layer and direction's last state. An empty
    sequence (L = 0) gives an empty ``y`` and returns the initial states.
    """
    return run(SPEC, x=x, params=params, h0=h0, c0=c0, batch_first=batch_first, bidirectional=bidirectional)


def _validate(x, params, h0, c0, batch_first, bidirectional):
    return _recurrent.validate("lstm", GATES, x, params, {"h0": h0, "c0": c0}, batch_first, bidirectional)


def _prepare(args) -> Prepared:
    """y's shape, the input's dtype, and ``geometry``: the call's :class:`RecurrentShape`."""
    shape = _recurrent.geometry(args["x"].shape, args["params"], args["batch_first"], args["bidirectional"])
    return Prepared(shape.output_shape, args["x"].dtype, geometry=shape)


def _example(t, rng):
    hidden, inp = 16, 12
    params = [(t(4 * hidden, inp), t(4 * hidden, hidden), t(4 * hidden), t(4 * hidden)) for _ in range(2)]
    return (t(7, 3, inp), params), {"bidirectional": True}


def _zero_size(z):
    return (z(5, 0, 4), [(z(8, 4), z(8, 2), z(8), z(8))]), {}, [(5, 0, 2), [(1, 0, 2), (1, 0, 2)]]


def _warmup(t, rng):
    """One direction of one batch row: NUMBA's loop by tasks (the example, two directions, runs by lanes)."""
    (x, params), _ = _example(t, rng)
    return [((x[:, :1], params[:1]), {})]


_F32_BY_VENDOR = _recommend.at_least_by_vendor({"GenuineIntel": 1 << 16}, 1 << 17)
_BY_VENDOR = _recommend.at_least_by_vendor({"GenuineIntel": 1 << 16}, 1 << 21)


def _own_products(call) -> bool:
    """Whether NUMBA's loop makes this call's step products with ``_small_gemm``'s packed function
    (f32 data on a CPU with AVX2 and FMA and no AVX-512, parts of whole blocks of 16 gate columns)."""
    from ..backends.numba._loop_parts import bounds_for, own_products, parts_for
    from ..engine.threads import available_cores
    hidden = call.prepared.geometry.hidden_size
    return own_products(call.storage_dtype, bounds_for(hidden, parts_for(hidden, available_cores())), GATES)


def _onednn_from(call) -> bool:
    if call.storage_dtype != np.float32:
        return _BY_VENDOR(call)
    return _F32_BY_VENDOR(call) and not _own_products(call)


_onednn_from.__doc__ = (f"for f32 data {_F32_BY_VENDOR.__doc__}, but not where numba's loop makes its own "
                        f"products; for other data {_BY_VENDOR.__doc__}")


SPEC = OpSpec(
    name="lstm",
    function=lstm,
    validate=_validate,
    category=Category.ALLOW,
    prepare=_prepare,
    # NUMBA's loop; ONEDNN from 2**16 elements (input, weights and states) on an Intel Xeon with AMX
    # (2 cores), where it ran 0.53x NUMBA at 2**12.7, 0.78-1.17x at 2**14.7, 0.98x at 2**15.6,
    # 0.95-1.11x at 2**17, 1.25-1.46x at 2**16.6 (batch 1), 1.14-2.23x from 2**17 to 2**19
    # (OpenBLAS's small products, NUMBA's steps, run about 2x slower there). Elsewhere, f32 data
    # from 2**17 but never where NUMBA's loop makes its products with its own packed function
    # (``_own_products``). On an AMD EPYC with 2 cores, ONEDNN against NUMBA's loop with its own
    # products: 0.46-1.00x NUMBA's speed from 2**14.8 to 2**22 (2**22: 0.83x); with OpenBLAS's
    # (parts of other widths): 0.77x at 2**16.3, 0.90x at 2**16.6, 1.35x at 2**17.3, 1.21x at
    # 2**18.3, 1.29-1.53x at 2**19, 1.41x at 2**20, 1.23x at 2**22. Other data from 2**21 (measured
    # with OpenBLAS's products: 0.14x NUMBA's speed at 2**11, 0.73x at 2**16, 1.04x at 2**20, 1.18x at 2**21)
    recommend=_recommend.onednn_if(_onednn_from, _recommend.jit_from(0)),
    preference=_recommend.PREFERENCE,
    chunking="recurrent", example=_example, zero_size=_zero_size, tolerance=64, warmup=_warmup,
)
SPECS = [SPEC]
