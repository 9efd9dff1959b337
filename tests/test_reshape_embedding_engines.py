"""reshape and embedding on every engine under test (see conftest) and on BASIC.

reshape follows numpy: one -1 inferred, an int or a tuple, the same data (no copy) where numpy
returns a view, numpy's values for a non-contiguous input. embedding is ``weight[ids]`` bit for
bit, for ids of any shape and both id dtypes, every float dtype and any layout."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

ALL_DTYPES = {dt.short_name(d): d for d in dt.SUPPORTED_DTYPES}
FLOATS = {dt.short_name(d): d for d in dt.FLOAT_DTYPES}
BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def on(engine, op, *args):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args)


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == dt.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def bits(a):
    """The stored bits of a float array, so -0.0 and NaN payloads count."""
    return np.ascontiguousarray(a).view(BITS[a.dtype.itemsize])


# ---------------------------------------------------------------- reshape

RESHAPES = [((24,), (2, 3, 4)), ((24,), -1), ((24,), 24), ((2, 3, 4), (4, -1)), ((2, 3, 4), (-1,)),
            ((2, 3, 4), [3, 8]), ((2, 3, 4), (2, -1, 3)), ((6, 4), (1, 24, 1)), ((), (1, 1)), ((1, 1), ()),
            ((1,), -1), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((0, 3), (-1,)), ((5, 1031), (1031, 5)),
            ((2, 3, 4), np.array([4, 6]))]


def expected_shape(shape, target):
    return np.empty(shape).reshape(tuple(target) if isinstance(target, (list, np.ndarray)) else target).shape


def assert_reshape(run_on, x, target):
    got = on(run_on, "reshape", x, target)
    want = x.reshape(tuple(target) if isinstance(target, (list, np.ndarray)) else target)
    assert type(got) is np.ndarray and got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


@pytest.mark.uses_ops("reshape")
@pytest.mark.parametrize("dtype", list(ALL_DTYPES))
def test_reshape_matches_numpy(engine, dtype):
    for shape, target in RESHAPES:
        x = values(shape, ALL_DTYPES[dtype])
        got = assert_reshape(engine, x, target)
        assert got.shape == expected_shape(shape, target) == on("basic", "reshape", x, target).shape


def assert_views_where_numpy_makes_them(run_on):
    """No data is copied where numpy would return a view: writing through the result changes the input."""
    base = np.arange(48, dtype=np.float32)
    for x, target in [(base, (6, -1)), (base.reshape(4, 12), (2, 2, 12)), (base[::2], (4, 6)),
                      (base.reshape(4, 12)[:, ::3], (8, 2)), (base[::-1], (3, 16)), (base.reshape(4, 12)[1:3], -1),
                      (base.reshape(4, 12).T, -1)]:
        numpy_view = np.shares_memory(x, x.reshape(target))
        got = assert_reshape(run_on, x, target)
        assert np.shares_memory(got, x) == numpy_view, (run_on, x.strides, target)
        if numpy_view:
            first, kept = (0,) * x.ndim, x[(0,) * x.ndim]
            got[(0,) * got.ndim] = -1.0
            assert x[first] == -1.0
            x[first] = kept


def test_reshape_is_a_view_where_numpy_makes_one_on_basic():
    assert_views_where_numpy_makes_them("basic")


@pytest.mark.uses_ops("reshape")
def test_reshape_is_a_view_where_numpy_makes_one(engine):
    assert_views_where_numpy_makes_them(engine)


@pytest.mark.uses_ops("reshape")
def test_reshape_of_non_contiguous_input_gives_numpys_values(engine):
    base = values((6, 8, 5), np.float32)
    for x in (base.transpose(2, 0, 1), base[::-1, :, ::2], base[:, 1::3], np.broadcast_to(base[:1], base.shape),
              np.asfortranarray(base)):
        assert not x.flags.c_contiguous
        for target in ((-1,), (x.shape[0], -1), (2, -1, x.shape[-1]), (x.size,)):
            assert_reshape(engine, x, target)
            assert_reshape("basic", x, target)


# ---------------------------------------------------------------- embedding

def weight_table(rows, dim, dtype, seed=0):
    """Rows of random values, with -0.0, +-inf, a NaN with a payload and the smallest subnormal
    in row 1: a copy through arithmetic could change their bits."""
    w = values((rows, dim), dtype, seed)
    nbits = BITS[np.dtype(dtype).itemsize]
    width = np.dtype(dtype).itemsize * 8
    exponent_bits = {16: 5 if np.dtype(dtype) == np.float16 else 8, 32: 8, 64: 11}[width]
    quiet_nan = ((1 << exponent_bits) - 1) << (width - 1 - exponent_bits) | 1 << (width - 2 - exponent_bits)
    special = np.array([0x8000 << (width - 16), quiet_nan | 1, 1, (1 << (width - 1)) | 5], dtype=nbits)
    row = w[1].view(nbits)
    row[:min(4, dim)] = special[:min(4, dim)]
    w[1, 4:6] = [np.inf, -np.inf]
    return w


ID_SHAPES = [(), (1,), (7,), (17,), (3, 4, 5), (0,), (3, 0, 2), (2, 300)]


@pytest.mark.uses_ops("embedding")
@pytest.mark.parametrize("id_dtype", ["s32", "s64"])
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_embedding_is_weight_indexed_bit_for_bit(engine, dtype, id_dtype):
    w = weight_table(50, 33, FLOATS[dtype])
    rng = np.random.default_rng(1)
    for shape in ID_SHAPES:
        ids = rng.integers(0, 50, shape).astype(ALL_DTYPES[id_dtype])
        ids.reshape(-1)[:2] = [1, 49][:ids.size]   # the special row and the last
        got, want = on(engine, "embedding", ids, w), w[ids]
        assert type(got) is np.ndarray and got.dtype == w.dtype and got.shape == shape + (33,)
        np.testing.assert_array_equal(bits(got), bits(want))
        np.testing.assert_array_equal(bits(on("basic", "embedding", ids, w)), bits(want))


@pytest.mark.uses_ops("embedding")
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_embedding_of_any_layout(engine, dtype):
    big = weight_table(40, 24, FLOATS[dtype])
    ids = np.random.default_rng(2).integers(0, 20, (6, 9)).astype(np.int64)
    ids[0, 0] = 1
    weights = {"reversed": big[::-1][:20], "strided": big[:20, ::3], "fortran": np.asfortranarray(big[:20]),
               "broadcast": np.broadcast_to(big[1:2], (20, 24)), "contiguous": big[:20]}
    id_views = {"plain": ids, "negative": ids[::-1, ::-2], "transposed": ids.T, "int32": ids.astype(np.int32)[:, ::2],
                "broadcast": np.broadcast_to(ids[:1], (4, 9))}
    for wname, w in weights.items():
        for iname, i in id_views.items():
            got = on(engine, "embedding", i, w)
            assert got.shape == i.shape + (w.shape[1],), (wname, iname)
            np.testing.assert_array_equal(bits(got), bits(w[i]), err_msg=f"{wname} weight, {iname} ids")


@pytest.mark.uses_ops("embedding")
def test_embedding_of_a_one_column_and_a_one_row_table(engine):
    for w in (np.arange(5, dtype=np.float32)[:, None], np.full((1, 70), 2.5, dt.bfloat16),
              np.zeros((3, 0), np.float64)):
        ids = np.array([[0, w.shape[0] - 1], [w.shape[0] - 1, 0]], np.int32)
        got = on(engine, "embedding", ids, w)
        assert got.dtype == w.dtype and got.shape == (2, 2, w.shape[1])
        np.testing.assert_array_equal(bits(got), bits(w[ids]))
