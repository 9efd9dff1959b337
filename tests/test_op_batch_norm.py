"""batch_norm in its inference form: BASIC against PyTorch and known values, every engine
against BASIC over dtypes, ranks 2 to 5, optional weight and bias, f32 statistics of 16-bit
inputs, strided views, zero-size inputs, dask arrays; and each bad argument named."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

torch = pytest.importorskip("torch")

ENGINES = [pytest.param(e.name, marks=() if e.available else
                        pytest.mark.skip(reason=f"engine {e.name!r} is unavailable: {e.reason}"))
           for e in polyeng.engines() if "batch_norm" in e.ops]
FLOATS = [np.float16, dt.bfloat16, np.float32, np.float64]
SHAPES = [(3, 5), (2, 5, 7), (2, 5, 7, 9), (1, 5, 2, 3, 4), (2, 5, 1, 1)]


def run(engine, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.batch_norm(*args, **kwargs)


def statistics(rng, channels, dtype=np.float32):
    mean, weight, bias = (rng.standard_normal(channels).astype(dtype) for _ in range(3))
    var = (np.abs(rng.standard_normal(channels)) + 0.25).astype(dtype)
    return mean, var, weight, bias


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_basic_matches_pytorch(shape, affine):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    mean, var, weight, bias = statistics(rng, shape[1], np.float64)
    w, b = (weight, bias) if affine else (None, None)
    got = polyeng.batch_norm(x, mean, var, w, b, eps=1e-3)
    t = (lambda a: None if a is None else torch.from_numpy(a))
    want = torch.nn.functional.batch_norm(t(x), t(mean), t(var), t(w), t(b), training=False, eps=1e-3).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_known_values():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    got = polyeng.batch_norm(x, np.array([1.0, 2.0], np.float32), np.array([4.0, 1.0], np.float32),
                             np.array([2.0, 1.0], np.float32), np.array([0.5, 0.0], np.float32), eps=0.0)
    np.testing.assert_array_equal(got, [[0.5, 0.0], [2.5, 2.0]])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_engine_matches_basic(engine, dtype, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    stats = statistics(rng, shape[1], np.float32 if dtype != np.float64 else np.float64)
    want = run("basic", x, *stats)
    got = run(engine, x, *stats)
    assert type(got) is np.ndarray and got.dtype == np.dtype(dtype) and got.shape == shape
    eps = {np.dtype(np.float16): 2.0 ** -10, np.dtype(dt.bfloat16): 2.0 ** -7}.get(np.dtype(dtype), 1e-6)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=eps * max(1.0, float(np.max(np.abs(want.astype(np.float64))))))


@pytest.mark.parametrize("engine", ENGINES)
def test_strided_views_and_zero_size(engine):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 10, 6, 6)).astype(np.float32)[::2, ::2, :, ::-1]
    stats = statistics(rng, 5)
    np.testing.assert_allclose(run(engine, x, *stats), run("basic", np.ascontiguousarray(x), *stats), rtol=1e-6,
                               atol=1e-6)
    empty = run(engine, np.zeros((0, 5, 3), np.float32), *stats)
    assert empty.shape == (0, 5, 3) and empty.dtype == np.float32


def test_dask_arrays_chunked_along_the_channels():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5, 7)).astype(np.float32)
    stats = statistics(rng, 5)
    lazy = polyeng.batch_norm(da.from_array(x, chunks=(2, 2, 3)), *stats)
    np.testing.assert_array_equal(lazy.compute(), polyeng.batch_norm(x, *stats))


X = np.ones((2, 3, 4), np.float32)
S = np.ones(3, np.float32)


@pytest.mark.parametrize("call, error, message", [
    (lambda: polyeng.batch_norm(X.astype(np.int64), S, S), TypeError, r"\bx\b"),
    (lambda: polyeng.batch_norm(X[0, 0], S, S), ValueError, r"x has shape \(4,\)"),
    (lambda: polyeng.batch_norm(X, None, S), TypeError, r"running_mean=None"),
    (lambda: polyeng.batch_norm(X, S, np.ones(4, np.float32)), ValueError, r"running_var has shape \(4,\)"),
    (lambda: polyeng.batch_norm(X, S, S, np.ones((3, 1), np.float32)), ValueError, r"weight"),
    (lambda: polyeng.batch_norm(X, S, S, None, S.astype(np.float16)), TypeError, r"bias has dtype float16"),
    (lambda: polyeng.batch_norm(X, S, S, eps=-1.0), ValueError, r"eps=-1.0"),
    (lambda: polyeng.batch_norm(X, S, S, eps="small"), TypeError, r"eps='small'"),
])
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
