"""Equal on shape values (``Where(Equal(shape, -1), 1, shape)``, how PyTorch's exporter writes
expand's target): folded at load time where both sides are known, else a host node. A comparison
of tensors computed by polyeng ops is refused: polyeng has no elementwise comparison op."""
from __future__ import annotations

from .builder import Unsupported
from .context import OnnxNode
from .ops_math import _known, _settle
from .registry import converter


@converter("Equal")
def equal(n: OnnxNode) -> None:
    a, b = n.need(0, "A"), n.need(1, "B")
    if a.kind == "data" or b.kind == "data":
        raise Unsupported("a comparison of tensors polyeng computes (it compares shape values only)")
    ka, kb = _known(a), _known(b)
    known = None
    if ka is not None and kb is not None and (len(ka) == len(kb) or 1 in (len(ka), len(kb))):
        width = max(len(ka), len(kb))
        ka, kb = (ka * width if len(ka) == 1 else ka), (kb * width if len(kb) == 1 else kb)
        known = tuple(None if x is None or y is None else int(x == y) for x, y in zip(ka, kb))
    n.emit("onnx.compare", {"a": a, "b": b, "op": "equal"}, dtype="bool", known=known)
    _settle(n)
