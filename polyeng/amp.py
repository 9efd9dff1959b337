"""Automatic mixed precision: op categories and user rules (see ``polyeng.engine.amp``)."""
from .engine.amp import (Category, conversion_override, register_mixed_precision_conversion,
                         unregister_mixed_precision_conversion)

__all__ = ["Category", "conversion_override", "register_mixed_precision_conversion",
           "unregister_mixed_precision_conversion"]
