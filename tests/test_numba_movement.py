"""NUMBA's data movement kernels (concat, permute_contiguous, select, upsample_nearest,
upsample_bilinear2d) against BASIC: bit-equality for the exact ops over every dtype width,
bilinear within f32 rounding, and the layouts and shapes the shared engine suite does not try."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif(not any(e.name == "numba" and e.available for e in polyeng.engines()),
                                reason="numba is not available")

# one dtype per element width and kind: each exercises a separately compiled kernel
EXACT_DTYPES = [np.bool_, np.int8, dt.bfloat16, np.float16, np.float32, np.int32, np.int64, np.float64]


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def assert_same_bits(op, *args, **kwargs):
    expected = run("basic", op, *args, **kwargs)
    actual = run("numba", op, *args, **kwargs)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.flags.c_contiguous
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


def values(rng, shape, dtype):
    """Random values with NaN, +-Inf and -0.0 among the floats, large magnitudes among the ints."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(shape) * 100).astype(np.float32).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).astype(dtype)
    flat = a.reshape(-1)
    flat[: min(4, flat.size)] = special[: min(4, flat.size)]
    return a


@pytest.mark.parametrize("dtype", EXACT_DTYPES)
def test_exact_ops_keep_every_bit(dtype):
    rng = np.random.default_rng(0)
    x = values(rng, (2, 3, 7, 13), dtype)
    assert_same_bits("upsample_nearest", x, scale_factor=2)      # the widened-word path
    assert_same_bits("upsample_nearest", x, size=(5, 17))        # the gather path
    assert_same_bits("permute_contiguous", x, (0, 2, 1, 3))      # row copy
    assert_same_bits("permute_contiguous", x, (3, 0, 2, 1))      # tiled transpose
    assert_same_bits("concat", [x, values(rng, (2, 1, 7, 13), dtype)], axis=1)
    assert_same_bits("select", rng.random((3, 7, 1)) > 0.5, x, values(rng, (1, 13), dtype))


@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"scale_factor": 3}, {"scale_factor": 0.5},
                                    {"scale_factor": 1.2}, {"size": 1}, {"size": 11}])
@pytest.mark.parametrize("spatial", [(13,), (7, 2), (2, 7), (3, 5, 4)])
def test_nearest_1d_2d_3d(spatial, resize):
    x = values(np.random.default_rng(1), (2, 3) + spatial, np.float16)
    assert_same_bits("upsample_nearest", x, **resize)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, dt.bfloat16])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 2.0}, {"scale_factor": (1.7, 0.6)}, {"size": (1, 13)},
                                    {"size": (7, 7)}, {"size": (3, 2)}, {"scale_factor": 1.2}])
def test_bilinear_matches_basic(dtype, align_corners, resize):
    x = (np.random.default_rng(2).standard_normal((2, 3, 7, 9)) * 10).astype(np.float32).astype(dtype)
    expected = run("basic", "upsample_bilinear2d", x, align_corners=align_corners, **resize)
    actual = run("numba", "upsample_bilinear2d", x, align_corners=align_corners, **resize)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    # the same source coordinates and weights; only the last rounding may differ (contraction)
    ulp = 2.0 ** -7 if dtype == dt.bfloat16 else float(np.finfo(dtype).eps)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=2 * ulp, atol=20 * ulp)


def test_bilinear_nan_and_inf_propagate():
    x = np.arange(2 * 25, dtype=np.float32).reshape(1, 2, 5, 5)
    x[0, 0, 2, 2], x[0, 1, 0, 0] = np.nan, np.inf
    for align_corners in (False, True):
        expected = run("basic", "upsample_bilinear2d", x, scale_factor=2, align_corners=align_corners)
        actual = run("numba", "upsample_bilinear2d", x, scale_factor=2, align_corners=align_corners)
        np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
        np.testing.assert_array_equal(np.isinf(actual), np.isinf(expected))


def test_bilinear_large_planes_split_into_row_blocks():
    x = np.random.default_rng(3).standard_normal((1, 1, 40, 31)).astype(np.float32)
    expected = run("basic", "upsample_bilinear2d", x, size=(97, 64))
    actual = run("numba", "upsample_bilinear2d", x, size=(97, 64))
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("shape,dims", [
    ((5,), (0,)), ((), ()), ((4, 1, 6), (2, 1, 0)), ((1, 1, 1), (2, 0, 1)), ((3, 4, 5, 6, 2), (4, 0, 3, 1, 2)),
    ((2, 3, 4, 5, 6, 7), (5, 4, 3, 2, 1, 0)), ((7, 65, 33), (0, 2, 1)), ((65, 33), (1, 0)), ((3, 1000), (1, 0)),
    ((2, 3, 4, 5), (0, 1, 2, 3)), ((2, 3, 4, 5), (2, 3, 0, 1)), ((2, 3, 4, 5), (1, 2, 3, 0))])
def test_permute_shapes(shape, dims):
    x = values(np.random.default_rng(4), shape, np.int32)
    assert_same_bits("permute_contiguous", x, dims)


@pytest.mark.parametrize("layout", ["fortran", "moved", "reversed", "broadcast", "strided"])
def test_permute_layouts(layout):
    base = values(np.random.default_rng(5), (4, 5, 6), np.float32)
    x = {"fortran": np.asfortranarray(base), "moved": np.moveaxis(np.ascontiguousarray(np.moveaxis(base, 0, 2)), 2, 0),
         "reversed": base[::-1, :, ::-1], "broadcast": np.broadcast_to(base[:, :1], base.shape),
         "strided": base[:, ::2]}[layout]
    for dims in [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1)]:
        assert_same_bits("permute_contiguous", x, dims)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_axes_zero_size_pieces_and_promotion(axis):
    rng = np.random.default_rng(6)
    shape = [3, 4, 5]
    pieces = []
    for width, dtype in [(2, np.float16), (0, np.int8), (3, dt.bfloat16), (1, np.float32)]:
        piece_shape = list(shape)
        piece_shape[axis] = width
        pieces.append(values(rng, tuple(piece_shape), dtype))
    assert_same_bits("concat", pieces, axis=axis)                          # bf16 + f16 -> f32
    assert_same_bits("concat", [p.astype(np.int64) for p in pieces[1:2]] + [pieces[1]], axis=axis)
    assert_same_bits("concat", [np.asfortranarray(pieces[0]), pieces[2][..., ::-1]], axis=axis)


def test_concat_long_rows_split_across_tasks():
    rng = np.random.default_rng(7)
    a, b = values(rng, (3, 70001), np.float32), values(rng, (2, 70001), np.float32)
    assert_same_bits("concat", [a, b], axis=0)
    assert_same_bits("concat", [a, a[:, :5], a], axis=1)
    assert_same_bits("concat", [values(rng, (30000, 3), np.int8), values(rng, (30000, 2), np.int8)], axis=1)


@pytest.mark.parametrize("cond_shape,then_shape,else_shape", [
    ((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((3, 1), (2, 3, 4), (4,)), ((4,), (2, 1, 4), (3, 1)),
    ((), (5,), ()), ((1, 1), (1, 7), (3, 1)), ((2, 1, 1), (2, 3, 4), (1,)), ((), (), ()),
    ((1, 3, 1, 5), (2, 3, 4, 5), (2, 1, 4, 1))])
def test_select_broadcasting(cond_shape, then_shape, else_shape):
    rng = np.random.default_rng(8)
    cond = rng.random(cond_shape) > 0.5
    assert_same_bits("select", cond, values(rng, then_shape, np.float32), values(rng, else_shape, np.float32))
    assert_same_bits("select", cond, values(rng, then_shape, np.int8), values(rng, else_shape, dt.bfloat16))


def test_select_never_leaks_the_unselected_nan_and_keeps_scalars_weak():
    x = np.array([1.0, np.nan, -np.inf, 2.0], np.float16)
    cond = np.array([True, False, True, False])
    assert_same_bits("select", cond, x, 0.0)
    assert_same_bits("select", ~cond, 5, x)
    assert_same_bits("select", np.asfortranarray(np.ones((3, 4), bool)), np.ones((3, 4), np.int32), np.int32(7))
    out = run("numba", "select", cond, x, 0.0)
    assert out.dtype == np.float16 and not np.isnan(out).any()
