"""maximum and minimum (torch.maximum, torch.minimum).

BASIC against known values, numpy and PyTorch: a NaN operand wins with its own bits (``a``'s when
both are, numpy's rule), -0.0 is below +0.0 whichever side each zero is on, integers compare as
integers; dtypes promote and Python scalars are weak exactly as for add (NEP 50). Then every engine
under test (see conftest) against BASIC bit for bit: every dtype, odd sizes, broadcasting, scalars
on either side, views, mixed dtypes, zero-size and 0-d inputs, every pair of special values, inputs
long enough for parallel tasks, device tensors; graphs, dask, and each bad argument."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import FLOATS, INTS, SIZES, needs_torch, torch, views
from support import assert_identical, bits, random_values

pytestmark = pytest.mark.uses_ops("maximum", "minimum")
OPS = ("maximum", "minimum")
NUMPY = {"maximum": np.maximum, "minimum": np.minimum}
DTYPES = {**FLOATS, **INTS}


def run(engine, op, *args):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args)


def check(engine, op, *args):
    """``engine``'s result is BASIC's, bit for bit; BASIC's is returned."""
    want = run("basic", op, *args)
    assert_identical(run(engine, op, *args), want)
    return want


def specials(dtype):
    """Every value whose order can go wrong: NaNs of both signs and another payload, infinities,
    both zeros, the extremes and the smallest subnormal of the dtype."""
    f = np.dtype(dtype)
    big = float(np.finfo(np.float32 if f == dt.bfloat16 else f).max)
    tiny = float(np.finfo(np.float32 if f == dt.bfloat16 else f).smallest_subnormal)
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, big, -big, tiny, -tiny],
                      np.float64).astype(f)
    payload = np.array([np.nan], f)
    payload.view(bits(payload).dtype)[0] |= 1   # a NaN with another payload
    return np.concatenate([values, payload])


def ieee(op, a, b):
    """IEEE 754-2019's maximum or minimum, element by element in Python, on the stored values."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    out = np.empty(a.shape, a.dtype)
    for i in np.ndindex(a.shape):
        u, v = a[i], b[i]
        x, y = float(u), float(v)
        if x != x:
            out[i] = u
        elif y != y:
            out[i] = v
        elif x == y:   # only zeros of two signs differ here
            negative = np.signbit(x)
            out[i] = (v if negative else u) if op == "maximum" else (u if negative else v)
        else:
            out[i] = u if (x > y) == (op == "maximum") else v
    return out


# -- known values on BASIC ---------------------------------------------------------------------


def test_known_values(on_basic):
    a = np.array([1.0, -2.0, np.nan, 3.0, -0.0, 0.0, -np.inf], np.float32)
    b = np.array([2.0, -3.0, 1.0, np.nan, 0.0, -0.0, np.inf], np.float32)
    np.testing.assert_array_equal(polyeng.maximum(a, b), [2.0, -2.0, np.nan, np.nan, 0.0, 0.0, np.inf])
    np.testing.assert_array_equal(polyeng.minimum(a, b), [1.0, -3.0, np.nan, np.nan, -0.0, -0.0, -np.inf])
    assert np.signbit(polyeng.maximum(a, b)[4:6]).tolist() == [False, False]   # +0.0 on either side
    assert np.signbit(polyeng.minimum(a, b)[4:6]).tolist() == [True, True]
    assert polyeng.maximum(np.array([-128, 5, 127], np.int8), np.int8(-1)).tolist() == [-1, 5, 127]
    assert polyeng.minimum(np.array([0, 200, 255], np.uint8), 100).tolist() == [0, 100, 100]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_every_pair_of_special_values_follows_ieee(on_basic, op, dtype):
    s = specials(FLOATS[dtype])
    a, b = s[:, None], s[None, :]
    assert_identical(getattr(polyeng, op)(a, b), ieee(op, a, b))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_as_numpy_bit_for_bit_but_for_pairs_of_zeros(on_basic, op, dtype):
    """numpy keeps NaN payloads as polyeng does; for -0.0 beside +0.0 it returns either zero."""
    f = DTYPES[dtype]
    rng = np.random.default_rng(len(dtype))
    a, b = random_values(rng, (40, 33), f), random_values(rng, (40, 33), f)
    if np.dtype(f).kind not in "iu":
        a[::3] = b[::3]   # equal values, and with them equal zeros
        a[1, :4], b[1, :4] = np.array([-0.0, 0.0, -0.0, np.nan], np.float32).astype(f), \
            np.array([0.0, -0.0, -0.0, -np.nan], np.float32).astype(f)
    with np.errstate(invalid="ignore"):
        want = NUMPY[op](a, b)
    got = getattr(polyeng, op)(a, b)
    zeros = (a.astype(np.float64) == 0) & (b.astype(np.float64) == 0) & (np.signbit(a.astype(np.float64))
                                                                        != np.signbit(b.astype(np.float64)))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got)[~zeros], bits(want)[~zeros])
    assert (np.signbit(got.astype(np.float64)[zeros]) == (op == "minimum")).all()


@needs_torch
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64", "s8", "u8", "s32", "s64"])
@pytest.mark.parametrize("op", OPS)
def test_as_torch(on_basic, op, dtype):
    from elementwise_checks import from_torch, to_torch
    f = DTYPES[dtype]
    rng = np.random.default_rng(7)
    a, b = random_values(rng, (30, 17), f), random_values(rng, (1, 17), f)
    with np.errstate(invalid="ignore"):
        want = from_torch(getattr(torch, op)(to_torch(a), to_torch(b)))
    got = getattr(polyeng, op)(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))   # NaN as NaN, -0.0 == 0.0
    for scalar in (2, -1.5):   # weak scalars: the array's dtype in torch as in polyeng
        if isinstance(scalar, float) and np.dtype(f).kind in "iu":
            continue
        want = from_torch(getattr(torch, op)(to_torch(a), torch.tensor(scalar)))
        np.testing.assert_array_equal(getattr(polyeng, op)(a, scalar).astype(np.float64), want.astype(np.float64))


# -- dtypes and Python scalars, as add ----------------------------------------------------------

PROMOTED = [np.float16, dt.bfloat16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64]


@pytest.mark.parametrize("op", OPS)
def test_arrays_promote_as_add_does(on_basic, op):
    for da in PROMOTED:
        for db in PROMOTED:
            a, b = np.arange(1, 4).astype(da), np.arange(3, 0, -1).astype(db)
            try:
                expected = polyeng.add(a, b).dtype
            except TypeError as exc:   # int8 with uint8 is int16
                with pytest.raises(TypeError, match=rf"^{op}: a \({np.dtype(da)}\) and b \({np.dtype(db)}\) promote"):
                    getattr(polyeng, op)(a, b)
                assert "int16" in str(exc)
                continue
            got = getattr(polyeng, op)(a, b)
            assert got.dtype == expected, (da, db, got.dtype)
            wide = NUMPY[op](a.astype(np.float64), b.astype(np.float64))
            np.testing.assert_array_equal(got.astype(np.float64), wide)


@pytest.mark.parametrize("op", OPS)
def test_python_scalars_are_weak_as_for_add(on_basic, op):
    for dtype in PROMOTED:
        a = np.arange(1, 4).astype(dtype)
        for scalar in (2.5, -1.5, 1, -3, 0, 100, 2 ** 40):
            for args in ((a, scalar), (scalar, a)):
                try:
                    expected = polyeng.add(*args).dtype
                except ValueError:   # 1000 beside int8: does not fit
                    with pytest.raises(ValueError, match=rf"={scalar} does not fit the other operand's dtype"):
                        getattr(polyeng, op)(*args)
                    continue
                got = getattr(polyeng, op)(*args)
                assert got.dtype == expected, (dtype, args, got.dtype)
                if np.dtype(dtype) != dt.bfloat16:
                    with np.errstate(over="ignore"):   # 2 ** 40 beside float16 is inf
                        assert got.dtype == NUMPY[op](*args).dtype   # numpy's NEP 50 rule
    f16 = np.array([1.5, -2.0], np.float16)
    assert getattr(polyeng, op)(f16, 2.5).dtype == np.float16
    assert getattr(polyeng, op)(2, 3).dtype == np.int64 and getattr(polyeng, op)(2, 3.5).dtype == np.float64


# -- every engine against BASIC ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    rng = np.random.default_rng(1)
    for shape in SIZES:
        a, b = random_values(rng, shape, DTYPES[dtype]), random_values(rng, shape, DTYPES[dtype])
        check(engine, op, a, b)
        check(engine, op, a, a)   # equal operands: every zero beside a zero


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", OPS)
def test_special_values(engine, op, dtype):
    s = specials(FLOATS[dtype])
    check(engine, op, s[:, None], s[None, :])               # broadcast
    row = np.resize(s, 3 * 16 + 5)                          # vector lanes and a remainder
    check(engine, op, row, row[::-1].copy())


BROADCASTS = [((8, 1, 5), (1, 4, 1)), ((2, 64, 3, 3), (1, 64, 1, 1)), ((), (3, 17)), ((3, 17), ()),
              ((5, 1), (1, 17)), ((17,), (3, 1, 17)), ((1, 1), (1,)), ((4, 33), (33,))]


@pytest.mark.parametrize("dtype", ["f32", "bf16", "s32", "u8"])
@pytest.mark.parametrize("op", OPS)
def test_broadcasting(engine, op, dtype):
    rng = np.random.default_rng(2)
    for sa, sb in BROADCASTS:
        a, b = random_values(rng, sa, DTYPES[dtype]), random_values(rng, sb, DTYPES[dtype])
        assert check(engine, op, a, b).shape == np.broadcast_shapes(sa, sb)


@pytest.mark.parametrize("op", OPS)
def test_python_scalars_on_either_side(engine, op):
    rng = np.random.default_rng(3)
    for dtype, scalars in [(np.float16, (2.5, -0.0, float("nan"))), (dt.bfloat16, (1, -1e30)),
                           (np.float64, (0.0, -3)), (np.int8, (3, -128)), (np.uint8, (7, 2.5)), (np.int64, (2 ** 40,))]:
        a = random_values(rng, (37,), dtype)
        for s in scalars:
            check(engine, op, a, s)
            check(engine, op, s, a)


@pytest.mark.parametrize("dtype", ["f32", "f16", "s64"])
@pytest.mark.parametrize("op", OPS)
def test_non_contiguous_and_negative_stride_views(engine, op, dtype):
    rng = np.random.default_rng(4)
    a, b = random_values(rng, (9, 35), DTYPES[dtype]), random_values(rng, (9, 35), DTYPES[dtype])
    va, vb = views(a), views(b)
    for name in va:
        assert not va[name].flags.c_contiguous
        check(engine, op, va[name], b)
        check(engine, op, a, vb[name])
        check(engine, op, va[name], vb["negative"])
        check(engine, op, va[name][:, :1], vb[name])


MIXED = [(np.int8, dt.bfloat16), (np.int32, np.float16), (np.float16, dt.bfloat16), (np.float32, np.float64),
         (np.uint8, np.int32), (np.int64, np.float32), (np.uint8, np.float16), (dt.bfloat16, np.float32),
         (np.int64, np.float64)]


@pytest.mark.parametrize("op", OPS)
def test_mixed_dtypes(engine, op):
    rng = np.random.default_rng(5)
    for first, second in MIXED:
        for da, db in ((first, second), (second, first)):
            check(engine, op, random_values(rng, (3, 37), da), random_values(rng, (37,), db))


@pytest.mark.parametrize("op", OPS)
def test_zero_size_and_zero_d_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16, np.int8):
        for sa, sb in [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0)),
                       ((0,), (1,))]:
            want = check(engine, op, np.zeros(sa, dtype), np.ones(sb, dtype))
            assert want.size == 0 and want.shape == np.broadcast_shapes(sa, sb)
        got = check(engine, op, np.array(-0.0, dtype) if dtype != np.int8 else np.array(-3, dtype), np.array(0, dtype))
        assert got.shape == ()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_large_inputs_run_in_parallel_tasks(engine, op, dtype):
    rng = np.random.default_rng(6)
    a, b = random_values(rng, (1 << 18) + 19, dtype), random_values(rng, (1 << 18) + 19, dtype)
    check(engine, op, a, b)
    check(engine, op, a.reshape(-1, 1)[: (1 << 12)], b[: 1 << 9])   # (4096, 1) against (512,): 2M elements
    check(engine, op, a[::2], np.float32(0.0) if np.dtype(dtype).kind == "f" else 0)


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64, np.int8], ids=lambda d: np.dtype(d).name)
def test_device_tensors_stay_on_their_engine(engine, dtype):
    rng = np.random.default_rng(8)
    a, b = random_values(rng, (5, 33), dtype), random_values(rng, (33,), dtype)
    result = polyeng.minimum(polyeng.maximum(polyeng.to_device(a, engine), polyeng.to_device(b, engine)), b)
    assert not isinstance(result, np.ndarray)   # the chain stayed on the device
    with polyeng.compute_eng("basic"):
        want = polyeng.minimum(polyeng.maximum(a, b), b)
    assert_identical(polyeng.to_numpy(result), want)


def test_exact_follow_elementwise_ops_unchanged_by_the_fp_math_mode():
    from polyeng.amp import Category
    from polyeng.ops import OPS as SPECS
    for op in OPS:
        spec = SPECS[op]
        assert spec.exact and spec.category is Category.FOLLOW and spec.chunking == "elementwise"
        assert spec.family == "extrema" and getattr(polyeng, op) is spec.function
    x = specials(np.float32)
    with polyeng.fp_math_mode("bf16"):
        assert_identical(polyeng.maximum(x, np.float32(0.5)), ieee("maximum", x, np.float32(0.5)))


# -- graphs and dask ------------------------------------------------------------------------------


def test_a_graph_of_maximum_and_minimum():
    x = specials(np.float32).reshape(-1, 1)
    graph = polyeng.graph.trace(lambda v: polyeng.minimum(polyeng.maximum(v, 0.0), 6.0), x)   # relu6
    assert [n.op for n in graph.nodes] == ["maximum", "minimum"]
    assert_identical(graph(x), ieee("minimum", ieee("maximum", x, np.float32(0.0)), np.float32(6.0)))
    y = x[::-1].copy()
    assert_identical(graph(y), ieee("minimum", ieee("maximum", y, np.float32(0.0)), np.float32(6.0)))


@pytest.mark.parametrize("op", OPS)
def test_dask_arrays_stay_lazy_and_equal_the_eager_op(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = np.resize(specials(np.float32), (6, 8))
    y = np.resize(specials(np.float32)[::-1], (1, 8))
    lazy = getattr(polyeng, op)(da.from_array(x, chunks=(4, 3)), y)
    assert isinstance(lazy, da.Array) and lazy.dtype == x.dtype and lazy.shape == x.shape
    assert_identical(dask.compute(lazy, scheduler="sync")[0], ieee(op, x, y))


# -- bad arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_bad_arguments_are_named(op):
    fn = getattr(polyeng, op)
    cases = [
        (lambda: fn(np.ones(2), np.ones(3)), ValueError, r"^a \(2,\) and b \(3,\) do not broadcast together"),
        (lambda: fn(np.ones(2, np.int8), np.ones(2, np.uint8)), TypeError,
         rf"^{op}: a \(int8\) and b \(uint8\) promote to int16"),
        (lambda: fn(np.ones(2, bool), 2), TypeError, rf"^a has dtype bool; {op} does not take bool operands"),
        (lambda: fn(np.ones(2), True), TypeError, rf"^b=True; {op} does not take bool operands"),
        (lambda: fn(np.array([1], np.int8), 1000), ValueError, r"^b=1000 does not fit the other operand's dtype int8"),
        (lambda: fn(np.ones(2, np.complex64), 1.0), TypeError, r"^a has dtype complex64"),
        (lambda: fn(1.0, 2j), TypeError, r"^b=2j: polyeng has no complex dtype"),
        (lambda: fn(np.ma.masked_array([1.0, 2.0]), 1.0), TypeError, r"^a is a masked array"),
        (lambda: fn(None, 1.0), TypeError, r"^a=None"),
        (lambda: fn(np.ones((1 << 24, 1)), np.ones((1, 1 << 24))), ValueError,
         rf"^a \(16777216, 1\) and b \(1, 16777216\): {op}'s output would have shape"),
        (lambda: fn("1.0", np.ones(2)), TypeError, r"^a='1.0'"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
