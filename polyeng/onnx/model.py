"""Reading an ONNX model: the file, bytes or ModelProto; its opset; and each value's dtype and shape.

Value types come from ONNX's own shape inference run on a copy of the graph whose intermediate
and output shape annotations were removed first: exporters declare shapes that do not hold for
every input (a fixed sequence length on a model whose sequence is dynamic), so only the graph
inputs' declared shapes (the model's signature) and the ops' own shape rules decide. A dim is an
int (fixed), a name (the model's dim_param, or one inference made up), or None (unknown).
"""
from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass

import numpy as np

from . import external_data

FIRST_OPSET = 13    # the oldest default-domain opset polyeng reads; the newest is onnx's own


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("polyeng.onnx needs the onnx package: pip install 'polyeng[onnx]'") from None
    return onnx


def read(model, base_dir=None, data=None):
    """``model`` (a path, bytes or ``onnx.ModelProto``) as a ModelProto with its external data read
    (``external_data``: from the model file's folder, or ``base_dir``), and the number of tensors
    read from there; ValueError when it is not one. A ModelProto given is copied, never changed.
    ``data``, for a path, is the file's bytes already read (parsed in the format its name says, as
    ``onnx.load`` does)."""
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        where = "the ModelProto given"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(bytes(model))
        except Exception as exc:
            raise ValueError(f"the bytes given are not an ONNX model ({exc})") from None
        where = "the bytes given"
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file")
        if os.path.isdir(path):
            raise ValueError(f"{path}: a directory, not an ONNX model file")
        if not stat.S_ISREG(os.stat(path).st_mode):   # a FIFO would block for ever, /dev/zero never end
            raise ValueError(f"{path}: not a regular file")
        try:
            if data is None:
                proto = onnx.load(path, load_external_data=False)   # read below, from this folder only
            else:
                fmt = onnx.serialization.registry.get_format_from_file_extension(os.path.splitext(path)[1])
                proto = onnx.load_model_from_string(data, format=fmt or "protobuf")
        except Exception as exc:
            raise ValueError(f"{path}: not an ONNX model ({type(exc).__name__}: {exc})") from None
        where = path
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
    else:
        raise TypeError(f"model={model!r}: expected a path, bytes or an onnx.ModelProto")
    if not proto.HasField("graph") or not proto.graph.node and not proto.graph.output:
        raise ValueError(f"{where}: not an ONNX model (no graph in it)")
    if proto.ir_version > onnx.IR_VERSION:
        raise ValueError(f"{where}: ir_version {proto.ir_version} is newer than the installed onnx package reads "
                         f"({onnx.IR_VERSION})")
    return proto, external_data.load(proto, base_dir, where)


@functools.cache
def newest_opset() -> int:
    """The newest default-domain opset the installed ``onnx`` package knows: the last one polyeng
    reads (the converters' ranges say which ops changed form up to it)."""
    return int(_onnx().defs.onnx_opset_version())


def opset(proto) -> int:
    """The default-domain opset; ValueError outside the range polyeng reads."""
    version = None
    for entry in proto.opset_import:
        if entry.domain in ("", "ai.onnx"):
            version = entry.version
    if version is None:
        raise ValueError("the model imports no opset of the default ONNX domain")
    if not FIRST_OPSET <= version <= newest_opset():
        raise ValueError(f"the model uses opset {version}; polyeng reads opsets {FIRST_OPSET} to {newest_opset()} "
                         f"(convert it with onnx.version_converter.convert_version)")
    return version


@dataclass
class Types:
    """name -> (numpy dtype or None, shape tuple or None) for every value inference could type."""
    values: dict

    def dtype(self, name):
        found = self.values.get(name)
        return None if found is None else found[0]

    def shape(self, name):
        found = self.values.get(name)
        return None if found is None else found[1]


def _type_of(value_info):
    onnx = _onnx()
    t = value_info.type
    if not t.HasField("tensor_type"):
        return None
    elem = t.tensor_type.elem_type
    dtype = None
    if elem:
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
        except Exception:
            dtype = None
    shape = None
    if t.tensor_type.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                      for d in t.tensor_type.shape.dim)
    return dtype, shape


def infer_types(proto, data_prop: bool = True) -> Types:
    onnx = _onnx()
    stripped = onnx.ModelProto()
    stripped.CopyFrom(proto)
    del stripped.graph.value_info[:]
    for output in stripped.graph.output:
        if output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    imported = {entry.domain for entry in stripped.opset_import}
    for domain in sorted({node.domain for node in stripped.graph.node} - imported - {"ai.onnx"}):
        stripped.opset_import.add(domain=domain, version=1)   # so inference types the rest of the graph
    try:
        inferred = onnx.shape_inference.infer_shapes(stripped, data_prop=data_prop)
    except Exception:   # inference gives up on some models; the declared inputs still type the graph
        inferred = stripped
    g = inferred.graph
    values = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        found = _type_of(vi)
        if found is not None:
            values[vi.name] = found
    for init in g.initializer:
        values[init.name] = (np.dtype(onnx.helper.tensor_dtype_to_np_dtype(init.data_type)), tuple(init.dims))
    return Types(values)


def attributes(node, label: str) -> dict:
    """A NodeProto's attributes as Python values (tensors as numpy arrays, graphs refused later);
    ValueError naming ``label`` and the attribute when a tensor's data does not fit its shape."""
    onnx = _onnx()
    found = {}
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH or attr.type == onnx.AttributeProto.GRAPHS:
            found[attr.name] = attr   # subgraphs (If, Loop): no op polyeng runs takes one
            continue
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, onnx.TensorProto):
            value = to_array(value, f"{label}: attribute {attr.name!r}")
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        found[attr.name] = value
    return found


def to_array(tensor, label: str) -> np.ndarray:
    """A TensorProto's data as an owned, writeable array; ValueError naming ``label`` when the data
    does not fit the declared shape and type."""
    onnx = _onnx()
    try:
        array = onnx.numpy_helper.to_array(tensor)
    except Exception as exc:
        kind = onnx.TensorProto.DataType.Name(tensor.data_type) \
            if tensor.data_type in onnx.TensorProto.DataType.values() else tensor.data_type
        raise ValueError(f"{label}: its data does not fit shape {list(tensor.dims)} of type {kind} "
                         f"({type(exc).__name__}: {exc})") from None
    return np.array(array)   # owned and writeable, whatever the storage was
