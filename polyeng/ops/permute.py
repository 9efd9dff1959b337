"""permute_contiguous: a C-contiguous copy of ``x.transpose(dims)``."""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def permute_contiguous(x, dims):
    """Return a C-contiguous copy of ``x.transpose(dims)``; ``dims`` is a permutation of the axes
    (negative axes allowed, as in ``torch.permute``)."""
    return run(SPEC, x=x, dims=dims)


def _validate(x, dims):
    x = check.tensor(x, "x")
    ndim = len(x.shape)
    if isinstance(dims, np.ndarray) and dims.ndim == 1:
        dims = tuple(dims.tolist())
    if not isinstance(dims, (list, tuple, range)):
        raise TypeError(f"dims={dims!r}: expected a permutation of range({ndim}) as a list or tuple of ints")
    if len(dims) != ndim:
        raise ValueError(f"dims={tuple(dims)!r} has {len(dims)} entries but x is {ndim}-D; "
                         f"expected a permutation of range({ndim})")
    normalised = tuple(check.axis(check.integer(d, f"dims[{i}]"), ndim, "dims") for i, d in enumerate(dims))
    if sorted(normalised) != list(range(ndim)):
        raise ValueError(f"dims={tuple(dims)!r} repeats an axis; expected a permutation of range({ndim})")
    return {"x": x, "dims": normalised}


def _prepare(args) -> Prepared:
    x = args["x"]
    return Prepared(tuple(x.shape[d] for d in args["dims"]), x.dtype)


SPEC = OpSpec(
    name="permute_contiguous",
    function=permute_contiguous,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=_prepare,
    exact=True,
    recommend=_recommend.jit_from(1 << 22), preference=_recommend.PREFERENCE,   # numpy's strided copy ties numba at 3M elements
    chunking="permute",
    example=lambda t, rng: ((t(2, 5, 3, 7), (0, 2, 1, 3)), {}),
    warmup=lambda t, rng: [((t(2, 5, 3, 7), (0, 1, 3, 2)), {})],
    zero_size=lambda z: ((z(0, 3, 2), (2, 0, 1)), {}, (2, 0, 3)),
)
SPECS = [SPEC]
