"""Accuracy, special values and vectorization of the NUMBA engine's f32 math functions.

The f32 ``exp``/``tanh``/``sigmoid``/``erf`` are compared, in ulps, with float64 libm
rounded to f32 over a strided sweep of all 2**32 f32 bit patterns, a random sample, dense
windows around every threshold of the implementations, and the special values. The
functions are called from kernels compiled with polyeng's jit preset, in loops like the
ones kernels use (so in their vectorized form).
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from polyeng.backends.numba import _mathfn as mathfn  # noqa: E402
from polyeng.backends.numba._runtime import inline, jit  # noqa: E402
from polyeng.backends.numba._storage import f32_bits  # noqa: E402

FUNCTIONS = ("exp", "tanh", "sigmoid", "erf")
LIBM_EXP = len(FUNCTIONS)   # kernel selector for the math.exp baseline
MAX_ULP = 2


@jit
def _apply(which, x, out):
    if which == 0:
        for i in range(x.size):
            out[i] = mathfn.exp(x[i])
    elif which == 1:
        for i in range(x.size):
            out[i] = mathfn.tanh(x[i])
    elif which == 2:
        for i in range(x.size):
            out[i] = mathfn.sigmoid(x[i])
    elif which == 3:
        for i in range(x.size):
            out[i] = mathfn.erf(x[i])
    else:
        for i in range(x.size):
            out[i] = math.exp(x[i])


@jit
def _scalar(which, x):
    if which == 0:
        return mathfn.exp(x)
    if which == 1:
        return mathfn.tanh(x)
    if which == 2:
        return mathfn.sigmoid(x)
    return mathfn.erf(x)


@inline
def _ordered(v):
    """f32 bit pattern as an integer that counts ulps across zero (+0 and -0 both 0)."""
    u = np.int64(f32_bits(v))
    return u if u < 0x80000000 else 0x80000000 - u


@jit
def _ulp_report(which, x, y):
    """(max ulp error, its index, mismatches in kind, first such index) of y = f(x).

    The reference is float64 libm rounded to f32. A mismatch in kind is NaN vs not NaN,
    inf vs finite, or a zero of the wrong sign: those must be exact, not within 2 ulp.
    """
    worst, worst_at, bad, bad_at = np.int64(-1), -1, 0, -1
    for i in range(x.size):
        xd = np.float64(x[i])
        if which == 0:
            rd = math.exp(xd)
        elif which == 1:
            rd = math.tanh(xd)
        elif which == 2:
            rd = 1.0 / (1.0 + math.exp(-xd))
        else:
            rd = math.erf(xd)
        r = np.float32(rd)
        v = y[i]
        if r != r or v != v:
            wrong_kind = not (r != r and v != v)
            d = np.int64(0)
        else:
            wrong_kind = math.isinf(r) != math.isinf(v) or (
                r == 0 and v == 0 and f32_bits(r) != f32_bits(v))
            d = abs(_ordered(r) - _ordered(v))
        if wrong_kind:
            bad += 1
            if bad_at < 0:
                bad_at = i
        elif d > worst:
            worst, worst_at = d, i
    return worst, worst_at, bad, bad_at


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32)


def _window(center: float, half: int) -> np.ndarray:
    """Every f32 within ``half`` ulps of ``center`` (same sign)."""
    bits = int(np.float32(center).view(np.uint32))
    return np.arange(max(bits - half, 0), bits + half + 1, dtype=np.int64).astype(np.uint32).view(np.float32)


def _inputs() -> np.ndarray:
    stride = 257   # prime, so the sweep does not keep landing on the same low mantissa bits; ~16.7M
    sweep = np.arange(0, 2**32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)
    sample = np.random.default_rng(2024).integers(0, 2**32, 1 << 20, dtype=np.uint64)
    sample = sample.astype(np.uint32).view(np.float32)
    specials = _bits([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38,
                      1.1754944e-38, -1.1754944e-38, 3.4028235e38, -3.4028235e38])
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7FC12345], np.uint32).view(np.float32)
    # Thresholds of the implementations and of f32 itself, each with its neighbours:
    # exp overflow (88.72284) and the clamp, results entering the subnormals (-87.34)
    # and rounding to 0 (-103.97) and the clamp, the range reduction's n = +-1 switch,
    # the polynomial/exp switches of tanh (0.5625) and erf (0.875, 4.0), and the
    # points where tanh, erf and sigmoid saturate.
    centers = [88.72284, 89.0, -87.33655, -103.97208, -104.0, 0.34657359, 0.5625, 0.875,
               4.0, 3.832, 9.01, 16.64, -16.64, 1.0, 2.0**-12, 2.0**-24]
    windows = [_window(s * c, 4096) for c in centers for s in (1.0, -1.0)]
    return np.concatenate([sweep, sample, specials, nans, *windows])


@pytest.fixture(scope="module")
def inputs():
    return _inputs()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_max_ulp_error_over_strided_sweep_of_all_f32(inputs, name):
    which = FUNCTIONS.index(name)
    y = np.empty_like(inputs)
    _apply(which, inputs, y)
    worst, worst_at, bad, bad_at = _ulp_report(which, inputs, y)
    assert bad == 0, f"{name}({inputs[bad_at]!r}) = {y[bad_at]!r}: wrong NaN/inf/zero sign ({bad} cases)"
    assert worst <= MAX_ULP, f"{name}({inputs[worst_at]!r}) = {y[worst_at]!r} is {worst} ulp off"


def _exact(which, xs):
    xs = _bits(xs)
    y = np.empty_like(xs)
    _apply(which, xs, y)
    return y


def _same(got, want):
    got, want = _bits(got), _bits(want)
    both_nan = np.isnan(got) & np.isnan(want)
    return bool(np.all(both_nan | (got.view(np.uint32) == want.view(np.uint32))))


NAN = np.float32("nan")
INF = np.float32("inf")


@pytest.mark.parametrize("name, xs, want", [
    # 88.72283: the largest x with finite exp; -103.97208: the smallest with exp > 0
    ("exp", [-np.inf, np.inf, np.nan, 0.0, -0.0, 88.72283, 88.72284, 1000.0, -103.97208, -103.972084, -1000.0],
     [0.0, np.inf, np.nan, 1.0, 1.0, 3.4027985e38, np.inf, np.inf, 1e-45, 0.0, 0.0]),
    ("tanh", [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 1e-45, -1e-45, 20.0, -20.0],
     [1.0, -1.0, np.nan, 0.0, -0.0, 1e-30, -1e-30, 1e-45, -1e-45, 1.0, -1.0]),
    ("sigmoid", [np.inf, -np.inf, np.nan, 0.0, -0.0, 20.0, -200.0],
     [1.0, 0.0, np.nan, 0.5, 0.5, 1.0, 0.0]),
    ("erf", [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 5.0, -5.0],
     [1.0, -1.0, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1.0, -1.0]),
])
def test_special_values_are_exact(name, xs, want):
    got = _exact(FUNCTIONS.index(name), xs)
    assert _same(got, want), f"{name}{tuple(xs)} = {got.tolist()}, expected {want}"


def test_nan_payloads_stay_nan():
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7FC12345], np.uint32).view(np.float32)
    for which in range(len(FUNCTIONS)):
        assert np.isnan(_exact(which, nans)).all(), FUNCTIONS[which]


def test_sigmoid_keeps_relative_accuracy_for_large_negative_x():
    xs = _bits([-80.0, -87.0, -90.0, -100.0, -103.0])
    got = _exact(FUNCTIONS.index("sigmoid"), xs).astype(np.float64)
    want = np.array([1.0 / (1.0 + math.exp(-float(x))) for x in xs])
    assert got[0] == pytest.approx(1.8048513e-35, rel=3e-7)
    assert np.all(got > 0)
    ulp = np.spacing(np.float32(want).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= 2 * ulp)


@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_odd_functions_are_exactly_odd(inputs, name):
    which = FUNCTIONS.index(name)
    x = inputs[:1 << 22]
    plus, minus = np.empty_like(x), np.empty_like(x)
    _apply(which, x, plus)
    _apply(which, -x, minus)
    assert _same(minus, -plus)


def test_f32_in_f32_out_and_f64_is_libm():
    for which, name in enumerate(FUNCTIONS):   # numba boxes f32 results as Python floats
        assert _scalar(which, np.float32(0.3)) == _exact(which, [0.3])[0], name
    returns = {sig.args[1]: sig.return_type for sig in _scalar.nopython_signatures}
    assert returns[numba.types.float32] == numba.types.float32
    x = 0.3
    assert _scalar(0, x) == math.exp(x)
    assert _scalar(1, x) == math.tanh(x)
    assert _scalar(2, x) == 1.0 / (1.0 + math.exp(-x))
    assert _scalar(3, x) == math.erf(x)


def test_f32_exp_vectorizes():
    """Much faster than one libm call per element, the sign that LLVM vectorized the loop."""
    x = np.random.default_rng(1).uniform(-80, 80, 10_000_000).astype(np.float32)
    out = np.empty_like(x)
    _apply(0, x, out)
    _apply(LIBM_EXP, x, out)
    poly, libm = [], []
    for _ in range(5):   # interleaved, medians: the machine may be busy
        for which, times in ((0, poly), (LIBM_EXP, libm)):
            start = time.perf_counter()
            _apply(which, x, out)
            times.append(time.perf_counter() - start)
    poly_ns, libm_ns = (np.median(t) / x.size * 1e9 for t in (poly, libm))
    print(f"\nf32 exp over 10M: polynomial {poly_ns:.2f} ns/element, libm {libm_ns:.2f} ns/element, "
          f"speedup {libm_ns / poly_ns:.1f}x")
    assert libm_ns / poly_ns >= 2.0
