"""Checking an ONNX graph before anything is built from it.

``check(proto, versions, where)`` raises one ValueError listing every fault it finds, each naming
the node, attribute, tensor or graph input:

- every value is assigned once (no two nodes write one output, no node writes a graph input or an
  initializer, no graph input or initializer is named twice);
- every node input is defined before the node (an undefined name, nodes out of order and cycles
  are told apart);
- an initializer that shadows a graph input has the input's type and shape;
- each attribute of a default-domain node is one its schema has, of the schema's type, with every
  required attribute present and every dtype attribute (Cast ``to``) a known type;
- graph inputs and initializers have known element types and no negative dims;
- every graph output is computed.

Ops of other domains are not checked here: the converter registry refuses them by name.
"""
from __future__ import annotations

MAX_FAULTS = 20     # listed in one error; more are counted
MAX_DIM = 2 ** 40   # a declared dim larger than this describes no array a machine holds


def check(proto, versions: dict, where: str) -> None:
    import onnx
    faults = []
    graph = proto.graph
    domains = [entry.domain or "ai.onnx" for entry in proto.opset_import]
    for domain in sorted({d for d in domains if domains.count(d) > 1}):
        faults.append(f"the opset of domain {domain!r} is imported {domains.count(domain)} times")
    defined = {}                                      # name -> what defined it, for messages
    for vi in graph.input:
        _check_value_info(vi, faults, onnx)
        if vi.name in defined:
            faults.append(f"graph input {vi.name!r} is named twice")
        defined[vi.name] = "a graph input"
    declared = {vi.name: vi for vi in graph.input}
    seen_initializers = set()
    for init in graph.initializer:
        if init.name in seen_initializers:
            faults.append(f"initializer {init.name!r} is named twice")
        seen_initializers.add(init.name)
        _check_tensor(init, f"initializer {init.name!r}", faults, onnx)
        if init.name in declared:
            _check_shadow(init, declared[init.name], faults, onnx)
        defined[init.name] = "an initializer"
    later = {}                                        # output name -> index of the node writing it
    for i, node in enumerate(graph.node):
        for name in node.output:
            if name:
                later.setdefault(name, i)
    for i, node in enumerate(graph.node):
        label = f"{node.op_type} {_name(node, i)!r}"
        for name in node.input:
            if name and name not in defined:
                if name in later:
                    faults.append(f"{label}: input {name!r} is computed only by a later node "
                                  f"({graph.node[later[name]].op_type} {_name(graph.node[later[name]], later[name])!r}); "
                                  f"the nodes are out of order or form a cycle")
                else:
                    faults.append(f"{label}: input {name!r} is not a graph input, an initializer or any node's output")
        for name in node.output:
            if not name:
                continue
            if name in defined:
                faults.append(f"{label}: output {name!r} is already {defined[name]} (each value is assigned once)")
            else:
                defined[name] = f"the output of {label}"
        if node.domain in ("", "ai.onnx"):
            _check_schema(node, label, versions.get("", 0), faults, onnx)
    for vi in graph.output:
        if vi.name not in defined:
            faults.append(f"graph output {vi.name!r} is not computed by any node")
    if faults:
        shown = faults[:MAX_FAULTS]
        more = f"\n  ... and {len(faults) - MAX_FAULTS} more" if len(faults) > MAX_FAULTS else ""
        count = f"{len(faults)} fault{'s' if len(faults) > 1 else ''}"
        raise ValueError(f"{where}: not a valid ONNX graph, {count}:\n  " + "\n  ".join(shown) + more)


def _name(node, i: int) -> str:
    return node.name or f"{node.op_type}_{i}"


def _dtype_known(elem_type: int, onnx) -> bool:
    try:
        onnx.helper.tensor_dtype_to_np_dtype(elem_type)
        return True
    except Exception:
        return False


def _check_value_info(vi, faults: list, onnx) -> None:
    t = vi.type
    if not t.HasField("tensor_type"):
        return                       # sequences and maps: the loader refuses them by name
    if not _dtype_known(t.tensor_type.elem_type, onnx):
        faults.append(f"graph input {vi.name!r}: element type {t.tensor_type.elem_type} is not a known ONNX type")
    elif t.tensor_type.elem_type == onnx.TensorProto.STRING:
        faults.append(f"graph input {vi.name!r}: a tensor of strings; polyeng computes on numbers")
    if t.tensor_type.HasField("shape"):
        for axis, d in enumerate(t.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value < 0:
                faults.append(f"graph input {vi.name!r}: dim {axis} is {d.dim_value}; sizes are >= 0")
            elif d.HasField("dim_value") and d.dim_value > MAX_DIM:
                faults.append(f"graph input {vi.name!r}: dim {axis} is {d.dim_value}, more than any array "
                              f"holds (at most {MAX_DIM})")


_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _check_tensor(tensor, label: str, faults: list, onnx) -> None:
    if not _dtype_known(tensor.data_type, onnx):
        faults.append(f"{label}: data type {tensor.data_type} is not a known ONNX type")
    elif tensor.data_type == onnx.TensorProto.STRING:
        faults.append(f"{label}: a tensor of strings; polyeng computes on numbers")
    typed = [f for f in _TYPED_FIELDS if len(getattr(tensor, f))]
    if tensor.HasField("raw_data") and typed or len(typed) > 1:
        faults.append(f"{label}: its data is given twice ({', '.join((['raw_data'] if tensor.HasField('raw_data') else []) + typed)})")
    if any(d < 0 for d in tensor.dims):
        faults.append(f"{label}: negative dim in its shape {list(tensor.dims)}")


def _check_shadow(init, vi, faults: list, onnx) -> None:
    """An initializer listed among the inputs is the input's default value: it must fit the input."""
    t = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
    if t is None:
        return
    if t.elem_type and t.elem_type != init.data_type:
        faults.append(f"initializer {init.name!r} has element type {init.data_type} but the graph input of that "
                      f"name is declared {t.elem_type}")
    if t.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if len(dims) != len(init.dims) or any(d is not None and d != s for d, s in zip(dims, init.dims)):
            shown = [d if d is not None else "?" for d in dims]
            faults.append(f"initializer {init.name!r} has shape {list(init.dims)} but the graph input of that name "
                          f"is declared {shown}")


_TYPE_ATTRIBUTES = ("to", "dtype", "output_dtype")    # INT attributes that name an element type


# INT attributes that are flags: 0 or 1 only
_FLAGS = {"ceil_mode", "keepdims", "count_include_pad", "transA", "transB", "noop_with_empty_axes", "training_mode",
          "allowzero", "linear_before_reset", "input_forget", "storage_order", "layout", "select_last_index"}
_CONSTANT_VALUES = {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                    "value_strings", "sparse_value"}


def _check_schema(node, label: str, opset: int, faults: list, onnx) -> None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:
        return                       # no such op at this opset: the converter registry says so
    inputs, outputs = len(node.input), len(node.output)
    if not schema.min_input <= inputs <= schema.max_input:
        faults.append(f"{label}: {inputs} input{'s' if inputs != 1 else ''}; {node.op_type} takes "
                      f"{_count(schema.min_input, schema.max_input)}")
    if not schema.min_output <= outputs <= schema.max_output or not any(node.output):
        faults.append(f"{label}: {outputs} output{'s' if outputs != 1 else ''}; {node.op_type} has "
                      f"{_count(max(schema.min_output, 1), schema.max_output)}")
    if node.op_type == "Constant" and len([a for a in node.attribute if a.name in _CONSTANT_VALUES]) != 1:
        faults.append(f"{label}: a Constant holds exactly one of {', '.join(sorted(_CONSTANT_VALUES))}")
    _check_attributes(node, label, schema, faults, onnx)


def _count(low: int, high: int) -> str:
    if low == high:
        return str(low)
    return f"{low} or more" if high >= 2 ** 31 - 1 else f"{low} to {high}"


def _check_attributes(node, label: str, schema, faults: list, onnx) -> None:
    allowed = schema.attributes
    present = set()
    for attr in node.attribute:
        if attr.name in present:
            faults.append(f"{label}: attribute {attr.name!r} is given twice")
        present.add(attr.name)
        spec = allowed.get(attr.name)
        if spec is None:
            faults.append(f"{label}: {node.op_type} has no attribute {attr.name!r}")
            continue
        want = int(spec.type.value)
        if attr.type != want:
            faults.append(f"{label}: attribute {attr.name!r} is {_type_name(attr.type, onnx)}; {node.op_type} "
                          f"takes {_type_name(want, onnx)}")
            continue
        if attr.name in _TYPE_ATTRIBUTES and attr.type == onnx.AttributeProto.INT \
                and not _dtype_known(attr.i, onnx):
            faults.append(f"{label}: attribute {attr.name!r} is {attr.i}, not a known ONNX element type")
        if attr.name in _FLAGS and attr.type == onnx.AttributeProto.INT and attr.i not in (0, 1):
            faults.append(f"{label}: attribute {attr.name!r} is {attr.i}; expected 0 or 1")
        if attr.type == onnx.AttributeProto.TENSOR:
            _check_tensor(attr.t, f"{label}: attribute {attr.name!r}", faults, onnx)
    for name, spec in allowed.items():
        if spec.required and name not in present:
            faults.append(f"{label}: required attribute {name!r} is missing")


def _type_name(code: int, onnx) -> str:
    try:
        return "a" + ("n " if onnx.AttributeProto.AttributeType.Name(code)[0] in "AEIOU" else " ") + \
            onnx.AttributeProto.AttributeType.Name(code)
    except ValueError:
        return f"of unknown attribute type {code}"
