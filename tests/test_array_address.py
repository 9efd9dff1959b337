"""``polyeng.backends._address.address``: an array's data address, the one ``ctypes.data`` gives,
for every kind of array a kernel is handed."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from polyeng.backends import _address


def _arrays():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    yield base
    yield base[1:, ::2, 3:]                      # a strided view
    yield base.transpose(2, 0, 1)
    yield np.asfortranarray(base)
    yield np.empty((0, 7), np.float64)           # zero-size
    yield np.zeros((), np.int64)                 # 0-d
    yield np.ones(9, ml_dtypes.bfloat16)[3:]
    yield np.frombuffer(bytearray(64), np.uint8)  # memory numpy does not own
    yield np.ones((2, 2)).view(np.recarray)      # a subclass


@pytest.mark.parametrize("array", list(_arrays()), ids=lambda a: f"{type(a).__name__}{a.shape}{a.dtype}")
def test_address_is_ctypes_data(array):
    assert _address.address(array) == array.ctypes.data


def test_the_fast_path_is_taken_here():
    # CPython's object header on a 64-bit build: the check at import found numpy's layout
    assert _address.address is _address._fast
