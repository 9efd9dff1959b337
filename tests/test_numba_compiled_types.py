"""NUMBA compiles a kernel once per array type, and an array's writability is part of its type.
A model's weights are read-only while a user's arrays usually are not: each op hands its kernels
read-only views of its inputs, so a read-only call and a writable one run one compiled kernel."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif("numba" not in {e.name for e in polyeng.engines() if e.available},
                                reason="numba is unavailable")


def _read_only(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


def _cases(rng):
    from polyeng.backends.numba import (_cast, _gemv, activation, batch_norm, conv, fused_softmax, normalization,
                                        pooling, select, softmax)
    x = rng.standard_normal((2, 3, 9, 40)).astype(np.float32)
    return {
        "cast": (_cast._cast, "cast", (x,), {"dtype": dt.bfloat16}),
        # f16: bf16 by bf16 takes vdpbf16ps where the CPU has it
        "linear 16-bit weight (gemv)": (_gemv._gemv, "linear", (rng.standard_normal((2, 256)).astype(np.float16),
                                                               rng.standard_normal((256, 256)).astype(np.float16)),
                                        {}),
        "depthwise conv2d": (conv._depthwise_rows, "conv2d", (rng.standard_normal((1, 3, 40, 40)).astype(np.float32),
                                                              rng.standard_normal((3, 1, 3, 3)).astype(np.float32),
                                                              rng.standard_normal(3).astype(np.float32)),
                             {"padding": 1, "groups": 3}),
        "fused_softmax": (fused_softmax._masked_rows, "fused_softmax", (x, rng.standard_normal((1, 1, 1, 40))
                                                                        .astype(np.float32)), {}),
        "layer_norm": (normalization._layer_norm, "layer_norm", (x, (40,), rng.standard_normal(40).astype(np.float32),
                                                                 rng.standard_normal(40).astype(np.float32)), {}),
        "softmax": (softmax._rows, "softmax", (x,), {"axis": -1}),
        "gelu": (activation._gelu, "gelu", (x,), {}),
        "batch_norm": (batch_norm._batch_norm, "batch_norm", (x, *(rng.random(3).astype(np.float32) + 0.5
                                                                    for _ in range(4))), {}),
        "max_pool2d": (pooling._max_kernel, "max_pool2d", (x, 2), {}),
        "avg_pool2d": (pooling._avg_kernel, "avg_pool2d", (x, 2), {}),
        "select": (select._select, "select", (x > 0, x, rng.standard_normal(40).astype(np.float32)), {}),
    }


@pytest.mark.parametrize("case", ["cast", "linear 16-bit weight (gemv)", "depthwise conv2d", "fused_softmax",
                                  "layer_norm", "softmax", "gelu", "batch_norm", "max_pool2d", "avg_pool2d",
                                  "select"])
def test_read_only_and_writable_inputs_run_one_compiled_kernel(case):
    from polyeng.backends.numba import _gemm
    kernel, op, args, kwargs = _cases(np.random.default_rng(0))[case]
    # the linear case's weight is read as stored, by the register-widening kernel
    assert _gemm.GEMV_ROWS >= 2 and _gemm.NATIVE_MIN <= 256 * 256
    with polyeng.compute_eng("numba", fallback=False):
        writable = getattr(polyeng, op)(*args, **kwargs)
        compiled = set(kernel.signatures)
        assert compiled, f"{case}: {kernel.py_func.__name__} did not run"
        read_only = getattr(polyeng, op)(*[_read_only(a) if isinstance(a, np.ndarray) else a for a in args],
                                         **kwargs)
    assert set(kernel.signatures) == compiled, f"{case}: a read-only call compiled {kernel.py_func.__name__} again"
    np.testing.assert_array_equal(np.asarray(read_only, np.float32), np.asarray(writable, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, dt.bfloat16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", [((5, 300), -1), ((3, 5000), -1), ((6, 7, 9), 1)],
                         ids=["short rows", "long rows", "lanes"])
def test_sum_runs_means_compile_and_keeps_every_value(dtype, shape, axis):
    """A float sum divides by 1 in mean's kernel: one compile per dtype for both ops, and the
    sums keep what dividing by 1 cannot change (inf, NaN)."""
    from polyeng.backends.numba import reduction
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    # the second and third sums: with an inf, with a NaN
    if axis == -1:
        x[1, 3], x[2, 4] = np.inf, np.nan
    else:   # lanes: x[0, :, k] is summed into out[0, k]
        x[0, 3, 1], x[0, 4, 2] = np.inf, np.nan
    with polyeng.compute_eng("numba", fallback=False):
        polyeng.mean(x, axis=axis)
        kernels = (reduction._sum_short_rows, reduction._sum_rows, reduction._sum_lanes)
        before = [set(k.signatures) for k in kernels]
        got = np.asarray(polyeng.sum(x, axis=axis)).astype(np.float64).reshape(-1)
        assert [set(k.signatures) for k in kernels] == before, "sum compiled a kernel mean had not"
    with polyeng.compute_eng("basic"):
        want = np.asarray(polyeng.sum(x, axis=axis)).astype(np.float64).reshape(-1)
    assert got[1] == np.inf and np.isnan(got[2]), got[:3]
    np.testing.assert_allclose(got, want, rtol=1e-2 if x.itemsize == 2 else 1e-5)


def test_sixteen_bit_pow_runs_the_f32_kernel():
    """pow's compile (a vectorized pow and libm's) is the costliest of the elementwise kernels:
    16-bit storage runs the f32 one between two casts, which round as its own store would."""
    from polyeng.backends.numba import arithmetic
    rng = np.random.default_rng(4)
    x, e = rng.random(300).astype(np.float32) * 3, rng.standard_normal(300).astype(np.float32)
    with polyeng.compute_eng("numba", fallback=False):
        polyeng.pow(x, e)
        compiled = set(arithmetic._pow.signatures)
        for dtype in (np.float16, dt.bfloat16):
            got = np.asarray(polyeng.pow(x.astype(dtype), e.astype(dtype)))
            assert got.dtype == dtype and set(arithmetic._pow.signatures) == compiled, dtype
            with polyeng.compute_eng("basic"):
                want = np.asarray(polyeng.pow(x.astype(dtype), e.astype(dtype)))
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 ** -7)
