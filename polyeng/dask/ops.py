"""Ops on dask arrays: a call with a dask array among its arguments returns a lazy dask array.

The call is validated where it is made, on zero-stride placeholders of the dask arrays' shapes
and dtypes, so a bad argument raises at once, named, and the result's shape and dtype (dask's
``dtype`` and ``meta``) come from the op's own prepared facts: dask never calls an op on fake
arrays. Each block then runs the op through the selector on its worker, under the settings in
effect where the op was called (``polyeng.current_settings()``).

Chunks: elementwise ops and data movement run block by block as the inputs are chunked
(operands are aligned and broadcast as numpy does). The axes an op needs whole are rechunked to
one chunk first: softmax's axis, layer_norm's normalized axes, the reduced axes of mean, sum,
amax and amin, pooling's and upsampling's spatial axes (except max/avg pooling with
non-overlapping windows, run block by block on stride-aligned chunks), lstm's and gru's time and
feature axes, linear's input features, embedding's table, concat's and split's axis, the dims
reshape changes and the dims pad pads. matmul's contraction axis stays chunked: each output block
sums the products of its blocks in the result dtype (f32 or f64; a 16-bit result is not split, so
its f32 accumulation stays one).
"""
from __future__ import annotations

import string

import dask.array as da
import numpy as np

from ..engine import dtypes as dt
from ..engine.call import map_arrays
from ..engine.plugins import registry
from ..engine.settings import current_settings
from . import blocks

_LOOP = string.ascii_lowercase
_OTHER = string.ascii_uppercase


def is_dask(value) -> bool:
    return isinstance(value, da.Array)


def placeholder(value, name: str = "input"):
    """A zero-stride numpy array of ``value``'s shape and dtype, for validation without data."""
    shape = tuple(value.shape)
    if any(not isinstance(d, (int, np.integer)) or d != d for d in shape):
        raise ValueError(f"{name} is a dask array of unknown shape {shape}; call .compute_chunk_sizes() "
                         f"on it first")
    return np.broadcast_to(np.zeros((), value.dtype), shape)


def refuse_device_tensors(op: str, kwargs) -> None:
    """TypeError when a device tensor comes with a dask array: it would have to be pickled."""
    native = registry().native_types()
    if not native:
        return
    found = []
    map_arrays(kwargs, found.append, lambda v: isinstance(v, native))
    if found:
        raise TypeError(f"{op}: a device tensor ({type(found[0]).__name__}) was given with a dask array; device "
                        f"tensors are never sent to workers. Bring it to the host first (polyeng.to_numpy) or "
                        f"compute the dask array")


def apply(spec, kwargs: dict):
    """The lazy result of ``spec``'s op on ``kwargs``, some of which are dask arrays."""
    refuse_device_tensors(spec.name, kwargs)
    names = {}

    def stand_in(value):
        return placeholder(value, names.get(id(value), "a dask argument"))
    for name, value in kwargs.items():
        map_arrays(value, lambda v, n=name: names.setdefault(id(v), n), is_dask)
    args = spec.validate(**map_arrays(kwargs, stand_in, is_dask))
    prepared = spec.prepare(args)
    call = LazyCall(spec, kwargs, args, prepared)
    rule = RULES.get(spec.chunking)
    if rule is None:
        raise TypeError(f"{spec.name} does not take dask arrays: its OpSpec names no dask rule "
                        f"(chunking={spec.chunking!r}; rules: {', '.join(RULES)})")
    return rule(call)


class LazyCall:
    """One op call being turned into dask blockwise layers."""

    def __init__(self, spec, kwargs, args, prepared):
        self.spec, self.op = spec, spec.name
        self.kwargs, self.args, self.prepared = kwargs, args, prepared
        self.settings = current_settings()
        self.template = dict(kwargs)
        self.inputs = []   # [dask array, index] pairs, in Slot order

    @property
    def ndim(self) -> int:
        return len(self.prepared.shape)

    def array(self, value, index, validated=None):
        """``value`` as a blockwise input with ``index`` (a string of one-letter symbols, or a tuple
        of symbols); anything but a dask array becomes a one-chunk dask array of its validated
        form (one task, fetched once by each worker that needs it)."""
        if not is_dask(value):
            value = da.from_array(np.asarray(value if validated is None else validated), chunks=-1)
        self.inputs.append([value, tuple(index)])
        return blocks.Slot(len(self.inputs) - 1)

    def put(self, name: str, index) -> None:
        self.template[name] = self.array(self.kwargs[name], index, self.args.get(name))

    def _rechunked(self, whole):
        whole, pairs = set(whole), []
        for value, index in self.inputs:
            axes = {axis: -1 for axis, letter in enumerate(index) if letter in whole}
            if axes and any(len(value.chunks[a]) > 1 for a in axes):
                value = value.rechunk(axes)
            pairs += [value, index]
        return pairs

    def build(self, out: str, *, whole: str = "", new_axes=None, adjust_chunks=None, dtype=None, fn=None,
              concatenate=True, **extra):
        dtype = np.dtype(self.prepared.dtype if dtype is None else dtype)
        fn = fn or blocks.run_op
        if fn is blocks.run_op:
            extra = dict(op=self.op, settings=self.settings, template=self.template, **extra)
        return da.blockwise(fn, out, *self._rechunked(whole), dtype=dtype, meta=np.empty((0,) * len(out), dtype),
                            new_axes=new_axes, adjust_chunks=adjust_chunks, concatenate=concatenate,
                            align_arrays=True, token=f"polyeng-{self.op}", **extra)

    def several(self, loop: str, outputs, *, whole: str = "", adjust_chunks=None):
        """An op with several results: one task per block runs it, and each result is taken from
        that task's tuple. ``outputs``: ``(path, index, dtype, new_axes)`` per result."""
        tuples = self.build(loop, whole=whole, adjust_chunks=adjust_chunks, dtype=object)
        return [part_of(tuples, loop, path, index, dtype, new_axes, f"polyeng-{self.op}-part")
                for path, index, dtype, new_axes in outputs]


def part_of(tuples, loop, path, index, dtype, new_axes, token):
    """The dask array of one result of tasks that return several: ``tuples`` (one tuple per block,
    blocks indexed by ``loop``), the result at ``path`` in each, laid out as ``index`` with the
    sizes of its axes outside ``loop`` in ``new_axes``."""
    return da.blockwise(blocks.part, index, tuples, loop, dtype=dtype, meta=np.empty((0,) * len(index), dtype),
                        new_axes=new_axes or None, concatenate=True, path=path, token=token)


# --- the rules, per op or family ------------------------------------------------------------------

def _elementwise(c: LazyCall):
    out = _LOOP[:c.ndim]
    for name, value in c.args.items():
        if isinstance(value, np.ndarray) and value.ndim > 0:   # 0-d operands stay in the task
            c.put(name, out[c.ndim - value.ndim:])
    return c.build(out)


def _matmul(c: LazyCall):
    a, b = c.args["a"], c.args["b"]
    batch = _LOOP[:max(a.ndim, b.ndim, 2) - 2]
    a_index = "k" if a.ndim == 1 else batch[len(batch) - (a.ndim - 2):] + "mk"
    b_index = "k" if b.ndim == 1 else batch[len(batch) - (b.ndim - 2):] + "kn"
    out = batch + ("m" if a.ndim > 1 else "") + ("n" if b.ndim > 1 else "")
    c.put("a", a_index)
    c.put("b", b_index)
    if c.prepared.dtype in dt.SIXTEEN_BIT_FLOATS:   # f32 accumulation inside one kernel call
        return c.build(out, whole="k")
    # the contraction axis stays chunked: each task gets the lists of its row and column blocks
    return c.build(out, fn=blocks.run_matmul, concatenate=False, settings=c.settings, out_dtype=c.prepared.dtype)


def _linear(c: LazyCall):
    x = c.args["x"]
    lead = _LOOP[:x.ndim - 1]
    c.put("x", lead + "I")
    c.put("weight", "OI")
    if c.kwargs.get("bias") is not None:
        c.put("bias", "O")
    return c.build(lead + "O", whole="IO")


def _along_axes(c: LazyCall, axes, *, weights=()):
    """x and the optional ``weights`` on the result's trailing axes (each broadcast as numpy
    broadcasts it: fused_softmax's mask may also grow x), the ``axes`` whole."""
    out = _LOOP[:c.ndim]
    whole = "".join(out[a] for a in axes)
    for name in ("x",) + tuple(weights):
        if c.kwargs.get(name) is not None:
            c.put(name, out[c.ndim - len(c.args[name].shape):])
    return c.build(out, whole=whole)


def _softmax(c: LazyCall):   # softmax, log_softmax and fused_softmax (with its mask)
    return _along_axes(c, [c.args["axis"] % max(c.ndim, 1)] if c.ndim else [], weights=("mask",))


def _layer_norm(c: LazyCall):
    k = len(c.args["normalized_shape"])
    return _along_axes(c, range(c.ndim - k, c.ndim), weights=("weight", "bias"))


def _reduction(c: LazyCall):
    x = c.args["x"]
    index = _LOOP[:x.ndim]
    reduced = c.args["axis"]
    whole = "".join(index[a] for a in reduced)
    c.put("x", index)
    if c.args["keepdims"]:
        return c.build(index, whole=whole, adjust_chunks={index[a]: 1 for a in reduced})
    return c.build("".join(letter for letter in index if letter not in whole), whole=whole)


def _spatial(c: LazyCall, nd: int):
    """Pooling and upsampling: the leading dims chunked as given, the last ``nd`` whole."""
    x = c.args["x"]
    index = _LOOP[:x.ndim]
    spatial = index[x.ndim - nd:]
    sizes = dict(zip(spatial, c.prepared.shape[x.ndim - nd:]))
    c.put("x", index)
    return index, spatial, sizes


def _pooling(c: LazyCall):
    g = c.prepared.geometry
    nd = len(g.spatial)
    index, spatial, sizes = _spatial(c, nd)
    if c.args.get("return_indices"):
        loop = index[:len(index) - nd]
        return tuple(c.several(loop, [((0,), index, c.prepared.dtype, sizes),
                                      ((1,), index, np.dtype(np.int64), sizes)], whole=spatial))
    tiled = _tiles(c, g, spatial)
    if tiled is not None:
        return tiled
    return c.build(index, whole=spatial, adjust_chunks=sizes)


def _tiles(c: LazyCall, g, spatial):
    """Pooling with non-overlapping windows (kernel = stride, no padding, no dilation) block by
    block: chunks rounded to multiples of the stride, each output block from its own input block.
    Exact: every window lies inside one block. None where the windows are not like that."""
    if g.kernel != g.stride or any(p for p in g.padding) or any(d != 1 for d in g.dilation):
        return None
    if any(n % k for n, k in zip(g.spatial, g.kernel)):   # a partial window at the end: ceil_mode decides it
        return None
    x, index = c.inputs[0]
    ndim = x.ndim
    chunks = list(x.chunks)
    for axis, k in zip(range(ndim - len(spatial), ndim), g.kernel):
        if all(n % k == 0 for n in chunks[axis]):
            continue
        size = max(k, (max(chunks[axis]) // k) * k)
        chunks[axis] = _even(x.shape[axis], size)
    if tuple(chunks) != x.chunks:
        c.inputs[0][0] = x.rechunk(tuple(chunks))
    adjust = {letter: (lambda n, k=k: n // k) for letter, k in zip(spatial, g.kernel)}
    return c.build(index, adjust_chunks=adjust)


def _even(total: int, size: int) -> tuple:
    full, rest = divmod(total, size)
    return (size,) * full + ((rest,) if rest else ())


def _upsample(c: LazyCall):
    nd = c.args["x"].ndim - 2
    index, spatial, sizes = _spatial(c, nd)
    return c.build(index, whole=spatial, adjust_chunks=sizes)


def _recurrent(c: LazyCall):
    """lstm and gru: the batch chunked as given (h0 and c0 with it); time and features whole."""
    shape = c.prepared.geometry
    if shape.unbatched:
        c.put("x", "TI")
        loop, y_index, state_index = "", "TY", "LZ"
    else:
        c.put("x", "bTI" if shape.batch_first else "TbI")
        loop = "b"
        y_index, state_index = ("bTY" if shape.batch_first else "TbY"), "LbZ"
    states = [name for name in ("h0", "c0") if name in c.args]   # gru has no c0
    for name in states:
        if c.kwargs.get(name) is not None:
            c.put(name, state_index)
    # every weight its own symbols (their sizes differ between layers), each a single chunk
    c.template["params"] = [[None if w is None else c.array(_whole(c.kwargs["params"][i][j]),
                                                            [f"w{i}.{j}.{a}" for a in range(w.ndim)], w)
                             for j, w in enumerate(layer)] for i, layer in enumerate(c.args["params"])]
    y_dtype = c.prepared.dtype
    sizes_y = {"T": shape.seq_len, "Y": shape.num_directions * shape.hidden_size}
    sizes_state = {"L": shape.num_layers * shape.num_directions, "Z": shape.hidden_size}
    # results: (y, h_n) for gru, (y, (h_n, c_n)) for lstm
    paths = [(1,)] if len(states) == 1 else [(1, k) for k in range(len(states))]
    y, *final = c.several(loop, [((0,), y_index, y_dtype, sizes_y)]
                          + [(path, state_index, y_dtype, sizes_state) for path in paths], whole="TIL")
    return (y, final[0]) if len(states) == 1 else (y, tuple(final))


def _whole(value):
    return value.rechunk(-1) if is_dask(value) and value.npartitions > 1 else value


def _conv(c: LazyCall):
    """The batch chunked as given; channels and spatial dims whole (every output reads them all)."""
    x, weight = c.args["x"], c.args["weight"]
    nd = weight.ndim - 2
    lead = _LOOP[:x.ndim - nd - 1]            # the batch, when x has one
    spatial, taps, out = "HW"[:nd], "KL"[:nd], "PQ"[:nd]
    c.put("x", lead + "C" + spatial)
    c.put("weight", "OI" + taps)
    if c.kwargs.get("bias") is not None:
        c.put("bias", "O")
    sizes = dict(zip(out, c.prepared.shape[len(c.prepared.shape) - nd:]))
    if c.kwargs.get("residual") is not None:   # fused_conv's: the batch chunked as x, the rest whole
        c.put("residual", lead + "O" + out)
        return c.build(lead + "O" + out, whole="C" + spatial + "OI" + taps + out)
    return c.build(lead + "O" + out, whole="C" + spatial + "OI" + taps, new_axes=sizes)


def _batch_norm(c: LazyCall):
    """Chunked as given; each channel statistic with the chunks of axis 1."""
    out = _LOOP[:c.ndim]
    c.put("x", out)
    for name in ("running_mean", "running_var", "weight", "bias"):
        if c.kwargs.get(name) is not None:
            c.put(name, out[1])
    return c.build(out)


def _embedding(c: LazyCall):
    index = _LOOP[:c.args["ids"].ndim]
    c.put("ids", index)
    c.put("weight", "VD")
    return c.build(index + "D", whole="VD")


def _concat(c: LazyCall):
    axis, tensors = c.args["axis"], c.kwargs["tensors"]
    out = _LOOP[:c.ndim]
    c.template["tensors"] = [c.array(t, out[:axis] + _OTHER[i % 26] + out[axis + 1:], c.args["tensors"][i])
                             for i, t in enumerate(tensors)]
    whole = _OTHER[:len(tensors)]
    if len(tensors) > 26:
        raise ValueError(f"concat of {len(tensors)} tensors on dask arrays: at most 26")
    return c.build(out[:axis] + "Z" + out[axis + 1:], whole=whole, new_axes={"Z": c.prepared.shape[axis]})


def _permute(c: LazyCall):
    index = _LOOP[:c.ndim]
    c.put("x", index)
    return c.build("".join(index[d] for d in c.args["dims"]))


def _split(c: LazyCall):
    """The split axis whole (a piece may take rows of two chunks), the others chunked as given;
    one task per block makes every piece of it, each piece a dask array of its own."""
    x, axis = c.args["x"], c.args["axis"]
    index = _LOOP[:x.ndim]
    c.put("x", index)
    loop = index[:axis] + index[axis + 1:]
    return tuple(c.several(loop, [((k,), index[:axis] + _OTHER[k % 26] + index[axis + 1:], c.prepared.dtype,
                                   {_OTHER[k % 26]: shape[axis]}) for k, shape in enumerate(c.prepared.shapes)],
                           whole=index[axis]))


def _pad(c: LazyCall):
    """The padded dims whole (an output block at either end reads the far end of its dim: reflect
    mirrors about it); the others, pads (0, 0) included, chunked as given."""
    index = _LOOP[:c.ndim]
    pads = c.args["pads"]
    padded = [c.ndim - 1 - i for i in range(len(pads) // 2) if pads[2 * i] or pads[2 * i + 1]]
    c.put("x", index)
    return c.build(index, whole="".join(index[d] for d in padded),
                   adjust_chunks={index[d]: c.prepared.shape[d] for d in padded})


def _reshape(c: LazyCall):
    x_shape, out_shape = tuple(c.args["x"].shape), c.prepared.shape
    p = 0
    while p < min(len(x_shape), len(out_shape)) and x_shape[p] == out_shape[p]:
        p += 1
    index = _LOOP[:len(x_shape)]
    c.put("x", index[:p] + _OTHER[:len(x_shape) - p])
    tail = _OTHER[10:10 + len(out_shape) - p]
    return c.build(index[:p] + tail, whole=_OTHER[:len(x_shape) - p],
                   new_axes={letter: n for letter, n in zip(tail, out_shape[p:])},
                   keep_prefix=(p, tuple(out_shape[p:])))


# The chunking rules an OpSpec names (``OpSpec.chunking``): kinds of block structure, not ops.
RULES = {
    "elementwise": _elementwise, "matmul": _matmul, "linear": _linear, "softmax": _softmax,
    "layer_norm": _layer_norm, "reduction": _reduction, "pooling": _pooling, "upsample": _upsample,
    "recurrent": _recurrent, "embedding": _embedding, "concat": _concat, "permute": _permute, "reshape": _reshape,
    "conv": _conv, "batch_norm": _batch_norm, "pad": _pad, "split": _split,
}
