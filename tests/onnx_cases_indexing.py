"""ONNX cases of Split (sizes as an input, equal parts, num_outputs from opset 18) on data and on
constants, and Equal on shape values (PyTorch's ``Where(Equal(shape, -1), 1, shape)`` idiom)."""
from __future__ import annotations

import numpy as np

from onnx_cases import F32, N23, case, concrete, constant, f, i64, node


def splits():
    x = ["N", 6, 4]
    out = [
        case("split_sizes_input", [node("Split", ["x", "s"], ["a", "b", "c"], axis=1)], [("x", F32, x)],
             [("a", F32), ("b", F32), ("c", F32)], [f()], [(concrete(x, s),) for s in N23],
             inits={"s": np.array([1, 2, 3], np.int64)}),
        case("split_equal_last_axis", [node("Split", ["x"], ["a", "b"], axis=-1)], [("x", F32, x)],
             [("a", F32), ("b", F32)], [f()], [(concrete(x, s),) for s in N23]),
        case("split_num_outputs_opset18", [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
             [("x", F32, ["N", 7, 2])], [("a", F32), ("b", F32), ("c", F32)], [f()],
             [((2, 7, 2),), ((3, 7, 2),)], opset=18),
        case("split_then_add", [node("Split", ["x", "s"], ["a", "b"], axis=1), node("Add", ["a", "b"], ["y"])],
             [("x", F32, x)], [("y", F32)], [f()], [(concrete(x, s),) for s in N23],
             inits={"s": np.array([3, 3], np.int64)}),
    ]
    # expand's target written as Where(Equal(shape, -1), 1, shape): folded at load time
    nodes = [node("Shape", ["x"], ["shape"]), constant("minus", i64(-1)), node("Equal", ["shape", "minus"], ["eq"]),
             constant("ones", np.ones(3, np.int64)), node("Where", ["eq", "ones", "shape"], ["target"]),
             node("Expand", ["b", "target"], ["y"])]
    out.append(case("equal_where_expand_target", nodes, [("x", F32, ["N", 3, 4]), ("b", F32, [1, 1, 4])],
                    [("y", F32)], [f(), f()], [((2, 3, 4), (1, 1, 4)), ((3, 3, 4), (1, 1, 4))]))
    return out



