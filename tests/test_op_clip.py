"""clip (torch.clamp): every engine bit for bit against BASIC (every float dtype, numbers, 0-d,
broadcast and full array bounds, bounds of another dtype, None, NaN and infinities, signed zeros,
odd sizes, views, zero-size and 0-d inputs); BASIC against known values and PyTorch; every bad
argument; the spec; graphs, dask and device tensors."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import run_on

try:
    import torch
except ImportError:   # only the comparisons with PyTorch need it
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="could not import 'torch'")

pytestmark = pytest.mark.uses_ops("clip")
FLOATS = {"f16": np.float16, "bf16": dt.bfloat16, "f32": np.float32, "f64": np.float64}
BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
nan, inf = np.nan, np.inf


def bits(a):
    """The stored bit patterns: NaN payloads and the sign of zero compare too."""
    a = np.ascontiguousarray(a)
    return a.view(BITS[a.dtype.itemsize])


def assert_identical(actual, expected):
    assert type(actual) is np.ndarray
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape)
    assert actual.flags.c_contiguous
    np.testing.assert_array_equal(bits(actual), bits(expected))


def special_values(dtype, n=3 * 16 + 5):
    """Values whose handling can go wrong, repeated past a vector width (both the vector loop and
    the scalar remainder of each kernel see them)."""
    values = [nan, -nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-3, -1e-3, 3.0, -3.0,
              float(np.finfo(np.float16).tiny), 6e4, -6e4]
    return np.resize(np.array(values, np.float64), n).astype(dtype)


def sample(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2).astype(dtype)


def check(engine, x, **bounds):
    want = run_on("basic", "clip", x, **bounds)
    assert_identical(run_on(engine, "clip", x, **bounds), want)
    return want


# -- known values on BASIC ------------------------------------------------------------------------

def test_known_values():
    x = np.array([-3.0, -1.0, 0.0, 0.25, 1.0, 5.0, nan, -inf, inf], np.float32)
    np.testing.assert_array_equal(polyeng.clip(x, min=-1.0, max=1.0), [-1, -1, 0, 0.25, 1, 1, nan, -1, 1])
    np.testing.assert_array_equal(polyeng.clip(x, min=0.5), [0.5, 0.5, 0.5, 0.5, 1, 5, nan, 0.5, inf])
    np.testing.assert_array_equal(polyeng.clip(x, max=0), [-3, -1, 0, 0, 0, 0, nan, -inf, 0])
    np.testing.assert_array_equal(polyeng.clip(x, min=-inf, max=inf), x)
    np.testing.assert_array_equal(polyeng.clip(x, min=2.0, max=1.0), [1, 1, 1, 1, 1, 1, nan, 1, 1])   # min > max: max
    assert np.isnan(polyeng.clip(x, min=nan)).all() and np.isnan(polyeng.clip(x, min=0.0, max=nan)).all()


def test_array_bounds_broadcast_to_x():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    rows = np.array([[2.0], [5.0], [9.0]])
    columns = np.array([1.0, 3.0, 7.0, 10.0])
    np.testing.assert_array_equal(polyeng.clip(x, min=rows), np.maximum(x, rows))
    np.testing.assert_array_equal(polyeng.clip(x, max=columns), np.minimum(x, columns))
    np.testing.assert_array_equal(polyeng.clip(x, min=rows, max=columns), np.minimum(np.maximum(x, rows), columns))
    np.testing.assert_array_equal(polyeng.clip(x, min=np.float64(4.0), max=[[6.0]]), np.clip(x, 4.0, 6.0))


def test_a_tie_keeps_x():
    # only the sign of a zero tells: x is kept, as torch.clamp does with a number bound
    got = polyeng.clip(np.array([-0.0, 0.0], np.float32), min=0.0, max=-0.0)
    assert np.signbit(got).tolist() == [True, False]
    got = polyeng.clip(np.array([-0.0, 0.0], np.float32), min=np.zeros(2, np.float32), max=-np.zeros(2, np.float32))
    assert np.signbit(got).tolist() == [True, False]


def test_bounds_are_rounded_to_x_dtype():
    x = np.array([0.0, 1.0, inf], np.float16)
    got = polyeng.clip(x, min=0.1, max=1e10)   # 1e10 rounds to inf in float16
    assert got.dtype == np.float16 and got.tolist() == [np.float16(0.1), 1.0, inf]
    f64 = np.array([0.3, 0.7], np.float64)
    got = polyeng.clip(np.zeros(2, dt.bfloat16), min=f64)
    assert got.dtype == dt.bfloat16 and np.array_equal(bits(got), bits(dt.round_to(f64, dt.bfloat16)))
    assert polyeng.clip(np.zeros(2, np.float32), min=10 ** 400).tolist() == [inf, inf]   # an int past float64
    assert polyeng.clip(np.zeros(2, np.float32), max=-(10 ** 400)).tolist() == [-inf, -inf]


# -- PyTorch --------------------------------------------------------------------------------------------

def torch_clamp(x, **bounds):
    return torch.clamp(torch.from_numpy(np.ascontiguousarray(x)), **bounds).numpy()


NUMBER_BOUNDS = [{"min": -0.5, "max": 0.75}, {"min": 0.0}, {"max": -0.0}, {"min": -0.0, "max": 0.0},
                 {"min": 1.0, "max": -1.0}, {"min": -inf, "max": inf}, {"min": nan}, {"max": nan}, {"min": 3.0}]


@needs_torch
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
@pytest.mark.parametrize("bounds", NUMBER_BOUNDS, ids=[str(b) for b in NUMBER_BOUNDS])
def test_number_bounds_as_torch(bounds, dtype):
    x = np.concatenate([special_values(FLOATS[dtype]), sample(100, FLOATS[dtype])])
    got, want = polyeng.clip(x, **bounds), torch_clamp(x, **bounds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))   # torch leaves NaN payloads to the hardware
    ordinary = ~np.isnan(want)
    np.testing.assert_array_equal(bits(got[ordinary]), bits(want[ordinary]))   # signed zeros too


@needs_torch
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32", "f64"])
def test_array_bounds_as_torch(dtype):
    f = FLOATS[dtype]
    x = special_values(f, 19 * 7).reshape(7, 19)
    lo = special_values(f, 19)[::-1].copy()
    hi = np.resize(np.array([1.0, nan, 0.0, -0.0, 2.5, -2.0, inf], np.float64), (7, 1)).astype(f)
    tx, tlo, thi = (torch.from_numpy(a.astype(np.float32) if f == dt.bfloat16 else a) for a in (x, lo, hi))
    if f == dt.bfloat16:
        tx, tlo, thi = tx.bfloat16(), tlo.bfloat16(), thi.bfloat16()
    for got, want in ((polyeng.clip(x, min=lo, max=hi), torch.clamp(tx, min=tlo, max=thi)),
                      (polyeng.clip(x, min=lo), torch.clamp(tx, min=tlo)),
                      (polyeng.clip(x, max=hi), torch.clamp(tx, max=thi))):
        want = want.float().numpy() if f == dt.bfloat16 else want.numpy()
        # values, NaN where torch has NaN: where x equals a bound, torch keeps the bound's zero and clip x's
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


# -- every engine against BASIC, bit for bit --------------------------------------------------------

SHAPES = [(), (1,), (7,), (16,), (17,), (33,), (3, 5), (1031,), (3, 1000)]


def bound_forms(shape, dtype, seed=1):
    """(label, bounds) pairs for an x of ``shape``: numbers, 0-d arrays, None, per-row and per-column
    arrays, full arrays, bounds of other float dtypes and bounds holding special values."""
    rng = np.random.default_rng(seed)
    forms = [("numbers", {"min": -0.5, "max": 0.75}), ("min only", {"min": 0.25}), ("max only", {"max": -0.25}),
             ("0-d arrays", {"min": np.array(-1.0, dtype), "max": np.array(0.5, dtype)}),
             ("crossed", {"min": 1.0, "max": -1.0}), ("nan max", {"min": -1.0, "max": nan}),
             ("f64 bounds", {"min": np.float64(-0.3), "max": np.array(0.3, np.float64)})]
    if shape:
        full = special_values(dtype, int(np.prod(shape))).reshape(shape)
        forms += [("full", {"min": full, "max": rng.standard_normal(shape).astype(dtype) + 1}),
                  ("last axis", {"min": rng.standard_normal(shape[-1]).astype(dtype) - 1}),
                  ("f32 full", {"max": rng.standard_normal(shape).astype(np.float32)}),
                  ("ones", {"min": np.full((1,) * len(shape), -0.1, dtype), "max": np.float32(0.2)})]
    if len(shape) == 2:
        forms += [("rows", {"min": rng.standard_normal((shape[0], 1)).astype(dtype), "max": 1.0}),
                  ("rows and columns", {"min": rng.standard_normal((shape[0], 1)).astype(dtype) - 1,
                                        "max": rng.standard_normal(shape[1]).astype(np.float64) + 1})]
    return forms


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_every_bound_form_dtype_and_size_matches_basic(engine, dtype):
    f = FLOATS[dtype]
    for shape in SHAPES:
        x = sample(shape, f, seed=len(shape) + sum(shape))
        if x.size > 4:
            x.reshape(-1)[:4] = np.array([nan, -0.0, inf, -inf], np.float64).astype(f)
        for label, bounds in bound_forms(shape, f):
            want = check(engine, x, **bounds)
            assert want.shape == shape and want.dtype == f, label


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_special_values_match_basic(engine, dtype):
    f = FLOATS[dtype]
    x = special_values(f)
    for lo in (0.0, -0.0, 1.0, nan, -inf, inf, 6e4):
        for hi in (None, 0.0, -0.0, 0.5, nan, inf, -inf):
            check(engine, x, min=lo, max=hi)
    check(engine, x, min=x[::-1].copy())                          # special values in the bounds too
    check(engine, x, max=x[::-1].copy(), min=np.roll(x, 3))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64"])
def test_large_inputs_run_in_parallel_chunks(engine, dtype):
    f = FLOATS[dtype]
    x = np.resize(special_values(f), (300, 1031))   # past NUMBA's one-thread size, odd rows
    check(engine, x, min=-0.5, max=0.5)
    check(engine, x, min=sample((300, 1), f), max=sample(1031, f) + 1)
    check(engine, x.reshape(-1), max=0.0)


LAYOUTS = {
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "negative-strides": lambda a: a[::-1, ::-2],
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),
    "read-only": lambda a: np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_non_contiguous_and_read_only_inputs_and_bounds(engine, dtype, layout):
    f = FLOATS[dtype]
    x = LAYOUTS[layout](special_values(f, 9 * 38).reshape(9, 38))
    lo = LAYOUTS[layout](sample((9, 38), f, seed=3) - 1)
    before = x.copy(), lo.copy()
    check(engine, x, min=-0.5, max=0.5)
    check(engine, x, min=lo)
    check(engine, np.ascontiguousarray(x), min=lo, max=np.ascontiguousarray(lo).T.copy().T + 2)
    check(engine, x, min=lo[:, :1], max=lo[:1] + 2)   # strided broadcast bounds
    assert np.array_equal(bits(x), bits(before[0])) and np.array_equal(bits(lo), bits(before[1]))   # untouched


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 2, 5)])
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_zero_size_inputs(engine, dtype, shape):
    f = FLOATS[dtype]
    x = np.zeros(shape, f)
    for bounds in ({"min": 0.5}, {"max": np.ones(shape[-1:], f)}, {"min": np.zeros((1,) * len(shape), f), "max": 1.0}):
        got = run_on(engine, "clip", x, **bounds)
        assert type(got) is np.ndarray and got.shape == shape and got.dtype == f


def test_zero_d_input(engine):
    x = np.array(-3.5, np.float32)
    assert_identical(run_on(engine, "clip", x, min=-1.0), np.array(-1.0, np.float32))
    assert_identical(run_on(engine, "clip", x, max=np.array(-4.0)), np.array(-4.0, np.float32))


# -- arguments --------------------------------------------------------------------------------------

def test_both_bounds_none_is_a_value_error():
    with pytest.raises(ValueError, match=r"^clip: min and max are both None"):
        polyeng.clip(np.ones(3))
    with pytest.raises(ValueError, match=r"min and max are both None"):
        polyeng.clip(np.ones(3), min=None, max=None)


@pytest.mark.parametrize("x", [np.arange(3), np.array([1, 2], np.uint8), np.array([True])], ids=["int64", "uint8", "bool"])
def test_integer_and_bool_x_are_type_errors_naming_x(x):
    with pytest.raises(TypeError, match=rf"^x has dtype {x.dtype}; clip expects a floating-point array"):
        polyeng.clip(x, min=0)


@pytest.mark.parametrize("name", ["min", "max"])
@pytest.mark.parametrize("value,message", [
    (True, r"=True: clip's bounds are None, a real number or a floating-point array"),
    (np.bool_(False), r"=(np\.)?False_?: clip's bounds are None"),
    (1j, r"=1j: clip's bounds are None"),
    (np.array([1, 2, 3]), r" has dtype int64; clip expects a number or a floating-point array"),
    (np.array([True, False, True]), r" has dtype bool; clip expects a number or a floating-point array"),
    (np.array(2, np.int32), r" has dtype int32; clip expects"),
    ("0.5", r"='0.5': expected an array or array-like of numbers, got str"),
    (np.ones(3, np.complex64), r" has dtype complex64"),
], ids=["True", "np.bool_", "complex", "int array", "bool array", "0-d int", "str", "complex array"])
def test_bad_bounds_are_type_errors_naming_the_bound(name, value, message):
    with pytest.raises(TypeError, match=rf"^{name}{message}"):
        polyeng.clip(np.ones(3, np.float32), **{name: value})


@pytest.mark.parametrize("name", ["min", "max"])
@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 1, 3), (2, 1)])
def test_a_bound_that_would_grow_x_is_a_value_error_naming_it(name, shape):
    with pytest.raises(ValueError, match=rf"^{name} has shape \({', '.join(map(str, shape))},?\), which does not "
                                         rf"broadcast to x's shape \(1, 3\)"):
        polyeng.clip(np.ones((1, 3), np.float32), **{name: np.zeros(shape, np.float32)})


def test_lists_and_numpy_scalars_are_bounds():
    x = np.array([-2.0, 0.0, 2.0], np.float32)
    assert polyeng.clip(x, min=[-1, 0, 1]).tolist() == [-1.0, 0.0, 2.0]   # a list takes x's dtype
    assert polyeng.clip(x, min=np.int64(-1), max=np.float16(1)).tolist() == [-1.0, 0.0, 1.0]
    assert polyeng.clip(x, max=1).dtype == np.float32


def test_fp_math_modes_leave_clip_exact():
    x = special_values(np.float32)
    want = polyeng.clip(x, min=-0.3, max=np.float64(0.7))
    for mode in ("bf16", "f16", "tf32"):
        with polyeng.fp_math_mode(mode):
            assert_identical(polyeng.clip(x, min=-0.3, max=np.float64(0.7)), want)


def test_spec():
    from polyeng.amp import Category
    from polyeng.ops import OPS
    spec = OPS["clip"]
    assert spec.family == "clip" and spec.exact and spec.category is Category.FOLLOW
    assert spec.chunking == "elementwise" and polyeng.clip is spec.function


# -- graphs, dask and device tensors ----------------------------------------------------------------

def test_graph_of_clip():
    x = sample((4, 6), np.float32)
    lo = sample((4, 1), np.float32) - 1
    graph = polyeng.graph.trace(lambda v, b: polyeng.clip(polyeng.clip(v, min=b), max=0.5), x, lo)
    assert [n.op for n in graph.nodes] == ["clip", "clip"]
    assert_identical(graph(x, lo), np.minimum(np.maximum(x, lo), np.float32(0.5)))
    y, b = sample((4, 6), np.float32, seed=5), sample((4, 1), np.float32, seed=6)
    assert_identical(graph(y, b), np.minimum(np.maximum(y, b), np.float32(0.5)))   # new inputs, same graph


def test_dask_arrays_stay_lazy_and_equal_the_eager_op():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = special_values(np.float32, 6 * 8).reshape(6, 8)
    lo, hi = sample((6, 1), np.float32) - 1, sample(8, np.float32) + 1
    for bounds in ({"min": -0.5, "max": 0.5}, {"min": lo, "max": hi},
                   {"min": da.from_array(lo, chunks=(2, 1)), "max": da.from_array(hi, chunks=5)}):
        lazy = polyeng.clip(da.from_array(x, chunks=(4, 3)), **bounds)
        assert isinstance(lazy, da.Array) and lazy.dtype == x.dtype and lazy.shape == x.shape
        got = dask.compute(lazy, scheduler="sync")[0]
        eager = {k: np.asarray(v) for k, v in bounds.items()}
        assert_identical(np.ascontiguousarray(got), polyeng.clip(x, **eager))


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", ["f64", "bf16"])
def test_device_tensors_stay_on_their_engine(engine, dtype):
    f = FLOATS[dtype]
    x, lo = special_values(f, 5 * 40).reshape(5, 40), sample((5, 1), f) - 1
    tx, tlo = polyeng.to_device(x, engine), polyeng.to_device(lo, engine)
    for bounds in ({"min": tlo, "max": 0.5}, {"min": -0.5}, {"max": lo}):
        result = polyeng.clip(tx, **bounds)
        assert not isinstance(result, np.ndarray)   # stayed on the device
        host = {k: polyeng.to_numpy(v) if not isinstance(v, float) else v for k, v in bounds.items()}
        assert_identical(np.ascontiguousarray(polyeng.to_numpy(result)), run_on("basic", "clip", x, **host))
    result = polyeng.clip(x, min=tlo)   # a bound on the device takes the call there
    assert not isinstance(result, np.ndarray)
