"""Graphs: functions traced into nodes of polyeng ops, run node by node through the selector,
converted to mixed precision ahead of time (``polyeng.amp``), saved and loaded (SPEC §6)."""
from .graph import Graph
from .ir import Node, Value
from .deserialize import load
from .fusing import fuse, fusions
from .tracer import trace

__all__ = ["Graph", "Node", "Value", "load", "trace", "fuse", "fusions"]
