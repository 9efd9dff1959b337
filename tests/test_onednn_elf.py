"""The cached machine code of ``_llvm.py`` loaded without LLVM (``backends/onednn/_elf.py``): the
functions compute what MCJIT's do, and an object the loader does not take (another machine, an
external symbol, a missing function, not ELF) is refused, and compile_module then compiles the
module again."""
import ctypes
import os
import struct

import numpy as np
import pytest

from polyeng.backends.onednn import _elf, _llvm

ir = pytest.importorskip("llvmlite.ir", reason="llvmlite is one of polyeng's dependencies")

F64 = ctypes.c_double
SIGNATURES = {"weighted": (F64, [ctypes.c_uint64, ctypes.c_int64]), "clamp": (ctypes.c_int64, [ctypes.c_int64])}


def _module(name="polyeng_test_elf", external=False):
    """weighted(address, n): the sum of a[i] * (i % 3 + 0.5) over the n doubles at address (a
    loop LLVM vectorises, with constants in a pool); clamp(v): v limited to [-7, 7], or v plus
    the C library's getpid() with ``external``."""
    module = ir.Module(name=name)
    i64, f64 = ir.IntType(64), ir.DoubleType()
    fn = ir.Function(module, ir.FunctionType(f64, [i64, i64]), name="weighted")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    total = _llvm.variable(b, f64, f64(0.0))
    base = b.inttoptr(fn.args[0], f64.as_pointer())

    def body(b, i):
        value = b.load(b.gep(base, [i]))
        weight = b.fadd(b.uitofp(b.urem(i, i64(3)), f64), f64(0.5))
        b.store(b.fadd(b.load(total), b.fmul(value, weight)), total)
    _llvm.loop(b, fn, i64(0), fn.args[1], body)
    b.ret(b.load(total))
    fn = ir.Function(module, ir.FunctionType(i64, [i64]), name="clamp")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = fn.args[0]
    if external:
        getpid = ir.Function(module, ir.FunctionType(ir.IntType(32), []), name="getpid")
        b.ret(b.add(v, b.sext(b.call(getpid, []), i64)))
    else:
        low = b.select(b.icmp_signed("<", v, i64(-7)), i64(-7), v)
        b.ret(b.select(b.icmp_signed(">", low, i64(7)), i64(7), low))
    return module


def _weighted(a):
    return float(np.sum(a * (np.arange(a.size) % 3 + 0.5)))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "polyeng" / "compiled"


def _check(functions):
    a = np.random.default_rng(0).standard_normal(1001)
    assert functions["weighted"](a.ctypes.data, a.size) == pytest.approx(_weighted(a), rel=1e-12)
    assert functions["weighted"](a.ctypes.data, 0) == 0.0
    assert [functions["clamp"](v) for v in (-100, -7, 3, 7, 9)] == [-7, -7, 3, 7, 7]


def test_the_cached_object_loads_without_llvm_and_computes_what_mcjit_does(cache, monkeypatch):
    compiled = _llvm.compile_module(_module(), SIGNATURES)   # compiled by MCJIT, written to the cache
    _check(compiled)
    [path] = cache.glob("*.o")
    data = path.read_bytes()
    loaded = _elf.load(data, SIGNATURES)
    _check(loaded)
    a = np.linspace(-3, 3, 77)
    assert loaded["weighted"](a.ctypes.data, a.size) == compiled["weighted"](a.ctypes.data, a.size)
    # compile_module's second call takes the cached object through the loader: MCJIT is not asked
    monkeypatch.setattr(_llvm, "_compile", lambda *args: pytest.fail("compiled again"))
    _check(_llvm.compile_module(_module(), SIGNATURES))


def test_an_object_with_an_external_symbol_is_refused_and_compiled_again(cache):
    compiled = _llvm.compile_module(_module("polyeng_test_elf_external", external=True), SIGNATURES)
    assert compiled["clamp"](-100) == os.getpid() - 100   # getpid, found by MCJIT
    [path] = cache.glob("*.o")
    with pytest.raises(_elf.Unloadable, match="getpid"):
        _elf.load(path.read_bytes(), SIGNATURES)
    again = _llvm.compile_module(_module("polyeng_test_elf_external", external=True), SIGNATURES)
    assert again["clamp"](3) == os.getpid() + 3


def test_objects_the_loader_does_not_take_are_refused_naming_why(cache):
    _llvm.compile_module(_module(), SIGNATURES)
    [path] = cache.glob("*.o")
    data = bytearray(path.read_bytes())
    with pytest.raises(_elf.Unloadable, match="no function missing"):
        _elf.load(bytes(data), {**SIGNATURES, "missing": (None, [])})
    other = bytearray(data)
    struct.pack_into("<H", other, 18, 183)   # e_machine: AArch64
    with pytest.raises(_elf.Unloadable, match="machine 183"):
        _elf.load(bytes(other), SIGNATURES)
    constructors = bytearray(data)   # a section of constructors to run: a linker's work
    e_shoff = struct.unpack_from("<Q", data, 40)[0]
    index = next(i for i, s in enumerate(_elf._sections(bytes(data))) if s["size"] and s["flags"] & 0x4)   # code
    struct.pack_into("<I", constructors, e_shoff + index * 64 + 4, 14)   # sh_type: SHT_INIT_ARRAY
    with pytest.raises(_elf.Unloadable, match="needs a linker's work"):
        _elf.load(bytes(constructors), SIGNATURES)
    malformed = bytearray(data)   # a relocation that writes past its section: refused, not raised as is
    sections = _elf._sections(bytes(data))
    rela = next(s for s in sections if s["type"] == _elf.SHT_RELA and s["size"] and sections[s["info"]]["flags"] & 0x4)
    struct.pack_into("<Q", malformed, rela["offset"], 1 << 40)
    with pytest.raises(_elf.Unloadable, match="malformed"):
        _elf.load(bytes(malformed), SIGNATURES)
    with pytest.raises(_elf.Unloadable, match="not a 64-bit"):
        _elf.load(b"not an object", SIGNATURES)
    with pytest.raises(_elf.Unloadable, match="truncated"):
        _elf.load(bytes(data[:200]), SIGNATURES)


def test_a_damaged_cache_file_is_compiled_again(cache):
    _llvm.compile_module(_module(), SIGNATURES)
    [path] = cache.glob("*.o")
    path.write_bytes(b"\x7fELF damaged")
    _check(_llvm.compile_module(_module(), SIGNATURES))
