"""The GEMM of matmul.cl and the conversions around it, shared by matmul, linear and lstm.

- **Types.** Every operand is read in its own storage type (f32, f16, bf16, f64, s8, u8, s32,
  s64, bool, ``CODES``) and accumulated in ``accumulator(storage)``: f32 (16-bit storage
  included) or f64 for floats, uint32/uint64 for integers (wrapping as numpy's products do),
  bool for bool.
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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine import dtypes as dt
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


def _acc_bytes(acc) -> int:
    return 8 if acc in (dt.float64, np.dtype(np.uint64)) else 4


def gemm_launch(a: OpenCLTensor, b: OpenCLTensor, c: OpenCLTensor, m: int, n: int, k: int, *, lda: int,
                ldb: int, ldc: int, acc, offsets=(0, 0, 0), batch=(1, 1), a_strides=(0, 0), b_strides=(0, 0),
                c_strides=(0, 0), bias: OpenCLTensor | None = None) -> enqueue.Launch | None:
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
    return enqueue.Launch(FILE, "gemm", options, items + (batch[0] * batch[1],), local + (1,),
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
    enqueue.Launch(FILE, "transpose", options, (rows, cols), (min(64, rows), 1), src.buffer, dst.buffer,
                   np.uint64(rows), np.uint64(cols), np.uint64(ld), np.uint64(offset)).enqueue()


def convert_into(src: OpenCLTensor, dst: OpenCLTensor, offset: int = 0, accumulate: bool = False) -> None:
    """dst[offset + i] = src[i] (or += with ``accumulate``), through the compute type of ``dst``'s
    storage and rounded to it."""
    if src.size == 0:
        return
    options = (f"-DACC_CODE={ACC_CODES[enqueue.compute_dtype(dst.dtype)]}", f"-DS_CODE={CODES[src.dtype]}",
               f"-DC_CODE={CODES[dst.dtype]}")
    enqueue.Launch(FILE, "convert_copy", options, (src.size,), (enqueue.LOCAL_SIZE,), src.buffer, dst.buffer,
                   np.uint64(src.size), np.uint64(offset), np.int32(accumulate)).enqueue()
