"""ONNX cases of Conv (1-D and 2-D: strides, dilations, groups, depthwise, asymmetric pads, every
auto_pad), BatchNormalization, and a BatchNormalization folded into the Conv before it. Built with
``onnx_cases``'s blocks; its SUPPORTED list takes them."""
from __future__ import annotations

import onnx_cases as oc
from onnx_cases import F32, N23, case, concrete, f, node, pos, randn


def _conv(name, x_shape, w_shape, bias=True, **attrs):
    inits = {"w": randn(*w_shape, scale=0.5)}
    inputs = ["x", "w"]
    if bias:
        inits["b"] = randn(w_shape[0])
        inputs.append("b")
    return case(name, [node("Conv", inputs, ["y"], name=f"{name}_node", **attrs)], [("x", F32, x_shape)],
                [("y", F32)], [f()], [(concrete(x_shape, s),) for s in N23], inits=inits, rtol=1e-5, atol=1e-5)


def convolutions():
    x = ["N", 4, 9, 11]
    out = [
        _conv("conv_3x3", x, (6, 4, 3, 3)),
        _conv("conv_no_bias", x, (6, 4, 3, 3), bias=False, pads=[1, 1, 1, 1]),
        _conv("conv_strides_dilations", x, (6, 4, 3, 2), strides=[2, 1], dilations=[1, 2], pads=[1, 0, 1, 0]),
        _conv("conv_asymmetric_pads", x, (6, 4, 3, 3), pads=[0, 1, 2, 0], strides=[2, 2]),
        _conv("conv_grouped", x, (6, 2, 3, 3), group=2, pads=[1, 1, 1, 1]),
        _conv("conv_depthwise", x, (8, 1, 3, 3), group=4, pads=[1, 1, 1, 1], strides=[2, 2]),
        _conv("conv_pointwise", x, (8, 4, 1, 1)),
        _conv("conv_kernel_shape_given", x, (6, 4, 3, 3), kernel_shape=[3, 3]),
        _conv("conv_1d", ["N", 4, 13], (6, 4, 3), pads=[1, 2], strides=[2]),
        _conv("conv_1d_depthwise", ["N", 4, 13], (4, 1, 5), group=4, auto_pad="SAME_UPPER"),
    ]
    for auto_pad in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        out.append(_conv(f"conv_auto_pad_{auto_pad.lower()}", ["N", 4, 8, 9], (6, 4, 4, 3), auto_pad=auto_pad,
                         strides=[2, 2]))
    bn_inits = {"scale": oc.uniform(0.5, 1.5, 6), "bias": randn(6), "mean": randn(6), "var": oc.uniform(0.5, 2.0, 6)}
    out.append(case("batch_norm_4d", [node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"],
                                           epsilon=1e-3)],
                    [("x", F32, ["N", 6, 5, 7])], [("y", F32)], [f()], [((2, 6, 5, 7),), ((3, 6, 5, 7),)],
                    inits=bn_inits))
    out.append(case("batch_norm_runtime_statistics",
                    [node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])],
                    [("x", F32, ["N", 6, 4]), ("mean", F32, [6]), ("var", F32, [6])], [("y", F32)],
                    [f(), f(), pos()], [((2, 6, 4), (6,), (6,)), ((3, 6, 4), (6,), (6,))],
                    inits={k: v for k, v in bn_inits.items() if k in ("scale", "bias")}))
    conv_bn = [node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
               node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn1", epsilon=1e-5)]
    out.append(case("conv_batch_norm_folded", conv_bn, [("x", F32, x)], [("y", F32)], [f()],
                    [(concrete(x, s),) for s in N23],
                    inits={"w": randn(6, 4, 3, 3, scale=0.5), "b": randn(6), **bn_inits}, rtol=1e-5, atol=1e-5))
    return out


FOLDED = "conv_batch_norm_folded"


def onnxruntime_only():
    """Forms ONNX's reference evaluator gets wrong, checked against onnxruntime instead:
    BatchNormalization-9 (opsets 9 to 13; off by 0.1 on these values, where onnxruntime and the
    formula agree) and MaxPool with auto_pad SAME_LOWER (it makes 3 rows of 7 where the spec's
    ceil(7 / 2) is 4, as onnx's shape inference and onnxruntime say)."""
    inits = {"scale": oc.uniform(0.5, 1.5, 6), "bias": randn(6), "mean": randn(6), "var": oc.uniform(0.5, 2.0, 6)}
    return [
        case("batch_norm_opset13", [node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])],
             [("x", F32, ["N", 6, 3])], [("y", F32)], [f()], [((2, 6, 3),), ((3, 6, 3),)], inits=inits, opset=13),
        case("maxpool_same_lower", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2],
                                         auto_pad="SAME_LOWER")],
             [("x", F32, [2, 2, 7, 8])], [("y", F32)], [f()], [((2, 2, 7, 8),)]),
    ]


def folded_model():
    return next(c for c in convolutions() if c.name == FOLDED)

