"""ONEDNN's conv1d and conv2d beyond the shared suite: ordinary f32 and bf16 calls are taken (not
turned down) on every algorithm's shapes, bf16 fp math gives oneDNN bf16 data with an f32 result
(on a CPU that computes bf16; elsewhere bf16 data is turned down and the mode computes f32),
constant weights are reordered once, and inputs of any strides (blocked and plain primitives)."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import bf16_fp_math_computes_bf16, onednn_computes_bf16, onednn_turns_down

pytestmark = pytest.mark.skipif(not {e.name: e.available for e in polyeng.engines()}.get("onednn"),
                                reason="the onednn engine is unavailable")

# (op, x shape, weight shape, keyword arguments): pointwise, depthwise, 3x3, strided, grouped, 1-D
CALLS = [
    ("conv2d", (2, 32, 14, 14), (16, 32, 1, 1), {}),
    ("conv2d", (2, 24, 15, 15), (24, 1, 3, 3), {"groups": 24, "padding": 1}),
    ("conv2d", (1, 16, 12, 13), (32, 16, 3, 3), {"padding": 1}),
    ("conv2d", (2, 16, 12, 13), (8, 16, 3, 3), {"stride": 2, "dilation": (2, 1), "padding": (1, 0, 2, 1)}),
    ("conv2d", (1, 32, 10, 10), (32, 4, 3, 3), {"groups": 8, "padding": "same"}),
    ("conv1d", (2, 16, 40), (32, 16, 5), {"padding": 2, "stride": 2}),
    ("conv1d", (16, 40), (16, 1, 3), {"groups": 16, "padding": "same"}),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CALLS)]


def _data(x_shape, w_shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype),
            rng.standard_normal(w_shape[0]).astype(dtype))


def _basic(op, x, w, b, kwargs):
    with polyeng.compute_eng("basic"):
        return getattr(polyeng, op)(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **kwargs)


def _onednn(op, *args, **kwargs):
    with polyeng.compute_eng("onednn", fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


@pytest.mark.parametrize("dtype", [np.float32, dt.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("op, x_shape, w_shape, kwargs", CALLS, ids=IDS)
def test_ordinary_calls_are_taken_and_match_basic(op, x_shape, w_shape, kwargs, dtype):
    x, w, b = _data(x_shape, w_shape, dtype)
    if dtype == np.float32 or onednn_computes_bf16():
        with polyeng.compute_eng("onednn"):
            assert polyeng.explain(op, x, w, b, **kwargs).engine == "onednn"
        got = _onednn(op, x, w, b, **kwargs)
    else:   # no bf16 convolution in oneDNN here: turned down, and another engine's result is BASIC's
        got, _ = onednn_turns_down(op, x, w, b, **kwargs)
    want = _basic(op, x, w, b, kwargs)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape and got.flags.c_contiguous
    eps = 2.0 ** -20 if dtype == np.float32 else 2.0 ** -7
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=4 * eps * np.max(np.abs(want)))


@pytest.mark.parametrize("op, x_shape, w_shape, kwargs", CALLS, ids=IDS)
def test_bf16_fp_math_computes_the_rounded_data_with_an_f32_result(op, x_shape, w_shape, kwargs):
    x, w, b = _data(x_shape, w_shape, seed=1)
    with polyeng.fp_math_mode("bf16"):
        with polyeng.compute_eng("onednn"):
            decision = polyeng.explain(op, x, w, b, **kwargs)
        got = _onednn(op, x, w, b, **kwargs)
    assert got.dtype == np.float32
    if not bf16_fp_math_computes_bf16():   # no bf16 units: the mode computes f32, strict's result
        assert (decision.engine, decision.compute_type) == ("onednn", "f32")
        np.testing.assert_array_equal(got, _onednn(op, x, w, b, **kwargs))
        want = _basic(op, x, w, b, kwargs)
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * 2.0 ** -20 * np.max(np.abs(want)))
        return
    assert (decision.engine, decision.compute_type) == ("onednn", "bf16")
    rounded = _basic(op, x.astype(dt.bfloat16), w.astype(dt.bfloat16), b, kwargs)
    np.testing.assert_allclose(got, rounded, rtol=0, atol=2.0 ** -16 * np.max(np.abs(rounded)))
    assert not np.array_equal(got, _onednn(op, x, w, b, **kwargs))   # strict f32 differs: the rounding is real


@pytest.mark.parametrize("op, x_shape, w_shape, kwargs", [CALLS[0], CALLS[2], CALLS[4], CALLS[6]],
                         ids=["pointwise", "3x3", "grouped", "depthwise-1d"])
def test_constant_weights_are_reordered_once(op, x_shape, w_shape, kwargs):
    from polyeng.backends.onednn import _packed
    x, w, b = _data(x_shape, w_shape, seed=2)
    fixed = w.copy()
    fixed.flags.writeable = False
    first = _onednn(op, x, fixed, b, **kwargs)
    before = _packed.stats["reorders"]
    for _ in range(3):
        np.testing.assert_array_equal(_onednn(op, x, fixed, b, **kwargs), first)
    assert _packed.stats["reorders"] == before
    np.testing.assert_allclose(_onednn(op, x, w, b, **kwargs), first, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op, x_shape, w_shape, kwargs", CALLS, ids=IDS)
def test_strided_and_reversed_views(op, x_shape, w_shape, kwargs):
    x, w, b = _data(x_shape[:-1] + (2 * x_shape[-1],), w_shape, seed=3)
    x = x[..., ::2]
    w = w[::-1].copy()[::-1]   # negative strides
    assert not x.flags.c_contiguous and min(w.strides) < 0
    want = _basic(op, x, w, b, kwargs)
    np.testing.assert_allclose(_onednn(op, x, w, b[::-1].copy()[::-1], **kwargs), want, rtol=0,
                               atol=4e-6 * np.max(np.abs(want)))


def test_float16_with_float32_weights_is_computed_in_f32():
    x, w, b = _data((2, 16, 12, 12), (16, 16, 3, 3), seed=4)
    x16 = x.astype(np.float16)
    got = _onednn("conv2d", x16, w, b, padding=1)
    assert got.dtype == np.float16
    want = _basic("conv2d", x16, w, b, {"padding": 1})
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=2.0 ** -10 * np.max(np.abs(want)))


@pytest.mark.parametrize("dtype", [dt.bfloat16, np.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("forced", [False, True], ids=["this-cpu", "numpy-converts"])
def test_16_bit_data_with_float32_weights_is_converted_where_onednn_is_fast(monkeypatch, dtype, forced):
    """The input is widened and the f32 result rounded by oneDNN's reorders where they are jit code,
    by numpy where oneDNN would convert in its scalar code (``simple:any`` without AVX-512, about
    100 ns an element): a bf16 input of 8x16x32x32 took 24.7 ms there, 1.3 ms with numpy's. Either
    way the result is the f32 convolution rounded once: BASIC's (``forced``: every conversion taken
    for scalar code, so that numpy converts on every CPU)."""
    import types
    from polyeng.backends.onednn import conv
    from polyeng.backends.onednn._primitive import desc, reorder, scalar_conversion
    if forced:
        monkeypatch.setattr(conv, "scalar_conversion", lambda step, source, target: np.dtype(source) != target)
        slow = True
    else:   # the plain layouts' reorders stand for the plan's: oneDNN's choice depends on the types here
        shape = (2, 16, 9, 11)
        slow = scalar_conversion(reorder(desc(shape, dtype), desc(shape, np.float32)), dtype, np.float32)
    rounded = []
    spy = types.SimpleNamespace(**{k: getattr(dt, k) for k in dir(dt) if not k.startswith("__")})
    spy.round_to = lambda a, target: rounded.append(np.dtype(target)) or dt.round_to(a, target)
    monkeypatch.setattr(conv, "dt", spy)
    x, w, b = _data((2, 16, 9, 11), (8, 16, 3, 3), seed=5)
    x = x.astype(dtype)
    with polyeng.compute_eng("basic"):
        want = polyeng.conv2d(x, w, b, padding=1)
    got = _onednn("conv2d", x, w, b, padding=1)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=2.0 ** -7 * np.max(np.abs(want.astype(np.float64))))
    # numpy widened the input and rounded the result, or did nothing
    assert rounded == ([np.dtype(np.float32), np.dtype(dtype)] if slow else []), rounded
    residual = (np.random.default_rng(6).standard_normal(want.shape)).astype(dtype)
    with polyeng.compute_eng("basic"):
        want = polyeng.fused_conv(x, w, b, padding=1, residual=residual)
    with polyeng.compute_eng("onednn", fallback=False):
        got = polyeng.fused_conv(x, w, b, padding=1, residual=residual)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=2.0 ** -6 * np.max(np.abs(want.astype(np.float64))))


def _amx() -> bool:
    from polyeng.backends.onednn import _fpmath
    return "amx_bf16" in _fpmath.cpu_flags()


@pytest.mark.parametrize("how", ["bf16 data", "bf16 fp math"])
def test_bf16_convolutions_take_amx_kernels_where_the_cpu_has_them(monkeypatch, how):
    """On a CPU with AMX-BF16 a bf16 convolution lets oneDNN choose its layouts, so that its AMX
    kernels (channels last) run; elsewhere the blocked layout, faster there, is kept. Where oneDNN
    computes no bf16 the bf16 data is turned down (another engine gives BASIC's result) and the
    fp math mode computes f32."""
    from polyeng.backends.onednn import conv
    plans = []

    class Recorded(conv._Plan):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            plans.append(self)
    monkeypatch.setattr(conv, "_Plan", Recorded)
    assert conv.amx_first(np.dtype(dt.bfloat16)) == _amx() and not conv.amx_first(np.dtype(np.float32))
    x, w, b = _data((2, 64, 11, 9), (48, 64, 3, 3), np.float32, seed=5)   # a shape no other test plans
    if how == "bf16 data":
        x, w = x.astype(dt.bfloat16), w.astype(dt.bfloat16)
        if onednn_computes_bf16():
            got = _onednn("conv2d", x, w, b.astype(dt.bfloat16), padding=1)
        else:
            got, _ = onednn_turns_down("conv2d", x, w, b.astype(dt.bfloat16), padding=1)
            assert not plans and not _amx()   # no oneDNN convolution made
    else:
        with polyeng.fp_math_mode("bf16"):
            got = _onednn("conv2d", x, w, b, padding=1)
        x, w = x.astype(dt.bfloat16), w.astype(dt.bfloat16)
    if how == "bf16 fp math" or onednn_computes_bf16():   # a oneDNN convolution ran
        assert len(plans) == 1
        impl = plans[0].prim.impl
        assert ("amx" in impl) == _amx(), impl
    want = _basic("conv2d", x, w, b.astype(dt.bfloat16).astype(np.float32) if how == "bf16 data" else b,
                  {"padding": 1})
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=2.0 ** -6 * np.max(np.abs(want)))
