"""The guards' compiled scans (polyeng/backends/onednn/_scans.py) against their numpy forms."""
from __future__ import annotations

import numpy as np
import pytest

from polyeng.backends.onednn import _scans
from polyeng.backends.onednn.normalization import may_be_constant

RNG = np.random.default_rng(11)
F32 = np.finfo(np.float32)
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, F32.max, F32.min, F32.tiny, -F32.tiny, F32.smallest_subnormal,
                    -F32.smallest_subnormal, np.inf, -np.inf], np.float32)


@pytest.fixture(autouse=True)
def compiled():
    assert _scans.compiled() is not None, _scans._failed   # llvmlite is a dependency: they must compile


def _cases():
    yield np.zeros(0, np.float32)
    for size in (1, 7, 16, 1000, 4099):
        yield RNG.standard_normal(size).astype(np.float32)
        yield -np.abs(RNG.standard_normal(size)).astype(np.float32) * np.float32(1e30)
    for value in SPECIAL:
        yield np.full(33, value, np.float32)
    mixed = RNG.standard_normal(300).astype(np.float32)
    mixed[RNG.integers(0, 300, 12)] = RNG.choice(SPECIAL, 12)
    yield mixed


def _same(a, b):
    assert np.array_equal(np.float64(a), np.float64(b), equal_nan=True) and np.signbit(a) == np.signbit(b), (a, b)


@pytest.mark.parametrize("flat", list(_cases()), ids=lambda a: f"n{a.size}")
def test_magnitude_and_extremes_match_numpy(flat):
    _same(_scans.magnitude(flat), _scans.magnitude_numpy(flat))
    hi, lo, nan = _scans.extremes(flat)
    want = _scans.extremes_numpy(flat)
    assert nan == want[2] is False
    if flat.size and not (flat == 0).all():   # max/min of 0.0 and -0.0: either is numpy's
        _same(hi, want[0])
        _same(lo, want[1])


@pytest.mark.parametrize("where", [0, 5, 299])
@pytest.mark.parametrize("nan", [np.float32(np.nan), -np.float32(np.nan)])
def test_a_nan_is_found_and_the_rest_s_extremes_given(where, nan):
    flat = RNG.standard_normal(300).astype(np.float32)
    flat[where] = nan
    assert np.isnan(_scans.magnitude(flat))
    hi, lo, found = _scans.extremes(flat)
    rest = np.delete(flat, where)
    assert found and (hi, lo) == (float(rest.max()), float(rest.min()))
    assert _scans.extremes(np.full(4, np.nan, np.float32)) == (0.0, 0.0, True)


def test_read_only_values_scan_alike():   # a host program's kept mask is one
    flat = RNG.standard_normal(999).astype(np.float32)
    fixed = flat.copy()
    fixed.flags.writeable = False
    assert _scans.magnitude(fixed) == _scans.magnitude(flat)
    assert _scans.extremes(fixed) == _scans.extremes(flat)
    assert _scans.rows_in_doubt(fixed, fixed) == _scans.rows_in_doubt(flat, flat)
    assert _scans.masked_rows(fixed, 9) == _scans.masked_rows(flat, 9)


def test_strided_values_scan_alike():
    wide = RNG.standard_normal(2 * 999).astype(np.float32)
    flat, strided = wide[::2].copy(), wide[::2]
    assert _scans.magnitude(strided) == _scans.magnitude(flat)
    assert _scans.extremes(strided) == _scans.extremes(flat)
    assert _scans.rows_in_doubt(strided, strided) == _scans.rows_in_doubt(flat, flat)
    assert _scans.masked_rows(strided, 9) == _scans.masked_rows(flat, 9)


def test_rows_in_doubt_match_may_be_constant():
    for _ in range(200):
        rows = int(RNG.integers(1, 50))
        mean = (RNG.standard_normal(rows) * 10.0 ** RNG.integers(-30, 30)).astype(np.float32)
        with np.errstate(over="ignore"):   # an inf variance is a case too
            var = np.abs(mean * RNG.choice([0.0, 2.0 ** -11, 2.0 ** -10, 2.0 ** -9, 1.0], rows)).astype(np.float32) ** 2
        var[RNG.random(rows) < 0.1] = RNG.choice([np.nan, np.inf, 0.0])
        mean[RNG.random(rows) < 0.05] = RNG.choice([np.nan, np.inf, F32.max])
        assert _scans.rows_in_doubt(mean, var) == bool(may_be_constant(mean, var).any()) \
            == _scans.rows_in_doubt_numpy(mean, var)
    assert not _scans.rows_in_doubt(np.zeros(0, np.float32), np.zeros(0, np.float32))


def _masks():
    """Masks of finite values and -inf: causal ones, rows masked whole, no -inf, only -inf."""
    for rows, row in ((1, 1), (3, 7), (128, 128), (5, 33)):
        values = RNG.standard_normal((rows, row)).astype(np.float32) * np.float32(100)
        causal = np.where(np.tril(np.ones((rows, row), bool)), values, np.float32(-np.inf))
        yield causal
        scattered = values.copy()
        scattered[RNG.random((rows, row)) < 0.4] = -np.inf
        scattered[:, 0] = values[:, 0]
        yield scattered
        whole = scattered.copy()
        whole[rows // 2] = -np.inf
        yield whole
        yield values
        yield np.full((rows, row), -np.inf, np.float32)
        yield np.where(values > 0, np.float32(-0.0), np.float32(-np.inf))   # only -0.0 and -inf


@pytest.mark.parametrize("mask", list(_masks()), ids=lambda a: f"{a.shape[0]}x{a.shape[1]}")
def test_masked_rows_match_numpy(mask):
    from polyeng.backends.onednn.segment import _mask_range
    flat = mask.reshape(-1)
    lo, whole = _scans.masked_rows(flat, mask.shape[-1])
    want_lo, want_whole = _scans.masked_rows_numpy(flat, mask.shape[-1])
    assert whole == want_whole
    assert lo == want_lo   # -0.0 and 0.0 alike: the bound walk reads magnitudes
    assert _mask_range(mask, True) == _mask_range(mask, False)
    four = np.broadcast_to(mask, (2, 1) + mask.shape).copy()   # a (batch, 1, rows, row) mask
    assert _mask_range(four, True) == _mask_range(four, False)
    four.flags.writeable = False   # a host program's kept mask: numpy's form
    assert _mask_range(four, True) == _mask_range(four, False)
