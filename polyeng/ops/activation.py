"""gelu (torch.nn.functional.gelu), exact (erf) or with the tanh approximation."""
from ..engine.mixed_precision import Category
from ..engine.call import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def gelu(x, approximate="none"):
    """``x * Phi(x)``; ``approximate="tanh"`` uses ``0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))``."""
    return run(SPEC, x=x, approximate=approximate)


def _validate(x, approximate):
    x = check.tensor(x, "x", floats_only=True, op="gelu")
    return {"x": x, "approximate": check.choice(approximate, "approximate", ("none", "tanh"))}


SPEC = OpSpec(name="gelu", function=gelu, validate=_validate, category=Category.FOLLOW,
              prepare=check.like_input,
              # exact form 3.5x BASIC's erf loop at 512 elements, the tanh form within 10%
              recommend=_recommend.jit_from(512), preference=_recommend.PREFERENCE)
SPECS = [SPEC]
