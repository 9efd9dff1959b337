"""matmul and linear on OPENCL (matmul.cl): one register-blocked GEMM kernel serves both, and lstm.

- **Types.** Every operand is read in its own storage type (f32, f16, bf16, f64, s8, u8, s32,
  s64, bool) and the result is written in BASIC's result type, so mixed dtypes need no host
  conversion. Floats accumulate in f32 (16-bit storage included) or f64; integer products
  wrap around as numpy's do (bit for bit), and bool products are the OR of ANDs. Float
  results sum k in order with fused multiply-adds, so they differ from BLAS's by rounding.
  Under a bf16/f16/tf32 fp math mode these kernels compute f32 (registered compute types:
  f32, f64 and the integer and bool types), which the mode allows.
- **matmul** follows numpy: 1-D operands are promoted (and their axis dropped from the
  result), batch dimensions broadcast through a per-operand batch stride (0 where an operand
  is broadcast). Batch dimensions that cannot merge into two are looped over on the host.
- **linear** transposes ``weight`` (N, K) on every call into a (K, N) copy in the compute
  type, so that the GEMM reads B's rows as vectors; the bias is added before the result is
  rounded to its storage type, as BASIC adds it to the f32 product.
- **Tiles** and the GEMM launch are ``_gemm.py``'s (shared with lstm).
- **Not supported:** f64 on a device without cl_khr_fp64 (rejected at the special-argument
  step for f64 arguments and for an f64 result promoted from narrower ones, e.g. int32 @ f32);
  non-contiguous inputs are first copied contiguous by ``enqueue.on_device``.
"""
from __future__ import annotations

import itertools
import math

from . import _enqueue as enqueue
from ._gemm import accumulator, gemm, transpose_into
from ._tensor import OpenCLTensor


def _batch_plan(a2, b2, batch, mk, kn, mn):
    """Merged batch dimensions as (size, a stride, b stride, c stride), unit sizes dropped and
    neighbours merged where every operand steps through them evenly."""
    def strides(shape2, per_matrix):
        lead = shape2[:-2]
        padded = (1,) * (len(batch) - len(lead)) + tuple(lead)
        out, step = [], per_matrix
        for size, full in zip(reversed(padded), reversed(batch)):
            out.append(step if size == full and size != 1 else 0)
            step *= size
        return out[::-1]
    sa, sb = strides(a2, mk), strides(b2, kn)
    sc, step = [], mn
    for size in reversed(batch):
        sc.append(step)
        step *= size
    sc = sc[::-1]
    dims = [(s, x, y, z) for s, x, y, z in zip(batch, sa, sb, sc) if s != 1]
    merged = []
    for dim in dims:
        if merged:
            size, x, y, z = merged[-1]
            if x == dim[1] * dim[0] and y == dim[2] * dim[0] and z == dim[3] * dim[0]:
                merged[-1] = (size * dim[0], dim[1], dim[2], dim[3])
                continue
        merged.append(dim)
    return merged


def matmul(p, a, b):
    ta, stay_a = enqueue.on_device(a)
    tb, stay_b = enqueue.on_device(b)
    stay = stay_a or stay_b
    out = enqueue.empty(p.shape, p.dtype, not stay)
    if out.size == 0:
        return enqueue.result(out, stay)
    a2 = (1,) + ta.shape if ta.ndim == 1 else ta.shape
    b2 = tb.shape + (1,) if tb.ndim == 1 else tb.shape
    m, k, n = a2[-2], a2[-1], b2[-1]
    dims = _batch_plan(a2, b2, p.batch, m * k, k * n, m * n)
    inner, outer = dims[-2:], dims[:-2]
    while len(inner) < 2:
        inner.insert(0, (1, 0, 0, 0))
    (b1, sa1, sb1, sc1), (b2_, sa2, sb2, sc2) = inner
    for index in itertools.product(*(range(d[0]) for d in outer)):
        offsets = tuple(sum(i * d[j] for i, d in zip(index, outer)) for j in (1, 2, 3))
        gemm(ta, tb, out, m, n, k, lda=k, ldb=n, ldc=n, acc=accumulator(p.dtype), offsets=offsets,
             batch=(b1, b2_), a_strides=(sa1, sa2), b_strides=(sb1, sb2), c_strides=(sc1, sc2))
    return enqueue.result(out, stay)


def transposed(w: OpenCLTensor, compute) -> OpenCLTensor:
    """A (K, N) copy in ``compute`` of a weight ``w`` stored (N, K)."""
    rows, cols = w.shape
    out = enqueue.empty((cols, rows), compute)
    transpose_into(w, out, rows)
    return out


def linear(p, x, weight, bias):
    tx, stay_x = enqueue.on_device(x)
    tw, stay_w = enqueue.on_device(weight)
    tb, stay_b = enqueue.on_device(bias) if bias is not None else (None, False)
    stay = stay_x or stay_w or stay_b
    n, k = tw.shape
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if out.size:
        compute = enqueue.compute_dtype(tx.dtype)
        m = math.prod(tx.shape[:-1])
        gemm(tx, transposed(tw, compute), out, m, n, k, lda=k, ldb=n, ldc=n, acc=compute,
             bias=tb if tb is not None and tb.size else None)
    return enqueue.result(out, stay)
