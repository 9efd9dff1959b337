"""ONNX cases of GRU: directions, layouts, linear_before_reset 0 and 1, with and without B,
initial_h and sequence_lens, each output asked for or left out; and the forms polyeng refuses.
Built with ``onnx_cases``'s blocks; its SUPPORTED and UNSUPPORTED lists take them, and
test_onnx_gru.py checks the supported ones against onnxruntime too."""
from __future__ import annotations

import numpy as np

from onnx_cases import F32, Case, build, concrete, node, randn

HIDDEN, FEATURES = 3, 4


def gru_case(name, direction="forward", layout=0, bias=True, initial=False, outputs=("Y", "Y_h"),
             linear_before_reset=None, lengths=None, x_shape=None, node_name=None, **attrs):
    """GRU over x of (S, N, F) (layout 0) or (N, S, F) (layout 1), S and N named unless
    ``x_shape`` fixes them; ``outputs`` lists the outputs asked for ("" leaves one out);
    ``lengths``: a constant sequence_lens."""
    dirs = 2 if direction == "bidirectional" else 1
    inits = {"W": randn(dirs, 3 * HIDDEN, FEATURES, scale=0.5), "R": randn(dirs, 3 * HIDDEN, HIDDEN, scale=0.5)}
    if bias:
        inits["B"] = randn(dirs, 6 * HIDDEN, scale=0.5)
    if lengths is not None:
        inits["lengths"] = np.asarray(lengths, np.int32)
    if x_shape is None:
        x_shape = ["S", "N", FEATURES] if layout == 0 else ["N", "S", FEATURES]
    batch = x_shape[1 if layout == 0 else 0]
    state = [dirs, batch, HIDDEN] if layout == 0 else [batch, dirs, HIDDEN]
    inputs = [("x", F32, x_shape)] + ([("h0", F32, state)] if initial else [])
    node_inputs = ["x", "W", "R", "B" if bias else "", "lengths" if lengths is not None else "",
                   "h0" if initial else ""]
    while node_inputs[-1] == "":
        node_inputs.pop()
    if linear_before_reset is not None:
        attrs["linear_before_reset"] = linear_before_reset
    gru = node("GRU", node_inputs, list(outputs), name=node_name or f"{name}_node", hidden_size=HIDDEN,
               direction=direction, layout=layout, **attrs)
    model = build([gru], inputs, [(o, F32) for o in outputs if o], inits=inits)
    per_call = []
    sizes_per_call = ({"S": 3, "N": 2}, {"S": 5, "N": 1}) if any(isinstance(d, str) for d in x_shape) else ({},)
    for sizes in sizes_per_call:
        arrays = [randn(*concrete(x_shape, sizes))]
        if initial:
            arrays.append(randn(*concrete(state, sizes), scale=0.5))
        per_call.append(tuple(arrays))
    return Case(name, model, tuple(per_call))


def grus():
    out = []
    for lbr in (0, 1):
        tag = f"_lbr{lbr}"
        out += [
            gru_case(f"gru_forward_y_only{tag}", outputs=("Y",), linear_before_reset=lbr),
            gru_case(f"gru_forward_no_bias_both_outputs{tag}", bias=False, linear_before_reset=lbr),
            gru_case(f"gru_reverse_initial_h{tag}", direction="reverse", initial=True, linear_before_reset=lbr),
            gru_case(f"gru_bidirectional_initial_h{tag}", direction="bidirectional", initial=True,
                     linear_before_reset=lbr),
            gru_case(f"gru_layout1_forward_initial_h{tag}", layout=1, initial=True, linear_before_reset=lbr),
            gru_case(f"gru_layout1_bidirectional{tag}", layout=1, direction="bidirectional", linear_before_reset=lbr),
            gru_case(f"gru_layout1_reverse_yh_only{tag}", layout=1, direction="reverse", outputs=("", "Y_h"),
                     initial=True, linear_before_reset=lbr),
        ]
    out += [
        gru_case("gru_default_linear_before_reset", direction="bidirectional", outputs=("Y", "Y_h")),
        gru_case("gru_yh_only", outputs=("", "Y_h"), linear_before_reset=1),
        gru_case("gru_bidirectional_no_bias_y_only", direction="bidirectional", bias=False, outputs=("Y",)),
        gru_case("gru_explicit_default_activations", direction="bidirectional", linear_before_reset=1,
                 activations=["Sigmoid", "Tanh", "Sigmoid", "Tanh"]),
        gru_case("gru_full_sequence_lens", x_shape=[5, 2, FEATURES], lengths=[5, 5], initial=True,
                 linear_before_reset=1),
        gru_case("gru_layout1_full_sequence_lens", layout=1, x_shape=[2, 5, FEATURES], lengths=[5, 5]),
    ]
    return out


def grus_unsupported():
    """Each refused at load, naming its node."""
    return [
        gru_case("gru_clip", clip=1.0, node_name="gru_clipped"),
        gru_case("gru_relu_activations", activations=["Sigmoid", "Relu"], node_name="gru_relu"),
        gru_case("gru_activation_alpha", activations=["HardSigmoid", "Tanh"], activation_alpha=[0.2],
                 activation_beta=[0.5], node_name="gru_hard"),
        gru_case("gru_short_sequence_lens", x_shape=[5, 2, FEATURES], lengths=[5, 3], node_name="gru_ragged"),
        gru_case("gru_sequence_lens_on_a_named_length", lengths=[3, 3], x_shape=["S", 2, FEATURES],
                 node_name="gru_named_lengths"),
    ]


def grus_refused():
    return [Case(c.name, c.model, (), bad=(("GRU", c.model.graph.node[0].name),)) for c in grus_unsupported()]
