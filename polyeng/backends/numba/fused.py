"""fused_conv on NUMBA: its conv, add and activation kernels one after another
(``backends/_fused.py``)."""
from .._fused import composed
from . import activation, arithmetic, clip, conv

fused_conv = composed(conv, arithmetic, activation, clip)
