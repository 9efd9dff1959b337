"""cast rounds to nearest even, bit for bit.

Where numpy / ml_dtypes convert with a single correct rounding (f32 -> bf16, f32/f64 -> f16,
f64 -> f32) they are the reference; f64 -> bf16 and integers -> bf16 are checked against
`exact_round`, an integer-arithmetic rounding written here, because ml_dtypes takes
f64 -> bf16 through f32 and can round twice.

First BASIC against known values and the bad-dtype rule; at the end, cast on every engine under
test (see conftest) bit for bit against BASIC, for every source dtype and target float type:
the pairs, layouts, sizes past a vector or work item's run, integer and special inputs,
same-dtype copies and, on engines with device tensors (OPENCL), device-resident inputs."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip


pytestmark = pytest.mark.uses_ops("cast")


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_cast_rounds_to_nearest_even():
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -30, -(1 + 2 ** -8 + 2 ** -30),
                  np.inf, -np.inf, 3.5e38, 1e-40])
    out = polyeng.cast(x, polyeng.bfloat16)
    assert out.dtype == dt.bfloat16
    # ties go to even; just above a tie goes up even from f64 (no double rounding through f32)
    assert out.astype(np.float64).tolist()[:6] == [1.0, 1 + 2 ** -6, 1 + 2 ** -7, -(1 + 2 ** -7), np.inf, -np.inf]
    assert out.astype(np.float64)[6] == np.inf           # overflow -> inf
    assert out.astype(np.float64)[7] == pytest.approx(1e-40, rel=2 ** -7)   # subnormal kept
    assert np.isnan(polyeng.cast(np.array([np.nan]), "bf16").astype(np.float32)).all()
    assert polyeng.cast(np.array([65520.0], np.float32), "f16")[0] == np.inf
    assert polyeng.cast(np.array([1, 2], np.int8), "float32").tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="dtype=int32: cast converts to a floating-point type"):
        polyeng.cast(np.ones(2), "int32")
    with pytest.raises(TypeError, match="dtype='float8'"):
        polyeng.cast(np.ones(2), "float8")


# -- rounding to nearest even, on every engine with a cast kernel ----------------------------------

# The references' own conversions of NaN and out-of-range values warn under numpy's default
# error settings; cast itself must not (test_no_floating_point_warnings).
@pytest.fixture
def quiet_references():
    with np.errstate(over="ignore", invalid="ignore"):
        yield


BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
# precision (with the implicit bit), smallest and largest normal exponent
FORMATS = {BF16: (8, -126, 127), F16: (11, -14, 15), F32: (24, -126, 127)}
UINT = {BF16: np.uint16, F16: np.uint16, F32: np.uint32, F64: np.uint64}


def cast_engines():
    """Every available engine with a cast kernel, so a new kernel is held to the same bits."""
    return [e.name for e in polyeng.engines() if e.available and "cast" in e.ops]


@pytest.fixture(params=cast_engines())
def cast(request):
    def run(x, dtype):
        with polyeng.compute_eng(request.param):
            return polyeng.cast(x, dtype)
    return run


def exact_round(x, dtype):
    """``x`` (anything float64 holds exactly) rounded to nearest even in ``dtype``.

    x = m * 2**e with an integer m; the result's quantum is 2**q, so the rounding is an integer
    shift of m with a remainder compared against half a quantum, nothing rounded on the way.
    """
    dtype = np.dtype(dtype)
    p, emin, emax = FORMATS[dtype]
    x = np.asarray(x, dtype=F64)
    bits = x.view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    biased = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    normal = biased > 0
    m = np.where(normal, (bits & np.uint64((1 << 52) - 1)) | np.uint64(1 << 52),
                 bits & np.uint64((1 << 52) - 1))
    e = np.where(normal, biased - 1075, -1074)
    lead = np.where(normal, biased - 1023, -1023)          # f64 subnormals are far below any emin
    q = np.maximum(lead, emin) - (p - 1)
    shift = np.minimum(q - e, 62)                         # past 54 bits everything is below half
    assert (shift[np.isfinite(x)] >= 1).all()
    shift_u = shift.astype(np.uint64)
    r = m >> shift_u
    remainder = m & ((np.uint64(1) << shift_u) - np.uint64(1))
    half = np.uint64(1) << (shift_u - np.uint64(1))
    r = r + ((remainder > half) | ((remainder == half) & (r & np.uint64(1) == 1))).astype(np.uint64)
    overflow = (q + p - 1 > emax) | ((r == np.uint64(1 << p)) & (q + p > emax))
    magnitude = np.ldexp(r.astype(F64), q.astype(np.int32))   # r <= 2**p: exact
    magnitude = np.where(overflow | np.isinf(x), np.inf, magnitude)
    value = np.where(negative, -magnitude, magnitude)
    value = np.where(np.isnan(x), np.nan, value)
    return value.astype(dtype)   # exact: every value is representable


def assert_same_bits(got, want):
    """Bitwise equal, except that any NaN matches any NaN (payloads are not specified)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan_got, nan_want = np.isnan(got.astype(F64)), np.isnan(want.astype(F64))
    np.testing.assert_array_equal(nan_got, nan_want)
    g, w = got.view(UINT[got.dtype])[~nan_want], want.view(UINT[want.dtype])[~nan_want]
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, (f"{bad.size} of {g.size} differ; first inputs' results got "
                           f"{[hex(int(v)) for v in g[bad[:5]]]} want {[hex(int(v)) for v in w[bad[:5]]]}")


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def all_finite(dtype):
    """Every finite value of a 16-bit type, as float64, sorted, -0.0 kept."""
    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype).astype(F64)
    return np.sort(values[np.isfinite(values)])


def tie_sweep(target, source):
    """For every pair of neighbours of ``target`` (and the overflow edge): the midpoint and its
    neighbours in ``source`` -- exact ties with odd and even lower mantissas, just above and
    just below. Every value here is exact in ``source``."""
    grid = np.unique(all_finite(target))
    top = grid[-1] + (grid[-1] - grid[-2])                 # 2**(emax+1): where Inf would sit
    grid = np.concatenate([-top[None], grid, top[None]])
    mid = (grid[:-1] + grid[1:]) / 2                        # exact in f64
    mid = mid.astype(source)
    assert (mid.astype(F64) == (grid[:-1] + grid[1:]) / 2).all()   # exact in the source too
    inf = np.array(np.inf, source)
    return np.concatenate([mid, np.nextafter(mid, inf), np.nextafter(mid, -inf), grid.astype(source)])


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0]


def random_f32(rng, n=200_000):
    return rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(F32)


def random_f64_near(rng, target, n=200_000):
    """Random f64 bit patterns whose exponent lies around ``target``'s range (from below its
    smallest subnormal to above its overflow), plus f64 subnormals, NaN payloads and Inf."""
    p, emin, emax = FORMATS[target]
    exponent = rng.integers(1023 + emin - p - 3, 1023 + emax + 3, size=n, dtype=np.int64).astype(np.uint64)
    mantissa = rng.integers(0, 1 << 52, size=n, dtype=np.uint64)
    sign = rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    bits = sign | (exponent << np.uint64(52)) | mantissa
    # Mantissas with a tail of zeros below the target's rounding bit make exact ties and
    # near-ties common instead of vanishingly rare.
    tail = np.uint64(52 - p)                               # bits below the rounding bit
    tied = (bits >> tail) << tail
    sticky = rng.integers(0, 4, size=n, dtype=np.uint64)   # 0: tie, 1..3: just above in f64 ulps
    bits[: n // 2] = tied[: n // 2] | sticky[: n // 2]
    extra = np.array([1, 0x000FFFFFFFFFFFFF, 0x8000000000000001, 0x7FF0000000000001,
                      0xFFF8000000000000, 0x7FF0000000000000, 0xFFF0000000000000], dtype=np.uint64)
    return np.concatenate([bits, extra]).view(F64)


# ---------------------------------------------------------------------------
# The reference is right: it agrees with every conversion known to round once
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("quiet_references")
def test_reference_matches_single_rounding_conversions():
    rng = np.random.default_rng(1)
    f32 = np.concatenate([random_f32(rng, 50_000), tie_sweep(BF16, F32), tie_sweep(F16, F32)])
    assert_same_bits(exact_round(f32, BF16), f32.astype(BF16))
    assert_same_bits(exact_round(f32, F16), f32.astype(F16))
    f64 = np.concatenate([random_f64_near(rng, F16, 50_000), random_f64_near(rng, F32, 50_000),
                          tie_sweep(F16, F64)])
    assert_same_bits(exact_round(f64, F16), f64.astype(F16))
    assert_same_bits(exact_round(f64, F32), f64.astype(F32))


# ---------------------------------------------------------------------------
# cast against the references
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target", [BF16, F16], ids=["bf16", "f16"])
def test_f32_sweep(cast, target):
    rng = np.random.default_rng(20240601)
    x = np.concatenate([np.array(SPECIALS, F32), tie_sweep(target, F32), random_f32(rng),
                        np.array([1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38], F32)])  # f32 subnormals
    got = cast(x, target)
    assert_same_bits(got, x.astype(target))   # ml_dtypes for bf16, numpy for f16: one rounding


@pytest.mark.usefixtures("quiet_references")
def test_f64_to_f16_sweep(cast):
    rng = np.random.default_rng(7)
    x = np.concatenate([np.array(SPECIALS, F64), tie_sweep(F16, F64), random_f64_near(rng, F16)])
    assert_same_bits(cast(x, F16), x.astype(F16))


@pytest.mark.usefixtures("quiet_references")
def test_f64_to_bf16_sweep(cast):
    rng = np.random.default_rng(11)
    x = np.concatenate([np.array(SPECIALS, F64), tie_sweep(BF16, F64), random_f64_near(rng, BF16)])
    assert_same_bits(cast(x, BF16), exact_round(x, BF16))


@pytest.mark.usefixtures("quiet_references")
def test_f64_to_f32_sweep(cast):
    rng = np.random.default_rng(13)
    x = np.concatenate([np.array(SPECIALS, F64), random_f64_near(rng, F32)])
    assert_same_bits(cast(x, F32), x.astype(F32))


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("source,target", [(BF16, F16), (F16, BF16)], ids=["bf16->f16", "f16->bf16"])
def test_every_16_bit_pattern_between_16_bit_types(cast, source, target):
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(source)
    assert_same_bits(cast(x, target), exact_round(x.astype(F64), target))


@pytest.mark.usefixtures("quiet_references")
def test_double_rounding_case_goes_up():
    """1 + 2**-8 + 2**-30 lies above the bf16 tie at 1 + 2**-8, so it rounds up; through f32
    it first becomes the tie itself (the 2**-30 is lost), which then rounds to even: 1."""
    x = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30)], F64)
    with polyeng.compute_eng("basic"):
        got = polyeng.cast(x, BF16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(F64), [1 + 2**-7, -(1 + 2**-7)])
    np.testing.assert_array_equal(x.astype(BF16).astype(F64), [1.0, -1.0])   # why ml_dtypes is no reference
    assert_same_bits(got, exact_round(x, BF16))


# ---------------------------------------------------------------------------
# Literal edge cases
# ---------------------------------------------------------------------------

# (input, expected); an input (v, +1) / (v, -1) is the next value above / below v in the source type
F16_CASES = [
    (65504.0, 65504.0), (65519.99, 65504.0), (65520.0, np.inf), (-65520.0, -np.inf), (1e6, np.inf),
    ((65520.0, -1), 65504.0), ((-65520.0, +1), -65504.0),
    (1 + 2**-11, 1.0), (1 + 3 * 2**-11, 1 + 2**-9),                      # ties: even stays, odd goes up
    ((1 + 2**-11, +1), 1 + 2**-10), ((1 + 3 * 2**-11, -1), 1 + 2**-10),
    (2**-25, 0.0), (-(2**-25), -0.0), (3 * 2**-25, 2**-23),             # smallest subnormal ties
    ((2**-25, +1), 2**-24), ((-(2**-25), -1), -(2**-24)), (2**-24, 2**-24), (2**-14 - 2**-24, 2**-14 - 2**-24),
    (1e-30, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, -np.inf),
]
BF16_MAX = 3.3895313892515355e38
BF16_CASES = [
    (BF16_MAX, BF16_MAX), (-BF16_MAX, -BF16_MAX),
    (BF16_MAX + 2**119, np.inf), (-(BF16_MAX + 2**119), -np.inf),       # tie above max: odd -> Inf
    ((BF16_MAX + 2**119, -1), BF16_MAX),
    (1 + 2**-8, 1.0), (1 + 3 * 2**-8, 1 + 2**-6), ((1 + 2**-8, +1), 1 + 2**-7), ((1 + 3 * 2**-8, -1), 1 + 2**-7),
    (2**-134, 0.0), (-(2**-134), -0.0), (3 * 2**-134, 2**-132), ((2**-134, +1), 2**-133),
    (2**-133, 2**-133), (2**-126 - 2**-133, 2**-126 - 2**-133), (1e-300, 0.0), (-0.0, -0.0),
    (np.inf, np.inf), (-np.inf, -np.inf),
]


def case_input(case, source):
    if isinstance(case, tuple):
        value, direction = case
        return np.nextafter(source.type(value), source.type(direction * np.inf))
    return source.type(case)


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target,cases", [(F16, F16_CASES), (BF16, BF16_CASES)], ids=["f16", "bf16"])
@pytest.mark.parametrize("source", [F32, F64], ids=["from_f32", "from_f64"])
def test_literal_edges(cast, source, target, cases):
    x = np.array([case_input(c[0], source) for c in cases], source)
    want = np.array([c[1] for c in cases], F64).astype(target)
    got = cast(x, target)
    assert_same_bits(got, want)
    assert np.signbit(got.astype(F64)).tolist() == np.signbit(want.astype(F64)).tolist()


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target", [BF16, F16, F32, F64], ids=["bf16", "f16", "f32", "f64"])
@pytest.mark.parametrize("source", [F32, F64], ids=["f32", "f64"])
def test_nan_stays_nan_and_sign_of_zero_kept(cast, source, target):
    payloads = {F32: [0x7F800001, 0xFF800001, 0x7FC00000, 0x7FBFFFFF, 0x80000000],
                F64: [0x7FF0000000000001, 0xFFF0000000000001, 0x7FF8000000000000, 0x8000000000000000]}
    x = np.array(payloads[source], UINT[source]).view(source)
    got = cast(x, target)
    assert got.dtype == target
    assert np.isnan(got.astype(F64)[:-1]).all()
    assert got.astype(F64)[-1] == 0 and np.signbit(got.astype(F64)[-1])


# ---------------------------------------------------------------------------
# Integer and bool sources
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target", [BF16, F16, F32, F64], ids=["bf16", "f16", "f32", "f64"])
def test_int8_all_values_exact(cast, target):
    x = np.arange(-128, 128, dtype=np.int8)
    got = cast(x, target)
    assert got.dtype == target
    np.testing.assert_array_equal(got.astype(F64), np.arange(-128, 128))


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target", [BF16, F16, F32], ids=["bf16", "f16", "f32"])
def test_int32_rounds_to_nearest_even(cast, target):
    rng = np.random.default_rng(3)
    edges = [0, 1, -1, 255, 256, 257, 258, 259, -257, -259, 2049, 2051, 65504, 65519, 65520, -65520,
             2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**31 - 1, -(2**31), 2**31 - 2**23, 2**31 - 2**23 - 1]
    # near-ties of bf16: 8 leading bits, the rounding bit set, then 0..3 below it
    length = rng.integers(10, 32, size=20_000)
    top = rng.integers(128, 256, size=20_000)
    near_tie = (top << (length - 8)) | (1 << (length - 9)) | rng.integers(0, 4, size=20_000)
    near_tie *= rng.choice([-1, 1], size=20_000)
    x = np.concatenate([np.array(edges, np.int32), near_tie.astype(np.int32),
                        rng.integers(-(2**31), 2**31, size=20_000, dtype=np.int64).astype(np.int32),
                        rng.integers(-70_000, 70_000, size=20_000).astype(np.int32)])
    got = cast(x, target)
    assert_same_bits(got, exact_round(x.astype(F64), target))
    if target != BF16:
        assert_same_bits(got, x.astype(target))


@pytest.mark.usefixtures("quiet_references")
def test_int32_literals(cast):
    # 2**24 + 2**16 + 1 is just above a bf16 tie; through f32 it would become the tie (ml_dtypes)
    x = np.array([257, 259, 2**24 + 1, 65520, 65519, -(2**31), 2**24 + 2**16 + 1], np.int32)
    np.testing.assert_array_equal(cast(x, BF16).astype(F64),
                                  [256, 260, 2**24, 65536, 65536, -(2**31), 2**24 + 2**17])
    np.testing.assert_array_equal(cast(x, F16).astype(F64),
                                  [257, 259, np.inf, np.inf, 65504, -np.inf, np.inf])
    np.testing.assert_array_equal(cast(x, F32).astype(F64),
                                  [257, 259, 2**24, 65520, 65519, -(2**31), 2**24 + 2**16])


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("target", [BF16, F16, F32, F64], ids=["bf16", "f16", "f32", "f64"])
def test_bool(cast, target):
    got = cast(np.array([[True, False], [False, True]]), target)
    assert got.dtype == target and got.shape == (2, 2)
    np.testing.assert_array_equal(got.astype(F64), [[1, 0], [0, 1]])


@pytest.mark.usefixtures("quiet_references")
def test_int64_beyond_2_53_to_bf16(cast):
    # 2**62 + 2**54 + 1 is above the bf16 tie at 2**62 + 2**54; in f64 it becomes the tie
    x = np.array([2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 2**62 + 2**54, -(2**63), 2**63 - 1], np.int64)
    assert cast(x, BF16).astype(F64).tolist() == [2**62 + 2**55, -(2**62 + 2**55), 2**62, -(2**63), 2**63]
    strided = np.repeat(x, 2)[::2]
    assert cast(strided, BF16).astype(F64).tolist() == [2**62 + 2**55, -(2**62 + 2**55), 2**62, -(2**63), 2**63]


# ---------------------------------------------------------------------------
# Shape, layout, names
# ---------------------------------------------------------------------------

@pytest.mark.usefixtures("quiet_references")
def test_shape_layout_and_dtype_names(cast):
    x = (np.arange(24, dtype=F64).reshape(2, 3, 4) * (1 + 2**-8 + 2**-30)).transpose(2, 0, 1)[::-1]
    for name in ("bf16", "bfloat16", BF16, polyeng.bfloat16):
        got = cast(x, name)
        assert got.dtype == BF16 and got.shape == x.shape
        assert_same_bits(got, exact_round(x, BF16))
    assert cast(np.zeros((0, 3), F32), F16).shape == (0, 3)
    assert_same_bits(cast(np.float64(1 + 2**-8 + 2**-30), "bf16"), np.array(1 + 2**-7, BF16))


@pytest.mark.usefixtures("quiet_references")
def test_no_floating_point_warnings(cast):
    """Overflow to Inf and NaN are defined results, even under np.errstate(all="raise")."""
    x = np.array([1e300, -1e300, np.nan, 70000.0, 1e-300], F64)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        for target in (BF16, F16, F32):
            got = cast(x, target).astype(F64)
            assert np.isinf(got[:2]).all() and np.isnan(got[2]) and got[4] == 0


@pytest.mark.usefixtures("quiet_references")
@pytest.mark.parametrize("bad", [np.int8, "int32", np.bool_])
def test_non_float_target_rejected(bad):
    with pytest.raises(TypeError, match="dtype"):
        polyeng.cast(np.ones(3, F32), bad)


# -- every engine bit for bit against BASIC --------------------------------------------------------

TARGETS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def run(engine, x, dtype):
    with polyeng.compute_eng(engine, fallback=False), np.errstate(all="ignore"):
        return polyeng.cast(x, dtype)


def source_values(dtype):
    rng = np.random.default_rng(0)
    if dtype == dt.bool_:
        return rng.random(101) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1, -1, 255, 256, 65504, 65519, 65520, 2 ** 24 + 1, 2 ** 24 + 3,
                 2 ** 31 - 1, 2 ** 53 + 1, (2 ** 24 + 1) << 30, ((2 ** 23 + 1) << 40) + 1, -((2 ** 24 + 3) << 20)]
        edges = [v for v in edges if info.min <= v <= info.max]
        spread = rng.integers(info.min, info.max, size=200, dtype=dtype, endpoint=True)
        return np.concatenate([np.array(edges, dtype), spread])
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 65520.0, 65519.99, 3.4e38, -3.4e38,
                1e-8, 6e-8, 2.0 ** -24, 2.0 ** -25, 1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -40, 1e-45, 1e-300, 1e300]
    with np.errstate(all="ignore"):
        values = np.concatenate([np.array(specials), rng.standard_normal(300) * 10.0 ** rng.integers(-8, 8, 300)])
        return values.astype(dtype)


def assert_bits_match(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), nan)
    kind = UINT_OF_SIZE[want.dtype.itemsize]
    np.testing.assert_array_equal(got.view(kind)[~nan], want.view(kind)[~nan])


SOURCES = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool_]


@pytest.mark.parametrize("target", TARGETS, ids=dt.short_name)
@pytest.mark.parametrize("source", SOURCES, ids=dt.short_name)
def test_bit_identical_to_basic(engine, source, target):
    x = source_values(source)
    assert_bits_match(run(engine, x, target), run("basic", x, target))


@pytest.mark.parametrize("target", [dt.bfloat16, dt.float16], ids=dt.short_name)
def test_layouts_and_shapes(engine, target):
    x = source_values(dt.float64)[:300].reshape(10, 30)
    for view in (x.T, x[:, ::3], x[::-1], x[3, 4], x.reshape(2, 5, 30)[:, 1:4]):
        got = run(engine, view, target)
        assert got.shape == np.shape(view)
        assert_bits_match(np.asarray(got), np.asarray(run("basic", view, target)))


@pytest.mark.parametrize("size", [1, 15, 16, 17, 255, 257, 4097])
def test_sizes_around_runs_and_groups(engine, size):
    x = (np.random.default_rng(size).standard_normal(size) * 1e4).astype(np.float32)
    x[::7] = np.nan
    for target in (dt.bfloat16, dt.float16, dt.float64):
        assert_bits_match(run(engine, x, target), run("basic", x, target))


def test_same_dtype_is_a_copy(engine):
    x = np.arange(6, dtype=np.float32)
    y = run(engine, x, "f32")
    assert y.dtype == x.dtype and not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, y)
    payloads = np.array([0x7FC00001, 0xFF800123, 0x7F800001], np.uint32).view(np.float32)   # NaN payloads
    assert run(engine, payloads, np.float32).view(np.uint32).tolist() == payloads.view(np.uint32).tolist()


@pytest.mark.device_tensors
@pytest.mark.parametrize("target", TARGETS, ids=dt.short_name)
@pytest.mark.parametrize("source", SOURCES, ids=dt.short_name)
def test_device_inputs_give_device_results(engine, source, target):
    x = source_values(source)
    t = device_tensor_or_skip(x, engine)
    got = run(engine, t, target)
    assert type(got) is type(t) and got.shape == x.shape and got.dtype == target
    assert_bits_match(polyeng.to_numpy(got), run("basic", x, target))


def test_bad_target_is_rejected_before_any_kernel(engine):
    with pytest.raises(TypeError, match="dtype"):
        run(engine, np.ones(3, np.float32), np.int32)
