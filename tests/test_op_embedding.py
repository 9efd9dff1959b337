"""embedding on every engine under test (see conftest) and on BASIC: ``weight[ids]`` bit for
bit, for ids of any shape and both id dtypes, every float dtype and any layout; and BASIC
against PyTorch's F.embedding (with reshape, which shares the test)."""
import numpy as np
import pytest

from polyeng.engine import dtypes as dt
from support import run_on as on, sample_values as values
from elementwise_checks import basic, from_torch, needs_torch, sample, special_values, to_torch, torch

F = torch.nn.functional if torch is not None else None


ALL_DTYPES = {dt.short_name(d): d for d in dt.SUPPORTED_DTYPES}
FLOATS = {dt.short_name(d): d for d in dt.FLOAT_DTYPES}
BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(a):
    """The stored bits of a float array, so -0.0 and NaN payloads count."""
    return np.ascontiguousarray(a).view(BITS[a.dtype.itemsize])


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


# -- BASIC against PyTorch -------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_reshape_and_embedding_as_torch(dtype):
    f = FLOATS[dtype]
    x = sample("add", (4, 6, 5), f, 6)
    for target in ((-1,), (6, -1), (2, 3, 4, 5), (120, 1)):
        assert np.array_equal(basic("reshape", x, target), from_torch(to_torch(x).reshape(target)))
    weight = np.concatenate([sample("add", (9, 7), f, 7), special_values(f)[:7][None]])
    for ids in (np.array(3), np.array([9, 0, 9, 2]), np.arange(30).reshape(2, 3, 5) % 10, np.zeros((2, 0), np.int32)):
        got = basic("embedding", ids, weight)
        want = from_torch(F.embedding(torch.from_numpy(ids.astype(np.int64)), to_torch(weight)))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
