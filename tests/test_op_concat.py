"""concat: BASIC against known values and the bad-argument rules; every engine under test (see
conftest) against BASIC bit for bit over every dtype width (NaN payloads, -0.0, integer
extremes), axes, zero-size pieces, promotion, layouts and long rows. The tests of several data
movement ops together (concat, permute_contiguous, select and upsample_nearest: every bit kept,
mixed dtypes, zero-size inputs, device-resident inputs giving device results on engines that
have them) are here too."""
import numpy as np
import pytest

import polyeng
from support import device_tensor_or_skip, random_values as values
from polyeng.engine import dtypes as dt
from support import assert_same_bits, run_on as run


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_concat_known_values_and_promotion():
    a = np.array([[1, 2]], np.int8)
    b = np.array([[3.5, 4.5]], np.float16)
    out = polyeng.concat([a, b], axis=0)
    assert out.dtype == np.float16 and out.tolist() == [[1, 2], [3.5, 4.5]]
    out = polyeng.concat((np.array([[1], [2]], np.int32), np.array([[3, 4], [5, 6]], np.int32)), axis=-1)
    assert out.dtype == np.int32 and out.tolist() == [[1, 3, 4], [2, 5, 6]]
    mixed = polyeng.concat([np.ones(1, dt.bfloat16), np.ones(1, np.float16)])
    assert mixed.dtype == np.float32
    assert polyeng.concat([np.array([True]), np.array([False])]).tolist() == [True, False]


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("tensors,axis,error,match", [
    ([], 0, ValueError, r"tensors=\[\]"),
    (np.ones((2, 2)), 0, TypeError, "list or tuple"),
    ([np.ones((2, 2)), np.ones(2)], 0, ValueError, r"tensors\[1\].*same rank"),
    ([np.ones((2, 2)), np.ones((3, 3))], 1, ValueError, r"tensors\[1\] has shape \(3, 3\).*axis=1"),
    ([np.ones((2, 2))], 2, ValueError, r"axis=2 is out of range"),
    ([np.ones((2, 2))], 1.0, TypeError, r"axis=1.0"),
    ([np.float32(1)], 0, ValueError, r"0-D"),
])
def test_concat_bad_arguments(tensors, axis, error, match):
    with pytest.raises(error, match=match):
        polyeng.concat(tensors, axis=axis)


# -- every engine against BASIC --------------------------------------------------------------------

# one dtype per element width and kind: each exercises a separately compiled kernel
EXACT_DTYPES = [np.bool_, np.int8, np.uint8, dt.bfloat16, np.float16, np.float32, np.int32, np.int64, np.float64]


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


@pytest.mark.uses_ops("concat")
@pytest.mark.parametrize("shapes,axis", [([(257,), (1,), (3,)], 0), ([(3, 5), (3, 0), (3, 2)], 1),
                                         ([(2, 3, 4), (2, 3, 4)], -1), ([(1, 3, 4), (6, 3, 4)], 0),
                                         ([(2, 3, 5, 7)], 2), ([(2, 0, 3), (2, 0, 3)], 1)])
def test_concat_shapes(engine, shapes, axis):
    rng = np.random.default_rng(4)
    assert_same_bits(engine, "concat", [values(rng, s, dt.float16) for s in shapes], axis=axis)


# -- concat with the other data movement ops -------------------------------------------------------

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
