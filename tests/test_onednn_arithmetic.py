"""ONEDNN's add, sub, mul and div and its eltwise activations: ordinary float calls are taken
(not turned down), and the arithmetic properties of test_op_arithmetic.py hold on every call
oneDNN takes (that module's property tests run with fallback=False, where a call ONEDNN turns
down, an integer or f64 one, is an error rather than an expected failure)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import polyeng
from polyeng.engine import dtypes as dt
from support import onednn_computes_bf16, onednn_turns_down, sample_values
from test_op_arithmetic import (OPS, SETTINGS, UFUNCS, array_scalar_cases, assert_same, laid_out, numpy_values,
                                values)

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")


def on_onednn(op, *args, **kwargs):
    try:
        with polyeng.compute_eng("onednn", fallback=False):
            return getattr(polyeng, op)(*args, **kwargs)
    except polyeng.EngineError as exc:
        assume(not exc.reason.startswith("rejected:"))   # turned down: another engine's call
        raise


def engine_of(op, *args, **kwargs):
    with polyeng.compute_eng("onednn"):
        return polyeng.explain(op, *args, **kwargs).engine


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_float_calls_are_taken(op):
    dtype = np.float32
    x = np.ones((4, 8, 5), dtype)
    for b in (x, x[:1], x[0, :, :1], np.ones(5, dtype), 2.0):
        assert engine_of(op, x, b) == "onednn"
    assert engine_of(op, x[:, :1], x) == "onednn"   # a broadcast src0
    assert engine_of(op, 3.0, x) == "onednn"


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_bf16_arithmetic_is_turned_down_for_its_subnormals(op):
    """oneDNN reads and writes bf16 subnormals as zero: bf16(1.18e-38) / 2 gave 0, numpy 5.9e-39."""
    x = np.array([1.1754944e-38, 3.0], dt.bfloat16)
    with polyeng.compute_eng("onednn"):
        decision = polyeng.explain(op, x, np.array([2.0, 2.0], dt.bfloat16))
    assert decision.engine != "onednn"
    reason = next(c.reason for c in decision.candidates if c.engine == "onednn")
    assert "flushes subnormals" in reason


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16])
@pytest.mark.parametrize("op,kwargs", [("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("sigmoid", {}),
                                       ("tanh", {}), ("sqrt", {}), ("hardswish", {}), ("silu", {}),
                                       ("leaky_relu", {"negative_slope": 0.1}), ("reciprocal", {})])
def test_float_activations_are_taken(op, kwargs, dtype):
    """bf16 where oneDNN computes it; elsewhere the call is turned down and runs as on BASIC."""
    if dtype == np.float32 or onednn_computes_bf16():
        assert engine_of(op, np.ones((3, 7), dtype), **kwargs) == "onednn"
        return
    x = sample_values((3, 7), dtype)
    got, want = onednn_turns_down(op, x, **kwargs)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0 ** -8, atol=0,
                               equal_nan=True)


def test_relu_keeps_nan_and_sub_of_a_scalar_keeps_zero_signs():
    x = np.array([np.nan, -np.inf, 1.0, -2.0] * 5, np.float32)
    got = on_onednn("relu", x)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
    z = np.array([0.0, -0.0, 1.0, np.inf] * 5, np.float32)
    for scalar in (0.0, -0.0, 1.0):
        assert_same(on_onednn("sub", scalar, z), np.float32(scalar) - z)


@st.composite
def float_pairs(draw):
    """test_op_arithmetic's array pairs, both operands of one dtype oneDNN takes."""
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                                    max_side=4)).input_shapes
    dtype = np.dtype(np.float32)   # bf16 is turned down (test_bf16_arithmetic_is_turned_down_...)
    return (draw(st.sampled_from(OPS)), laid_out(draw, draw(values(dtype, shapes[0]))),
            laid_out(draw, draw(values(dtype, shapes[1]))))


@SETTINGS
@given(case=float_pairs())
def test_arrays_compute_as_numpy(case):
    op, a, b = case
    got = on_onednn(op, a, b)
    assert_same(got, numpy_values(op, a, b, a.dtype))


@settings(SETTINGS, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=array_scalar_cases())
def test_python_scalars_compute_as_numpy(case):
    op, array, scalar, scalar_first = case
    assume(array.dtype == np.dtype(np.float32))
    args = (scalar, array) if scalar_first else (array, scalar)
    with np.errstate(all="ignore"):
        weak = np.asarray(scalar, array.dtype)
    expected = numpy_values(op, *((weak, array) if scalar_first else (array, weak)), array.dtype)
    assert_same(on_onednn(op, *args), expected)
    assert UFUNCS[op]
