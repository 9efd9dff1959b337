"""fused_softmax on BASIC: its add, softmax, isnan and select kernels one after another
(``backends/_fused.py``)."""
from .._fused import composed_softmax
from . import arithmetic, logical, select, softmax

fused_softmax = composed_softmax(arithmetic, softmax, logical, select)
