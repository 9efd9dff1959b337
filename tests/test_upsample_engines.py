"""upsample_nearest and upsample_bilinear2d on every engine under test (see conftest) against
BASIC.

nearest is bit-exact for every dtype: integer repeats (the vector paths), gathers, 1-3 spatial
dims, rows shorter and longer than a work item's run or group. bilinear is within rounding
(bit-exact on OPENCL, which has no fused multiply-adds; NUMBA may fuse), for every float dtype,
both corner modes, size and scale_factor, up- and downsampling, NaN/Inf. On engines with
device tensors, device-resident inputs give device-resident results.
"""
import numpy as np
import pytest

import polyeng
from support import device_tensor_or_skip, random_values as values
from polyeng.engine import dtypes as dt

BIT_EXACT_BILINEAR = {"opencl"}   # engines computing BASIC's products and sums in its order
FLOATS = [np.float32, np.float64, np.float16, dt.bfloat16]
ALL = FLOATS + [np.int8, np.uint8, np.int32, np.int64, np.bool_]


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def assert_same_bits(engine, op, x, **kwargs):
    expected = np.asarray(run("basic", op, x, **kwargs))
    actual = run(engine, op, x, **kwargs)
    assert isinstance(actual, np.ndarray) and actual.flags.c_contiguous
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


# --- nearest -----------------------------------------------------------------------------------

@pytest.mark.uses_ops("upsample_nearest")
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_nearest_every_dtype_bit_exact(engine, dtype):
    rng = np.random.default_rng(0)
    x = values(rng, (2, 3, 7, 13), dtype)
    for resize in [{"scale_factor": 2}, {"scale_factor": 4}, {"size": (14, 13)}, {"size": (5, 17)},
                   {"scale_factor": 3}, {"scale_factor": 0.5}]:
        assert_same_bits(engine, "upsample_nearest", x, **resize)


@pytest.mark.uses_ops("upsample_nearest")
@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"scale_factor": 3}, {"scale_factor": 0.5},
                                    {"scale_factor": 1.2}, {"size": 1}, {"size": 11}])
@pytest.mark.parametrize("spatial", [(13,), (7, 2), (2, 7), (3, 5, 4)])
def test_nearest_1d_2d_3d(engine, spatial, resize):
    assert_same_bits(engine, "upsample_nearest", values(np.random.default_rng(1), (2, 3) + spatial, np.float16), **resize)


@pytest.mark.uses_ops("upsample_nearest")
@pytest.mark.parametrize("width", [1, 8, 9, 31, 600])
def test_nearest_rows_around_runs_and_groups(engine, width):
    # widths x1, x2, x4 and gathered, below, at and past a run of 16 outputs, and rows split
    # over several groups
    rng = np.random.default_rng(width)
    for dtype in (np.uint8, np.float32, np.int64):
        x = values(rng, (1, 2, 3, width), dtype)
        assert_same_bits(engine, "upsample_nearest", x, scale_factor=2)
        assert_same_bits(engine, "upsample_nearest", x, scale_factor=(1, 4))
        assert_same_bits(engine, "upsample_nearest", x, scale_factor=(2, 1))
        assert_same_bits(engine, "upsample_nearest", x, size=(3, 2 * width + 1))


@pytest.mark.uses_ops("upsample_nearest")
def test_nearest_per_dim_arguments_and_odd_sizes(engine):
    rng = np.random.default_rng(2)
    assert_same_bits(engine, "upsample_nearest", values(rng, (1, 3, 5, 7, 9), dt.float64), size=(2, 9, 16))
    assert_same_bits(engine, "upsample_nearest", values(rng, (3, 1, 7, 5), dt.bool_), scale_factor=(1.7, 0.6))
    assert_same_bits(engine, "upsample_nearest", values(rng, (1, 1, 1), dt.uint8), size=257)
    assert_same_bits(engine, "upsample_nearest", values(rng, (2, 2, 3, 4, 5), dt.int32), scale_factor=(3, 2, 2))


# --- bilinear ----------------------------------------------------------------------------------

RESIZES = [{"scale_factor": 2.0}, {"scale_factor": (1.7, 0.6)}, {"size": (1, 13)}, {"size": (7, 7)},
           {"size": (3, 2)}, {"scale_factor": 1.2}, {"scale_factor": 0.5}, {"size": (40, 37)}]


def assert_bilinear_matches(engine, x, **kwargs):
    expected = run("basic", "upsample_bilinear2d", x, **kwargs)
    assert_bilinear_close(engine, run(engine, "upsample_bilinear2d", x, **kwargs), expected)


def assert_bilinear_close(engine, actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if engine in BIT_EXACT_BILINEAR:
        # the same products and sums in the same order, each rounded as numpy rounds it
        nan = np.isnan(expected.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(actual.astype(np.float64)), nan)
        assert actual[~nan].tobytes() == expected[~nan].tobytes()
    else:
        ulp = 2.0 ** -7 if expected.dtype == dt.bfloat16 else float(np.finfo(expected.dtype).eps)
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=2 * ulp,
                                   atol=20 * ulp)


@pytest.mark.uses_ops("upsample_bilinear2d")
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", RESIZES)
def test_bilinear_matches_basic(engine, dtype, align_corners, resize):
    x = (np.random.default_rng(3).standard_normal((2, 3, 7, 9)) * 10).astype(np.float32).astype(dtype)
    assert_bilinear_matches(engine, x, align_corners=align_corners, **resize)


@pytest.mark.uses_ops("upsample_bilinear2d")
def test_bilinear_nan_and_inf_propagate(engine):
    x = np.arange(2 * 25, dtype=np.float32).reshape(1, 2, 5, 5)
    x[0, 0, 2, 2], x[0, 1, 0, 0], x[0, 1, 4, 3] = np.nan, np.inf, -np.inf
    for align_corners in (False, True):
        expected = run("basic", "upsample_bilinear2d", x, scale_factor=2, align_corners=align_corners)
        actual = run(engine, "upsample_bilinear2d", x, scale_factor=2, align_corners=align_corners)
        np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
        np.testing.assert_array_equal(np.isinf(actual), np.isinf(expected))
        np.testing.assert_array_equal(actual[np.isinf(actual)], expected[np.isinf(expected)])


@pytest.mark.uses_ops("upsample_bilinear2d")
def test_bilinear_long_rows_and_large_planes(engine):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 1, 40, 31)).astype(np.float32)
    assert_bilinear_matches(engine, x, size=(97, 64))
    wide = rng.standard_normal((2, 1, 3, 700)).astype(np.float32)   # rows of several groups
    assert_bilinear_matches(engine, wide, scale_factor=(1.0, 2.0))
    assert_bilinear_matches(engine, wide[:, :, :, ::-1], size=(5, 333), align_corners=True)


@pytest.mark.uses_ops("upsample_nearest", "upsample_bilinear2d")
@pytest.mark.parametrize("op,kwargs", [("upsample_bilinear2d", {"x": np.ones((1, 1, 2, 2), np.int32), "size": 3}),
                                       ("upsample_bilinear2d", {"x": np.ones((1, 2, 2)), "size": 3}),
                                       ("upsample_nearest", {"x": np.ones((1, 1, 2)), "size": 2,
                                                             "scale_factor": 2}),
                                       ("upsample_nearest", {"x": np.ones((1, 1, 2)), "scale_factor": 0.1})])
def test_bad_arguments_are_rejected(engine, op, kwargs):
    with pytest.raises((TypeError, ValueError)):
        run(engine, op, **kwargs)


# --- device-resident inputs (engines with device tensors) ---------------------------------------

@pytest.mark.device_tensors
@pytest.mark.uses_ops("upsample_nearest", "upsample_bilinear2d")
@pytest.mark.parametrize("dtype", FLOATS + [np.int8], ids=lambda d: np.dtype(d).name)
def test_device_inputs_give_device_results(engine, dtype):
    x = values(np.random.default_rng(5), (2, 3, 5, 19), dtype)
    t = device_tensor_or_skip(x, engine)
    cases = [("upsample_nearest", {"scale_factor": 2}), ("upsample_nearest", {"size": (3, 11)})]
    if np.dtype(dtype) in dt.FLOAT_DTYPES:
        cases += [("upsample_bilinear2d", {"scale_factor": 2}), ("upsample_bilinear2d", {"size": (4, 7),
                                                                                         "align_corners": True})]
    for op, kwargs in cases:
        actual = run(engine, op, t, **kwargs)
        assert type(actual) is type(t)
        expected = np.asarray(run("basic", op, x, **kwargs))
        got = polyeng.to_numpy(actual)
        if op == "upsample_nearest":
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert got.tobytes() == expected.tobytes()
        else:
            assert_bilinear_close(engine, got, expected)
