"""NUMBA: JIT-compiled CPU kernels. Registered with its availability; kernels are added per op."""
from ...engine.hookspecs import hookimpl

NAME = "numba"


def availability():
    try:
        import numba  # noqa: F401  (heavy import, done only when availability is asked)
    except Exception as exc:
        return False, f"numba cannot be imported: {type(exc).__name__}: {exc}"
    return True, ""


@hookimpl
def polyeng_register(registry):
    registry.add_engine(NAME, available=availability)
