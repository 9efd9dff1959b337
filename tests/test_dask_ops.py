"""Ops on dask arrays, computed in this process: lazy, exact, settings from where the op was called."""
import logging
import pickle

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import polyeng  # noqa: E402
from dask_cases import CASES, flat  # noqa: E402

MOVEMENT = {"relu", "select", "max_pool2d_tiles", "concat", "permute", "reshape_split", "add_int", "embedding",
            "cast_bf16", "max_pool2d_overlap", "max_pool2d_indices", "matmul_int"}


def _lazy(fn, arrays, chunks):
    return fn(*[da.from_array(a, chunks=c) for a, c in zip(arrays, chunks)])


def _check(got, want, exact, name):
    assert type(got) is np.ndarray, name
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.dtype, want.shape)
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("name, fn, arrays, chunks, exact", CASES, ids=[c[0] for c in CASES])
def test_an_op_on_dask_arrays_equals_the_eager_op(name, fn, arrays, chunks, exact):
    # one engine for both: engines may differ in the last bit, and the default selection picks
    # engines by size (a block is smaller than the whole array)
    with polyeng.compute_eng("basic"):
        want = flat(fn(*arrays))
        lazy = flat(_lazy(fn, arrays, chunks))
    assert all(isinstance(a, da.Array) for a in lazy), name
    for a, w in zip(lazy, want):   # dask's metadata is the op's own
        assert a.dtype == w.dtype and a.shape == w.shape, (name, a.dtype, a.shape, w.dtype, w.shape)
    got = dask.compute(*lazy, scheduler="sync")
    for g, w in zip(got, want):
        _check(g, w, exact, name)


@pytest.mark.parametrize("name, fn, arrays, chunks, exact", CASES, ids=[c[0] for c in CASES])
def test_each_engine_runs_the_blocks(engine, name, fn, arrays, chunks, exact, caplog):
    with polyeng.compute_eng(engine):
        want = flat(fn(*arrays))
    with polyeng.compute_eng(engine, fallback=False), polyeng.verbose(1):
        lazy = flat(_lazy(fn, arrays, chunks))
    with caplog.at_level(logging.INFO, logger="polyeng"):
        got = dask.compute(*lazy, scheduler="threads")
    # a compiled kernel may take another code path for a block than for the whole array (vector
    # lanes and a scalar remainder): the last bit of a transcendental may differ, data may not
    for g, w in zip(got, want):
        _check(g, w, exact and name in MOVEMENT, name)
    lines = [r.message for r in caplog.records if r.message.startswith("polyeng,exec,")]
    assert lines and all(f",{engine},user," in line for line in lines), lines[:3]


def test_making_the_lazy_result_runs_no_op(caplog):
    x = da.from_array(np.ones((8, 6), np.float32), chunks=(3, 4))
    with polyeng.verbose(1), caplog.at_level(logging.INFO, logger="polyeng"):
        lazy = polyeng.linear(polyeng.softmax(polyeng.relu(x)), np.ones((5, 6), np.float32))
    assert not [r for r in caplog.records if r.message.startswith("polyeng,exec,")]
    assert lazy.shape == (8, 5) and lazy.dtype == np.float32
    assert lazy._meta.shape == (0, 0) and lazy._meta.dtype == np.float32


def test_the_settings_are_those_where_the_op_was_called():
    a = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    b = a.T.copy()   # BLAS may order the sums differently for a transposed view than for its copy
    with polyeng.compute_eng("basic"), polyeng.fp_math_mode("bf16"):
        lazy = polyeng.matmul(da.from_array(a, chunks=(32, 64)), b)
        rows = polyeng.matmul(da.from_array(a, chunks=(8, 64)), b)
        eager_bf16 = polyeng.matmul(a, b)
    strict = polyeng.matmul(a, b)
    assert np.abs(eager_bf16 - strict).max() > 1e-2   # the mode makes a difference here
    np.testing.assert_array_equal(lazy.compute(scheduler="threads"), eager_bf16)
    with polyeng.fp_math_mode("strict"):   # computing under another mode changes nothing
        np.testing.assert_array_equal(lazy.compute(scheduler="sync"), eager_bf16)
        # 8-row blocks: BLAS may sum a block's rows in another order than the whole matrix's
        np.testing.assert_allclose(rows.compute(scheduler="sync"), eager_bf16, rtol=1e-5, atol=1e-4)


def test_a_bad_argument_raises_when_the_op_is_called():
    x = da.ones((4, 6), chunks=2, dtype=np.float32)
    with pytest.raises(ValueError, match="axis"):
        polyeng.softmax(x, axis=5)
    with pytest.raises(ValueError, match="weight"):
        polyeng.linear(x, np.ones((3, 5), np.float32))
    with pytest.raises(TypeError, match="cond"):
        polyeng.select(x, x, x)


def test_unknown_chunk_sizes_are_named():
    x = da.ones((6, 4), chunks=2, dtype=np.float32)
    x = x[x[:, 0] > 0]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        polyeng.relu(x)


@pytest.mark.device_tensors
def test_a_device_tensor_with_a_dask_array_is_a_type_error(engine):
    t = polyeng.to_device(np.ones((4, 6), np.float32), engine)
    x = da.ones((4, 6), chunks=2, dtype=np.float32)
    with pytest.raises(TypeError, match="device tensor"):
        polyeng.add(x, t)
    with pytest.raises(TypeError, match="device tensor"):
        polyeng.concat([t, x])
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(t)


def test_explain_reads_shapes_without_computing():
    x = da.ones((4096, 4096), chunks=1024, dtype=np.float32)
    decision = polyeng.explain("softmax", x)
    assert decision.engine and decision.compute_type == "f32"


def test_a_graph_on_dask_arrays_runs_each_batch_chunk():
    w = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)

    def fn(x, mask):
        h = polyeng.gelu(polyeng.linear(x, w))
        return polyeng.softmax(polyeng.select(mask, h, -1e9), axis=-1), polyeng.mean(h, axis=1)
    x = np.random.default_rng(2).standard_normal((10, 8)).astype(np.float32)
    mask = np.random.default_rng(3).random((10, 16)) > 0.3
    graph = polyeng.graph.trace(fn, x[:2], mask[:2])
    want = graph(x, mask)
    lazy = graph(da.from_array(x, chunks=(4, 3)), mask)
    assert [type(v) for v in lazy] == [da.Array, da.Array]
    assert lazy[0].chunks == ((4, 4, 2), (16,)) and lazy[1].chunks == ((4, 4, 2),)
    for got, w_ in zip(dask.compute(*lazy, scheduler="threads"), want):
        np.testing.assert_array_equal(got, w_)
    # the graph is one piece of data the chunk tasks share, not a copy in each
    graph_keys = [k for k in dict(lazy[0].__dask_graph__()) if str(k[0] if isinstance(k, tuple) else k)
                  .startswith("polyeng-graph-") and "output" not in str(k)]
    assert graph_keys


def test_a_graph_output_without_the_batch_is_refused():
    graph = polyeng.graph.trace(lambda x: polyeng.mean(x, axis=0), np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="leading dim"):
        graph(da.ones((6, 4), chunks=2, dtype=np.float32))


@pytest.mark.parametrize("file", ["lstm_lm_opset17", "unet_dynamo", "encoder_dynamo"])
def test_an_imported_model_is_split_along_its_named_batch(file):
    pytest.importorskip("onnx")
    from polyeng import models, onnx as polyeng_onnx
    graph = polyeng_onnx.load(models.path(file))
    rng = np.random.default_rng(5)
    inputs, lazy_inputs = [], []
    for v in graph.inputs:
        shape = tuple({"batch": 6, "seq": 5}.get(d, d) if isinstance(d, str) else d for d in v.shape)
        value = (rng.integers(0, 50, shape) if v.dtype == np.int64 else rng.random(shape) > 0.2 if v.dtype == bool
                 else rng.standard_normal(shape).astype(v.dtype))
        inputs.append(value)
        axis = list(v.shape).index("batch")   # lstm_lm's ids are (seq, batch)
        lazy_inputs.append(da.from_array(value, chunks=tuple(4 if a == axis else 2 for a in range(value.ndim))))
    with polyeng.compute_eng("basic"):
        want = flat(graph(*inputs))
        lazy = flat(graph(*lazy_inputs))
    for got, w, part in zip(dask.compute(*lazy, scheduler="threads"), want, lazy):
        assert got.shape == w.shape
        assert [c for c in part.chunks if len(c) > 1] == [(4, 2)]   # split along the batch only
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)
    assert all(np.isfinite(n) for a in lazy for c in a.chunks for n in c)   # every size known before computing


def test_a_graph_whose_batch_cannot_be_told_is_refused():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from polyeng import onnx as polyeng_onnx
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "t", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "t", 4])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    graph = polyeng_onnx.load(model.SerializeToString())
    with pytest.raises(ValueError, match="cannot tell which named dim is the batch"):
        graph(da.ones((4, 3, 4), chunks=2, dtype=np.float32))


def test_a_graph_finds_dask_arrays_nested_deep_in_its_inputs():
    import polyeng.graph
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    graph = polyeng.graph.trace(lambda d: polyeng.relu(d["a"][0][0]), {"a": [[x]]})
    lazy = graph({"a": [[da.from_array(x, chunks=(3, 4))]]})
    assert isinstance(lazy, da.Array)   # lazy, one task per batch chunk, not computed here
    np.testing.assert_array_equal(lazy.compute(), np.maximum(x, 0))
