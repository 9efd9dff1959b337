"""lstm on oneDNN's vanilla LSTM primitive, one primitive per layer (``_recurrent``).

oneDNN's gates are PyTorch's, in the same order (i, f, g, o); its one bias is b_ih + b_hh.
"""
from __future__ import annotations

from .._loader import limit
from ._recurrent import note, rule, run_layers


@limit(rule(lambda args: "lstm"))
def lstm(p, x, params, h0, c0, batch_first, bidirectional):
    y, (h_n, c_n) = run_layers("lstm", p, x, params, (h0, c0))
    return y, (h_n, c_n)


lstm.note = note
