"""reshape on every engine under test (see conftest) and on BASIC.

reshape follows numpy: one -1 inferred, an int or a tuple, the same data (no copy) where numpy
returns a view, numpy's values for a non-contiguous input."""
import numpy as np
import pytest

from polyeng.engine import dtypes as dt
from support import run_on as on, sample_values as values


ALL_DTYPES = {dt.short_name(d): d for d in dt.SUPPORTED_DTYPES}


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
