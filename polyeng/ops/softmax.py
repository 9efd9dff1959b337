"""softmax and log_softmax along one axis (torch.softmax / torch.log_softmax)."""
from ..engine.mixed_precision import Category
from ..engine.call import OpSpec
from ..engine.dispatch import run
from . import _checks as check
from . import _recommend


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably (max subtracted) in at least f32."""
    return run(SOFTMAX, x=x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` along ``axis``, computed stably in at least f32."""
    return run(LOG_SOFTMAX, x=x, axis=axis)


def _validator(op):
    def validate(x, axis):
        x = check.tensor(x, "x", floats_only=True, op=op)
        return {"x": x, "axis": check.axis(axis, len(x.shape))}
    return validate


def _spec(name, function):
    return OpSpec(name=name, function=function, validate=_validator(name), category=Category.DENY,
                  prepare=check.like_input,
                  recommend=_recommend.jit_from(512), preference=_recommend.PREFERENCE)


SOFTMAX = _spec("softmax", softmax)
LOG_SOFTMAX = _spec("log_softmax", log_softmax)
SPECS = [SOFTMAX, LOG_SOFTMAX]
