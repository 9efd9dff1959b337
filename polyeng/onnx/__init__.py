"""ONNX models as polyeng graphs (needs the ``onnx`` package: ``pip install 'polyeng[onnx]'``).

``polyeng.onnx.load(model)`` reads a model file, bytes or ``onnx.ModelProto`` into a
``polyeng.graph.Graph``: each ONNX node becomes the polyeng op it maps to, shape plumbing on
fixed dims is folded at load time, and plumbing on the model's named dims runs on the host at
run time. The graph runs on every engine, converts with ``polyeng.amp`` and saves with
``Graph.save``. ``supported_ops()`` says which ops it converts at which opsets, ``fusions()``
which exporter idioms it turns into one op. See docs/onnx.md for the ops, their attributes and
the limits.
"""
from __future__ import annotations

__all__ = ["load", "supported_ops", "fusions"]


def __getattr__(name: str):
    # The loader and its converters import on first use: a saved graph's ``onnx.*`` nodes run
    # through ``polyeng.onnx.host_ops`` alone, without them (and without the onnx package).
    if name in __all__:
        from . import loader
        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
