"""The steps of a oneDNN program (``segment.py``) that a transformer's nodes make: ``linear`` and
``matmul`` (oneDNN's matmul; a constant weight reordered once into the layout it prefers),
``layer_norm``, ``softmax`` and ``fused_softmax`` over the last axis, ``gelu``, ``add`` and
``mul`` with a broadcast or constant operand, ``div`` by a constant, an attention's ``select``,
``upsample_nearest`` and ``upsample_bilinear2d`` (a UNet's way up), ``reshape``,
``permute_contiguous``, ``concat`` along any axis, and views: a host node's reshape, squeeze, slice or index of its input, and the
pieces of a ``split`` (``graph/segments.py`` finds them). Here too: the -0.0 probe of 16-bit reorders
(``keeps_negative_zero``) and the reorder checked with it (``sign_keeping_reorder``) that every
program step uses, convolutions' too.

Every value these steps read or make lies plain (row-major): a value a convolution left in a
blocked layout is reordered into a plain buffer first, once. A reshape, and a view that is a
contiguous part of its input, make no step: the value is the same bytes read through another
shape, from an offset. A strided view and a permutation are reorders from the source read
through strides; a permutation that only products read is not made at all: they read it through
its strides where oneDNN has fast code for that (else it is reordered first).

Post-ops: the nodes that alone read a product's result in turn become its post-ops (``chain``):
a GELU after a linear (also through a reshape or a view of the same bytes that the GELU alone
reads: the GELU's value is then the view's bytes), a mul by a scalar (oneDNN's linear eltwise
alpha * v + -0, which keeps -0), a div by a scalar constant of no zero, an add of a value made
before the product (a residual), and the mask add of a fused_softmax reading it. Each rounds as the node does (f32
only). GELU's tanh form is a post-op only where oneDNN's tanh is fast (AVX-512); elsewhere it is
a step of its own that computes it as x logistic(2u) (``tanh_gathers``). A softmax's mask is the
post-op of the product of its scores only where that product is not gemm-based
(``products_by_gemm``).

The bound of each value (see ``segment.py``): a linear's as a convolution's (input bound x the
largest sum of absolute weights into one output + the bias's); a product of two values the
bounds' product times the inner dimension; a layer norm's at most sqrt(features) x the largest
weight + the largest bias, and its input's squares must stay in range; a softmax's 1 (a mask's
rules are in ``_softmax``); GELU's its input's; add and mul of a constant with that constant's
largest magnitude. An input of the program that only softmaxes read (scores a masked fill set
to the lowest number, made before the program) may hold any finite values: the softmax
subtracts each row's largest value, and where that overflows to -inf its exp is 0, as the
nodes' is; NaN or an infinity there leaves the run to the nodes.

A layer norm writes each row's mean and variance, and a run in which a row's variance lies within
rounding of its mean's magnitude (a row of equal values may be one: polyeng gives exactly the
bias there, oneDNN may not) checks those rows, and returns None where one holds equal values:
the nodes run it (``layer_norm`` on ONEDNN checks the same rows, ``normalization.py``).
"""
from __future__ import annotations

import ctypes
import math

import ml_dtypes
import numpy as np

from . import _constants as C
from ._lib import OneDNNError
from ._primitive import Attr, Primitive, aligned_empty, c_strides, desc, desc_any, reorder

GELU = {"none": C.ELTWISE_GELU_ERF, "tanh": C.ELTWISE_GELU_TANH}
OPS = frozenset({"linear", "matmul", "layer_norm", "softmax", "fused_softmax", "gelu", "reshape",
                 "permute_contiguous", "view", "select", "upsample_nearest", "upsample_bilinear2d"})
TYPES = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16))   # the storage a program holds (``segment.TYPES``)


def unsupported(message):
    from .segment import Unsupported
    return Unsupported(message)


NEGATIVE_ZERO = {2: (np.uint16, 0x8000), 4: (np.uint32, 0x80000000)}   # the bits of -0.0: bf16, f32


def keeps_negative_zero(prim, sources, target, source, dtype, items: int) -> bool:
    """Whether ``prim``, a reorder or a concat of ``source`` values (at arguments ``sources``) into
    ``dtype`` ones (at ``target``), writes -0.0 where it reads -0.0: one run on sources of -0.0
    only, in which each of the ``items`` elements it writes must be -0.0 (at least ``items`` of the
    written buffer: a blocked layout's padding, -0.0 in the probe's sources, may be copied too, and
    an implementation that loses the sign loses it there as well). oneDNN's reorders of 16-bit
    values on a CPU without AVX-512 (``simple:any``, and the reference concat made of them) compute
    v * 1 + 0, which is +0.0 for -0.0; f32 -> f32 copies keep the bits (not probed)."""
    source, dtype = np.dtype(source), np.dtype(dtype)
    if source == dtype == TYPES[0]:
        return True
    args = {}
    kind, bits = NEGATIVE_ZERO[source.itemsize]
    for arg in sources:
        size = prim.arg_md(arg).size
        buffer = aligned_empty(max(size, 64))
        buffer[:size - size % source.itemsize].view(kind)[...] = bits
        args[arg] = buffer
    size = prim.arg_md(target).size
    out = aligned_empty(max(size, 64))
    out[...] = 0
    args[target] = out
    prim.run(args, 1)
    kind, bits = NEGATIVE_ZERO[dtype.itemsize]
    return int(np.count_nonzero(out[:size - size % dtype.itemsize].view(kind) == bits)) >= items


def sign_keeping_reorder(src, dst, dtype, items: int, what: str) -> Primitive:
    """The reorder of ``items`` ``dtype`` values from ``src`` to ``dst``, where it keeps -0.0
    (``keeps_negative_zero``; f32 always does), else Unsupported naming ``what`` it reorders and
    oneDNN's implementation."""
    step = reorder(src, dst)
    if not keeps_negative_zero(step, (C.ARG_FROM,), C.ARG_TO, dtype, dtype, items):
        raise unsupported(f"oneDNN's {np.dtype(dtype)} reorder {what} ({step.impl}) turns -0.0 into +0.0")
    return step


def plain(p, name):
    """A value holding ``name``'s elements row-major: ``name`` itself, or a reordered copy (a
    constant: its own bytes)."""
    if name not in p.md and name in p.constants:
        c = p.constants[name]
        if not isinstance(c, np.ndarray) or c.dtype not in TYPES or not 1 <= c.ndim <= 6:
            raise unsupported("a constant that is not an f32 or bf16 array of 1 to 6 dims")
        c = np.ascontiguousarray(c)
        p.keep.append(c)
        p.md[name], p.shape[name], p.dtype[name] = desc(c.shape, c.dtype), tuple(c.shape), c.dtype
        p.buffer[name] = c.reshape(-1).view(np.uint8)
        p.constant_bounds[name] = _largest(c)
    md = p._value(name)
    flat = desc(p.shape[name], p.dtype[name])
    if md == flat:
        return name
    made = ("plain", name)
    if made not in p.md:
        step = sign_keeping_reorder(md, flat, p.dtype[name], math.prod(p.shape[name]), "into a plain layout")
        p.md[made] = flat
        p.buffer[made] = aligned_empty(max(flat.size, 64))
        p.shape[made], p.dtype[made] = p.shape[name], p.dtype[name]
        p.calls.append((step, {C.ARG_FROM: p._arg(name), C.ARG_TO: p._arg(made)}, math.prod(p.shape[name])))
    return made


def as_bytes(shape, dtype, strides=None):
    """A descriptor of a value of ``shape`` and ``dtype`` read through ``strides`` (in elements;
    row-major where None): 16-bit values as pairs of bytes (a last dim of 2), which oneDNN copies
    bit for bit, where its 16-bit reorder on a CPU without AVX-512 (``simple:any``) and its
    reference concat turn -0.0 into +0.0 (the eager permute and concat kernels hand them over so
    too); other values as they are."""
    item = np.dtype(dtype).itemsize
    if item != 2:
        return desc(shape, dtype, strides)
    strides = c_strides(shape) if strides is None else strides
    return desc(tuple(shape) + (item,), np.uint8, tuple(int(s) * item for s in strides) + (1,))


def copy(shape, dtype, strides=None):
    """The reorder copying a value of ``shape`` read through ``strides`` into a plain one, 16-bit
    values as bytes (``as_bytes``)."""
    return reorder(as_bytes(shape, dtype, strides), as_bytes(shape, dtype))


def _made(p, s, name=None):
    """A plain buffer for the value ``name`` (``s.out``) of ``s``'s shape and dtype."""
    name = s.out if name is None else name
    p.md[name] = desc(s.shape, s.dtype)
    p.buffer[name] = aligned_empty(max(p.md[name].size, 64))
    return p.md[name]


def _gelu(step):
    approximate = step.attrs.get("approximate", "none")
    if approximate not in GELU:
        raise unsupported(f"gelu approximate={approximate!r}")
    return ("eltwise", GELU[approximate], 0.0, 0.0)


def tanh_gathers() -> bool:
    """Whether oneDNN's tanh reads its polynomial's coefficients with gathers here (CPUs without
    AVX-512, where it has no in-register table look-up). On an AVX2 AMD EPYC its GELU (tanh form)
    took 6.4 ns an element (a 128x32 by 32x128 product 20 us, with the GELU as post-op 95 us),
    against 0.9 ns for the same GELU as a logistic (``_gelu_as_logistic``)."""
    from ._fpmath import cpu_flags
    return "avx512f" not in cpu_flags()


def products_by_gemm() -> bool:
    """Whether oneDNN makes f32 products with its gemm-based matmul here (``gemm:jit:f32``: CPUs
    without AVX-512, where oneDNN 3.2 has no brgemm matmul for f32), which applies a binary post-op
    element by element after the product. On an AVX2 AMD EPYC an attention's scores (8x2x128x16
    by 8x2x16x128) took 195 us, 451 us with the mask's add as their post-op, and the add as a
    primitive of its own about 50 us more: there the mask is added by the softmax's step
    (``_softmax``). The other post-ops stay: taking none at all on such CPUs changed the
    transformers' runs by less than the machine's noise."""
    from ._fpmath import cpu_flags
    return "avx512f" not in cpu_flags()


def _post_op_gelu(step) -> bool:
    """Whether GELU ``step`` may be a product's post-op: the exact form, or the tanh form where
    oneDNN's tanh is fast (``tanh_gathers``); else it is a step of its own."""
    approximate = step.attrs.get("approximate", "none")
    return approximate in GELU and not (approximate == "tanh" and tanh_gathers())


# GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), is x logistic(2u)
GELU_TANH_SCALE = 2.0 * math.sqrt(2.0 / math.pi)


def _gelu_as_logistic(p, s, source):
    """GELU's tanh form as one binary primitive: x * x, then the post-ops 0.044715 v + 1, times x,
    times 2 sqrt(2 / pi), logistic, times x: x logistic(2u), the same function without a tanh
    (``tanh_gathers``). It has no cancellation where tanh(u) is near -1, and for every finite x
    no NaN: where x * x overflows, the logistic is 1 or 0 and the result x or -0, as the
    function's limits are. (primitive, arguments), or (None, None) where oneDNN has no fast binary
    with these post-ops for the storage (bf16 without AVX-512 answers unimplemented)."""
    md = desc(s.shape, s.dtype)
    post = [("eltwise", C.ELTWISE_LINEAR, 0.044715, 1.0), ("binary", C.BINARY_MUL, md),
            ("eltwise", C.ELTWISE_LINEAR, GELU_TANH_SCALE, 0.0), ("eltwise", C.ELTWISE_LOGISTIC, 0.0, 0.0),
            ("binary", C.BINARY_MUL, md)]
    attr = Attr("f32", post)
    try:
        prim = Primitive("dnnl_binary_primitive_desc_create", C.BINARY_MUL, md.handle, md.handle, md.handle,
                         attr.handle, keep=(md, attr))
    except OneDNNError:
        return None, None
    if prim.impl.startswith("ref"):
        return None, None
    x = p._arg(source)
    args = {C.ARG_SRC: x, C.ARG_SRC_1: x}
    for index, op in enumerate(post):
        if op[0] == "binary":
            args[C.ARG_ATTR_MULTIPLE_POST_OP_BASE * (index + 1) | C.ARG_SRC_1] = x
    return prim, args


def _padded(shape, rank) -> tuple:
    """``shape`` with leading dims of 1 up to ``rank`` (numpy's broadcasting, spelled out for oneDNN)."""
    return (1,) * (rank - len(shape)) + tuple(shape)


TINY = float(np.finfo(np.float32).tiny)   # bf16's smallest normal too


def _largest(a) -> float:
    return float(np.max(np.abs(a.astype(np.float64)))) if a.size else 0.0


def build(p, s, after, constants):
    """Adds the primitives of step ``s`` (and of ``after``, the steps ``chain`` folds into a
    product as its post-ops) to program ``p``."""
    op = s.op
    if op == "reshape":
        x = s.reads["x"]
        source = plain(p, x)
        p.alias[s.out] = source
        p.md[s.out] = desc(s.shape, s.dtype)
        p.bound_steps.append(("same", s.out, (x,), None))
    elif op == "view":   # a host node's view of its input: the same bytes, or a copy of a strided part
        x = s.reads["x"]
        source = plain(p, x)
        offset, strides = s.attrs["offset"], s.attrs["strides"]
        if strides is None:
            p.alias[s.out], p.md[s.out] = source, desc(s.shape, s.dtype)
            if offset:
                p.offset[s.out] = offset
                p.dtype[s.out] = s.dtype
                p._arg(s.out)   # a part of an input: Unsupported
        else:
            part = ("part", s.out)
            p.alias[part], p.md[part], p.dtype[part] = source, desc(s.shape, s.dtype, strides), s.dtype
            if offset:
                p.offset[part] = offset
            _made(p, s)
            p.calls.append((copy(s.shape, s.dtype, strides), {C.ARG_FROM: p._arg(part), C.ARG_TO: p._arg(s.out)},
                            math.prod(s.shape)))
        p.bound_steps.append(("same", s.out, (x,), None))
    elif op == "permute_contiguous":
        x = s.reads["x"]
        source = plain(p, x)
        dims = [int(d) % len(p.shape[x]) for d in s.attrs["dims"]]
        strides = c_strides(p.shape[x])
        view = desc(s.shape, s.dtype, [strides[d] for d in dims])
        readers = p.readers.get(s.out, [])
        if readers and s.out not in p.outputs and all(r.op == "matmul" and r.reads.get("b") not in p.constants
                                                       for r in readers):
            # products read it through its strides (``_product``; reordered there where they cannot)
            p.alias[s.out], p.md[s.out] = source, view
            p.lazy.add(s.out)
            p.bound_steps.append(("same", s.out, (x,), None))
            return
        _made(p, s)
        p.calls.append((copy(s.shape, s.dtype, [strides[d] for d in dims]),
                        {C.ARG_FROM: p._arg(source), C.ARG_TO: p._arg(s.out)}, math.prod(s.shape)))
        p.bound_steps.append(("same", s.out, (x,), None))
    elif op in ("linear", "matmul"):
        _product(p, s, after, constants)
    elif op == "layer_norm":
        _layer_norm(p, s, constants)
    elif op in ("softmax", "fused_softmax"):
        _softmax(p, s)
    elif op == "select":
        select(p, s, constants)
    elif op in ("upsample_nearest", "upsample_bilinear2d"):
        resample(p, s)
    elif op == "gelu":
        x = s.reads["x"]
        source = plain(p, x)
        _, alg, alpha, beta = _gelu(s)
        prim, args = _gelu_as_logistic(p, s, source) if alg == C.ELTWISE_GELU_TANH and tanh_gathers() \
            else (None, None)
        if prim is None:
            md = desc(s.shape, s.dtype)
            prim = Primitive("dnnl_eltwise_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg, md.handle,
                             md.handle, alpha, beta, None, keep=(md,))
            args = {C.ARG_SRC: p._arg(source)}
        _made(p, s)
        args[C.ARG_DST] = p._arg(s.out)
        p.calls.append((prim, args, math.prod(s.shape) * 8))
        p.bound_steps.append(("act", s.out, (x,), ("none", 0.0, 0.0)))   # |gelu(v)| <= |v|
    else:
        raise unsupported(f"{op} has no step here")


def _softmax(p, s):
    """softmax over the last axis; fused_softmax's mask added first (a binary add into a buffer of
    its own, or the post-op of the product that makes the scores). A mask may hold -inf (masked
    places) and the largest negative numbers: it is not bounded as other values are. It is a
    constant or an input of the program that only such softmaxes read, and a run needs it to hold
    no NaN nor +inf, its largest value below ``LIMIT``, no row (along the softmax's axis) of -inf
    only, and the scores' bound minus its smallest finite value short of f32's overflow. Then a
    sum is -inf only where the mask is, no row of the softmax is NaN (exp(-inf - max) is 0 in
    both), and ``nan_fill`` has nothing to replace. Otherwise ``run`` returns None and the nodes
    run."""
    x, mask = s.reads["x"], s.reads.get("mask")
    axis = int(s.attrs["axis"]) % len(s.shape)
    if axis != len(s.shape) - 1:
        raise unsupported("a softmax over an axis that is not the last (oneDNN's reference code)")
    if tuple(p.shape[x]) != s.shape:
        raise unsupported("a softmax whose scores are broadcast by the mask")
    source = plain(p, x)
    md = desc(s.shape, s.dtype)
    if mask is not None and id(s) not in p.masked:   # else the product that made x added it
        mask_md, mask_arg = _mask(p, s, mask)
        masked = ("masked", s.out)
        p.md[masked] = md
        p.buffer[masked] = aligned_empty(max(md.size, 64))
        add = Primitive("dnnl_binary_primitive_desc_create", C.BINARY_ADD, md.handle, mask_md.handle, md.handle,
                        None, keep=(md, mask_md))
        p.calls.append((add, {C.ARG_SRC: p._arg(source), C.ARG_SRC_1: mask_arg, C.ARG_DST: ("buf", p.buffer[masked])},
                        math.prod(s.shape)))
        source = masked
    prim = Primitive("dnnl_softmax_forward_primitive_desc_create", C.FORWARD_INFERENCE, C.SOFTMAX_ACCURATE,
                     md.handle, md.handle, axis, None, keep=(md,))
    _made(p, s)
    p.calls.append((prim, {C.ARG_SRC: p._arg(source), C.ARG_DST: p._arg(s.out)}, math.prod(s.shape) * 8))
    if mask is None:
        p.bound_steps.append(("act", s.out, (x,), ("sigmoid", 0.0, 0.0)))   # at most 1
    else:
        p.bound_steps.append(("masked", s.out, (x, mask), None))


def _mask(p, s, mask):
    """(descriptor, argument) of fused_softmax ``s``'s mask, a constant or an input of the program
    (see ``_softmax``)."""
    if mask in p.constants:
        c = p.constants[mask]
        if not isinstance(c, np.ndarray) or c.dtype != s.dtype or c.ndim > len(s.shape):
            raise unsupported("a softmax mask that is not a constant of the scores' dtype")
        from .segment import _mask_range
        found = _mask_range(c.astype(np.float32))
        if found is None:
            raise unsupported("a constant softmax mask holding NaN, +inf or a row of -inf")
        hi, lo = found
        c = np.ascontiguousarray(c).reshape(_padded(c.shape, len(s.shape)))
        p.keep.append(c)
        p.mask_ranges[mask] = (hi, lo)
        return desc(c.shape, c.dtype), ("buf", c)
    if mask in p.inputs and p.dtype[mask] == s.dtype and len(p.shape[mask]) <= len(s.shape):
        if any(r.op != "fused_softmax" or r.reads.get("mask") != mask or r.reads.get("x") == mask
               for r in p.readers.get(mask, ())):
            raise unsupported("a softmax mask that other steps read")
        p.masks.add(mask)
        return desc(_padded(p.shape[mask], len(s.shape)), s.dtype), p._arg(mask)
    raise unsupported("a softmax mask made inside the program")


def chain(p, s, i, steps, constants) -> list:
    """The steps that a product (``s``, the ``i``-th step) takes as its post-ops, in order: each
    alone reads the value before it (no output of the program): a GELU after a linear (or after a
    pure view of it, which stays a step: ``_gelu_after_view``; nothing follows it), a mul or a
    div by a scalar constant, an add of a value made before the product (or a constant) of the result's
    shape, and, last, the mask add of a fused_softmax reading it (the softmax stays a step of its
    own). Every post-op rounds as the node does: f32 products only."""
    if s.dtype != np.float32:
        return []
    made_at = {st.out: k for k, st in enumerate(steps)}
    two_values = s.op == "matmul" and s.reads.get("b") not in constants
    out, items = s.out, []

    def ready(name):   # made before the product, or from outside
        return name in constants or made_at.get(name, -1) < i

    def other(r):
        a, b = r.reads.get("a"), r.reads.get("b")
        return b if a == out else a if b == out else None
    while True:
        nxt = p.readers.get(out, [])
        if len(nxt) != 1 or out in p.outputs or nxt[0].dtype != s.dtype:
            break
        r = nxt[0]
        if r.op == "gelu" and not two_values and not items and _post_op_gelu(r):
            items.append(r)
        elif r.op == "mul" and other(r) in constants and np.size(constants[other(r)]) == 1 \
                and np.asarray(constants[other(r)]).dtype == s.dtype and r.shape == s.shape:
            items.append(r)
        elif r.op == "div" and r.reads.get("a") == out and r.reads.get("b") in constants \
                and np.size(constants[r.reads["b"]]) == 1 and divisor(constants[r.reads["b"]]) is not None \
                and constants[r.reads["b"]].dtype == s.dtype and r.shape == s.shape:
            items.append(r)
        elif r.op == "add" and other(r) is not None and other(r) != out and ready(other(r)) and r.shape == s.shape \
                and _shape_of(p, other(r)) == r.shape:
            items.append(r)
        elif r.op == "fused_softmax" and two_values and r.reads.get("x") == out and r.reads.get("mask") is not None \
                and ready(r.reads["mask"]) and r.shape == s.shape and not products_by_gemm():
            items.append(r)
            break
        elif not items and not two_values and _gelu_after_view(p, r):
            items += [r, p.readers[r.out][0]]   # the view stays a step: ``_post_ops``
            break
        else:
            break
        out = r.out
    return items


def _pure_view(step) -> bool:
    """A reshape, or a host node's view of the same bytes from the first: its value is its
    input's bytes (``build``)."""
    return step.op == "reshape" or (step.op == "view" and not step.attrs.get("offset")
                                    and step.attrs.get("strides") is None)


def _gelu_after_view(p, view) -> bool:
    """Whether ``view`` is a pure view, not an output of the program, that a GELU alone reads
    (the GELU's value may be an output: it is the view's bytes). GPT-2's MLP reshapes its first
    linear's result before the GELU; the GELU commutes with the view and becomes the product's
    post-op (``_post_ops``)."""
    if not _pure_view(view) or view.out in p.outputs:
        return False
    readers = p.readers.get(view.out, [])
    if len(readers) != 1:
        return False
    g = readers[0]
    return g.op == "gelu" and g.dtype == view.dtype and g.shape == view.shape and _post_op_gelu(g)


def _shape_of(p, name):
    if name in p.constants:
        return tuple(np.shape(p.constants[name]))
    return tuple(p.shape.get(name) or ())


def _post_ops(p, s, after, rows):
    """The post-ops of ``after`` (``chain``) on a product of ``s``'s shape, read as ``rows`` rows
    where given (a linear's 2-D view): (post-op list, {arg: source}, the value the product makes)."""
    post, args, out, prev = [], {}, s.out, s.out
    view = None   # a pure view between the product and its GELU (``_gelu_after_view``)
    for r in after:
        if _pure_view(r):
            view = r
            continue
        if r.op == "gelu":
            post.append(_gelu(r))
            p.bound_steps.append(("act", r.out, (prev,), ("gelu", 0.0, 0.0)))
            if view is not None:
                # the product's bytes hold the GELU's values; the view, a step of its own, reads
                # them, and the GELU's value is the view's. The view's bound is the product's,
                # which |gelu(x)| <= |x| keeps an upper bound.
                p.alias[r.out], p.md[r.out] = view.out, desc(r.shape, r.dtype)
                return post, args, out
        elif r.op == "mul":
            name = r.reads["b"] if r.reads.get("a") == prev else r.reads["a"]
            alpha = float(np.asarray(p.constants[name]).reshape(-1)[0])
            post.append(("eltwise", C.ELTWISE_LINEAR, alpha, -0.0))   # alpha * v + -0: alpha * v, -0 kept
            p.constant_bounds[name] = abs(alpha)
            p.bound_steps.append(("mul", r.out, (prev, name), None))
        elif r.op == "div":   # by a scalar constant: a binary post-op, each quotient correctly rounded
            c = np.ascontiguousarray(p.constants[r.reads["b"]]).reshape((1,) * (2 if rows is not None else len(s.shape)))
            p.keep.append(c)
            md = desc(c.shape, c.dtype)
            p.keep.append(md)
            args[C.ARG_ATTR_MULTIPLE_POST_OP_BASE * (len(post) + 1) | C.ARG_SRC_1] = ("buf", c)
            post.append(("binary", C.BINARY_DIV, md))
            p.bound_steps.append(("div", r.out, (prev,), divisor(c)))
        else:   # an add, or a fused_softmax's mask
            if r.op == "add":
                name = r.reads["b"] if r.reads.get("a") == prev else r.reads["a"]
                arg, md = p._arg(plain(p, name)), desc((rows, s.shape[-1]) if rows is not None else s.shape, s.dtype)
                p.bound_steps.append(("add", r.out, (prev, name), None))
            else:
                md, arg = _mask(p, r, r.reads["mask"])
                p.masked.add(id(r))
            args[C.ARG_ATTR_MULTIPLE_POST_OP_BASE * (len(post) + 1) | C.ARG_SRC_1] = arg
            post.append(("binary", C.BINARY_ADD, md))
            p.keep.append(md)
        if r.op != "fused_softmax":
            out = prev = r.out
    return post, args, out


def _product(p, s, after, constants):
    """linear (x @ weight.T + bias, weight constant) or matmul (a @ b, b a value or a 2-D
    constant), with the post-ops of ``after`` (``chain``)."""
    after = after or []
    if s.op == "linear":
        x, w_name, b_name = s.reads["x"], s.reads.get("weight"), s.reads.get("bias")
        w = constants.get(w_name)
        if w is None or w.ndim != 2:
            raise unsupported("a linear whose weight is not a constant")
        weight = w.T   # (in, out), read in place
    else:
        x, b_value = s.reads["a"], s.reads["b"]
        b_name = None
        w = constants.get(b_value)
        weight = w
        if x in constants:
            raise unsupported("a matmul of a constant first operand")
    xs = p.shape[x]
    if len(xs) < 2 or (w is not None and (w.dtype != s.dtype or p.dtype[x] != s.dtype)):
        raise unsupported(f"{s.op} of these operands")
    bias = constants.get(b_name) if b_name is not None else None
    if b_name is not None and (bias is None or bias.dtype != s.dtype):
        raise unsupported("a bias that is not a constant of the result's dtype")
    compute = p.compute if s.dtype == np.float32 else "f32"
    if w is not None:   # a constant weight of (in, out), reordered once into the layout oneDNN prefers
        if weight.ndim != 2:
            raise unsupported("a matmul by a constant of more than 2 dims")
        k, n = weight.shape
        rows = math.prod(xs[:-1])
        if xs[-1] != k:
            raise unsupported(f"{s.op} of mismatched inner dims")
        source = plain(p, x)
        at = len(p.bound_steps)   # the product's bound goes before its post-ops'
        post, post_args, out = _post_ops(p, s, after, rows)
        attr = Attr(compute, post)
        src_md, wei_md, dst_md = desc((rows, k), s.dtype), desc_any((k, n), s.dtype), desc((rows, n), s.dtype)
        bias_md = desc((1, n), bias.dtype) if bias is not None else None
        prim = Primitive("dnnl_matmul_primitive_desc_create", src_md.handle, wei_md.handle,
                         bias_md.handle if bias_md else None, dst_md.handle, attr.handle,
                         keep=(src_md, wei_md, bias_md, dst_md, attr))
        from ._packed import packed_weight
        packed = packed_weight(prim, weight)
        p.keep += [w, weight, packed]
        args = {C.ARG_SRC: p._arg(source), C.ARG_WEIGHTS: ("buf", packed)}
        if bias is not None:
            b = np.ascontiguousarray(bias).reshape(1, n)
            p.keep.append(b)
            args[C.ARG_BIAS] = ("buf", b)
        sums = np.abs(weight.astype(np.float64)).sum(axis=0)   # into each output
        facts = (float(sums.max()) if sums.size else 0.0, _largest(bias) if bias is not None else 0.0,
                 ("none", 0.0, 0.0))
        work = rows * k * n
        bound = ("conv", s.out, (x, None), facts)
    else:
        other = s.reads["b"]
        bs = p.shape[other]
        if len(bs) != len(xs) or p.dtype[other] != s.dtype or p.dtype[x] != s.dtype:
            raise unsupported("a matmul of operands of other ranks or dtypes")
        at = len(p.bound_steps)
        post, post_args, out = _post_ops(p, s, after, None)
        attr = Attr(compute, post)
        prim = None
        for strided in (True, False):   # a permutation read through its strides, else reordered first
            first = x if strided and x in p.lazy else plain(p, x)
            second = other if strided and other in p.lazy else plain(p, other)
            src_md, wei_md, dst_md = p.md[first], p.md[second], desc(s.shape, s.dtype)
            try:
                prim = Primitive("dnnl_matmul_primitive_desc_create", src_md.handle, wei_md.handle, None,
                                 dst_md.handle, attr.handle, keep=(src_md, wei_md, dst_md, attr))
            except Exception:
                prim = None
            if prim is not None and not prim.impl.startswith("ref"):
                break
        if prim is None:
            raise unsupported("oneDNN has no matmul for these operands")
        args = {C.ARG_SRC: p._arg(first), C.ARG_WEIGHTS: p._arg(second)}
        work = math.prod(s.shape) * xs[-1]
        bound = ("matmul", s.out, (x, other), (xs[-1], "none"))
    if prim.impl.startswith("ref"):
        raise unsupported(f"oneDNN has no fast {s.op} for these shapes")
    p.bound_steps.insert(at, bound)
    _made(p, s, out)
    args.update(post_args)
    args[C.ARG_DST] = p._arg(out)
    p.calls.append((prim, args, work))


def _layer_norm(p, s, constants):
    x = s.reads["x"]
    features = math.prod(s.attrs["normalized_shape"])
    rows = math.prod(s.shape) // max(features, 1)
    weight = constants.get(s.reads.get("weight")) if s.reads.get("weight") is not None else None
    bias = constants.get(s.reads.get("bias")) if s.reads.get("bias") is not None else None
    for name, a in (("weight", weight), ("bias", bias)):
        if s.reads.get(name) is not None and a is None:
            raise unsupported(f"a layer_norm whose {name} is not a constant")
    source = plain(p, x)
    md = desc((rows, features), s.dtype)
    stats = desc((rows,), np.float32)
    flags = (C.USE_SCALE if weight is not None else 0) | (C.USE_SHIFT if bias is not None else 0)
    prim = Primitive("dnnl_layer_normalization_forward_primitive_desc_create", C.FORWARD_TRAINING, md.handle,
                     md.handle, stats.handle, float(s.attrs["eps"]), flags, None, keep=(md, stats))
    _made(p, s)
    used = p.stats_used   # this layer norm's place in the program's statistics (``Program.stats``)
    mean, var = p.stats[0, used:used + rows], p.stats[1, used:used + rows]
    p.stats_used = used + rows
    args = {C.ARG_SRC: p._arg(source), C.ARG_DST: p._arg(s.out), C.ARG_MEAN: ("buf", mean),
            C.ARG_VARIANCE: ("buf", var)}
    largest = 1.0
    if weight is not None:
        scale = np.ascontiguousarray(weight, np.float32).reshape(-1)
        p.keep.append(scale)
        args[C.ARG_SCALE] = ("buf", scale)
        largest = _largest(scale)
    if bias is not None:
        shift = np.ascontiguousarray(bias, np.float32).reshape(-1)
        p.keep.append(shift)
        args[C.ARG_SHIFT] = ("buf", shift)
    p.calls.append((prim, args, math.prod(s.shape) * 8))
    p.row_checks.append((mean, var, source))
    p.bound_steps.append(("norm", s.out, (x,), (features, largest, _largest(bias) if bias is not None else 0.0)))


def divisor(c) -> float | None:
    """The smallest magnitude of a constant divisor, or None where it holds 0, an infinity or NaN
    (or is not a float array): a div by it is held only otherwise."""
    if not isinstance(c, np.ndarray) or c.dtype not in TYPES or not c.size:
        return None
    magnitude = np.abs(c.astype(np.float64))
    smallest = float(np.min(magnitude))
    return smallest if smallest > 0 and np.isfinite(magnitude).all() else None


def binary(p, s, constants):
    """add or mul whose second operand broadcasts, or is a constant, on plain values; div by a
    constant of no zero (each quotient correctly rounded, as numpy's)."""
    a, b = s.reads.get("a"), s.reads.get("b")
    if a is None or b is None:
        raise unsupported(f"{s.op} without two operands")
    if s.op == "div":
        if b not in constants or divisor(constants[b]) is None:
            raise unsupported("a div by a value, or by a constant holding 0, an infinity or NaN")
    elif a in constants or tuple(p.shape.get(a) or ()) != s.shape:
        a, b = b, a   # add and mul commute: the full-shape value first
    if a in constants or tuple(p.shape.get(a) or ()) != s.shape or p.dtype[a] != s.dtype:
        raise unsupported(f"{s.op} whose first operand is broadcast or constant")
    first = plain(p, a)
    if b in constants:
        c = constants[b]
        if c.dtype != s.dtype or c.ndim > len(s.shape):
            raise unsupported(f"{s.op} of a constant of another dtype or rank")
        c = np.ascontiguousarray(c).reshape(_padded(c.shape, len(s.shape)))
        p.keep.append(c)
        second_md, second_arg = desc(c.shape, c.dtype), ("buf", c)
        p.constant_bounds[b] = _largest(c)
    else:
        if p.dtype[b] != s.dtype or len(p.shape[b]) > len(s.shape):
            raise unsupported(f"{s.op} of operands of other dtypes or ranks")
        second = plain(p, b)
        second_md, second_arg = desc(_padded(p.shape[b], len(s.shape)), s.dtype), p._arg(second)
    dst = desc(s.shape, s.dtype)
    alg = {"add": C.BINARY_ADD, "mul": C.BINARY_MUL, "div": C.BINARY_DIV}[s.op]
    prim = Primitive("dnnl_binary_primitive_desc_create", alg, dst.handle, second_md.handle, dst.handle, None,
                     keep=(dst, second_md))
    if prim.impl.startswith("ref"):
        raise unsupported(f"oneDNN has no fast {s.op} for these shapes")
    _made(p, s)
    p.calls.append((prim, {C.ARG_SRC: p._arg(first), C.ARG_SRC_1: second_arg, C.ARG_DST: p._arg(s.out)},
                    math.prod(s.shape)))
    if s.dtype != np.float32 and s.op in ("div", "mul") and b in constants:
        _small_check(p, first, s, constants[b])
    if s.op == "div":
        p.bound_steps.append(("div", s.out, (a,), divisor(constants[b])))
    else:
        p.bound_steps.append((s.op, s.out, (a, b), None))


def _small_check(p, source, s, c) -> None:
    """oneDNN stores a bf16 result below bf16's smallest normal as 0, where the nodes keep a
    subnormal: a bf16 div or mul by the constant ``c`` makes one only from a source of magnitude
    below tiny * max|c| (div) or tiny / min|c| (mul, over its nonzero entries), which the program
    scans for after the run (``Program.small_checks``)."""
    magnitude = np.abs(np.asarray(c, np.float64)).reshape(-1)
    if s.op == "div":
        bound = TINY * float(magnitude.max())
    else:
        nonzero = magnitude[magnitude > 0]
        if not nonzero.size:
            return   # a product by 0 is 0 on every engine
        bound = TINY / float(nonzero.min())
    bits = np.array([min(bound, 3.0e38)], np.float32).view(np.uint32)[0]
    bf16 = int(bits >> 16) + (1 if bits & 0xFFFF else 0)   # the smallest bf16 of at least the bound
    kind, where = p._arg(source)
    items = math.prod(s.shape)
    p.small_checks.append((kind, where[:2 * items] if kind == "buf" else where, items, min(bf16, 0x7F80)))


def select(p, s, constants):
    """An attention's select(cond, scores, fill) (or fill and scores swapped), read only by
    softmaxes: the condition a bool input of the program (its 0 and 1 read as u8 and made f32),
    the fill a scalar constant. scores * w + fill * (1 - w), w the places that keep the scores,
    (two binary steps, the sum in place) is each place's scores or fill exactly: the scores are
    finite (their bound), a product by 1 or 0 is exact, and so is a sum with 0; only -0 scores become +0, which a softmax does not
    tell apart. The fill may be any finite number (float32's lowest, typically): the result is
    bounded for the softmaxes only (see ``segment.py``'s walk, "filled")."""
    cond, then, other = s.reads.get("cond"), s.reads.get("then"), s.reads.get("else_")
    if s.attrs.get("auto_broadcast", "numpy") != "numpy" or cond not in p.conditions:
        raise unsupported("a select whose condition is not a bool input of the program")
    if s.out in p.outputs or not p.readers.get(s.out) or any(
            r.op != "softmax" or r.reads.get("x") != s.out for r in p.readers[s.out]):
        raise unsupported("a select that is not an attention's, read only by softmaxes")
    keeps = then not in constants
    value, fill = (then, other) if keeps else (other, then)
    c = constants.get(fill)
    if value in constants or not isinstance(c, np.ndarray) or c.size != 1 or not np.isfinite(c).all() \
            or c.dtype != s.dtype or tuple(p.shape.get(value) or ()) != s.shape or p.dtype[value] != s.dtype:
        raise unsupported("a select of other than a value and a finite scalar constant")
    if len(p.shape[cond]) > len(s.shape):
        raise unsupported("a select whose condition has more dims than its result")
    fill_value = float(np.asarray(c, np.float32).reshape(-1)[0])
    shape = _padded(p.shape[cond], len(s.shape))
    mask_md, weight_md = desc(shape, np.uint8), desc(shape, np.float32)
    weight, rest = ("weight", s.out), ("rest", s.out)
    for name in (weight, rest):
        p.md[name], p.shape[name], p.dtype[name] = weight_md, shape, np.dtype(np.float32)
        p.buffer[name] = aligned_empty(max(weight_md.size, 64))
    items = math.prod(shape)
    mask_view = ("cond", s.out)   # the condition read through the result's rank
    p.alias[mask_view], p.md[mask_view], p.dtype[mask_view] = cond, mask_md, np.dtype(np.uint8)
    p.calls.append((reorder(mask_md, weight_md), {C.ARG_FROM: p._arg(mask_view), C.ARG_TO: p._arg(weight)}, items))
    # w: the condition where it keeps the scores, else 1 - it; rest = fill * (1 - w) = fill - fill * w
    steps = ([] if keeps else [(weight, weight, -1.0, 1.0)]) + [(weight, rest, -fill_value, fill_value)]
    for src, dst, alpha, beta in steps:
        prim = Primitive("dnnl_eltwise_forward_primitive_desc_create", C.FORWARD_INFERENCE, C.ELTWISE_LINEAR,
                         weight_md.handle, weight_md.handle, alpha, beta, None, keep=(weight_md,))
        p.calls.append((prim, {C.ARG_SRC: p._arg(src), C.ARG_DST: p._arg(dst)}, items))
    source = plain(p, value)
    md = desc(s.shape, s.dtype)
    _made(p, s)
    # scores * w into the result, then + rest in place (oneDNN's broadcast post-op is its reference code)
    for alg, first, second in ((C.BINARY_MUL, source, weight), (C.BINARY_ADD, s.out, rest)):
        prim = Primitive("dnnl_binary_primitive_desc_create", alg, md.handle, weight_md.handle, md.handle, None,
                         keep=(md, weight_md))
        if prim.impl.startswith("ref"):
            raise unsupported("oneDNN has no fast select for these shapes")
        p.calls.append((prim, {C.ARG_SRC: p._arg(first), C.ARG_SRC_1: p._arg(second), C.ARG_DST: p._arg(s.out)},
                        math.prod(s.shape)))
    p.bound_steps.append(("filled", s.out, (value,), abs(fill_value)))


def concat(p, s):
    """concat of plain values along any axis."""
    parts = s.reads.get("tensors")
    if not isinstance(parts, list):
        raise unsupported("a concat without its parts")
    axis = int(s.attrs.get("axis", 0)) % len(s.shape)
    sources = [plain(p, name) for name in parts]
    mds = [as_bytes(p.shape[name], p.dtype[name]) for name in parts]   # 16-bit values as bytes
    handles = (ctypes.c_void_p * len(mds))(*[m.handle for m in mds])
    dst = as_bytes(s.shape, s.dtype)
    prim = Primitive("dnnl_concat_primitive_desc_create", dst.handle, len(mds), axis, handles, None,
                     keep=(mds, dst))
    _made(p, s)
    args = {C.ARG_MULTIPLE_SRC + i: p._arg(name) for i, name in enumerate(sources)}
    args[C.ARG_DST] = p._arg(s.out)
    p.calls.append((prim, args, math.prod(s.shape)))
    p.bound_steps.append(("max", s.out, tuple(parts), None))


def resample(p, s):
    """upsample_nearest (f32: a copy of each source) and upsample_bilinear2d (f32 or bf16) on
    oneDNN's resampling primitive, where its sources are PyTorch's: the ONEDNN kernels' rules
    (``upsample.py``), on the step's arguments."""
    from types import SimpleNamespace

    from . import upsample
    x = s.reads["x"]
    nearest = s.op == "upsample_nearest"
    if (nearest and s.dtype != np.float32) or p.dtype[x] != s.dtype or 0 in s.shape:
        raise unsupported(f"{s.op} of this dtype or size")
    if math.prod(s.shape) > upsample.MAX_RUN:   # one run: oneDNN 3.2 faults on large ones (``upsample.py``)
        raise unsupported(f"{s.op} of more than {upsample.MAX_RUN} items in one run")
    shape = p.shape[x]
    fake = np.broadcast_to(np.zeros((), s.dtype), shape)   # the rules read its shape and dtype
    reason = (upsample._nearest_reason if nearest else upsample._linear_reason)(
        SimpleNamespace(op=s.op, args={**s.attrs, "x": fake}, prepared=s.prepared))
    if reason:
        raise unsupported(reason)
    source = plain(p, x)
    src_md, dst_md = desc(shape, s.dtype), desc(s.shape, s.dtype)
    alg = C.RESAMPLING_NEAREST if nearest else C.RESAMPLING_LINEAR
    prim = Primitive("dnnl_resampling_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg, None,
                     src_md.handle, dst_md.handle, None, keep=(src_md, dst_md))
    if prim.impl.startswith("ref"):
        raise unsupported(f"oneDNN has no fast {s.op} for these shapes")
    _made(p, s)
    p.calls.append((prim, {C.ARG_SRC: p._arg(source), C.ARG_DST: p._arg(s.out)},
                    math.prod(s.shape) * (1 if nearest else 4)))
    p.bound_steps.append(("same", s.out, (x,), None))   # a copy, or a weighted mean of sources
