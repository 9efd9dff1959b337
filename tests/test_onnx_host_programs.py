"""Host steps of an imported model run as ``onnx.program`` nodes (``polyeng.onnx.host_programs``):
the same results with fewer nodes, placed after what they wait for, named in errors, saved and
converted like any node."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import polyeng
import polyeng.amp
import polyeng.graph
import polyeng.onnx

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx_cases import F32, I64, build, constant, i64, node  # noqa: E402


def _mask_model():
    """A padding mask from an int mask input And a causal mask from Range over the sequence (host
    steps that wait for nothing), and a reshape of a computed tensor to (batch * seq, -1) whose
    target comes from that tensor's shape (steps that wait for the tensor)."""
    nodes = [node("Mul", ["x", "x"], ["h"]), node("Shape", ["h"], ["shape"]),
             constant("i0", i64(0)), constant("i1", i64(1)), constant("ax0", i64(0)), constant("ax1", i64(1)),
             node("Gather", ["shape", "i0"], ["batch"]), node("Gather", ["shape", "i1"], ["seq"]),
             constant("rest", i64(-1)), node("Mul", ["batch", "seq"], ["rows"]),
             node("Concat", ["rows", "rest"], ["target"], axis=0),
             node("Reshape", ["h", "target"], ["split"]),
             node("Shape", ["mask"], ["mshape"]), node("Gather", ["mshape", "i1"], ["s"]),
             constant("zero", np.array(0, np.int64)), constant("one", np.array(1, np.int64)),
             node("Squeeze", ["s"], ["s0"]), node("Range", ["zero", "s0", "one"], ["positions"]),
             node("Unsqueeze", ["positions", "ax0"], ["row"]), node("Unsqueeze", ["positions", "ax1"], ["column"]),
             node("LessOrEqual", ["row", "column"], ["causal"]), node("Cast", ["mask"], ["padding"], to=9),
             node("Unsqueeze", ["padding", "ax1"], ["kept"]), node("And", ["causal", "kept"], ["allowed"]),
             node("Cast", ["allowed"], ["allowed_f"], to=1)]
    return build(nodes, [("x", F32, ["N", "S", 8]), ("mask", I64, ["N", "S"])],
                 [("split", F32), ("allowed_f", F32)])


@pytest.fixture(scope="module")
def loaded():
    model = _mask_model()
    return model, polyeng.onnx.load(model)


def _inputs(n=2, s=5):
    rng = np.random.default_rng(n * 10 + s)
    mask = np.ones((n, s), np.int64)
    mask[-1, s // 2:] = 0
    return {"x": rng.standard_normal((n, s, 8)).astype(np.float32), "mask": mask}


def test_host_steps_become_programs_and_match_onnxruntime(loaded):
    model, graph = loaded
    ops = collections.Counter(n.op for n in graph.nodes)
    assert ops["onnx.program"] == 2, ops                       # one waits for nothing, one for the mul
    assert not any(op.startswith("onnx.") and op != "onnx.program" for op in ops if op != "onnx.reshape"), ops
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, s in ((2, 5), (3, 4)):
        feed = _inputs(n, s)
        for got, want in zip(graph(**feed), session.run(None, feed)):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_program_runs_after_the_node_whose_shape_it_reads(loaded):
    _, graph = loaded
    order = [n.op for n in graph.nodes]
    programs = [i for i, n in enumerate(graph.nodes) if n.op == "onnx.program"]
    assert programs[0] == 0 and order.index("mul") < programs[1]


def test_a_shape_of_a_layer_norm_waits_for_its_input():
    """Shape of a layer norm's result is Shape of its input: the program reading it runs before the
    layer norm (which so stays in the run of nodes after it), with onnxruntime's results; Shape of
    an activation's result still waits for it (a convolution's result keeps one reader)."""
    nodes = [node("Mul", ["x", "x"], ["p"]), node("LayerNormalization", ["p", "g", "b"], ["n"], axis=-1),
             node("Relu", ["n"], ["h"]), node("Shape", ["n"], ["shape"]), node("Shape", ["h"], ["shape_h"]),
             constant("i0", i64(0)), constant("i1", i64(1)), constant("rest", i64(-1)),
             node("Gather", ["shape", "i0"], ["batch"]), node("Gather", ["shape", "i1"], ["seq"]),
             node("Mul", ["batch", "seq"], ["rows"]), node("Concat", ["rows", "rest"], ["target"], axis=0),
             node("Reshape", ["h", "target"], ["out"]),
             node("Gather", ["shape_h", "i0"], ["batch_h"]), node("Gather", ["shape_h", "i1"], ["seq_h"]),
             node("Mul", ["batch_h", "seq_h"], ["rows_h"]), node("Concat", ["rows_h", "rest"], ["target_h"], axis=0),
             node("Reshape", ["h", "target_h"], ["same"])]
    model = build(nodes, [("x", F32, ["N", "S", 8])], [("out", F32), ("same", F32)],
                  inits={"g": np.linspace(0.5, 1.5, 8).astype(np.float32), "b": np.zeros(8, np.float32)})
    graph = polyeng.onnx.load(model)
    order = [n.op for n in graph.nodes]
    program = order.index("onnx.program")
    assert order.index("mul") < program < order.index("layer_norm") < order.index("relu"), order
    shape_step = [s for s in graph.nodes[program].args["steps"] if s[1] == "onnx.shape"]
    assert [graph.nodes[program].args["values"][s[2]["x"]["slot"]].name for s in shape_step] == ["p"]
    second = [i for i, op in enumerate(order) if op == "onnx.program"][1]   # the one reading relu's shape
    assert order.index("relu") < second and "h" in [v.name for v in graph.nodes[second].args["values"]]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, s in ((2, 5), (3, 4)):
        x = np.random.default_rng(n).standard_normal((n, s, 8)).astype(np.float32)
        got, same = graph(x=x)
        want, want_same = session.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(same, want_same, rtol=1e-5, atol=1e-6)
        assert got.shape == (n * s, 8)


def test_print_lists_a_programs_steps(loaded):
    _, graph = loaded
    text = str(graph)
    assert "onnx.program" in text and "host steps (" in text and "range 1" in text


def test_saved_and_loaded_and_converted_programs_give_the_same_results(loaded, tmp_path):
    _, graph = loaded
    feed = _inputs()
    graph.save(tmp_path / "g.polyeng")
    again = polyeng.graph.load(tmp_path / "g.polyeng")
    for got, want in zip(again(**feed), graph(**feed)):
        np.testing.assert_array_equal(got, want)
    converted = polyeng.amp.to_mixed_precision(graph, "bfloat16", missing_op_mode="error")
    got_split, got_mask = converted(**feed)
    want_split, want_mask = graph(**feed)
    np.testing.assert_array_equal(got_mask, want_mask)
    np.testing.assert_allclose(got_split.astype(np.float32), want_split, rtol=1e-2, atol=1e-2)


def test_a_failing_step_names_its_onnx_node():
    nodes = [node("Shape", ["x"], ["shape"]), constant("i1", i64(1)), node("Gather", ["shape", "i1"], ["n"]),
             constant("zero", np.array(0, np.int64)), node("Squeeze", ["n"], ["n0"]),
             node("Sub", ["n0", "n0"], ["step"]), node("Range", ["zero", "n0", "step"], ["r"], name="the_range"),
             node("Cast", ["r"], ["y"], to=1)]
    graph = polyeng.onnx.load(build(nodes, [("x", F32, [2, "S"])], [("y", F32)]))
    assert any(n.op == "onnx.program" for n in graph.nodes)
    with pytest.raises(ValueError, match=r"the_range: Range: delta is 0"):
        graph(np.zeros((2, 3), np.float32))


def test_a_program_refuses_a_step_that_is_not_a_host_op():
    from polyeng.onnx.host_programs import program
    with pytest.raises(ValueError, match=r"step 'evil' runs 'relu'"):
        program([np.ones(3)], [["evil", "relu", {"x": {"slot": 0}}, 0]], [1])


def test_a_program_that_reads_only_shapes_is_kept_per_shape(loaded):
    """The program waiting for nothing reads the mask's values (not shape-keyed); the one reading
    the mul's shape is: its results for a shape are computed once and given again, read-only."""
    _, graph = loaded
    keyed = [n for n in graph.nodes if n.op == "onnx.program" and n.args["shape_keyed"] is not None]
    values_read = [n for n in graph.nodes if n.op == "onnx.program" and n.args["shape_keyed"] is None]
    assert len(keyed) == 1 and len(values_read) == 1
    from polyeng.onnx.host_programs import program
    node = keyed[0]
    constants = graph.constants
    for shape in ((2, 5, 8), (3, 4, 8), (2, 5, 8)):
        h = np.zeros(shape, np.float32)
        values = [constants[r.name] if r.name in constants else h for r in node.args["values"]]
        first = program(values, node.args["steps"], node.args["outputs"], node.args["shape_keyed"])
        again = program(values, node.args["steps"], node.args["outputs"], node.args["shape_keyed"])
        assert all(a is b for a, b in zip(first, again)) and not first[0].flags.writeable
        assert list(first[0]) == [shape[0] * shape[1], -1]
    for n, s in ((2, 5), (3, 4), (2, 5)):   # and the graph, alternating sizes
        feed = _inputs(n, s)
        assert graph(**feed)[0].shape == (n * s, 8)


@pytest.mark.parametrize("steps, outputs, message", [
    ([["s", "onnx.shape", {"x": {"slot": 3}}, 0]], [1], r"step 's' reads slot 3; slots 0 to 0"),
    ([["s", "onnx.shape", {"x": {"slot": 1}}, 0]], [1], r"step 's' reads slot 1"),
    ([["s", "onnx.shape", {"x": {"slot": 0}}, 0]], [2], r"output slot 2 is not one of the 2 slots"),
    ([["c", "onnx.concat", {"values": [{"slot": 0}, {"slot": 5}], "axis": 0}, 0]], [1], r"step 'c' reads slot 5"),
])
def test_a_program_from_a_file_with_bad_slots_is_a_value_error(steps, outputs, message):
    from polyeng.onnx.host_programs import program
    with pytest.raises(ValueError, match=message):
        program([np.ones(3)], steps, outputs)


def test_gather_indices_out_of_range_are_value_errors_naming_the_op():
    picks = np.array([[0, 5]], np.int64)
    graph = polyeng.onnx.load(build([node("GatherND", ["x", "picks"], ["y"], name="the_gather")],
                                    [("x", F32, [2, "N"])], [("y", F32)], inits={"picks": picks}))
    with pytest.raises(ValueError, match=r"GatherND: index 5 is out of range for a dim of 3"):
        graph(np.zeros((2, 3), np.float32))
    graph = polyeng.onnx.load(build([node("GatherElements", ["x", "i"], ["y"], axis=1)],
                                    [("x", F32, [2, 3]), ("i", I64, [2, "N"])], [("y", F32)]))
    with pytest.raises(ValueError, match=r"GatherElements: index -4 is out of range for a dim of 3"):
        graph(np.zeros((2, 3), np.float32), np.array([[0, -4], [1, 2]], np.int64))
    np.testing.assert_array_equal(graph(np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[0, -1], [1, 2]])),
                                  [[0, 2], [4, 5]])


def _two_masks_model():
    """BERT's mask shape: a padding mask from the mask input's values, made into two additive masks
    with two copies of the same constants (one per layer), plus the shape arithmetic of the
    scores' reshape, all in one program."""
    zero, big = np.array(0.0, np.float32), np.array(np.finfo(np.float32).min, np.float32)
    nodes = [node("Shape", ["mask"], ["mshape"]), constant("i1", i64(1)), node("Gather", ["mshape", "i1"], ["s"]),
             constant("ax1", i64(1)), node("Cast", ["mask"], ["keep"], to=9), node("Not", ["keep"], ["drop"]),
             node("Unsqueeze", ["drop", "ax1"], ["drop3"]),
             constant("zero_a", zero), constant("big_a", big), constant("zero_b", zero), constant("big_b", big),
             node("Where", ["drop3", "big_a", "zero_a"], ["mask_a"]),
             node("Where", ["drop3", "big_b", "zero_b"], ["mask_b"]),
             node("Add", ["x", "mask_a"], ["ya"]), node("Add", ["x", "mask_b"], ["yb"]),
             node("Mul", ["ya", "yb"], ["y"]), node("Cast", ["s"], ["s_f"], to=1)]
    return build(nodes, [("x", F32, ["N", "S", "S"]), ("mask", I64, ["N", "S"])], [("y", F32), ("s_f", F32)])


def test_a_program_reading_values_keeps_the_steps_that_read_only_shapes_and_constants():
    model = _two_masks_model()
    graph = polyeng.onnx.load(model)
    assert [n.op for n in graph.nodes].count("add") == 1   # and so was the add reading it
    wheres = [s for n in graph.nodes if n.op == "onnx.program" for s in n.args["steps"] if s[1] == "onnx.where"]
    assert len(wheres) == 1   # the second mask was the first's copy
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for n, s in ((2, 5), (2, 5), (3, 4), (2, 5), (3, 4)):   # kept steps per shape, the rest per call
        feed = {"x": rng.standard_normal((n, s, s)).astype(np.float32),
                "mask": (rng.random((n, s)) < 0.6).astype(np.int64)}
        for got, want in zip(graph(**feed), session.run(None, feed)):
            np.testing.assert_array_equal(got, want)
    from polyeng.onnx.host_programs import _compiled
    program = next(n for n in graph.nodes if n.op == "onnx.program")
    compiled = _compiled[id(program.args["steps"])]
    kept = [s[0] for s, static in zip(program.args["steps"], compiled.static) if static]
    ran = [s[0] for s, static in zip(program.args["steps"], compiled.static) if not static]
    assert any("gather" in k.lower() for k in kept) and any("where" in r.lower() for r in ran)
    assert not any("where" in k.lower() for k in kept)
    unmerged = polyeng.onnx.load(model, disable_fusions="common_subexpressions")
    assert len([s for n in unmerged.nodes if n.op == "onnx.program" for s in n.args["steps"]
                if s[1] == "onnx.where"]) == 2
    feed = {"x": np.ones((2, 5, 5), np.float32), "mask": np.ones((2, 5), np.int64)}
    for got, want in zip(unmerged(**feed), graph(**feed)):
        np.testing.assert_array_equal(got, want)


def test_a_program_with_bad_constant_slots_is_a_value_error():
    from polyeng.onnx.host_programs import program
    steps = [["s", "onnx.shape", {"x": {"slot": 0}}, 0]]
    with pytest.raises(ValueError, match=r"constant slot 4 is not one of its 1 values"):
        program([np.ones(3)], steps, [1], None, [4])
    with pytest.raises(ValueError, match=r"constants must be a list of value slots"):
        program([np.ones(3)], [["t", "onnx.shape", {"x": {"slot": 0}}, 0]], [1], None, 7)


def test_a_kept_step_never_holds_or_freezes_the_callers_array():
    """Small integer inputs are read by value: a step whose result is a view of such an input (or
    the input itself) runs on every call, so a caller reusing its buffer gets its new values, and
    the caller's array stays writeable."""
    nodes = [constant("ax0", i64(0)), node("Unsqueeze", ["idx", "ax0"], ["u"]), node("Squeeze", ["u", "ax0"], ["y"]),
             node("Cast", ["idx"], ["b"], to=9),
             constant("big", np.array(-1e4, np.float32)), constant("zero", np.array(0.0, np.float32)),
             node("Where", ["b", "zero", "big"], ["z"])]
    graph = polyeng.onnx.load(build(nodes, [("idx", I64, ["K"])], [("y", I64), ("z", F32)]))
    buf = np.array([1, 2, 3], np.int64)
    assert graph(buf)[0].tolist() == [1, 2, 3]
    buf[:] = [7, 0, 9]                      # the caller's next request, in the same buffer
    y, z = graph(buf)
    assert y.tolist() == [7, 0, 9] and z.tolist() == [0.0, -1e4, 0.0]
    assert graph(np.array([1, 2, 3], np.int64))[0].tolist() == [1, 2, 3]
    assert buf.flags.writeable


def test_gather_nd_keeps_the_checked_index_of_read_only_indices_per_data_shape():
    from polyeng.onnx import host_ops
    indices = np.array([[0, 2], [1, 0]], np.int64)
    indices.flags.writeable = False   # as a host program keeps shape arithmetic
    for data in (np.arange(6).reshape(2, 3), np.arange(6, 12).reshape(2, 3), np.arange(12).reshape(2, 3, 2)):
        want = np.stack([data[0, 2], data[1, 0]])
        np.testing.assert_array_equal(host_ops.gather_nd(data, indices), want)
    with pytest.raises(ValueError, match="out of range for a dim of 2"):   # checked again at each data shape
        host_ops.gather_nd(np.arange(4).reshape(2, 2), indices)
    fresh = np.array([[1, 1]], np.int64)   # writeable: checked on every call
    np.testing.assert_array_equal(host_ops.gather_nd(np.arange(6).reshape(2, 3), fresh), [4])


def _positions_and_mask_programs():
    """Program A, kept per shape: the sequence positions of ``x``. Program B: the causal
    comparison of A's positions (its steps that read only them and constants are kept: A gives
    the very same array again) and the And with the mask input (run on every call)."""
    a = [["shape", "onnx.shape", {"x": {"slot": 0}}, 0],
         ["seq", "onnx.gather", {"data": {"slot": 1}, "indices": np.array(1, np.int64)}, 0],
         ["positions", "onnx.range", {"start": np.array(0, np.int64), "limit": {"slot": 2},
                                      "delta": np.array(1, np.int64)}, 0]]
    b = [["row", "onnx.unsqueeze", {"x": {"slot": 0}, "axes": (0,)}, 0],
         ["column", "onnx.unsqueeze", {"x": {"slot": 0}, "axes": (1,)}, 0],
         ["causal", "onnx.compare", {"a": {"slot": 3}, "b": {"slot": 4}, "op": "less_equal"}, 0],
         ["allowed", "onnx.logical", {"values": [{"slot": 5}, {"slot": 1}], "op": "and"}, 0],
         ["kept", "onnx.logical", {"values": [{"slot": 2}, {"slot": 6}], "op": "and"}, 0]]
    return a, b


def test_a_value_another_program_keeps_counts_as_a_constant():
    from polyeng.onnx.host_programs import _compiled, program
    a, b = _positions_and_mask_programs()
    rng = np.random.default_rng(5)
    yes = np.array(True)   # the graph's constant
    for s in (6, 6, 4, 6, 4):
        x = np.zeros((2, s, 3), np.float32)
        (positions,) = program([x], a, [3], [0])
        mask = rng.random((1, s)) < 0.6
        (kept,) = program([positions, mask, yes], b, [7], None, [2])
        want = (np.arange(s)[None, :] <= np.arange(s)[:, None]) & mask
        np.testing.assert_array_equal(kept, want)
        assert kept.flags.writeable   # built from the mask: the caller's own
    compiled = _compiled[id(b)]
    assert compiled.shared == (0,)
    assert compiled.static == [True, True, True, False, False]
    assert len(compiled.memo) == 2   # one per sequence length: A gave the same positions again


def test_a_program_without_constants_keeps_what_it_computes_from_kept_values():
    from polyeng.onnx.host_programs import _compiled, program
    a, _ = _positions_and_mask_programs()
    b = [["row", "onnx.unsqueeze", {"x": {"slot": 0}, "axes": (0,)}, 0],   # no graph constant read
         ["column", "onnx.unsqueeze", {"x": {"slot": 0}, "axes": (1,)}, 0],
         ["causal", "onnx.compare", {"a": {"slot": 2}, "b": {"slot": 3}, "op": "less_equal"}, 0],
         ["allowed", "onnx.logical", {"values": [{"slot": 4}, {"slot": 1}], "op": "and"}, 0]]
    (positions,) = program([np.zeros((1, 4, 2), np.float32)], a, [3], [0])
    for _ in range(2):
        mask = np.array([[True, False, True, True]])
        (allowed,) = program([positions, mask], b, [5], None, [])
        np.testing.assert_array_equal(allowed, (np.arange(4)[None, :] <= np.arange(4)[:, None]) & mask)
    assert _compiled[id(b)].static == [True, True, True, False]


def test_a_value_like_a_kept_one_but_not_kept_is_read_on_every_call():
    """A value first given as another program's kept result and later as a fresh array (the same
    values, or new ones) is not taken for the kept one."""
    from polyeng.onnx.host_programs import program
    a, b = _positions_and_mask_programs()
    (positions,) = program([np.zeros((1, 5, 2), np.float32)], a, [3], [0])
    mask, yes = np.ones((1, 5), bool), np.array(True)
    program([positions, mask, yes], b, [7], None, [2])
    fresh = np.array([4, 3, 2, 1, 0], np.int64)
    (kept,) = program([fresh, mask, yes], b, [7], None, [2])
    np.testing.assert_array_equal(kept, fresh[None, :] <= fresh[:, None])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int64, np.int8, np.bool_])
def test_where_of_one_value_each_is_numpys_bit_for_bit(dtype):
    from polyeng.onnx import host_ops
    rng = np.random.default_rng(2)
    pairs = [(np.array([0], dtype), np.array([1], dtype))]
    if np.dtype(dtype).kind == "f":
        nan = np.array([np.nan], dtype).view(np.dtype(f"u{np.dtype(dtype).itemsize}")) | 1   # a NaN payload
        pairs += [(nan.view(dtype), np.array([-np.inf], dtype)), (np.array([-0.0], dtype), np.array([np.finfo(dtype).min], dtype))]
    row = rng.random((1, 1, 1, 16)) < 0.5
    conds = [rng.random((1, 1, 16, 16)) < 0.5, np.broadcast_to(row, (1, 1, 16, 16)), np.array(True),
             np.zeros((0, 3), bool), (rng.random((4, 6)) < 0.5)[:, ::2]]
    for then, else_ in pairs:
        for cond in conds:
            for t, e in ((then, else_), (then.reshape(()), else_.reshape(1, 1)[:, :1])):
                if max(t.ndim, e.ndim) > cond.ndim:
                    continue
                got, want = host_ops.where(t, e, cond), np.where(cond, t, e)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert got.tobytes() == want.tobytes()


def test_where_of_objects_or_swapped_bytes_is_numpys():
    from polyeng.onnx import host_ops
    cond = np.array([True, False])
    for then, else_ in ((np.array("a", object), np.array("b", object)), (np.array([1.5], ">f4"), np.array([2.5], ">f4"))):
        got, want = host_ops.where(then, else_, cond), np.where(cond, then, else_)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_with_one_bool_is_numpys(op):
    from polyeng.onnx import host_ops
    rng = np.random.default_rng(4)
    for scalar_shape, other_shape in (((), (1, 1, 8, 8)), ((1,), (3, 5)), ((1, 1), (2,)), ((), ()), ((1,), (0, 2))):
        for value in (True, False):
            s, other = np.full(scalar_shape, value), rng.random(other_shape) < 0.5
            for values in ([s, other], [other, s]):
                got, want = host_ops.logical(values, op), host_ops.LOGICAL[op](*values)
                assert got.shape == want.shape and got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
                assert not np.shares_memory(got, other)


def test_expand_broadcasts_copies_and_names_shapes_that_do_not_broadcast():
    from polyeng.onnx import host_ops
    x = np.arange(4.0).reshape(1, 4)
    same = host_ops.expand(x, np.array([1, 4]))
    assert not same.flags.writeable and np.shares_memory(same, x)   # a read-only view, as numpy's
    wide = host_ops.expand(x, np.array([3, 1, 1]))
    np.testing.assert_array_equal(wide, np.broadcast_to(x, (3, 1, 4)))
    assert wide.flags.writeable and wide.flags.c_contiguous and not np.shares_memory(wide, x)
    assert host_ops.expand(np.zeros((0, 1)), np.array([0, 5])).shape == (0, 5)
    with pytest.raises(ValueError, match=r"shapes \(1, 4\), \(3,\) do not broadcast together"):
        host_ops.expand(x, np.array([3]))
