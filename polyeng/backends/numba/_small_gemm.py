"""A small-matrix ``sgemm`` for the recurrent layers' steps on CPUs without AVX-512.

The steps of lstm and gru multiply a few batch rows by a weight: 4 or 8 rows by 64 or 128 by
128 columns (a part of the gates). OpenBLAS's Haswell kernels, which it runs on AVX2 CPUs, reach
about 25 GFLOP/s there (an AMD EPYC of the Zen 3 generation: 8x128 by 128x512 in 34-38 us; MKL
and oneDNN's ``dnnl_sgemm`` took 38 and 43 us), where 512 rows reach 54. This function keeps a
block of 4 rows by 16 columns in eight 8-lane registers while it walks the shared dimension,
reading ``b`` as it lies (each row's 16 columns are contiguous), with no packing: 4x128 by
128x128 in about 1.5 us against OpenBLAS's 5.5, 8x128 by 128x512 in 22 against 28-32 (one
thread, the call's own cost of about 2.8 us through ctypes taken off; numpy's about 1 us).

A second function (``PACKED``, ``address(packed=True)``) reads ``b`` as ``pack`` lays it out:
each block of 16 columns whole, one after another. Read as it lies, a block's rows are cache lines
``ldb`` values apart: at 512 columns they fall in 2 of the 64 sets of the 32 KB first-level cache
and push each other (and the loop's other data) out. The recurrent loop keeps its weights packed
(``_recurrence_loop.permuted``), and the LSTM of 64 steps at batch 8, 64 inputs and 128 hidden units
ran in 2.1-2.5 ms on one thread against 4.0-4.2 ms read as they lie, in 1.3 ms on two against 1.9
(the loop's compiled call alone, medians of 100 in plain processes). The bits are the same.

It has ``cblas_sgemm``'s signature with 64-bit integers, for row-major, untransposed operands
(what ``_native_calls.gemm`` passes; the order and transposes are not read):
``c = alpha * a @ b + beta * c``, ``c`` not read where ``beta`` is 0. Each element of ``c`` is
one fused multiply-add chain over the shared dimension in order, whatever the call's row count
or the element's place in it, so a row gets the same bits in a call of any rows: the recurrent
loop's lanes of a share of the batch give its tasks' bits.

Written as LLVM IR and compiled with ``onednn/_llvm.py`` (kept in polyeng's cache folder like
the oneDNN programs' loops). Used only where the CPU has no AVX-512 (``wanted``): OpenBLAS's
AVX-512 kernels were not measured against it. The recurrent loop takes the packed one only where
every part's columns are whole blocks of 16 (``_recurrence_loop.gemm_for``): past them it makes each column's
elements one at a time, slower than OpenBLAS (4x100 by 100x132: 13.9 us against 11.4).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

NAME = "polyeng_small_sgemm"
PACKED = "polyeng_small_sgemm_packed"   # reads ``b`` as ``pack`` lays it out
BLOCK_ROWS, BLOCK_COLS = 4, 16

_lock = threading.Lock()
_made: dict = {}   # "addresses" by name (and the ctypes "functions"), or "error": why they could not be made


def wanted() -> bool:
    """Whether the recurrent loops use this function for f32 products: on CPUs with AVX2 and FMA
    and without AVX-512, where llvmlite optimises the module (0.44 and later: with no passes the
    accumulators would stay in memory)."""
    from ..onednn._fpmath import cpu_flags
    flags = cpu_flags()
    if not flags or "avx2" not in flags or "fma" not in flags or "avx512f" in flags:
        return False
    try:
        from llvmlite import binding
    except ImportError:
        return False
    return hasattr(binding, "create_pass_builder")


def address(packed: bool = False) -> int | None:
    """The address of the compiled function (``packed``: the one that reads ``b`` as ``pack`` lays
    it out), or None where llvmlite cannot make them."""
    if "addresses" not in _made and "error" not in _made:
        with _lock:
            if "addresses" not in _made and "error" not in _made:
                try:
                    functions = _compile()
                    _made["functions"] = functions   # the code itself is kept by _llvm or _elf for the process
                    _made["addresses"] = {name: ctypes.cast(f, ctypes.c_void_p).value for name, f in functions.items()}
                except Exception as exc:   # no llvmlite, or a build that fails: OpenBLAS runs the products
                    _made["error"] = f"{type(exc).__name__}: {exc}"
    addresses = _made.get("addresses")
    return None if addresses is None else addresses[PACKED if packed else NAME]


def pack(b: np.ndarray) -> np.ndarray:
    """``b`` (inner x cols, cols a multiple of 16) as the packed function reads it: its blocks of 16
    columns one after another, each ``inner`` rows of 16 contiguous values (flat). A block is then
    read in order, where read as it lies each of its rows is a cache line ``cols`` values from the
    last: at 512 columns those lines fall in two of the 64 sets of a 32 KB first-level cache and
    push each other out."""
    inner, cols = b.shape
    if cols % BLOCK_COLS:
        raise ValueError(f"pack: {cols} columns are not whole blocks of {BLOCK_COLS}")
    return np.ascontiguousarray(b.reshape(inner, cols // BLOCK_COLS, BLOCK_COLS).transpose(1, 0, 2)).reshape(-1)


SIGNATURE = (None, [ctypes.c_int32] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int64,
                                                                   ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                                                                   ctypes.c_void_p, ctypes.c_int64])


def _compile() -> dict:
    from ..onednn._llvm import compile_module
    return compile_module(module(), {NAME: SIGNATURE, PACKED: SIGNATURE})


def module():
    """The IR module of the two functions (see the module docstring)."""
    from llvmlite import ir
    mod = ir.Module(name="polyeng_small_gemm")
    _define(mod, NAME, packed=False)
    _define(mod, PACKED, packed=True)
    return mod


def _define(mod, name: str, packed: bool) -> None:
    """Function ``name`` in ``mod``: ``b``'s element (k, col) at ``k * ldb + col``, or (``packed``)
    at ``(col - col % 16) * inner + k * 16 + col % 16`` (``ldb`` not read)."""
    from llvmlite import ir
    from ..onednn._llvm import loop, variable
    f32, i32, i64 = ir.FloatType(), ir.IntType(32), ir.IntType(64)
    v8 = ir.VectorType(f32, 8)
    pointer = f32.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, pointer, i64, pointer,
                                                          i64, f32, pointer, i64]), name=name)
    _, _, _, rows, cols, inner, alpha, a, lda, b_, ldb, beta, c, ldc = fn.args
    a.add_attribute("noalias")
    b_.add_attribute("noalias")
    fma8, fma1 = (mod.globals.get(f"llvm.fma.{suffix}") or ir.Function(mod, ir.FunctionType(t, [t] * 3),
                                                                       name=f"llvm.fma.{suffix}")
                  for t, suffix in ((v8, "v8f32"), (f32, "f32")))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero8 = ir.Constant(v8, [0.0] * 8)
    lanes = ir.Constant(ir.VectorType(i32, 8), [0] * 8)
    beta_zero = b.fcmp_ordered("==", beta, f32(0.0))

    def splat(x):
        return b.shuffle_vector(b.insert_element(ir.Constant(v8, ir.Undefined), x, i32(0)),
                                ir.Constant(v8, ir.Undefined), lanes)

    def at(base, row, stride, col):
        return b.gep(base, [b.add(b.mul(row, stride), col)])

    def of_b(k, col):
        if not packed:
            return at(b_, k, ldb, col)
        within = b.srem(col, i64(BLOCK_COLS))
        return b.gep(b_, [b.add(b.add(b.mul(b.sub(col, within), inner), b.mul(k, i64(BLOCK_COLS))), within)])

    def vector(ptr):
        return b.bitcast(ptr, v8.as_pointer())

    def result(acc, old_ptr, load, store, fma, wide_alpha, wide_beta):
        """``alpha * acc`` where beta is 0, else ``beta * old + alpha * acc`` (old read only then)."""
        scaled = b.fmul(wide_alpha, acc)
        with b.if_else(beta_zero) as (then, otherwise):
            with then:
                store(scaled)
            with otherwise:
                store(b.call(fma, [wide_beta, load(old_ptr), scaled]))

    def blocks(height):
        def over_rows(_, first_row):
            def over_panels(_, first_col):
                acc = [[variable(b, v8, zero8) for _ in range(2)] for _ in range(height)]

                def over_inner(_, k):
                    panel = of_b(k, first_col)
                    halves = (b.load(vector(panel), align=4), b.load(vector(b.gep(panel, [i64(8)])), align=4))
                    for r in range(height):
                        x = splat(b.load(at(a, b.add(first_row, i64(r)), lda, k)))
                        for h in range(2):
                            b.store(b.call(fma8, [x, halves[h], b.load(acc[r][h])]), acc[r][h])
                loop(b, fn, i64(0), inner, over_inner)
                for r in range(height):
                    for h in range(2):
                        target = vector(at(c, b.add(first_row, i64(r)), ldc, b.add(first_col, i64(8 * h))))
                        result(b.load(acc[r][h]), target, lambda p: b.load(p, align=4),
                               lambda v, p=target: b.store(v, p, align=4), fma8, splat(alpha), splat(beta))
            loop(b, fn, i64(0), full_cols, over_panels, i64(BLOCK_COLS))
        return over_rows

    full_cols = b.mul(b.sdiv(cols, i64(BLOCK_COLS)), i64(BLOCK_COLS))
    full_rows = b.mul(b.sdiv(rows, i64(BLOCK_ROWS)), i64(BLOCK_ROWS))
    loop(b, fn, i64(0), full_rows, blocks(BLOCK_ROWS), i64(BLOCK_ROWS))
    loop(b, fn, full_rows, rows, blocks(1))

    def last_cols(_, row):   # the columns after the last whole block, one at a time, in the same order
        def column(_, col):
            acc = variable(b, f32, f32(0.0))

            def over_inner(_, k):
                b.store(b.call(fma1, [b.load(at(a, row, lda, k)), b.load(of_b(k, col)), b.load(acc)]), acc)
            loop(b, fn, i64(0), inner, over_inner)
            target = at(c, row, ldc, col)
            result(b.load(acc), target, b.load, lambda v, p=target: b.store(v, p), fma1, alpha, beta)
        loop(b, fn, full_cols, cols, column)
    loop(b, fn, i64(0), rows, last_cols)
    b.ret_void()
