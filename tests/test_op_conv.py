"""conv1d and conv2d (torch.nn.functional.conv1d/conv2d): BASIC against PyTorch, every engine
against BASIC over dtypes, strides, dilations, groups (grouped, depthwise, depthwise with a
channel multiplier), every padding form, 1x1 kernels, unbatched inputs, strided views, zero-size
inputs, under bf16 fp math, on dask arrays; each algorithm (pointwise, depthwise by rows and
channels last, Winograd in one pass and in blocks of tile rows, im2col over stride phases, a
batch per pass or an image) taken where the case says; and each bad argument named."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import numba_threads

torch = pytest.importorskip("torch")
F = torch.nn.functional

ENGINES = [pytest.param(e.name, marks=() if e.available else
                        pytest.mark.skip(reason=f"engine {e.name!r} is unavailable: {e.reason}"))
           for e in polyeng.engines() if {"conv2d", "conv1d"} <= set(e.ops)]
FLOATS = [np.float16, dt.bfloat16, np.float32, np.float64]

# (x shape, weight shape, keyword arguments, the algorithm explain names)
CASES_2D = [
    ((2, 4, 9, 11), (6, 4, 3, 3), {}, "im2col"),
    ((2, 4, 9, 11), (6, 2, 3, 3), {"stride": 2, "padding": 1, "groups": 2}, "im2col"),
    ((1, 3, 10, 7), (5, 3, 2, 3), {"stride": (2, 1), "dilation": (1, 2), "padding": (1, 2)}, "im2col"),
    ((2, 3, 8, 8), (4, 3, 3, 3), {"padding": (0, 2, 1, 0)}, "im2col"),
    ((2, 3, 7, 7), (5, 3, 4, 2), {"padding": "same", "dilation": 2}, "im2col"),
    ((2, 3, 7, 7), (5, 3, 3, 3), {"padding": "valid"}, "im2col"),
    ((3, 8, 17, 17), (8, 1, 5, 5), {"groups": 8, "stride": 2, "padding": 2}, "depthwise"),
    ((2, 4, 9, 9), (12, 1, 3, 3), {"groups": 4, "padding": 1, "dilation": 2}, "depthwise"),
    ((2, 6, 20, 23), (12, 1, 3, 3), {"groups": 6, "padding": (1, 0, 2, 1), "dilation": (1, 2)}, "depthwise"),
    ((1, 5, 18, 19), (5, 1, 3, 3), {"groups": 5}, "depthwise"),
    ((2, 4, 17, 21), (8, 1, 3, 3), {"groups": 4, "padding": (2, 0, 1, 1)}, "depthwise"),
    ((1, 3, 20, 22), (3, 1, 3, 3), {"groups": 3, "padding": "same", "dilation": 2}, "depthwise"),
    ((2, 8, 38, 41), (8, 8, 3, 3), {"padding": 1}, "winograd"),
    ((1, 16, 29, 30), (24, 16, 3, 3), {"padding": (0, 2, 1, 0)}, "winograd"),
    ((2, 32, 40, 41), (32, 16, 3, 3), {"padding": (2, 1, 0, 3), "groups": 2}, "winograd"),
    ((8, 40, 39), (8, 8, 3, 3), {"padding": "same"}, "winograd"),   # unbatched
    ((2, 8, 12, 12), (8, 8, 3, 3), {"padding": 1}, "im2col"),        # too few output pixels for Winograd
    ((2, 3, 15, 16), (4, 3, 3, 5), {"stride": (3, 2), "dilation": (2, 3), "padding": (1, 2, 0, 3)}, "im2col"),
    ((2, 8, 9, 11), (16, 8, 1, 1), {}, "pointwise"),
    ((2, 8, 9, 11), (16, 2, 1, 1), {"groups": 4}, "pointwise"),
    ((2, 8, 9, 11), (16, 8, 1, 1), {"stride": 2}, "im2col"),
    ((4, 9, 11), (6, 4, 3, 3), {"padding": 1}, "im2col"),   # unbatched (C, H, W)
]
CASES_1D = [
    ((2, 4, 13), (6, 4, 3), {}, "im2col"),
    ((2, 4, 13), (6, 4, 3), {"padding": "same", "dilation": 2}, "im2col"),
    ((2, 4, 13), (8, 1, 5), {"groups": 4, "stride": 3, "padding": (1, 3)}, "depthwise"),
    ((2, 6, 13), (4, 6, 1), {}, "pointwise"),
    ((4, 13), (6, 4, 2), {"stride": 2}, "im2col"),   # unbatched (C, L)
]
CASES = [("conv2d",) + c for c in CASES_2D] + [("conv1d",) + c for c in CASES_1D]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def run(op, engine, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def torch_conv(op, x, w, b, kwargs):
    """PyTorch's result; four-sided padding goes through F.pad, which conv2d does not take."""
    kwargs = dict(kwargs)
    xt = torch.from_numpy(np.ascontiguousarray(x))
    padding = kwargs.get("padding", 0)
    if isinstance(padding, tuple) and len(padding) == (4 if op == "conv2d" else 2) and op == "conv2d":
        top, bottom, left, right = padding
        xt, kwargs["padding"] = F.pad(xt, (left, right, top, bottom)), 0
    elif isinstance(padding, tuple) and op == "conv1d" and len(padding) == 2:
        xt, kwargs["padding"] = F.pad(xt, padding), 0
    bt = None if b is None else torch.from_numpy(b)
    return getattr(F, op)(xt, torch.from_numpy(np.ascontiguousarray(w)), bt, **kwargs).numpy()


def data(rng, x_shape, w_shape, dtype=np.float64, w_dtype=None):
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(w_dtype or dtype)
    b = rng.standard_normal(w_shape[0]).astype(w_dtype or dtype)
    return x, w, b


@pytest.mark.parametrize("op, x_shape, w_shape, kwargs, algorithm", CASES, ids=IDS)
@pytest.mark.parametrize("with_bias", [True, False])
def test_basic_matches_pytorch(op, x_shape, w_shape, kwargs, algorithm, with_bias):
    x, w, b = data(np.random.default_rng(0), x_shape, w_shape)
    b = b if with_bias else None
    got = run(op, "basic", x, w, b, **kwargs)
    want = torch_conv(op, x, w, b, kwargs)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_basic_known_values():
    """A 2x2 box filter with a bias, stride 2, by hand."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    got = polyeng.conv2d(x, np.ones((1, 1, 2, 2), np.float32), np.array([0.5], np.float32), stride=2)
    np.testing.assert_array_equal(got, [[[[10.5, 18.5], [42.5, 50.5]]]])


def _tolerance(dtype, reference) -> float:
    eps = {np.dtype(np.float16): 2.0 ** -10, np.dtype(dt.bfloat16): 2.0 ** -7,
           np.dtype(np.float32): 2.0 ** -20, np.dtype(np.float64): 2.0 ** -48}[np.dtype(dtype)]
    return 2 * eps * max(1.0, float(np.max(np.abs(reference)))) if reference.size else 0.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op, x_shape, w_shape, kwargs, algorithm", CASES, ids=IDS)
def test_every_engine_matches_basic(engine, dtype, op, x_shape, w_shape, kwargs, algorithm):
    x, w, b = data(np.random.default_rng(1), x_shape, w_shape, dtype)
    want = run(op, "basic", x, w, b, **kwargs)
    got = run(op, engine, x, w, b, **kwargs)
    assert type(got) is np.ndarray and got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=_tolerance(dtype, want.astype(np.float64)))
    assert polyeng.explain(op, x, w, b, **kwargs).algorithm == algorithm


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64], ids=lambda d: np.dtype(d).name)
def test_float32_weights_of_another_input_dtype(engine, dtype):
    """The weights and bias may be f32 whatever x is; they are not rounded to x's dtype first."""
    rng = np.random.default_rng(2)
    x, w, b = data(rng, (2, 4, 9, 9), (6, 2, 3, 3), dtype, np.float32)
    want = torch_conv("conv2d", x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                      {"groups": 2, "padding": 1})
    got = run("conv2d", engine, x, w, b, groups=2, padding=1)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=_tolerance(dtype, want))


@pytest.mark.parametrize("engine", ENGINES)
def test_strided_views(engine):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 9, 14, 12)).astype(np.float32)[::2, ::2, :, ::-1].transpose(0, 1, 3, 2)
    w = rng.standard_normal((5, 10, 3, 3)).astype(np.float32)[:, ::2, ::-1]
    assert not x.flags.c_contiguous and not w.flags.c_contiguous
    want = torch_conv("conv2d", x, w, None, {"padding": 1})
    np.testing.assert_allclose(run("conv2d", engine, x, w, padding=1), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("x_shape, w_shape, out_shape", [
    ((0, 3, 8, 8), (4, 3, 3, 3), (0, 4, 6, 6)),
    ((2, 0, 8, 8), (4, 0, 3, 3), (2, 4, 6, 6)),
])
def test_zero_size(engine, x_shape, w_shape, out_shape):
    x, w, b = data(np.random.default_rng(4), x_shape, w_shape, np.float32)
    got = run("conv2d", engine, x, w, b)
    assert got.shape == out_shape and got.dtype == np.float32
    # no input channels: the bias alone (PyTorch gives an empty result there, without the out channels)
    np.testing.assert_array_equal(got, np.broadcast_to(b[:, None, None], out_shape))


@pytest.mark.parametrize("engine", ENGINES)
def test_bf16_fp_math_stays_within_bf16_rounding(engine):
    rng = np.random.default_rng(5)
    x, w, b = data(rng, (2, 16, 12, 12), (32, 16, 3, 3), np.float32)
    want = torch_conv("conv2d", x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), {"padding": 1})
    with polyeng.fp_math_mode("bf16"):
        got = run("conv2d", engine, x, w, b, padding=1)
    assert got.dtype == np.float32
    assert np.max(np.abs(got - want)) <= 2.0 ** -6 * np.max(np.abs(want))


def test_dask_arrays_chunked_anywhere():
    da = pytest.importorskip("dask.array")
    x, w, b = data(np.random.default_rng(6), (6, 4, 9, 11), (6, 2, 3, 3), np.float32)
    lazy = polyeng.conv2d(da.from_array(x, chunks=(2, 3, 4, 5)), w, b, stride=2, padding=1, groups=2)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), polyeng.conv2d(x, w, b, stride=2, padding=1, groups=2))
    x1, w1, _ = data(np.random.default_rng(7), (5, 4, 13), (6, 4, 3), np.float32)
    np.testing.assert_array_equal(polyeng.conv1d(da.from_array(x1, chunks=(2, 2, 5)), w1, padding="same").compute(),
                                  polyeng.conv1d(x1, w1, padding="same"))


def test_traced_graph_runs_every_algorithm():
    rng = np.random.default_rng(8)
    w1, w2, w3 = (rng.standard_normal(s).astype(np.float32) for s in ((8, 4, 3, 3), (8, 1, 3, 3), (4, 8, 1, 1)))

    def net(x):
        y = polyeng.relu(polyeng.conv2d(x, w1, padding=1))
        y = polyeng.conv2d(y, w2, padding=1, groups=8)
        return polyeng.conv2d(y, w3)

    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    graph = polyeng.graph.trace(net, x)
    assert [n.op for n in graph.nodes].count("conv2d") == 3
    np.testing.assert_allclose(graph(x), net(x), rtol=1e-6, atol=1e-6)


X = np.ones((2, 4, 8, 8), np.float32)
W = np.ones((6, 4, 3, 3), np.float32)


@pytest.mark.parametrize("call, error, message", [
    (lambda: polyeng.conv2d(X.astype(np.int32), W), TypeError, r"\bx\b.*int32"),
    (lambda: polyeng.conv2d(X[0, 0], W), ValueError, r"\bx\b"),
    (lambda: polyeng.conv2d(X, W[0]), ValueError, r"weight"),
    (lambda: polyeng.conv2d(X, W.astype(np.float16)), TypeError, r"weight has dtype float16"),
    (lambda: polyeng.conv2d(X, np.ones((6, 3, 3, 3), np.float32)), ValueError, r"weight has shape \(6, 3, 3, 3\)"),
    (lambda: polyeng.conv2d(X, np.ones((6, 2, 3, 3), np.float32), groups=3), ValueError, r"groups=3 must divide"),
    (lambda: polyeng.conv2d(X, W, groups=0), ValueError, r"groups=0"),
    (lambda: polyeng.conv2d(X, W, groups=1.5), TypeError, r"groups=1.5"),
    (lambda: polyeng.conv2d(X, W, np.ones(5, np.float32)), ValueError, r"bias has shape \(5,\)"),
    (lambda: polyeng.conv2d(X, W, stride=0), ValueError, r"stride"),
    (lambda: polyeng.conv2d(X, W, dilation=(1, 0)), ValueError, r"dilation"),
    (lambda: polyeng.conv2d(X, W, padding=-1), ValueError, r"padding"),
    (lambda: polyeng.conv2d(X, W, padding=(1, 2, 3)), ValueError, r"padding=\(1, 2, 3\)"),
    (lambda: polyeng.conv2d(X, W, padding="full"), ValueError, r"padding='full'"),
    (lambda: polyeng.conv2d(X, W, padding="same", stride=2), ValueError, r"padding='same' needs stride 1"),
    (lambda: polyeng.conv2d(X, np.ones((6, 4, 9, 9), np.float32)), ValueError, r"output size"),
    (lambda: polyeng.conv2d(np.ones((2, 4, 0, 8), np.float32), W), ValueError, r"non-zero spatial"),
    (lambda: polyeng.conv2d(X, np.ones((0, 4, 3, 3), np.float32)), ValueError, r"non-zero out channels"),
    (lambda: polyeng.conv1d(X, W), ValueError, r"\bx\b"),
    (lambda: polyeng.conv1d(np.ones((2, 4, 13), np.float32), W[..., 0], padding=(1, 2, 3, 4)), ValueError,
     r"padding=\(1, 2, 3, 4\)"),
])
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def geometry(x, w, kwargs):
    """The ConvGeometry of conv2d(x, w, **kwargs)."""
    from polyeng.ops.conv import CONV2D
    args = CONV2D.validate(x, w, None, kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("dilation", 1),
                           kwargs.get("groups", 1))
    return CONV2D.prepare(args).geometry


def _algorithm_cases(algorithm):
    return [pytest.param(*c[:3], id=f"{i}") for i, c in enumerate(CASES_2D) if c[3] == algorithm]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", _algorithm_cases("winograd") + _algorithm_cases("im2col"))
@pytest.mark.parametrize("pass_bytes", [1, 1 << 30], ids=["smallest-passes", "one-pass"])
def test_passes_of_every_size_match_pytorch(monkeypatch, x_shape, w_shape, kwargs, pass_bytes):
    """Winograd in passes (BASIC) and chunks (NUMBA) of one tile row of one image up to the whole
    batch (a whole image) at once, im2col one image per pass up to the whole batch, with and without
    a bias, on BASIC and NUMBA."""
    from polyeng.backends import _conv_numpy, _conv_winograd
    monkeypatch.setattr(_conv_winograd, "PASS_BYTES", pass_bytes)
    monkeypatch.setattr(_conv_numpy, "PASS_BYTES", pass_bytes)
    monkeypatch.setattr(_conv_winograd, "CHUNK_BYTES", pass_bytes)
    monkeypatch.setattr(_conv_winograd, "MIN_CHUNK_WIDTH", 1)
    x, w, b = data(np.random.default_rng(9), x_shape, w_shape, np.float32)
    for bias in (b, None):
        want = torch_conv("conv2d", x.astype(np.float64), w.astype(np.float64),
                          None if bias is None else bias.astype(np.float64), kwargs)
        for engine in ("basic", "numba"):
            got = run("conv2d", engine, x, w, bias, **kwargs)
            np.testing.assert_allclose(got, want, rtol=0, atol=_tolerance(np.float32, want))


@pytest.mark.parametrize("engine", ENGINES)
def test_winograd_on_strided_views(engine):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 20, 44, 42)).astype(np.float32)[::2, ::2, :, ::-1].transpose(0, 1, 3, 2)
    w = rng.standard_normal((12, 20, 3, 3)).astype(np.float32)[:, ::2, ::-1]
    assert not x.flags.c_contiguous and not w.flags.c_contiguous
    assert polyeng.explain("conv2d", x, w, padding=1).algorithm == "winograd"
    want = torch_conv("conv2d", x, w, None, {"padding": 1})
    np.testing.assert_allclose(run("conv2d", engine, x, w, padding=1), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("x_shape, w_shape, kwargs, out_shape", [
    ((0, 8, 40, 40), (8, 8, 3, 3), {"padding": 1}, (0, 8, 40, 40)),
    ((0, 6, 20, 20), (6, 1, 3, 3), {"groups": 6}, (0, 6, 18, 18)),
    ((0, 6, 9, 9), (12, 1, 5, 5), {"groups": 6, "stride": 2}, (0, 12, 3, 3)),
])
def test_zero_size_per_algorithm(engine, x_shape, w_shape, kwargs, out_shape):
    x, w, b = data(np.random.default_rng(11), x_shape, w_shape, np.float32)
    algorithm = polyeng.explain("conv2d", x, w, b, **kwargs).algorithm
    assert algorithm == ("winograd" if w_shape[1] > 1 else "depthwise")
    got = run("conv2d", engine, x, w, b, **kwargs)
    assert got.shape == out_shape and got.dtype == np.float32


@pytest.mark.parametrize("x_shape, w_shape, kwargs", _algorithm_cases("depthwise"))
def test_numba_depthwise_kernel_by_shape(x_shape, w_shape, kwargs):
    """NUMBA sums 3x3 unit-stride depthwise rows of 16 or more outputs by rows, the rest channels
    last: the cases cover both, each against BASIC."""
    from polyeng.backends.numba import conv as numba_conv
    x, w, b = data(np.random.default_rng(12), x_shape, w_shape, np.float32)
    g = geometry(x, w, kwargs)
    by_rows = numba_conv.depthwise_by_rows(g)
    assert by_rows == (w_shape[2:] == (3, 3) and kwargs.get("stride", 1) == 1 and g.out[1] >= 16)
    np.testing.assert_allclose(run("conv2d", "numba", x, w, b, **kwargs), run("conv2d", "basic", x, w, b, **kwargs),
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, kwargs", _algorithm_cases("depthwise") + _algorithm_cases("winograd"))
def test_numba_parallel_kernels_match_basic(monkeypatch, x_shape, w_shape, kwargs):
    """The depthwise kernels and Winograd's transforms (of BASIC's passes, which NUMBA takes for
    images of few tiles or where numpy's BLAS is not OpenBLAS) split over tasks as for a large call."""
    from polyeng.backends.numba import _conv_winograd as numba_winograd
    from polyeng.backends.numba import _winograd_chunks
    monkeypatch.setattr(numba_winograd, "PARALLEL_FROM", 0)
    monkeypatch.setattr(numba_winograd, "threads_for", lambda nbytes: 3)
    monkeypatch.setattr(_winograd_chunks, "available", lambda g, dtype: False)
    x, w, b = data(np.random.default_rng(14), x_shape, w_shape, np.float32)
    want = run("conv2d", "basic", x, w, b, **kwargs)
    np.testing.assert_allclose(run("conv2d", "numba", x, w, b, **kwargs), want,
                               rtol=0, atol=1e-5 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("x_shape, w_shape, kwargs", _algorithm_cases("winograd"))
@pytest.mark.parametrize("tasks", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_numba_winograd_chunks_match_basic(monkeypatch, x_shape, w_shape, kwargs, tasks, dtype):
    """NUMBA's Winograd chunks (one tile row each, so that every task claims some) on the calling
    thread and claimed by three tasks on two of numba's threads at once, in f32 (sgemm) and f64
    (dgemm)."""
    from polyeng.backends import _conv_winograd
    from polyeng.backends.numba import _winograd_chunks
    if _winograd_chunks.gemm_address(dtype) is None:
        pytest.fail("numpy's OpenBLAS gemm was not found: NUMBA's Winograd chunks would never run")
    monkeypatch.setattr(_winograd_chunks, "threads_for", lambda nbytes: tasks)

    def launch(kernel, nbytes, *args):   # two threads whatever the output's size and the trials
        with numba_threads(2):
            return kernel(*args)
    monkeypatch.setattr(_winograd_chunks, "launch", launch)
    monkeypatch.setattr(_conv_winograd, "CHUNK_BYTES", 1)
    monkeypatch.setattr(_conv_winograd, "MIN_CHUNK_WIDTH", 1)
    calls = []
    chunked = _winograd_chunks.conv
    monkeypatch.setattr(_winograd_chunks, "conv", lambda *a: calls.append(1) or chunked(*a))
    x, w, b = data(np.random.default_rng(14), x_shape, w_shape, dtype)
    want = run("conv2d", "basic", x, w, b, **kwargs)
    got = run("conv2d", "numba", x, w, b, **kwargs)
    assert calls and got.dtype == dtype
    # the chunks call the transforms with the types the host does: no compile of their own
    from polyeng.backends.numba import _conv_winograd as transforms
    assert not any("Literal" in str(sig) for k in (transforms._input, transforms._output) for sig in k.signatures)
    np.testing.assert_allclose(got, want, rtol=0, atol=(1e-5 if dtype == np.float32 else 1e-12) * max(
        1.0, float(np.abs(want).max())))


def test_winograd_chunks_only_for_images_of_enough_tiles():
    from polyeng.backends import _conv_winograd
    deep = geometry(np.zeros((1, 512, 7, 7), np.float32), np.zeros((512, 512, 3, 3), np.float32), {"padding": 1})
    early = geometry(np.zeros((8, 64, 56, 56), np.float32), np.zeros((64, 64, 3, 3), np.float32), {"padding": 1})
    assert deep.algorithm == early.algorithm == "winograd"
    assert _conv_winograd.chunk_rows(deep, 4) == 0   # 4 x 5 tiles an image
    rows = _conv_winograd.chunk_rows(early, 4)   # 28 tile rows of 29 tiles (with NUMBA's spare one)
    assert 1 <= rows < 28 and 16 * 128 * 29 * 4 * rows <= _conv_winograd.CHUNK_BYTES


def test_the_cases_take_every_depthwise_kernel():
    from polyeng.backends.numba import conv as numba_conv
    kinds = {numba_conv.depthwise_by_rows(geometry(np.zeros(c[0], np.float32), np.zeros(c[1], np.float32), c[2]))
             for c in CASES_2D if c[3] == "depthwise"}
    assert kinds == {True, False}


def test_winograd_stays_within_f32_tolerance_at_many_channels():
    """F(2x2, 3x3) against f64 at 256 channels: within the f32 tolerance of the engine tests."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, 256, 30, 30)).astype(np.float32)
    w = (rng.standard_normal((32, 256, 3, 3)) * (2 / (9 * 256)) ** 0.5).astype(np.float32)
    assert polyeng.explain("conv2d", x, w, padding=1).algorithm == "winograd"
    want = torch_conv("conv2d", x.astype(np.float64), w.astype(np.float64), None, {"padding": 1})
    for engine in ("basic", "numba"):
        got = run("conv2d", engine, x, w, padding=1)
        np.testing.assert_allclose(got, want, rtol=0, atol=_tolerance(np.float32, want))


def test_winograd_layers_that_numba_runs_in_chunks_recommend_numba():
    """The recommendation: f32 Winograd layers of 2^17 output elements or more with images of enough
    tiles go to NUMBA's chunks; deep layers of few tiles and smaller outputs keep ONEDNN where it
    runs the call (below 2^18 output elements), and a bf16 mode the CPU computes natively too."""
    from polyeng.backends.onednn._fpmath import native_types
    records = {e.name: e for e in polyeng.engines()}
    if not records["onednn"].available:
        pytest.fail("the onednn engine is not available: its recommendation cannot be checked")

    def chosen(x_shape, w_shape):
        return polyeng.explain("conv2d", np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32),
                               padding=1).engine
    assert chosen((1, 64, 56, 56), (64, 64, 3, 3)) == "numba"     # 200,704 outputs, 28 x 29 tiles an image
    assert chosen((8, 16, 32, 32), (16, 16, 3, 3)) == "numba"     # 131,072 outputs
    assert chosen((1, 512, 7, 7), (512, 512, 3, 3)) == "onednn"   # 4 x 5 tiles an image
    assert chosen((1, 32, 32, 32), (32, 32, 3, 3)) == "onednn"    # 32,768 outputs
    if "bf16" in native_types():
        with polyeng.fp_math_mode("bf16"):
            assert chosen((1, 64, 56, 56), (64, 64, 3, 3)) == "onednn"


def test_winograd_layers_keep_onednn_where_numba_is_unavailable(monkeypatch):
    from polyeng.engine.plugins import registry
    if not {e.name: e for e in polyeng.engines()}["onednn"].available:
        pytest.fail("the onednn engine is not available: its recommendation cannot be checked")
    record = registry().engines["numba"]
    monkeypatch.setattr(record, "status", lambda: (False, "numba is unavailable (test)"))
    # a shape no other test decides (decisions are cached per call signature)
    x, w = np.zeros((1, 64, 61, 59), np.float32), np.zeros((64, 64, 3, 3), np.float32)
    assert polyeng.explain("conv2d", x, w, padding=1).engine == "onednn"
