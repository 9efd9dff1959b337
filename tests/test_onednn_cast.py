"""ONEDNN's cast takes a pair only through a reorder implementation checked on this CPU.

oneDNN picks its reorder by CPU: on an AVX2 CPU ``simple:any`` turned bf16 -0.0 into +0.0,
which the implementations picked on an AVX-512 CPU did not."""
import numpy as np
import pytest

import polyeng
from polyeng.backends.onednn import cast as onednn_cast
from polyeng.backends.onednn._fpmath import cpu_flags
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.skipif("onednn" not in {e.name for e in polyeng.engines() if e.available},
                                reason="onednn is not available")

BF16, F32, I8 = np.dtype(dt.bfloat16), np.dtype(np.float32), np.dtype(np.int8)


def decide(x, dtype):
    with polyeng.compute_eng("onednn"):
        decision = polyeng.explain("cast", x, dtype)
    return decision.engine, next(c.reason for c in decision.candidates if c.engine == "onednn")


def zeros_of_both_signs():
    return np.array([-0.0, 0.0, -1.5, 2.0, -0.0, 3.0], BF16)


def layouts(x):
    grid = np.resize(x, 64).reshape(8, 8)
    return {"contiguous": x, "transposed": grid.T, "strided": grid[:, ::3], "3-D": np.resize(x, 60).reshape(3, 4, 5)}


@pytest.mark.parametrize("source,target", sorted(onednn_cast.CANDIDATES, key=str), ids=str)
def test_every_cast_it_takes_has_basics_bits(source, target):
    values = onednn_cast._patterns(source)
    taken, scalar = {}, set()
    for name, x in layouts(values[:64] if source.itemsize > 1 else values[::4]).items():
        engine, reason = decide(x, target)
        if "scalar code" in reason:
            scalar.add(name)
        with polyeng.compute_eng(engine, fallback=False):
            got = polyeng.cast(x, target)
        with polyeng.compute_eng("basic", fallback=False):
            want = polyeng.cast(x, target)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), name
        kind = f"u{target.itemsize}"
        assert np.array_equal(got.view(kind)[~nan], want.view(kind)[~nan]), (name, engine)
        taken[name] = engine == "onednn"
        if engine != "onednn":
            assert "reorder" in reason and source.name in reason
    if source.kind in "iu":   # every CPU's implementations so far give exact integer casts
        assert all(taken[name] or name in scalar for name in taken), taken
        assert not scalar or target.itemsize == 2
    elif "avx512f" in cpu_flags():   # its jit reorders of plain bf16 keep -0.0: AVX2's simple:any does not
        assert taken["contiguous"] and taken["3-D"], taken


def test_bf16_zeros_keep_their_sign_whichever_engine_runs_the_cast():
    for name, x in layouts(zeros_of_both_signs()).items():
        engine, _ = decide(x, F32)
        with polyeng.compute_eng("onednn"):
            got = polyeng.cast(x, F32)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(x.astype(F32)), err_msg=f"{name} on {engine}")


def small_ints():   # a pair oneDNN converts in jit code or scalar code alike fast: its verdicts decide
    return np.array([-3, 0, 5, 7, -128, 127], I8)


def test_an_implementation_that_differed_is_turned_down(monkeypatch):
    x = small_ints()
    impl = onednn_cast._step(x.shape, onednn_cast._strides(x), I8, F32).impl
    monkeypatch.setitem(onednn_cast._checked, (I8, F32), {impl: "gives 0.0 where BASIC gives 1.0"})
    engine, reason = decide(x, F32)
    assert engine != "onednn"
    assert reason == f"oneDNN's reorder from int8 to float32 ({impl}) gives 0.0 where BASIC gives 1.0"


def test_an_implementation_that_was_not_checked_is_turned_down(monkeypatch):
    x = small_ints()
    monkeypatch.setitem(onednn_cast._checked, (I8, F32), {"another:impl": None})
    engine, reason = decide(x, F32)
    assert engine != "onednn"
    assert "whose results were not checked against BASIC's" in reason


def test_a_checked_implementation_with_basics_bits_is_taken(monkeypatch):
    x = small_ints()
    impl = onednn_cast._step(x.shape, onednn_cast._strides(x), I8, F32).impl
    monkeypatch.setitem(onednn_cast._checked, (I8, F32), {impl: None})
    assert decide(x, F32) == ("onednn", "")


def test_the_check_finds_a_difference_in_one_value():
    values = np.array([1.0, -0.0, np.nan, 2.0], F32)
    assert onednn_cast._compare(values.copy(), values) is None
    wrong = values.copy()
    wrong[1] = 0.0
    assert onednn_cast._compare(wrong, values) == "gives 0.0 where BASIC gives -0.0 (1 of 4 checked values differ)"
    wrong = values.copy()
    wrong[2] = 0.0
    assert "NaN" in onednn_cast._compare(wrong, values)


@pytest.mark.parametrize("source,target", [(np.int8, BF16), (np.uint8, BF16), (np.int8, np.float16), (BF16, F32),
                                           (np.int8, F32)], ids=str)
def test_a_conversion_in_onednns_scalar_code_is_turned_down(source, target):
    """oneDNN converts to and from 16-bit floats without AVX-512 in its scalar code (``simple:any``),
    about 100 ns an element, twenty times the other engines' casts: such a call is turned down
    saying so, whatever its bits; a jit implementation's call is not turned down for speed."""
    x = (np.arange(-64, 64) % 100).astype(source).reshape(8, 16)
    step = onednn_cast._step(x.shape, onednn_cast._strides(x), np.dtype(source), np.dtype(target))
    slow = step.impl.startswith("simple") and 2 in (np.dtype(source).itemsize, np.dtype(target).itemsize)
    assert slow is onednn_cast.scalar_conversion(step, source, target)
    engine, reason = decide(x, target)
    assert ("scalar code" in reason) is slow, reason
    if slow:
        assert engine != "onednn" and step.impl in reason
    with polyeng.compute_eng(engine, fallback=False):
        got = polyeng.cast(x, target)
    with polyeng.compute_eng("basic", fallback=False):
        want = polyeng.cast(x, target)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
