"""The compiled scans of ``_scans.py``: one pass each, on integers where that lets LLVM vectorise
the reduction without assuming that no NaN is met. Written as LLVM IR and compiled with llvmlite
(``_llvm.py``) on first use; each function here takes 1-D arrays of 4-byte items (a strided one
is copied) and calls its compiled form at their addresses."""
from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from .._address import address
from ._llvm import Builder, loop, variable

ABS, INF = 0x7FFFFFFF, 0x7F800000
NEG_INF = -0x800000   # the int32 bits of -inf (0xFF800000)
INT_MIN, INT_MAX = -2**31, 2**31 - 1

_lock = threading.Lock()
_compiled: dict = {}


def as_float(bits: int) -> float:
    """The f32 whose bits are int32 ``bits``, as a float."""
    return struct.unpack("<f", struct.pack("<i", bits))[0]


def _unflip(key: int) -> int:
    """A monotone key back to its f32 bits (the flip is its own inverse)."""
    return key ^ ((key >> 31) & ABS)


class _Scans(Builder):
    """The IR of the four scans: every argument an i64 (an address or a count)."""

    def __init__(self, ir):
        super().__init__(ir, "polyeng_onednn_scans")

    def c32(self, value):
        return self.const(value, self.i32)

    def c64(self, value):
        return self.const(value)

    def load(self, b, base, index, kind=None):
        return super().load(b, base, index, kind or self.i32)   # the scans read 32-bit values

    def keep(self, b, slot, value, op):
        """``slot = value if value op slot else slot`` (signed)."""
        old = b.load(slot)
        b.store(b.select(b.icmp_signed(op, value, old), value, old), slot)

    def key(self, b, k):
        """f32 bits made monotone: a negative number's bits flipped below its sign."""
        return b.xor(k, b.and_(b.ashr(k, self.c32(31)), self.c32(ABS)))

    def magnitude(self):
        """magnitude(bits, n) -> the largest of bits & ABS (i32)."""
        fn, b = self.function("magnitude", self.i32, 2)
        bits, n = fn.args
        m = variable(b, self.i32, self.c32(0))
        loop(b, fn, self.c64(0), n,
                  lambda b, i: self.keep(b, m, b.and_(self.load(b, bits, i), self.c32(ABS)), ">"))
        b.ret(b.load(m))

    def extremes(self):
        """extremes(keys, n) -> the largest key << 32 | the smallest key (as unsigned 32 bits)."""
        fn, b = self.function("extremes", self.i64, 2)
        keys, n = fn.args
        hi = variable(b, self.i32, self.c32(INT_MIN))
        lo = variable(b, self.i32, self.c32(INT_MAX))

        def body(b, i):
            s = self.key(b, self.load(b, keys, i))
            self.keep(b, hi, s, ">")
            self.keep(b, lo, s, "<")
        loop(b, fn, self.c64(0), n, body)
        b.ret(self.pack(b, b.load(hi), b.load(lo)))

    def pack(self, b, high, low):
        """Two i32 in one i64: ``high`` above, ``low``'s 32 bits below."""
        return b.or_(b.shl(b.sext(high, self.i64), self.c64(32)), b.zext(low, self.i64))

    def masked_rows(self):
        """masked_rows(keys, n, row) -> (how many rows of ``row`` keys are -inf only) << 32 | the
        smallest key that is not -inf's (INT_MAX if none). Per row two loops of one reduction
        each, which LLVM vectorises (one loop of both did not: 3x the time)."""
        fn, b = self.function("masked_rows", self.i64, 3)
        keys, n, row = fn.args
        lo = variable(b, self.i32, self.c32(INT_MAX))
        whole = variable(b, self.i32, self.c32(0))
        count = variable(b, self.i32, self.c32(0))
        minus = self.c32(NEG_INF ^ ABS)   # -inf's key: the lowest of all

        def per_row(b, start):
            b.store(self.c32(0), count)

            def counted(b, i):
                k = self.load(b, keys, b.add(start, i))
                b.store(b.add(b.load(count), b.zext(b.icmp_signed("==", k, self.c32(NEG_INF)), self.i32)), count)
            loop(b, fn, self.c64(0), row, counted)

            def lowest(b, i):
                s = self.key(b, self.load(b, keys, b.add(start, i)))
                s = b.select(b.icmp_signed("==", s, minus), self.c32(INT_MAX), s)
                self.keep(b, lo, s, "<")
            loop(b, fn, self.c64(0), row, lowest)
            full = b.icmp_signed("==", b.sext(b.load(count), self.i64), row)
            b.store(b.add(b.load(whole), b.zext(full, self.i32)), whole)
        loop(b, fn, self.c64(0), n, per_row, step=row)
        b.ret(self.pack(b, b.load(whole), b.load(lo)))

    def doubt(self):
        """doubt(mean, var, n) -> how many rows have var <= (|mean| * 2**-10)**2 (f32, ordered:
        a NaN compares false)."""
        fn, b = self.function("doubt", self.i64, 3)
        mean, var, n = fn.args
        count = variable(b, self.i64, self.c64(0))

        def body(b, i):
            bits = b.and_(b.bitcast(self.load(b, mean, i, self.f32), self.i32), self.c32(ABS))
            m = b.fmul(b.bitcast(bits, self.f32), self.ir.Constant(self.f32, 2.0 ** -10))
            low = b.fcmp_ordered("<=", self.load(b, var, i, self.f32), b.fmul(m, m))
            b.store(b.add(b.load(count), b.zext(low, self.i64)), count)
        loop(b, fn, self.c64(0), n, body)
        b.ret(b.load(count))


def _make() -> dict:
    from llvmlite import ir
    from ._llvm import compile_module
    scans = _Scans(ir)
    for name in ("magnitude", "extremes", "masked_rows", "doubt"):
        getattr(scans, name)()
    u64, i64 = ctypes.c_uint64, ctypes.c_int64
    return compile_module(scans.module, {"magnitude": (ctypes.c_int32, [u64, i64]),
                                         "extremes": (i64, [u64, i64]),
                                         "masked_rows": (i64, [u64, i64, i64]),
                                         "doubt": (i64, [u64, u64, i64])})


def functions() -> dict:
    """name -> the compiled scan (made on first use; raises where llvmlite cannot make them)."""
    if not _compiled:
        with _lock:
            if not _compiled:
                _compiled.update(_make())
    return _compiled


def magnitude_bits(bits) -> float:
    """The largest ``|x|`` of f32 values given as their int32 bits (NaN if one is a NaN)."""
    bits = np.ascontiguousarray(bits)
    return as_float(functions()["magnitude"](address(bits), bits.size))


def _split(packed: int) -> tuple[int, int]:
    """The two i32 of ``pack``: (high, low)."""
    low = packed & 0xFFFFFFFF
    return packed >> 32, low - (1 << 32) if low >= 1 << 31 else low


def extreme_keys(keys) -> tuple[float, float, bool]:
    """(largest, smallest, whether one is a NaN) of f32 values given as their int32 bits: a NaN's
    key lies above +inf's or below -inf's."""
    keys = np.ascontiguousarray(keys)
    hi, lo = _split(functions()["extremes"](address(keys), keys.size))
    return as_float(_unflip(hi)), as_float(_unflip(lo)), hi > INF or lo < NEG_INF ^ ABS


def masked_rows(keys, row: int) -> tuple[float, int]:
    """(the smallest value that is not -inf, or 0.0 if none; how many rows of ``row`` values are
    -inf only) of finite or -inf f32 values given as their int32 bits, rows one after another."""
    keys = np.ascontiguousarray(keys)
    whole, lo = _split(functions()["masked_rows"](address(keys), keys.size, row))
    return (0.0 if lo == INT_MAX else as_float(_unflip(lo))), whole


def doubt(mean, var) -> bool:
    """Whether any row's statistics leave it in doubt (``normalization.may_be_constant``, in f32)."""
    mean, var = np.ascontiguousarray(mean), np.ascontiguousarray(var)
    return functions()["doubt"](address(mean), address(var), mean.size) > 0
