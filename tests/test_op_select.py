"""select: BASIC against known values and the bad-argument rules; every engine under test (see
conftest) against BASIC bit for bit (broadcasts, promotion, weak scalars, the unselected NaN);
and property tests of its two-step broadcasting, dtype promotion and NaN isolation on every
engine with a select kernel.

The shape rule (select proposal, "shape infer"): ``then`` and ``else_`` broadcast to each other;
``cond`` then broadcasts one way to that shape -- aligned from the right, each cond dimension
equal to the output's or 1, and no more dimensions than the output. ``auto_broadcast="none"``
needs all three shapes equal."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import polyeng
from polyeng.engine import dtypes as dt
from support import assert_same_bits, run_on as run
from support import random_values as values


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_select_two_step_broadcast_examples():
    then = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    cond = np.eye(4, 5, dtype=bool)                       # {4,5} into {2,3,4,5}: ok
    out = polyeng.select(cond, then, np.float32(-1))
    assert out.shape == (2, 3, 4, 5) and out[1, 2, 3, 3] == then[1, 2, 3, 3] and out[0, 0, 0, 1] == -1
    cond = np.zeros((3, 1, 5), bool)                      # {3,1,5} into {2,3,4,5}: ok
    assert (polyeng.select(cond, then, np.zeros(5, np.float32)) == 0).all()
    with pytest.raises(ValueError, match=r"cond \(3, 5\) does not broadcast one way"):
        polyeng.select(np.ones((3, 5), bool), then, then)
    # cond may not grow the output: then/else are (4,), cond (2, 4)
    with pytest.raises(ValueError, match="may not add dimensions"):
        polyeng.select(np.ones((2, 4), bool), np.ones(4), np.ones(4))
    # then and else broadcast to each other first
    out = polyeng.select(np.array([True, False]), np.array([[1.0], [2.0]]), np.array([10.0, 20.0]))
    assert out.tolist() == [[1.0, 20.0], [2.0, 20.0]]


@pytest.mark.usefixtures("on_basic")
def test_select_never_leaks_nan_and_promotes():
    cond = np.array([True, False, True])
    out = polyeng.select(cond, np.array([1, 2, 3], np.int8), np.array([np.nan, np.nan, np.nan], np.float16))
    assert out.dtype == np.float16
    assert out[0] == 1 and math.isnan(out[1]) and out[2] == 3
    out = polyeng.select(~cond, np.full(3, np.nan, np.float32), np.array([4, 5, 6], np.float32))
    assert out[0] == 4 and out[2] == 6


@pytest.mark.usefixtures("on_basic")
def test_select_bad_arguments():
    with pytest.raises(TypeError, match="cond has dtype int64.*bool"):
        polyeng.select(np.array([1, 0]), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"then \(2,\) and else_ \(3,\) do not broadcast"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="auto_broadcast='none' requires equal shapes"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(1), auto_broadcast="none")
    with pytest.raises(ValueError, match="auto_broadcast='bidirectional'"):
        polyeng.select(np.ones(2, bool), np.ones(2), np.ones(2), auto_broadcast="bidirectional")
    out = polyeng.select(np.ones(2, bool), np.ones(2), np.zeros(2), auto_broadcast="none")
    assert out.tolist() == [1, 1]


# -- every engine against BASIC --------------------------------------------------------------------


@pytest.mark.uses_ops("select")
@pytest.mark.parametrize("cond_shape,then_shape,else_shape", [
    ((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((3, 1), (2, 3, 4), (4,)), ((4,), (2, 1, 4), (3, 1)),
    ((), (5,), ()), ((1, 1), (1, 7), (3, 1)), ((2, 1, 1), (2, 3, 4), (1,)), ((), (), ()),
    ((1, 3, 1, 5), (2, 3, 4, 5), (2, 1, 4, 1)),
    # one value for a branch (an attention mask's fill), cond full or broadcast along rows
    ((2, 3, 40), (1,), (2, 3, 40)), ((2, 3, 40), (2, 3, 40), (1,)), ((2, 1, 40), (1,), (2, 3, 40))])
def test_select_broadcasting(engine, cond_shape, then_shape, else_shape):
    rng = np.random.default_rng(8)
    cond = rng.random(cond_shape) > 0.5
    assert_same_bits(engine, "select", cond, values(rng, then_shape, np.float32), values(rng, else_shape, np.float32))
    assert_same_bits(engine, "select", cond, values(rng, then_shape, np.int8), values(rng, else_shape, dt.bfloat16))


@pytest.mark.uses_ops("select")
def test_select_never_leaks_the_unselected_nan_and_keeps_scalars_weak(engine):
    x = np.array([1.0, np.nan, -np.inf, 2.0], np.float16)
    cond = np.array([True, False, True, False])
    assert_same_bits(engine, "select", cond, x, 0.0)
    assert_same_bits(engine, "select", ~cond, 5, x)
    assert_same_bits(engine, "select", np.asfortranarray(np.ones((3, 4), bool)), np.ones((3, 4), np.int32), np.int32(7))
    out = run(engine, "select", cond, x, 0.0)
    assert out.dtype == np.float16 and not np.isnan(out).any()


@pytest.mark.uses_ops("select")
def test_select_none_mode_and_scalars(engine):
    rng = np.random.default_rng(2)
    cond, a, b = rng.random((5, 9)) > 0.5, values(rng, (5, 9), dt.bfloat16), values(rng, (5, 9), dt.bfloat16)
    assert_same_bits(engine, "select", cond, a, b, auto_broadcast="none")
    assert_same_bits(engine, "select", cond, a, 2.5)
    assert_same_bits(engine, "select", cond, 7, values(rng, (5, 9), dt.int8))


# -- properties ------------------------------------------------------------------------------------

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I8, BOOL = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.bool_)
VALUE_DTYPES = (F32, F16, BF16, I8, BOOL)

# Written out rather than computed: numpy's rules, with bf16 promoting like f16 and
# bf16 + f16 -> f32 (the narrowest type holding both).
PROMOTED = {
    frozenset([F32]): F32, frozenset([F16]): F16, frozenset([BF16]): BF16, frozenset([I8]): I8,
    frozenset([BOOL]): BOOL,
    frozenset([F32, F16]): F32, frozenset([F32, BF16]): F32, frozenset([F32, I8]): F32,
    frozenset([F32, BOOL]): F32, frozenset([F16, BF16]): F32, frozenset([F16, I8]): F16,
    frozenset([F16, BOOL]): F16, frozenset([BF16, I8]): BF16, frozenset([BF16, BOOL]): BF16,
    frozenset([I8, BOOL]): I8,
}

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def select_engines():
    return [e.name for e in polyeng.engines() if e.available and "select" in e.ops]


@pytest.fixture(scope="module", params=select_engines())
def select(request):
    def run(*args, **kwargs):
        with polyeng.compute_eng(request.param):
            return polyeng.select(*args, **kwargs)
    return run


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

def value_arrays(dtype, shape):
    """Arrays of ``dtype`` with NaN, +-Inf and -0.0 among the floats; bf16 comes from f32 values."""
    if dtype == BOOL:
        elements = st.booleans()
    elif dtype == I8:
        elements = st.integers(-128, 127)
    else:
        width = 16 if dtype == F16 else 32
        elements = st.one_of(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]), st.floats(width=width))
    source = F32 if dtype == BF16 else dtype
    arrays = hnp.arrays(source, shape, elements=elements, fill=st.nothing())   # every element drawn
    if dtype == BF16:
        arrays = arrays.map(lambda a: a.astype(BF16))
    return arrays


def maybe_strided(draw, array):
    """The same values, sometimes seen through negative strides (a flipped view of a flipped copy)."""
    if array.ndim and draw(st.booleans()):
        return np.flip(np.flip(array).copy())
    return array


def one_way_ok(cond_shape, out_shape):
    """The seed's rule, stated independently of polyeng's own check."""
    if len(cond_shape) > len(out_shape):
        return False
    tail = out_shape[len(out_shape) - len(cond_shape):]
    return all(c == o or c == 1 for c, o in zip(cond_shape, tail))


@st.composite
def cond_shapes(draw, out_shape):
    """A cond shape that one-way broadcasts to ``out_shape``, or one that deliberately does not."""
    k = draw(st.integers(0, len(out_shape)))
    shape = [draw(st.sampled_from([o, 1])) for o in out_shape[len(out_shape) - k:]]
    breaking = draw(st.sampled_from(["valid", "valid", "extra_dims", "wrong_dim"]))
    if breaking == "extra_dims":                  # may not grow the rank, not even by a 1
        full = [draw(st.sampled_from([o, 1])) for o in out_shape]
        shape = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)) + full
    elif breaking == "wrong_dim" and shape:       # neither the output's size nor 1 (0 against 1 too)
        i = draw(st.integers(0, len(shape) - 1))
        o = out_shape[len(out_shape) - len(shape) + i]
        shape[i] = draw(st.sampled_from([d for d in (0, 2, 3, 4) if d != o]))
    return tuple(shape)


@st.composite
def select_cases(draw):
    then_shape, else_shape = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3)).input_shapes
    out_shape = np.broadcast_shapes(then_shape, else_shape)
    cond_shape = draw(cond_shapes(out_shape))
    then_dtype, else_dtype = draw(st.sampled_from(VALUE_DTYPES)), draw(st.sampled_from(VALUE_DTYPES))
    cond = maybe_strided(draw, draw(hnp.arrays(BOOL, cond_shape, fill=st.nothing())))
    then = maybe_strided(draw, draw(value_arrays(then_dtype, then_shape)))
    else_ = maybe_strided(draw, draw(value_arrays(else_dtype, else_shape)))
    return cond, then, else_


def assert_same(got, want):
    """Equal dtype, shape and bits, with any NaN matching any NaN (a widened NaN's payload is free)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "bi":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    keep = ~np.isnan(w)
    np.testing.assert_array_equal(g[keep], w[keep])
    np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]))   # -0.0 stays -0.0


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

@SETTINGS
@given(case=select_cases())
def test_numpy_mode_matches_where_or_rejects_cond(select, case):
    cond, then, else_ = case
    out_shape = np.broadcast_shapes(then.shape, else_.shape)
    promoted = PROMOTED[frozenset([then.dtype, else_.dtype])]
    if not one_way_ok(cond.shape, out_shape):
        with pytest.raises(ValueError, match="cond"):
            select(cond, then, else_)
        return
    got = select(cond, then, else_)
    assert got.shape == out_shape and got.dtype == promoted
    want = np.where(cond, then.astype(promoted), else_.astype(promoted))
    assert want.shape == out_shape   # cond never grows the result
    assert_same(got, want)


@st.composite
def none_mode_cases(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    shapes = [shape, shape, shape]
    if draw(st.booleans()):                      # break one of the three
        which = draw(st.integers(0, 2))
        shapes[which] = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    dtypes = draw(st.sampled_from(VALUE_DTYPES)), draw(st.sampled_from(VALUE_DTYPES))
    return (draw(hnp.arrays(BOOL, shapes[0], fill=st.nothing())), draw(value_arrays(dtypes[0], shapes[1])),
            draw(value_arrays(dtypes[1], shapes[2])))


@SETTINGS
@given(case=none_mode_cases())
def test_none_mode_needs_equal_shapes(select, case):
    cond, then, else_ = case
    if not cond.shape == then.shape == else_.shape:
        with pytest.raises(ValueError, match="auto_broadcast='none'.*cond"):
            select(cond, then, else_, auto_broadcast="none")
        return
    promoted = PROMOTED[frozenset([then.dtype, else_.dtype])]
    got = select(cond, then, else_, auto_broadcast="none")
    assert_same(got, np.where(cond, then.astype(promoted), else_.astype(promoted)))


POISONS = st.sampled_from([np.nan, np.inf, -np.inf])


@SETTINGS
@given(case=select_cases(), poison=POISONS, poison_then=st.booleans())
def test_unselected_nan_and_inf_never_leak(select, case, poison, poison_then):
    cond, then, else_ = case
    out_shape = np.broadcast_shapes(then.shape, else_.shape)
    if not one_way_ok(cond.shape, out_shape):
        return
    # Finite values everywhere, then poison one whole branch.
    then = np.where(np.isfinite(then.astype(np.float64)), then, then.dtype.type(1)).astype(then.dtype)
    else_ = np.where(np.isfinite(else_.astype(np.float64)), else_, else_.dtype.type(2)).astype(else_.dtype)
    promoted = PROMOTED[frozenset([then.dtype, else_.dtype])]
    if promoted.kind != "f":
        return
    if poison_then:
        then = np.full(then.shape, poison, F32).astype(then.dtype) if then.dtype.kind == "f" else then
    else:
        else_ = np.full(else_.shape, poison, F32).astype(else_.dtype) if else_.dtype.kind == "f" else else_
    got = select(cond, then, else_).astype(np.float64)
    clean_picked = np.broadcast_to(cond if not poison_then else ~cond, out_shape)
    poisoned = then if poison_then else else_
    if poisoned.dtype.kind == "f":
        assert np.isfinite(got[clean_picked]).all()
        np.testing.assert_array_equal(got[~clean_picked], poison)
    else:
        assert np.isfinite(got).all()


def test_bad_then_else_shapes_name_both(select):
    with pytest.raises(ValueError, match=r"then \(2, 3\).*else_ \(4, 3\)"):
        select(np.ones(3, bool), np.ones((2, 3), F32), np.ones((4, 3), F32))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float32])
def test_non_bool_cond_is_a_type_error(select, dtype):
    with pytest.raises(TypeError, match="cond"):
        select(np.ones(3, dtype), np.ones(3, F32), np.zeros(3, F32))


# ---------------------------------------------------------------------------
# The seed's three examples, literally
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("cond_shape", [(4, 5), (3, 1, 5)])
def test_seed_valid_examples(select, cond_shape):
    rng = np.random.default_rng(0)
    then = rng.standard_normal((2, 3, 4, 5)).astype(F32)
    else_ = rng.standard_normal((1, 3, 1, 5)).astype(F16)     # step 1 broadcasts else_ as well
    cond = rng.random(cond_shape) < 0.5
    got = select(cond, then, else_)
    assert got.shape == (2, 3, 4, 5) and got.dtype == F32
    assert_same(got, np.where(cond, then, else_.astype(F32)))
    # every output element takes then where its (broadcast) cond is True
    full_cond = np.broadcast_to(cond, (2, 3, 4, 5))
    np.testing.assert_array_equal(got[full_cond], then[full_cond])


def test_seed_invalid_example(select):
    then, else_ = np.zeros((2, 3, 4, 5), F32), np.ones((2, 3, 4, 5), F32)
    with pytest.raises(ValueError, match=r"cond \(3, 5\)"):
        select(np.ones((3, 5), bool), then, else_)
