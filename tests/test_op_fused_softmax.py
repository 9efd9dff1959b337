"""fused_softmax (``softmax(x + mask)`` with NaNs filled) on every engine under test against BASIC:
NUMBA's one-pass rows (masks broadcast over heads and query rows, no mask, no fill, odd widths,
f64), the composed path of the others (another axis, 16-bit storage, a mask that grows x), rows
of -inf, +inf and NaN with and without a fill, zero-size input.

First BASIC against known values, against PyTorch, and against the ops it stands for; then the
bad arguments, each named."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt

pytestmark = pytest.mark.uses_ops("fused_softmax")

FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dt.bfloat16}
LOWEST = float(np.finfo(np.float32).min)


def run(engine, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False), np.errstate(over="ignore", invalid="ignore"):
        return polyeng.fused_softmax(*args, **kwargs)


def separate(x, mask, axis, nan_fill):
    """The ops it stands for, on BASIC."""
    with polyeng.compute_eng("basic", fallback=False):
        y = polyeng.softmax(x if mask is None else polyeng.add(x, mask), axis=axis)
        if nan_fill is None:
            return y
        return polyeng.select(polyeng.isnan(y), np.asarray(nan_fill, y.dtype), y)


def eps(dtype):
    return 2.0 ** -7 if np.dtype(dtype) == dt.bfloat16 else float(np.finfo(dtype).eps)


def assert_close(got, want, ulps=8):
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    tol = ulps * eps(want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


def attention(rng, batch=3, heads=2, rows=5, n=33, dtype=np.float32, mask_rows=1):
    scores = (rng.standard_normal((batch, heads, rows, n)) * 3).astype(dtype)
    mask = np.where(rng.random((batch, 1, mask_rows, n)) < 0.3, -1e4, 0.0).astype(dtype)   # fits f16 and bf16
    return scores, mask


# -- BASIC: known values, PyTorch, the ops it stands for -----------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_known_values():
    x = np.array([[0.0, np.log(3.0), 5.0], [1.0, 1.0, 1.0]], np.float32)
    mask = np.array([0.0, 0.0, -np.inf], np.float32)
    np.testing.assert_allclose(polyeng.fused_softmax(x, mask), [[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]], rtol=1e-6)
    rows = np.array([[-np.inf, -np.inf], [np.nan, 1.0]], np.float32)
    assert np.isnan(polyeng.fused_softmax(rows)).all()
    assert polyeng.fused_softmax(rows, nan_fill=0.0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert polyeng.fused_softmax(rows, nan_fill=-2.5).tolist() == [[-2.5, -2.5], [-2.5, -2.5]]


@pytest.mark.usefixtures("on_basic")
def test_matches_torch():
    torch = pytest.importorskip("torch")
    scores, mask = attention(np.random.default_rng(0))
    scores[0, 1, 2] = -np.inf                      # a row the mask leaves nothing of: NaN, then 0
    t = torch.softmax(torch.from_numpy(scores) + torch.from_numpy(mask), dim=-1)
    want = torch.where(torch.isnan(t), torch.zeros(()), t).numpy()
    np.testing.assert_allclose(polyeng.fused_softmax(scores, mask, nan_fill=0.0), want, rtol=1e-6, atol=1e-7)


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("nan_fill", [None, 0.0])
def test_is_the_ops_it_stands_for(axis, nan_fill):
    scores, mask = attention(np.random.default_rng(1))
    scores[1, 0, 3, :] = -np.inf
    assert_close(polyeng.fused_softmax(scores, mask, axis=axis, nan_fill=nan_fill),
                 separate(scores, mask, axis, nan_fill), ulps=0)


# -- every engine against BASIC --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("n", [1, 7, 16, 33, 128])
@pytest.mark.parametrize("mask_rows", [1, 5])     # broadcast over query rows, or one per row
def test_attention_masks(engine, dtype, n, mask_rows):
    scores, mask = attention(np.random.default_rng(n), n=n, dtype=FLOATS[dtype], mask_rows=mask_rows)
    assert_close(run(engine, scores, mask, nan_fill=0.0), run("basic", scores, mask, nan_fill=0.0))


@pytest.mark.parametrize("case", ["no mask", "no fill", "mask of x's rank less 2", "full mask", "other axis",
                                  "mask grows x", "non-contiguous x", "scalar fill"])
def test_call_forms(engine, case):
    rng = np.random.default_rng(7)
    scores, mask = attention(rng)
    kwargs = {"nan_fill": 0.0}
    if case == "no mask":
        mask = None
    elif case == "no fill":
        kwargs = {}
    elif case == "mask of x's rank less 2":
        mask = mask[0, 0]                               # (1, n): over batch, heads and rows
    elif case == "full mask":
        mask = np.broadcast_to(mask, scores.shape).copy()
    elif case == "other axis":
        kwargs["axis"] = 2
    elif case == "mask grows x":
        scores = scores[:, :1]                          # (3, 1, 5, 33) + (3, 1, 1, 33) -> still (3, 1, 5, 33)
        mask = np.zeros((3, 4, 1, 33), np.float32)      # grows the heads to 4
    elif case == "non-contiguous x":
        scores = np.ascontiguousarray(scores.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    elif case == "scalar fill":
        kwargs["nan_fill"] = np.float32(-1.0)
        scores[0, 0, 0] = np.nan
    got, want = run(engine, scores, mask, **kwargs), run("basic", scores, mask, **kwargs)
    assert_close(got, want)
    if case == "mask grows x":
        assert got.shape == (3, 4, 5, 33)


def special_rows(dtype):
    nan, inf = np.nan, np.inf
    rows = [[-inf] * 5, [1.0, inf, 2.0, -inf, 0.0], [1.0, nan, 2.0, 3.0, 4.0], [nan] * 5,
            [-inf, 1.0, -inf, 2.0, -inf], [inf, inf, 1.0, 1.0, 1.0], [1e30, -1e30, 1e30, 0.0, 1.0], [0.0] * 5]
    return np.array(rows, np.float64).astype(dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("nan_fill", [None, 0.0, 7.0])
def test_special_values(engine, dtype, nan_fill):
    x = special_rows(FLOATS[dtype])
    mask = np.array([0.0, -np.inf, 0.0, 0.0, LOWEST], FLOATS[dtype])
    for m in (None, mask):
        assert_close(run(engine, x, m, nan_fill=nan_fill), run("basic", x, m, nan_fill=nan_fill))


def test_zero_size(engine):
    out = run(engine, np.zeros((2, 0, 7), np.float32), np.zeros((2, 1, 7), np.float32), nan_fill=0.0)
    assert type(out) is np.ndarray and out.shape == (2, 0, 7) and out.dtype == np.float32


# -- bad arguments ---------------------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_bad_arguments_are_named():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"mask has dtype float64; fused_softmax adds it to x, of dtype float32"):
        polyeng.fused_softmax(x, np.zeros(3))
    with pytest.raises(ValueError, match=r"mask has shape \(4,\), which does not broadcast with x's shape \(2, 3\)"):
        polyeng.fused_softmax(x, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"axis=2 is out of range"):
        polyeng.fused_softmax(x, axis=2)
    with pytest.raises(TypeError, match=r"nan_fill"):
        polyeng.fused_softmax(x, nan_fill="zero")
    with pytest.raises(TypeError, match=r"x"):
        polyeng.fused_softmax(np.ones((2, 3), np.int32))
    with pytest.raises(TypeError, match=r"mask"):
        polyeng.fused_softmax(x, np.ones(3, np.int64))
