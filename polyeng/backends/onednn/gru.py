"""gru on oneDNN's GRU primitives, one primitive per layer (``_recurrent``).

``reset_after=True`` (PyTorch's, ONNX's linear_before_reset=1) is oneDNN's linear-before-reset
GRU: ``o = tanh(W_o x + b_o + r * (U_o h + b_u'))``, its fourth bias row b_u' being b_hn.
``reset_after=False`` is oneDNN's vanilla GRU: ``o = tanh(W_o x + U_o (r * h) + b_o)``, both
biases of n outside the product as ONNX's linear_before_reset=0 has them, so b_o = b_in + b_hn.
oneDNN's gates are u (PyTorch's z), r, o (n); the weights and biases are put in that order.
"""
from __future__ import annotations

from .._loader import limit
from ._recurrent import note, rule, run_layers


def _kind(args) -> str:
    return "lbr_gru" if args["reset_after"] else "gru"


@limit(rule(_kind))
def gru(p, x, params, h0, batch_first, bidirectional, reset_after):
    y, (h_n,) = run_layers(_kind({"reset_after": reset_after}), p, x, params, (h0,))
    return y, h_n


gru.note = note
