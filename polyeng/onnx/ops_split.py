"""Split: the input's pieces along ``axis`` (sizes from the ``split`` input, the opset 13-17 form,
or ``num_outputs`` from opset 18, or equal parts). On a tensor polyeng computes it is one
``split`` node (GPT-2's and ViT's fused QKV projection); on constants the pieces fold, and on
shape values they are host slices."""
from __future__ import annotations

from .builder import Unsupported
from .context import OnnxNode, positive_axis
from .registry import converter


def _sizes(n: OnnxNode, length) -> list:
    outputs = len(n.output_names)
    split = n.ints(1, "split") if n.has(1) else None
    if split is not None:
        if len(split) != outputs or any(s < 0 for s in split):
            raise ValueError(f"split={split}: expected {outputs} sizes >= 0, one per output")
        if type(length) is int and sum(split) != length:
            raise ValueError(f"split={split} sums to {sum(split)}, not the axis length {length}")
        return split
    count = int(n.attr("num_outputs", outputs))
    if count != outputs:
        raise ValueError(f"num_outputs={count} but the node has {outputs} outputs")
    if type(length) is not int:
        raise Unsupported("an equal split of an axis whose length is not fixed at load time")
    if n.opset >= 18:   # ceil(length / count) each, the last smaller
        part = -(-length // count)
        return [min(part, max(length - i * part, 0)) for i in range(count)]
    if length % count:
        raise ValueError(f"an axis of {length} does not split into {count} equal parts")
    return [length // count] * count


@converter("Split")
def split(n: OnnxNode) -> None:
    x = n.need(0, "input")
    if x.rank is None:
        raise Unsupported("the input's rank is unknown")
    axis = positive_axis(int(n.attr("axis", 0)), x.rank)
    sizes = _sizes(n, x.shape[axis] if x.shape is not None else None)
    if x.kind == "data":
        types = [n.out_type(i, x.dtype) if n.used(i) else (x.dtype, None) for i in range(len(sizes))]
        names = [n.output_names[i] if n.used(i) else f"{n.name}.{i}" for i in range(len(sizes))]
        pieces = n.b.emit("split", {"x": x, "split_size_or_sections": list(sizes), "axis": axis}, types,
                          names=names, out=tuple(range(len(sizes))), node_name=n.name)
        for i, piece in enumerate(pieces):
            n.set(i, piece)
        return
    start = 0
    for i, size in enumerate(sizes):
        key = (slice(None),) * axis + (slice(start, start + size),)
        start += size
        if n.used(i):
            if x.is_const:
                n.emit("onnx.getitem", {"x": x, "key": key}, i=i)
            else:
                n.emit("onnx.slice", {"x": x, "starts": [key[axis].start], "ends": [key[axis].stop], "axes": [axis],
                                      "steps": [1]}, i=i, dtype=x.dtype)
