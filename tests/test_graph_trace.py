"""polyeng.graph.trace (SPEC §6): what a traced function's op calls and numpy code become, what
cannot be traced, and how closed-over arrays become the graph's constants."""
import numpy as np
import pytest

import polyeng
from polyeng import model_zoo
from polyeng.graph import Graph, trace
from support import assert_same_tree, lstm_params

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3)).astype(np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def ops_of(graph):
    return [n.op for n in graph.nodes]




def test_op_calls_are_recorded_with_their_inputs_attributes_and_types():
    bias = np.ones(4, np.float32)

    def fn(x):
        return polyeng.softmax(polyeng.linear(x, W, bias), axis=-1)
    graph = trace(fn, X)
    assert isinstance(graph, Graph)
    assert ops_of(graph) == ["linear", "softmax"]
    linear, softmax = graph.nodes
    assert linear.inputs == ["x", "W", "bias"]
    assert softmax.inputs == linear.outputs and softmax.attrs == {"axis": -1}
    assert (softmax.dtype, softmax.shape) == (np.float32, (2, 4))
    assert [(v.name, v.dtype, v.shape) for v in graph.inputs] == [("x", np.float32, (2, 3))]
    assert [v.name for v in graph.outputs] == softmax.outputs
    assert_same_tree(graph(X), fn(X))


@pytest.mark.parametrize("expr, ops", [
    (lambda x: x + 1.5, ["add"]), (lambda x: 2 - x, ["sub"]), (lambda x: x * x, ["mul"]),
    (lambda x: x / 3, ["div"]), (lambda x: 1 / x, ["div"]), (lambda x: x ** 2, ["pow"]),
    (lambda x: x @ x.T, ["np.transpose", "matmul"]), (lambda x: x @ W.T, ["matmul"]),
    (lambda x: -x, ["np.negative"]), (lambda x: +x, []),
    (lambda x: np.exp(x), ["exp"]), (lambda x: np.sqrt(x * x), ["mul", "sqrt"]), (lambda x: np.tanh(x), ["tanh"]),
    (lambda x: np.add(x, x), ["add"]), (lambda x: np.multiply(2, x), ["mul"]), (lambda x: np.power(x, 3), ["pow"]),
    (lambda x: np.subtract(x, 1), ["sub"]), (lambda x: np.divide(x, 2), ["div"]), (lambda x: np.negative(x), ["np.negative"]),
    (lambda x: np.matmul(x, W.T), ["matmul"]),
    (lambda x: np.concatenate([x, x], axis=1), ["concat"]), (lambda x: np.concatenate((x, W), axis=0), ["concat"]),
    (lambda x: np.mean(x, axis=1), ["mean"]), (lambda x: np.mean(x, axis=0, keepdims=True), ["mean"]),
    (lambda x: np.where(X > 0, x, 0 * x), ["mul", "select"]), (lambda x: np.reshape(x, (3, 2)), ["reshape"]),
    (lambda x: np.transpose(x), ["np.transpose"]), (lambda x: x.reshape(-1), ["reshape"]),
    (lambda x: x.reshape(3, 2), ["reshape"]), (lambda x: x.T, ["np.transpose"]), (lambda x: x.transpose(1, 0), ["np.transpose"]),
    (lambda x: x.transpose(), ["np.transpose"]),
    (lambda x: x.astype(np.float16), ["cast"]), (lambda x: x.astype("bfloat16"), ["cast"]),
    (lambda x: x.astype(np.int32), ["np.astype"]), (lambda x: x[0], ["np.getitem"]), (lambda x: x[:, 1:3], ["np.getitem"]),
    (lambda x: x[None, ..., ::-1], ["np.getitem"]), (lambda x: x[np.array([1, 0, 1])], ["np.getitem"]),
    (lambda x: x[:, [2, 0]], ["np.getitem"]), (lambda x: x[-1, -2], ["np.getitem"]),
    (lambda x: x[: x.shape[0] - 1], ["np.getitem"]),
])
def test_numpy_code_on_traced_values_is_recorded(expr, ops):
    graph = trace(expr, X)
    assert ops_of(graph) == ops
    assert_same_tree(graph(X), expr(X))
    other = RNG.standard_normal(X.shape).astype(np.float32)
    assert_same_tree(graph(other), expr(other))   # computed from the input, not frozen


def test_astype_to_float_is_a_cast_and_to_int_a_numpy_node():
    graph = trace(lambda x: (x.astype(np.float64), x.astype(np.int64), x.astype(np.bool_)), X)
    assert ops_of(graph) == ["cast", "np.astype", "np.astype"]
    assert [v.dtype for v in graph.outputs] == [np.float64, np.int64, np.bool_]


def test_index_arrays_are_constants_and_keys_are_attributes():
    idx = np.array([2, 0])
    graph = trace(lambda x: x[..., idx], X)
    (node,) = graph.nodes
    assert "idx" in graph.constants and node.inputs == ["x", "idx"]
    graph = trace(lambda x: x[None, 1:, 0], X)
    assert graph.nodes[0].attrs["key"] == (None, slice(1, None, None), 0)


@pytest.mark.parametrize("expr, name", [
    (lambda x: np.sum(x), "numpy.sum"), (lambda x: np.maximum(x, 0), "numpy.maximum"),
    (lambda x: np.asarray(x), "numpy.asarray"), (lambda x: np.array(x) + 1, "numpy.asarray"),
    (lambda x: x.sum(), "numpy.ndarray.sum"), (lambda x: x.max(axis=0), "numpy.ndarray.max"),
    (lambda x: float(x[0, 0]), "float()"), (lambda x: bool(x[0, 0]), "bool()"), (lambda x: int(x[0, 0]), "int()"),
    (lambda x: x.__setitem__(0, 1.0), "assignment"), (lambda x: np.abs(x), "numpy.absolute"),
    (lambda x: np.exp(x, out=np.empty_like(X)), "numpy.exp with out="), (lambda x: np.add.reduce(x), "numpy.add.reduce"),
    (lambda x: np.where(x), "numpy.where with one argument"), (lambda x: np.concatenate([x], axis=None, dtype="f8"), "dtype"),
    (lambda x: X[: x[0, 0]], "use as an index"),
])
def test_what_cannot_be_recorded_is_a_type_error_naming_it(expr, name):
    with pytest.raises(TypeError) as info:
        trace(expr, X)
    assert name in str(info.value)


def test_assignment_into_a_traced_value_is_refused():
    def fn(x):
        y = x * 2
        y[0] = 1.0
        return y
    with pytest.raises(TypeError, match="assignment into traced value"):
        trace(fn, X)


def test_closed_over_arrays_are_constants_named_after_their_variable():
    weight, bias = W.copy(), np.zeros(4, np.float32)
    params = {"scale": np.full(4, 2.0, np.float32)}

    def fn(x):
        return polyeng.mul(polyeng.linear(x, weight, bias), params["scale"])
    graph = trace(fn, X)
    assert set(graph.constants) == {"weight", "bias", "params.scale"}
    np.testing.assert_array_equal(graph.constants["weight"], weight)


def test_the_same_array_used_twice_is_one_constant():
    square = RNG.standard_normal((3, 3)).astype(np.float32)

    def fn(x):
        return polyeng.linear(polyeng.linear(x, square), square)
    graph = trace(fn, X)
    assert list(graph.constants) == ["square"]
    assert [node.inputs for node in graph.nodes] == [["x", "square"], [graph.nodes[0].outputs[0], "square"]]


def test_subgraphs_of_constants_are_folded():
    bias = np.ones(4, np.float32)

    def fn(x):
        folded = polyeng.exp(polyeng.mul(bias, 2.0)) + polyeng.softmax(bias)   # constants only
        return polyeng.add(polyeng.linear(x, W), folded)
    graph = trace(fn, X)
    assert ops_of(graph) == ["linear", "add"]
    folded = [name for name in graph.constants if name not in ("W",)]
    assert len(folded) == 1
    np.testing.assert_array_equal(graph.constants[folded[0]],
                                  polyeng.exp(polyeng.mul(bias, 2.0)) + polyeng.softmax(bias))
    assert_same_tree(graph(X), fn(X))


def test_mutating_a_weight_after_tracing_does_not_change_the_graph():
    weight = W.copy()
    graph = trace(lambda x: polyeng.linear(x, weight), X)
    before = graph(X)
    weight[:] = 0
    assert_same_tree(graph(X), before)
    assert not graph.constants["weight"].flags.writeable


def test_nested_input_and_output_structures():
    def fn(pair, *, extra):
        a, b = pair
        return {"sum": a + b, "parts": (a * extra["k"], [b, polyeng.exp(b)])}
    a, b = X, X * 3
    k = np.float32(2.0) * np.ones((1, 3), np.float32)
    graph = trace(fn, (a, b), extra={"k": k})
    assert [v.name for v in graph.inputs] == ["pair[0]", "pair[1]", "extra.k"]
    assert_same_tree(graph((b, a), extra={"k": k + 1}), fn((b, a), extra={"k": k + 1}))
    with pytest.raises(ValueError, match="pair"):
        graph([a], extra={"k": k})


def test_lstm_state_structure_is_kept():
    lm = model_zoo.lstm_language_model(vocab=20, embed=8, hidden=6, seed=1)
    params = lstm_params(lm)

    def step(x, state):
        return polyeng.lstm(x, params, state[0], state[1])
    x = RNG.standard_normal((5, 2, 8)).astype(np.float32)
    state = (np.zeros((1, 2, 6), np.float32), np.ones((1, 2, 6), np.float32))
    graph = trace(step, x, state)
    y, (h, c) = graph(x, state)
    assert_same_tree((y, (h, c)), step(x, state))
    assert [v.shape for v in graph.outputs] == [(5, 2, 6), (1, 2, 6), (1, 2, 6)]


def test_trace_arguments():
    with pytest.raises(TypeError, match="not callable"):
        trace(np.ones(3), X)
    with pytest.raises(ValueError, match="at least one array"):
        trace(lambda n: polyeng.exp(np.ones(n, np.float32)), 3)
    with pytest.raises(ValueError, match="at least one array"):
        trace(lambda: X)


def test_non_array_inputs_are_fixed_at_their_example_value():
    graph = trace(lambda x, axis: polyeng.softmax(x, axis=axis), X, 0)
    assert_same_tree(graph(X, 0), polyeng.softmax(X, axis=0))
    with pytest.raises(ValueError, match="axis"):
        graph(X, 1)


def test_dtype_attributes_print_as_short_names():
    graph = trace(lambda x: (polyeng.cast(x, np.float16), x.astype(np.int32)), X)
    text = str(graph)
    assert "x; dtype=f16" in text and "x; dtype=s32" in text and "class" not in text


@pytest.mark.parametrize("expr, ops", [
    (lambda x: polyeng.select(x == 0, x, x), ["equal", "select"]),
    (lambda x: polyeng.select(x != 0, x, x), ["not_equal", "select"]),
    (lambda x: polyeng.select(x > 0, x, 0.0 * x), ["greater", "mul", "select"]),
    (lambda x: x <= 1, ["less_equal"]), (lambda x: 1 < x, ["greater"]), (lambda x: x >= x, ["greater_equal"]),
    (lambda x: (x > 0) & (x < 1), ["greater", "less", "logical_and"]),
    (lambda x: ~((x > 0) | (x < -1)) ^ (x == 0), ["greater", "less", "logical_or", "logical_not", "equal", "logical_xor"]),
])
def test_comparisons_and_logic_operators_record_polyeng_ops(expr, ops):
    graph = trace(expr, X)
    assert ops_of(graph) == ops
    np.testing.assert_array_equal(graph(X), expr(X))
