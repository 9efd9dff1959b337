"""equal, not_equal, greater, greater_equal, less and less_equal (torch.eq, torch.ne, torch.gt, ...).

BASIC against known values (NaN unordered, -0.0 == 0.0, infinities), numpy's own comparisons on
every pair of dtypes with its promotion and NEP 50 weak Python scalars (an int out of an integer
array's range compared exactly, as numpy 2 does), and PyTorch's on every float dtype, bf16 and
f16 included. Then every engine under test (see conftest) against BASIC, bit for bit: every
dtype and odd sizes (whole and partial 16-lane vectors), the parallel size, broadcasting, Python
scalars on either side, mixed dtypes, special values, strided, negative-stride, broadcast and
read-only views, zero-size and 0-d inputs, and a property test over shapes, layouts and dtype
pairs against numpy. Last the argument errors, the op's category (results never change under an
fp math mode or the mixed precision pass), graphs, dask arrays and device tensors."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import from_torch, needs_torch, to_torch, torch
from support import bits, random_values, run_on

OPS = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
       "less": np.less, "less_equal": np.less_equal}
TORCH = {"equal": "eq", "not_equal": "ne", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le"}
FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}
INTS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}
DTYPES = {**FLOATS, **INTS, "bool": np.bool_}
BF16 = np.dtype(dt.bfloat16)


def basic(op, *args):
    return run_on("basic", op, *args)


def numpy_rule(op, a, b):
    """numpy's comparison; bf16 operands (which numpy does not promote) compare as f32 values, and
    the other operand as numpy would compare it beside float16."""
    if BF16 in (getattr(a, "dtype", None), getattr(b, "dtype", None)):
        a, b = (np.asarray(v).astype(np.float32) if getattr(v, "dtype", None) == BF16 else v for v in (a, b))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(OPS[op](a, b))


def pairs(dtype, shape, seed=0):
    """Two arrays of ``dtype`` that are equal in about a third of their elements, -0.0 against
    0.0 among them: NaN, ±inf and -0.0 first among the floats, the whole range of the integers."""
    rng = np.random.default_rng(seed)
    a = random_values(rng, shape, dtype)
    b = random_values(rng, shape, dtype)
    same = rng.random(shape) < 0.35
    b = np.where(same, a, b).astype(dtype)
    if np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16:
        flip = same & (a.astype(np.float64) == 0)
        b = np.where(flip, np.negative(a), b).astype(dtype)   # -0.0 against 0.0
    return a, b


def assert_same(got, want):
    assert type(got) is np.ndarray and got.dtype == np.bool_, (type(got), getattr(got, "dtype", None))
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def check(engine, op, *args):
    """``engine``'s result is BASIC's, a C-contiguous bool array; returns BASIC's."""
    want = basic(op, *args)
    got = run_on(engine, op, *args)
    assert_same(got, want)
    assert got.flags.c_contiguous
    return want


# -- known values on BASIC -------------------------------------------------------------------------

nan, inf = np.nan, np.inf
A = [1.0, nan, nan, -0.0, 0.0, inf, -inf, inf, 2.0, -3.0, 1.0]
B = [1.0, nan, 1.0, 0.0, -0.0, inf, inf, 1.0, 3.0, -4.0, nan]
KNOWN = {   # written out from IEEE 754's rules, not computed by a library
    "equal":         [1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0],
    "not_equal":     [0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1],
    "greater":       [0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0],
    "greater_equal": [1, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0],
    "less":          [0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0],
    "less_equal":    [1, 0, 0, 1, 1, 1, 1, 0, 1, 0, 0],
}


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(OPS))
def test_known_values(op, dtype):
    f = FLOATS[dtype]
    got = basic(op, np.array(A, f), np.array(B, f))
    assert_same(got, np.array(KNOWN[op], bool))


def test_integers_and_bools_compare_as_their_values():
    a, b = np.array([-128, 127, 0, 5], np.int8), np.array([127, -128, 0, 5], np.int8)
    assert basic("less", a, b).tolist() == [True, False, False, False]
    assert basic("greater_equal", np.array([255, 0], np.uint8), np.array([254, 1], np.uint8)).tolist() == [True, False]
    top = np.iinfo(np.int64).max
    assert basic("less", np.array([top - 1], np.int64), np.array([top], np.int64)).tolist() == [True]
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert basic("greater", t, f).tolist() == [False, True, False, False]   # False < True, as in numpy
    assert basic("equal", t, f).tolist() == [True, False, False, True]
    assert basic("equal", t, 1).tolist() == [True, True, False, False]     # True is 1 beside a number


# -- BASIC against numpy: promotion, weak scalars --------------------------------------------------

NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("op", list(OPS))
def test_array_pairs_compare_as_numpy(op):
    for da in NUMPY_DTYPES:
        for db in NUMPY_DTYPES:
            a, b = np.array([0, 1, 2, 3]).astype(da), np.array([1, 1, 0, 3]).astype(db)
            promoted = np.result_type(da, db)
            if promoted not in dt.SUPPORTED_DTYPES:   # int8 with uint8 is int16
                with pytest.raises(TypeError, match=rf"^{op}: a \({np.dtype(da)}\) and b \({np.dtype(db)}\) promote "
                                                    rf"to int16"):
                    basic(op, a, b)
                continue
            assert_same(basic(op, a, b), OPS[op](a, b))


def test_int64_beside_floats_compares_in_float64_as_numpy():
    big = np.array([2 ** 53 + 1, 2 ** 62], np.int64)
    f32 = np.array([2.0 ** 53, 2.0 ** 62], np.float32)
    # numpy's promotion: both sides in f64, where 2**53 + 1 rounds to 2**53
    assert_same(basic("equal", big, f32), np.equal(big, f32))
    assert basic("equal", big, f32).tolist() == [True, True]
    assert basic("equal", big, np.array([2 ** 53, 2 ** 62], np.int64)).tolist() == [False, True]


SCALARS = [2.5, -1.5, 1, -3, 0, 100, 1000, -1, 2 ** 40, True, False, 1e300, -0.0, nan, inf]


@pytest.mark.parametrize("op", list(OPS))
def test_python_scalars_are_weak_as_in_numpy(op):
    """numpy 2's rule: the scalar takes the array's dtype when its kind fits (an f16 array
    compares with 0.1 rounded to f16), an int out of an integer dtype's range compares exactly."""
    for dtype in NUMPY_DTYPES:
        a = random_values(np.random.default_rng(3), (37,), dtype)
        for scalar in SCALARS + [float(np.float16(0.1)), 0.1, 65520.0]:
            for args in ((a, scalar), (scalar, a)):
                assert_same(basic(op, *args), numpy_rule(op, *args))


def test_sixteen_bit_arrays_compare_with_the_scalar_rounded_to_their_dtype():
    f16 = np.array([0.1, 60000.0, np.inf], np.float16)
    assert basic("equal", f16, 0.1).tolist() == [True, False, False]        # 0.1 rounded to f16
    assert basic("equal", f16, 70000.0).tolist() == [False, False, True]    # past f16's range: inf
    bf16 = np.array([1.0, 1.0078125, 256.0], dt.bfloat16)
    assert basic("equal", bf16, 1.00390625).tolist() == [True, False, False]  # a tie, to even: 1.0
    assert basic("less", bf16, 257).tolist() == [True, True, False]          # 257 is 256 in bf16


def test_bfloat16_promotes_like_float16():
    x = np.array([1.0, 2.0, 0.5, np.nan], dt.bfloat16)
    wide = x.astype(np.float32)
    cases = [(x, np.float16([1, 2.5, 0.5, 1])), (x, np.float32([1, 2.0000002, 0.5, np.nan])),
             (x, np.float64([1, 2, 0.5000001, 0])), (x, np.int8([1, 2, 0, -1])), (np.uint8([1, 3, 0, 1]), x),
             (np.int32([1, 2, 1, 0]), x), (x, np.array([True, False, True, True]))]
    for a, b in cases:
        for op in OPS:
            want = OPS[op](wide if a is x else a, wide if b is x else b)
            assert_same(basic(op, a, b), want)


def test_two_python_scalars_give_a_zero_d_array():
    for op in OPS:
        got = basic(op, 2, 2.5)
        assert type(got) is np.ndarray and got.shape == () and got.dtype == np.bool_
        assert bool(got) == bool(OPS[op](2, 2.5))


# -- BASIC against PyTorch --------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS) + list(INTS) + ["bool"])
@pytest.mark.parametrize("op", list(OPS))
def test_matches_torch(op, dtype):
    fn = getattr(torch, TORCH[op])
    a, b = pairs(DTYPES[dtype], (40, 25), seed=1)
    cases = [(a, b), (a[:, :1], b[:1]), (a.T, b[::-1].T)]
    if dtype in FLOATS:
        s = np.array(A + B, np.float64).astype(DTYPES[dtype])
        cases.append((s[:, None], s[None, :]))
    for x, y in cases:
        assert_same(basic(op, x, y), from_torch(fn(to_torch(x), to_torch(y))))
    # torch wraps -3 to 253 beside uint8; numpy 2 and polyeng compare it exactly (tested above)
    for scalar in {"bool": (True, False), "u8": (2.5, 3, 0)}.get(dtype, (2.5, -3, 0)):
        assert_same(basic(op, a, scalar), from_torch(fn(to_torch(a), scalar)))


# -- every engine against BASIC ---------------------------------------------------------------------

SIZES = [(), (1,), (7,), (16,), (17,), (33,), (3, 5), (1031,), (3, 1000)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", list(OPS))
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    for shape in SIZES:
        check(engine, op, *pairs(DTYPES[dtype], shape, seed=len(shape) + sum(shape)))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "s64", "bool"])
@pytest.mark.parametrize("op", ["equal", "greater", "less_equal"])
def test_large_inputs_run_in_parallel_and_match_basic(engine, op, dtype):
    # past NUMBA's one-thread size, with a remainder after the last full task and vector
    a, b = pairs(DTYPES[dtype], ((1 << 18) + 19,), seed=9)
    check(engine, op, a, b)
    check(engine, op, a.reshape(-1, 1)[:(1 << 18) // 64 * 64].reshape(64, -1), b[:(1 << 18) // 64])


BROADCASTS = [((8, 1, 5), (1, 4, 1)), ((2, 64, 3, 3), (1, 64, 1, 1)), ((), (3, 17)), ((3, 17), ()),
              ((5, 1), (1, 17)), ((17,), (3, 1, 17)), ((1, 1), (1,)), ((4, 33), (33,))]


@pytest.mark.parametrize("dtype", ["f32", "f16", "s8", "bool"])
@pytest.mark.parametrize("op", list(OPS))
def test_broadcasting(engine, op, dtype):
    for i, (sa, sb) in enumerate(BROADCASTS):
        a, _ = pairs(DTYPES[dtype], sa, seed=i)
        _, b = pairs(DTYPES[dtype], sb, seed=i)
        want = check(engine, op, a, b)
        assert want.shape == np.broadcast_shapes(sa, sb)


@pytest.mark.parametrize("op", list(OPS))
def test_python_scalars_on_either_side(engine, op):
    rng = np.random.default_rng(1)
    f16, bf16, f32 = (random_values(rng, (37,), d) for d in (np.float16, dt.bfloat16, np.float32))
    s8, u8, s64 = (random_values(rng, (37,), d) for d in (np.int8, np.uint8, np.int64))
    mask = random_values(rng, (37,), np.bool_)
    cases = [(f16, 2.5), (0.1, f16), (bf16, 1), (-1, bf16), (f32, -0.0), (nan, f32), (f32, inf),
             (s8, 3), (-3, s8), (s8, 1000), (-1, u8), (u8, 2.5), (s64, 2 ** 40), (mask, True), (False, mask),
             (mask, 1), (0.5, mask)]
    for a, b in cases:
        check(engine, op, a, b)


MIXED = [(np.int8, dt.bfloat16), (np.int32, np.float16), (np.float16, dt.bfloat16), (np.float32, np.float64),
         (np.uint8, np.int32), (np.int64, np.float32), (np.uint8, np.float16), (dt.bfloat16, np.float32),
         (np.bool_, np.int8), (np.bool_, np.float32)]


@pytest.mark.parametrize("op", list(OPS))
def test_mixed_dtypes(engine, op):
    rng = np.random.default_rng(2)
    for first, second in MIXED:
        for da, db in ((first, second), (second, first)):
            a = rng.integers(-3, 4, (3, 37)).astype(da)   # small integers: equal in every dtype
            b = rng.integers(-3, 4, (37,)).astype(db)
            check(engine, op, a, b)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(OPS))
def test_special_values_every_pair(engine, op, dtype):
    values = np.array(A + B + [1e-40, -1e-40, 65504.0], np.float64).astype(FLOATS[dtype])
    got = run_on(engine, op, values[:, None], values[None, :])   # every pair, both vector and scalar paths
    assert_same(got, numpy_rule(op, values[:, None], values[None, :]))
    long = np.resize(values, 3 * 16 + 5)
    check(engine, op, long, long[::-1].copy())


def _strided(x):
    return np.repeat(x, 2, axis=1)[:, ::2]


LAYOUTS = {
    "transposed": lambda x: np.ascontiguousarray(x.T).T,
    "negative-strides": lambda x: np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1],
    "strided": _strided,
    "broadcast": lambda x: np.broadcast_to(x[:1], x.shape),
    "read-only": lambda x: np.frombuffer(x.tobytes(), x.dtype).reshape(x.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["f32", "bf16", "u8", "bool"])
@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "greater_equal"])
def test_non_contiguous_and_read_only_inputs(engine, op, dtype, layout):
    a, b = pairs(DTYPES[dtype], (9, 35), seed=4)
    view = LAYOUTS[layout]
    va, vb = view(a), view(b)
    for x, y in ((va, b), (a, vb), (va, vb), (va[:, :1], vb), (va[::2], 0)):
        got = run_on(engine, op, x, y)
        assert_same(got, basic(op, np.ascontiguousarray(x), np.ascontiguousarray(y)))
    np.testing.assert_array_equal(bits(va), bits(view(a)))   # inputs untouched


@pytest.mark.parametrize("op", list(OPS))
def test_zero_size_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16, np.int8, np.bool_):
        for sa, sb in [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0)),
                       ((0,), (1,))]:
            want = check(engine, op, np.zeros(sa, dtype), np.ones(sb, dtype))
            assert want.size == 0 and want.shape == np.broadcast_shapes(sa, sb)


@pytest.mark.parametrize("op", list(OPS))
def test_zero_d_inputs(engine, op):
    for a, b in [(np.array(1.5, np.float32), np.array(1.5, np.float32)), (np.array(np.nan), np.array(np.nan)),
                 (np.array(-0.0, dt.bfloat16), 0.0), (np.array(3, np.int8), np.array([2, 3, 4], np.int8)),
                 (np.array(True), np.array(False))]:
        want = check(engine, op, a, b)
        assert want.shape == np.broadcast_shapes(np.shape(a), np.shape(b))


# -- properties on every engine -------------------------------------------------------------------

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROPERTY_DTYPES = tuple(dt.SUPPORTED_DTYPES)


def values(dtype, shape):
    """Arrays of ``dtype`` over a few values that meet often (so equal is not always false), with
    NaN, ±inf and ±0.0 among the floats and the extremes among the integers."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return hnp.arrays(dtype, shape, elements=st.booleans())
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        elements = st.one_of(st.sampled_from([int(info.min), int(info.max), 0, 1, 2]), st.integers(int(info.min),
                                                                                                  int(info.max)))
        return hnp.arrays(dtype, shape, elements=elements)
    elements = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5])
    arrays = hnp.arrays(np.float32 if dtype == BF16 else dtype, shape, elements=elements)
    return arrays.map(lambda a: a.astype(BF16)) if dtype == BF16 else arrays


@st.composite
def array_pairs(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                                    max_side=5)).input_shapes
    arrays = []
    for shape in shapes:
        array = draw(values(draw(st.sampled_from(PROPERTY_DTYPES)), shape))
        if array.ndim and draw(st.booleans()):
            array = draw(st.sampled_from([np.flip(array, -1), np.repeat(array, 2, axis=-1)[..., ::2]]))
        arrays.append(array)
    return draw(st.sampled_from(list(OPS))), arrays[0], arrays[1]


def compare_engines():
    return [e.name for e in polyeng.engines() if e.available and set(OPS) <= set(e.ops)]


@pytest.mark.parametrize("on", compare_engines())
@SETTINGS
@given(case=array_pairs())
def test_arrays_compare_as_numpy(on, case):
    op, a, b = case
    promoted = dt.result_type(a.dtype, b.dtype)
    if promoted not in dt.SUPPORTED_DTYPES:   # int8 with uint8 is int16
        with pytest.raises(TypeError, match=rf"^{op}: a \({a.dtype}\) and b \({b.dtype}\) promote to {promoted}"):
            run_on(on, op, a, b)
        return
    assert_same(run_on(on, op, a, b), numpy_rule(op, a, b))


# -- arguments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", list(OPS))
def test_bad_arguments_name_the_argument(op):
    fn = getattr(polyeng, op)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"^a \(2, 3\) and b \(4,\) do not broadcast together"):
        fn(x, np.ones(4, np.float32))
    with pytest.raises(TypeError, match=rf"^{op}: a \(int8\) and b \(uint8\) promote to int16"):
        fn(np.ones(2, np.int8), np.ones(2, np.uint8))
    with pytest.raises(TypeError, match=r"^b=\(1\+2j\): polyeng has no complex dtype"):
        fn(x, 1 + 2j)
    with pytest.raises(TypeError, match=r"^a has dtype complex64, which polyeng does not support"):
        fn(x.astype(np.complex64), x)
    with pytest.raises(TypeError, match=r"^b has dtype int16, which polyeng does not support"):
        fn(x, np.ones(3, np.int16))
    with pytest.raises(TypeError, match=r"^a=None: expected an array"):
        fn(None, x)
    with pytest.raises(TypeError, match=r"^b='1': expected an array or array-like of numbers"):
        fn(x, "1")
    with pytest.raises(ValueError, match=r"^b=1180591620717411303424: does not fit int64"):
        fn(np.ones(2, np.int64), 2 ** 70)
    with pytest.raises(TypeError, match=r"^a is a masked array"):
        fn(np.ma.masked_array([1.0, 2.0], [True, False]), 1.0)
    with pytest.raises(ValueError, match=r"^a \(1000000, 1\) and b \(1, 1000000\): .*more than this machine"):
        fn(np.broadcast_to(np.float32(0), (10 ** 6, 1)), np.broadcast_to(np.float32(0), (1, 10 ** 6)))


def test_lists_and_numpy_scalars_are_arrays():
    assert_same(polyeng.less([1.5, -2.0], [2, -2]), np.array([True, False]))
    # numpy scalars are arrays with a dtype of their own (strong, as in numpy 2)
    assert_same(polyeng.equal(np.float32(0.1), np.array([0.1], np.float16)), np.array([False]))


def test_specs_are_exact_deny_elementwise_ops():
    from polyeng.amp import Category
    from polyeng.ops import OPS as SPECS
    for op in OPS:
        spec = SPECS[op]
        assert spec.exact and spec.category is Category.DENY and spec.chunking == "elementwise"
        assert spec.family == "compare" and getattr(polyeng, op) is spec.function and spec.ufuncs == (op,)


# -- mixed precision, graphs, dask, device tensors ------------------------------------------------

def test_no_fp_math_mode_changes_a_comparison():
    a = np.array([1.0, 1.0 + 2.0 ** -10, 70000.0, 3.0], np.float32)   # one bf16 value; beyond f16's range
    b = np.array([1.0 + 2.0 ** -10, 1.0, np.inf, 3.0], np.float32)
    for mode in ("strict", "bf16", "f16", "tf32", "any"):
        with polyeng.fp_math_mode(mode):
            assert polyeng.equal(a, b).tolist() == [False, False, False, True]
            assert polyeng.less(a, b).tolist() == [True, False, True, False]
            decision = polyeng.explain("less", a, b)
            assert decision.compute_type == "bool"


def test_the_mixed_precision_pass_keeps_comparisons_in_their_dtype():
    """A DENY comparison takes a bf16 (or f16) value back to f32 and keeps its f32 constant, so
    1 < 1 + 2**-12 stays true: as FOLLOW it would compare with the constant rounded to 1.0."""
    weight = np.eye(4, dtype=np.float32)
    limit = np.full(4, 1.0 + 2.0 ** -12, np.float32)   # no 16-bit float holds it

    def model(x):
        return polyeng.less(polyeng.linear(x, weight), limit), polyeng.equal(x, limit)
    x = np.array([[1.0, 1.0 + 2.0 ** -12, 2.0, 0.5]], np.float32)
    graph = polyeng.graph.trace(model, x)
    assert graph(x)[0].tolist() == [[True, False, False, True]]
    for dtype in ("bfloat16", "float16"):
        mixed = polyeng.amp.to_mixed_precision(graph, dtype=dtype)
        nodes = {n.op: n for n in mixed.nodes}
        assert nodes["linear"].amp.category == "allow" and nodes["linear"].amp.mixed
        assert nodes["less"].amp.category == "deny" and not nodes["less"].amp.mixed
        less, equal = mixed(x)
        # the linear layer rounded its input to 1.0; the comparison itself rounds nothing
        assert less.tolist() == [[True, True, False, True]]
        assert_same(equal, graph(x)[1])


def test_graph_of_comparisons_and_numpy_ufuncs():
    x = np.array([[1.0, np.nan, -0.0, 3.0]], np.float32)
    graph = polyeng.graph.trace(lambda v: np.greater(v, 0.5), x)
    assert [n.op for n in graph.nodes] == ["greater"]
    assert graph.nodes[0].dtype == np.bool_
    assert_same(graph(x), np.array([[True, False, False, True]]))
    y = np.array([[0.0, 7.0, 1.0, np.inf], [0.6, 0.4, np.nan, -np.inf]], np.float32)
    assert_same(graph(y), y > 0.5)   # another batch through the same graph


@pytest.mark.parametrize("op", list(OPS))
def test_dask_arrays_stay_lazy_and_equal_the_eager_op(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    a, b = pairs(np.float32, (6, 8), seed=5)
    lazy = getattr(polyeng, op)(da.from_array(a, chunks=(4, 3)), da.from_array(b[:1], chunks=(1, 5)))
    assert isinstance(lazy, da.Array) and lazy.dtype == np.bool_ and lazy.shape == a.shape
    assert_same(dask.compute(lazy, scheduler="sync")[0], OPS[op](a, b[:1]))
    scalar = getattr(polyeng, op)(da.from_array(a, chunks=(3, 8)), 0.5)
    assert_same(dask.compute(scalar, scheduler="sync")[0], OPS[op](a, np.float32(0.5)))


@pytest.mark.device_tensors
@pytest.mark.uses_ops("less", "equal", "not_equal")
@pytest.mark.parametrize("dtype", [np.float64, dt.bfloat16, np.int8], ids=lambda d: np.dtype(d).name)
def test_device_tensors_stay_on_their_engine(engine, dtype):
    a, b = pairs(dtype, (5, 37), seed=6)
    ta, tb = polyeng.to_device(a, engine), polyeng.to_device(b, engine)
    for op in ("less", "equal", "not_equal"):
        result = getattr(polyeng, op)(ta, tb)
        assert not isinstance(result, np.ndarray)   # stayed on the device
        assert_same(polyeng.to_numpy(result), basic(op, a, b))
    mixed = polyeng.less(ta, b[:1])                  # a host operand is brought to the device
    assert not isinstance(mixed, np.ndarray)
    assert_same(polyeng.to_numpy(mixed), basic("less", a, b[:1]))
