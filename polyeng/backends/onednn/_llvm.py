"""Small LLVM IR modules compiled with llvmlite into ctypes functions: the oneDNN programs' loop
(``_native_loops.py``), their guards' scans (``_scan_loops.py``), and NUMBA's recurrent loops'
small product (``backends/numba/_small_gemm.py``).

Both are a few loops each, so they are written as IR here rather than compiled by numba, whose
first function in a process sets up its typing (0.3-0.4 s) and holds about 50 MB beside its
import's 64 MB. A module is optimised for this CPU (loops vectorised) where llvmlite has LLVM's
new pass manager (0.44 and later) and compiled unoptimised otherwise. A ctypes function releases
the GIL while it runs.

The machine code is kept in polyeng's cache folder (``compiled/`` under ``XDG_CACHE_HOME`` or
``~/.cache``, by a digest of the IR, the CPU's model and flags, and llvmlite's version, which
fixes its LLVM's), written under a temporary name and renamed into place: a later process loads
it with ``_elf.py``, without importing LLVM at all (llvmlite's library held about 40 MB of the
process's memory, and 20 MB more with both modules loaded through MCJIT), instead of optimising
and compiling again (the scans took 55-65 ms to optimise and compile, a process's CNN run 50 ms).
A folder it cannot write to only costs that time; a file the loader does not take (damaged, or
not made here) is compiled again and written anew.
"""
from __future__ import annotations

import ctypes
import pathlib
import platform
import threading

_kept: list = []   # the execution engines: their code lives as long as the process
_lock = threading.Lock()   # one module compiled at a time: LLVM's set-up is not made to run twice at once


def variable(b, kind, value):
    """A stack slot of ``kind`` holding ``value``, made in the function's entry block (where
    LLVM's passes turn it into a register)."""
    with b.goto_entry_block():
        slot = b.alloca(kind)
    b.store(value, slot)
    return slot


def loop(b, fn, first, stop, body, step=None):
    """``for i in range(first, stop, step): body(b, i)`` with i64 bounds (``step`` default 1);
    ``body`` may leave through its own returns."""
    slot = variable(b, first.type, first)
    test, inner, done = (fn.append_basic_block(n) for n in ("test", "body", "done"))
    b.branch(test)
    b.position_at_end(test)
    i = b.load(slot)
    b.cbranch(b.icmp_signed("<", i, stop), inner, done)
    b.position_at_end(inner)
    body(b, i)
    b.store(b.add(i, step if step is not None else first.type(1)), slot)
    b.branch(test)
    b.position_at_end(done)


class Builder:
    """A module of functions whose arguments are all i64 (addresses and counts), with what both
    modules' builders use: typed constants, and memory read and written through a GEP of an
    address (which LLVM's loop analysis follows, where an ``inttoptr`` of base + offset leaves a
    loop unvectorised)."""

    def __init__(self, ir, name: str):
        self.ir = ir
        self.i1, self.i32, self.i64, self.f32 = ir.IntType(1), ir.IntType(32), ir.IntType(64), ir.FloatType()
        self.module = ir.Module(name=name)

    def const(self, value, kind=None):
        """``value`` as a constant of ``kind`` (i64 by default)."""
        return self.ir.Constant(kind or self.i64, value)

    def function(self, name: str, result, count: int):
        """(the function ``name`` of ``count`` i64 arguments returning ``result``, None for void;
        a builder at its entry)."""
        fn = self.ir.Function(self.module, self.ir.FunctionType(result or self.ir.VoidType(), [self.i64] * count),
                              name=name)
        return fn, self.ir.IRBuilder(fn.append_basic_block("entry"))

    def pointer(self, b, base, index, kind=None):
        """The address of element ``index`` (an i64 value or a Python int) of ``kind`` (i64 by
        default) at the address ``base``."""
        if isinstance(index, int):
            index = self.const(index)
        return b.gep(b.inttoptr(base, (kind or self.i64).as_pointer()), [index], inbounds=True)

    def load(self, b, base, index, kind=None):
        return b.load(self.pointer(b, base, index, kind))

    def store(self, b, value, base, index):
        b.store(value, self.pointer(b, base, index, value.type))


def _machine(llvm):
    try:
        llvm.initialize()   # wanted before llvmlite 0.45; later ones initialise themselves and refuse it
    except Exception:
        pass
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3)


def _optimise(llvm, module, machine) -> None:
    if not hasattr(llvm, "create_pass_builder"):
        return
    options = llvm.create_pipeline_tuning_options(3)
    options.loop_vectorization = options.slp_vectorization = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)


def cache_folder() -> pathlib.Path:
    """Where the compiled machine code is kept: ``compiled`` in polyeng's cache folder."""
    from ...models.export_cache import default_folder
    return default_folder() / "compiled"


def _cpu() -> str:
    """What the machine code was made for: /proc/cpuinfo's model and flags (the CPU LLVM tunes for
    and the instructions it may use), else LLVM's own names for them."""
    from ._fpmath import cpuinfo
    flags = cpuinfo("flags")
    if flags:
        return f"{platform.machine()} {cpuinfo('model name')} {flags}"
    from llvmlite import binding as llvm
    return f"{llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}"


def _cache_path(text: str, optimise: bool, stem: str) -> pathlib.Path:
    """The file of ``text``'s machine code: by a digest of the IR, the CPU, and llvmlite's version
    (which fixes the LLVM it bundles), read without loading LLVM."""
    import llvmlite
    parts = [text, _cpu(), llvmlite.__version__, str(optimise)]
    from ...models.export_cache import blake2b
    digest = blake2b("\n".join(parts).encode(), digest_size=8).hexdigest()
    return cache_folder() / f"{stem}-{digest}.o"


def _read(path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _write(path, data: bytes) -> None:
    from ...models.export_cache import write_file
    write_file(path, data)   # a folder it cannot write to: compiled again next time


def compile_module(ir_module, signatures: dict, optimise: bool = True) -> dict:
    """name -> ctypes function of each of ``ir_module``'s functions named in ``signatures``
    (name -> (ctypes result type or None, [ctypes argument types])); ``optimise``: run LLVM's
    optimisation passes first (about 25 ms for a few loops; worth it where the loops are long).
    The machine code comes from the cache folder where a process made it before, loaded by
    ``_elf.py`` without LLVM where it can be."""
    text = str(ir_module)
    path = _cache_path(text, optimise, ir_module.name)
    kept = _read(path)
    if kept is not None:
        from . import _elf
        try:
            return _elf.load(kept, signatures)
        except (_elf.Unloadable, OSError):
            pass   # damaged, or not an object the loader takes: compiled again (and written anew)
    from llvmlite import binding as llvm
    with _lock:
        return _compile(llvm, text, path, signatures, optimise)


def _compile(llvm, text: str, path, signatures: dict, optimise: bool) -> dict:
    machine = _machine(llvm)
    module = llvm.parse_assembly(text)
    module.verify()
    if optimise:
        _optimise(llvm, module, machine)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.set_object_cache(lambda _module, data: _write(path, data), lambda _module: None)
    engine.finalize_object()
    _kept.append((engine, module))
    return {name: ctypes.CFUNCTYPE(result, *arguments)(engine.get_function_address(name))
            for name, (result, arguments) in signatures.items()}
