"""reshape: numpy's rule (one ``-1`` inferred), without copying where numpy returns a view.

A device tensor reshapes on its device; a contiguous one only changes its shape.
"""
import math

import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def reshape(x, shape):
    """``x`` with shape ``shape`` (an int or a tuple of ints, at most one of them -1); the same
    data where numpy would return a view, else a copy."""
    return run(SPEC, x=x, shape=shape)


def _validate(x, shape):
    x = check.tensor(x, "x")
    return {"x": x, "shape": target_shape(x.shape, shape)}


def target_shape(have, shape) -> tuple:
    """The requested shape with its -1 resolved; ValueError naming the shape when it cannot hold
    exactly the elements of ``have``."""
    if isinstance(shape, np.ndarray) and shape.ndim <= 1:
        shape = tuple(shape.tolist()) if shape.ndim else int(shape)
    if isinstance(shape, (list, tuple)):
        dims = tuple(check.integer(d, f"shape[{i}]") for i, d in enumerate(shape))
    else:
        dims = (check.integer(shape, "shape"),)
    size = math.prod(have)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"shape={dims!r}: expected sizes >= 0 and at most one -1")
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape x of shape {check.shape_str(have)} ({size} elements) into "
                             f"shape={dims!r}: the -1 cannot be inferred")
        dims = tuple(size // known if d == -1 else d for d in dims)
    elif known != size:
        raise ValueError(f"cannot reshape x of shape {check.shape_str(have)} ({size} elements) into "
                         f"shape={dims!r} ({known} elements)")
    return tuple(int(d) for d in dims)


SPEC = OpSpec(name="reshape", function=reshape, validate=_validate, category=Category.FOLLOW,
              prepare=lambda args: Prepared(args["shape"], args["x"].dtype), exact=True,
              # nothing to compute: numpy's reshape is the kernel on the host for every engine
              recommend=_recommend.reference, preference=_recommend.PREFERENCE,
              chunking="reshape",
              example=lambda t, rng: ((t(4, 6, 8), (4, 2, -1)), {}),
              zero_size=lambda z: ((z(0, 3), (3, -1)), {}, (3, 0)))
SPECS = [SPEC]
