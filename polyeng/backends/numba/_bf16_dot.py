"""``x @ w.T`` for bfloat16 ``x`` and ``w`` with AVX512_BF16's ``vdpbf16ps``: f32 accumulation at
twice the multiply-adds per instruction of an f32 FMA, reading both operands as stored.

``vdpbf16ps`` multiplies pairs of bf16 values (a product of two bf16 values is exact in f32) and
adds them one after the other to f32 accumulators, rounding each sum to nearest even: an f32
accumulation, in another order than BLAS's. It treats subnormal inputs as zero and flushes
subnormal sums to zero, so results differ from an f32 product only where values below 2**-126
(1.2e-38) take part. Each output is the sum of 16 lanes of partial sums (each lane accumulating
every 32nd pair of the row), the remaining ``K % 32`` products, then the bias, rounded once.

The micro-kernel multiplies 4 rows of ``x`` by 4 rows of ``w`` (16 accumulators of 16 lanes in
registers) along the whole common dimension; the kernel runs it over 4-column blocks of the
output in parallel, each block's 4 rows of ``w`` read once from memory. Only CPUs with
avx512bf16 run it (``AVAILABLE``, from the host's features at import); numba's cache is keyed
by the CPU, so machine code compiled here never runs on a CPU without the instruction.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import get_num_threads, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._runtime import jit
from ._storage import bf16_bits_to_f32, narrow

TILE = 4      # rows of x and of w per micro-kernel call
LANES = 16    # f32 accumulators per zmm register
STEP = 32     # bf16 elements per zmm register


def _host_has_bf16_dot() -> bool:
    try:
        import llvmlite.binding as llvm
        return bool(llvm.get_host_cpu_features().get("avx512bf16"))
    except Exception:
        return False


AVAILABLE = _host_has_bf16_dot()


class _BFloat(ir.Type):
    """LLVM's ``bfloat`` (the intrinsic's operand element type), absent from llvmlite.ir."""
    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, _BFloat)

    def __hash__(self):
        return hash(_BFloat)


@intrinsic
def _tile(typingctx, x, w, xr0, xr1, xr2, xr3, wr0, wr1, wr2, wr3, k_end, acc):
    """acc[(r * 4 + c) * 16 + lane] = lane's partial sum of x[xr_r, :k_end] . w[wr_c, :k_end];
    ``x``/``w`` C-contiguous uint16 (bf16 bits), ``k_end`` a multiple of 32."""
    def codegen(context, builder, sig, args):
        x_ary = context.make_array(sig.args[0])(context, builder, args[0])
        w_ary = context.make_array(sig.args[1])(context, builder, args[1])
        acc_ary = context.make_array(sig.args[11])(context, builder, args[11])
        i64 = ir.IntType(64)
        f32x16 = ir.VectorType(ir.FloatType(), LANES)
        bf16x32 = ir.VectorType(_BFloat(), STEP)
        i16x32p = ir.PointerType(ir.VectorType(ir.IntType(16), STEP))
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f32x16, [f32x16, bf16x32, bf16x32]),
                                            "llvm.x86.avx512bf16.dpbf16ps.512")
        x_ld = builder.extract_value(x_ary.strides, 0)   # bytes per row
        w_ld = builder.extract_value(w_ary.strides, 0)
        x_base = builder.ptrtoint(x_ary.data, i64)
        w_base = builder.ptrtoint(w_ary.data, i64)
        rows = [builder.add(x_base, builder.mul(builder.sext(v, i64), x_ld)) for v in args[2:6]]
        cols = [builder.add(w_base, builder.mul(builder.sext(v, i64), w_ld)) for v in args[6:10]]
        sums = [cgutils.alloca_once_value(builder, ir.Constant(f32x16, None)) for _ in range(TILE * TILE)]
        k_end_v = builder.sext(args[10], i64)
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), k_end_v, ir.Constant(i64, STEP), i64) as (k, _):
            offset = builder.mul(k, ir.Constant(i64, 2))

            def load(base):
                ptr = builder.inttoptr(builder.add(base, offset), i16x32p)
                return builder.bitcast(builder.load(ptr, align=2), bf16x32)
            xs, ws = [load(b) for b in rows], [load(b) for b in cols]
            for r in range(TILE):
                for c in range(TILE):
                    s = sums[r * TILE + c]
                    builder.store(builder.call(fn, [builder.load(s), xs[r], ws[c]]), s)
        out = builder.ptrtoint(acc_ary.data, i64)
        for t, s in enumerate(sums):
            ptr = builder.inttoptr(builder.add(out, ir.Constant(i64, t * LANES * 4)), ir.PointerType(f32x16))
            builder.store(builder.load(s), ptr, align=4)
        return context.get_dummy_value()
    return types.none(x, w, xr0, xr1, xr2, xr3, wr0, wr1, wr2, wr3, k_end, acc), codegen


@jit(parallel=True)
def _linear(x, w, bias, has_bias, out, tasks):
    """out = narrow(x @ w.T + bias); x (M, K), w (N, K) C-contiguous bf16 bits, out (M, N)."""
    m, k = x.shape
    n = w.shape[0]
    k_main = k - k % STEP
    col_blocks = (n + TILE - 1) // TILE
    row_blocks = (m + TILE - 1) // TILE
    for task in prange(tasks):
        acc = np.empty(TILE * TILE * LANES, np.float32)
        for jb in range(task * col_blocks // tasks, (task + 1) * col_blocks // tasks):
            j0 = jb * TILE
            for ib in range(row_blocks):
                i0 = ib * TILE
                # rows past the end repeat the last one; their sums are dropped
                _tile(x, w, min(i0, m - 1), min(i0 + 1, m - 1), min(i0 + 2, m - 1), min(i0 + 3, m - 1),
                      min(j0, n - 1), min(j0 + 1, n - 1), min(j0 + 2, n - 1), min(j0 + 3, n - 1), k_main, acc)
                for r in range(min(TILE, m - i0)):
                    i = i0 + r
                    for c in range(min(TILE, n - j0)):
                        j = j0 + c
                        base = (r * TILE + c) * LANES
                        s = np.float32(0.0)
                        for lane in range(LANES):
                            s += acc[base + lane]
                        for kk in range(k_main, k):
                            s += bf16_bits_to_f32(x[i, kk]) * bf16_bits_to_f32(w[j, kk])
                        if has_bias:
                            s += bias[j]
                        out[i, j] = narrow(s, out)


def _linear_call(x, w, bias, out):
    """``out`` (M, N, any float storage seen through ``kernel_view``) = x @ w.T + bias, rounded
    once; ``x`` (M, K) and ``w`` (N, K) bf16 bits (uint16) with unit stride along K, ``bias``
    an f32 vector or None. Two tasks per thread (numba's count for this call)."""
    n = out.shape[1]
    threads = get_num_threads()
    tasks = max(1, min(2 * threads if threads > 1 else 1, (n + TILE - 1) // TILE))
    has_bias = bias is not None
    _linear(x, w, bias if has_bias else np.zeros(1, np.float32), has_bias, out, tasks)
