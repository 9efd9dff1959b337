"""ONNX cases of the comparisons, logic, IsNaN/IsInf, Max/Min, ReduceSum/ReduceMax/ReduceMin,
GatherElements and GatherND, on tensors polyeng computes and on shape values (the attention mask
idioms of transformers' exports: a causal mask from Range, padding masks from the mask input,
``Where(IsNaN(Softmax), 0, Softmax)``)."""
from __future__ import annotations

import numpy as np

from onnx_cases import BOOL, F32, I64, RNG, case, constant, f, flags, i64, ints, node, randn

COMPARISONS = ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")


def _ties(dtype=F32):
    """Small ints (as ``dtype``) so that comparisons meet equal values too."""
    return lambda shape: ints(3, *shape).astype(dtype)


def _specials(shape):
    x = randn(*shape)
    flat = x.reshape(-1)
    flat[::5] = np.nan
    flat[1::7] = np.inf
    flat[2::9] = -np.inf
    return x


def comparisons():
    out = []
    for op in COMPARISONS:
        k = op.lower()
        out.append(case(f"{k}_broadcast", [node(op, ["a", "b"], ["y"])], [("a", F32, ["N", 3, 4]), ("b", F32, [3, 1])],
                        [("y", BOOL)], [_ties(), _ties()], [((2, 3, 4), (3, 1)), ((3, 3, 4), (3, 1))]))
        out.append(case(f"{k}_int64_const", [node(op, ["a", "c"], ["y"])], [("a", I64, ["N", 5])], [("y", BOOL)],
                        [_ties(I64)], [((2, 5),), ((4, 5),)], inits={"c": np.array(1, np.int64)}))
    out.append(case("equal_nan_is_unequal", [node("Equal", ["a", "a"], ["y"])], [("a", F32, ["N", 6])], [("y", BOOL)],
                    [_specials], [((2, 6),), ((3, 6),)]))
    return out


def logic():
    out = []
    for op in ("And", "Or", "Xor"):
        out.append(case(f"{op.lower()}_broadcast", [node(op, ["a", "b"], ["y"])],
                        [("a", BOOL, ["N", 4]), ("b", BOOL, [4])], [("y", BOOL)], [flags, flags],
                        [((2, 4), (4,)), ((3, 4), (4,))]))
    out.append(case("not", [node("Not", ["a"], ["y"])], [("a", BOOL, ["N", 3])], [("y", BOOL)], [flags],
                    [((2, 3),), ((5, 3),)]))
    out.append(case("isnan", [node("IsNaN", ["x"], ["y"])], [("x", F32, ["N", 7])], [("y", BOOL)], [_specials],
                    [((2, 7),), ((3, 7),)]))
    out.append(case("isinf", [node("IsInf", ["x"], ["y"])], [("x", F32, ["N", 7])], [("y", BOOL)], [_specials],
                    [((2, 7),), ((3, 7),)]))
    # torch's SDPA export: a fully masked row's softmax is NaN, and is replaced by zeros
    nodes = [node("Softmax", ["x"], ["p"], axis=-1), node("IsNaN", ["p"], ["nan"]),
             constant("zero", np.float32(0.0)), node("Where", ["nan", "zero", "p"], ["y"])]

    def masked_scores(shape):
        x = randn(*shape)
        x[0, 1] = -np.inf
        return x
    out.append(case("where_isnan_softmax", nodes, [("x", F32, ["N", 3, 5])], [("y", F32)], [masked_scores],
                    [((2, 3, 5),), ((3, 3, 5),)]))
    out.append(_causal_and_padding_mask())
    return out


def _causal_and_padding_mask():
    """transformers' mask: a causal LessOrEqual of two Ranges over the sequence, And the padding
    mask (bool) of the input, then Where on the scores."""
    nodes = [node("Shape", ["scores"], ["shape"]), constant("i2", i64(2)), node("Gather", ["shape", "i2"], ["seq"]),
             constant("zero", np.array(0, np.int64)), constant("one", np.array(1, np.int64)),
             node("Range", ["zero", "seq", "one"], ["positions"]),
             constant("ax0", i64(0)), constant("ax1", i64(1)),
             node("Unsqueeze", ["positions", "ax0"], ["row"]), node("Unsqueeze", ["positions", "ax1"], ["column"]),
             node("LessOrEqual", ["row", "column"], ["causal"]),
             node("Cast", ["mask"], ["padding"], to=9), node("Unsqueeze", ["padding", "ax1"], ["padding_rows"]),
             node("And", ["causal", "padding_rows"], ["allowed"]),
             constant("minus", np.float32(-1e4)), node("Where", ["allowed", "scores", "minus"], ["y"])]

    def padding(shape):
        mask = np.ones(shape, np.int64)
        mask[-1, shape[1] // 2:] = 0
        return mask
    return case("causal_and_padding_mask", nodes, [("scores", F32, ["N", "S", "S"]), ("mask", I64, ["N", "S"])],
                [("y", F32)], [f(), padding], [((2, 4, 4), (2, 4)), ((3, 6, 6), (3, 6))])


def extrema_and_reductions():
    out = []
    for op in ("Max", "Min"):
        k = op.lower()
        out.append(case(f"{k}_three_broadcast", [node(op, ["a", "b", "c"], ["y"])],
                        [("a", F32, ["N", 3, 4]), ("b", F32, [3, 1]), ("c", F32, [4])], [("y", F32)],
                        [_specials, f(), f()], [((2, 3, 4), (3, 1), (4,)), ((3, 3, 4), (3, 1), (4,))]))
        out.append(case(f"{k}_one_input", [node(op, ["a"], ["y"])], [("a", F32, ["N", 3])], [("y", F32)], [f()],
                        [((2, 3),), ((3, 3),)]))
        # on shape values, as the dynamo exports take the larger of two dims
        nodes = [node("Shape", ["a"], ["sa"]), node("Shape", ["b"], ["sb"]), node(op, ["sa", "sb"], ["m"]),
                 node("Expand", ["c", "m"], ["y"])]
        out.append(case(f"{k}_of_shapes", nodes, [("a", F32, ["N", 1, 4]), ("b", F32, [1, 3, 1]), ("c", F32, [1, 1, 1])],
                        [("y", F32)], [f(), f(), f()], [((2, 1, 4), (1, 3, 1), (1, 1, 1)), ((1, 1, 4), (1, 3, 1), (1, 1, 1))]))
    axes = np.array([1, -1], np.int64)
    out.append(case("reducesum_axes_input", [node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                    [("x", F32, ["N", 3, 4])], [("y", F32)], [f()], [((2, 3, 4),), ((3, 3, 4),)], inits={"axes": axes}))
    out.append(case("reducesum_all_keepdims", [node("ReduceSum", ["x"], ["y"])], [("x", F32, ["N", 3])], [("y", F32)],
                    [f()], [((2, 3),), ((3, 3),)]))
    out.append(case("reducesum_noop_empty_axes", [node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)],
                    [("x", F32, ["N", 3])], [("y", F32)], [f()], [((2, 3),), ((3, 3),)]))
    out.append(case("reducesum_int64_host", [node("Shape", ["x"], ["s"]), node("ReduceSum", ["s"], ["n"], keepdims=0),
                                             node("Reshape", ["x", "flat"], ["y"])],
                    [("x", F32, ["N", 3])], [("y", F32)], [f()], [((2, 3),), ((3, 3),)], inits={"flat": i64(-1)}))
    for op in ("ReduceMax", "ReduceMin"):
        k = op.lower()
        out.append(case(f"{k}_axes_attribute", [node(op, ["x"], ["y"], axes=[1], keepdims=1)],
                        [("x", F32, ["N", 5, 2])], [("y", F32)], [_specials], [((2, 5, 2),), ((3, 5, 2),)]))
        out.append(case(f"{k}_axes_input_opset18", [node(op, ["x", "axes"], ["y"], keepdims=0)],
                        [("x", F32, ["N", 5, 2])], [("y", F32)], [f()], [((2, 5, 2),), ((3, 5, 2),)],
                        inits={"axes": np.array([0, 2], np.int64)}, opset=18))
    return out


def gathers_by_index():
    out = []
    positions = RNG.integers(-4, 4, (1, 6)).astype(np.int64)
    out.append(case("gatherelements_buffer", [node("GatherElements", ["buffer", "positions"], ["y"], axis=1)],
                    [("buffer", F32, ["N", 4])], [("y", F32)], [f()], [((1, 4),), ((1, 4),)],
                    inits={"positions": positions}))
    out.append(case("gatherelements_data_indices", [node("GatherElements", ["x", "i"], ["y"], axis=0)],
                    [("x", F32, [3, 4]), ("i", I64, ["N", 4])], [("y", F32)], [f(), lambda s: ints(3, *s)],
                    [((3, 4), (2, 4)), ((3, 4), (5, 4))]))
    picks = np.array([[0, 1], [1, 0], [-1, 2]], np.int64)
    out.append(case("gathernd_pairs", [node("GatherND", ["x", "picks"], ["y"])], [("x", F32, [2, 3, "N"])],
                    [("y", F32)], [f()], [((2, 3, 2),), ((2, 3, 5),)], inits={"picks": picks}))
    out.append(case("gathernd_batch_dims", [node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
                    [("x", F32, [2, 4, 3]), ("i", I64, [2, "N", 1])], [("y", F32)], [f(), lambda s: ints(4, *s)],
                    [((2, 4, 3), (2, 1, 1)), ((2, 4, 3), (2, 5, 1))]))
    return out


def logic_cases():
    return comparisons() + logic() + extrema_and_reductions() + gathers_by_index()
