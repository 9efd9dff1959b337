"""logical_and, logical_or, logical_xor, logical_not (bool operands), isnan and isinf (any dtype).

BASIC against truth tables and known classifications (NaN of either sign and any payload, ±inf,
-0.0, the largest finite values and subnormals), and against numpy and PyTorch; integers and
bools are never NaN or infinite, as torch.isnan says. Then every engine under test (see conftest)
against BASIC, bit for bit: every dtype of isnan and isinf, odd sizes (whole and partial 16-lane
vectors), the parallel size, broadcasting, Python bools on either side, strided, negative-stride,
broadcast and read-only views, zero-size and 0-d inputs. Last the argument errors (numbers where
bools are wanted are a TypeError naming the argument), the category (no fp math mode or mixed
precision pass changes a result), graphs, dask arrays and device tensors."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import needs_torch, to_torch, torch
from support import bits, random_values, run_on

BINARY = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
UNARY = {"logical_not": np.logical_not, "isnan": np.isnan, "isinf": np.isinf}
OPS = {**BINARY, **UNARY}
FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}
INTS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "s64": np.int64}
DTYPES = {**FLOATS, **INTS, "bool": np.bool_}
BF16 = np.dtype(dt.bfloat16)


def basic(op, *args):
    return run_on("basic", op, *args)


def assert_same(got, want):
    assert type(got) is np.ndarray and got.dtype == np.bool_, (type(got), getattr(got, "dtype", None))
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


def check(engine, op, *args):
    """``engine``'s result is BASIC's, a C-contiguous bool array; returns BASIC's."""
    want = basic(op, *args)
    got = run_on(engine, op, *args)
    assert_same(got, want)
    assert got.flags.c_contiguous
    return want


def masks(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(shape) > 0.5, rng.random(shape) > 0.5


def float_cases(dtype):
    """Every kind of float isnan and isinf must tell apart, repeated past a vector width so both
    the vector loop and the scalar remainder see each; NaNs of both signs and other payloads."""
    dtype = np.dtype(dtype)
    info = np.finfo(np.float32 if dtype == BF16 else dtype)
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, float(info.max),
                       -float(info.max), float(info.tiny), float(info.tiny) / 4], np.float64)
    if dtype == BF16:
        values[8:10] = [3.3895313892515355e38, -3.3895313892515355e38]   # bf16's largest finite value
    x = values.astype(dtype)
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    raw = bits(x).copy()
    exponent = {np.dtype(np.float16): 0x7C00, BF16: 0x7F80, np.dtype(np.float32): 0x7F800000,
                np.dtype(np.float64): 0x7FF0000000000000}[dtype]   # all ones: inf's bits
    raw[0] = width(exponent) | width(1)              # a signalling NaN's payload
    raw[1] |= width(3)                               # a negative NaN with another payload
    x = raw.view(dtype)
    return np.resize(x, 3 * 16 + 5)


def expected_class(op, x):
    """numpy's isnan or isinf of the values (bf16 read as the f32 values it holds)."""
    wide = x.astype(np.float32) if x.dtype == BF16 else x
    return UNARY[op](wide)


# -- known values on BASIC -------------------------------------------------------------------------

T, F = True, False


def test_truth_tables():
    a, b = np.array([F, F, T, T]), np.array([F, T, F, T])
    assert basic("logical_and", a, b).tolist() == [F, F, F, T]
    assert basic("logical_or", a, b).tolist() == [F, T, T, T]
    assert basic("logical_xor", a, b).tolist() == [F, T, T, F]
    assert basic("logical_not", a).tolist() == [T, T, F, F]


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_known_classifications(dtype):
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 65504.0], np.float64).astype(FLOATS[dtype])
    assert basic("isnan", x).tolist() == [T, T, F, F, F, F, F, F]
    assert basic("isinf", x).tolist() == [F, F, T, T, F, F, F, False]
    with np.errstate(over="ignore"):
        big = np.array([70000.0], np.float32).astype(FLOATS[dtype])
    assert basic("isinf", big).tolist() == [dtype == "f16"]


@pytest.mark.parametrize("dtype", list(INTS) + ["bool"])
def test_integers_and_bools_are_never_nan_or_infinite(dtype):
    x = random_values(np.random.default_rng(1), (5, 7), DTYPES[dtype])
    for op in ("isnan", "isinf"):
        assert_same(basic(op, x), np.zeros((5, 7), bool))


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_payloads_and_signs_of_nan_are_all_nan(dtype):
    x = float_cases(FLOATS[dtype])
    for op in ("isnan", "isinf"):
        assert_same(basic(op, x), expected_class(op, x))


def test_numpy_agrees():
    a, b = masks((6, 7), seed=2)
    for op, fn in BINARY.items():
        assert_same(basic(op, a, b), fn(a, b))
        assert_same(basic(op, a, b[:1]), fn(a, b[:1]))
    assert_same(basic("logical_not", a.T), ~a.T)
    for dtype in (np.float16, np.float32, np.float64):
        x = float_cases(dtype)
        assert_same(basic("isnan", x), np.isnan(x))
        assert_same(basic("isinf", x), np.isinf(x))


@needs_torch
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_matches_torch(dtype):
    x = float_cases(DTYPES[dtype]) if dtype in FLOATS else random_values(np.random.default_rng(3), (53,), DTYPES[dtype])
    for op in ("isnan", "isinf"):
        assert_same(basic(op, x), getattr(torch, op)(to_torch(x)).numpy())
    if dtype == "bool":
        a, b = masks((9, 11), seed=4)
        for op in BINARY:
            assert_same(basic(op, a, b), getattr(torch, op)(to_torch(a), to_torch(b)).numpy())
        assert_same(basic("logical_not", a), torch.logical_not(to_torch(a)).numpy())


# -- every engine against BASIC ---------------------------------------------------------------------

SIZES = [(), (1,), (7,), (16,), (17,), (33,), (3, 5), (1031,), (3, 1000)]


@pytest.mark.parametrize("op", list(OPS))
def test_matches_basic_on_every_size(engine, op):
    for shape in SIZES:
        a, b = masks(shape, seed=len(shape) + sum(shape))
        if op in BINARY:
            check(engine, op, a, b)
        elif op == "logical_not":
            check(engine, op, a)
        else:
            check(engine, op, random_values(np.random.default_rng(sum(shape)), shape, np.float32))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["isnan", "isinf"])
def test_every_dtype_of_isnan_and_isinf(engine, op, dtype):
    x = float_cases(DTYPES[dtype]) if dtype in FLOATS else random_values(np.random.default_rng(5), (53,), DTYPES[dtype])
    want = check(engine, op, x)
    if dtype in FLOATS:
        assert_same(want, expected_class(op, x))
    check(engine, op, x[:7])


@pytest.mark.parametrize("op", list(OPS))
def test_large_inputs_run_in_parallel_and_match_basic(engine, op):
    # past NUMBA's one-thread size and its chunk length, with a remainder after the last full run
    n = (1 << 18) + 19
    a, b = masks((n,), seed=6)
    args = (a, b) if op in BINARY else (a,) if op == "logical_not" else (np.resize(float_cases(np.float32), n),)
    check(engine, op, *args)
    if op in BINARY:
        check(engine, op, a[:1 << 18].reshape(64, -1), b[:(1 << 18) // 64])


BROADCASTS = [((8, 1, 5), (1, 4, 1)), ((2, 64, 3, 3), (1, 64, 1, 1)), ((), (3, 17)), ((3, 17), ()),
              ((5, 1), (1, 17)), ((17,), (3, 1, 17)), ((1, 1), (1,)), ((4, 33), (33,))]


@pytest.mark.parametrize("op", list(BINARY))
def test_broadcasting(engine, op):
    for i, (sa, sb) in enumerate(BROADCASTS):
        a, _ = masks(sa, seed=i)
        _, b = masks(sb, seed=i + 100)
        want = check(engine, op, a, b)
        assert want.shape == np.broadcast_shapes(sa, sb)


@pytest.mark.parametrize("op", list(BINARY))
def test_python_bools_on_either_side(engine, op):
    a, _ = masks((5, 37), seed=7)
    for args in ((a, True), (a, False), (True, a), (False, a), (np.True_, a), (a, [True] * 37)):
        check(engine, op, *args)
    assert_same(basic(op, True, False), BINARY[op](True, False))


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
@pytest.mark.parametrize("op", list(OPS))
def test_non_contiguous_and_read_only_inputs(engine, op, layout):
    view = LAYOUTS[layout]
    a, b = masks((9, 35), seed=8)
    va, vb = view(a), view(b)
    if op in BINARY:
        for x, y in ((va, b), (a, vb), (va, vb), (va[:, :1], vb), (va[::2], True)):
            assert_same(run_on(engine, op, x, y), basic(op, np.ascontiguousarray(x), np.ascontiguousarray(y)))
    elif op == "logical_not":
        assert_same(run_on(engine, op, va), ~np.ascontiguousarray(va))
    else:
        for dtype in (np.float16, dt.bfloat16, np.float64):
            x = np.resize(float_cases(dtype), (9, 35))
            vx = view(x)
            assert_same(run_on(engine, op, vx), expected_class(op, np.ascontiguousarray(vx)))
            np.testing.assert_array_equal(bits(vx), bits(view(x)))   # input untouched


@pytest.mark.parametrize("op", list(OPS))
def test_zero_size_inputs(engine, op):
    for sa, sb in [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0))]:
        if op in BINARY:
            want = check(engine, op, np.zeros(sa, bool), np.ones(sb, bool))
            assert want.shape == np.broadcast_shapes(sa, sb)
        else:
            for dtype in ((np.bool_,) if op == "logical_not" else (np.float32, dt.bfloat16, np.int8)):
                want = check(engine, op, np.zeros(sa, dtype))
                assert want.shape == sa


@pytest.mark.parametrize("op", list(OPS))
def test_zero_d_inputs(engine, op):
    if op in BINARY:
        for a, b in [(np.array(True), np.array(False)), (np.array(True), np.array([True, False]))]:
            check(engine, op, a, b)
    elif op == "logical_not":
        check(engine, op, np.array(False))
    else:
        for x in (np.array(np.nan, np.float32), np.array(-np.inf, dt.bfloat16), np.array(1.0), np.array(7, np.int8)):
            check(engine, op, x)


# -- arguments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", list(BINARY))
def test_numbers_are_not_truth_values(op):
    fn = getattr(polyeng, op)
    m = np.array([True, False])
    with pytest.raises(TypeError, match=rf"^a has dtype int32; {op} expects a bool array .*compare first, "
                                        rf"e\.g\. a != 0"):
        fn(np.array([1, 0], np.int32), m)
    with pytest.raises(TypeError, match=rf"^b has dtype float32; {op} expects a bool array"):
        fn(m, np.ones(2, np.float32))
    with pytest.raises(TypeError, match=rf"^b=1: {op} takes bool operands"):
        fn(m, 1)
    with pytest.raises(TypeError, match=rf"^a=0\.5: {op} takes bool operands"):
        fn(0.5, m)
    with pytest.raises(TypeError, match=rf"^b=np\.int64\(1\): {op} takes bool operands"):
        fn(m, np.int64(1))
    with pytest.raises(TypeError, match=rf"^a has dtype int64; {op} expects a bool array"):
        fn([1, 0], m)   # a list of numbers is an int64 array
    with pytest.raises(TypeError, match=r"^a=None: expected an array"):
        fn(None, m)
    with pytest.raises(TypeError, match=r"^b has dtype complex64, which polyeng does not support"):
        fn(m, np.ones(2, np.complex64))
    with pytest.raises(ValueError, match=r"^a \(2,\) and b \(3,\) do not broadcast together"):
        fn(m, np.ones(3, bool))


def test_logical_not_takes_bools_only():
    with pytest.raises(TypeError, match=r"^x has dtype float32; logical_not expects a bool array"):
        polyeng.logical_not(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"^x=1: logical_not takes bool operands"):
        polyeng.logical_not(1)
    assert_same(polyeng.logical_not(True), np.array(False))
    assert_same(polyeng.logical_not([True, False]), np.array([False, True]))


@pytest.mark.parametrize("op", ["isnan", "isinf"])
def test_isnan_and_isinf_take_every_dtype_and_array_likes(op):
    assert_same(getattr(polyeng, op)(float("nan")), np.array(op == "isnan"))
    assert_same(getattr(polyeng, op)([1.0, float("inf")]), np.array([False, op == "isinf"]))
    assert_same(getattr(polyeng, op)(3), np.array(False))
    with pytest.raises(TypeError, match=r"^x has dtype complex64, which polyeng does not support"):
        getattr(polyeng, op)(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match=r"^x=None: expected an array"):
        getattr(polyeng, op)(None)


def test_specs_are_exact_deny_elementwise_ops():
    from polyeng.amp import Category
    from polyeng.ops import OPS as SPECS
    for op in OPS:
        spec = SPECS[op]
        assert spec.exact and spec.category is Category.DENY and spec.chunking == "elementwise"
        assert spec.family == "logical" and getattr(polyeng, op) is spec.function and spec.ufuncs == (op,)


# -- mixed precision, graphs, dask, device tensors ------------------------------------------------

def test_no_fp_math_mode_changes_a_classification():
    x = np.array([70000.0, 3.4e38, np.nan, 1.0], np.float32)   # inf in f16; inf in bf16 (past its largest)
    for mode in ("strict", "bf16", "f16", "tf32", "any"):
        with polyeng.fp_math_mode(mode):
            assert polyeng.isinf(x).tolist() == [False, False, False, False]
            assert polyeng.isnan(x).tolist() == [False, False, True, False]


def test_the_mixed_precision_pass_keeps_isinf_in_the_input_dtype():
    weight = np.eye(3, dtype=np.float32)

    def model(x):
        y = polyeng.linear(x, weight)                         # ALLOW: runs in f16
        return polyeng.isinf(x), polyeng.logical_and(polyeng.isnan(y), polyeng.isnan(x))
    x = np.array([[70000.0, np.nan, 1.0]], np.float32)
    graph = polyeng.graph.trace(model, x)
    mixed = polyeng.amp.to_mixed_precision(graph, dtype="float16")
    nodes = [n for n in mixed.nodes if n.op in OPS]
    assert nodes and all(n.amp.category == "deny" and not n.amp.mixed for n in nodes)
    inf, both = mixed(x)
    assert inf.tolist() == [[False, False, False]]   # x stays f32, where 70000 is finite
    assert both.tolist() == [[False, True, False]]


def test_graph_of_a_mask():
    x = np.array([[1.0, np.nan, -np.inf, 3.0]], np.float32)

    def finite_positive(v):
        return np.logical_and(np.logical_not(np.logical_or(np.isnan(v), np.isinf(v))), polyeng.greater(v, 0.0))
    graph = polyeng.graph.trace(finite_positive, x)
    assert [n.op for n in graph.nodes] == ["isnan", "isinf", "logical_or", "logical_not", "greater", "logical_and"]
    assert_same(graph(x), np.array([[True, False, False, True]]))
    y = np.array([[np.inf, 2.0, 0.0, -1.0], [5.0, np.nan, 1e-30, np.inf]], np.float32)
    assert_same(graph(y), np.isfinite(y) & (y > 0))


@pytest.mark.parametrize("op", list(OPS))
def test_dask_arrays_stay_lazy_and_equal_the_eager_op(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    a, b = masks((6, 8), seed=9)
    if op in BINARY:
        args, eager = (da.from_array(a, chunks=(4, 3)), da.from_array(b[:1], chunks=(1, 5))), BINARY[op](a, b[:1])
    else:
        x = a if op == "logical_not" else np.resize(float_cases(np.float32), (6, 8))
        args, eager = (da.from_array(x, chunks=(4, 3)),), UNARY[op](x)
    lazy = getattr(polyeng, op)(*args)
    assert isinstance(lazy, da.Array) and lazy.dtype == np.bool_ and lazy.shape == (6, 8)
    assert_same(dask.compute(lazy, scheduler="sync")[0], eager)


@pytest.mark.device_tensors
@pytest.mark.uses_ops("isnan", "isinf", "logical_or", "logical_not", "logical_and", "less")
@pytest.mark.parametrize("dtype", [np.float64, dt.bfloat16, np.int8], ids=lambda d: np.dtype(d).name)
def test_device_tensors_stay_on_their_engine(engine, dtype):
    x = float_cases(dtype) if np.dtype(dtype).kind != "i" else random_values(np.random.default_rng(10), (53,), dtype)
    t = polyeng.to_device(x, engine)
    finite = polyeng.logical_not(polyeng.logical_or(polyeng.isnan(t), polyeng.isinf(t)))
    result = polyeng.logical_and(finite, polyeng.less(t, 0))
    assert not isinstance(result, np.ndarray)   # the chain stayed on the device
    with np.errstate(invalid="ignore"):   # the signalling NaN
        wide = x.astype(np.float64)
    assert_same(polyeng.to_numpy(result), np.isfinite(wide) & (wide < 0))
