"""The decision cache: a repeated call signature reuses its plan; anything the selector looks
at (engine scope, fp math mode, dtypes, shapes, options, registered backends) gives a new one."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dispatch, plan_cache
from polyeng.engine.plugins import registry
from polyeng.ops import OPS
from support import FakeEngine


def plan(op, **args):
    spec = OPS[op]
    return dispatch.plan_for(spec, spec.validate(**args), registry())


def test_same_signature_reuses_the_plan():
    x = np.ones((2, 3), np.float32)
    first = plan("softmax", x=x, axis=-1)
    assert plan("softmax", x=np.zeros((2, 3), np.float32), axis=-1) is first   # values do not matter


@pytest.mark.parametrize("change", ["dtype", "shape", "strides", "axis", "scope", "mode", "fallback"])
def test_what_the_selector_reads_is_in_the_key(change):
    x = np.ones((4, 6), np.float32)
    base = plan("softmax", x=x, axis=-1)
    if change == "dtype":
        other = plan("softmax", x=x.astype(np.float64), axis=-1)
    elif change == "shape":
        other = plan("softmax", x=np.ones((4, 7), np.float32), axis=-1)
    elif change == "strides":
        other = plan("softmax", x=np.ones((6, 4), np.float32).T, axis=-1)
    elif change == "axis":
        other = plan("softmax", x=x, axis=0)
    elif change == "scope":
        with polyeng.compute_eng("basic"):
            other = plan("softmax", x=x, axis=-1)
        assert other.decision.step == "user"
    elif change == "mode":
        with polyeng.fp_math_mode("bf16"):
            other = plan("softmax", x=x, axis=-1)
        assert other.mode == "bf16"
    else:
        with polyeng.compute_eng("basic", fallback=False):
            other = plan("softmax", x=x, axis=-1)
        assert other.decision.fallback is False
    assert other is not base


def test_a_dtype_argument_is_part_of_a_cached_key():
    """cast's target (a numpy dtype, whose type is a subclass per dtype) is a key, not a reason to
    choose again on every call (about 80 us each)."""
    x = np.ones((2, 3), np.float32)
    first = plan("cast", x=x, dtype="bfloat16")
    assert first.cached
    assert plan("cast", x=np.zeros((2, 3), np.float32), dtype=polyeng.bfloat16) is first
    assert plan("cast", x=x, dtype="float16") is not first
    assert plan_cache._signature(np.dtype(np.float16)) != plan_cache._signature(np.dtype(np.float32))


def test_python_scalars_of_different_types_do_not_share_a_key():
    assert plan_cache._signature(True) != plan_cache._signature(1) != plan_cache._signature(1.0)


def test_option_values_reach_accepts_on_every_call(backends):
    reject = {"upsample_bilinear2d": lambda call: "no align_corners" if call.args["align_corners"] else None}
    backends(FakeEngine("picky", ops=("upsample_bilinear2d",), reject=reject))
    x = np.ones((1, 1, 4, 4), np.float32)
    with polyeng.compute_eng("picky"):
        for _ in range(2):   # the second round is served from the cache
            assert polyeng.explain("upsample_bilinear2d", x, scale_factor=2).engine == "picky"
            assert plan("upsample_bilinear2d", x=x, size=None, scale_factor=2, align_corners=False
                        ).decision.engine == "picky"
            assert plan("upsample_bilinear2d", x=x, size=None, scale_factor=2, align_corners=True
                        ).decision.engine != "picky"


def test_registering_a_backend_starts_a_fresh_cache(backends):
    x = np.ones(3, np.float32)
    polyeng.softmax(x)
    before = registry()
    assert len(before.plans) > 0
    fake = backends(FakeEngine("fresh", ops=("softmax",)))
    assert registry() is not before and len(registry().plans) == 0
    with polyeng.compute_eng("fresh"):
        polyeng.softmax(x)
    assert fake.calls


def test_user_mixed_precision_rules_bypass_the_cache():
    x = np.ones((2, 2), np.float32)
    seen = []

    def rule(call, mixed):
        seen.append(call.op)
        return polyeng.amp.Category.DENY, "float32", "float32"
    polyeng.amp.register_mixed_precision_conversion("matmul", rule, level=50)
    try:
        for _ in range(3):
            with polyeng.fp_math_mode("bf16"):
                polyeng.matmul(x, x)
    finally:
        polyeng.amp.unregister_mixed_precision_conversion("matmul", level=50)
    assert seen.count("matmul") == 3
    assert plan_cache.key_for("matmul", {"a": x, "b": x}, polyeng.FpMathMode.STRICT,
                              polyeng.engine.settings.current_scope()) is not None


def test_unhashable_arguments_are_decided_every_time():
    assert plan_cache.key_for("softmax", {"x": np.ones(2), "axis": object()},
                              polyeng.FpMathMode.STRICT, polyeng.engine.settings.current_scope()) is None


def test_cache_is_bounded():
    cache = plan_cache.PlanCache()
    for i in range(plan_cache.MAX_ENTRIES + 5):
        cache.put(i, None)
    assert len(cache) <= plan_cache.MAX_ENTRIES


def test_verbose_dispatch_lines_come_from_cached_plans_too(caplog):
    x = np.ones(5, np.float32)
    with polyeng.compute_eng("basic"):
        polyeng.softmax(x)
        with polyeng.verbose(2), caplog.at_level("INFO", logger="polyeng"):
            polyeng.softmax(x)
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("polyeng,exec,softmax,basic,user") for line in lines)
