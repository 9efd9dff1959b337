"""The recurrent loops' small f32 product (``backends/numba/_small_gemm.py``): cblas_sgemm's
arithmetic for row-major operands of any strides, each element one fused multiply-add chain in
order, so a row's bits do not depend on the call's rows; used where the CPU has no AVX-512."""
import ctypes

import numpy as np
import pytest

from polyeng.backends.numba import _recurrence_loop, _small_gemm
from polyeng.backends.onednn._fpmath import cpu_flags


def _function(packed=False):
    address = _small_gemm.address(packed)
    assert address, _small_gemm._made.get("error")
    return ctypes.CFUNCTYPE(_small_gemm.SIGNATURE[0], *_small_gemm.SIGNATURE[1])(address)


def _call(fn, a, b, c, alpha=1.0, beta=0.0):
    fn(101, 111, 111, a.shape[0], b.shape[1], a.shape[1], alpha, a.ctypes.data, a.strides[0] // 4,
       b.ctypes.data, b.strides[0] // 4, beta, c.ctypes.data, c.strides[0] // 4)


def _fma_chain(a, b):
    """Each element as the kernel makes it: a fused multiply-add chain over k in order (f64 products
    and sums rounded to f32 once per step are a fused multiply-add of f32 operands)."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        out = (a[:, k:k + 1].astype(np.float64) * b[k].astype(np.float64) + out).astype(np.float32)
    return out


@pytest.mark.parametrize("m,k,n", [(8, 128, 128), (4, 64, 128), (5, 33, 37), (3, 7, 16), (1, 1, 1), (9, 3, 17),
                                   (0, 3, 4), (4, 0, 16), (2, 5, 0)])
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
def test_products_equal_an_fma_chain_for_every_shape_and_beta(m, k, n, beta):
    fn = _function()
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    old = rng.standard_normal((m, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32) if beta == 0 else old.copy()   # beta 0: c is not read
    _call(fn, a, b, c, beta=beta)
    chain = _fma_chain(a, b)
    want = chain if beta == 0 else (np.float64(beta) * old.astype(np.float64) + chain).astype(np.float32)
    np.testing.assert_array_equal(c.view(np.uint32), want.view(np.uint32))


def test_leading_dimensions_and_a_row_s_bits_in_calls_of_any_rows():
    fn = _function()
    rng = np.random.default_rng(1)
    a_wide = rng.standard_normal((9, 70)).astype(np.float32)
    b_wide = rng.standard_normal((64, 200)).astype(np.float32)
    a, b = a_wide[:, 3:67], b_wide[:, 8:136]   # rows lda/ldb apart, inside larger arrays
    c_wide = np.zeros((9, 150), np.float32)
    _call(fn, a, b, c_wide[:, :128])
    np.testing.assert_allclose(c_wide[:, :128], a.astype(np.float64) @ b, rtol=0, atol=1e-4)
    assert not c_wide[:, 128:].any()   # nothing written past n columns
    for first in range(9):
        for rows in (1, 2, 4, 5):
            part = np.zeros((min(rows, 9 - first), 128), np.float32)
            _call(fn, np.ascontiguousarray(a[first:first + rows]), b, part)
            np.testing.assert_array_equal(part.view(np.uint32), c_wide[first:first + rows, :128].view(np.uint32))


@pytest.mark.parametrize("m,k,n", [(8, 128, 512), (4, 64, 128), (5, 33, 48), (1, 1, 16), (3, 0, 32), (0, 4, 16)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.0, 1.0), (-2.0, 0.5)])
def test_the_packed_function_gives_the_bits_of_b_read_as_it_lies(m, k, n, alpha, beta):
    """``b`` laid out by ``pack`` (blocks of 16 columns one after another) and read so: the same
    fused multiply-add chains, so the same bits; ``ldb`` is not read; ``alpha`` scales the sums."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    old = rng.standard_normal((m, n)).astype(np.float32)
    as_it_lies, packed = old.copy(), old.copy()
    _call(_function(), a, b, as_it_lies, alpha, beta)
    laid = _small_gemm.pack(b)
    assert laid.shape == (k * n,) and laid.flags.c_contiguous
    fn = _function(packed=True)
    fn(101, 111, 111, m, n, k, alpha, a.ctypes.data, k, laid.ctypes.data, -1, beta, packed.ctypes.data, n)
    np.testing.assert_array_equal(packed.view(np.uint32), as_it_lies.view(np.uint32))
    want = _fma_chain(a, b).astype(np.float64) * alpha + (0 if beta == 0 else beta * old.astype(np.float64))
    np.testing.assert_allclose(packed, want, rtol=1e-6, atol=1e-5)


def test_pack_lays_out_blocks_of_16_columns_and_refuses_other_widths():
    b = np.arange(3 * 32, dtype=np.float32).reshape(3, 32)
    laid = _small_gemm.pack(b)
    np.testing.assert_array_equal(laid[:48].reshape(3, 16), b[:, :16])
    np.testing.assert_array_equal(laid[48:].reshape(3, 16), b[:, 16:])
    with pytest.raises(ValueError, match="pack: 20 columns are not whole blocks of 16"):
        _small_gemm.pack(np.zeros((3, 20), np.float32))


@pytest.mark.skipif(not _recurrence_loop.available(np.float32), reason="numpy's BLAS is not OpenBLAS: no loop")
def test_the_loop_uses_it_where_the_cpu_has_no_avx512_and_parts_are_whole_blocks():
    """On a CPU with AVX2 and FMA and no AVX-512, for f32 layers whose parts' columns are whole
    blocks of 16 (past them it is slower than OpenBLAS); numpy's OpenBLAS elsewhere, and for f64."""
    flags = cpu_flags()
    small = (_small_gemm.address(packed=True), True, True)
    openblas = _recurrence_loop.arguments(np.dtype(np.float32))[:2] + (False,)
    whole = _recurrence_loop.bounds_for(128, 4)   # 4 parts of 32 units: 128 columns each
    from llvmlite import binding
    wanted = "avx512f" not in flags and {"avx2", "fma"} <= flags and hasattr(binding, "create_pass_builder")
    assert _small_gemm.wanted() is wanted
    assert _recurrence_loop.gemm_for(np.dtype(np.float32), whole, 4) == (small if wanted else openblas)
    assert _recurrence_loop.gemm_for(np.dtype(np.float32), _recurrence_loop.bounds_for(100, 3), 4) == openblas
    assert _recurrence_loop.gemm_for(np.dtype(np.float32), whole, 3) == (small if wanted else openblas)   # gru: 96
    assert _recurrence_loop.gemm_for(np.dtype(np.float64), whole, 4) == \
        _recurrence_loop.arguments(np.dtype(np.float64))[:2] + (False,)
