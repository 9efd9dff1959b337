"""permute_contiguous: BASIC against known values and the bad-argument rules; every engine under
test (see conftest) against BASIC bit for bit, for shapes and layouts the shared engine suite does
not try."""
import numpy as np
import pytest

import polyeng
from support import assert_same_bits
from support import random_values as values


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_permute_known_values():
    x = np.arange(6).reshape(1, 2, 3)
    out = polyeng.permute_contiguous(x, (2, 0, -2))
    assert out.flags.c_contiguous and out.shape == (3, 1, 2)
    assert out.tolist() == [[[0, 3]], [[1, 4]], [[2, 5]]]


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("dims,error,match", [
    ((0, 1), ValueError, r"dims=\(0, 1\) has 2 entries but x is 3-D"),
    ((0, 1, 1), ValueError, "repeats an axis"),
    ((0, 1, 3), ValueError, r"dims=3 is out of range"),
    ("abc", TypeError, "dims="),
])
def test_permute_bad_arguments(dims, error, match):
    with pytest.raises(error, match=match):
        polyeng.permute_contiguous(np.ones((2, 3, 4)), dims)


# -- every engine against BASIC --------------------------------------------------------------------


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
