"""Every op on every engine that implements it, against the BASIC reference.

The reference is BASIC run on the same input values in float64, so this also checks
BASIC's own 16-bit storage path. A new engine gets the whole suite by registering kernels.
"""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from polyeng.engine.call import map_arrays
from polyeng.examples import example_calls, zero_size_calls
from polyeng.ops import OPS

# BASIC included: against the float64 reference it checks BASIC's own 16-bit storage path.
# Engines registered for the run (conftest's --polyeng-plugin) are listed too.
ENGINE_OPS = [pytest.param(e.name, op, marks=() if e.available else
                           pytest.mark.skip(reason=f"engine {e.name!r} is unavailable: {e.reason}"))
              for e in polyeng.engines() for op in e.ops if op in OPS]
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
# Error allowed: each op's OpSpec.tolerance, in units of the storage dtype's epsilon, relative to
# max(1, |reference|).


def to_f64(a):
    return a.astype(np.float64) if a.dtype in dt.FLOAT_DTYPES else a


def run(op, engine, args, kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def assert_close(actual, expected, dtype, op):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, dtype, op)
        return
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    if expected.dtype.kind in "biu" or actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
        return
    assert actual.dtype == dtype, f"{op} returned {actual.dtype}, expected {dtype}"
    if OPS[op].exact:
        np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(dtype).astype(np.float64))
        return
    eps = float(np.finfo(np.float32 if dtype == dt.bfloat16 else dtype).eps) if dtype != dt.bfloat16 else 2.0 ** -7
    tol = OPS[op].tolerance * eps
    scale = max(1.0, float(np.nanmax(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype_name", list(FLOATS))
@pytest.mark.parametrize("engine,op", ENGINE_OPS)
def test_op_matches_reference(engine, op, dtype_name):
    dtype = np.dtype(FLOATS[dtype_name])
    args, kwargs = example_calls(np.random.default_rng(7), dtype)[op]
    expected = run(op, "basic", map_arrays(args, to_f64), map_arrays(kwargs, to_f64))
    if op == "cast":
        expected = np.asarray(expected).astype(np.float64)
        dtype = np.dtype(dt.bfloat16)
    actual = run(op, engine, args, kwargs)
    assert_close(actual, expected, dtype, op)


def _strided(a):
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return wide[..., ::2]


LAYOUTS = {
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "negative-strides": lambda a: np.ascontiguousarray(a[..., ::-1])[..., ::-1],
    "strided": _strided,
    "broadcast": lambda a: np.broadcast_to(a[..., :1], a.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("engine,op", ENGINE_OPS)
def test_op_on_non_contiguous_inputs(engine, op, layout):
    args, kwargs = example_calls(np.random.default_rng(3), np.float32)[op]
    transform = LAYOUTS[layout]
    args, kwargs = map_arrays((args, kwargs), lambda a: transform(a) if a.ndim else a)
    assert any(not a.flags.c_contiguous for a in _arrays((args, kwargs)) if a.size > 1)
    expected = run(op, "basic", *map_arrays((args, kwargs), np.ascontiguousarray))
    actual = run(op, engine, args, kwargs)
    assert_close(actual, expected, np.dtype(np.float32) if op != "cast" else np.dtype(dt.bfloat16), op)


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)


ZERO_SIZE = zero_size_calls()


def _shapes(result):
    if isinstance(result, (tuple, list)):
        return [_shapes(r) for r in result]
    return tuple(np.asarray(result).shape)


def _expected_shapes(spec):
    return [_expected_shapes(s) for s in spec] if isinstance(spec, list) else spec


@pytest.mark.parametrize("engine,op", ENGINE_OPS)
def test_zero_size_inputs(engine, op):
    args, kwargs, shape = ZERO_SIZE[op]
    result = run(op, engine, args, kwargs)
    assert _shapes(result) == _expected_shapes(shape)


def test_every_op_has_cases():
    assert set(ZERO_SIZE) == set(OPS) == set(example_calls())


@pytest.mark.parametrize("op", sorted(OPS))
def test_unsupported_dtype_is_a_type_error(op):
    args, kwargs = example_calls(np.random.default_rng(0))[op]
    bad = lambda a: a.astype(np.complex64) if a.dtype.kind in "fb" else a  # noqa: E731  (logical ops take bool)
    args, kwargs = map_arrays((args, kwargs), bad)
    with pytest.raises(TypeError, match="complex64"):
        getattr(polyeng, op)(*args, **kwargs)


def test_every_warmup_variant_is_a_valid_call():
    from polyeng.examples import warmup_variants
    variants = warmup_variants(np.random.default_rng(0))
    assert {op for op, _, _ in variants} >= {"softmax", "max_pool2d", "cast", "gelu"}
    for op, args, kwargs in variants:
        run(op, "basic", args, kwargs)
