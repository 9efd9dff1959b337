"""matmul and linear on NUMBA: numpy's BLAS products, except that a large 16-bit weight is read as
stored (``_gemm.product_t``) instead of being widened whole to an f32 copy on every call.

Products of f32, f64 and integers, and 16-bit ones with small weights, are numpy's BLAS
products with the 16-bit storage widened and rounded back by the JIT cast
(``_f32_path.via_f32``): bit for bit BASIC's. A JIT loop loses to OpenBLAS on f32 at every size
that matters (a JIT triple loop only wins below about 16x16x16, by about 1 us, less than the
dispatch overhead; numpy's batched small products were 2 to 35 times faster than a parallel JIT
loop), numpy already implements matmul's 1-D promotion, batch broadcasting and integer
products, and linear's bias added by numpy in place was faster than a parallel JIT epilogue.

A 16-bit weight of ``_gemm.NATIVE_MIN`` elements or more (``linear``'s weight, or ``matmul``'s
2-D right operand, read as its transpose) goes through ``_gemm``: bf16 times bf16 with
``vdpbf16ps`` where the CPU has it, else f32 products of the weight widened in registers or in
cache-sized tiles. Every route accumulates in f32 and rounds the result once; the sums run in
another order than BLAS's, so results can differ from BASIC's in the last bit of the 16-bit type.
"""
from __future__ import annotations

from ...engine import dtypes as dt
from .. import _blas
from . import _gemm
from ._f32_path import via_f32

_matmul_f32 = via_f32(_blas.matmul)
_linear_f32 = via_f32(_blas.linear)


def _stored(p, x, w) -> bool:
    return p.dtype in dt.SIXTEEN_BIT_FLOATS and x.ndim >= 1 and _gemm.native(x, w)


def linear(p, x, weight, bias):
    if not _stored(p, x, weight):
        return _linear_f32(p, x=x, weight=weight, bias=bias)
    rows = x.reshape(-1, x.shape[-1])
    return _gemm.product_t(rows, weight, bias, p.dtype).reshape(p.shape)


def matmul(p, a, b):
    if b.ndim != 2 or a.ndim == 0 or not _stored(p, a, b.T):
        return _matmul_f32(p, a=a, b=b)
    rows = a.reshape(-1, a.shape[-1])
    return _gemm.product_t(rows, b.T, None, p.dtype).reshape(p.shape)


linear.__name__, matmul.__name__ = "linear", "matmul"
