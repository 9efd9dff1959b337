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
- **Tiles.** A work item computes ``rm`` rows by ``rv`` vectors of ``vw`` columns, from
  global memory (no local-memory tiles: each barrier would split PoCL's work-item loop,
  and a work item's B panel stays in cache anyway). On a CPU device (PoCL) a vector is 64
  bytes (float16: one AVX-512 register), 8 rows by 2 vectors, and adjacent work items take
  adjacent row blocks of one column panel. On 4096x768 @ 768x768 (best of 5 rounds, this
  2-core machine) 7 or 8 rows with 2 vectors and groups of 16 to 128 were equal within
  noise (18-19 ms); 6 rows 20 ms, 4 rows 22 ms, one vector 26 ms, column-major walking
  21 ms, 32-byte vectors about 3 times slower. On a GPU the tiles are 4 rows by one
  4-wide vector with adjacent work items on adjacent columns (coalesced B loads, A
  broadcast); no GPU was at hand to tune them, and tests run them on PoCL for correctness.
  Narrow or short products use narrower vectors and fewer rows, so no work goes to padding.
- **Not supported:** f64 on a device without cl_khr_fp64 (rejected at the special-argument
  step for f64 arguments and for an f64 result promoted from narrower ones, e.g. int32 @ f32);
  non-contiguous inputs are first copied contiguous by ``enqueue.on_device``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ...engine import dtypes as dt
from ...ops.matmul import matmul_shape
from . import _enqueue as enqueue, _runtime as runtime
from ._tensor import OpenCLTensor

FILE = "matmul.cl"
# storage codes of matmul.cl
CODES = {dt.float32: 1, dt.float16: 2, dt.bfloat16: 3, dt.float64: 4, dt.int8: 5, dt.uint8: 6,
         dt.int32: 7, dt.int64: 8, dt.bool_: 9}
# accumulator codes of matmul.cl, by accumulator dtype
ACC_CODES = {dt.float32: 1, dt.float64: 4, np.dtype(np.uint32): 7, np.dtype(np.uint64): 8, dt.bool_: 9}


@dataclass(frozen=True)
class Tiles:
    vector_bytes: int     # bytes of one vector of accumulators
    rv: int               # vectors per work item
    rm: int               # rows per work item
    cols_fast: bool       # adjacent work items take adjacent column blocks (else row blocks)
    local: tuple          # group shape (fast dimension, slow dimension)


CPU_TILES = Tiles(vector_bytes=64, rv=2, rm=8, cols_fast=False, local=(64, 1))
GPU_TILES = Tiles(vector_bytes=16, rv=1, rm=4, cols_fast=True, local=(16, 8))
_override: list = []   # tests run the other device kind's tiles on the device at hand


def tiles() -> Tiles:
    if _override:
        return _override[-1]
    import pyopencl as cl
    return GPU_TILES if runtime.state().device.type & cl.device_type.GPU else CPU_TILES


def accumulator(storage) -> np.dtype:
    """The dtype a product stored in ``storage`` accumulates in."""
    storage = np.dtype(storage)
    if storage == dt.float64:
        return dt.float64
    if storage in dt.FLOAT_DTYPES:
        return dt.float32
    if storage == dt.bool_:
        return dt.bool_
    return np.dtype(np.uint64) if storage.itemsize == 8 else np.dtype(np.uint32)


def compute_dtype(storage) -> np.dtype:
    """The float dtype float work stored in ``storage`` runs in (f64 for f64, else f32)."""
    return dt.float64 if np.dtype(storage) == dt.float64 else dt.float32


def _acc_bytes(acc) -> int:
    return 8 if acc in (dt.float64, np.dtype(np.uint64)) else 4


class Launch:
    """One kernel launch with its arguments, to enqueue once or repeatedly (lstm's steps change
    one argument between launches) without waiting for each."""

    __slots__ = ("file", "name", "options", "items", "local", "args", "kernel", "size")

    def __init__(self, file: str, name: str, options: tuple, items: tuple, local: tuple, *args):
        self.file, self.name, self.options, self.items, self.local = file, name, options, items, local
        self.args = list(args)
        self.kernel = enqueue.kernel(file, name, options, args)   # scalar types declared there
        self.size = tuple(-(-max(int(i), 1) // g) * g for i, g in zip(items, local))

    def enqueue(self) -> None:
        """Queue the launch (the queue is in order; ``enqueue.result`` waits), its arguments held
        until then. A range too large for one launch goes through ``enqueue.run``, which splits it."""
        if any(s > enqueue.CAP for s in self.size[1:]):
            enqueue.run(self.file, self.name, self.options, self.items, *self.args, local=self.local)
            return
        import pyopencl as cl
        self.kernel.set_args(*self.args)
        enqueue.hold(tuple(self.args))
        cl.enqueue_nd_range_kernel(runtime.state().queue, self.kernel, self.size, self.local)


def gemm_launch(a: OpenCLTensor, b: OpenCLTensor, c: OpenCLTensor, m: int, n: int, k: int, *, lda: int,
                ldb: int, ldc: int, acc, offsets=(0, 0, 0), batch=(1, 1), a_strides=(0, 0), b_strides=(0, 0),
                c_strides=(0, 0), bias: OpenCLTensor | None = None) -> Launch | None:
    """The launch of ``c[z] = a[z] @ b[z] (+ bias)`` for every batch index z = (z1, z2) < ``batch``:
    a (m, k), b (k, n) and c (m, n) row-major with row strides ``lda``/``ldb``/``ldc``, starting
    at element ``offsets`` plus z1 * strides[0] + z2 * strides[1]; ``acc`` is the accumulator
    dtype. None when there is nothing to compute."""
    if m == 0 or n == 0 or batch[0] * batch[1] == 0:
        return None
    t = tiles()
    acc = np.dtype(acc)
    widest = t.vector_bytes // _acc_bytes(acc)
    vw = next(w for w in (widest, 4, 1) if w <= n)
    rv = t.rv if vw == widest and n >= t.rv * vw else 1
    rm = min(t.rm, 1 << (min(m, t.rm) - 1).bit_length())
    options = (f"-DACC_CODE={ACC_CODES[acc]}", f"-DA_CODE={CODES[a.dtype]}", f"-DB_CODE={CODES[b.dtype]}",
               f"-DC_CODE={CODES[c.dtype]}", f"-DVW={vw}", f"-DRV={rv}", f"-DRM={rm}",
               f"-DCOLS_FAST={int(t.cols_fast)}")
    if bias is not None:
        options += (f"-DBIAS_CODE={CODES[bias.dtype]}",)
    row_blocks, col_blocks = -(-m // rm), -(-n // (vw * rv))
    if t.cols_fast:
        items, local = (col_blocks, row_blocks), (min(t.local[0], col_blocks), min(t.local[1], row_blocks))
    else:
        items, local = (row_blocks, col_blocks), (min(t.local[0], row_blocks), min(t.local[1], col_blocks))
    u = np.uint64
    return Launch(FILE, "gemm", options, items + (batch[0] * batch[1],), local + (1,),
                  a.buffer, b.buffer, c.buffer, None if bias is None else bias.buffer,
                  u(m), u(n), u(k), u(lda), u(ldb), u(ldc), u(offsets[0]), u(offsets[1]), u(offsets[2]),
                  u(batch[1]), u(a_strides[0]), u(a_strides[1]), u(b_strides[0]), u(b_strides[1]),
                  u(c_strides[0]), u(c_strides[1]))


def gemm(*args, **kwargs) -> None:
    """``gemm_launch(*args, **kwargs)`` enqueued."""
    planned = gemm_launch(*args, **kwargs)
    if planned is not None:
        planned.enqueue()


def transpose_into(src: OpenCLTensor, dst: OpenCLTensor, ld: int, offset: int = 0) -> None:
    """``src`` (rows, cols) transposed into ``dst`` (in its float dtype, the compute type) from
    element ``offset``, with row stride ``ld``: dst[offset + j * ld + i] = src[i, j]."""
    rows, cols = src.shape
    if rows == 0 or cols == 0:
        return
    options = (f"-DACC_CODE={ACC_CODES[dst.dtype]}", f"-DS_CODE={CODES[src.dtype]}")
    Launch(FILE, "transpose", options, (rows, cols), (min(64, rows), 1), src.buffer, dst.buffer,
           np.uint64(rows), np.uint64(cols), np.uint64(ld), np.uint64(offset)).enqueue()


def convert_into(src: OpenCLTensor, dst: OpenCLTensor, offset: int = 0, accumulate: bool = False) -> None:
    """dst[offset + i] = src[i] (or += with ``accumulate``), through the compute type of ``dst``'s
    storage and rounded to it."""
    if src.size == 0:
        return
    options = (f"-DACC_CODE={ACC_CODES[compute_dtype(dst.dtype)]}", f"-DS_CODE={CODES[src.dtype]}",
               f"-DC_CODE={CODES[dst.dtype]}")
    Launch(FILE, "convert_copy", options, (src.size,), (enqueue.LOCAL_SIZE,), src.buffer, dst.buffer,
           np.uint64(src.size), np.uint64(offset), np.int32(accumulate)).enqueue()


def _result_dtype(a, b) -> np.dtype:
    """BASIC's result dtype: numpy's promotion (extended to bfloat16)."""
    return dt.result_type(a, b)


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
    out_dtype = _result_dtype(ta.dtype, tb.dtype)
    shape = matmul_shape(ta.shape, tb.shape)
    out = enqueue.empty(shape, out_dtype, not stay)
    if out.size == 0:
        return enqueue.result(out, stay)
    a2 = (1,) + ta.shape if ta.ndim == 1 else ta.shape
    b2 = tb.shape + (1,) if tb.ndim == 1 else tb.shape
    m, k, n = a2[-2], a2[-1], b2[-1]
    batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    dims = _batch_plan(a2, b2, batch, m * k, k * n, m * n)
    inner, outer = dims[-2:], dims[:-2]
    while len(inner) < 2:
        inner.insert(0, (1, 0, 0, 0))
    (b1, sa1, sb1, sc1), (b2_, sa2, sb2, sc2) = inner
    for index in itertools.product(*(range(d[0]) for d in outer)):
        offsets = tuple(sum(i * d[j] for i, d in zip(index, outer)) for j in (1, 2, 3))
        gemm(ta, tb, out, m, n, k, lda=k, ldb=n, ldc=n, acc=accumulator(out_dtype), offsets=offsets,
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
    out = enqueue.empty(tx.shape[:-1] + (n,), tx.dtype, not stay)
    if out.size:
        compute = compute_dtype(tx.dtype)
        m = math.prod(tx.shape[:-1])
        gemm(tx, transposed(tw, compute), out, m, n, k, lda=k, ldb=n, ldc=n, acc=compute,
             bias=tb if tb is not None and tb.size else None)
    return enqueue.result(out, stay)
