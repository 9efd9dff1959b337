"""concat: join arrays along an existing axis (torch.cat)."""
from collections.abc import Sequence

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend


def concat(tensors, axis=0):
    """Join ``tensors`` (a non-empty sequence of arrays of equal rank) along ``axis``.

    Sizes must match on every other axis; dtypes promote as in numpy (bf16 + f16 -> f32).
    """
    return run(SPEC, tensors=tensors, axis=axis)


def _validate(tensors, axis):
    # a Sequence, so that a dict (its keys) or a set (no order) is not joined by mistake
    if isinstance(tensors, (str, bytes)) or not isinstance(tensors, Sequence):
        raise TypeError(f"tensors={type(tensors).__name__}: expected a list or tuple of arrays")
    if len(tensors) == 0:
        raise ValueError("tensors=[]: expected at least one array to concatenate")
    arrays = [check.tensor(t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    ndim = len(arrays[0].shape)
    if ndim == 0:
        raise ValueError("tensors[0] is 0-D; concat expects arrays with at least one dimension")
    for i, a in enumerate(arrays):
        if len(a.shape) != ndim:
            raise ValueError(f"tensors[{i}] has shape {check.shape_str(a.shape)} ({len(a.shape)}-D) but "
                             f"tensors[0] is {ndim}-D; every array must have the same rank")
    ax = check.axis(axis, ndim)
    first = arrays[0].shape
    for i, a in enumerate(arrays[1:], start=1):
        for d in range(ndim):
            if d != ax and a.shape[d] != first[d]:
                raise ValueError(f"tensors[{i}] has shape {check.shape_str(a.shape)} but tensors[0] has "
                                 f"{check.shape_str(first)}; sizes must match except along axis={ax} "
                                 f"(they differ on axis {d})")
    check.promoted([(f"tensors[{i}]", a.dtype) for i, a in enumerate(arrays)], "concat")
    return {"tensors": arrays, "axis": ax}


def _prepare(args) -> Prepared:
    """The joined shape and the promoted dtype every input is converted to."""
    shapes = [a.shape for a in args["tensors"]]
    ax = args["axis"]
    shape = tuple(shapes[0][:ax]) + (sum(s[ax] for s in shapes),) + tuple(shapes[0][ax + 1:])
    return Prepared(shape, dt.result_type(*[a.dtype for a in args["tensors"]]))


SPEC = OpSpec(
    name="concat",
    function=concat,
    validate=_validate,
    category=Category.FOLLOW,
    prepare=_prepare,
    exact=True,
    recommend=_recommend.jit_from(1 << 20), preference=_recommend.PREFERENCE,   # numba 1.09x BASIC at 1.6M elements, slower at 200k
    chunking="concat",
    example=lambda t, rng: (([t(2, 3, 5, 5), t(2, 4, 5, 5)],), {"axis": 1}),
    zero_size=lambda z: (([z(0, 3), z(0, 2)],), {"axis": 1}, (0, 5)),
)
SPECS = [SPEC]
