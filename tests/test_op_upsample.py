"""upsample_bilinear2d and upsample_nearest on the BASIC engine against hand-computed values,
plus every argument rule. Expected numbers are worked out in the comments (and agree with
torch.nn.functional.interpolate); the torch cross-check at the end is skipped without torch.

At the end, both on every engine under test (see conftest) against BASIC. nearest is bit-exact
for every dtype: integer repeats (the vector paths), gathers, 1-3 spatial dims, rows shorter and
longer than a work item's run or group. bilinear is within rounding (bit-exact on OPENCL, which
has no fused multiply-adds; NUMBA may fuse), for every float dtype, both corner modes, size and
scale_factor, up- and downsampling, NaN/Inf, large planes split into row blocks. On engines
with device tensors, device-resident inputs give device-resident results.
"""
import math

import numpy as np
import pytest

import polyeng
from support import device_tensor_or_skip, random_values as values
from polyeng.engine import dtypes as dt


F32, F64, F16, BF16 = polyeng.float32, polyeng.float64, polyeng.float16, polyeng.bfloat16


# The tests on BASIC take this fixture.
@pytest.fixture
def _basic_engine():
    with polyeng.compute_eng("basic", fallback=False):
        yield


def nchw(rows, dtype=F32):
    return np.asarray(rows, dtype=dtype)[None, None]


# --- bilinear: hand-computed values --------------------------------------------------------------

# 2 -> 4 with align_corners=False: step 1/2, source = max(0.5 * (d + 0.5) - 0.5, 0) = 0, .25, .75,
# 1.25 (clamped to the last pixel), so a row (a, b) becomes (a, .75a + .25b, .25a + .75b, b).
GRID_2x2 = [[0, 1], [2, 3]]
BILINEAR_4x4 = [[0.0, 0.25, 0.75, 1.0],
                [0.5, 0.75, 1.25, 1.5],
                [1.5, 1.75, 2.25, 2.5],
                [2.0, 2.25, 2.75, 3.0]]
# align_corners=True: step (2 - 1) / (4 - 1) = 1/3, source = 0, 1/3, 2/3, 1.
BILINEAR_4x4_CORNERS = [[0 + r + c / 3 for c in range(4)] for r in (0, 2 / 3, 4 / 3, 2)]


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("resize", [{"size": 4}, {"size": (4, 4)}, {"scale_factor": 2.0}, {"scale_factor": (2, 2)}])
def test_bilinear_2x2_to_4x4(dtype, resize):
    out = polyeng.upsample_bilinear2d(nchw(GRID_2x2, dtype), **resize)
    assert out.dtype == dtype and out.shape == (1, 1, 4, 4) and out.flags.c_contiguous
    np.testing.assert_array_equal(out[0, 0], BILINEAR_4x4)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [F32, F64])
def test_bilinear_2x2_to_4x4_align_corners(dtype):
    out = polyeng.upsample_bilinear2d(nchw(GRID_2x2, dtype), size=(4, 4), align_corners=True)
    tol = 1e-6 if dtype == F32 else 1e-14
    np.testing.assert_allclose(out[0, 0], BILINEAR_4x4_CORNERS, rtol=tol, atol=tol)
    same = polyeng.upsample_bilinear2d(nchw(GRID_2x2, dtype), scale_factor=2, align_corners=True)
    np.testing.assert_array_equal(same, out)  # align_corners ignores the scale_factor's value


# x[h, w] = 1000 h + 42 w on a 2 x 5 grid; bilinear reproduces a separable linear function at its
# (clamped) source coordinates.
RAMP_2x5 = [[1000 * h + 42 * w for w in range(5)] for h in range(2)]


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_scale_factor_1_5():
    # W: 5 -> 7, step 1/1.5: source (4d - 1) / 6 -> 0, .5, 7/6, 11/6, 2.5, 19/6, 23/6; times 42.
    # H: 2 -> 3, source 0, .5, 7/6 (past the last pixel: row 1).
    out = polyeng.upsample_bilinear2d(nchw(RAMP_2x5), scale_factor=1.5)
    expected = np.add.outer([0, 500, 1000], [0, 21, 49, 77, 105, 133, 161])
    np.testing.assert_allclose(out[0, 0], expected, rtol=1e-6)


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_size_differs_from_scale_factor():
    # size=7 steps by 5/7 instead of 1/1.5: source (5d - 1) / 7 -> 0, 4/7, 9/7, 2, 19/7, 24/7, 29/7
    # (clamped to pixel 4); times 42. torch gives the same pair of different answers.
    row = nchw(RAMP_2x5[:1])
    by_size = polyeng.upsample_bilinear2d(row, size=(1, 7))
    by_scale = polyeng.upsample_bilinear2d(row, scale_factor=(1.0, 1.5))
    np.testing.assert_allclose(by_size[0, 0, 0], [0, 24, 54, 84, 114, 144, 168], rtol=1e-6)
    np.testing.assert_allclose(by_scale[0, 0, 0], [0, 21, 49, 77, 105, 133, 161], rtol=1e-6)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [F32, F64])
def test_bilinear_downsample_0_5(dtype):
    x = np.arange(16, dtype=dtype).reshape(1, 1, 4, 4)  # x[h, w] = 4h + w
    # step 2: source 2d + 0.5 -> 0.5, 2.5 on both axes: 4 * (.5, 2.5) + (.5, 2.5)
    out = polyeng.upsample_bilinear2d(x, scale_factor=0.5)
    np.testing.assert_array_equal(out[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    # align_corners: step (4 - 1) / (2 - 1) = 3, the corners
    corners = polyeng.upsample_bilinear2d(x, scale_factor=0.5, align_corners=True)
    np.testing.assert_array_equal(corners[0, 0], [[0, 3], [12, 15]])


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_downsample_0_6():
    # W: 5 -> floor(3.0) = 3, step 1/0.6: source 1/3, 2, 11/3; times 3.
    out = polyeng.upsample_bilinear2d(nchw([[0, 3, 6, 9, 12]]), scale_factor=(1, 0.6))
    np.testing.assert_allclose(out[0, 0, 0], [1, 6, 11], rtol=1e-6)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_same_size_copies(align_corners):
    # 3 * 1.2 floors to 3: torch copies the input even though 1/1.2 would shift the samples
    x = np.arange(9, dtype=F32).reshape(1, 1, 3, 3)
    out = polyeng.upsample_bilinear2d(x, scale_factor=1.2, align_corners=align_corners)
    np.testing.assert_array_equal(out, x)


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_one_pixel_output_with_align_corners():
    # out = 1: align_corners uses step 0, so the sample is the first pixel
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    out = polyeng.upsample_bilinear2d(x, size=1, align_corners=True)
    np.testing.assert_array_equal(out, [[[[0]]]])


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_bilinear_16_bit_storage(dtype):
    out = polyeng.upsample_bilinear2d(nchw(GRID_2x2, dtype), size=4)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out[0, 0].astype(F32), BILINEAR_4x4)  # quarters are exact
    corners = polyeng.upsample_bilinear2d(nchw(GRID_2x2, dtype), size=4, align_corners=True)
    assert corners.dtype == dtype
    np.testing.assert_allclose(corners[0, 0].astype(F32), BILINEAR_4x4_CORNERS, rtol=2 ** -7)


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_batches_and_channels_are_independent():
    x = np.stack([np.asarray(GRID_2x2, F32) * k for k in range(6)]).reshape(2, 3, 2, 2)
    out = polyeng.upsample_bilinear2d(x, size=4)
    np.testing.assert_array_equal(out, np.asarray(BILINEAR_4x4, F32) * np.arange(6).reshape(2, 3, 1, 1))


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("view", ["reversed", "transposed"])
def test_bilinear_non_contiguous_input(view):
    if view == "reversed":  # negative strides on H
        x = nchw([[2, 3], [0, 1]])[:, :, ::-1, :]
    else:  # H and W swapped
        x = nchw([[0, 2], [1, 3]]).transpose(0, 1, 3, 2)
    assert not x.flags.c_contiguous
    out = polyeng.upsample_bilinear2d(x, size=4)
    np.testing.assert_array_equal(out[0, 0], BILINEAR_4x4)


@pytest.mark.usefixtures("_basic_engine")
def test_bilinear_zero_batch_or_channels():
    assert polyeng.upsample_bilinear2d(np.zeros((0, 3, 2, 2), F32), size=(3, 5)).shape == (0, 3, 3, 5)
    out = polyeng.upsample_bilinear2d(np.zeros((2, 0, 2, 2), F64), scale_factor=2)
    assert out.shape == (2, 0, 4, 4) and out.dtype == F64


# --- nearest: hand-computed values ---------------------------------------------------------------
# index = min(floor(d * step), in - 1), step = 1/scale_factor (f32) when given, else in/out.

@pytest.mark.usefixtures("_basic_engine")
def test_nearest_1d():
    x = np.asarray([10, 20, 30], F32)[None, None]
    # size 5: step 3/5 -> 0, .6, 1.2, 1.8, 2.4
    np.testing.assert_array_equal(polyeng.upsample_nearest(x, size=5)[0, 0], [10, 10, 20, 20, 30])
    # scale 1.2: floor(3.6) = 3 outputs, step 1/1.2 -> 0, .83, 1.67 (no identity shortcut in 1-D)
    np.testing.assert_array_equal(polyeng.upsample_nearest(x, scale_factor=1.2)[0, 0], [10, 10, 20])
    # scale 2.5 on 2: 5 outputs, step .4 -> 0, .4, .8, 1.2, 1.6
    np.testing.assert_array_equal(polyeng.upsample_nearest(x[..., :2], scale_factor=[2.5])[0, 0],
                                  [10, 10, 10, 20, 20])
    # scale 2.291 on 3: 6 outputs, step 1/2.291 -> floor 0, 0, 0, 1, 1, 2
    np.testing.assert_array_equal(polyeng.upsample_nearest(x, scale_factor=2.291)[0, 0],
                                  [10, 10, 10, 20, 20, 30])


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_2d():
    x = np.arange(6, dtype=F32).reshape(1, 1, 2, 3)
    # H: 2 -> 3, step 1/1.5 -> rows 0, 0, 1; W: 3 -> floor(2.1) = 2, step 1/.7 -> cols 0, 1
    out = polyeng.upsample_nearest(x, scale_factor=(1.5, 0.7))
    np.testing.assert_array_equal(out[0, 0], [[0, 1], [0, 1], [3, 4]])
    np.testing.assert_array_equal(polyeng.upsample_nearest(x, scale_factor=2)[0, 0],
                                  np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1))


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_2d_same_and_double_size_shortcuts():
    # In 2-D torch copies when out == in and takes d >> 1 when out == 2 * in, whatever the scale.
    x = np.arange(9, dtype=F32).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(polyeng.upsample_nearest(x, scale_factor=1.2), x)
    out = polyeng.upsample_nearest(x, scale_factor=2.291)
    np.testing.assert_array_equal(out[0, 0], np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1))


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_3d():
    x = np.arange(8, dtype=F32).reshape(1, 1, 2, 2, 2)  # x[d, h, w] = 4d + 2h + w
    # D: 2 -> 1 (plane 0); H: 2 -> 3, step 2/3 -> 0, 0, 1; W: 2 -> 4, step .5 -> 0, 0, 1, 1
    out = polyeng.upsample_nearest(x, size=(1, 3, 4))
    assert out.shape == (1, 1, 1, 3, 4)
    np.testing.assert_array_equal(out[0, 0, 0], [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]])
    # scale 1.2 on 3 keeps 3 outputs but samples 0, 0, 1 on every axis (no shortcut in 3-D)
    cube = np.arange(27, dtype=F32).reshape(1, 1, 3, 3, 3)
    out = polyeng.upsample_nearest(cube, scale_factor=1.2)
    np.testing.assert_array_equal(out[0, 0], cube[0, 0][np.ix_([0, 0, 1], [0, 0, 1], [0, 0, 1])])


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_3d_large_output_with_skipped_depth_and_repeated_rows():
    # An output over 1 MB, which BASIC writes a block of rows at a time. D: 4 -> 2, step 2 ->
    # 0, 2; H: 3 -> 5, step .6 -> 0, 0, 1, 1, 2; W: the same size, step 1. The first block's
    # source rows (0, 0, 1, 1, 2, 6, 6) span 7 rows without being 7 consecutive rows.
    x = np.arange(4 * 3 * 32768, dtype=F32).reshape(1, 1, 4, 3, 32768)
    out = polyeng.upsample_nearest(x, size=(2, 5, 32768))
    np.testing.assert_array_equal(out[0, 0], x[0, 0][[0, 2]][:, [0, 0, 1, 1, 2]])


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [polyeng.int8, polyeng.uint8, polyeng.int32, polyeng.int64, F64])
def test_nearest_integer_and_f64(dtype):
    x = np.asarray([[1, 2], [3, 4]], dtype)[None, None]
    out = polyeng.upsample_nearest(x, size=(3, 3))  # step 2/3 -> 0, 0, 1
    assert out.dtype == dtype
    np.testing.assert_array_equal(out[0, 0], [[1, 1, 2], [1, 1, 2], [3, 3, 4]])


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_bool():
    x = np.asarray([True, False, True])[None, None]
    out = polyeng.upsample_nearest(x, scale_factor=1.5)  # 4 outputs, step 2/3 -> 0, 0, 1, 2
    assert out.dtype == polyeng.bool_
    np.testing.assert_array_equal(out[0, 0], [True, True, False, True])


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_nearest_16_bit_copies_bits(dtype):
    values = np.asarray([1.0009765625, -3.140625, 65504.0 if dtype == F16 else 3.0e38, np.nan], F32)
    x = values.astype(dtype).reshape(1, 1, 2, 2)
    out = polyeng.upsample_nearest(x, size=(2, 4))  # W: step .5 -> 0, 0, 1, 1
    assert out.dtype == dtype
    expected = x[..., [0, 0, 1, 1]]
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.usefixtures("_basic_engine")
def test_nearest_non_contiguous_input():
    x = np.arange(6, dtype=F32).reshape(1, 1, 3, 2).transpose(0, 1, 3, 2)  # [[0, 2, 4], [1, 3, 5]]
    out = polyeng.upsample_nearest(x, scale_factor=(1.5, 0.7))
    np.testing.assert_array_equal(out[0, 0], [[0, 2], [0, 2], [1, 3]])
    reversed_w = np.asarray([30, 20, 10], F32)[None, None, ::-1]
    np.testing.assert_array_equal(polyeng.upsample_nearest(reversed_w, size=5)[0, 0], [10, 10, 20, 20, 30])


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("shape,size,expected", [
    ((0, 2, 3), 5, (0, 2, 5)),
    ((2, 0, 3, 3), (4, 2), (2, 0, 4, 2)),
    ((0, 1, 2, 2, 2), 3, (0, 1, 3, 3, 3)),
])
def test_nearest_zero_batch_or_channels(shape, size, expected):
    out = polyeng.upsample_nearest(np.zeros(shape, polyeng.int8), size=size)
    assert out.shape == expected and out.dtype == polyeng.int8


@pytest.mark.usefixtures("_basic_engine")
def test_upsample_runs_on_basic_and_is_follow():
    decision = polyeng.explain("upsample_bilinear2d", nchw(GRID_2x2, F16), size=4)
    assert decision.engine == "basic"
    assert polyeng.explain(polyeng.upsample_nearest, nchw(GRID_2x2), size=4).engine == "basic"


# --- bad arguments ---------------------------------------------------------------------------------

X4 = np.zeros((1, 1, 2, 2), F32)
BAD_RESIZE = [
    ({}, ValueError, r"size=None and scale_factor=None"),
    ({"size": 4, "scale_factor": 2.0}, ValueError, r"size=4 and scale_factor=2.0.*not both"),
    ({"size": 0}, ValueError, r"size=0"),
    ({"size": (4, -1)}, ValueError, r"size=\(4, -1\)"),
    ({"size": 2.0}, TypeError, r"size=2.0"),
    ({"size": (4, True)}, TypeError, r"size=\(4, True\)"),
    ({"size": "4"}, TypeError, r"size='4'"),
    ({"size": (4,)}, ValueError, r"size=\(4,\) has 1 entry"),
    ({"size": [4, 4, 4]}, ValueError, r"size=\(4, 4, 4\) has 3 entries"),
    ({"scale_factor": 0}, ValueError, r"scale_factor=0"),
    ({"scale_factor": -2.0}, ValueError, r"scale_factor=-2.0"),
    ({"scale_factor": math.inf}, ValueError, r"scale_factor=inf"),
    ({"scale_factor": (2.0, math.nan)}, ValueError, r"scale_factor=\(2.0, nan\)"),
    ({"scale_factor": (2, 10 ** 400)}, ValueError, r"scale_factor=\(2, 1000.*0\): every value must be a finite"),
    ({"scale_factor": True}, TypeError, r"scale_factor=True"),
    ({"scale_factor": "2"}, TypeError, r"scale_factor='2'"),
    ({"scale_factor": (2.0,)}, ValueError, r"scale_factor=\(2.0,\) has 1 entry"),
    ({"scale_factor": 0.4}, ValueError, r"scale_factor=0.4 on spatial sizes \(2, 2\) gives output sizes \(0, 0\)"),
]


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("op", [polyeng.upsample_bilinear2d, polyeng.upsample_nearest])
@pytest.mark.parametrize("kwargs,error,message", BAD_RESIZE)
def test_bad_size_or_scale_factor(op, kwargs, error, message):
    with pytest.raises(error, match=message):
        op(X4, **kwargs)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("op", [polyeng.upsample_bilinear2d, polyeng.upsample_nearest])
def test_empty_spatial_input_is_rejected(op):
    with pytest.raises(ValueError, match=r"x has shape \(1, 1, 0, 2\).*spatial size"):
        op(np.zeros((1, 1, 0, 2), F32), size=4)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("dtype", [polyeng.int32, polyeng.uint8, polyeng.bool_])
def test_bilinear_rejects_integer_and_bool(dtype):
    with pytest.raises(TypeError, match=r"x has dtype .*upsample_bilinear2d expects a floating-point"):
        polyeng.upsample_bilinear2d(np.zeros((1, 1, 2, 2), dtype), size=4)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("shape", [(1, 2, 2), (1, 1, 1, 2, 2), (2, 2)])
def test_bilinear_rejects_wrong_rank(shape):
    with pytest.raises(ValueError, match=r"x has shape .*upsample_bilinear2d expects a 4-D array"):
        polyeng.upsample_bilinear2d(np.zeros(shape, F32), size=4)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("shape", [(4,), (2, 4), (1, 1, 1, 1, 2, 2)])
def test_nearest_rejects_wrong_rank(shape):
    with pytest.raises(ValueError, match=r"x has shape .*upsample_nearest expects a 3-D or 4-D or 5-D"):
        polyeng.upsample_nearest(np.zeros(shape, F32), size=4)


@pytest.mark.usefixtures("_basic_engine")
@pytest.mark.parametrize("value", [1, None, "yes"])
def test_bilinear_align_corners_must_be_bool(value):
    with pytest.raises(TypeError, match=r"align_corners="):
        polyeng.upsample_bilinear2d(X4, size=4, align_corners=value)


@pytest.mark.usefixtures("_basic_engine")
def test_unsupported_dtype_is_rejected():
    with pytest.raises(TypeError, match=r"x has dtype complex64"):
        polyeng.upsample_nearest(np.zeros((1, 1, 2), np.complex64), size=4)


# --- optional cross-check against torch ------------------------------------------------------------

@pytest.mark.usefixtures("_basic_engine")
def test_matches_torch_on_random_cases():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(7)
    for _ in range(120):
        dtype = F32 if rng.integers(2) else F64
        shape = (2, 3) + tuple(int(v) for v in rng.integers(1, 9, 2))
        x = rng.standard_normal(shape).astype(dtype)
        align_corners = bool(rng.integers(2))
        if rng.integers(2):
            resize = {"size": tuple(int(v) for v in rng.integers(1, 17, 2))}
        else:
            resize = {"scale_factor": tuple(float(v) for v in np.round(rng.uniform(0.2, 3.5, 2), 2))}
            if any(math.floor(i * s) < 1 for i, s in zip(shape[2:], resize["scale_factor"])):
                continue
        want = functional.interpolate(torch.from_numpy(x), mode="bilinear", align_corners=align_corners,
                                      **resize).numpy()
        got = polyeng.upsample_bilinear2d(x, align_corners=align_corners, **resize)
        tol = 1e-5 if dtype == F32 else 1e-12  # torch's compiled kernel contracts to FMA
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

        spatial = tuple(int(v) for v in rng.integers(1, 7, int(rng.integers(1, 4))))
        x = rng.standard_normal((1, 2) + spatial).astype(F32)
        if rng.integers(2):
            resize = {"size": tuple(int(v) for v in rng.integers(1, 13, len(spatial)))}
        else:
            resize = {"scale_factor": tuple(float(v) for v in np.round(rng.uniform(0.3, 3.0, len(spatial)), 3))}
            if any(math.floor(i * s) < 1 for i, s in zip(spatial, resize["scale_factor"])):
                continue
        want = functional.interpolate(torch.from_numpy(x), mode="nearest", **resize).numpy()
        np.testing.assert_array_equal(polyeng.upsample_nearest(x, **resize), want)


@pytest.mark.usefixtures("_basic_engine")
def test_sizes_and_scales_as_numpy_arrays_read_as_their_values():
    x = np.ones((1, 1, 3, 3), np.float32)
    assert polyeng.upsample_nearest(x, size=np.array(4)).shape == (1, 1, 4, 4)
    assert polyeng.upsample_nearest(x, size=np.array([4, 5], np.int32)).shape == (1, 1, 4, 5)
    assert polyeng.upsample_bilinear2d(x, scale_factor=np.array([2.0, 1.5])).shape == (1, 1, 6, 4)
    with pytest.raises(TypeError, match="size=.*expected an int or a sequence of 2 ints"):
        polyeng.upsample_nearest(x, size=np.array([4.5, 5.0]))
    with pytest.raises(ValueError, match="has 3 entries but x has 2 spatial dims"):
        polyeng.upsample_nearest(x, size=np.array([4, 5, 6]))


# --- every engine against BASIC -------------------------------------------------------------------

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


@pytest.mark.uses_ops("upsample_bilinear2d")
def test_bilinear_large_planes_split_into_row_blocks(engine):
    x = np.random.default_rng(3).standard_normal((1, 1, 40, 31)).astype(np.float32)
    expected = run("basic", "upsample_bilinear2d", x, size=(97, 64))
    actual = run(engine, "upsample_bilinear2d", x, size=(97, 64))
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-5)
