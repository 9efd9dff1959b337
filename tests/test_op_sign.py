"""abs and neg (torch.abs, torch.neg): exact sign changes on every engine and dtype, bit for bit
against numpy (NaN, signed zeros, infinities, integer wrap-around) and PyTorch, on strided and
zero-size inputs, in graphs and on dask arrays."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import assert_identical, bits

OPS = {"abs": np.abs, "neg": np.negative}
ENGINES = [pytest.param(e.name, marks=() if e.available else
                        pytest.mark.skip(reason=f"engine {e.name!r} is unavailable: {e.reason}"))
           for e in polyeng.engines() if {"abs", "neg"} <= set(e.ops)]
FLOATS = [np.float16, dt.bfloat16, np.float32, np.float64]
INTEGERS = [np.int8, np.uint8, np.int32, np.int64]


def run(op, engine, x):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(x)


def special_values(dtype):
    """Every kind of value whose sign handling can go wrong, repeated past a vector width so
    both the vector loop and the scalar remainder of each kernel see them."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = [info.min, info.min + 1, 0, 1, info.max, info.max - 1, 7]
        if info.min < 0:
            values += [-1, -7]
    else:
        values = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 3e-8, -65504.0,
                  float(np.finfo(np.float16).tiny), -float(np.finfo(np.float16).tiny)]
    base = np.array(values, dtype)
    return np.resize(base, 3 * 16 + 5)


# -- known values --------------------------------------------------------------
def test_known_float_values():
    x = np.array([-2.5, -0.0, 0.0, np.inf, -np.inf, 3.0], np.float32)
    a, n = polyeng.abs(x), polyeng.neg(x)
    np.testing.assert_array_equal(a, [2.5, 0.0, 0.0, np.inf, np.inf, 3.0])
    np.testing.assert_array_equal(n, [2.5, 0.0, -0.0, -np.inf, np.inf, -3.0])
    assert not np.signbit(a).any()                                       # abs(-0.0) is +0.0
    assert np.signbit(n).tolist() == [False, False, True, True, False, True]   # neg(0.0) is -0.0
    nan = np.array([np.nan, -np.nan], np.float32)
    assert np.isnan(polyeng.abs(nan)).all() and np.isnan(polyeng.neg(nan)).all()


def test_integers_wrap_as_numpy_and_torch_do():
    np.testing.assert_array_equal(polyeng.abs(np.array([-128, -127, 5], np.int8)), np.array([-128, 127, 5], np.int8))
    np.testing.assert_array_equal(polyeng.neg(np.array([-128, 127], np.int8)), np.array([-128, -127], np.int8))
    np.testing.assert_array_equal(polyeng.neg(np.array([0, 1, 255], np.uint8)), np.array([0, 255, 1], np.uint8))
    np.testing.assert_array_equal(polyeng.abs(np.array([0, 200], np.uint8)), np.array([0, 200], np.uint8))
    low = np.iinfo(np.int64).min
    assert polyeng.abs(np.array([low], np.int64))[0] == low and polyeng.neg(np.array([low], np.int64))[0] == low


# -- every engine, every dtype, against numpy bit for bit ---------------------------
@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("engine", ENGINES)
def test_special_values_match_numpy_bit_for_bit(engine, op, dtype):
    x = special_values(dtype)
    assert_identical(run(op, engine, x), OPS[op](x))


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8, np.int64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("engine", ENGINES)
def test_large_inputs_run_in_parallel_chunks_and_match_numpy(engine, op, dtype):
    # past NUMBA's one-thread size and its chunk length, with a remainder after the last full run
    x = np.resize(special_values(dtype), (1 << 17) + 19)
    assert_identical(run(op, engine, x), OPS[op](x))


LAYOUTS = {
    "transposed": lambda a: a.T,
    "negative-strides": lambda a: a[::-1, ::-2],
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),
    "read-only": lambda a: np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("engine", ENGINES)
def test_non_contiguous_and_read_only_inputs(engine, op, dtype, layout):
    x = LAYOUTS[layout](special_values(dtype)[:48].reshape(6, 8))
    got = run(op, engine, x)
    assert not np.shares_memory(got, x)
    assert_identical(got, OPS[op](np.ascontiguousarray(x)))
    assert_identical(x, LAYOUTS[layout](special_values(dtype)[:48].reshape(6, 8)))   # input untouched


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 2, 5)])
@pytest.mark.parametrize("dtype", [dt.bfloat16, np.float32, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("engine", ENGINES)
def test_zero_size_inputs(engine, op, dtype, shape):
    x = np.zeros(shape, dtype)
    got = run(op, engine, x)
    assert type(got) is np.ndarray and got.shape == shape and got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("engine", ENGINES)
def test_zero_d_input(engine, op):
    x = np.array(-3.5, np.float32)
    assert_identical(run(op, engine, x), OPS[op](x))


# -- PyTorch semantics --------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64] + INTEGERS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
def test_matches_torch(op, dtype):
    torch = pytest.importorskip("torch")
    x = special_values(dtype)
    want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
    got = getattr(polyeng, op)(x)
    assert got.dtype == want.dtype
    if got.dtype.kind == "f":   # torch leaves NaN payloads to the hardware: NaN where torch has NaN
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ordinary = ~np.isnan(want)
        np.testing.assert_array_equal(bits(got[ordinary]), bits(want[ordinary]))   # signed zeros too
    else:
        np.testing.assert_array_equal(got, want)


def test_bfloat16_matches_torch():
    torch = pytest.importorskip("torch")
    x = special_values(dt.bfloat16)
    ordinary = ~np.isnan(x.astype(np.float32))
    for op in OPS:
        want = getattr(torch, op)(torch.from_numpy(bits(x).view(np.int16).copy()).view(torch.bfloat16))
        want = want.view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(bits(getattr(polyeng, op)(x))[ordinary], want[ordinary])


# -- arguments -------------------------------------------------------------------------
@pytest.mark.parametrize("op", list(OPS))
def test_bool_is_a_type_error_naming_x(op):
    with pytest.raises(TypeError, match=rf"^x has dtype bool; {op} expects a floating-point or integer array"):
        getattr(polyeng, op)(np.array([True, False]))


@pytest.mark.parametrize("op", list(OPS))
def test_lists_and_scalars_are_arrays(op):
    assert_identical(getattr(polyeng, op)([-1.5, 2.0]), OPS[op](np.array([-1.5, 2.0])))
    assert_identical(getattr(polyeng, op)(-3), OPS[op](np.array(-3)))


def test_ops_are_exact_elementwise_follow_ops():
    from polyeng.amp import Category
    from polyeng.ops import OPS as SPECS
    for op in OPS:
        spec = SPECS[op]
        assert spec.exact and spec.category is Category.FOLLOW and spec.chunking == "elementwise"
        assert spec.family == "sign" and getattr(polyeng, op) is spec.function


def test_sixteen_bit_inputs_are_not_converted_under_a_low_precision_mode():
    # exact ops run on their storage dtype whatever the fp math mode allows
    x = special_values(np.float32)
    with polyeng.fp_math_mode("bf16"):
        assert_identical(polyeng.neg(x), np.negative(x))
    y = special_values(np.float16)
    with polyeng.fp_math_mode("bf16"):
        assert_identical(polyeng.abs(y), np.abs(y))


# -- graphs and dask ---------------------------------------------------------------------
def test_graph_of_neg_of_abs():
    x = special_values(np.float32).reshape(-1, 1)
    graph = polyeng.graph.trace(lambda v: polyeng.neg(polyeng.abs(v)), x)
    assert [n.op for n in graph.nodes] == ["abs", "neg"]
    assert graph.nodes[1].inputs == graph.nodes[0].outputs
    assert_identical(graph(x), np.negative(np.abs(x)))
    y = special_values(np.float32)[::-1].reshape(-1, 1).copy()
    assert_identical(graph(y), np.negative(np.abs(y)))   # a new input through the same graph


@pytest.mark.parametrize("op", list(OPS))
def test_dask_arrays_stay_lazy_and_equal_the_eager_op(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = special_values(np.float32)[:48].reshape(6, 8)
    lazy = getattr(polyeng, op)(da.from_array(x, chunks=(4, 3)))
    assert isinstance(lazy, da.Array) and lazy.dtype == x.dtype and lazy.shape == x.shape
    got = dask.compute(lazy, scheduler="sync")[0]
    assert_identical(got, OPS[op](x))


@pytest.mark.device_tensors
@pytest.mark.uses_ops("abs", "neg")
@pytest.mark.parametrize("dtype", [np.float64, dt.bfloat16, np.int8], ids=lambda d: np.dtype(d).name)
def test_device_tensors_stay_on_their_engine(engine, dtype):
    x = special_values(dtype)
    result = polyeng.neg(polyeng.abs(polyeng.to_device(x, engine)))
    assert not isinstance(result, np.ndarray)   # the chain stayed on the device
    assert_identical(polyeng.to_numpy(result), np.negative(np.abs(x)))
