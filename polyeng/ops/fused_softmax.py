"""fused_softmax: ``softmax(x + mask)`` with its NaNs replaced by ``nan_fill``, as one op: the node
a graph's ``masked_softmax`` fusion (``polyeng.graph.fusions``) makes of an attention's mask add,
its softmax and the ``where(isnan(p), 0, p)`` exporters write after it.

- ``x``: floats; the softmax runs along ``axis``.
- ``mask`` (optional): added to ``x`` first, with numpy's broadcasting (the result has the
  broadcast shape); of ``x``'s dtype. An attention mask of shape (batch, 1, 1, seq) or
  (batch, 1, seq, seq) for scores of shape (batch, heads, seq, seq) is read as it is, never
  expanded.
- ``nan_fill`` (optional): a number that every NaN of the softmax becomes (a row of all -inf, or
  one holding NaN or +inf, is NaN); None leaves NaNs as they are.

The result equals ``add``, ``softmax``, ``isnan`` and ``select`` called one after another (within
softmax's tolerance, special values included). NUMBA runs it in one pass over each row when the
axis is the last one: the masked row is reduced while it sits in L1, so the scores are read once
and the result written once. The other engines call their own add, softmax, isnan and select
kernels one after another.

Mixed precision: DENY, as softmax.
"""
from __future__ import annotations

import numpy as np

from ..engine.call import Prepared
from ..engine.dispatch import run
from ..engine.mixed_precision import Category
from . import _checks as check
from . import _recommend
from .catalogue import OpSpec


def fused_softmax(x, mask=None, axis=-1, nan_fill=None):
    """``softmax(x + mask, axis)`` with NaNs replaced by ``nan_fill`` (None: kept)."""
    return run(FUSED_SOFTMAX, x=x, mask=mask, axis=axis, nan_fill=nan_fill)


def _validate(x, mask, axis, nan_fill):
    x = check.tensor(x, "x", floats_only=True, op="fused_softmax")
    shape = tuple(x.shape)
    if mask is not None:
        mask = check.tensor(mask, "mask", floats_only=True, op="fused_softmax", like=x.dtype)
        if mask.dtype != x.dtype:
            raise TypeError(f"mask has dtype {mask.dtype}; fused_softmax adds it to x, of dtype {x.dtype} "
                            f"(the same dtype is needed)")
        try:
            shape = np.broadcast_shapes(shape, tuple(mask.shape))
        except ValueError:
            raise ValueError(f"mask has shape {check.shape_str(mask.shape)}, which does not broadcast with x's "
                             f"shape {check.shape_str(x.shape)}") from None
    return {"x": x, "mask": mask, "axis": check.axis(axis, len(shape)),
            "nan_fill": None if nan_fill is None else check.real(nan_fill, "nan_fill")}


def _prepare(args):
    x, mask = args["x"], args["mask"]
    if mask is None:
        return check.like_input(args)
    return Prepared(np.broadcast_shapes(tuple(x.shape), tuple(mask.shape)), x.dtype)


FUSED_SOFTMAX = OpSpec(
    name="fused_softmax", function=fused_softmax, validate=_validate, prepare=_prepare,
    category=Category.DENY, recommend=_recommend.jit_from(512), preference=_recommend.PREFERENCE,
    chunking="softmax", tolerance=16,
    example=lambda t, rng: ((t(3, 2, 5, 33), t(3, 1, 1, 33)), {"axis": -1, "nan_fill": 0.0}),
    warmup=lambda t, rng: [((t(3, 2, 5, 33), t(3, 1, 5, 33)), {"nan_fill": 0.0}),
                           ((t(4, 5, 33),), {"axis": 1}), ((t(4, 1, 33), t(5, 1)), {"nan_fill": -1.0})],
    zero_size=lambda z: ((z(2, 0, 7), z(2, 1, 7)), {"nan_fill": 0.0}, (2, 0, 7)))
SPECS = [FUSED_SOFTMAX]

