"""split (torch.split): BASIC against numpy and PyTorch for every form of the sizes, then every
engine under test (see conftest) against BASIC bit for bit: every dtype, every axis, views, zero-size
pieces and inputs, inputs long enough for parallel tasks, device tensors; each piece a new
C-contiguous array. Graphs, dask (chunked along the split axis too) and each bad argument."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import assert_identical, random_values

pytestmark = pytest.mark.uses_ops("split")
DTYPES = [np.float16, dt.bfloat16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]


def run(engine, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.split(*args, **kwargs)


def numpy_split(x, sizes, axis):
    """The pieces as numpy's own split cuts them (``sizes``: an int or a list, torch's meaning)."""
    n = x.shape[axis]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - start) for start in range(0, n, sizes)] if n else [0]
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def assert_pieces(got, want, x=None):
    assert type(got) is tuple and len(got) == len(want)
    for g, w in zip(got, want):
        assert_identical(g, np.ascontiguousarray(w))
        assert g.flags.c_contiguous and (x is None or not np.shares_memory(g, x))


def check(engine, x, sizes, axis=0):
    want = run("basic", x, sizes, axis)
    assert_pieces(run(engine, x, sizes, axis), want, x)
    return want


# -- BASIC against numpy and PyTorch ------------------------------------------------------------

CASES = [((10,), 3, 0), ((10,), 10, 0), ((10,), 15, 0), ((10,), [3, 7], 0), ((10,), [0, 10, 0], 0),
         ((4, 6), 4, 1), ((4, 6), 1, -1), ((4, 6), [1, 1, 2], 0), ((2, 7, 3), 2, -2), ((2, 7, 3), (5, 2), 1),
         ((0, 3), 2, 0), ((0, 3), 0, 0), ((0, 3), [0], 0), ((3, 0), [2, 1], 0), ((2, 5), [5], 1)]


@pytest.mark.parametrize("shape,sizes,axis", CASES, ids=[f"{s}-{z}-{a}" for s, z, a in CASES])
def test_as_numpy(on_basic, shape, sizes, axis):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = polyeng.split(x, sizes, axis)
    assert_pieces(got, numpy_split(x, list(sizes) if isinstance(sizes, tuple) else sizes, axis % x.ndim), x)


@pytest.mark.parametrize("shape,sizes,axis", CASES, ids=[f"{s}-{z}-{a}" for s, z, a in CASES])
def test_as_torch(on_basic, shape, sizes, axis):
    torch = pytest.importorskip("torch")
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = torch.split(torch.from_numpy(x), list(sizes) if isinstance(sizes, tuple) else sizes, dim=axis)
    got = polyeng.split(x, sizes, axis)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_identical(g, np.ascontiguousarray(w.numpy()))


def test_known_pieces(on_basic):
    x = np.arange(10, dtype=np.int32)
    assert [p.tolist() for p in polyeng.split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.tolist() for p in polyeng.split(x, [2, 0, 8])] == [[0, 1], [], list(range(2, 10))]
    assert [p.shape for p in polyeng.split(np.zeros((3, 5)), 2, axis=1)] == [(3, 2), (3, 2), (3, 1)]
    sizes = np.array([1, 2], np.int64)   # numpy integers, as a list or an array
    assert [p.shape for p in polyeng.split(np.zeros(3), sizes)] == [(1,), (2,)]
    assert [p.shape for p in polyeng.split(np.zeros(3), np.int64(2))] == [(2,), (1,)]


# -- every engine against BASIC -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_and_axis(engine, dtype):
    x = random_values(np.random.default_rng(1), (6, 10, 7), dtype)
    for axis in (0, 1, 2, -1):
        n = x.shape[axis]
        for sizes in (1, 3, n, n + 5, [n], [0, n], [1, n - 1, 0], (2, n - 2)):
            check(engine, x, sizes, axis)


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int64], ids=lambda d: np.dtype(d).name)
def test_views(engine, dtype):
    base = random_values(np.random.default_rng(2), (8, 12, 6), dtype)
    for name, x in {"transposed": base.transpose(2, 0, 1), "negative": base[::-1, :, ::-1],
                    "strided": base[:, ::3, 1::2], "broadcast": np.broadcast_to(base[:1], base.shape),
                    "read-only": np.frombuffer(base.tobytes(), base.dtype).reshape(base.shape)}.items():
        for axis in (0, 1, 2):
            check(engine, x, 3, axis)
        assert_identical(base, random_values(np.random.default_rng(2), (8, 12, 6), dtype))   # input untouched


def test_zero_size_pieces_and_inputs(engine):
    for shape, sizes, axis in [((0, 5), [2, 0, 3], 1), ((0, 5), 2, 0), ((0,), 0, 0), ((4, 0, 3), [1, 3], 0),
                               ((4, 0, 3), 5, 1), ((2, 3), [0, 3], 1)]:
        x = np.zeros(shape, np.float32)
        pieces = check(engine, x, sizes, axis)
        assert [p.shape for p in pieces] == [p.shape for p in numpy_split(x, sizes, axis)]


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64], ids=lambda d: np.dtype(d).name)
def test_large_inputs_run_in_parallel_tasks(engine, dtype):
    x = random_values(np.random.default_rng(3), (300, 1 << 11), dtype)   # past NUMBA's one-thread size
    check(engine, x, [1000, 1048], 1)    # rows of pieces of unequal widths
    check(engine, x, 7, 0)               # contiguous pieces, the last shorter
    check(engine, x.reshape(-1), [(1 << 17) + 3, 300 * 2048 - (1 << 17) - 3])   # long pieces, several tasks each
    check(engine, x.T, 100, 0)           # a transposed input


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_device_tensors_give_pieces_on_the_device(engine, dtype):
    x = random_values(np.random.default_rng(4), (5, 9, 4), dtype)
    pieces = polyeng.split(polyeng.to_device(x, engine), [2, 0, 7], axis=1)
    assert type(pieces) is tuple and all(not isinstance(p, np.ndarray) for p in pieces)
    for got, want in zip(pieces, run("basic", x, [2, 0, 7], 1)):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert_identical(polyeng.to_numpy(got), want)
    first = polyeng.add(pieces[0], pieces[0]) if dtype != np.bool_ else pieces[0]   # chains stay on the device
    assert not isinstance(first, np.ndarray)


def test_an_exact_follow_op():
    from polyeng.amp import Category
    from polyeng.dask.ops import RULES
    spec = polyeng.ops.OPS["split"]
    assert spec.exact and spec.category is Category.FOLLOW and spec.chunking == "split" and "split" in RULES
    x = random_values(np.random.default_rng(5), (4, 6), np.float32)
    with polyeng.fp_math_mode("bf16"):
        assert_pieces(polyeng.split(x, 4, 1), numpy_split(x, 4, 1))


# -- graphs and dask ------------------------------------------------------------------------------


def test_a_graph_returns_the_pieces():
    x = np.arange(24, dtype=np.float32).reshape(2, 12)

    def model(v):
        a, b, c = polyeng.split(v, [3, 4, 5], axis=1)
        return polyeng.add(a, 1.0), c
    graph = polyeng.graph.trace(model, x)
    assert [n.op for n in graph.nodes] == ["split", "add"]
    for got, want in zip(graph(x), model(x)):
        assert_identical(got, want)
    y = np.arange(36, dtype=np.float32).reshape(3, 12)   # another batch size through the same graph
    for got, want in zip(graph(y), model(y)):
        assert_identical(got, want)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_dask_pieces_stay_lazy_and_equal_the_eager_op(axis):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = random_values(np.random.default_rng(6), (9, 10, 7), np.float32)
    for sizes in (3, [2, 0, x.shape[axis] - 3, 1]):
        lazy = polyeng.split(da.from_array(x, chunks=(4, 3, 5)), sizes, axis)   # the split axis chunked too
        want = polyeng.split(x, sizes, axis)
        assert type(lazy) is tuple and all(isinstance(p, da.Array) for p in lazy)
        assert [(p.shape, p.dtype) for p in lazy] == [(p.shape, p.dtype) for p in want]
        for got, w in zip(dask.compute(*lazy, scheduler="sync"), want):
            assert_identical(got, w)


# -- bad arguments --------------------------------------------------------------------------------


def test_bad_arguments_are_named():
    x = np.zeros((4, 6), np.float32)
    cases = [
        (lambda: polyeng.split(np.float32(1), 1), ValueError, r"^x is 0-D; split expects"),
        (lambda: polyeng.split(x, 2, axis=2), ValueError, r"^axis=2 is out of range for an array with 2 dimensions"),
        (lambda: polyeng.split(x, 2, axis=1.0), TypeError, r"^axis=1.0: expected an int"),
        (lambda: polyeng.split(x, [1, 2]), ValueError,
         r"^split_size_or_sections=\[1, 2\] sums to 3, but axis 0 of x has length 4"),
        (lambda: polyeng.split(x, [5, -1]), ValueError, r"^split_size_or_sections\[1\]=-1: expected an int >= 0"),
        (lambda: polyeng.split(x, []), ValueError, r"^split_size_or_sections=\[\]: expected at least one size"),
        (lambda: polyeng.split(x, 0), ValueError, r"^split_size_or_sections=0: a piece size must be >= 1"),
        (lambda: polyeng.split(x, -2), ValueError, r"^split_size_or_sections=-2: expected an int >= 0"),
        (lambda: polyeng.split(x, 2.0), TypeError, r"^split_size_or_sections=2.0: expected an int"),
        (lambda: polyeng.split(x, True), TypeError, r"^split_size_or_sections=True: expected an int"),
        (lambda: polyeng.split(x, "2"), TypeError, r"^split_size_or_sections='2': expected an int"),
        (lambda: polyeng.split(x, [2, 2.0]), TypeError, r"^split_size_or_sections\[1\]=2.0: expected an int"),
        (lambda: polyeng.split(x, None), TypeError, r"^split_size_or_sections=None: expected an int"),
        (lambda: polyeng.split(np.zeros(3, np.complex64), 1), TypeError, r"^x has dtype complex64"),
        (lambda: polyeng.split(None, 1), TypeError, r"^x=None"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
