"""Engine-level public functions that are not ops."""
from __future__ import annotations

from .plugins import registry
from .registry import EngineInfo


def engines() -> list[EngineInfo]:
    """One record per registered engine: ``.name``, ``.available``, ``.reason``, ``.ops``."""
    return registry().info()
