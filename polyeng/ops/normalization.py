"""layer_norm: normalise over the trailing ``normalized_shape`` axes (torch.nn.functional.layer_norm)."""

import numpy as np

from ..engine.mixed_precision import Category
from .catalogue import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``len(normalized_shape)`` axes.

    The variance is biased (divides by the element count). Always computed in at least f32.
    """
    return run(SPEC, x=x, normalized_shape=normalized_shape, weight=weight, bias=bias, eps=eps)


def _validate(x, normalized_shape, weight, bias, eps):
    x = check.tensor(x, "x", floats_only=True, op="layer_norm")
    if isinstance(normalized_shape, np.ndarray) and normalized_shape.ndim == 1:
        normalized_shape = tuple(normalized_shape.tolist())
    if isinstance(normalized_shape, (list, tuple, range)):
        if len(normalized_shape) == 0:
            raise ValueError("normalized_shape=(): expected at least one dimension")
        shape = check.int_tuple(tuple(normalized_shape), len(normalized_shape), "normalized_shape", minimum=0)
    else:
        shape = (check.integer(normalized_shape, "normalized_shape", minimum=0),)
    if len(shape) > len(x.shape) or tuple(x.shape[len(x.shape) - len(shape):]) != shape:
        raise ValueError(f"normalized_shape={shape} does not match the trailing dimensions of x "
                         f"{check.shape_str(x.shape)}; expected x.shape[-{len(shape)}:] == normalized_shape")
    params = {}
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            value = check.tensor(value, name, floats_only=True, op="layer_norm", like=x.dtype)
            if tuple(value.shape) != shape:
                raise ValueError(f"{name} has shape {check.shape_str(value.shape)}; expected normalized_shape {shape}")
            check.same_or_f32(value, x.dtype, name)
        params[name] = value
    eps = check.eps(eps)
    return {"x": x, "normalized_shape": shape, "weight": params["weight"], "bias": params["bias"],
            "eps": eps}


SPEC = OpSpec(
    name="layer_norm",
    function=layer_norm,
    validate=_validate,
    category=Category.DENY,
    prepare=check.like_input,
    recommend=_recommend.jit_from(512), preference=_recommend.PREFERENCE,
    chunking="layer_norm",
    example=lambda t, rng: ((t(4, 6, 32), 32), {"weight": t(32), "bias": t(32)}),
    warmup=lambda t, rng: [((t(4, 6, 32), 32), {})],
    zero_size=lambda z: ((z(0, 16), 16), {}, (0, 16)),
    tolerance=32,
)
SPECS = [SPEC]
