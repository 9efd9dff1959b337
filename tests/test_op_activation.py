"""gelu, relu, sigmoid, tanh, exp, sqrt and erf; hardswish, hardsigmoid, silu, leaky_relu, log and
reciprocal (their section at the end).

BASIC against independent known values and against PyTorch's CPU ops (every float dtype, bf16
and f16 included, and special values); then every engine under test (see conftest) against
BASIC: odd sizes (whole and partial 16-lane vectors), strided and negative-stride views,
zero-size inputs, special and large values, relu's integer kernels. Results must have BASIC's
dtype and shape; relu equals BASIC's exactly, the others lie within a few units of the storage
dtype's epsilon. The two-operand ops are in test_op_arithmetic.py."""
import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from elementwise_checks import (
    BINARY, FLOATS, INTS, KNOWN, SIGNED_ZEROS, SIZES, ULPS, assert_as_torch, basic, big, call_args, check, eps,
    from_torch, needs_torch, operands, require, run, sample, special_values, specials, to_torch, torch, views)


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_gelu_known_values():
    out = polyeng.gelu(np.array([-1.0, 0.0, 1.0, 3.0]))
    np.testing.assert_allclose(out, [-0.15865525393145707, 0.0, 0.8413447460685429, 2.9959503059051098],
                               rtol=1e-15)
    out = polyeng.gelu(np.array([-1.0, 1.0]), approximate="tanh")
    np.testing.assert_allclose(out, [-0.15880800939172324, 0.8411919906082768], rtol=1e-15)
    with pytest.raises(ValueError, match="approximate='erf'"):
        polyeng.gelu(np.ones(2), approximate="erf")


# (op, operands, the value to 17 digits): from tables of the functions, not from a library call
KNOWN_VALUES = [
    ("erf", (0.5,), 0.5204998778130465), ("erf", (1.0,), 0.8427007929497149), ("erf", (-2.0,), -0.9953222650189527),
    ("sigmoid", (0.0,), 0.5), ("sigmoid", (1.0,), 0.7310585786300049), ("sigmoid", (-1.0,), 0.2689414213699951),
    ("tanh", (1.0,), 0.7615941559557649), ("tanh", (0.5,), 0.46211715726000974), ("tanh", (-1.0,), -0.7615941559557649),
    ("sqrt", (2.0,), 1.4142135623730951), ("sqrt", (0.25,), 0.5), ("sqrt", (9.0,), 3.0),
    ("exp", (1.0,), 2.718281828459045), ("exp", (0.0,), 1.0), ("exp", (-1.0,), 0.36787944117144233),
    ("relu", (-1.5,), 0.0), ("relu", (2.5,), 2.5),
]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op,operands,value", KNOWN_VALUES,
                         ids=[f"{op}{operands}" for op, operands, _ in KNOWN_VALUES])
def test_known_values(op, operands, value, dtype):
    f = FLOATS[dtype]
    arrays = [np.full(5, v, np.float64).astype(f) for v in operands]
    got = basic(op, *arrays)
    assert got.dtype == f and got.shape == (5,)
    want = np.float64(value).astype(f).astype(np.float64)   # the value rounded to the storage dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * eps(f), atol=0)


# -- BASIC against PyTorch -------------------------------------------------------------------------


# op -> its PyTorch function (None without torch, when the comparisons skip)
TORCH_UNARY = {op: getattr(torch, op, None) for op in ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")}


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", list(TORCH_UNARY))
def test_unary_as_torch(op, dtype):
    f = FLOATS[dtype]
    x = np.concatenate([sample(op, 1000, f, 0), special_values(f)])
    assert_as_torch(basic(op, x), from_torch(TORCH_UNARY[op](to_torch(x))), op)
    view = x[::-3]
    assert_as_torch(basic(op, view), from_torch(TORCH_UNARY[op](to_torch(view))), op)


@needs_torch
def test_special_values_as_torch():
    nan, inf = np.nan, np.inf
    for f in FLOATS.values():
        x = np.array([-1.0, inf, -inf, nan, 1000.0, -1000.0, 0.0, -0.0], np.float64).astype(f)
        for op in TORCH_UNARY:
            assert_as_torch(basic(op, x), from_torch(TORCH_UNARY[op](to_torch(x))), op)
        base = np.array([0.0, -0.0, 0.0, -8.0, nan, 1.0, -1.0], np.float64).astype(f)
        exponent = np.array([-1.0, -1.0, 0.0, 1 / 3, 0.0, nan, inf], np.float64).astype(f)
        assert_as_torch(basic("pow", base, exponent), from_torch(torch.pow(to_torch(base), to_torch(exponent))), "pow")
        got = basic("sqrt", np.array([-0.0], f)).astype(np.float64)
        assert got[0] == 0 and np.signbit(got[0])


# -- gelu on every engine against BASIC ------------------------------------------------------------

def run_gelu(engine, x, approximate):
    with polyeng.compute_eng(engine, fallback=False):
        return polyeng.gelu(x, approximate=approximate)


@pytest.mark.uses_ops("gelu")
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (16,), (13, 3), (3, 11), (5, 1000)])
def test_matches_basic(engine, shape, approximate, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(FLOATS[dtype])
    got, want = run_gelu(engine, x, approximate), run_gelu("basic", x, approximate)
    assert got.dtype == x.dtype and got.shape == x.shape
    tol = 8 * eps(x.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.uses_ops("gelu")
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values(engine, approximate, dtype):
    storage = FLOATS[dtype]
    big = 60000.0 if storage == np.float16 else 1e30
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, big, -big, 10.0, -10.0, 30.0, -30.0, 1e-30],
                 np.float64).astype(storage)
    got, want = run_gelu(engine, x, approximate), run_gelu("basic", x, approximate)
    tol = 8 * eps(storage)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


# -- relu, sigmoid, tanh, exp, sqrt and erf on every engine against BASIC --------------------------

UNARY = ("relu", "sigmoid", "tanh", "exp", "sqrt", "erf")
INTEGER_OPS = ("relu",)


DTYPE_CASES = [(op, d) for op in UNARY for d in FLOATS] + [(op, d) for op in INTEGER_OPS for d in INTS]


@pytest.mark.parametrize("op,dtype", DTYPE_CASES, ids=[f"{op}-{d}" for op, d in DTYPE_CASES])
def test_matches_basic_on_every_dtype_and_size(engine, op, dtype):
    storage = {**FLOATS, **INTS}[dtype]
    for shape in SIZES:
        a, b = operands(op, shape, storage, seed=len(shape) + sum(shape))
        check(engine, op, *call_args(op, a, b))


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_non_contiguous_and_negative_stride_views(engine, op, dtype):
    a, b = operands(op, (9, 35), FLOATS[dtype])
    va, vb = views(a), views(b)
    for name in va:
        assert not va[name].flags.c_contiguous
        check(engine, op, *call_args(op, va[name], b))
        if op in BINARY:
            check(engine, op, a, vb[name])
            check(engine, op, va[name], vb["negative"])
            check(engine, op, va[name][:, :1], vb[name])   # a broadcast view against a strided one


@pytest.mark.parametrize("op", INTEGER_OPS)
def test_integer_views(engine, op):
    a, b = operands(op, (9, 35), np.int32)
    va, vb = views(a), views(b)
    for name in va:
        check(engine, op, *call_args(op, va[name], vb[name]))


@pytest.mark.parametrize("op", UNARY)
def test_zero_size_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16) + ((np.int8,) if op in INTEGER_OPS else ()):
        pairs = [((0,), (0,)), ((3, 0, 2), (3, 0, 2)), ((0, 1), (1, 5)), ((2, 0), ()), ((), (4, 0)), ((0,), (1,))]
        for sa, sb in pairs if op in BINARY else [(s, None) for s in ((0,), (3, 0, 2), (0, 1), (2, 0))]:
            a, b = np.zeros(sa, dtype), np.ones(sb or (), dtype)
            want = check(engine, op, *call_args(op, a, b))
            assert want.size == 0 and want.shape == (np.broadcast_shapes(sa, sb) if op in BINARY else sa)


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", UNARY)
def test_special_values_unary(engine, op, dtype):
    values = np.array(specials(FLOATS[dtype]), np.float64).astype(FLOATS[dtype])
    check(engine, op, values)
    check(engine, op, np.tile(values, 3)[::-1])   # past one 16-lane vector, negative stride


nan, inf = np.nan, np.inf


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", UNARY)
def test_known_special_results(engine, op, dtype):
    require(engine, op)
    f = FLOATS[dtype]
    args, expected = KNOWN[op]
    args = [[big(f) if v == "big" else v for v in a] * 3 for a in args]   # 3 copies: past 16 lanes
    got = run(engine, op, *(np.array(a, np.float64).astype(f) for a in args))
    expected = np.array(expected * 3, np.float64)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=ULPS.get(op, 0) * eps(f), atol=0,
                               equal_nan=True)
    if op in SIGNED_ZEROS:
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(got.astype(np.float64)[zero]), np.signbit(expected[zero]))


# -- hardswish, hardsigmoid, silu, leaky_relu, log and reciprocal --------------------------------------
#
# BASIC against known values and PyTorch (every float dtype, special values, signed zeros); every
# engine against BASIC on every dtype, odd sizes, views, zero-size and special inputs; bad
# arguments; the specs; graphs, dask and device tensors.

from support import run_on  # noqa: E402

MORE = ("hardswish", "hardsigmoid", "silu", "leaky_relu", "log", "reciprocal")
# error allowed against BASIC, in units of the storage epsilon (relative, and absolute near zero):
# the formulas are BASIC's term for term; silu's exp and log are _mathfn's and PoCL's, and NUMBA's
# f32 log is correctly rounded where numpy's is not always
MORE_ULPS = {"hardswish": 2, "hardsigmoid": 2, "silu": 4, "leaky_relu": 1, "log": 4, "reciprocal": 1}
MORE_SIGNED_ZEROS = ("hardswish", "silu", "leaky_relu", "reciprocal")   # the sign of a zero result is defined
SLOPES = {"leaky_relu": {"negative_slope": 0.2}}


def more_sample(op, shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 4
    return (np.abs(x) + 1e-3 if op == "log" else x).astype(dtype)


def assert_within(got, want, op, ulps=None):
    assert type(got) is np.ndarray
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    tol = (MORE_ULPS[op] if ulps is None else ulps) * eps(want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=op)
    if op in MORE_SIGNED_ZEROS:
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]), err_msg=f"{op}: sign of zero")


def check_more(engine, op, x, **kwargs):
    want = run_on("basic", op, x, **kwargs)
    assert_within(run_on(engine, op, x, **kwargs), want, op)
    return want


MORE_KNOWN_VALUES = [
    ("hardswish", -3.0, 0.0), ("hardswish", 3.0, 3.0), ("hardswish", 1.0, 2 / 3), ("hardswish", -1.0, -1 / 3),
    ("hardswish", 1.5, 1.125), ("hardsigmoid", 0.0, 0.5), ("hardsigmoid", 1.0, 2 / 3), ("hardsigmoid", -4.0, 0.0),
    ("hardsigmoid", 4.0, 1.0), ("hardsigmoid", -1.5, 0.25),
    ("silu", 1.0, 0.7310585786300049), ("silu", -1.0, -0.2689414213699951), ("silu", 2.0, 1.7615941559557649),
    ("leaky_relu", -2.0, -0.02), ("leaky_relu", 2.5, 2.5),
    ("log", 2.0, 0.6931471805599453), ("log", 10.0, 2.302585092994046), ("log", 1.0, 0.0), ("log", 0.5, -0.6931471805599453),
    ("reciprocal", 4.0, 0.25), ("reciprocal", -0.5, -2.0), ("reciprocal", 3.0, 0.3333333333333333),
]


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op,value,result", MORE_KNOWN_VALUES, ids=[f"{op}({v})" for op, v, _ in MORE_KNOWN_VALUES])
def test_more_known_values(op, value, result, dtype):
    f = FLOATS[dtype]
    got = basic(op, np.full(5, value, np.float64).astype(f))
    assert got.dtype == f and got.shape == (5,)
    want = np.float64(result).astype(f).astype(np.float64)   # the value rounded to the storage dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * eps(f), atol=0)


# op -> (inputs, the defined results): infinities, NaN, signed zeros and the ends of each formula
MORE_KNOWN = {
    "hardswish": ([nan, inf, -inf, -0.0, 0.0, -3.0, 3.0, -1000.0, 1000.0], [nan, inf, nan, -0.0, 0.0, -0.0, 3.0, -0.0, 1000.0]),
    "hardsigmoid": ([nan, inf, -inf, -0.0, 0.0, -3.0, 3.0, -1000.0], [nan, 1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 0.0]),
    "silu": ([nan, inf, -inf, -0.0, 0.0, -1000.0, 1000.0], [nan, inf, nan, -0.0, 0.0, -0.0, 1000.0]),
    "leaky_relu": ([nan, inf, -inf, -0.0, 0.0, -1.0, 2.0], [nan, inf, -inf, -0.0, 0.0, -0.01, 2.0]),
    "log": ([nan, inf, -inf, -0.0, 0.0, -1.0, 1.0], [nan, inf, nan, -inf, -inf, nan, 0.0]),
    "reciprocal": ([nan, inf, -inf, -0.0, 0.0, 2.0, -4.0], [nan, 0.0, -0.0, -inf, inf, 0.5, -0.25]),
}


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", MORE)
def test_more_known_special_results_on_basic(op, dtype):
    assert_known_special(basic(op, np.array(MORE_KNOWN[op][0] * 3, np.float64).astype(FLOATS[dtype])), op, dtype)


def assert_known_special(got, op, dtype):
    f = FLOATS[dtype]
    expected = np.array(MORE_KNOWN[op][1] * 3, np.float64)   # 3 copies: past one 16-lane vector
    got = got.astype(np.float64)
    np.testing.assert_allclose(got, expected.astype(f).astype(np.float64), rtol=eps(f), atol=0, equal_nan=True)
    zero = expected == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(expected[zero]), err_msg="sign of zero")


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", MORE)
def test_more_known_special_results(engine, op, dtype):
    x = np.array(MORE_KNOWN[op][0] * 3, np.float64).astype(FLOATS[dtype])
    assert_known_special(run_on(engine, op, x), op, dtype)


# PyTorch's functions, in units of the storage epsilon: 16-bit results are the f32 value rounded
# once, by torch as by BASIC; torch's log and exp are SLEEF's, numpy's its own
TORCH_MORE = {
    "hardswish": (lambda t: torch.nn.functional.hardswish(t), 1),
    "hardsigmoid": (lambda t: torch.nn.functional.hardsigmoid(t), 1),
    "silu": (lambda t: torch.nn.functional.silu(t), 4),
    "leaky_relu": (lambda t: torch.nn.functional.leaky_relu(t), 0),
    "leaky_relu_0.2": (lambda t: torch.nn.functional.leaky_relu(t, 0.2), 0),
    "log": (lambda t: torch.log(t), 4),
    "reciprocal": (lambda t: torch.reciprocal(t), 1),
}


@needs_torch
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("name", list(TORCH_MORE))
def test_more_as_torch(name, dtype):
    op, kwargs = name.split("_0")[0], ({"negative_slope": 0.2} if name.endswith("0.2") else {})
    fn, ulps = TORCH_MORE[name]
    f = FLOATS[dtype]
    specials_ = np.array(MORE_KNOWN[op][0] + [1e-3, -1e-3, 2.9, -2.9, 88.0, -88.0, 1e30 if f != np.float16 else 6e4],
                         np.float64).astype(f)
    x = np.concatenate([more_sample(op, 1000, f), specials_])
    for values in (x, x[::-3]):
        want = from_torch(fn(to_torch(values)))
        assert_within(basic(op, values, **kwargs), want, op, ulps)


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", MORE)
def test_more_match_basic_on_every_dtype_and_size(engine, op, dtype):
    for shape in SIZES:
        check_more(engine, op, more_sample(op, shape, FLOATS[dtype], seed=len(shape) + sum(shape)),
                   **SLOPES.get(op, {}))


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", MORE)
def test_more_large_inputs_in_parallel_chunks(engine, op, dtype):
    # past NUMBA's one-thread size and its chunk length, with a remainder after the last full run
    check_more(engine, op, more_sample(op, (1 << 17) + 19, FLOATS[dtype]))


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("op", MORE)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_more_non_contiguous_and_negative_stride_views(engine, op, dtype):
    x = more_sample(op, (9, 35), FLOATS[dtype])
    for name, view in views(x).items():
        assert not view.flags.c_contiguous, name
        check_more(engine, op, view)
        assert np.array_equal(view, views(x)[name])   # the input is left as it was


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("op", MORE)
def test_more_zero_size_and_zero_d_inputs(engine, op):
    for dtype in (np.float32, dt.bfloat16):
        for shape in ((0,), (3, 0, 2), (0, 1), (2, 0)):
            want = check_more(engine, op, np.zeros(shape, dtype))
            assert want.size == 0 and want.shape == shape and want.dtype == dtype
    got = run_on(engine, op, np.array(0.75, np.float64))
    assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64


@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("op", MORE)
def test_more_special_values(engine, op, dtype):
    f = FLOATS[dtype]
    values = np.array(specials(f) + [-3.0, 3.0, -2.9999, 1e-30, -1e-30], np.float64).astype(f)
    check_more(engine, op, values, **SLOPES.get(op, {}))
    check_more(engine, op, np.tile(values, 3)[::-1])   # past one 16-lane vector, negative stride


@pytest.mark.uses_ops("leaky_relu")
@pytest.mark.parametrize("slope", [0.0, 1.0, -0.5, 1 / 3, 100, np.float32(0.3), np.float64(2.5), np.int64(3)])
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_leaky_relu_slopes(engine, slope, dtype):
    # the slope is taken in the compute type (f32 for 16-bit storage), as BASIC and PyTorch take it
    x = more_sample("leaky_relu", (5, 37), FLOATS[dtype])
    want = check_more(engine, "leaky_relu", x, negative_slope=slope)
    wide = x.astype(np.float64)
    scale = float(np.float64(slope).astype(np.float64 if dtype == "f64" else np.float32))
    np.testing.assert_allclose(want.astype(np.float64), np.where(wide > 0, wide, wide * scale), rtol=eps(x.dtype))


def test_leaky_relu_default_slope_is_001():
    x = np.array([-100.0, 100.0])
    assert polyeng.leaky_relu(x).tolist() == [-1.0, 100.0]
    assert polyeng.leaky_relu(x, 0.5).tolist() == [-50.0, 100.0]   # positional, as torch's


@pytest.mark.parametrize("op", MORE)
@pytest.mark.parametrize("value", [np.arange(3), np.array([1, 2], np.int8), np.array([True, False])],
                         ids=["int64", "int8", "bool"])
def test_more_refuse_integer_and_bool_inputs_naming_x(op, value):
    with pytest.raises(TypeError, match=rf"^x has dtype {value.dtype}; {op} expects a floating-point array"):
        getattr(polyeng, op)(value)


@pytest.mark.parametrize("slope", ["0.1", None, True, np.bool_(False), 1j, np.array([0.1]), np.array(0.1), [0.1]],
                         ids=["str", "None", "True", "np.bool_", "complex", "array", "0-d array", "list"])
def test_leaky_relu_slope_must_be_a_real_number(slope):
    with pytest.raises(TypeError, match=r"^negative_slope=.*expected a real number"):
        polyeng.leaky_relu(np.ones(3, np.float32), negative_slope=slope)


def test_leaky_relu_slope_past_float64_is_a_value_error():
    with pytest.raises(ValueError, match=r"^negative_slope=1000.*too large for a float64"):
        polyeng.leaky_relu(np.ones(3), negative_slope=10 ** 400)


def test_more_specs():
    from polyeng.amp import Category
    from polyeng.ops import OPS as SPECS
    for op in MORE:
        spec = SPECS[op]
        assert spec.family == "activation" and spec.chunking == "elementwise" and not spec.exact
        assert getattr(polyeng, op) is spec.function
        assert spec.category is (Category.DENY if op in ("log", "reciprocal") else Category.FOLLOW)
    assert SPECS["log"].ufuncs == ("log",) and SPECS["reciprocal"].ufuncs == ("reciprocal",)


def test_more_in_a_traced_graph():
    x = more_sample("log", (4, 6), np.float32)
    graph = polyeng.graph.trace(lambda v: np.log(polyeng.hardswish(polyeng.leaky_relu(np.reciprocal(v), 0.1)) + 1.0), x)
    assert [n.op for n in graph.nodes] == ["reciprocal", "leaky_relu", "hardswish", "add", "log"]
    want = basic("log", basic("hardswish", basic("leaky_relu", basic("reciprocal", x), negative_slope=0.1)) + np.float32(1))
    np.testing.assert_allclose(graph(x), want, rtol=4 * eps(np.float32))


@pytest.mark.parametrize("op", MORE)
def test_more_dask_arrays_stay_lazy_and_equal_the_eager_op(op):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = more_sample(op, (6, 8), np.float32)
    lazy = run_on("basic", op, da.from_array(x, chunks=(4, 3)), **SLOPES.get(op, {}))
    assert isinstance(lazy, da.Array) and lazy.dtype == x.dtype and lazy.shape == x.shape
    got = dask.compute(lazy, scheduler="sync")[0]
    np.testing.assert_array_equal(got, run_on("basic", op, x, **SLOPES.get(op, {})))


@pytest.mark.device_tensors
@pytest.mark.uses_ops(*MORE)
@pytest.mark.parametrize("dtype", ["f64", "bf16"])
def test_more_device_tensors_stay_on_their_engine(engine, dtype):
    x = more_sample("log", (3, 40), FLOATS[dtype])
    with polyeng.compute_eng(engine, fallback=False):
        y = polyeng.to_device(x, engine)
        for op in MORE:
            y = getattr(polyeng, op)(y)
        assert not isinstance(y, np.ndarray)   # the chain stayed on the device
    want = x
    for op in MORE:
        want = run_on(engine, op, want)
    np.testing.assert_array_equal(polyeng.to_numpy(y).astype(np.float64), want.astype(np.float64))
