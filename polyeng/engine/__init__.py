"""The engine: selection, settings, fp math, registry, plugins and verbose.

The data path of a call reads top to bottom in ``dispatch.run``.
"""
