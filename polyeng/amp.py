"""Automatic mixed precision: op categories and user rules (``polyeng.engine.mixed_precision``), the
graph pass that converts a model once, ahead of time, and the validation-driven search that picks
which nodes to convert (SPEC §6)."""
from .engine.mixed_precision import (Category, conversion_override, register_mixed_precision_conversion,
                                     unregister_mixed_precision_conversion)
from .graph.amp_pass import to_mixed_precision
from .graph.amp_search import AmpReport, auto_mixed_precision

__all__ = ["AmpReport", "Category", "auto_mixed_precision", "conversion_override",
           "register_mixed_precision_conversion", "to_mixed_precision", "unregister_mixed_precision_conversion"]
