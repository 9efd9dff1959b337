"""Graph inputs by name (SPEC §11): ``graph(a=..., b=...)``, mixed with positional ones as a Python
call binds its parameters; ``input_names``/``output_names``; each misuse a TypeError naming it."""
import numpy as np
import pytest

import polyeng
from polyeng.graph import trace

RNG = np.random.default_rng(5)
A = RNG.standard_normal((2, 3)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
BIAS = RNG.standard_normal(4).astype(np.float32)


def _fn(a, b, *, bias):
    product = polyeng.matmul(a, b)
    return {"sum": polyeng.add(product, bias), "product": product}


@pytest.fixture(scope="module")
def graph():
    return trace(_fn, A, B, bias=BIAS)


def _expected():
    product = A @ B
    return product + BIAS, product


def test_names_list_the_positional_then_the_keyword_inputs(graph):
    assert graph.input_names == ["a", "b", "bias"]
    assert len(graph.output_names) == 2 and graph.output_names == [v.name for v in graph.outputs]


@pytest.mark.parametrize("call", [
    lambda g: g(A, B, bias=BIAS),
    lambda g: g(A, b=B, bias=BIAS),
    lambda g: g(a=A, b=B, bias=BIAS),
    lambda g: g(bias=BIAS, b=B, a=A),
], ids=["positional", "mixed", "by-name", "any-order"])
def test_every_way_of_binding_gives_the_same_result(graph, call):
    out = call(graph)
    total, product = _expected()
    np.testing.assert_allclose(out["sum"], total, rtol=1e-6)
    np.testing.assert_allclose(out["product"], product, rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda g: g(A, B, a=A, bias=BIAS), r"input 'a' both by position and by name"),
    (lambda g: g(A, B, bias=BIAS, c=B), r"unknown input 'c'; its inputs are a, b, bias"),
    (lambda g: g(A, bias=BIAS), r"missing input 'b'"),
    (lambda g: g(A, B), r"missing input 'bias'"),
    (lambda g: g(bias=BIAS), r"missing inputs 'a', 'b'"),
    (lambda g: g(A, B, BIAS), r"takes 2 positional inputs \(a, b\); got 3"),
])
def test_misuse_is_a_type_error_naming_the_input(graph, call, message):
    with pytest.raises(TypeError, match=message):
        call(graph)


def test_a_value_error_names_an_input_given_by_name(graph):
    with pytest.raises(ValueError, match=r"input b has dtype float64"):
        graph(A, b=B.astype(np.float64), bias=BIAS)


def test_explain_takes_names_too(graph):
    assert len(graph.explain(a=A, b=B, bias=BIAS)) == len(graph.explain(A, B, bias=BIAS))
