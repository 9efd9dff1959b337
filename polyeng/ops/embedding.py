"""embedding: rows of a table picked by integer ids (``torch.nn.functional.embedding``)."""
import numpy as np

from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend

ID_DTYPES = (dt.int32, dt.int64)


def embedding(ids, weight):
    """``weight[ids]``: for int32/int64 ``ids`` of any shape and a 2-D floating-point ``weight``
    of shape (rows, dim), an array of shape ``ids.shape + (dim,)``. An id outside
    ``[0, rows)`` is a ValueError naming it (numpy would wrap negative ids around)."""
    return run(SPEC, ids=ids, weight=weight)


def _validate(ids, weight):
    ids = check.tensor(ids, "ids")
    if ids.dtype not in ID_DTYPES:
        raise TypeError(f"ids has dtype {ids.dtype}; embedding expects int32 or int64 ids")
    weight = check.tensor(weight, "weight", floats_only=True, ranks=(2,), op="embedding")
    check_range(ids, len(weight))
    return {"ids": ids, "weight": weight}


def check_range(ids, rows: int) -> None:
    """ValueError naming the first id outside [0, rows) and where it is."""
    host = ids if isinstance(ids, np.ndarray) else np.asarray(ids)
    if host.size == 0:
        return
    if host.ndim and not any(host.strides):   # one value seen everywhere (explain's placeholders)
        low = high = host[(0,) * host.ndim]
    else:
        low, high = host.min(), host.max()
    if low >= 0 and high < rows:
        return
    bad = np.flatnonzero((host.reshape(-1) < 0) | (host.reshape(-1) >= rows))
    where = np.unravel_index(int(bad[0]), host.shape)
    place = f"ids[{', '.join(str(int(i)) for i in where)}]" if host.ndim else "ids"
    raise ValueError(f"{place}={int(host.reshape(-1)[bad[0]])} is out of range for weight with {rows} rows "
                     f"(expected 0 <= id < {rows}; {len(bad)} of {host.size} ids are outside)")


def _prepare(args) -> Prepared:
    ids, weight = args["ids"], args["weight"]
    return Prepared(tuple(ids.shape) + (weight.shape[1],), weight.dtype)


SPEC = OpSpec(name="embedding", function=embedding, validate=_validate, category=Category.FOLLOW,
              prepare=_prepare, exact=True,
              # ids into a (512, 64) f32 table, both counted: NUMBA/BASIC 1.10x at 2**18, 0.92x at 2**17
              recommend=_recommend.jit_from(1 << 18), preference=_recommend.PREFERENCE,
              chunking="embedding",
              example=lambda t, rng: ((rng.integers(0, 50, (3, 7)), t(50, 16)), {}),
              zero_size=lambda z: ((z(2, 0).astype("int64"), z(5, 3)), {}, (2, 0, 3)))
SPECS = [SPEC]
