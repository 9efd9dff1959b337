"""avg_pool2d/3d and max_pool2d/3d on the BASIC engine against hand-computed values, and
every argument rule. Values were worked out by hand and agree with torch.nn.functional.

At the end, pooling on every engine under test (see conftest) against BASIC: every option,
integer and bool storage, NaN/Inf and tie rules, odd sizes, unbatched input. Max pooling matches
bit for bit (values and indices); avg pooling within rounding, and bit for bit on OPENCL, which
sums the taps in BASIC's order (NUMBA may fuse multiply-adds). Device-resident inputs stay on the
device on engines that have them."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from polyeng.ops import pooling as geo
from support import device_tensor_or_skip


FLOATS = [np.float32, np.float64]
NAN, INF = np.nan, np.inf


def basic(fn, *args, **kwargs):
    with polyeng.compute_eng("basic", fallback=False):
        return fn(*args, **kwargs)


def arange4x4(dtype=np.float32):
    return np.arange(16, dtype=dtype).reshape(1, 1, 4, 4)


X5 = np.array([[3, -1, 0, 2, 5],
               [1, 4, -2, 0, 1],
               [0, 0, 7, -3, 2],
               [6, -4, 1, 1, 0],
               [2, 2, -5, 8, 1]])


# ---------------------------------------------------------------- geometry

@pytest.mark.parametrize("size, kernel, stride, padding, dilation, ceil_mode, expected", [
    (4, 2, 2, 0, 1, False, 2),
    (5, 2, 2, 0, 1, False, 2),
    (5, 2, 2, 0, 1, True, 3),     # overhanging last window kept: it starts inside the input
    (5, 2, 2, 1, 1, True, 3),     # a 4th window would start in the right padding: dropped
    (5, 3, 2, 1, 1, False, 3),
    (5, 2, 1, 0, 2, False, 3),    # dilated window spans 3
    (4, 5, 5, 0, 1, False, 0),    # too small; validation rejects it
])
def test_output_size(size, kernel, stride, padding, dilation, ceil_mode, expected):
    assert geo.output_size(size, kernel, stride, padding, dilation, ceil_mode) == expected


def test_avg_divisor_and_first_valid_index():
    g = geo.geometry((1, 5), (1, 3), (1, 2), (0, 1), None, True)
    assert g.out == (1, 3)
    # windows [-1, 2), [1, 4), [3, 6): clipped to the padded input [-1, 6)
    np.testing.assert_array_equal(geo.avg_divisor(g, True, None), [[3, 3, 3]])
    np.testing.assert_array_equal(geo.avg_divisor(g, False, None), [[2, 3, 2]])
    np.testing.assert_array_equal(geo.avg_divisor(g, True, 7), [[7, 7, 7]])
    g = geo.geometry((2, 2), (2, 2), (1, 1), (1, 1), (3, 3), False)
    # taps at -1 and 2: none inside, the reported index is past the plane (as PyTorch does)
    np.testing.assert_array_equal(geo.first_valid_index(g), [[6]])


# ---------------------------------------------------------------- avg pooling

@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool2d_plain(dtype):
    y = basic(polyeng.avg_pool2d, arange4x4(dtype), 2)
    assert y.dtype == dtype and y.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(y[0, 0], [[2.5, 4.5], [10.5, 12.5]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool2d_padding_and_count_include_pad(dtype):
    x = arange4x4(dtype)
    # window sums 10, 24, 51, 90 over 4, 6, 6, 9 in-bounds elements
    y = basic(polyeng.avg_pool2d, x, 3, stride=2, padding=1)
    np.testing.assert_allclose(y[0, 0], np.array([[10, 24], [51, 90]]) / 9, rtol=1e-6)
    y = basic(polyeng.avg_pool2d, x, 3, stride=2, padding=1, count_include_pad=False)
    np.testing.assert_array_equal(y[0, 0], [[2.5, 4.0], [8.5, 10.0]])


@pytest.mark.parametrize("count_include_pad, expected", [(True, [1 / 3, 2, 7 / 3]), (False, [0.5, 2, 3.5])])
def test_avg_pool2d_ceil_mode_overhang(count_include_pad, expected):
    x = np.arange(5, dtype=np.float64).reshape(1, 1, 1, 5)
    y = basic(polyeng.avg_pool2d, x, (1, 3), stride=2, padding=(0, 1), ceil_mode=True,
              count_include_pad=count_include_pad)
    # the last window [3, 6) overhangs the right padding by one: that tap is never counted
    np.testing.assert_allclose(y[0, 0, 0], expected, rtol=1e-15)
    y = basic(polyeng.avg_pool2d, x, (1, 2), ceil_mode=True)
    np.testing.assert_array_equal(y[0, 0, 0], [0.5, 2.5, 4.0])


def test_avg_pool2d_divisor_override():
    x = arange4x4()
    np.testing.assert_allclose(basic(polyeng.avg_pool2d, x, 2, divisor_override=3)[0, 0],
                               np.array([[10, 18], [42, 50]]) / 3, rtol=1e-6)
    np.testing.assert_array_equal(basic(polyeng.avg_pool2d, x, 2, divisor_override=-2)[0, 0],
                                  [[-5, -9], [-21, -25]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool3d(dtype):
    x = np.arange(8, dtype=dtype).reshape(1, 1, 2, 2, 2)
    np.testing.assert_array_equal(basic(polyeng.avg_pool3d, x, 2), [[[[[3.5]]]]])
    # each padded 2x2x2 window holds exactly one element
    y = basic(polyeng.avg_pool3d, x, 2, stride=2, padding=1)
    np.testing.assert_array_equal(y, x / 8)
    y = basic(polyeng.avg_pool3d, x, 2, stride=2, padding=1, count_include_pad=False)
    np.testing.assert_array_equal(y, x)
    cube = np.arange(27, dtype=dtype).reshape(1, 3, 3, 3)  # unbatched (C, D, H, W)
    y = basic(polyeng.avg_pool3d, cube, 2, stride=2, ceil_mode=True)
    assert y.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(y[0], [[[6.5, 8], [11, 12.5]], [[20, 21.5], [24.5, 26]]])
    y = basic(polyeng.avg_pool3d, cube, 2, stride=2, ceil_mode=True, divisor_override=2)
    np.testing.assert_array_equal(y[0], [[[26, 16], [22, 12.5]], [[40, 21.5], [24.5, 13]]])


@pytest.mark.parametrize("dtype", [polyeng.float16, polyeng.bfloat16])
def test_avg_pool_16_bit_storage(dtype):
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 9]]]], dtype=dtype)
    y = basic(polyeng.avg_pool2d, x, (1, 4))
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.astype(np.float32), [[[[2.5], [6.75]]]])


def test_avg_pool_unbatched_noncontiguous_and_empty():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 7, 6))
    batched = basic(polyeng.avg_pool2d, x, 3, stride=2, padding=1)
    np.testing.assert_array_equal(basic(polyeng.avg_pool2d, x[1], 3, stride=2, padding=1), batched[1])
    view = x.transpose(1, 0, 3, 2)[:, :, ::-1]
    np.testing.assert_array_equal(basic(polyeng.avg_pool2d, view, 2, 1),
                                  basic(polyeng.avg_pool2d, np.ascontiguousarray(view), 2, 1))
    y = basic(polyeng.avg_pool3d, np.zeros((0, 2, 5, 5, 5), np.float32), 2)
    assert y.shape == (0, 2, 2, 2, 2) and y.dtype == np.float32
    y = basic(polyeng.max_pool2d, np.zeros((2, 0, 5, 5), np.float16), 2)   # empty channel axis too
    assert y.shape == (2, 0, 2, 2) and y.dtype == np.float16


# ---------------------------------------------------------------- max pooling

@pytest.mark.parametrize("dtype", FLOATS + [np.int8, np.int32, np.int64])
def test_max_pool2d_values_indices_and_ties(dtype):
    x = np.array([[[[1, 3, 2, 0], [4, -1, 5, 6], [7, 8, -2, -3], [0, 9, 1, 1]]]], dtype=dtype)
    values, indices = basic(polyeng.max_pool2d, x, 2, return_indices=True)
    assert values.dtype == dtype and indices.dtype == np.int64
    np.testing.assert_array_equal(values[0, 0], [[4, 6], [9, 1]])
    np.testing.assert_array_equal(indices[0, 0], [[4, 7], [13, 14]])  # tie of 1s: the first
    np.testing.assert_array_equal(basic(polyeng.max_pool2d, x, 2), values)


def test_max_pool2d_dilation():
    x = X5.astype(np.float32).reshape(1, 1, 5, 5)
    values, indices = basic(polyeng.max_pool2d, x, 2, stride=1, dilation=2, return_indices=True)
    np.testing.assert_array_equal(values[0, 0], [[7, 2, 7], [6, 4, 1], [7, 8, 7]])
    np.testing.assert_array_equal(indices[0, 0], [[12, 3, 12], [15, 6, 9], [12, 23, 12]])
    # taps {-1, 1}, {1, 3}, {3, 5} per axis: padding and the tap past the edge never win
    values, indices = basic(polyeng.max_pool2d, x, 2, stride=2, padding=1, dilation=2, ceil_mode=True,
                            return_indices=True)
    np.testing.assert_array_equal(values[0, 0], [[4, 4, 0], [4, 4, 1], [-4, 1, 1]])
    np.testing.assert_array_equal(indices[0, 0], [[6, 6, 8], [6, 6, 18], [16, 18, 18]])


@pytest.mark.parametrize("dtype", FLOATS + [polyeng.float16, polyeng.bfloat16])
def test_max_pool_nan_and_infinity(dtype):
    row = np.array([[[[1, NAN, 3, NAN, 2]]]], dtype=dtype)
    values, indices = basic(polyeng.max_pool2d, row, (1, 5), return_indices=True)
    assert values.dtype == dtype and np.isnan(values.astype(np.float64)).all()
    assert indices.item() == 3  # a NaN takes over even from a NaN: the last one is reported
    row = np.array([[[[-INF, -INF, -INF]]]], dtype=dtype)
    values, indices = basic(polyeng.max_pool2d, row, (1, 3), stride=1, padding=(0, 1), return_indices=True)
    np.testing.assert_array_equal(values.astype(np.float64), [[[[-INF, -INF, -INF]]]])
    np.testing.assert_array_equal(indices, [[[[0, 0, 1]]]])  # each window's first in-bounds tap


def test_max_pool_signed_zero_tie_keeps_first():
    values, indices = basic(polyeng.max_pool2d, np.array([[[[-0.0, 0.0, 0.0, -0.0]]]]), (1, 2),
                            return_indices=True)
    np.testing.assert_array_equal(np.signbit(values), [[[[True, False]]]])
    np.testing.assert_array_equal(indices, [[[[0, 2]]]])


@pytest.mark.parametrize("dtype, lowest", [(np.float32, -INF), (np.int32, np.iinfo(np.int32).min)])
def test_max_pool_window_without_taps_inside(dtype, lowest):
    x = np.arange(4, dtype=dtype).reshape(1, 1, 2, 2)
    values, indices = basic(polyeng.max_pool2d, x, 2, padding=1, dilation=3, return_indices=True)
    assert values.item() == lowest and indices.item() == 6


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_max_pool_integer_lowest_values(dtype):
    low = np.iinfo(dtype).min
    x = np.full((1, 1, 2, 2), low, dtype=dtype)
    values, indices = basic(polyeng.max_pool2d, x, 2, stride=2, padding=1, return_indices=True)
    assert values.dtype == dtype
    np.testing.assert_array_equal(values, np.full((1, 1, 2, 2), low))
    np.testing.assert_array_equal(indices[0, 0], [[0, 1], [2, 3]])
    x = np.array([[[[-5, 100], [-6, 127]]]], dtype=np.int8) if dtype == np.int8 else \
        np.array([[[[200, 255], [7, 255]]]], dtype=np.uint8) if dtype == np.uint8 else \
        np.array([[[[2**31 - 1, -2**31], [2**31 - 1, 0]]]], dtype=np.int32)
    values, indices = basic(polyeng.max_pool2d, x, 2, return_indices=True)
    assert values.item() == x.max() and indices.item() == int(np.argmax(x.ravel()))


def test_max_pool_bool():
    x = np.array([[[[False, True, False], [False, False, False], [True, False, False]]]])
    values, indices = basic(polyeng.max_pool2d, x, 2, stride=1, return_indices=True)
    assert values.dtype == np.bool_
    np.testing.assert_array_equal(values[0, 0], [[True, True], [True, False]])
    np.testing.assert_array_equal(indices[0, 0], [[1, 1], [6, 4]])
    np.testing.assert_array_equal(basic(polyeng.max_pool2d, x.transpose(0, 1, 3, 2), 2, 1)[0, 0],
                                  [[True, True], [True, False]])


@pytest.mark.parametrize("dtype", FLOATS + [np.uint8])
def test_max_pool3d(dtype):
    cube = np.arange(27, dtype=dtype).reshape(1, 3, 3, 3)  # unbatched (C, D, H, W)
    values, indices = basic(polyeng.max_pool3d, cube, 2, stride=1, return_indices=True)
    expected = 13 + np.arange(2)[:, None, None] * 9 + np.arange(2)[:, None] * 3 + np.arange(2)
    np.testing.assert_array_equal(values[0], expected)
    np.testing.assert_array_equal(indices[0], expected)
    values, indices = basic(polyeng.max_pool3d, cube[None], 2, stride=2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(indices[0, 0], [[[13, 14], [16, 17]], [[22, 23], [25, 26]]])
    np.testing.assert_array_equal(values, indices.astype(dtype))


def test_max_pool3d_negated_keeps_first_and_signed_zero():
    cube = -np.arange(27.0).reshape(1, 1, 3, 3, 3)
    values, indices = basic(polyeng.max_pool3d, cube, 2, stride=2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(indices[0, 0], [[[0, 2], [6, 8]], [[18, 20], [24, 26]]])
    np.testing.assert_array_equal(values, -indices)
    assert np.signbit(values[0, 0, 0, 0, 0])


@pytest.mark.parametrize("dtype", [polyeng.float16, polyeng.bfloat16])
def test_max_pool_16_bit_storage(dtype):
    x = X5.astype(dtype).reshape(1, 5, 5)
    values, indices = basic(polyeng.max_pool2d, x, 3, stride=2, padding=1, return_indices=True)
    assert values.dtype == dtype
    np.testing.assert_array_equal(values.astype(np.float32), [[[4, 4, 5], [6, 7, 2], [6, 8, 8]]])
    np.testing.assert_array_equal(indices, [[[6, 6, 4], [15, 12, 14], [15, 23, 23]]])


def test_max_pool_noncontiguous_and_empty():
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 3, size=(3, 2, 9, 8)).astype(np.float32)
    view = x.transpose(1, 0, 3, 2)[:, :, ::-1, ::-2]
    got = basic(polyeng.max_pool2d, view, 3, stride=2, padding=1, return_indices=True)
    want = basic(polyeng.max_pool2d, np.ascontiguousarray(view), 3, stride=2, padding=1, return_indices=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    values, indices = basic(polyeng.max_pool3d, np.zeros((0, 2, 4, 4, 4), np.int8), 2, return_indices=True)
    assert values.shape == indices.shape == (0, 2, 2, 2, 2)
    assert values.dtype == np.int8 and indices.dtype == np.int64


# ---------------------------------------------------------------- argument rules

X = np.zeros((1, 1, 4, 4), np.float32)
X3 = np.zeros((1, 1, 4, 4, 4), np.float32)


@pytest.mark.parametrize("fn, args, kwargs, error, match", [
    (polyeng.avg_pool2d, (np.zeros((1, 1, 4, 4), np.int32), 2), {}, TypeError, r"^x has dtype int32.*floating"),
    (polyeng.avg_pool3d, (np.zeros((1, 1, 4, 4, 4), bool), 2), {}, TypeError, r"^x has dtype bool"),
    (polyeng.max_pool2d, (np.zeros((1, 1, 4, 4), np.complex64), 2), {}, TypeError, r"^x has dtype complex64"),
    (polyeng.max_pool2d, (None, 2), {}, TypeError, r"^x=None"),
    (polyeng.avg_pool2d, (np.zeros((4, 4), np.float32), 2), {}, ValueError, r"^x has shape \(4, 4\).*3-D or 4-D"),
    (polyeng.max_pool3d, (np.zeros((4, 4, 4)), 2), {}, ValueError, r"^x has shape \(4, 4, 4\).*4-D or 5-D"),
    (polyeng.max_pool2d, (np.zeros((1, 2, 0, 4)), 2), {}, ValueError, r"^x has shape \(1, 2, 0, 4\).*non-zero spatial"),
    (polyeng.avg_pool2d, (np.zeros((3, 4, 0)), 2), {}, ValueError, r"^x has shape \(3, 4, 0\).*non-zero"),
    (polyeng.max_pool3d, (np.zeros((1, 1, 4, 0, 4)), 1), {}, ValueError, r"^x has shape.*non-zero"),
    (polyeng.avg_pool2d, (X, 0), {}, ValueError, r"^kernel_size=0.*>= 1"),
    (polyeng.max_pool3d, (X3, (2, 0, 2)), {}, ValueError, r"^kernel_size=\(2, 0, 2\).*>= 1"),
    (polyeng.avg_pool2d, (X, (2, 2, 2)), {}, ValueError, r"^kernel_size=\(2, 2, 2\).*2 ints"),
    (polyeng.max_pool3d, (X3, (2, 2)), {}, ValueError, r"^kernel_size=\(2, 2\).*3 ints"),
    (polyeng.avg_pool2d, (X, 2.0), {}, TypeError, r"^kernel_size=2.0"),
    (polyeng.max_pool2d, (X, 2), {"stride": 0}, ValueError, r"^stride=0.*>= 1"),
    (polyeng.avg_pool3d, (X3, 2), {"stride": (1, -1, 1)}, ValueError, r"^stride=\(1, -1, 1\)"),
    (polyeng.avg_pool2d, (X, 2), {"stride": "2"}, TypeError, r"^stride='2'"),
    (polyeng.avg_pool2d, (X, 3), {"padding": -1}, ValueError, r"^padding=-1.*>= 0"),
    (polyeng.avg_pool2d, (X, 3), {"padding": 2}, ValueError, r"^padding=\(2, 2\).*half of the kernel"),
    (polyeng.max_pool2d, (X, (3, 2)), {"padding": (1, 2)}, ValueError, r"^padding=\(1, 2\).*at most \(1, 1\)"),
    (polyeng.max_pool2d, (X, 3), {"padding": 2, "dilation": 2}, ValueError, r"^padding=\(2, 2\).*dilation"),
    (polyeng.avg_pool3d, (X3, 3), {"padding": (0, 0, 2)}, ValueError, r"^padding=\(0, 0, 2\)"),
    (polyeng.max_pool2d, (X, 2), {"dilation": 0}, ValueError, r"^dilation=0.*>= 1"),
    (polyeng.max_pool3d, (X3, 2), {"dilation": (1, 1)}, ValueError, r"^dilation=\(1, 1\).*3 ints"),
    (polyeng.avg_pool2d, (X, 5), {}, ValueError, r"^x has shape \(1, 1, 4, 4\): kernel_size=\(5, 5\).*"
                                                 r"padding=\(0, 0\).*larger than the padded input"),
    (polyeng.max_pool2d, (X, 3), {"dilation": 2}, ValueError, r"^x has shape.*dilation=\(2, 2\).*larger"),
    (polyeng.max_pool3d, (np.zeros((1, 2, 2, 2)), 3), {}, ValueError, r"^x has shape \(1, 2, 2, 2\).*larger"),
    (polyeng.avg_pool2d, (X, 2), {"ceil_mode": 1}, TypeError, r"^ceil_mode=1.*True or False"),
    (polyeng.max_pool3d, (X3, 2), {"ceil_mode": None}, TypeError, r"^ceil_mode=None"),
    (polyeng.avg_pool2d, (X, 2), {"count_include_pad": "no"}, TypeError, r"^count_include_pad='no'"),
    (polyeng.max_pool2d, (X, 2), {"return_indices": 1}, TypeError, r"^return_indices=1"),
    (polyeng.avg_pool2d, (X, 2), {"divisor_override": 0}, ValueError, r"^divisor_override=0.*non-zero"),
    (polyeng.avg_pool3d, (X3, 2), {"divisor_override": 0}, ValueError, r"^divisor_override=0"),
    (polyeng.avg_pool2d, (X, 2), {"divisor_override": 2.0}, TypeError, r"^divisor_override=2.0.*int"),
    (polyeng.avg_pool2d, (X, 2), {"divisor_override": True}, TypeError, r"^divisor_override=True"),
])
def test_bad_arguments(fn, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        basic(fn, *args, **kwargs)


def test_argument_forms():
    x = arange4x4()
    # stride None or empty means kernel_size; one-element sequences repeat
    assert basic(polyeng.avg_pool2d, x, 2, stride=()).shape == (1, 1, 2, 2)
    assert basic(polyeng.avg_pool2d, x, [2], stride=[1], padding=[1]).shape == (1, 1, 5, 5)
    assert basic(polyeng.max_pool2d, x, np.int64(2), stride=(np.int32(1), 2)).shape == (1, 1, 3, 2)
    assert basic(polyeng.max_pool2d, x.tolist(), 2).dtype == np.float64  # array-likes become arrays
    assert basic(polyeng.avg_pool2d, x, 2, divisor_override=np.int8(4))[0, 0, 0, 0] == 2.5


def test_matches_torch_on_random_cases():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(7)
    for nd in (2, 3):
        shape = (2, 3) + (7, 6, 5)[:nd]
        x = rng.integers(-3, 3, size=shape).astype(np.float32)
        x[rng.random(shape) < 0.1] = NAN
        x[rng.random(shape) < 0.1] = -INF
        smooth = rng.standard_normal(shape)
        for k, s, p, d, ceil in [(2, 1, 0, 1, False), (3, 2, 1, 1, True), (3, 2, 1, 2, True), (2, 3, 1, 1, True)]:
            t_max = getattr(functional, f"max_pool{nd}d")(torch.from_numpy(x), k, s, p, d, ceil, return_indices=True)
            got = basic(getattr(polyeng, f"max_pool{nd}d"), x, k, s, p, d, ceil, return_indices=True)
            np.testing.assert_array_equal(got[0], t_max[0].numpy())
            np.testing.assert_array_equal(got[1], t_max[1].numpy())
            for cip, div in [(True, None), (False, None), (True, 5)]:
                want = getattr(functional, f"avg_pool{nd}d")(torch.from_numpy(smooth), k, s, p, ceil, cip, div)
                got = basic(getattr(polyeng, f"avg_pool{nd}d"), smooth, k, s, p, ceil, cip, div)
                np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=0)


# ---------------------------------------------------------------- every engine against BASIC

BIT_EXACT_AVG = {"opencl"}   # engines whose avg pooling sums the taps as BASIC does


ALL_FLOATS = [np.float32, np.float64, np.float16, dt.bfloat16]
ALL = ALL_FLOATS + [np.int8, np.uint8, np.int32, np.int64, np.bool_]

MAX_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1), ceil_mode=True),
    dict(kernel_size=3, stride=3, padding=1, dilation=2),
    dict(kernel_size=(1, 5), stride=(2, 4), padding=(0, 2), ceil_mode=True),
    dict(kernel_size=3, stride=2, dilation=3, padding=1),   # windows with no tap inside
]
AVG_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True, count_include_pad=False),
    dict(kernel_size=3, stride=3, padding=1, divisor_override=5),
    dict(kernel_size=(1, 4), stride=(3, 3), padding=(0, 2), ceil_mode=True),
]


def run(engine, fn, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return fn(*args, **kwargs)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype == dt.bool_ else a.view(f"u{a.dtype.itemsize}")


def sample(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == dt.bool_:
        return rng.random(shape) > 0.7
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        # few distinct values: plenty of ties; the extremes included
        return rng.choice(np.array([info.min, info.min + 1, 0, 1, 7, info.max], dtype=dtype), shape)
    x = np.round(rng.standard_normal(shape) * 3).astype(np.float32)   # ties and signed zeros
    x[rng.random(shape) < 0.05] = -0.0
    x[rng.random(shape) < 0.03] = np.nan
    x[rng.random(shape) < 0.02] = -np.nan
    x[rng.random(shape) < 0.03] = np.inf
    x[rng.random(shape) < 0.05] = -np.inf
    return x.astype(dtype)


def fits(x, kwargs):
    """Whether the window fits the input (else the op rejects the call; not what is tested here)."""
    try:
        run("basic", polyeng.max_pool2d, x, **kwargs)
        return True
    except ValueError:
        return False


def assert_avg_equal(engine, actual, expected):
    if engine in BIT_EXACT_AVG:
        np.testing.assert_array_equal(bits(actual), bits(expected))
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=1e-6, atol=1e-6)


def assert_max_equal(engine, x, fn, **kwargs):
    expected = run("basic", fn, x, return_indices=True, **kwargs)
    values, index = run(engine, fn, x, return_indices=True, **kwargs)
    assert values.dtype == x.dtype and index.dtype == np.int64
    np.testing.assert_array_equal(bits(values), bits(expected[0]))
    np.testing.assert_array_equal(index, expected[1])
    np.testing.assert_array_equal(bits(run(engine, fn, x, **kwargs)), bits(expected[0]))


@pytest.mark.uses_ops("max_pool2d")
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_max_pool2d_bit_exact(engine, dtype):
    rng = np.random.default_rng(1)
    for shape in [(2, 3, 13, 17), (3, 7, 1), (1, 1, 1, 40)]:
        x = sample(rng, shape, dtype)
        for kwargs in MAX_CASES:
            if fits(x, kwargs):
                assert_max_equal(engine, x, polyeng.max_pool2d, **kwargs)


@pytest.mark.uses_ops("max_pool3d")
@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_max_pool3d_bit_exact(engine, dtype):
    rng = np.random.default_rng(2)
    x = sample(rng, (2, 3, 7, 9, 13), dtype)
    for kwargs in [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                   dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 2),
                        ceil_mode=True)]:
        assert_max_equal(engine, x, polyeng.max_pool3d, **kwargs)
    assert_max_equal(engine, x[0], polyeng.max_pool3d, kernel_size=3, stride=2, padding=1)   # unbatched


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_nan_rule_and_lowest_windows(engine):
    # the last NaN of a window wins; an all -inf window reports its first in-bounds tap
    x = np.array([[1, np.nan, 5, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=np.float32)[None, None]
    values, index = run(engine, polyeng.max_pool2d, x, (1, 4), return_indices=True)
    assert np.isnan(values[0, 0, 0, 0]) and index[0, 0, 0, 0] == 3
    assert values[0, 0, 1, 0] == -np.inf and index[0, 0, 1, 0] == 4
    assert_max_equal(engine, x, polyeng.max_pool2d, kernel_size=2, stride=1, padding=1)


@pytest.mark.uses_ops("max_pool2d")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_max_pool_16_bit_nan_inf_and_lowest_windows(engine, dtype):
    """A NaN wins its window, an all -inf window gives -inf and the lowest finite value stays
    itself (oneDNN's max skips NaN and starts from the lowest finite value: such inputs go to
    BASIC's kernel; f16 runs on oneDNN only on CPUs with AVX512-FP16)."""
    kind = polyeng.bfloat16 if dtype == "bfloat16" else np.float16
    lowest = -65504.0 if dtype == "float16" else float(np.array(0xFF7F, np.uint16).view(kind))
    rows = [[1, np.nan, 5, 2], [-np.inf, -np.inf, -np.inf, -np.inf], [lowest, -np.inf, lowest, lowest], [1, 2, 3, 4]]
    x = np.array(rows, np.float32).astype(kind)[None, None]
    values = run(engine, polyeng.max_pool2d, x, (1, 4))
    expected = run("basic", polyeng.max_pool2d, x, (1, 4))
    np.testing.assert_array_equal(bits(values), bits(expected))
    got = values.astype(np.float32).ravel()
    assert np.isnan(got[0]) and got[1] == -np.inf and got[2] == lowest and got[3] == 4


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_non_contiguous_and_large(engine):
    rng = np.random.default_rng(3)
    x = sample(rng, (4, 6, 40, 66), np.float32)[:, ::2, 3:, ::-1]
    assert_max_equal(engine, x, polyeng.max_pool2d, kernel_size=3, stride=2, padding=1)
    big = (rng.standard_normal((2, 3, 20, 20)) * 1e37).astype(np.float32)
    assert_max_equal(engine, big, polyeng.max_pool2d, kernel_size=3, stride=2)


@pytest.mark.uses_ops("avg_pool2d")
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=lambda d: np.dtype(d).name)
def test_avg_pool2d_matches_basic(engine, dtype):
    rng = np.random.default_rng(4)
    for shape in [(2, 3, 13, 17), (3, 7, 5)]:
        x = rng.standard_normal(shape).astype(np.float32).astype(dtype)
        for kwargs in AVG_CASES:
            expected = run("basic", polyeng.avg_pool2d, x, **kwargs)
            actual = run(engine, polyeng.avg_pool2d, x, **kwargs)
            assert actual.dtype == x.dtype and actual.shape == expected.shape
            assert_avg_equal(engine, actual, expected)


@pytest.mark.uses_ops("avg_pool3d")
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=lambda d: np.dtype(d).name)
def test_avg_pool3d_matches_basic(engine, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 9, 11)).astype(np.float32).astype(dtype)
    for kwargs in [dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 1), ceil_mode=True,
                        count_include_pad=False),
                   dict(kernel_size=2, divisor_override=3)]:
        expected = run("basic", polyeng.avg_pool3d, x, **kwargs)
        actual = run(engine, polyeng.avg_pool3d, x, **kwargs)
        assert_avg_equal(engine, actual, expected)


@pytest.mark.uses_ops("avg_pool2d")
def test_avg_pool_nan_inf_propagate(engine):
    x = np.zeros((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 0, 0], x[0, 0, 3, 3] = np.nan, np.inf
    y = run(engine, polyeng.avg_pool2d, x, 2)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 1, 1] == np.inf and y[0, 0, 0, 1] == 0


@pytest.mark.uses_ops("max_pool2d", "avg_pool2d")
def test_zero_size(engine):
    x = np.zeros((0, 3, 8, 8), dtype=np.float32)
    values, index = run(engine, polyeng.max_pool2d, x, 2, return_indices=True)
    assert values.shape == index.shape == (0, 3, 4, 4)
    assert run(engine, polyeng.avg_pool2d, x, 2).shape == (0, 3, 4, 4)


@pytest.mark.device_tensors
@pytest.mark.uses_ops("max_pool2d", "avg_pool3d")
def test_device_resident_input_stays_on_device(engine):
    rng = np.random.default_rng(6)
    x = sample(rng, (2, 3, 9, 11), np.float16)
    t = device_tensor_or_skip(x, engine)
    values, index = run(engine, polyeng.max_pool2d, t, 3, 2, 1, return_indices=True)
    assert type(values) is type(t) and type(index) is type(t)
    expected = run("basic", polyeng.max_pool2d, x, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(bits(polyeng.to_numpy(values)), bits(expected[0]))
    np.testing.assert_array_equal(polyeng.to_numpy(index), expected[1])
    y = rng.standard_normal((3, 5, 7, 9)).astype(np.float32)
    avg = run(engine, polyeng.avg_pool3d, polyeng.to_device(y, engine), 3, 2, 1, count_include_pad=False)
    assert type(avg) is type(t)
    assert_avg_equal(engine, polyeng.to_numpy(avg),
                     run("basic", polyeng.avg_pool3d, y, 3, 2, 1, count_include_pad=False))


@pytest.mark.uses_ops("max_pool2d")
def test_max_pool_raw_16_bit_copy(engine):
    # 16-bit NaN payloads and signs come back as stored
    x = np.array([0x7E01, 0xFE23, 0x3C00, 0xBC00], dtype=np.uint16).view(np.float16).reshape(1, 1, 2, 2)
    values = run(engine, polyeng.max_pool2d, x, (1, 2))
    np.testing.assert_array_equal(bits(values).ravel(), [0xFE23, 0x3C00])
