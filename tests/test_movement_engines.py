"""Data movement on every engine under test (see conftest) against BASIC: concat,
permute_contiguous, select and upsample_nearest bit for bit over every dtype width (NaN
payloads, -0.0, integer extremes), broadcasts, promotion, layouts and shapes the shared engine
suite does not try, zero-size inputs, and device-resident inputs giving device results on
engines that have them."""
import numpy as np
import pytest

import polyeng
from support import device_tensor_or_skip, random_values as values
from polyeng.engine import dtypes as dt

# one dtype per element width and kind: each exercises a separately compiled kernel
EXACT_DTYPES = [np.bool_, np.int8, np.uint8, dt.bfloat16, np.float16, np.float32, np.int32, np.int64, np.float64]


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def assert_same_bits(engine, op, *args, **kwargs):
    expected = run("basic", op, *args, **kwargs)
    actual = run(engine, op, *args, **kwargs)
    assert type(actual) is np.ndarray
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.flags.c_contiguous
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.mark.uses_ops("upsample_nearest", "permute_contiguous", "concat", "select")
@pytest.mark.parametrize("dtype", EXACT_DTYPES)
def test_exact_ops_keep_every_bit(engine, dtype):
    rng = np.random.default_rng(0)
    x = values(rng, (2, 3, 7, 13), dtype)
    assert_same_bits(engine, "upsample_nearest", x, scale_factor=2)      # the widened-word path
    assert_same_bits(engine, "upsample_nearest", x, size=(5, 17))        # the gather path
    assert_same_bits(engine, "permute_contiguous", x, (0, 2, 1, 3))      # row copy
    assert_same_bits(engine, "permute_contiguous", x, (3, 0, 2, 1))      # tiled transpose
    assert_same_bits(engine, "concat", [x, values(rng, (2, 1, 7, 13), dtype)], axis=1)
    assert_same_bits(engine, "select", rng.random((3, 7, 1)) > 0.5, x, values(rng, (1, 13), dtype))


@pytest.mark.uses_ops("upsample_bilinear2d")
def test_bilinear_large_planes_split_into_row_blocks(engine):
    x = np.random.default_rng(3).standard_normal((1, 1, 40, 31)).astype(np.float32)
    expected = run("basic", "upsample_bilinear2d", x, size=(97, 64))
    actual = run(engine, "upsample_bilinear2d", x, size=(97, 64))
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-5)


@pytest.mark.uses_ops("permute_contiguous")
@pytest.mark.parametrize("shape,dims", [
    ((5,), (0,)), ((), ()), ((4, 1, 6), (2, 1, 0)), ((1, 1, 1), (2, 0, 1)), ((3, 4, 5, 6, 2), (4, 0, 3, 1, 2)),
    ((2, 3, 4, 5, 6, 7), (5, 4, 3, 2, 1, 0)), ((7, 65, 33), (0, 2, 1)), ((65, 33), (1, 0)), ((3, 1000), (1, 0)),
    ((2, 3, 4, 5), (0, 1, 2, 3)), ((2, 3, 4, 5), (2, 3, 0, 1)), ((2, 3, 4, 5), (1, 2, 3, 0))])
def test_permute_shapes(engine, shape, dims):
    x = values(np.random.default_rng(4), shape, np.int32)
    assert_same_bits(engine, "permute_contiguous", x, dims)


@pytest.mark.uses_ops("permute_contiguous")
@pytest.mark.parametrize("layout", ["fortran", "moved", "reversed", "broadcast", "strided"])
def test_permute_layouts(engine, layout):
    base = values(np.random.default_rng(5), (4, 5, 6), np.float32)
    x = {"fortran": np.asfortranarray(base), "moved": np.moveaxis(np.ascontiguousarray(np.moveaxis(base, 0, 2)), 2, 0),
         "reversed": base[::-1, :, ::-1], "broadcast": np.broadcast_to(base[:, :1], base.shape),
         "strided": base[:, ::2]}[layout]
    for dims in [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1)]:
        assert_same_bits(engine, "permute_contiguous", x, dims)


@pytest.mark.uses_ops("concat")
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_axes_zero_size_pieces_and_promotion(engine, axis):
    rng = np.random.default_rng(6)
    shape = [3, 4, 5]
    pieces = []
    for width, dtype in [(2, np.float16), (0, np.int8), (3, dt.bfloat16), (1, np.float32)]:
        piece_shape = list(shape)
        piece_shape[axis] = width
        pieces.append(values(rng, tuple(piece_shape), dtype))
    assert_same_bits(engine, "concat", pieces, axis=axis)                          # bf16 + f16 -> f32
    assert_same_bits(engine, "concat", [p.astype(np.int64) for p in pieces[1:2]] + [pieces[1]], axis=axis)
    assert_same_bits(engine, "concat", [np.asfortranarray(pieces[0]), pieces[2][..., ::-1]], axis=axis)


@pytest.mark.uses_ops("concat")
def test_concat_long_rows_split_across_tasks(engine):
    rng = np.random.default_rng(7)
    a, b = values(rng, (3, 70001), np.float32), values(rng, (2, 70001), np.float32)
    assert_same_bits(engine, "concat", [a, b], axis=0)
    assert_same_bits(engine, "concat", [a, a[:, :5], a], axis=1)
    assert_same_bits(engine, "concat", [values(rng, (30000, 3), np.int8), values(rng, (30000, 2), np.int8)], axis=1)


@pytest.mark.uses_ops("select")
@pytest.mark.parametrize("cond_shape,then_shape,else_shape", [
    ((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((3, 1), (2, 3, 4), (4,)), ((4,), (2, 1, 4), (3, 1)),
    ((), (5,), ()), ((1, 1), (1, 7), (3, 1)), ((2, 1, 1), (2, 3, 4), (1,)), ((), (), ()),
    ((1, 3, 1, 5), (2, 3, 4, 5), (2, 1, 4, 1))])
def test_select_broadcasting(engine, cond_shape, then_shape, else_shape):
    rng = np.random.default_rng(8)
    cond = rng.random(cond_shape) > 0.5
    assert_same_bits(engine, "select", cond, values(rng, then_shape, np.float32), values(rng, else_shape, np.float32))
    assert_same_bits(engine, "select", cond, values(rng, then_shape, np.int8), values(rng, else_shape, dt.bfloat16))


@pytest.mark.uses_ops("select")
def test_select_never_leaks_the_unselected_nan_and_keeps_scalars_weak(engine):
    x = np.array([1.0, np.nan, -np.inf, 2.0], np.float16)
    cond = np.array([True, False, True, False])
    assert_same_bits(engine, "select", cond, x, 0.0)
    assert_same_bits(engine, "select", ~cond, 5, x)
    assert_same_bits(engine, "select", np.asfortranarray(np.ones((3, 4), bool)), np.ones((3, 4), np.int32), np.int32(7))
    out = run(engine, "select", cond, x, 0.0)
    assert out.dtype == np.float16 and not np.isnan(out).any()


@pytest.mark.uses_ops("select")
def test_select_none_mode_and_scalars(engine):
    rng = np.random.default_rng(2)
    cond, a, b = rng.random((5, 9)) > 0.5, values(rng, (5, 9), dt.bfloat16), values(rng, (5, 9), dt.bfloat16)
    assert_same_bits(engine, "select", cond, a, b, auto_broadcast="none")
    assert_same_bits(engine, "select", cond, a, 2.5)
    assert_same_bits(engine, "select", cond, 7, values(rng, (5, 9), dt.int8))


@pytest.mark.uses_ops("select", "concat")
@pytest.mark.parametrize("then_dtype,else_dtype", [(dt.float16, dt.bfloat16), (dt.int8, dt.float32),
                                                   (dt.bool_, dt.int32), (dt.uint8, dt.int32),
                                                   (dt.int64, dt.float64), (dt.bfloat16, dt.int32)])
def test_mixed_dtypes_promote_as_basic(engine, then_dtype, else_dtype):
    rng = np.random.default_rng(3)
    a, b = values(rng, (3, 11), then_dtype), values(rng, (3, 11), else_dtype)
    assert_same_bits(engine, "select", rng.random((3, 1)) > 0.5, a, b)
    assert_same_bits(engine, "concat", [a, b, a], axis=0)
    assert_same_bits(engine, "concat", [b, a], axis=1)


@pytest.mark.uses_ops("concat")
@pytest.mark.parametrize("shapes,axis", [([(257,), (1,), (3,)], 0), ([(3, 5), (3, 0), (3, 2)], 1),
                                         ([(2, 3, 4), (2, 3, 4)], -1), ([(1, 3, 4), (6, 3, 4)], 0),
                                         ([(2, 3, 5, 7)], 2), ([(2, 0, 3), (2, 0, 3)], 1)])
def test_concat_shapes(engine, shapes, axis):
    rng = np.random.default_rng(4)
    assert_same_bits(engine, "concat", [values(rng, s, dt.float16) for s in shapes], axis=axis)


@pytest.mark.uses_ops("upsample_nearest", "concat", "select")
def test_zero_size_inputs_give_empty_results(engine):
    empty = np.zeros((2, 0, 3), np.float32)
    assert run(engine, "upsample_nearest", empty, scale_factor=2).shape == (2, 0, 6)
    assert run(engine, "concat", [np.zeros((0, 3)), np.zeros((0, 2))], axis=1).shape == (0, 5)
    out = run(engine, "select", np.zeros((0, 4), bool), np.zeros((0, 4), np.int32), np.zeros((1, 4), np.int8))
    assert out.shape == (0, 4) and out.dtype == np.int32


@pytest.mark.device_tensors
@pytest.mark.uses_ops("select", "concat", "upsample_nearest")
def test_device_inputs_give_device_results(engine):
    rng = np.random.default_rng(7)
    x = values(rng, (2, 3, 4, 5), dt.bfloat16)
    t = device_tensor_or_skip(x, engine)
    cond = rng.random((4, 5)) > 0.5
    other = values(rng, (5,), dt.float32)
    cases = [("select", (cond, t, other), {}), ("select", (polyeng.to_device(cond, engine), x, x), {}),
             ("concat", ([x, t],), {"axis": 1}), ("concat", ([t, other.reshape(1, 1, 1, 5).repeat(4, 2)
                                                              .repeat(3, 1).repeat(2, 0)],), {"axis": 3}),
             ("upsample_nearest", (t,), {"size": (3, 11)})]
    for op, args, kwargs in cases:
        actual = run(engine, op, *args, **kwargs)
        assert type(actual) is type(t)
        host_args = [[polyeng.to_numpy(a) if a is t else a for a in arg] if isinstance(arg, list) else
                     (polyeng.to_numpy(arg) if type(arg) is type(t) else arg) for arg in args]
        expected = np.asarray(run("basic", op, *host_args, **kwargs))
        got = polyeng.to_numpy(actual)
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
