"""C calls and atomics for compiled loops that run on several threads (``_recurrence_loop.py``).

- ``gemm``: ``c = a @ b + beta * c`` through numpy's OpenBLAS, called at its ``cblas_sgemm``/``cblas_dgemm``
  address (or another function of that signature: ``_small_gemm``'s) from compiled code (numba's
  own ``np.dot`` needs SciPy, and a product called from Python costs a few microseconds of
  dispatch per call). ``gemm_address`` finds the function in the
  library threadpoolctl finds for numpy (``_blas_threads``), and whether its integers are 64-bit.
  None where numpy's BLAS is not an OpenBLAS whose threads polyeng controls: the caller runs each
  product from Python then.
- ``atomic_add``, ``atomic_load`` and ``atomic_claim``: sequentially consistent read-modify-write,
  an acquire load and a compare-and-swap from 0 to 1 of an int64 array's element, for counters
  and flags that threads share.
- ``call_int``: a call of ``int f(void)`` at an address (``sched_yield``).
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

from .._address import c_function

_ROW_MAJOR, _NO_TRANS = 101, 111   # CBLAS_ORDER, CBLAS_TRANSPOSE
_found: dict = {}
_lock = threading.Lock()


def gemm_address(dtype) -> tuple[int, bool] | None:
    """(address of numpy's OpenBLAS ``cblas_sgemm`` for f32 or ``cblas_dgemm`` for f64, whether its
    integers are 64-bit), or None (no such library or function, or another dtype)."""
    letter = {"float32": "s", "float64": "d"}.get(np.dtype(dtype).name)
    if letter is None:
        return None
    with _lock:
        if "functions" not in _found:
            _found["functions"] = _find()
    return _found["functions"].get(letter)


def _find() -> dict:
    from .. import _blas_threads
    controls = _blas_threads._controls
    if controls is None:
        controls = _blas_threads._find_controls()
    if not controls:
        return {}
    controller = _blas_threads._controller
    if controller is None or controller.internal_api != "openblas":
        return {}
    try:
        library = ctypes.CDLL(controller.filepath)
    except OSError:
        return {}
    for prefix in ("scipy_", ""):
        for suffix in ("64_", ""):
            names = {letter: f"{prefix}cblas_{letter}gemm{suffix}" for letter in "sd"}
            if not all(hasattr(library, n) for n in names.values()):
                continue
            wide = suffix == "64_" or _config_says_64(library, f"{prefix}openblas_get_config{suffix}")
            return {letter: (ctypes.cast(getattr(library, n), ctypes.c_void_p).value, wide)
                    for letter, n in names.items()}
    return {}


def _config_says_64(library, name) -> bool:
    config = getattr(library, name, None)
    if config is None:
        return False
    config.restype = ctypes.c_char_p
    return b"USE64BITINT" in (config() or b"")


def yield_address() -> int:
    """The C library's ``sched_yield`` (0 where there is none, as on Windows: ``call_int`` is then
    not called)."""
    return c_function("sched_yield")


def _after_fork_in_child():
    """A fork while another thread looked the functions up: the child has only this thread."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _data(context, builder, array_type, value):
    return context.make_array(array_type)(context, builder, value).data


def _gemm_intrinsic(int_bits):
    def typer(typingctx, address, m, n, k, a, lda, b, ldb, beta, c, ldc):
        arrays = (a, b, c)
        if not all(isinstance(x, types.Array) and x.dtype in (types.float32, types.float64) for x in arrays):
            return None
        if len({x.dtype for x in arrays}) != 1:
            return None
        sig = types.none(address, m, n, k, a, lda, b, ldb, beta, c, ldc)

        def codegen(context, builder, sig, args):
            real = ir.FloatType() if a.dtype == types.float32 else ir.DoubleType()
            integer, enum, pointer = ir.IntType(int_bits), ir.IntType(32), ir.PointerType(real)
            fn_type = ir.FunctionType(ir.VoidType(), [enum, enum, enum, integer, integer, integer, real, pointer,
                                                      integer, pointer, integer, real, pointer, integer])
            fn = builder.inttoptr(args[0], fn_type.as_pointer())

            def whole(i):
                return context.cast(builder, args[i], sig.args[i], types.int64) if int_bits == 64 else \
                    builder.trunc(context.cast(builder, args[i], sig.args[i], types.int64), integer)

            def data(i):
                return builder.bitcast(_data(context, builder, sig.args[i], args[i]), pointer)
            beta = context.cast(builder, args[8], sig.args[8], a.dtype)
            builder.call(fn, [enum(_ROW_MAJOR), enum(_NO_TRANS), enum(_NO_TRANS), whole(1), whole(2), whole(3),
                              real(1.0), data(4), whole(5), data(6), whole(7), beta, data(9), whole(10)])
            return context.get_dummy_value()
        return sig, codegen
    return typer


_gemm64 = intrinsic(_gemm_intrinsic(64))
_gemm32 = intrinsic(_gemm_intrinsic(32))


@register_jitable(inline="always")
def gemm(address, wide, m, n, k, a, lda, b, ldb, beta, c, ldc):
    """``c = a @ b + beta * c`` (row-major; ``a`` m x k, ``b`` k x n and ``c`` m x n from each
    array's first element, rows ``lda``/``ldb``/``ldc`` elements apart) by the cblas function at
    ``address``; ``c`` is not read where ``beta`` is 0."""
    if wide:
        _gemm64(address, m, n, k, a, lda, b, ldb, beta, c, ldc)
    else:
        _gemm32(address, m, n, k, a, lda, b, ldb, beta, c, ldc)


def _counters(array) -> bool:
    """Whether the atomics take ``array``: a 1-D int64 array."""
    return isinstance(array, types.Array) and array.dtype == types.int64 and array.ndim == 1


def _element(context, builder, sig, args):
    array = context.make_array(sig.args[0])(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, sig.args[0], array, [args[1]])


@intrinsic
def atomic_add(typingctx, array, index, value):
    """``array[index] += value`` atomically (int64 array); the old value."""
    if not _counters(array):
        return None
    sig = types.int64(array, types.intp, types.int64)

    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _element(context, builder, sig, args), args[2], "seq_cst")
    return sig, codegen


@intrinsic
def atomic_load(typingctx, array, index):
    """``array[index]`` (int64 array) as another thread's atomic write left it."""
    if not _counters(array):
        return None
    sig = types.int64(array, types.intp)

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_element(context, builder, sig, args), "acquire", 8)
    return sig, codegen


@intrinsic
def atomic_claim(typingctx, array, index):
    """Set ``array[index]`` (int64 array) from 0 to 1 atomically: whether this call did."""
    if not _counters(array):
        return None
    sig = types.boolean(array, types.intp)

    def codegen(context, builder, sig, args):
        pair = builder.cmpxchg(_element(context, builder, sig, args), ir.Constant(ir.IntType(64), 0),
                               ir.Constant(ir.IntType(64), 1), "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return sig, codegen


@intrinsic
def call_int(typingctx, address):
    """``int f(void)`` at ``address``."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.IntType(32), []).as_pointer())
        return builder.call(fn, [])
    return types.int32(address), codegen
