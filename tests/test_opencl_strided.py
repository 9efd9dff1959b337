"""The strided layout behind OPENCL's permute, select and concat: dimension merging, row tables,
and launches split along capped range dimensions (checked by shrinking the cap)."""
import itertools

import numpy as np
import pytest

import polyeng
from polyeng.backends.opencl import _enqueue as enqueue, _strided as strided
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["opencl"].available,
                                reason="no OpenCL platform (the CI run requires one)")


def on(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def test_layout_merges_dimensions_contiguous_in_every_operand():
    shape = (2, 3, 4, 5)
    lay = strided.layout(shape, [strided.contiguous_strides(shape)] * 2)
    assert (lay.width, lay.height, lay.rows) == (120, 1, 1)
    # (0, 2, 1, 3) of a (2, 4, 3, 5) input: the last dim stays contiguous, the others do not merge
    src = strided.contiguous_strides((2, 4, 3, 5))
    lay = strided.layout((2, 3, 4, 5), [[src[d] for d in (0, 2, 1, 3)], strided.contiguous_strides(shape)])
    assert (lay.width, lay.height, lay.rows) == (5, 4, 6)
    assert lay.inner == ((1, 15), (1, 5))
    assert list(lay.bases[0]) == [0, 5, 10, 60, 65, 70]
    assert list(lay.bases[1]) == [0, 20, 40, 60, 80, 100]


def test_layout_drops_size_one_dims_and_keeps_offsets():
    lay = strided.layout((1, 7, 1), [[0, 1, 0], [0, 3, 0]], [11, 2])
    assert (lay.width, lay.height, lay.rows) == (7, 1, 1)
    assert lay.inner == ((1, 0), (3, 0)) and list(lay.bases[0]) == [11] and list(lay.bases[1]) == [2]


@pytest.mark.parametrize("shape,dims", [((3, 5, 7, 2), (3, 1, 0, 2)), ((9, 11), (1, 0)), ((4, 3, 6, 5), (0, 2, 1, 3)),
                                        ((2, 3, 4, 5, 6), (4, 0, 3, 1, 2))])
def test_split_launches_past_the_capped_range_dimensions(monkeypatch, shape, dims):
    monkeypatch.setattr(enqueue, "CAP", 4)   # height and rows both exceed it: launches with offsets
    rng = np.random.default_rng(0)
    for dtype in (dt.float32, dt.bfloat16, dt.int8, dt.int64):
        x = rng.standard_normal(shape).astype(np.float32).astype(dtype)
        expected = np.ascontiguousarray(x.transpose(dims))
        assert on("opencl", "permute_contiguous", x, dims).tobytes() == expected.tobytes()
    a, b = rng.standard_normal((3, 4, 5)).astype(np.float32), rng.standard_normal((3, 2, 5)).astype(np.float32)
    np.testing.assert_array_equal(on("opencl", "concat", [a, b], axis=1), np.concatenate([a, b], axis=1))
    cond = rng.random((4, 3, 5)) > 0.5
    then, other = rng.standard_normal((4, 3, 5)).astype(np.float32), rng.standard_normal((3, 1)).astype(np.float32)
    np.testing.assert_array_equal(on("opencl", "select", cond, then, other), np.where(cond, then, other))


@pytest.mark.parametrize("dims", list(itertools.permutations(range(4))))
def test_every_permutation_of_an_odd_rank_4_shape(dims):
    x = np.arange(3 * 5 * 7 * 11, dtype=np.int32).reshape(3, 5, 7, 11)
    np.testing.assert_array_equal(on("opencl", "permute_contiguous", x, dims), x.transpose(dims))
