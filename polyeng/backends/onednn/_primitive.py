"""oneDNN primitives as Python objects: memory descriptors of numpy arrays, attributes (fp math
mode, post-ops), primitives with their memory objects, and the bounded primitive cache.

- ``desc(shape, dtype, strides)`` describes an array (strides in elements; a zero stride is a
  broadcast); ``desc_any`` lets the primitive choose the layout (oneDNN's ``format_tag::any``).
- ``Primitive(create, ...)`` owns a primitive descriptor and its primitive; ``run(args)`` executes
  it on this thread's stream with numpy arrays by ``DNNL_ARG_*``. Its memory objects are made once
  per argument and given each call's data pointer (a ``set_data_handle``, not a ``memory_create``).
- ``cached(key, build)``: the primitive for a key (op, shapes, strides, dtypes, attributes and the
  fp math mode), built once. The cache is bounded (``MAX_PRIMITIVES``, least recently used out).
"""
from __future__ import annotations

import collections
import ctypes
import threading
from time import perf_counter

import ml_dtypes
import numpy as np

from . import _constants as C
from ...engine.thread_trials import Trials
from ...engine.threads import available_cores, get_num_threads
from .._address import address
from ._lib import ExecArg, OneDNNError, call, dims, engine, lib, new, set_threads, stream

MAX_PRIMITIVES = 1024

DATA_TYPE = {np.dtype(np.float32): C.F32, np.dtype(ml_dtypes.bfloat16): C.BF16, np.dtype(np.float16): C.F16,
             np.dtype(np.int32): C.S32, np.dtype(np.int8): C.S8, np.dtype(np.uint8): C.U8}
FP_MATH = {"f32": C.FPMATH_MODE_STRICT, "bf16": C.FPMATH_MODE_BF16, "f16": C.FPMATH_MODE_F16,
           "tf32": C.FPMATH_MODE_TF32}


class _Described:
    """A ``dnnl_memory_desc_t`` handle with what callers ask of it."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle: int):
        self.handle = handle

    @property
    def size(self) -> int:
        return lib().dnnl_memory_desc_get_size(self.handle)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Described) and bool(lib().dnnl_memory_desc_equal(self.handle, other.handle))

    __hash__ = object.__hash__


class Borrowed(_Described):
    """A descriptor a primitive owns (``query_md``): nothing to free, so no ``__del__`` (code in a
    finaliser swallows a KeyboardInterrupt that lands in it)."""

    __slots__ = ()


class Desc(_Described):
    """An owned ``dnnl_memory_desc_t``, destroyed with the object (made when a primitive is built)."""

    __slots__ = ()

    def __init__(self, handle: int, owned: bool = True):
        if not owned:
            raise TypeError("a borrowed descriptor is a Borrowed")
        super().__init__(handle)

    def __del__(self):
        if self.handle:
            try:
                lib().dnnl_memory_desc_destroy(self.handle)
            except Exception:   # interpreter shutdown
                pass


def data_type(dtype) -> int:
    try:
        return DATA_TYPE[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"oneDNN has no data type for {np.dtype(dtype)}") from None


def c_strides(shape) -> tuple:
    """Row-major strides of ``shape``, in elements (a zero-size dimension counts as one)."""
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(int(s), 1)
    return tuple(reversed(out))


def desc(shape, dtype, strides=None) -> Desc:
    """A plain layout of ``shape``: ``strides`` in elements (row-major when None)."""
    shape = tuple(int(s) for s in shape) or (1,)
    strides = tuple(int(s) for s in (c_strides(shape) if strides is None else strides)) or (1,)
    return Desc(new("dnnl_memory_desc_create_with_strides", len(shape), dims(shape), data_type(dtype), dims(strides)))


def desc_of(a: np.ndarray, shape=None) -> Desc:
    """The descriptor of array ``a`` as it lies in memory (``shape``: read it as this shape instead,
    row-major; ``a`` must then be C-contiguous)."""
    if shape is not None:
        return desc(shape, a.dtype)
    item = a.itemsize
    return desc(a.shape, a.dtype, tuple(s // item for s in a.strides))


def desc_any(shape, dtype) -> Desc:
    shape = tuple(int(s) for s in shape)
    return Desc(new("dnnl_memory_desc_create_with_tag", len(shape), dims(shape), data_type(dtype), C.FORMAT_TAG_ANY))


def elements_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


class Attr:
    """A ``dnnl_primitive_attr_t``: the fp math mode (``compute``: f32, bf16, f16, tf32) and
    post-ops (``("eltwise", alg, alpha, beta)``, ``("binary", alg, Desc)`` or ``("sum",)``: the
    result added to what the destination holds)."""

    def __init__(self, compute: str = "f32", post_ops=()):
        self.handle = new("dnnl_primitive_attr_create")
        call("dnnl_primitive_attr_set_fpmath_mode", self.handle, FP_MATH[compute])
        call("dnnl_primitive_attr_set_scratchpad_mode", self.handle, C.SCRATCHPAD_MODE_USER)
        self.post_ops = tuple(post_ops)
        if post_ops:
            ops = new("dnnl_post_ops_create")
            try:
                for op in post_ops:
                    if op[0] == "eltwise":
                        call("dnnl_post_ops_append_eltwise", ops, op[1], float(op[2]), float(op[3]))
                    elif op[0] == "sum":   # scale 1, no zero point, the destination's own type
                        call("dnnl_post_ops_append_sum", ops, 1.0, 0, C.DATA_TYPE_UNDEF)
                    else:
                        call("dnnl_post_ops_append_binary", ops, op[1], op[2].handle)
                call("dnnl_primitive_attr_set_post_ops", self.handle, ops)
            finally:
                lib().dnnl_post_ops_destroy(ops)

    def __del__(self):
        try:
            lib().dnnl_primitive_attr_destroy(self.handle)
        except Exception:
            pass


class Primitive:
    """A primitive and its descriptor, made by ``create(pd_pointer, engine, *args)``; ``keep`` holds
    the descriptors and attributes the primitive descriptor was made from."""

    def __init__(self, create: str, *args, keep=()):
        # every create function takes the attributes last: the scratchpad becomes the caller's
        args = args[:-1] + (_user_scratchpad(args[-1]),)
        self._made(lambda: new(create, engine(), *args), keep, False)

    def _made(self, make_pd, keep, is_reorder):
        # oneDNN sizes a primitive's scratch and work split for the OpenMP threads in force when it
        # is created, and must not run on more: create with the most it will ever be given. Some
        # implementations (the gemm convolution, reorders) also start that many threads on every
        # run whatever the count in force, so a run on fewer threads takes a variant made for them
        # (``_variant``)
        self.threads = creation_threads()
        self._make_pd = make_pd
        self._variants: dict = {}      # threads -> (handle, pd, scratch bytes), or None where it differs
        self.pd = make_pd()
        try:
            self.handle = new("dnnl_primitive_create", self.pd)
        except Exception:
            lib().dnnl_primitive_desc_destroy(self.pd)
            raise
        self.keep = keep
        self._memories: dict = {}      # arg -> dnnl_memory_t made on first use
        self._bound: dict = {}         # argument keys -> (packed ExecArg array, memory objects)
        self._pointers: dict = {}      # arg -> the data pointer its memory object holds
        self._lock = threading.Lock()
        self.is_reorder = is_reorder
        self.scratch = lib().dnnl_memory_desc_get_size(lib().dnnl_primitive_desc_query_md(
            self.pd, C.QUERY_SCRATCHPAD_MD, 0))
        return self

    @property
    def impl(self) -> str:
        """oneDNN's name of the implementation it chose (``brg:avx512_core_amx``, ``jit:uni`` ...)."""
        name = self.__dict__.get("_impl")
        if name is None:
            text = ctypes.c_char_p()
            call("dnnl_primitive_desc_query", self.pd, C.QUERY_IMPL_INFO_STR, 0, ctypes.byref(text))
            name = self.__dict__["_impl"] = (text.value or b"").decode()
        return name

    def md(self, query: int, index: int = 0) -> Desc:
        """A descriptor the primitive chose (``QUERY_WEIGHTS_MD`` and so on), owned by the primitive."""
        return Borrowed(lib().dnnl_primitive_desc_query_md(self.pd, query, index))

    def arg_md(self, arg: int) -> Borrowed:
        return Borrowed(lib().dnnl_primitive_desc_query_md(self.pd, C.QUERY_EXEC_ARG_MD, arg))

    def run(self, args: dict, threads: int) -> None:
        """Execute with ``args``: ``DNNL_ARG_*`` -> numpy array laid out as the primitive's descriptor
        of that argument says (the caller made it so). Blocks until done."""
        n = budget = min(threads, self.threads)
        timed = False
        if n > 1:   # the budget or one thread, whichever its first calls ran faster on
            n, timed = trials.choose((id(self), n), n)
        handle, scratch = self.handle, self.scratch
        if n != self.threads and use_variants:
            variant = self._variants.get(n, _MISSING)
            if variant is _MISSING:
                variant = self._variant(n, args)
            if variant is not None:
                handle, _, scratch = variant
        if scratch:   # user-managed scratchpad: this thread's own buffer
            args = dict(args)
            args[C.ARG_SCRATCHPAD] = scratch_buffer(scratch)
        l = lib()
        if self._lock.acquire(blocking=False):
            try:   # this primitive's own memory objects, bound once per set of arguments
                keys = tuple(args)
                bound = self._bound.get(keys)
                if bound is None:
                    bound = self._bound[keys] = self._bind(keys, l)
                packed, memories = bound
                pointers = self._pointers   # per argument (its memory object), whatever the binding
                for arg, memory, array in zip(keys, memories, args.values()):
                    pointer = address(array)
                    if pointers.get(arg) != pointer:   # a constant's, the scratch's: set once
                        l.dnnl_memory_set_data_handle(memory, pointer)
                        pointers[arg] = pointer
                if timed:
                    began = perf_counter()
                    self._execute(l, handle, n, len(keys), packed)
                    trials.record((id(self), budget), budget, n, perf_counter() - began)
                else:
                    self._execute(l, handle, n, len(keys), packed)
            finally:
                self._lock.release()
            return
        # another thread runs this primitive now: memory objects of this call's own
        count = len(args)
        packed = (ExecArg * count)()
        fresh = []
        try:
            for i, (arg, array) in enumerate(args.items()):
                memory = new("dnnl_memory_create", l.dnnl_primitive_desc_query_md(
                    self.pd, C.QUERY_EXEC_ARG_MD, arg), engine(), None)
                fresh.append(memory)
                l.dnnl_memory_set_data_handle(memory, address(array))
                packed[i].arg, packed[i].memory = arg, memory
            self._execute(l, handle, n, count, packed)
        finally:
            for memory in fresh:
                l.dnnl_memory_destroy(memory)

    def _bind(self, keys: tuple, l):
        """(the packed argument array, the memory objects) for the arguments ``keys``."""
        packed = (ExecArg * len(keys))()
        memories = []
        for i, arg in enumerate(keys):
            memory = self._memories.get(arg)
            if memory is None:
                memory = self._memories[arg] = new("dnnl_memory_create", l.dnnl_primitive_desc_query_md(
                    self.pd, C.QUERY_EXEC_ARG_MD, arg), engine(), None)
            memories.append(memory)
            packed[i].arg, packed[i].memory = arg, memory
        return packed, memories

    def _execute(self, l, handle, n: int, count: int, packed) -> None:
        set_threads(n)
        s = stream()
        status = l.dnnl_primitive_execute(handle, s, count, packed)
        if status != C.SUCCESS:
            raise OneDNNError("primitive execution", status)
        l.dnnl_stream_wait(s)
        if not self.is_reorder:
            _last.primitive = self

    def _variant(self, n: int, args: dict):
        """The primitive made for ``n`` threads, when oneDNN chose the same implementation and the
        same layout of every argument in ``args`` for it (the memory objects, and weights packed for
        this primitive, then serve both), else None (this one runs, on at most ``n`` threads)."""
        with _variants_lock:
            if n in self._variants:
                return self._variants[n]
            found, pd = None, None
            l = lib()
            try:
                set_threads(n)
                pd = self._make_pd()
                text = ctypes.c_char_p()
                call("dnnl_primitive_desc_query", pd, C.QUERY_IMPL_INFO_STR, 0, ctypes.byref(text))
                same = (text.value or b"").decode() == self.impl and all(
                    l.dnnl_memory_desc_equal(l.dnnl_primitive_desc_query_md(pd, C.QUERY_EXEC_ARG_MD, arg),
                                             l.dnnl_primitive_desc_query_md(self.pd, C.QUERY_EXEC_ARG_MD, arg))
                    for arg in args)
                if same:
                    handle = new("dnnl_primitive_create", pd)
                    scratch = l.dnnl_memory_desc_get_size(l.dnnl_primitive_desc_query_md(pd, C.QUERY_SCRATCHPAD_MD, 0))
                    found, pd = (handle, pd, scratch), None
            except Exception:   # no variant: this primitive serves
                found = None
            finally:
                if pd is not None:
                    l.dnnl_primitive_desc_destroy(pd)
            self._variants[n] = found
            return found

    def __del__(self):
        try:
            l = lib()
            for memory in self._memories.values():
                l.dnnl_memory_destroy(memory)
            for variant in self.__dict__.get("_variants", {}).values():
                if variant is not None:
                    l.dnnl_primitive_destroy(variant[0])
                    l.dnnl_primitive_desc_destroy(variant[1])
            l.dnnl_primitive_destroy(self.handle)
            l.dnnl_primitive_desc_destroy(self.pd)
        except Exception:
            pass


_MISSING = object()
trials = Trials()   # per primitive and budget: its first calls tell whether one thread is faster
use_variants = True   # runs on fewer threads than a primitive was made for take a variant made for them
_variants_lock = threading.Lock()
_default_attr: list = []
_scratch = threading.local()


def _user_scratchpad(attr):
    """``attr`` (a handle, or None for the default attributes) with a user-managed scratchpad.

    With oneDNN's own (library) scratchpad, a primitive's scratch is sized in the thread that
    created it: a recurrent primitive made on one thread and run on another overran it (a crash),
    and one primitive run at once from several threads shared it (wrong products). Every primitive
    here is given this thread's scratch buffer instead (``scratch_buffer``)."""
    if attr is None:
        if not _default_attr:
            _default_attr.append(Attr())
        return _default_attr[0].handle
    call("dnnl_primitive_attr_set_scratchpad_mode", attr, C.SCRATCHPAD_MODE_USER)
    return attr


def scratch_buffer(nbytes: int) -> np.ndarray:
    """This thread's scratch buffer, grown to at least ``nbytes`` (primitives of one thread run one
    after another, so they share it)."""
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or buffer.size < nbytes:
        buffer = _scratch.buffer = aligned_empty(max(nbytes, 2 * (0 if buffer is None else buffer.size)))
    return buffer


def creation_threads() -> int:
    """Sets this thread's OpenMP count to the most threads a primitive made now may run on (polyeng's
    budget, at least the usable cores), and returns it."""
    n = max(get_num_threads(), available_cores())
    set_threads(n)
    return n


_last = threading.local()


def last_impl() -> str:
    """The implementation of the last (non-reorder) primitive this thread ran, for verbose level 2."""
    prim = getattr(_last, "primitive", None)
    return f"impl:{prim.impl}" if prim is not None else ""


class _Cache:
    def __init__(self, size: int):
        self.size = size
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key, build):
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return item
        item = build()   # outside the lock: building JIT-compiles, and another thread may build too
        with self._lock:
            self.misses += 1
            self._items[key] = item
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return item

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


cache = _Cache(MAX_PRIMITIVES)


def cached(key, build):
    """The object ``build()`` makes for ``key``, made once and kept (bounded, least recently used out)."""
    return cache.get(key, build)


def reorder(src: Desc, dst: Desc) -> Primitive:
    """A reorder from one layout (or data type) to another."""
    return Primitive.__new__(Primitive)._reorder(src, dst)


def _reorder(self, src: Desc, dst: Desc):
    attr = _user_scratchpad(None)
    return self._made(lambda: new("dnnl_reorder_primitive_desc_create", src.handle, engine(), dst.handle,
                                  engine(), attr), (src, dst), True)


Primitive._reorder = _reorder

FLOAT16 = frozenset({"bfloat16", "float16"})


def scalar_conversion(step: Primitive, source, target) -> bool:
    """Whether ``step``, a reorder from ``source`` to ``target`` values, converts to or from a 16-bit
    float in oneDNN's scalar code (``simple:*``): what oneDNN 3.2 has for bf16 without AVX-512 and
    for f16 without AVX512-FP16 (its jit reorder needs them). It costs about 100 ns an element
    (65536 bf16 -> f32 in 4.2 ms on an AMD EPYC with AVX2, where NUMBA's cast takes 0.07 ms):
    the callers leave such a conversion to the other engines, or to numpy."""
    if not step.impl.startswith("simple"):
        return False
    names = {np.dtype(source).name, np.dtype(target).name}
    return len(names) == 2 and bool(names & FLOAT16)


def aligned_empty(nbytes: int) -> np.ndarray:
    """A byte buffer of ``nbytes`` aligned to 64 bytes (what oneDNN's blocked layouts prefer)."""
    raw = np.empty(nbytes + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + nbytes]
