"""matmul and linear on NUMBA: numpy's BLAS products, with 16-bit storage
widened and rounded back by the JIT cast (``_f32_path.via_f32``).

Nothing here is JIT-compiled because nothing measured better: numpy's OpenBLAS GEMM
beats a JIT loop at every size that matters (a JIT triple loop only wins below about
16x16x16, by about 1 us, less than the dispatch overhead; numpy's batched small products
were 2 to 35 times faster than a parallel JIT loop), numpy already implements matmul's 1-D
promotion, batch broadcasting and integer products, and linear's bias added by numpy in
place was faster than a parallel JIT epilogue (a parallel launch right after a BLAS call
contends with BLAS's still-spinning worker threads). Registering them here lets a NUMBA
graph run these ops without falling back.
"""
from __future__ import annotations

from .. import _blas
from ._f32_path import via_f32

matmul = via_f32(_blas.matmul)
linear = via_f32(_blas.linear)
