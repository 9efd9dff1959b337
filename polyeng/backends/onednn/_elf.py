"""Loading the machine code ``_llvm.py`` keeps in its cache folder without LLVM.

The cached file is the relocatable object MCJIT wrote for x86-64 (ELF, large code model): the
code in ``.ltext``, its constants in ``.rodata.*``, and relocations that write the absolute
addresses of those sections (``R_X86_64_64``). Loading it is laying its allocated sections out
in one mapping, writing those addresses and making the mapping executable: a few hundred
microseconds, where importing llvmlite's LLVM library to let MCJIT do the same took about 40 MB
of the process's memory and 20 MB more to load the two modules.

Only what such an object holds is taken: 64-bit little-endian x86-64 relocatable objects whose
relocations are ``R_X86_64_64``, ``R_X86_64_PC32`` or ``R_X86_64_PC64`` against symbols defined
in the object, with no constructors nor thread-local data. Anything else (another machine, an
external symbol, another relocation) raises
:class:`Unloadable`, and the caller compiles with llvmlite instead. Unwind tables (``.eh_frame``)
are not loaded: nothing unwinds through these functions.
"""
from __future__ import annotations

import ctypes
import struct

ET_REL, EM_X86_64 = 1, 62
SHT_NOBITS, SHT_RELA, SHT_SYMTAB, SHT_REL = 8, 4, 2, 9
ARRAYS = (14, 15, 16)   # SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY
SHF_ALLOC, SHF_TLS = 0x2, 0x400
SHT_X86_64_UNWIND = 0x70000001
SHN_UNDEF, SHN_LORESERVE, SHN_ABS = 0, 0xff00, 0xfff1
STT_FUNC = 2
R_X86_64_64, R_X86_64_PC32, R_X86_64_PC64 = 1, 2, 24
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
PAGE = 4096

_mapped: list = []   # (address, size) of every loaded object: its code lives as long as the process


class Unloadable(Exception):
    """An object this loader does not take (the caller compiles with llvmlite instead)."""


def _sections(data: bytes) -> list:
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise Unloadable("not a 64-bit little-endian ELF object")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_type != ET_REL or e_machine != EM_X86_64:
        raise Unloadable(f"an ELF object of type {e_type} for machine {e_machine}, not x86-64 relocatable")
    e_shoff, = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)
    if e_shentsize != 64 or e_shoff + e_shnum * 64 > len(data):
        raise Unloadable("a truncated section table")
    sections = []
    for i in range(e_shnum):
        name, kind, flags, _, offset, size, link, info, align, _ = struct.unpack_from(
            "<IIQQQQIIQQ", data, e_shoff + i * 64)
        if kind != SHT_NOBITS and offset + size > len(data):
            raise Unloadable(f"section {i} lies past the file's end")
        sections.append({"name": name, "type": kind, "flags": flags, "offset": offset, "size": size, "link": link,
                         "info": info, "align": max(align, 1)})
    strings = sections[e_shstrndx] if e_shstrndx < len(sections) else None
    for s in sections:
        s["name"] = _string(data, strings, s["name"]) if strings is not None else ""
    return sections


def _string(data: bytes, table: dict, offset: int) -> str:
    start = table["offset"] + offset
    return data[start:data.index(b"\0", start)].decode()


def _layout(sections: list) -> tuple[dict, int]:
    """section index -> offset in the mapping, for the allocated sections but unwind tables.
    Sections whose meaning needs more than a layout are refused: relocations without addends
    (REL), constructors and destructors to run, thread-local data."""
    place, size = {}, 0
    for i, s in enumerate(sections):
        if s["type"] == SHT_REL or s["type"] in ARRAYS or s["flags"] & SHF_TLS \
                or s["name"].startswith((".ctors", ".dtors")):
            raise Unloadable(f"section {s['name'] or i} (type {s['type']}) needs a linker's work")
        if s["flags"] & SHF_ALLOC and s["type"] != SHT_X86_64_UNWIND and s["name"] != ".eh_frame":
            size = -(-size // s["align"]) * s["align"]
            place[i] = size
            size += s["size"]
    return place, size


def _symbols(data: bytes, sections: list, place: dict, base: int) -> tuple[list, dict]:
    """(the address of each symbol, or None where it is in no loaded section; name -> address of
    each function)."""
    table = next((s for s in sections if s["type"] == SHT_SYMTAB), None)
    if table is None:
        raise Unloadable("no symbol table")
    names = sections[table["link"]]
    addresses, functions = [], {}
    for k in range(table["size"] // 24):
        name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, table["offset"] + k * 24)
        label = _string(data, names, name) if name else ""
        if shndx == SHN_ABS:
            address = value
        elif shndx == SHN_UNDEF or shndx >= SHN_LORESERVE or shndx not in place:
            address = None   # external, common, or in a section not loaded: refused where a relocation reads it
        else:
            address = base + place[shndx] + value
        addresses.append((label, address))
        if info & 0xf == STT_FUNC and address is not None:
            functions[label] = address
    return addresses, functions


def _relocate(image: bytearray, data: bytes, sections: list, place: dict, base: int, symbols: list) -> None:
    for s in sections:
        if s["type"] != SHT_RELA or s["info"] not in place:
            continue   # the unwind tables' relocations: not loaded
        target = place[s["info"]]
        for k in range(s["size"] // 24):
            offset, info, addend = struct.unpack_from("<QQq", data, s["offset"] + k * 24)
            kind, index = info & 0xffffffff, info >> 32
            label, address = symbols[index] if index < len(symbols) else ("?", None)
            if address is None:
                raise Unloadable(f"a relocation against symbol {label or index}, not defined in the object")
            at = target + offset
            value = address + addend
            if kind == R_X86_64_64:
                struct.pack_into("<Q", image, at, value & 0xffffffffffffffff)
            elif kind == R_X86_64_PC64:
                struct.pack_into("<q", image, at, value - (base + at))
            elif kind == R_X86_64_PC32:
                distance = value - (base + at)
                if not -(1 << 31) <= distance < (1 << 31):
                    raise Unloadable("a 32-bit relative relocation out of range")
                struct.pack_into("<i", image, at, distance)
            else:
                raise Unloadable(f"relocation type {kind}")


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                              ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.mprotect.restype, libc.mprotect.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.munmap.restype, libc.munmap.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_size_t)
    return libc


def load(data: bytes, signatures: dict) -> dict:
    """name -> ctypes function (``signatures``: name -> (result type or None, [argument types]))
    of the object ``data``, laid out in executable memory; raises :class:`Unloadable` where the
    object is not one this loader takes (a malformed one too), OSError where the memory cannot be
    mapped."""
    try:
        return _load(data, signatures)
    except (struct.error, IndexError, KeyError, ValueError) as exc:   # offsets or names past the data
        raise Unloadable(f"a malformed object ({type(exc).__name__}: {exc})") from exc


def _load(data: bytes, signatures: dict) -> dict:
    sections = _sections(data)
    place, size = _layout(sections)
    if not place:
        raise Unloadable("no allocated section")
    length = -(-size // PAGE) * PAGE
    libc = _libc()
    base = libc.mmap(None, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        symbols, functions = _symbols(data, sections, place, base)
        missing = [name for name in signatures if name not in functions]
        if missing:
            raise Unloadable(f"no function {', '.join(missing)} in the object")
        image = bytearray(size)
        for i, at in place.items():
            s = sections[i]
            if s["type"] != SHT_NOBITS:
                image[at:at + s["size"]] = data[s["offset"]:s["offset"] + s["size"]]
        _relocate(image, data, sections, place, base, symbols)
        ctypes.memmove(base, bytes(image), size)
        if libc.mprotect(base, length, PROT_READ | PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect to read and execute failed")
    except BaseException:
        libc.munmap(base, length)
        raise
    _mapped.append((base, length))
    return {name: ctypes.CFUNCTYPE(result, *arguments)(functions[name])
            for name, (result, arguments) in signatures.items()}
