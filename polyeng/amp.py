"""Automatic mixed precision: op categories and user rules (see ``polyeng.engine.mixed_precision``)."""
from .engine.mixed_precision import (Category, conversion_override, register_mixed_precision_conversion,
                         unregister_mixed_precision_conversion)

__all__ = ["Category", "conversion_override", "register_mixed_precision_conversion",
           "unregister_mixed_precision_conversion"]
