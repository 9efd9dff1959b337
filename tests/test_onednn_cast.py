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

BF16, F32 = np.dtype(dt.bfloat16), np.dtype(np.float32)


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
    taken = {}
    for name, x in layouts(values[:64] if source.itemsize > 1 else values[::4]).items():
        engine, reason = decide(x, target)
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
        assert all(taken.values()), taken
    elif "avx512f" in cpu_flags():   # its jit reorders of plain bf16 keep -0.0: AVX2's simple:any does not
        assert taken["contiguous"] and taken["3-D"], taken


def test_bf16_zeros_keep_their_sign_whichever_engine_runs_the_cast():
    for name, x in layouts(zeros_of_both_signs()).items():
        engine, _ = decide(x, F32)
        with polyeng.compute_eng("onednn"):
            got = polyeng.cast(x, F32)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(x.astype(F32)), err_msg=f"{name} on {engine}")


def test_an_implementation_that_differed_is_turned_down(monkeypatch):
    x = zeros_of_both_signs()
    impl = onednn_cast._step(x.shape, onednn_cast._strides(x), BF16, F32).impl
    monkeypatch.setitem(onednn_cast._checked, (BF16, F32), {impl: "gives 0.0 where BASIC gives -0.0"})
    engine, reason = decide(x, F32)
    assert engine != "onednn"
    assert reason == f"oneDNN's reorder from bfloat16 to float32 ({impl}) gives 0.0 where BASIC gives -0.0"


def test_an_implementation_that_was_not_checked_is_turned_down(monkeypatch):
    x = zeros_of_both_signs()
    monkeypatch.setitem(onednn_cast._checked, (BF16, F32), {"another:impl": None})
    engine, reason = decide(x, F32)
    assert engine != "onednn"
    assert "whose results were not checked against BASIC's" in reason


def test_a_checked_implementation_with_basics_bits_is_taken(monkeypatch):
    x = zeros_of_both_signs()
    impl = onednn_cast._step(x.shape, onednn_cast._strides(x), BF16, F32).impl
    monkeypatch.setitem(onednn_cast._checked, (BF16, F32), {impl: None})
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
