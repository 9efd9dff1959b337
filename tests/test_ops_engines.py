"""Every op on every engine that implements it, against the BASIC reference.

The reference is BASIC run on the same input values in float64, so this also checks
BASIC's own 16-bit storage path. A new engine gets the whole suite by registering kernels.
"""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from polyeng.engine.call import map_arrays
from polyeng.examples import example_calls
from polyeng.ops import OPS

# BASIC included: against the float64 reference it checks BASIC's own 16-bit storage path.
# Engines registered for the run (conftest's --polyeng-plugin) are listed too.
ENGINE_OPS = [pytest.param(e.name, op, marks=() if e.available else
                           pytest.mark.skip(reason=f"engine {e.name!r} is unavailable: {e.reason}"))
              for e in polyeng.engines() for op in e.ops if op in OPS]
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
# Error allowed, in units of the storage dtype's epsilon, relative to max(1, |reference|).
TOLERANCE = {"lstm": 64, "matmul": 32, "linear": 32, "layer_norm": 32, "softmax": 16, "log_softmax": 16,
             "avg_pool2d": 8, "avg_pool3d": 8, "upsample_bilinear2d": 8, "gelu": 8}


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
    tol = TOLERANCE.get(op, 4) * eps
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


def _zero(*shape):
    return np.zeros(shape, np.float32)


ZERO_SIZE = {
    "concat": (([_zero(0, 3), _zero(0, 2)],), {"axis": 1}, (0, 5)),
    "avg_pool2d": ((_zero(0, 3, 8, 8), 2), {}, (0, 3, 4, 4)),
    "avg_pool3d": ((_zero(2, 0, 4, 4, 4), 2), {}, (2, 0, 2, 2, 2)),
    "max_pool2d": ((_zero(0, 3, 8, 8), 2), {}, (0, 3, 4, 4)),
    "max_pool3d": ((_zero(0, 1, 4, 4, 4), 2), {}, (0, 1, 2, 2, 2)),
    "lstm": ((_zero(5, 0, 4), [(_zero(8, 4), _zero(8, 2), _zero(8), _zero(8))]), {}, [(5, 0, 2), [(1, 0, 2), (1, 0, 2)]]),
    "layer_norm": ((_zero(0, 16), 16), {}, (0, 16)),
    "softmax": ((_zero(3, 0),), {"axis": 0}, (3, 0)),
    "log_softmax": ((_zero(0, 4),), {}, (0, 4)),
    "upsample_bilinear2d": ((_zero(0, 2, 3, 3),), {"size": 6}, (0, 2, 6, 6)),
    "upsample_nearest": ((_zero(2, 0, 3),), {"scale_factor": 2}, (2, 0, 6)),
    "permute_contiguous": ((_zero(0, 3, 2), (2, 0, 1)), {}, (2, 0, 3)),
    "select": ((np.zeros((0, 4), bool), _zero(0, 4), _zero(1, 4)), {}, (0, 4)),
    "matmul": ((_zero(0, 5), _zero(5, 3)), {}, (0, 3)),
    "linear": ((_zero(2, 0, 5), _zero(3, 5)), {}, (2, 0, 3)),
    "gelu": ((_zero(0),), {}, (0,)),
    "cast": ((_zero(0, 2), "f16"), {}, (0, 2)),
    "add": ((_zero(0, 3), _zero(1, 3)), {}, (0, 3)),
    "sub": ((_zero(2, 0), 1.5), {}, (2, 0)),
    "mul": ((_zero(0, 1), _zero(4)), {}, (0, 4)),
    "div": ((_zero(3, 0), _zero(1)), {}, (3, 0)),
    "pow": ((_zero(0, 2), 2.0), {}, (0, 2)),
    "relu": ((_zero(0, 3),), {}, (0, 3)),
    "sigmoid": ((_zero(2, 0),), {}, (2, 0)),
    "tanh": ((_zero(0),), {}, (0,)),
    "exp": ((_zero(0, 5),), {}, (0, 5)),
    "sqrt": ((_zero(3, 0, 2),), {}, (3, 0, 2)),
    "erf": ((_zero(0),), {}, (0,)),
    "mean": ((_zero(0, 3),), {"axis": 1}, (0,)),
    "reshape": ((_zero(0, 3), (3, -1)), {}, (3, 0)),
    "embedding": ((np.zeros((2, 0), np.int64), _zero(5, 3)), {}, (2, 0, 3)),
}


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
    bad = lambda a: a.astype(np.complex64) if a.dtype.kind == "f" else a  # noqa: E731
    args, kwargs = map_arrays((args, kwargs), bad)
    with pytest.raises(TypeError, match="complex64"):
        getattr(polyeng, op)(*args, **kwargs)
