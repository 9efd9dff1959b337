"""Engine limits are special-argument rejections: ``explain`` shows them with their reason, and a
call beyond one runs on another engine from the start, never as a run-time fallback.

The calls that cross a limit are huge; ``np.broadcast_to`` placeholders give them their shape
without their memory, which is all that ``explain`` and selection look at.
"""
import logging
import warnings

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

AVAILABLE = {e.name for e in polyeng.engines() if e.available}
BEYOND_INT32 = 3 * 2 ** 31   # a spatial size whose far positions int32 cannot index


def placeholder(shape, dtype):
    return np.broadcast_to(np.zeros((), dtype), shape)


def opencl_only():
    if "opencl" not in AVAILABLE:
        pytest.skip("opencl is unavailable (the CI run requires it)")


def verdicts(decision) -> dict:
    return {c.engine: (c.verdict, c.reason) for c in decision.candidates}


# upsample calls whose index tables reach past 2**31: the output is small, the input is not
UPSAMPLE_BEYOND = {
    "nearest-1d": ("upsample_nearest", (1, 1, BEYOND_INT32), np.uint8, {"size": 3}),
    "nearest-2d": ("upsample_nearest", (1, 2, 1, BEYOND_INT32), dt.bfloat16, {"size": (1, 3)}),
    "bilinear-width": ("upsample_bilinear2d", (1, 1, 1, BEYOND_INT32), np.float32, {"size": (1, 3)}),
    "bilinear-height": ("upsample_bilinear2d", (1, 1, BEYOND_INT32, 2), np.float32,
                        {"size": (3, 2), "align_corners": True}),
}


@pytest.mark.parametrize("op, shape, dtype, resize", UPSAMPLE_BEYOND.values(), ids=UPSAMPLE_BEYOND.keys())
def test_explain_shows_the_opencl_upsample_index_limit(op, shape, dtype, resize):
    opencl_only()
    x = placeholder(shape, dtype)
    with polyeng.compute_eng("opencl"):
        decision = polyeng.explain(op, x, **resize)
    verdict, reason = verdicts(decision)["opencl"]
    assert verdict == "rejected"
    assert f"x has shape {shape}" in reason and "int32" in reason and "2**31" in reason
    assert decision.engine != "opencl" and decision.step == "special-argument"
    assert reason in str(decision)


@pytest.mark.parametrize("case", ["nearest-1d", "bilinear-width"])
def test_pinned_opencl_refuses_before_running(case):
    # with fallback off the rejection is the selector's EngineError: no kernel ran (the
    # placeholder's gigabytes were never touched)
    opencl_only()
    op, shape, dtype, resize = UPSAMPLE_BEYOND[case]
    with polyeng.compute_eng("opencl", fallback=False):
        with pytest.raises(polyeng.EngineError, match=r"opencl.*rejected: x has shape .*int32"):
            getattr(polyeng, op)(placeholder(shape, dtype), **resize)


def test_large_inputs_whose_reads_stay_below_the_limit_are_accepted():
    opencl_only()
    x = placeholder((1, 1, 1, 2 ** 31 + 1), np.float32)   # downsampled: positions read stay below 2**31
    assert verdicts(polyeng.explain("upsample_bilinear2d", x, size=(1, 1)))["opencl"] == ("accepted", "")
    x = placeholder((1, 1, 2 ** 31 + 1), np.uint8)
    assert verdicts(polyeng.explain("upsample_nearest", x, size=1))["opencl"] == ("accepted", "")


@pytest.mark.parametrize("op, resize", [("upsample_nearest", {"scale_factor": 2}),
                                        ("upsample_bilinear2d", {"size": (5, 22), "align_corners": True})])
def test_a_call_beyond_the_limit_runs_elsewhere_without_fallback(op, resize, monkeypatch, caplog):
    # the same rule with the limit lowered, so that a call beyond it is small enough to run
    opencl_only()
    from polyeng.backends.opencl import upsample as kernels
    monkeypatch.setattr(kernels, "INDEX_LIMIT", 8)
    # reads column 10; a shape of its own, since the plan made under the lowered limit stays cached
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 11)).astype(np.float32)
    with polyeng.compute_eng("basic", fallback=False):
        expected = getattr(polyeng, op)(x, **resize)
    with polyeng.compute_eng("opencl"):
        decision = polyeng.explain(op, x, **resize)
        with warnings.catch_warnings(), polyeng.verbose(1), caplog.at_level(logging.INFO, logger="polyeng"):
            warnings.simplefilter("error", polyeng.FallbackWarning)
            result = getattr(polyeng, op)(x, **resize)
    assert verdicts(decision)["opencl"][0] == "rejected" and decision.step == "special-argument"
    exec_line = [m for m in caplog.messages if m.startswith(f"polyeng,exec,{op},")][-1]
    assert f",{decision.engine},special-argument," in exec_line
    np.testing.assert_array_equal(result, expected)


# BASIC pads the input to whole windows; windows far larger than the input would pad it to
# terabytes, so BASIC declines and an engine that clips windows runs the call
HUGE_WINDOWS = {
    "max2d": ("max_pool2d", (1, 2, 4, 5), {"kernel_size": 2 ** 20, "padding": 2 ** 19, "ceil_mode": True}),
    "avg2d": ("avg_pool2d", (1, 2, 4, 5), {"kernel_size": 2 ** 20, "padding": 2 ** 19, "ceil_mode": True}),
    "max3d": ("max_pool3d", (1, 1, 3, 4, 5), {"kernel_size": (1, 2 ** 14, 2 ** 14), "padding": (0, 2 ** 13, 2 ** 13)}),
}


@pytest.mark.parametrize("case", HUGE_WINDOWS)
def test_basic_declines_windows_that_would_pad_the_input_to_terabytes(case):
    op, shape, kwargs = HUGE_WINDOWS[case]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    decision = polyeng.explain(op, x, **kwargs)
    verdict, reason = verdicts(decision)["basic"]
    assert verdict == "rejected" and "BASIC pads x" in reason and "bytes" in reason, reason
    # chosen from the start, not by a run-time fallback: by the recommendation (ONEDNN, which clips
    # windows too) or, where BASIC was recommended, at the special-argument step
    assert decision.engine != "basic" and decision.step in ("special-argument", "recommend")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # chosen from the start: no run-time fallback
        y = getattr(polyeng, op)(x, **kwargs)
    if op.startswith("max"):   # along the huge kernel dims every window covers the whole input
        kernel = kwargs["kernel_size"]
        kernel = kernel if isinstance(kernel, tuple) else (kernel,) * (x.ndim - 2)
        dims = tuple(2 + i for i, k in enumerate(kernel) if k > 1)
        np.testing.assert_array_equal(y, np.broadcast_to(x.max(axis=dims, keepdims=True), y.shape))
    with polyeng.compute_eng("basic", fallback=False), pytest.raises(polyeng.EngineError, match="BASIC pads x"):
        getattr(polyeng, op)(x, **kwargs)


def test_basic_still_pads_ordinary_windows():
    x = np.ones((1, 1, 1, 1), np.float32)
    decision = polyeng.explain("avg_pool2d", x, 3, stride=1, padding=1)
    assert verdicts(decision)["basic"][0] in ("chosen", "accepted")
