"""ONNX models as polyeng graphs (needs the ``onnx`` package: ``pip install 'polyeng[onnx]'``).

``polyeng.onnx.load(model)`` reads a model file, bytes or ``onnx.ModelProto`` into a
``polyeng.graph.Graph``: each ONNX node becomes the polyeng op it maps to, shape plumbing on
fixed dims is folded at load time, and plumbing on the model's named dims runs on the host at
run time. The graph runs on every engine, converts with ``polyeng.amp`` and saves with
``Graph.save``. See docs/onnx.md for the ops, their attributes and the limits.
"""
from .loader import load, supported_ops

__all__ = ["load", "supported_ops"]
