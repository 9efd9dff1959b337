"""``x @ w.T`` with a 16-bit ``w`` read as stored: the product kernels matmul, linear and lstm share.

Widening a whole 16-bit weight to an f32 copy on every call writes twice its size and reads it
back, which made bf16 slower than f32. Products whose weight has at least ``NATIVE_MIN``
elements take one of three routes, each accumulating in f32:
- bf16 ``x`` and bf16 ``w`` on a CPU with avx512bf16: ``_bf16_dot`` (``vdpbf16ps``), both read
  as stored, the bias added and the result rounded once in the same kernel;
- at most ``GEMV_ROWS`` rows: ``_gemv``, ``w`` widened in registers, read once;
- more rows: ``w`` widened ``TILE_ELEMENTS`` at a time into an f32 tile that stays in cache,
  and numpy's BLAS multiplies each tile into its columns of the f32 result.
Smaller weights are widened whole and multiplied by BLAS, as BASIC does (bit for bit the same).
f32 and f64 weights always go to BLAS.
"""
from __future__ import annotations

import numpy as np

from ...engine import dtypes as dt
from .._blas_threads import blas_threads
from . import _bf16_dot
from ._cast import _cast, converted
from ._gemv import gemv
from ._runtime import _SERIAL_BYTES, launch
from ._storage import kernel_view, read_only

NATIVE_MIN = 65536          # weight elements from which the weight is read as stored
GEMV_ROWS = 4               # at most this many rows: the register-widening kernel
TILE_ELEMENTS = 65536       # weight elements widened per BLAS call (256 KiB of f32: stays in L2)
PARALLEL_WORK = 1 << 18     # multiply-adds from which the JIT kernels use every thread


def _f32(a):
    return converted(a, dt.float32) if a.dtype in dt.SIXTEEN_BIT_FLOATS else a


def _unit_inner(a):
    """``a`` (2-D) with unit stride along its last axis, copied only when it lacks one."""
    return a if a.strides[1] == a.itemsize and a.strides[0] % a.itemsize == 0 else np.ascontiguousarray(a)


def native(x, w) -> bool:
    """Whether ``x @ w.T`` reads ``w`` as stored (``product_t``) rather than widening it whole."""
    return w.dtype in dt.SIXTEEN_BIT_FLOATS and w.size >= NATIVE_MIN and x.dtype in dt.FLOAT_DTYPES \
        and x.dtype != dt.float64


def product_t(x, w, bias, dtype):
    """``x`` (M, K) @ ``w.T`` (``w`` (N, K), 16-bit, ``native``) + ``bias`` (N,) or None, as a new
    (M, N) array of ``dtype`` (f32 or 16-bit), rounded once."""
    m, k = x.shape
    n = w.shape[0]
    work = m * n * k
    if x.dtype == dt.bfloat16 and w.dtype == dt.bfloat16 and _bf16_dot.AVAILABLE and k:
        out = np.empty((m, n), dtype)
        if out.size:
            b = None if bias is None else np.ascontiguousarray(_f32(bias), dtype=np.float32)
            launch(_bf16_dot._linear_call, work_bytes(work), kernel_view(_unit_inner(x)),
                   kernel_view(_unit_inner(w)), b, kernel_view(out))
        return out
    y = np.empty((m, n), np.float32)
    if y.size:
        xf = np.ascontiguousarray(_f32(x), dtype=np.float32)
        if k == 0:
            y[...] = 0
        elif m <= GEMV_ROWS:
            launch(gemv, work_bytes(work), xf, kernel_view(w), y)
        else:
            _tiles(xf, w, y)
        if bias is not None:
            y += _f32(bias)
    return y if dtype == dt.float32 else converted(y, dtype)


def work_bytes(work):
    """``launch``'s output-size rule, applied to the work: parallel from ``PARALLEL_WORK`` on."""
    return _SERIAL_BYTES if work >= PARALLEL_WORK else 0


def _tiles(xf, w, y):
    """y = xf @ w.T, ``w`` widened a tile of rows at a time."""
    n, k = w.shape
    rows = max(1, TILE_ELEMENTS // k)
    tile = np.empty((min(rows, n), k), np.float32)
    with blas_threads(xf.shape[0] * rows * k):
        for j in range(0, n, rows):
            part = tile[:min(rows, n - j)]
            # widened on this thread: a parallel JIT launch between threaded BLAS calls waits
            # for OpenBLAS's spinning threads (680 ms instead of 18 for K=512, N=10000, M=128)
            launch(_cast, 0, read_only(kernel_view(w[j:j + rows]).reshape(-1)), part.reshape(-1), 1)
            np.matmul(xf, part.T, out=y[:, j:j + rows])
