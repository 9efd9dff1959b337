"""cast: convert to a floating-point type with round-to-nearest-even."""
from ..engine.mixed_precision import Category
from ..engine.call import Prepared
from .catalogue import OpSpec
from ..engine.dispatch import run
from ..engine import dtypes as dt
from . import _checks as check
from . import _recommend


def cast(x, dtype):
    """``x`` converted to the float type ``dtype`` (float16, bfloat16, float32, float64, or a name
    such as ``"bf16"``), rounding to nearest even; NaN and Inf are kept, overflow becomes Inf."""
    return run(SPEC, x=x, dtype=dtype)


def _validate(x, dtype):
    x = check.tensor(x, "x")
    target = dt.as_dtype(dtype, "dtype")
    if target not in dt.FLOAT_DTYPES:
        raise TypeError(f"dtype={target.name}: cast converts to a floating-point type; "
                        f"expected one of float16, bfloat16, float32, float64")
    return {"x": x, "dtype": target}


SPEC = OpSpec(name="cast", function=cast, validate=_validate, category=Category.FOLLOW,
              prepare=lambda args: Prepared(args["x"].shape, args["dtype"]), exact=True,
              recommend=_recommend.jit_from(16384), preference=_recommend.PREFERENCE,
              chunking="elementwise",
              example=lambda t, rng: ((t(6, 31), "bfloat16"), {}),
              warmup=lambda t, rng: [((t(6, 31), target), {}) for target in ("float16", "float32", "float64")],
              zero_size=lambda z: ((z(0, 2), "f16"), {}, (0, 2)))
SPECS = [SPEC]
