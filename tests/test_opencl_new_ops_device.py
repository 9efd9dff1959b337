"""The elementwise ops, mean, reshape and embedding on device tensors: device inputs give device
results equal to BASIC's, chains stay on the device, and OpenCLTensor's ``.reshape`` and ``.T``."""
import logging

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import device_tensor_or_skip

BINARY = ["add", "sub", "mul", "div", "pow"]
UNARY = ["relu", "sigmoid", "tanh", "exp", "sqrt", "erf"]
pytestmark = [pytest.mark.uses_ops(*BINARY, *UNARY, "mean", "reshape", "embedding"), pytest.mark.device_tensors]
FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
INTEGERS = [dt.int8, dt.uint8, dt.int32, dt.int64]
EXACT = {"add", "sub", "mul", "div", "relu"}   # correctly rounded in the compute type: BASIC's bits
opencl_only = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["opencl"].available,
                                 reason="no OpenCL platform (the CI run requires one)")


def on(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def host(value):
    return polyeng.to_numpy(value) if not isinstance(value, np.ndarray) else value


def assert_matches(got, want, op):
    assert got.dtype == want.dtype and got.shape == want.shape
    if op in EXACT or want.dtype.kind in "iu":
        assert got.tobytes() == want.tobytes()
        return
    eps = 2.0 ** -7 if want.dtype == dt.bfloat16 else float(np.finfo(want.dtype).eps)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=4 * eps, atol=4 * eps,
                               equal_nan=True)


def operands(op, dtype, rng):
    """Arguments that broadcast: (3, 1, 17) against (5, 17); pow's base positive."""
    a = (rng.standard_normal((3, 1, 17)) * 3).astype(dtype)
    b = (rng.standard_normal((5, 17)) * 3 + 0.5).astype(dtype)
    return (np.abs(a), b) if op == "pow" else (a, b)


@pytest.mark.parametrize("dtype", FLOATS, ids=dt.short_name)
@pytest.mark.parametrize("op", BINARY + UNARY + ["mean"])
def test_device_inputs_give_device_results_equal_to_basic(engine, op, dtype):
    rng = np.random.default_rng(3)
    args = operands(op, dtype, rng) if op in BINARY else ((rng.standard_normal((4, 33)) * 3).astype(dtype),)
    if op == "sqrt":
        args = (np.abs(args[0]),)
    kwargs = {"axis": (0, 1)} if op == "mean" else {}
    device = [device_tensor_or_skip(a, engine) for a in args]
    got = on(engine, op, *device, **kwargs)
    assert type(got) is type(device[0]) and got.dtype == dtype
    assert_matches(polyeng.to_numpy(got), on("basic", op, *args, **kwargs), op)


@pytest.mark.parametrize("dtype", INTEGERS, ids=dt.short_name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "relu"])
def test_integers_on_the_device_wrap_around_as_numpy(engine, op, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, -1 if info.min else 7, 0, 3, info.max // 3], dtype)
    b = np.array([1, -1 if info.min else 255, info.max, info.min, 5, -3 if info.min else 9, 7], dtype)
    args = (a,) if op == "relu" else (a, b)
    got = on(engine, op, *[device_tensor_or_skip(v, engine) for v in args])
    want = on("basic", op, *args)
    assert want.dtype == (dt.float64 if op == "div" else dtype)
    assert_matches(polyeng.to_numpy(got), want, op)


@pytest.mark.parametrize("other", [
    pytest.param(lambda rng: (rng.standard_normal((6, 8)) * 4).astype(np.int8)[:, ::-2], id="int8-negative-stride"),
    pytest.param(lambda rng: rng.standard_normal((2, 6)).astype(np.float64).T[:, 1:], id="f64-column-view"),
    pytest.param(lambda rng: np.float32(2.5).reshape(()), id="f32-0d"),
    pytest.param(lambda rng: 3, id="python-int"),
    pytest.param(lambda rng: np.zeros((0, 6, 1), dt.float16), id="f16-zero-size")])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_a_device_operand_with_a_host_one_of_another_dtype(engine, op, other):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((6, 4)) * 3).astype(dt.bfloat16)
    b = other(rng)
    got = on(engine, op, device_tensor_or_skip(x, engine), b)
    want = on("basic", op, x, b)
    assert type(got) is not np.ndarray
    assert_matches(polyeng.to_numpy(got), want, op)


@pytest.mark.parametrize("dtype", [dt.bfloat16, dt.float64, dt.int8], ids=dt.short_name)
@pytest.mark.parametrize("shapes", [((200003,), (200003,)), ((3, 70001), (70001,)), ((5, 40001, 3), (1, 40001, 1))],
                         ids=["flat", "rows", "inner-broadcast"])
def test_long_device_runs_match_basic(engine, shapes, dtype):
    # long enough that a CPU device's work items take many 16-element runs each, odd-sized tails
    rng = np.random.default_rng(8)
    a, b = [(rng.standard_normal(s) * 50).astype(dtype) for s in shapes]
    for op in ("add", "mul", "relu"):
        args = (a,) if op == "relu" else (a, b)
        got = on(engine, op, *[device_tensor_or_skip(v, engine) for v in args])
        assert_matches(polyeng.to_numpy(got), on("basic", op, *args), op)


def test_special_values_on_the_device(engine):
    x = np.array([np.nan, np.inf, -np.inf, -1.0, 0.0, -200.0, 200.0], np.float32)
    t = device_tensor_or_skip(x, engine)
    values = {op: polyeng.to_numpy(on(engine, op, t)) for op in UNARY}
    assert np.isnan(values["sqrt"][3]) and values["exp"][1] == np.inf and values["exp"][2] == 0
    assert values["erf"][1:3].tolist() == [1.0, -1.0] and np.isnan(values["relu"][0])
    assert values["sigmoid"][5:].tolist() == [0.0, 1.0]
    assert polyeng.to_numpy(on(engine, "pow", device_tensor_or_skip(np.zeros(2, np.float32), engine),
                               -1.0)).tolist() == [np.inf, np.inf]


def test_a_chain_stays_on_the_device_and_reshape_shares_the_buffer(engine, caplog):
    x = np.random.default_rng(5).standard_normal((4, 6, 10)).astype(np.float32)
    bias = np.linspace(-1, 1, 12, dtype=np.float32)
    t = device_tensor_or_skip(x, engine)
    with caplog.at_level(logging.INFO, logger="polyeng"), polyeng.verbose(1):
        r = polyeng.reshape(t, (-1, 12))
        a = polyeng.add(r, polyeng.to_device(bias, engine))
        m = polyeng.mean(polyeng.relu(a), axis=0)
    assert all(type(v) is type(t) for v in (r, a, m)) and r.shape == (20, 12) and m.shape == (12,)
    if hasattr(t, "buffer"):
        assert r.buffer is t.buffer
    lines = [line for line in caplog.messages if line.startswith("polyeng,exec")]
    assert [line.split(",")[2:5] for line in lines] == [[op, engine, "layout"] for op in ("reshape", "add", "relu",
                                                                                          "mean")]
    assert not any("transferred" in line for line in lines)
    expected = np.maximum(x.reshape(20, 12) + bias, 0).astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(polyeng.to_numpy(m), expected, rtol=1e-6)


def test_embedding_with_device_ids_and_weight(engine):
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((50, 37)).astype(dt.bfloat16)
    ids = rng.integers(0, 50, (3, 5)).astype(np.int32)
    for ids_there, weight_there in ((False, True), (True, False), (True, True)):
        use = [device_tensor_or_skip(v, engine) if there else v for v, there in ((ids, ids_there),
                                                                               (weight, weight_there))]
        got = on(engine, "embedding", *use)
        assert type(got) is type(use[0] if ids_there else use[1]) and got.shape == (3, 5, 37)
        assert host(got).view(np.uint16).tolist() == weight[ids].view(np.uint16).tolist()


def test_an_out_of_range_device_id_is_a_value_error_naming_it(engine):
    ids = np.array([[0, 3], [7, 50]], np.int64)
    weight = device_tensor_or_skip(np.ones((50, 4), np.float32), engine)
    with pytest.raises(ValueError, match=r"ids\[1, 1\]=50 is out of range"):
        on(engine, "embedding", device_tensor_or_skip(ids, engine), weight)


@opencl_only
@pytest.mark.parametrize("shape", [(2, 3, 4), (0, 6), ()])
def test_tensor_reshape_is_a_view_of_the_same_buffer(shape):
    x = np.arange(np.prod(shape, dtype=int), dtype=np.float64).reshape(shape)
    t = polyeng.to_device(x)
    for new in ([(-1,), (x.size,)], [(1, -1, 1), ((1, -1, 1),)]):
        views = [t.reshape(*args) for args in new]
        for v in views:
            assert v.buffer is t.buffer and v.shape == x.reshape(new[0]).shape
            if t.host is not None:   # a device sharing the host's memory: the array is reshaped too
                assert v.host.shape == v.shape and np.shares_memory(v.host, t.host)
            np.testing.assert_array_equal(polyeng.to_numpy(v), x.reshape(new[0]))


@opencl_only
def test_tensor_reshape_errors_name_the_shape():
    t = polyeng.to_device(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"shape=\(4, 2\)"):
        t.reshape(4, 2)
    with pytest.raises(ValueError, match=r"shape=\(-1, -1\)"):
        t.reshape((-1, -1))
    with pytest.raises(ValueError, match=r"shape=\(4, -1\).*cannot be inferred"):
        t.reshape(4, -1)
    with pytest.raises(TypeError, match="shape"):
        t.reshape()


@opencl_only
def test_host_reshape_on_opencl_is_numpy_view():
    x = np.arange(12, dtype=np.int8)
    y = on("opencl", "reshape", x, (3, -1))
    assert type(y) is np.ndarray and y.shape == (3, 4) and np.shares_memory(x, y)


@opencl_only
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_tensor_transpose_reverses_the_axes_as_a_device_copy(shape):
    x = np.random.default_rng(7).standard_normal(shape).astype(dt.bfloat16)
    t = polyeng.to_device(x)
    with polyeng.compute_eng("basic", fallback=False):   # .T is the tensor's own: OPENCL regardless
        y = t.T
    assert type(y) is type(t) and y.shape == x.T.shape
    assert polyeng.to_numpy(y).tobytes() == np.ascontiguousarray(x.T).tobytes()
    assert (y is t) == (len(shape) < 2)
    if len(shape) >= 2:
        assert y.buffer is not t.buffer


@pytest.mark.parametrize("key", [0, -1, 2, slice(1, 3), slice(None), (1, slice(None)), slice(2, 2)])
def test_device_rows_are_copied_on_the_device(key):
    x = np.arange(4 * 3 * 5, dtype=np.float32).reshape(4, 3, 5)
    t = polyeng.to_device(x, "opencl")
    got = t[key]
    assert type(got) is type(t)
    np.testing.assert_array_equal(polyeng.to_numpy(got), x[key])


@pytest.mark.parametrize("key", [(slice(None), 1), slice(0, 4, 2), np.array([0, 2])])
def test_device_indexing_beyond_rows_is_not_implemented(key):
    t = polyeng.to_device(np.zeros((4, 3), np.float32), "opencl")
    with pytest.raises(NotImplementedError):
        t[key]


def test_device_row_index_out_of_range_names_it():
    t = polyeng.to_device(np.zeros((4, 3), np.float32), "opencl")
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        t[4]
