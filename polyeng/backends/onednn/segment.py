"""A run of a graph's convolution-network nodes as one oneDNN program: every value between them
stays in the layout the primitive that makes it chose (channels blocked by 16, mostly), in
buffers made once, and each node is one primitive execution.

Run node by node, each convolution reorders its input into oneDNN's blocked layout and its
result back, and each call pays its own dispatch. ``build`` takes the nodes of one call
signature (``Step``: the op, its validated facts, which values it reads and makes) and makes the
primitives: convolutions (a following activation, and fused_conv's residual, as post-ops),
pooling, elementwise activations, binary add and mul (a squeeze-excite scale broadcast over the
image), the spatial mean and concatenation along channels. The program's inputs are read as
they lie (plain, C-contiguous) and its outputs are written to new plain arrays.

Special values: oneDNN's post-ops and pooling do not keep polyeng's NaN and infinity rules
(``fused.py``). A program runs only when no value in it can leave the finite range: from a
bound of each input (an f32 input's largest magnitude, by ``_scans.py``, where the program's loop
is compiled; else the square root of its sum of squares, or its largest magnitude when that
overflows) and of
each constant (a convolution's largest row sum of absolute weights), each step's bound follows
(a convolution: input bound x row sum + bias bound + residual bound; an activation at most its
input's or 1, clip its bounds' largest magnitude; add the sum, mul the product, pooling, mean
and concat the largest), and every one must stay below ``LIMIT``, an average's window sum
(bound x taps) too. Max pooling windows with no tap inside the input (polyeng's -inf, oneDNN's
lowest number) are not held. Otherwise ``run`` returns None and the nodes run one by one.

-0.0: on a CPU without AVX-512 oneDNN's reorders of 16-bit values (``simple:any``) and its
reference concat compute v * 1 + 0, which is +0.0 for -0.0. A program copies 16-bit values as
bytes (``segment_plain.copy``), holds another 16-bit reorder only where a probe run keeps -0.0
(``segment_plain.keeps_negative_zero``, ``sign_keeping_reorder``), and scans the source of a cast
whose reorder does not for -0.0 after the run (``_cast``). A cast oneDNN converts in its scalar
code (about 100 ns an element) is held only for values of at most ``SCALAR_CAST`` elements.

``run`` returns None too while another thread runs the same program (its buffers are one set).
"""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from . import _constants as C
from . import _arena, _native, _scans
from .._address import address
from ._convert import storage_of
from ._lib import dims, new
from ._primitive import Attr, Desc, Primitive, aligned_empty, desc, desc_any, reorder, scalar_conversion
from ._packed import packed_weight
from ._threads import threads_for
from . import conv, segment_plain
from .fused import POST_OPS
from .segment_plain import NEGATIVE_ZERO, keeps_negative_zero
from .normalization import constant_rows
from .pooling import _kind as pooling_kind, _padding_right

F32 = np.dtype(np.float32)
TYPES = segment_plain.TYPES   # the storage a program holds: f32, and bf16 (a mixed precision graph's)
# the magnitude from which a sum rounds to an f32 infinity: the largest f32 plus half its unit
SUM_TO_INF = float(np.finfo(np.float32).max) + 2.0 ** 103
CHECKED_CAST = 1 << 22   # elements of the largest f32 value a cast to bf16 in a program may read
# elements of the largest value a cast in oneDNN's scalar code (``_primitive.scalar_conversion``,
# about 100 ns an element) may convert in a program: 25 us, about what a node's cast costs
SCALAR_CAST = 256
SMALLEST_NORMAL = 0x00800000   # the bits of f32's smallest normal: below it (and above 0), subnormal
LIMIT = 1e36   # bounds above this might overflow somewhere (hardswish's formula passes f32's maximum from 5.7e37)

# activation -> bound of the result from the bound b of its input
BOUNDED = {"sigmoid": lambda b, a, c: 1.0, "tanh": lambda b, a, c: 1.0, "hardsigmoid": lambda b, a, c: 1.0,
           "relu": lambda b, a, c: b, "hardswish": lambda b, a, c: b, "silu": lambda b, a, c: b,
           "leaky_relu": lambda b, a, c: b * max(1.0, abs(a)),
           # clip(v, lo, hi) = min(max(v, lo), hi) lies in [lo, hi] when lo <= hi (a lower bound above
           # the input's lifts every value to it), else it is hi
           "clip": lambda b, a, c: max(abs(a), abs(c)),
           "gelu": lambda b, a, c: b,   # |v * Phi(v)| <= |v|
           "none": lambda b, a, c: b}
ELTWISE_OPS = {"relu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu", "leaky_relu", "clip"}
OPS = frozenset({"conv2d", "fused_conv", "max_pool2d", "avg_pool2d", "add", "mul", "div", "mean", "concat",
                 "cast"}) | ELTWISE_OPS \
    | segment_plain.OPS
MAX_RANK = 6   # of the values a program reads


class Unsupported(Exception):
    """These nodes do not make a program (the graph runs them one by one); ``index``: the step
    that does not fit, where one does not; ``last``: that step fits as a program's last one (its
    result read only after the program), so the program should end with it, not before it."""
    index = None
    last = False


class Step:
    """One node: ``op``, its validated arguments' facts (``attrs``: options; arrays by value name
    in ``reads``: argument -> value name, or a list of names for concat), the value it makes
    (``out``, of shape ``shape`` and ``dtype``: f32 or bf16) and its prepared facts."""
    __slots__ = ("op", "reads", "attrs", "out", "shape", "prepared", "dtype")

    def __init__(self, op, reads, attrs, out, shape, prepared, dtype=F32):
        self.op, self.reads, self.attrs, self.out, self.shape, self.prepared = op, reads, attrs, out, tuple(shape), prepared
        self.dtype = np.dtype(dtype)


def _activation(step):
    """(name, alpha, beta) of an eltwise step's activation, in fused_conv's terms."""
    a = step.attrs
    if step.op == "leaky_relu":
        slope = float(a["negative_slope"])
        if np.float32(slope) == 0:   # oneDNN's max(x, 0): +0 where polyeng gives -0 (slope * x)
            raise Unsupported("leaky_relu of slope 0")
        return "leaky_relu", slope, 0.0
    if step.op == "clip":
        lo, hi = _number(a.get("min")), _number(a.get("max"))
        if lo is None or hi is None:
            raise Unsupported("clip without both bounds as numbers")
        return "clip", lo, hi
    return step.op, 0.0, 0.0


def _number(value):
    """A clip bound as a float (validation makes 0-d arrays of them), or None."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fiu":
        value = value.item()
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        return float(value)
    return None


class Program:
    """The primitives of a run of nodes and the buffers between them, for one call signature."""

    def __init__(self, steps, inputs, outputs, constants, shapes, compute="f32", dtypes=None):
        """``inputs``: value names read from outside, in ``run``'s order; ``outputs``: value names
        wanted outside, in the order ``run`` returns them; ``constants``: name -> array;
        ``shapes``: name -> shape of every input, ``dtypes`` its dtype (f32 when not given);
        ``compute``: the convolutions' fpmath type (the fp math mode's, ``_fpmath.compute``:
        convolutions are ALLOW ops)."""
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.compute = compute
        self.dtype = {name: np.dtype((dtypes or {}).get(name, F32)) for name in self.inputs}
        # reentrant: a lock that a signal's exception left held (raised as acquire returned, before
        # the try that releases it) keeps other threads off the program, not the one that ran it
        self.lock = threading.RLock()
        self.md = {}          # value -> Desc of its layout
        self.shape = dict(shapes)
        self.buffer = {}      # value -> byte buffer (internal values)
        self.calls = []       # (primitive, {arg: ("buf", array) | ("in", index of the input)}, work)
        self.bound_steps = []  # (kind, out, reads, facts) for the bound walk
        self.keep = []
        self.final_shape = {}  # value -> the shape its output array is returned in, where not its own
        self.subnormal_checks = []   # the f32 sources of casts to bf16, scanned after a run
        self.scan_items = 0   # the largest of them, in elements (the scan's scratch, made on the first run)
        self._scan = None
        # (kind, value, items, bits): bf16 sources of a div or mul by a constant, scanned after a
        # run for a nonzero magnitude below ``bits`` (a bf16 pattern), whose result oneDNN would
        # store as 0 where the nodes keep a subnormal (``segment_plain.binary``)
        self.small_checks = []
        self._scan16 = None
        self.natives = {}     # threads -> the calls as one compiled loop (``_native.py``)
        self.alias = {}       # value -> the value whose bytes it is (a reshape's, a view's)
        self.offset = {}      # value -> its first item's place in its alias's bytes, where not 0
        self.constants = constants
        self.masks = set()    # inputs that only a softmax reads as its mask (``segment_plain._softmax``)
        self.mask_ranges = {}   # such a mask (a constant) -> its (largest, smallest) value
        self.constant_bounds = {}   # constant -> its largest magnitude, where a step reads one
        self.row_checks = []  # (mean, variance, source) of each layer norm, checked after a run
        self.lazy = set()     # permutations a product reads through strides (``segment_plain.py``)
        self._passed = None   # the input bounds of the largest run that passed ``bounded``
        self._compiled_scans = None   # whether the guards scan in compiled code (``_scans.py``)
        self.masked = set()   # fused_softmax steps whose mask a product added as its post-op
        # every layer norm's row means and variances, in one array each (one check after a run)
        rows = sum(math.prod(s.shape) // max(math.prod(s.attrs["normalized_shape"]), 1)
                   for s in steps if s.op == "layer_norm")
        self.stats = aligned_empty(max(8 * rows, 64)).view(F32)[:2 * rows].reshape(2, rows)
        self.stats_used = 0
        readers = self.readers = {}
        for s in steps:
            for name in _names(s.reads):
                readers.setdefault(name, []).append(s)
        # inputs that only softmaxes read, as their scores (``segment_plain._softmax``): any finite values
        self.scores = {name for name in self.inputs if readers.get(name)
                       and all(r.op == "softmax" and r.reads.get("x") == name for r in readers[name])}
        # bool inputs that only selects read, as their condition (``segment_plain.select``)
        self.conditions = {name for name in self.inputs if self.dtype[name] == np.bool_ and readers.get(name)
                           and all(r.op == "select" and r.reads.get("cond") == name for r in readers[name])}
        for name in self.inputs:
            if self.shape[name] is None or not 1 <= len(self.shape[name]) <= MAX_RANK \
                    or (self.dtype[name] not in TYPES and name not in self.conditions):
                error = Unsupported(f"input {name} is not an f32 or bf16 value of 1 to {MAX_RANK} dims")
                error.index = next(i for i, s in enumerate(steps) if name in set(_names(s.reads)))
                raise error   # the run ends before the first step reading it
            # a condition's bytes are 0 and 1: oneDNN reads them as u8
            self.md[name] = desc(self.shape[name], np.uint8 if name in self.conditions else self.dtype[name])
        folded = set()
        for i, s in enumerate(steps):
            if id(s) in folded:
                continue
            after = None   # an activation that alone reads this convolution's result: a post-op
            if s.op in ("conv2d", "fused_conv") and (s.op == "conv2d" or s.attrs["activation"] == "none"):
                nxt = readers.get(s.out, [])
                if len(nxt) == 1 and nxt[0].op in ELTWISE_OPS and s.out not in self.outputs:
                    after = nxt[0]
                    folded.add(id(after))
            elif s.op in ("linear", "matmul"):   # the nodes that alone read it in turn: post-ops
                after = segment_plain.chain(self, s, i, steps, constants)
                folded.update(id(a) for a in after if a.op != "fused_softmax" and not segment_plain._pure_view(a))
            try:
                self._step(s, after, constants)
            except Unsupported as exc:
                exc.index = i
                raise
            except Exception as exc:   # oneDNN turned a primitive down
                error = Unsupported(f"{s.op}: {exc}")
                error.index = i
                raise error from exc
        for name in self.outputs:
            if name not in self.md:
                raise Unsupported(f"output {name} is not made here")
        # per output, the reorder from its layout to a new plain array
        made_at = {s.out: i for i, s in enumerate(steps)}
        self.finals = [(name, self._final(name, made_at.get(name))) for name in self.outputs]
        # the internal buffers in one block, placed by when a run uses each (``_arena.py``)
        self.arena = None
        self.shared_bytes = _arena.share(self)

    # --- building ------------------------------------------------------------------------------
    def _final(self, name, index):
        """The reorder of output ``name`` into a new plain array: a copy of bytes where a 16-bit
        value lies plain already (``segment_plain.copy``); else one that keeps -0.0 (``index``:
        the step making it, where the program ends otherwise)."""
        shape, dtype = self.shape[name], self.dtype[name]
        md, flat = self.md[name], desc(shape, dtype)
        if dtype.itemsize != 2:
            return reorder(md, flat)
        if md == flat:
            return segment_plain.copy(shape, dtype)
        try:
            return segment_plain.sign_keeping_reorder(md, flat, dtype, math.prod(shape), "into a plain output")
        except Unsupported as error:
            error.index = index
            raise

    def _value(self, name):
        if name not in self.md:
            raise Unsupported(f"value {name} is read before it is made")
        return self.md[name]

    def _made(self, name, prim):
        """``prim``'s destination layout as the layout of ``name``, with a buffer for it."""
        copy = Desc(_clone(prim.md(C.QUERY_DST_MD)))
        self.md[name] = copy
        self.buffer[name] = aligned_empty(max(copy.size, 64))
        return copy

    def _arg(self, name):
        offset = 0
        while name in self.alias:
            offset += self.offset.get(name, 0) * self.dtype[name].itemsize
            name = self.alias[name]
        if name in self.buffer:
            return ("buf", self.buffer[name][offset:] if offset else self.buffer[name])
        if offset:
            raise Unsupported("a part of a program's input (read it whole)")
        return ("in", self.inputs.index(name))

    def _step(self, s, after, constants):
        op = s.op
        if s.dtype not in TYPES:
            raise Unsupported(f"{op} makes {s.dtype}")
        self.dtype[s.out] = s.dtype
        if after is not None and not isinstance(after, list):
            self.dtype[after.out] = s.dtype
        if op in segment_plain.OPS:
            segment_plain.build(self, s, after, constants)
            for a in after or ():
                self.dtype[a.out], self.shape[a.out] = s.dtype, a.shape
        elif op in ("conv2d", "fused_conv"):
            self._conv(s, after, constants)
            if after is not None:
                self.shape[after.out] = after.shape
        elif op in ELTWISE_OPS:
            name, alpha, beta = _activation(s)
            alg = POST_OPS[name](alpha, beta)
            x = s.reads["x"]
            md = self._value(x)
            prim = Primitive("dnnl_eltwise_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg[0], md.handle,
                             md.handle, float(alg[1]), float(alg[2]), None, keep=(md,))
            self._made(s.out, prim)
            self.calls.append((prim, {C.ARG_SRC: self._arg(x), C.ARG_DST: self._arg(s.out)}, math.prod(s.shape)))
            self.bound_steps.append(("act", s.out, (x,), (name, alpha, beta)))
        elif op in ("max_pool2d", "avg_pool2d"):
            self._pool(s)
        elif op in ("add", "mul", "div"):
            if op != "div" and len(s.shape) == 4 and s.reads.get("a") not in constants \
                    and s.reads.get("b") not in constants:
                self._binary(s, constants)
            else:
                segment_plain.binary(self, s, constants)
        elif op == "mean":
            self.shape[s.out] = self._mean(s)
            return
        elif op == "concat":
            if len(s.shape) == 4 and s.attrs.get("axis") in (1, -3):
                self._concat(s)
            else:
                segment_plain.concat(self, s)
        elif op == "cast":
            self._cast(s)
        else:
            raise Unsupported(f"{op} has no step here")
        self.shape[s.out] = s.shape

    def _conv(self, s, after, constants):
        g = s.prepared.geometry
        a = s.attrs
        if len(s.shape) != 4 or g.algorithm is None:
            raise Unsupported("not a 2-D convolution")
        x = s.reads["x"]
        src = self._value(x)
        w = constants.get(s.reads.get("weight"))
        if w is None or w.dtype != self.dtype[x] or s.dtype != self.dtype[x]:
            raise Unsupported("a weight that is not a constant of the input's dtype")
        b = constants.get(s.reads.get("bias")) if s.reads.get("bias") is not None else None
        if s.reads.get("bias") is not None and (b is None or b.dtype not in TYPES):
            raise Unsupported("a bias that is not an f32 or bf16 constant")
        residual = s.reads.get("residual")
        activation = (a.get("activation", "none"), float(a.get("alpha", 0.0) or 0.0), float(a.get("beta", 0.0) or 0.0))
        if after is not None:
            activation = _activation(after)
        if activation[0] not in BOUNDED or (activation[0] != "none" and activation[0] not in POST_OPS):
            raise Unsupported(f"activation {activation[0]}")
        if activation[0] == "leaky_relu" and np.float32(activation[1]) == 0:
            raise Unsupported("leaky_relu of slope 0")   # oneDNN's max(x, 0)
        post = []
        if residual is not None:
            post.append(("binary", C.BINARY_ADD, self._value(residual)))
        if activation[0] != "none":
            post.append(("eltwise",) + tuple(POST_OPS[activation[0]](activation[1], activation[2])))
        wv, _ = conv._weight_view(s.prepared, w)   # grouped weights as (G, O / G, C / G, kh, kw)
        out_shape = (g.batch, g.out_channels) + tuple(g.out)
        left, right = (g.padding[0], g.padding[2]), (g.padding[1], g.padding[3])
        prim = None
        source = x   # the value the convolution reads: x, or x reordered into a layout it has fast code for
        kinds = (("as made", "any"), ("as made", "blocked"), ("blocked", "any"), ("plain", "any"))
        if conv.amx_first(storage_of(self.compute, s.dtype)) or not conv.blocks_of_16():
            # AMX's kernels take their own layout (conv.amx_first); without AVX-512, oneDNN's fast
            # kernels take channels last or blocks of 8 channels, which it chooses
            kinds = (("any", "any"),) + kinds
        for src_kind, dst_kind in kinds:
            src = self.md[x]
            if src_kind == "any":
                src = desc_any(self.shape[x], s.dtype)
            elif src_kind != "as made":
                src = _blocked(self.shape[x], s.dtype) if src_kind == "blocked" else desc(self.shape[x], s.dtype)
            attr = Attr(self.compute if s.dtype == F32 else "f32", post)
            wei_md = desc_any(wv.shape, s.dtype)
            bias_md = desc((g.out_channels,), b.dtype) if b is not None else None
            dst_md = desc_any(out_shape, s.dtype) if dst_kind == "any" else _blocked(out_shape, s.dtype)
            try:
                candidate = Primitive("dnnl_convolution_forward_primitive_desc_create", C.FORWARD_INFERENCE,
                                      C.CONVOLUTION_DIRECT, src.handle, wei_md.handle,
                                      bias_md.handle if bias_md else None, dst_md.handle, dims(g.stride),
                                      dims([d - 1 for d in g.dilation]), dims(left), dims(right), attr.handle,
                                      keep=(src, wei_md, bias_md, dst_md, attr))
            except Exception:
                continue
            if candidate.impl.startswith("ref"):
                continue
            # oneDNN's gemm convolution on bf16 runs a slow path (a depthwise 5x5 of 144 channels:
            # 1.7 ms against 0.1 ms blocked): the next layouts are tried first, it is kept if none has other code
            slow = "gemm" in candidate.impl and s.dtype != F32
            if prim is None or not slow:
                prim, prim_src = candidate, (src_kind, src)
            if not slow:
                break
        if prim is None:
            raise Unsupported("oneDNN has no fast convolution for this layout")
        src_kind, src = prim_src
        if src_kind == "any":   # the layout the primitive chose, which x may already have
            src = Desc(_clone(prim.md(C.QUERY_SRC_MD)))
            if src == self.md[x]:
                src_kind = "as made"
        if src_kind != "as made":   # x reordered first, into a buffer of its own
            source = ("reordered", x, src_kind)
            step = segment_plain.sign_keeping_reorder(self.md[x], src, self.dtype[x], math.prod(self.shape[x]),
                                                      "of the input")
            self.buffer[source] = aligned_empty(max(src.size, 64))
            self.md[source] = src
            self.calls.append((step, {C.ARG_FROM: self._arg(x), C.ARG_TO: self._arg(source)},
                               math.prod(self.shape[x])))
        out = s.out if after is None else after.out   # a folded activation's value is the convolution's
        self._made(out, prim)
        packed = packed_weight(prim, wv)
        self.keep += [w, wv, packed]
        args = {C.ARG_SRC: self._arg(source), C.ARG_WEIGHTS: ("buf", packed), C.ARG_DST: self._arg(out)}
        if b is not None:
            bias = np.ascontiguousarray(b)
            self.keep.append(bias)
            args[C.ARG_BIAS] = ("buf", bias)
        if residual is not None:
            args[C.ARG_ATTR_MULTIPLE_POST_OP_BASE | C.ARG_SRC_1] = self._arg(residual)
        self.calls.append((prim, args, conv.multiply_adds(g)))
        rows = np.abs(w.astype(np.float64)).reshape(w.shape[0], -1).sum(axis=1)
        facts = (float(rows.max()) if rows.size else 0.0,
                 float(np.abs(b.astype(np.float64)).max()) if b is not None and b.size else 0.0, activation)
        self.bound_steps.append(("conv", out, (x, residual), facts))

    def _pool(self, s):
        g = s.prepared.geometry
        alg, scale = pooling_kind(s.op, s.prepared, s.attrs)
        if scale is not None or s.attrs.get("return_indices") or len(g.kernel) != 2:
            raise Unsupported("a pooling oneDNN's divisors do not give")
        if alg == C.POOLING_MAX and not _every_window_has_a_tap(g):
            raise Unsupported("a max pooling window with no tap inside the input (-inf; oneDNN gives the lowest number)")
        x = s.reads["x"]
        src = self._value(x)
        dst = desc_any(s.shape, s.dtype)
        prim = Primitive("dnnl_pooling_forward_primitive_desc_create", C.FORWARD_INFERENCE, alg, src.handle,
                         dst.handle, dims(g.stride), dims(g.kernel), dims(tuple(d - 1 for d in g.dilation)),
                         dims(g.padding), dims(_padding_right(g)), None, keep=(src, dst))
        self._made(s.out, prim)
        self.calls.append((prim, {C.ARG_SRC: self._arg(x), C.ARG_DST: self._arg(s.out)},
                           math.prod(s.shape) * math.prod(g.kernel)))
        # an average sums its window before it divides
        self.bound_steps.append(("same", s.out, (x,), None) if alg == C.POOLING_MAX else
                                ("window", s.out, (x,), math.prod(g.kernel)))

    def _binary(self, s, constants):
        a, b = s.reads.get("a"), s.reads.get("b")
        if a is None or b is None or a in constants or b in constants:
            raise Unsupported(f"{s.op} of a constant")
        if self.shape.get(a) != s.shape:
            a, b = b, a   # add and mul commute: the full-shape operand first
        if self.shape.get(a) != s.shape or len(self.shape.get(b) or ()) != 4:
            raise Unsupported(f"{s.op} whose first operand is broadcast")
        m0, m1 = self._value(a), self._value(b)
        dst = desc_any(s.shape, s.dtype)
        alg = C.BINARY_ADD if s.op == "add" else C.BINARY_MUL
        prim = Primitive("dnnl_binary_primitive_desc_create", alg, m0.handle, m1.handle, dst.handle, None,
                         keep=(m0, m1, dst))
        second = b
        if prim.impl.startswith("ref"):   # bf16 with a blocked broadcast operand: that operand made plain
            plain = desc(self.shape[b], self.dtype[b])
            prim = Primitive("dnnl_binary_primitive_desc_create", alg, m0.handle, plain.handle, dst.handle, None,
                             keep=(m0, plain, dst))
            if prim.impl.startswith("ref"):
                raise Unsupported(f"oneDNN has no fast {s.op} for these layouts")
            second = ("plain", b)
            step = segment_plain.sign_keeping_reorder(m1, plain, self.dtype[b], math.prod(self.shape[b]),
                                                      "of an operand")
            self.buffer[second] = aligned_empty(max(plain.size, 64))
            self.md[second] = plain
            self.calls.append((step, {C.ARG_FROM: self._arg(b), C.ARG_TO: self._arg(second)},
                               math.prod(self.shape[b])))
        self._made(s.out, prim)
        self.calls.append((prim, {C.ARG_SRC: self._arg(a), C.ARG_SRC_1: self._arg(second), C.ARG_DST: self._arg(s.out)},
                           math.prod(s.shape)))
        self.bound_steps.append((s.op, s.out, (a, b), None))

    def _mean(self, s):
        """The mean over the image as average pooling with a window of the whole image (oneDNN's
        reduction has no fast code for the blocked layouts)."""
        x = s.reads["x"]
        axes = s.attrs.get("axis")
        shape = self.shape.get(x)
        if shape is None or len(shape) != 4 or axes is None or sorted(a % 4 for a in axes) != [2, 3]:
            raise Unsupported("a mean that is not over the image")
        if not s.attrs.get("keepdims"):
            if self.readers.get(s.out):
                error = Unsupported("a mean without its kept dims, read by a node here")
                error.last = True   # a CNN's last mean, read by its classifier: it ends this program
                raise error
            self.final_shape[s.out] = s.shape   # made as (N, C, 1, 1): the same plain bytes
        src = self._value(x)
        out_shape = tuple(shape[:2]) + (1, 1)
        dst = desc_any(out_shape, s.dtype)
        prim = Primitive("dnnl_pooling_forward_primitive_desc_create", C.FORWARD_INFERENCE,
                         C.POOLING_AVG_EXCLUDE_PADDING, src.handle, dst.handle, dims((1, 1)), dims(shape[2:]),
                         dims((0, 0)), dims((0, 0)), dims((0, 0)), None, keep=(src, dst))
        if prim.impl.startswith("ref"):
            raise Unsupported("oneDNN has no fast mean for this layout")
        self._made(s.out, prim)
        self.calls.append((prim, {C.ARG_SRC: self._arg(x), C.ARG_DST: self._arg(s.out)}, math.prod(shape)))
        self.bound_steps.append(("window", s.out, (x,), shape[2] * shape[3]))   # summed, then divided
        return out_shape

    def _concat(self, s):
        parts = s.reads.get("tensors")
        if not isinstance(parts, list) or s.attrs.get("axis") not in (1, -3) or len(s.shape) != 4:
            raise Unsupported("a concat that is not along channels")
        mds = [self._value(p) for p in parts]
        handles = (ctypes.c_void_p * len(mds))(*[m.handle for m in mds])
        prim = None
        for dst in (desc_any(s.shape, s.dtype), _blocked(s.shape, s.dtype), desc(s.shape, s.dtype)):
            candidate = Primitive("dnnl_concat_primitive_desc_create", dst.handle, len(mds), 1, handles, None,
                                  keep=(mds, dst))
            if prim is None or not candidate.impl.startswith("ref"):
                prim = candidate   # the reference code when nothing else (channels not blocks of 16)
            if not prim.impl.startswith("ref"):
                break
        if s.dtype.itemsize == 2 and not keeps_negative_zero(prim, [C.ARG_MULTIPLE_SRC + i for i in range(len(mds))],
                                                             C.ARG_DST, s.dtype, s.dtype, math.prod(s.shape)):
            segment_plain.concat(self, s)   # 16-bit values that oneDNN's concat would change: plain, as bytes
            return
        self._made(s.out, prim)
        args = {C.ARG_MULTIPLE_SRC + i: self._arg(p) for i, p in enumerate(parts)}
        args[C.ARG_DST] = self._arg(s.out)
        self.calls.append((prim, args, math.prod(s.shape)))
        self.bound_steps.append(("max", s.out, tuple(parts), None))

    def _cast(self, s):
        """f32 <-> bf16 as a reorder into the same layout of the other type: blocked by 16 (a
        convolution's 4-D value) or plain (any other value is made plain first).
        bf16 -> f32 is exact. oneDNN's f32 -> bf16 flushes subnormals to zero, where cast rounds
        them: it is held for values of at most ``CHECKED_CAST`` elements, whose f32 source is
        scanned after the run (``run`` returns None where it holds a subnormal, and the nodes
        run). The scan costs about 0.2 ns an element (a value of 262144 f32 in 56 us), less than
        a node's cast. On a CPU without AVX-512 oneDNN's reorder (``simple:any``) turns -0.0 into
        +0.0 both ways (``keeps_negative_zero``, asked when the program is built): there the
        source is scanned for -0.0 too, and a run that holds one is the nodes'. A cast oneDNN would
        convert in its scalar code (``simple:any`` there, about 100 ns an element) is held only for
        values of at most ``SCALAR_CAST`` elements: the nodes' cast of a larger one is faster (65536
        elements: 4.2 ms in oneDNN's scalar code, 0.07 ms in NUMBA's)."""
        x = value = s.reads["x"]
        shape = self.shape[x]
        if (self.dtype[x], s.dtype) not in ((F32, TYPES[1]), (TYPES[1], F32)):
            raise Unsupported(f"a cast from {self.dtype[x]} to {s.dtype}")
        if len(shape) == 4 and self._value(x) == _blocked(shape, self.dtype[x]):
            src, dst = self.md[x], _blocked(shape, s.dtype)
        else:   # any other layout is made plain first
            x = segment_plain.plain(self, x)
            src, dst = self.md[x], desc(shape, s.dtype)
        if s.dtype != F32 and math.prod(shape) > CHECKED_CAST:
            raise Unsupported("a cast to bf16 of a value too large to scan for subnormals")
        prim = reorder(src, dst)
        if scalar_conversion(prim, self.dtype[x], s.dtype) and math.prod(shape) > SCALAR_CAST:
            raise Unsupported(f"a cast of {math.prod(shape)} elements from {self.dtype[x]} to {s.dtype} "
                              f"in oneDNN's scalar code ({prim.impl})")
        zeros = not keeps_negative_zero(prim, (C.ARG_FROM,), C.ARG_TO, self.dtype[x], s.dtype, math.prod(shape))
        if s.dtype != F32 or zeros:
            kind, where = self._arg(x)
            # a buffer's items (a blocked layout's padding too), or an input's first ones: x may be
            # a view of it (a part at offset 0; a part elsewhere is turned down by _arg)
            item = self.dtype[x].itemsize
            items = src.size // item if kind == "buf" else math.prod(shape)
            where = where[:src.size] if kind == "buf" else where
            if s.dtype != F32:
                self.subnormal_checks.append((kind, where, items, zeros))
                self.scan_items = max(self.scan_items, items)
            else:   # a bf16 source: -0.0 only
                self.small_checks.append((kind, where, items, 0, zeros))
        self.md[s.out] = dst
        self.buffer[s.out] = aligned_empty(max(dst.size, 64))
        self.calls.append((prim, {C.ARG_FROM: self._arg(x), C.ARG_TO: self._arg(s.out)}, math.prod(shape) * 4))
        self.bound_steps.append(("same", s.out, (value,), None))   # rounding to bf16 may grow a value by one unit

    # --- running -------------------------------------------------------------------------------
    def bounded(self, arrays) -> bool:
        """Whether every value of a run on ``arrays`` stays below ``LIMIT`` (see the module); False
        for a NaN anywhere, whose comparisons are all false.

        Every step's bound grows with its inputs' (and a mask's largest value and the magnitude
        of its smallest), so inputs whose bounds are each at most those of a run that passed pass
        too: the walk over the steps runs only for larger ones."""
        bound = dict(self.constant_bounds)
        ranges = dict(self.mask_ranges) if self.masks or self.mask_ranges else None
        key = []
        compiled = self._scans_compiled()
        for name, a in zip(self.inputs, arrays):
            if name in self.conditions:   # read as 0 and 1: a bool array viewed from other bytes is the nodes'
                if a.size and int(a.view(np.uint8).max()) > 1:
                    return False
                continue
            if name in self.masks:   # a softmax's mask (see segment_plain._softmax)
                found = _mask_range(a, compiled)
                if found is None:
                    return False
                hi, lo = ranges[name] = found
                key += [hi, -lo]
                continue
            flat = a.reshape(-1) if a.dtype == F32 else a.reshape(-1).astype(F32)
            if name in self.scores:   # finite, of any size (a masked fill's lowest number)
                hi, lo = (float(np.max(flat)), float(np.min(flat))) if flat.size else (0.0, 0.0)
                if not (math.isfinite(hi) and math.isfinite(lo)):
                    return False
                bound[name] = max(hi, -lo)
                key.append(bound[name])
                continue
            if compiled and a.dtype == F32:   # the largest magnitude, in one pass
                b = _scans.magnitude(flat)
            else:   # a sum of squares (one pass in numpy) bounds the largest magnitude too
                b = math.sqrt(float(np.dot(flat, flat))) if flat.size else 0.0
                if not b < LIMIT:   # it overflows long before the values do
                    b = float(np.max(np.abs(flat))) if flat.size else 0.0
            if not b < LIMIT:
                return False
            bound[name] = b
            key.append(b)
        passed = self._passed
        if passed is not None and all(k <= p for k, p in zip(key, passed)):
            return True
        if not self._walk(bound, ranges):
            return False
        self._passed = key
        return True

    def _scans_compiled(self) -> bool:
        """Whether the guards scan with ``_scans.py``'s compiled functions (else numpy's)."""
        if self._compiled_scans is None:
            self._compiled_scans = _scans.compiled() is not None
        return self._compiled_scans

    def _walk(self, bound, ranges) -> bool:
        """The bound walk over the steps from the inputs' ``bound`` and masks' ``ranges``."""
        for kind, out, reads, facts in self.bound_steps:
            if kind == "conv":
                rows, bias, (act, alpha, beta) = facts
                pre = bound[reads[0]] * rows + bias + (bound[reads[1]] if reads[1] is not None else 0.0)
                if not pre < LIMIT:
                    return False
                b = BOUNDED[act](pre, alpha, beta)
            elif kind == "act":
                act, alpha, beta = facts
                b = BOUNDED[act](bound[reads[0]], alpha, beta)
            elif kind == "matmul":   # each result a sum of inner-dim products
                inner, act = facts
                pre = bound[reads[0]] * bound[reads[1]] * inner
                if not pre < LIMIT:
                    return False
                b = BOUNDED[act](pre, 0.0, 0.0)
            elif kind == "masked":   # scores plus a mask, then a softmax: at most 1
                hi, lo = ranges[reads[1]]
                if not (bound[reads[0]] + max(hi, 0.0) < LIMIT and bound[reads[0]] - min(lo, 0.0) < SUM_TO_INF):
                    return False
                b = 1.0
            elif kind == "norm":   # normalised values lie within sqrt(features)
                features, scale, shift = facts
                if not (2.0 * bound[reads[0]]) ** 2 * features < LIMIT:   # the squares of the centred values
                    return False
                b = math.sqrt(features) * scale + shift
            elif kind == "add":
                b = bound[reads[0]] + bound[reads[1]]
            elif kind == "mul":
                b = bound[reads[0]] * bound[reads[1]]
            elif kind == "div":   # by a constant of no zero: facts is its smallest magnitude
                b = bound[reads[0]] / facts
            elif kind == "filled":   # scores or a fill, which only softmaxes read: any finite value
                if not bound[reads[0]] < LIMIT:
                    return False
                bound[out] = max(bound[reads[0]], facts)
                continue
            elif kind == "max":
                b = max(bound[r] for r in reads)
            elif kind == "window":
                b = bound[reads[0]]
                if not b * facts < LIMIT:   # the window's sum
                    return False
            else:
                b = bound[reads[0]]
            if not b < LIMIT:
                return False
            bound[out] = b
        return True

    def run(self, arrays, outs=None, threads=None, checked=False):
        """The outputs for ``arrays`` (C-contiguous f32 of the planned shapes), or None where the
        program may not run them (see the module). ``outs``: C-contiguous arrays to write the
        outputs into (of each output's shape, or of its size where it is returned reshaped), instead
        of new ones; ``threads``: every primitive's threads, instead of by its work; ``checked``:
        the caller found the bound of a run on ``arrays`` already (``lanes.py``)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            if not checked and not self.bounded(arrays):
                return None
            if threads is not None and outs is not None and _native.available():
                return self._run_native(arrays, outs, threads)
            for prim, template, work in self.calls:
                args = {}
                for arg, (kind, value) in template.items():
                    args[arg] = value if kind == "buf" else arrays[value]
                prim.run(args, threads or threads_for(work))
            if not self.checks_pass(arrays):
                return None
            results = []
            for i, (name, step) in enumerate(self.finals):
                out = np.empty(self.shape[name], self.dtype[name]) if outs is None else outs[i].reshape(self.shape[name])
                kind, value = self._arg(name)
                step.run({C.ARG_FROM: value if kind == "buf" else arrays[value], C.ARG_TO: out},
                         threads or threads_for(out.size))
                shape = self.final_shape.get(name)
                results.append(out if shape is None else out.reshape(shape))
            return results
        finally:
            self.lock.release()


    def _native(self, threads):
        """The compiled loop (``_native.py``) of this program with every primitive on ``threads``."""
        native = self.natives.get(threads)
        if native is None:
            inputs = len(self.inputs)
            calls = [(prim, template, threads) for prim, template, _ in self.calls]
            calls += [(step, {C.ARG_FROM: self._arg(name), C.ARG_TO: ("in", inputs + i)}, threads)
                      for i, (name, step) in enumerate(self.finals)]
            native = self.natives[threads] = _native.Native(calls)
        return native

    def native_task(self, arrays, outs, threads):
        """(compiled loop, the addresses of its arrays, the arrays) of a run on ``arrays`` into
        ``outs`` on ``threads``, for another thread to run (``_lane_worker.py``); the caller holds
        ``lock``, has checked ``bounded`` and calls ``checks_pass`` after the run."""
        made = [out.reshape(self.shape[name]) for out, (name, _) in zip(outs, self.finals)]
        every = list(arrays) + made
        return self._native(threads), np.array([address(a) for a in every], np.uint64), every

    def _run_native(self, arrays, outs, threads):
        """``run`` with every primitive on ``threads`` in one compiled loop (``_native.py``)."""
        native = self._native(threads)
        made = [out.reshape(self.shape[name]) for out, (name, _) in zip(outs, self.finals)]
        native.run(list(arrays) + made)
        if not self.checks_pass(arrays):
            return None
        return [out if self.final_shape.get(name) is None else out.reshape(self.final_shape[name])
                for out, (name, _) in zip(made, self.finals)]

    def checks_pass(self, arrays) -> bool:
        """Whether a run on ``arrays`` that has ended stands (its scans find nothing that oneDNN
        computes otherwise than the nodes)."""
        return self._no_subnormals(arrays) and self._no_small_sources(arrays) and self._no_constant_rows(arrays)

    def _no_small_sources(self, arrays) -> bool:
        """False where a bf16 div's or mul's source may make a subnormal result, or the source of
        a cast to f32 that would lose the sign of a -0.0 holds one (``small_checks``)."""
        if not self.small_checks:
            return True
        if self._scan16 is None:
            self._scan16 = np.empty(max(check[2] for check in self.small_checks), np.uint16)
        for kind, value, items, bits, *zeros in self.small_checks:
            source = value.view(np.uint16)[:items] if kind == "buf" else arrays[value].reshape(-1)[:items].view(np.uint16)
            if not source.size:
                continue
            if bits and _holds_small(source, self._scan16, bits):   # 0 < |source| < the bound
                return False
            if zeros and zeros[0] and _holds_negative_zero(source, self._scan16):
                return False
        return True

    def _no_constant_rows(self, arrays) -> bool:
        """False where a layer norm's row may hold equal values (``segment_plain.py``)."""
        if not self.row_checks:
            return True
        in_doubt = _scans.rows_in_doubt if self._scans_compiled() else _scans.rows_in_doubt_numpy
        if not in_doubt(self.stats[0, :self.stats_used], self.stats[1, :self.stats_used]):
            return True   # no row of any layer norm in doubt: one check
        for mean, var, source in self.row_checks:
            kind, value = self._arg(source)
            items = math.prod(self.shape[source])   # of an input, its first: source may be a view of it
            values = (value.view(self.dtype[source])[:items] if kind == "buf"
                      else arrays[value].reshape(-1)[:items])
            if constant_rows(values.reshape(mean.size, -1), mean, var).size:
                return False
        return True

    def _no_subnormals(self, arrays) -> bool:
        if not self.subnormal_checks:
            return True
        if self._scan is None:
            self._scan = np.empty(max(self.scan_items, 1), np.uint32)
        for kind, value, items, *zeros in self.subnormal_checks:
            source = value.view(F32) if kind == "buf" else arrays[value].reshape(-1)[:items]
            if not source.size:
                continue
            bits = np.ascontiguousarray(source, F32).reshape(-1).view(np.uint32)
            if _holds_small(bits, self._scan, SMALLEST_NORMAL):   # oneDNN's cast flushed it: the nodes round it
                return False
            if zeros and zeros[0] and _holds_negative_zero(bits, self._scan):   # oneDNN's cast made it +0.0
                return False
        return True


def _holds_small(bits, scratch, below: int) -> bool:
    """Whether the float bit patterns ``bits`` (f32 as uint32, bf16 as uint16) hold a nonzero
    magnitude whose pattern is below ``below``: a magnitude's bits less 1 (0 wraps to the
    largest) lie below ``below - 1`` just then, and one reduction finds any. ``scratch``: at least
    as many items of ``bits``'s dtype."""
    scan = scratch[:bits.size]
    np.bitwise_and(bits, bits.dtype.type(np.iinfo(bits.dtype).max >> 1), out=scan)   # the sign off
    np.subtract(scan, bits.dtype.type(1), out=scan)
    return int(scan.min()) < below - 1


def _holds_negative_zero(bits, scratch) -> bool:
    """Whether the float bit patterns ``bits`` (f32 as uint32, bf16 as uint16) hold -0.0: a pattern
    equal to it leaves 0 in the exclusive or, and one reduction finds any. ``scratch``: as
    ``_holds_small``'s."""
    kind, pattern = NEGATIVE_ZERO[bits.dtype.itemsize]
    scan = scratch[:bits.size]
    np.bitwise_xor(bits, kind(pattern), out=scan)
    return int(scan.min()) == 0


def _mask_range(a, compiled=False):
    """(largest, smallest finite) value of a softmax's mask, or None where it holds NaN or +inf, or
    a row (along its last axis, the softmax's) of -inf only: such a row of the softmax is NaN,
    which the nodes replace (``segment_plain._softmax``). ``compiled``: scan with ``_scans.py``'s
    compiled function."""
    if not a.size:
        return 0.0, 0.0
    wide = a if a.dtype == F32 else a.astype(F32)
    flat = np.ascontiguousarray(wide).reshape(-1)
    if compiled:
        hi, lo, nan = _scans.extremes(flat)
        if nan:
            return None
    else:
        hi, lo = float(np.max(flat)), float(np.min(flat))
    if not hi < LIMIT:   # NaN, +inf, or the largest numbers
        return None
    if lo == -math.inf:   # masked places: fine, unless a whole row is; a masked place counts as 0
        scan = _scans.masked_rows if compiled else _scans.masked_rows_numpy
        rest, whole = scan(flat, wide.shape[-1])
        if whole:
            return None
        lo = min(rest, 0.0)
    return hi, lo


def _every_window_has_a_tap(g) -> bool:
    """Whether every pooling window holds at least one position inside the input."""
    for size, out, k, stride, pad, dilation in zip(g.spatial, g.out, g.kernel, g.stride, g.padding, g.dilation):
        for o in range(out):
            start = o * stride - pad
            if not any(0 <= start + t * dilation < size for t in range(k)):
                return False
    return True


def _names(reads):
    for value in reads.values():
        if isinstance(value, list):
            yield from value
        elif value is not None:
            yield value


def _blocked(shape, dtype=F32) -> Desc:
    """Channels blocked by 16 (nChw16c), the layout ONEDNN's convolution kernel asks for."""
    return conv._layout("blocked", shape, dtype)


def _clone(md) -> int:
    """An owned copy of a descriptor a primitive owns."""
    return new("dnnl_memory_desc_clone", md.handle)
