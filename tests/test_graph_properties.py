"""Random small graphs (SPEC §6): a traced graph equals the function it was traced from; its mixed
precision conversion runs, every node's recorded output type is what its op gives on its inputs'
recorded types, and no value is cast twice to the same dtype."""
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyeng
from polyeng import amp
from polyeng.graph import trace
from polyeng.graph.ir import fill
from polyeng.graph.numpy_nodes import RUN as NUMPY_RUN
from support import assert_same_tree

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STEPS = ["add_prev", "mul_scalar", "tanh", "exp", "gelu", "relu", "sigmoid", "sqrt", "linear", "matmul",
         "softmax", "layer_norm", "mean", "reshape", "concat", "select", "sub", "div", "neg", "slice",
         "lstm"]


def build(steps, seed):
    """A function of x (batch, features) applying ``steps`` to a running value, over constants drawn
    from ``seed``; earlier values are reused, so several nodes read one value."""
    rng = np.random.default_rng(seed)
    weights = []

    def weight(shape):
        w = (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
        weights.append(w)
        return w
    plan = [(step, int(rng.integers(2, 6)), rng.random()) for step in steps]

    def fn(x):
        values = [x]
        h = x
        for step, size, r in plan:
            n, f = h.shape[0], h.shape[-1]
            same = [v for v in values if v.shape == h.shape]
            if step == "add_prev":
                h = polyeng.add(h, same[int(r * len(same))])
            elif step == "mul_scalar":
                h = h * float(r + 0.5)
            elif step in ("tanh", "exp", "gelu", "relu", "sigmoid"):
                h = getattr(polyeng, step)(polyeng.mul(h, 0.5) if step == "exp" else h)
            elif step == "sqrt":
                h = np.sqrt(h * h + 1.0)
            elif step == "linear":
                h = polyeng.linear(h, take(weights, (size, f), weight), take(weights, (size,), weight))
            elif step == "matmul":
                h = h @ take(weights, (f, size), weight)
            elif step == "softmax":
                h = polyeng.softmax(h, axis=-1)
            elif step == "layer_norm":
                h = polyeng.layer_norm(h, f)
            elif step == "mean":
                h = h - polyeng.mean(h, axis=-1, keepdims=True)
            elif step == "reshape":
                h = polyeng.reshape(polyeng.reshape(h, (n, f, 1)), (-1, f))
            elif step == "concat":
                h = polyeng.concat([h, values[int(r * len(values))]], axis=1)
            elif step == "select":
                h = polyeng.select(take(weights, (1, f), weight) > 0, h, same[int(r * len(same))])
            elif step == "sub":
                h = same[int(r * len(same))] - h
            elif step == "div":
                h = h / (polyeng.mul(h, h) + 1.0)
            elif step == "neg":
                h = -h
            elif step == "lstm":   # one sequence of length n; the final states are used too
                params = [(take(weights, (4 * size, f), weight), take(weights, (4 * size, size), weight),
                           take(weights, (4 * size,), weight), None)]
                y, (h_n, c_n) = polyeng.lstm(polyeng.reshape(h, (n, 1, f)), params)
                h = polyeng.add(polyeng.reshape(y, (-1, size)), polyeng.reshape(c_n, (1, size))) + h_n[0]
            elif step == "slice":
                h = h[:, : max(1, f - 1)] if f > 1 else h
            values.append(h)
        return h, values[len(values) // 2]
    return fn


def take(cache, shape, make):
    """A constant of ``shape``: an existing one when there is one (so constants are shared), else new."""
    for w in cache:
        if w.shape == shape:
            return w
    return make(shape)


def leaves(out, result, found):
    if isinstance(out, int) and not isinstance(out, bool):
        found[out] = result
    elif isinstance(out, (list, tuple)):
        for o, r in zip(out, result):
            leaves(o, r, found)


def run_node_by_node(graph, x):
    """Each node's op called on the values it reads; its results checked against the node's types."""
    env = dict(graph.constants)
    env[graph.inputs[0].name] = x
    for node in graph.nodes:
        kwargs = fill(node.args, env.__getitem__)
        run = NUMPY_RUN.get(node.op) or getattr(polyeng, node.op)
        found = {}
        leaves(node.out, run(**kwargs), found)
        for i, name in enumerate(node.outputs):
            value = found[i]
            assert (np.dtype(value.dtype), tuple(value.shape)) == (node.types[i][0], tuple(node.types[i][1])), node
            env[name] = value
    return env




graphs = st.tuples(st.lists(st.sampled_from(STEPS), min_size=1, max_size=8), st.integers(0, 2**16),
                   st.integers(1, 3), st.integers(2, 5), st.sampled_from([np.float32, np.float16]))


@SETTINGS
@given(graphs)
def test_graph_equals_the_function(case):
    steps, seed, batch, features, dtype = case
    fn = build(steps, seed)
    x = np.random.default_rng(seed).standard_normal((batch, features)).astype(dtype)
    graph = trace(fn, x)
    with polyeng.compute_eng("basic"):
        for got, want in zip(graph(x), fn(x)):
            assert_same_tree(got, want)
    other = np.random.default_rng(seed + 1).standard_normal((batch + 1, features)).astype(dtype)
    with polyeng.compute_eng("basic"):   # another batch size
        for got, want in zip(graph(other), fn(other)):
            assert_same_tree(got, want)


@SETTINGS
@given(graphs, st.sampled_from(["bfloat16", "float16"]), st.booleans())
def test_converted_graph_is_consistent(case, mixed, keep_outputs):
    steps, seed, batch, features, dtype = case
    fn = build(steps, seed)
    x = np.random.default_rng(seed).standard_normal((batch, features)).astype(dtype)
    graph = trace(fn, x)
    converted = amp.to_mixed_precision(graph, mixed, keep_orig_output_dtype=keep_outputs, missing_op_mode="ignore")
    with polyeng.compute_eng("basic"):
        outputs = converted(x)
        env = run_node_by_node(converted, x)
    for value, got in zip(converted.outputs, outputs):
        assert_same_tree(got, env[value.name])
        assert got.dtype == value.dtype
    if keep_outputs:
        assert [v.dtype for v in converted.outputs] == [v.dtype for v in graph.outputs]
    made = Counter((n.inputs[0], np.dtype(n.attrs["dtype"])) for n in converted.nodes
                   if n.op == "cast" and n.amp.category == "cast")
    assert all(count == 1 for count in made.values()), made
    source = {n.outputs[0]: n.inputs[0] for n in converted.nodes if n.op == "cast" and n.amp.category == "cast"}
    types = {name: t[0] for n in converted.nodes for name, t in zip(n.outputs, n.types)}
    types.update({v.name: v.dtype for v in converted.inputs})
    for n in converted.nodes:   # no cast of a cast back to its source's dtype
        if n.op == "cast" and n.inputs[0] in source:
            assert types.get(source[n.inputs[0]]) != np.dtype(n.attrs["dtype"]), n
    untouched = {v.name for v in graph.inputs}
    for n in converted.nodes:
        for name in n.inputs:
            assert name in env or name in converted.constants or name in untouched
