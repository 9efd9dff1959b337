"""polyeng: one numpy-level API for deep-learning operators, run on the best of several engines."""
from numpy import bool_, float16, float32, float64, int8, int32, int64, uint8
from .engine.dtypes import BFLOAT16_TYPE as bfloat16
from .engine.names import Engine
from .engine.errors import EngineError, FallbackWarning, PluginError, PluginWarning
from .engine.hookspecs import hookimpl
from .engine.api import engines, to_device, to_numpy
from .engine.plugins import register_backend, unregister_backend
from .engine.settings import Settings, bind, compute_eng, current_settings, get_compute_eng, set_compute_eng
from .engine.fpmath import FpMathMode, fp_math_mode, get_fp_math_mode, set_default_fp_math_mode
from .engine.verbose import verbose
from .engine.threads import get_num_threads, num_threads, set_num_threads
from .engine.dispatch import explain
from . import amp
from .ops import catalogue as _catalogue

__version__ = "0.1.0"

__all__ = [
    "amp", "Engine", "EngineError", "FallbackWarning", "PluginError", "PluginWarning", "FpMathMode", "bind",
    "compute_eng", "current_settings", "engines", "Settings",
    "explain", "fp_math_mode", "get_compute_eng", "get_fp_math_mode", "hookimpl", "register_backend",
    "set_compute_eng", "set_default_fp_math_mode", "to_device", "to_numpy", "unregister_backend", "verbose",
    "get_num_threads", "num_threads", "set_num_threads",
    "bfloat16", "bool_", "float16", "float32", "float64", "int8", "int32", "int64", "uint8",
]

# The ops, as the catalogue finds them in polyeng/ops: nothing here lists them.
globals().update((name, spec.function) for name, spec in _catalogue.specs().items())
__all__ += list(_catalogue.specs())

# OpenBLAS's workers sleep soon after their last task instead of spinning for 0.1 s
from .backends import _blas_spin
_blas_spin.apply()
