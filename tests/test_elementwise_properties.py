"""Property tests for add, sub, mul and div on every engine that has all four: for any pair of
broadcastable shapes (0-d, size-1 and zero-size dimensions), any layout (strided, negative
strides) and any pair of polyeng's dtypes, the result dtype is numpy's promotion (bfloat16
promoting like float16, bf16 with f16 giving f32) or a TypeError naming both arguments, and the
values are numpy's own operation's: exactly for f32, f64 and integers, and for 16-bit results
the f32 result rounded once. Python scalars on either side are weak, as in numpy (NEP 50)."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import polyeng
from polyeng.engine import dtypes as dt

OPS = ("add", "sub", "mul", "div")
UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}
BF16, F16, F32 = dt.bfloat16, np.dtype(np.float16), np.dtype(np.float32)
DTYPES = tuple(d for d in dt.SUPPORTED_DTYPES if d != dt.bool_)   # bool is refused: tested with the bad inputs

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def arithmetic_engines():
    return [e.name for e in polyeng.engines() if e.available and set(OPS) <= set(e.ops)]


@pytest.fixture(scope="module", params=arithmetic_engines())
def on_engine(request):
    def run(op, a, b):
        with polyeng.compute_eng(request.param, fallback=False):
            return getattr(polyeng, op)(a, b)
    return run


# ---------------------------------------------------------------------------
# The rule, stated without polyeng's code
# ---------------------------------------------------------------------------

def numpy_result_type(op, a, b):
    """numpy's result dtype; bfloat16, which numpy does not promote, takes float16's place, and
    with float16 itself gives float32."""
    if op == "div" and a.kind in "iu" and b.kind in "iu":
        return np.dtype(np.float64)   # true division of integers
    if BF16 in (a, b):
        if F16 in (a, b):
            return np.result_type(F32, *[d for d in (a, b) if d not in (F16, BF16)])
        stand_in = np.result_type(*[F16 if d == BF16 else d for d in (a, b)])
        return BF16 if stand_in == F16 else stand_in
    return np.result_type(a, b)


def numpy_values(op, a, b, result):
    """numpy's own operation on the values: integers as they are (wrapping), f32/f64 in that type,
    16-bit results computed in f32 and rounded once."""
    with np.errstate(all="ignore"):
        if result.kind in "iu":
            return UFUNCS[op](a, b)
        work = F32 if result.itemsize == 2 else result
        a = a.astype(work) if isinstance(a, np.ndarray) else a
        b = b.astype(work) if isinstance(b, np.ndarray) else b
        return np.asarray(UFUNCS[op](a, b)).astype(result)


def assert_same(got, want):
    """Equal dtype, shape and values, NaN matching NaN, and the sign of every zero."""
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    keep = ~np.isnan(w)
    np.testing.assert_array_equal(g[keep], w[keep])
    np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]))


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

def values(dtype, shape):
    """Arrays of ``dtype`` over its whole range: NaN, +-inf, -0.0 and subnormals among the floats,
    the extremes among the integers; bf16 from f32 values."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    else:
        width = {2: 16, 4: 32, 8: 64}[dtype.itemsize] if dtype != BF16 else 32
        elements = st.one_of(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]), st.floats(width=width))
    source = F32 if dtype == BF16 else dtype
    arrays = hnp.arrays(source, shape, elements=elements, fill=st.nothing())
    return arrays.map(lambda a: a.astype(BF16)) if dtype == BF16 else arrays


def laid_out(draw, array):
    """The same values as they are, through negative strides, or every other element of a wider array."""
    if not array.ndim:
        return array
    layout = draw(st.sampled_from(["contiguous", "negative", "strided"]))
    if layout == "negative":
        axis = draw(st.integers(0, array.ndim - 1))
        return np.flip(np.flip(array, axis).copy(), axis)
    if layout == "strided":
        return np.repeat(array, 2, axis=-1)[..., ::2]
    return array


@st.composite
def array_pairs(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                                    max_side=4)).input_shapes
    a_dtype, b_dtype = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    return (draw(st.sampled_from(OPS)), laid_out(draw, draw(values(a_dtype, shapes[0]))),
            laid_out(draw, draw(values(b_dtype, shapes[1]))))


SCALARS = st.one_of(st.integers(-300, 300), st.integers(-(2 ** 62), 2 ** 62), st.floats(width=64),
                    st.sampled_from([0.0, -0.0, 2.5, np.nan, np.inf, -np.inf]))


@st.composite
def scalar_cases(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    array = laid_out(draw, draw(values(draw(st.sampled_from(DTYPES)), shape)))
    return draw(st.sampled_from(OPS)), array, draw(SCALARS), draw(st.booleans())


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

@SETTINGS
@given(case=array_pairs())
def test_arrays_promote_and_compute_as_numpy(on_engine, case):
    op, a, b = case
    result = numpy_result_type(op, a.dtype, b.dtype)
    if result not in dt.SUPPORTED_DTYPES:   # int8 with uint8 is int16
        with pytest.raises(TypeError, match=rf"^{op}: a \({a.dtype}\) and b \({b.dtype}\) promote to {result}"):
            on_engine(op, a, b)
        return
    got = on_engine(op, a, b)
    assert got.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_same(got, numpy_values(op, a, b, result))


@SETTINGS
@given(case=scalar_cases())
def test_python_scalars_are_weak(on_engine, case):
    op, array, scalar, scalar_first = case
    args = (scalar, array) if scalar_first else (array, scalar)
    if array.dtype == BF16:
        # numpy has no bf16 rule of its own: the scalar takes the array's dtype, as float16's would
        with np.errstate(all="ignore"):
            weak = np.asarray(scalar, BF16)
        expected = numpy_values(op, *((weak, array) if scalar_first else (array, weak)), BF16)
    else:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = np.asarray(UFUNCS[op](*args))
        except OverflowError:   # numpy 2: a Python int out of the integer array's range
            with pytest.raises(ValueError, match=rf"={scalar} does not fit the other operand's dtype {array.dtype}"):
                on_engine(op, *args)
            return
    got = on_engine(op, *args)
    assert_same(got, expected)
