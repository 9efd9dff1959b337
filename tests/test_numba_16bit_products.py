"""NUMBA's matmul, linear and lstm reading 16-bit weights as stored, against BASIC (which widens
every input to f32 and runs numpy's BLAS).

Each of NUMBA's routes (``_gemm``: bf16 dot products with ``vdpbf16ps``, the register-widening
kernel for few rows, cache-sized widened tiles for many) is forced on small odd shapes by
lowering its size thresholds. The routes sum in another order than BLAS, so results may differ
from BASIC's in the last bit of the 16-bit type; they must be within 2 ulp of it. A product summed
in 16-bit, or a weight widened as the other 16-bit format, is off by far more.

``vdpbf16ps`` exists only on CPUs with avx512bf16 (``HOST_BF16``, read from the CPU's flags, not
from ``_bf16_dot``). On a CPU without it the "dot" route runs the products where that kernel would
run, which then take the fallback ``_gemm.product_t`` documents (``GEMV_ROWS`` rows or fewer: the
register-widening kernel; more: widened tiles, the shipped row split); every test there also
checks which kernel each product ran (``products``), that ``_bf16_dot.AVAILABLE`` is False and
that the kernel is neither called nor compiled, and compares the fallback's results with BASIC as
every route's are.
"""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif("numba" not in {e.name for e in polyeng.engines() if e.available},
                                reason="numba is unavailable")

DTYPES = [dt.bfloat16, np.dtype(np.float16)]
ROUTES = ["dot", "gemv", "tiles", "default"]


def _host_has_avx512bf16() -> bool:
    """The CPU's avx512bf16 flag as Linux lists it in /proc/cpuinfo (the check is then
    independent of ``_bf16_dot``'s); LLVM's reading of the host's features elsewhere."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return "avx512_bf16" in line.split(":", 1)[1].split()
    except OSError:
        pass
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("avx512bf16"))


HOST_BF16 = _host_has_avx512bf16()


def _shipped_gemv_rows():
    from polyeng.backends.numba import _gemm
    return _gemm.GEMV_ROWS


SHIPPED_GEMV_ROWS = _shipped_gemv_rows()   # read before any test lowers it


class Products:
    """Every ``_gemm.product_t`` call (the dtypes and sizes of ``x`` (M, K) @ ``w.T`` (N, K)) and
    the kernels it ran: "dot" (``_bf16_dot``), "gemv" or "tiles"."""

    def __init__(self, monkeypatch):
        from polyeng.backends.numba import _bf16_dot, _gemm
        self.calls = []
        product_t = _gemm.product_t

        def recorded(x, w, bias, dtype):
            self.calls.append((x.dtype, w.dtype, x.shape[0], x.shape[1], w.shape[0], []))
            return product_t(x, w, bias, dtype)
        monkeypatch.setattr(_gemm, "product_t", recorded)
        for module, name, path in ((_bf16_dot, "_linear_call", "dot"), (_gemm, "gemv", "gemv"),
                                   (_gemm, "_tiles", "tiles")):
            monkeypatch.setattr(module, name, self._spy(getattr(module, name), path))

    def _spy(self, kernel, path):
        def spy(*args):
            assert self.calls, f"{path} ran outside product_t"
            self.calls[-1][-1].append(path)
            if path == "dot" and not HOST_BF16:   # it would die of an illegal instruction
                raise AssertionError("the avx512bf16 kernel was called on a CPU without avx512bf16")
            return kernel(*args)
        return spy

    def paths(self):
        return [path for call in self.calls for path in call[-1]]


@pytest.fixture
def products(monkeypatch):
    """Records the products of the test and the kernels they ran (``Products``)."""
    return Products(monkeypatch)


def expected_paths(route, x_dtype, w_dtype, m, k, n):
    """The kernels a product of ``route`` runs: none when there is nothing to sum or write; the bf16
    dot product for bf16 by bf16 where the CPU has it ("dot" and "default"); else the register-widening
    kernel for at most the route's row count (every row count for "gemv", none for "tiles" and, on a
    CPU with avx512bf16, "dot"; the shipped one otherwise) and widened tiles for more rows."""
    if m * n == 0:
        return []
    if route in ("dot", "default") and HOST_BF16 and x_dtype == dt.bfloat16 == w_dtype and k:
        return ["dot"]
    if k == 0:
        return []
    gemv_rows = {"gemv": m, "tiles": 0, "dot": 0 if HOST_BF16 else SHIPPED_GEMV_ROWS}.get(route, SHIPPED_GEMV_ROWS)
    return ["gemv"] if m <= gemv_rows else ["tiles"]


@pytest.fixture(params=ROUTES)
def route(request, monkeypatch, products):
    """Forces one of ``_gemm``'s routes for every 16-bit weight ("default": the shipped thresholds),
    and, on a CPU without avx512bf16, after the test checks that each product ran the route's kernel
    (``expected_paths``).

    "dot" on a CPU with avx512bf16: every bf16 by bf16 product runs ``_bf16_dot``'s kernel, any other
    one widened tiles. On a CPU without it, ``_bf16_dot.AVAILABLE`` must be False (the kernel would
    die of an illegal instruction); the same products take ``product_t``'s fallback with the shipped
    row split (at most ``GEMV_ROWS`` rows widened in registers, more in tiles), must equal BASIC's
    results as closely, and the kernel must be neither called nor compiled (nor loaded from numba's
    cache) in this process."""
    from polyeng.backends.numba import _bf16_dot, _gemm
    name = request.param
    if name == "dot":
        assert _bf16_dot.AVAILABLE == HOST_BF16, "_bf16_dot.AVAILABLE disagrees with the CPU's avx512bf16 flag"
    if name != "default":
        monkeypatch.setattr(_gemm, "NATIVE_MIN", 1)
        monkeypatch.setattr(_bf16_dot, "AVAILABLE", name == "dot" and HOST_BF16)
        if name != "dot" or HOST_BF16:   # without avx512bf16, "dot" keeps the shipped row split
            monkeypatch.setattr(_gemm, "GEMV_ROWS", 10 ** 6 if name == "gemv" else 0)
        monkeypatch.setattr(_gemm, "TILE_ELEMENTS", 64)   # several tiles, the last one partial
    yield name
    if HOST_BF16:   # the kernels' own results are checked; their paths only where no bf16 kernel may run
        return
    for x_dtype, w_dtype, m, k, n, ran in products.calls:
        assert ran == expected_paths(name, x_dtype, w_dtype, m, k, n), \
            f"{name}: {x_dtype} ({m}, {k}) @ {w_dtype} ({n}, {k}).T ran {ran}"
    assert not _bf16_dot._linear.signatures, "the avx512bf16 kernel was compiled on a CPU without it"


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else 2.0 ** -10


def assert_close16(expected, actual, ulps=2):
    """Within ``ulps`` of the 16-bit type of each expected value (plus a sliver of the largest
    one's, for sums that cancel to near zero)."""
    actual = polyeng.to_numpy(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    scale = float(np.abs(e).max()) if e.size else 0.0
    tol = ulps * eps(expected.dtype) * (np.abs(e) + 1e-2 * scale)
    bad = np.abs(a - e) > tol
    assert not bad.any(), f"{int(bad.sum())} of {e.size} off; worst {float(np.abs(a - e).max())}"


def values(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def both(op, *args, **kwargs):
    return run("basic", op, *args, **kwargs), run("numba", op, *args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape", [(37,), (1, 37), (3, 37), (2, 5, 37), (9, 37), (0, 37), (4, 64), (2, 95)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear(route, products, dtype, x_shape, with_bias):
    rng = np.random.default_rng(1)
    x = values(rng, x_shape, dtype)
    weight = values(rng, (45, x_shape[-1]), dtype)
    bias = values(rng, (45,), dtype) if with_bias else None
    assert_close16(*both("linear", x, weight, bias))
    assert len(products.calls) == (route != "default")   # a forced route reads the small weight as stored


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_non_contiguous_and_f32_bias(route, dtype):
    rng = np.random.default_rng(2)
    x = values(rng, (6, 80), dtype)[:, ::2]           # strided rows and columns
    weight = values(rng, (90, 40), dtype)[::2]         # every other row
    bias = rng.standard_normal(45).astype(np.float32)  # an f32 bias beside 16-bit storage
    assert_close16(*both("linear", x, weight, bias))
    assert_close16(*both("linear", values(rng, (5, 33), dtype), values(rng, (33, 21), dtype).T))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((33,), (33, 19)), ((5, 33), (33, 19)), ((2, 3, 33), (33, 19)),
                                             ((7, 70), (70, 1)), ((0, 33), (33, 19)), ((5, 33), (33,)),
                                             ((2, 1, 5, 33), (3, 33, 19)), ((4, 6, 33), (4, 33, 19))])
def test_matmul(route, products, dtype, a_shape, b_shape):
    rng = np.random.default_rng(3)
    assert_close16(*both("matmul", values(rng, a_shape, dtype), values(rng, b_shape, dtype)))
    # a forced route reads a 2-D right operand as stored; batched or 1-D ones are widened whole
    assert len(products.calls) == (route != "default" and len(b_shape) == 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_views_and_mixed_operands(route, dtype):
    rng = np.random.default_rng(4)
    a = values(rng, (9, 66), dtype)[::2, ::2]
    b = values(rng, (19, 33), dtype).T                 # a transposed weight
    assert_close16(*both("matmul", a, b))
    # f16 with bf16 computes in f32: the result is f32, within f32 rounding of BASIC's
    other = dt.float16 if dtype == dt.bfloat16 else dt.bfloat16
    expected, actual = both("matmul", a, values(rng, (33, 19), other))
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,layers,bidirectional,batch_first",
                         [(1, 1, False, False), (1, 2, True, False), (3, 1, False, True), (6, 2, True, True),
                          (None, 1, True, False)])
def test_lstm(route, dtype, batch, layers, bidirectional, batch_first):
    rng = np.random.default_rng(5)
    dirs, hidden, size, seq = 2 if bidirectional else 1, 23, 29, 7
    params = []
    for k in range(layers * dirs):
        layer_in = size if k < dirs else dirs * hidden
        params.append((values(rng, (4 * hidden, layer_in), dtype, 0.3), values(rng, (4 * hidden, hidden), dtype, 0.3),
                       values(rng, (4 * hidden,), dtype, 0.3), None if k % 2 else values(rng, (4 * hidden,), dtype)))
    x_shape = (seq, size) if batch is None else (batch, seq, size) if batch_first else (seq, batch, size)
    state = (layers * dirs, hidden) if batch is None else (layers * dirs, batch, hidden)
    x, h0, c0 = values(rng, x_shape, dtype), values(rng, state, dtype, 0.5), values(rng, state, dtype, 0.5)
    kwargs = dict(batch_first=batch_first, bidirectional=bidirectional)
    expected, actual = both("lstm", x, params, h0, c0, **kwargs)
    for e, a in zip((expected[0],) + tuple(expected[1]), (actual[0],) + tuple(actual[1])):
        assert_close16(e, a, ulps=3)   # the f32 recurrence carries the product's reordered sums


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstm_empty_sequence(route, dtype):
    rng = np.random.default_rng(6)
    params = [(values(rng, (8, 3), dtype), values(rng, (8, 2), dtype), None, None)]
    expected, actual = both("lstm", np.zeros((0, 1, 3), dtype), params)
    assert actual[0].shape == (0, 1, 2) and actual[0].dtype == dtype
    assert_close16(expected[1][0], actual[1][0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_weights_at_the_shipped_thresholds(products, dtype):
    """Sizes that take each route without lowering any threshold: on a CPU with avx512bf16 bf16 runs
    the bf16 dot product; elsewhere, and for f16, 1 and 3 rows run the register-widening
    kernel and 40 rows (and lstm's 9 time steps) widened tiles. Without avx512bf16, bf16 must give
    BASIC's results as closely as on that route, and the kernel is neither called nor compiled."""
    from polyeng.backends.numba import _bf16_dot
    rng = np.random.default_rng(7)
    weight, bias = values(rng, (300, 257), dtype, 0.1), values(rng, (300,), dtype)
    for rows in (1, 3, 40):
        assert_close16(*both("linear", values(rng, (rows, 257), dtype), weight, bias))
    params = [(values(rng, (1024, 64), dtype, 0.1), values(rng, (1024, 256), dtype, 0.1), None, None)]
    expected, actual = both("lstm", values(rng, (9, 1, 64), dtype), params)
    assert_close16(expected[0], actual[0], ulps=3)
    assert _bf16_dot.AVAILABLE == HOST_BF16
    if not (HOST_BF16 and dtype == dt.bfloat16):
        assert products.paths() == ["gemv", "gemv", "tiles", "tiles"]
    if not HOST_BF16:
        assert not _bf16_dot._linear.signatures
