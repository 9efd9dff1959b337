"""Two values kernels get wrong easily, on BASIC and every engine under test (see conftest):
0-d arrays (cast keeps the shape ``()``), and layer_norm rows whose values are all equal
(their centred values, and so the output before the bias, are exactly 0, not rounding noise
that ``1 / sqrt(eps)`` amplifies)."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

SOURCES = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_]
TARGETS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False), np.errstate(all="ignore"):
        return getattr(polyeng, op)(*args, **kwargs)


# --- cast of 0-d arrays ---------------------------------------------------------------------------

def zero_d_values(dtype):
    if dtype == dt.bool_:
        return [np.array(True), np.array(False)]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [np.array(v, dtype) for v in (info.min, info.max, 1, 0)]
    return [np.array(v).astype(dtype) for v in (-2.5, 1 / 3, 0.0)]


@pytest.mark.uses_ops("cast")
@pytest.mark.parametrize("target", TARGETS, ids=dt.short_name)
@pytest.mark.parametrize("source", SOURCES, ids=dt.short_name)
def test_cast_keeps_0_d_shape(engine, source, target):
    for x in zero_d_values(source):
        got, want = run(engine, "cast", x, target), run("basic", "cast", x, target)
        assert got.shape == () and got.dtype == target, (x, got)
        assert want.shape == () and want.dtype == target
        assert got.astype(np.float64) == want.astype(np.float64)
        # and as the element of a 1-element array
        assert run(engine, "cast", x.reshape(1), target).astype(np.float64)[0] == want.astype(np.float64)


def test_cast_keeps_0_d_shape_on_basic():
    for source in SOURCES:
        for target in TARGETS:
            for x in zero_d_values(source):
                got = run("basic", "cast", x, target)
                assert got.shape == () and got.dtype == target
                with np.errstate(over="ignore"):
                    want = dt.round_to(x.reshape(1), target)[0]
                assert got.astype(np.float64) == want.astype(np.float64)


# --- layer_norm of constant rows ------------------------------------------------------------------

def constant_rows(dtype, features, rows=60):
    """Rows of one value each, spread over the magnitudes ``dtype`` holds, both signs."""
    rng = np.random.default_rng(features)
    top = 4.5 if dtype == dt.float16 else 30
    bottom = -4 if dtype == dt.float16 else -30
    magnitudes = 10.0 ** rng.uniform(bottom, top, rows)
    values = np.concatenate([[1234.567, 0.1, 3.3, -7.7], magnitudes * rng.choice([-1, 1], rows)])
    return np.repeat(values[:, None], features, axis=1).astype(dtype)


def assert_constant_rows_give_the_bias(engine, dtype, features):
    x = constant_rows(dtype, features)
    assert np.isfinite(x.astype(np.float64)).all()
    y = run(engine, "layer_norm", x, features)
    assert y.dtype == dtype
    nonzero = np.flatnonzero((y.astype(np.float64) != 0).any(axis=1))
    assert nonzero.size == 0, f"rows of {x[nonzero[:3], 0]} give up to {np.abs(y[nonzero].astype(np.float64)).max()}"
    rng = np.random.default_rng(1)
    weight, bias = (rng.standard_normal(features).astype(dtype) for _ in range(2))
    y = run(engine, "layer_norm", x, features, weight=weight, bias=bias)
    np.testing.assert_array_equal(y.astype(np.float64), np.broadcast_to(bias.astype(np.float64), x.shape))


@pytest.mark.parametrize("features", [7, 100, 4096])
@pytest.mark.parametrize("dtype", FLOATS, ids=dt.short_name)
def test_layer_norm_of_constant_rows_is_exactly_the_bias_on_basic(dtype, features):
    assert_constant_rows_give_the_bias("basic", dtype, features)


@pytest.mark.uses_ops("layer_norm")
@pytest.mark.parametrize("features", [7, 100, 4096])
@pytest.mark.parametrize("dtype", FLOATS, ids=dt.short_name)
def test_layer_norm_of_constant_rows_is_exactly_the_bias(engine, dtype, features):
    assert_constant_rows_give_the_bias(engine, dtype, features)


def assert_constant_planes_give_zeros(engine):
    x = np.full((3, 4, 5, 6), 1234.567, np.float32)
    x[1] = -0.001
    assert not run(engine, "layer_norm", x, (5, 6)).any()


def test_layer_norm_of_constant_planes_over_several_axes_on_basic():
    assert_constant_planes_give_zeros("basic")


@pytest.mark.uses_ops("layer_norm")
def test_layer_norm_of_constant_planes_over_several_axes(engine):
    assert_constant_planes_give_zeros(engine)
