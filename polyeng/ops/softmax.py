"""softmax and log_softmax along one axis (torch.softmax / torch.log_softmax)."""
from ..engine.mixed_precision import Category
from .catalogue import OpSpec
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


def _spec(name, function, **catalogue):
    return OpSpec(name=name, function=function, validate=_validator(name), category=Category.DENY,
                  prepare=check.like_input,
                  recommend=_recommend.jit_from(512), preference=_recommend.PREFERENCE,
                  chunking="softmax", tolerance=16, **catalogue)


SOFTMAX = _spec("softmax", softmax, example=lambda t, rng: ((t(4, 5, 33),), {"axis": -1}),
                warmup=lambda t, rng: [((t(4, 5, 33),), {"axis": 1})],
                zero_size=lambda z: ((z(3, 0),), {"axis": 0}, (3, 0)))
LOG_SOFTMAX = _spec("log_softmax", log_softmax, example=lambda t, rng: ((t(4, 5, 33),), {"axis": 1}),
                    warmup=lambda t, rng: [((t(4, 5, 33),), {"axis": -1})],
                    zero_size=lambda z: ((z(0, 4),), {}, (0, 4)))
SPECS = [SOFTMAX, LOG_SOFTMAX]
