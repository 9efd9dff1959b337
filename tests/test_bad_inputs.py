"""Bad inputs are refused by validation with an error that names the argument and says what was
expected, on every engine: masked arrays, values that are not arrays of numbers, device tensors
no engine owns, lstm params of the other direction count, dtype pairs that promote outside
polyeng's dtypes, and out-of-range or ill-typed sizes. Also: ndarray subclasses arrive as plain
arrays, every supported dtype pair promotes as numpy does, and int64 runs on every engine."""
import itertools
import re
import warnings

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from polyeng.ops import OPS
from support import FakeTensor, random_values

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")

FLOAT32 = np.float32
DTYPES = dt.SUPPORTED_DTYPES


def on(engine, op, *args, **kwargs):
    """``op`` pinned to ``engine``, with any warning (a fallback, a numpy complaint) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with polyeng.compute_eng(engine, fallback=False):
            return getattr(polyeng, op)(*args, **kwargs)


def lstm_params(layers, directions, input_size=3, hidden=2, dtype=FLOAT32):
    rng = np.random.default_rng(layers * 10 + directions)
    return [tuple(rng.standard_normal(shape).astype(dtype) for shape in
                  ((4 * hidden, input_size if layer == 0 else directions * hidden), (4 * hidden, hidden),
                   (4 * hidden,), (4 * hidden,)))
            for layer in range(layers) for _ in range(directions)]


# ---------------------------------------------------------------- ndarray subclasses

def _masked_calls(m):
    x = np.ones((2, 3), FLOAT32)
    w_ih, w_hh, b_ih, b_hh = lstm_params(1, 1)[0]
    return [("x", lambda: polyeng.softmax(m)),
            ("tensors[1]", lambda: polyeng.concat([x[0], m])),
            ("else_", lambda: polyeng.select(np.ones(3, bool), x[0], m)),
            ("b", lambda: polyeng.matmul(x, m)),
            ("weight", lambda: polyeng.linear(x, np.ma.masked_array(x, mask=x > 0))),
            ("params[0][2]", lambda: polyeng.lstm(np.ones((2, 1, 3), FLOAT32),
                                                  [(w_ih, w_hh, np.ma.masked_array(b_ih), b_hh)]))]


@pytest.mark.uses_ops("softmax", "concat", "select", "matmul", "linear", "lstm")
def test_masked_arrays_are_a_type_error_naming_the_argument(engine):
    m = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]).astype(FLOAT32)
    for name, call in _masked_calls(m):
        with polyeng.compute_eng(engine, fallback=False):
            with pytest.raises(TypeError, match=rf"^{re.escape(name)}.* is a masked array, which polyeng does not "
                                                rf"support .*fill them first, e.g. {re.escape(name)}\.filled\(0\)"):
                call()


def test_subclasses_are_validated_as_plain_arrays():
    matrix = np.matrix([[1.0, 2.0, 3.0]])
    args = OPS["softmax"].validate(x=matrix, axis=-1)
    assert type(args["x"]) is np.ndarray and args["x"].shape == (1, 3)
    args = OPS["concat"].validate(tensors=[matrix, np.asarray(matrix)], axis=0)
    assert all(type(a) is np.ndarray for a in args["tensors"])


@pytest.mark.uses_ops("softmax", "concat", "select", "matmul", "linear", "layer_norm")
def test_np_matrix_runs_like_the_plain_array_on_every_engine(engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)   # np.matrix's own notice
        m = np.matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]], dtype=FLOAT32)
    a = np.asarray(m)
    cond = np.asmatrix(np.array([[True, False, True]]))
    for op, args, plain in [("softmax", (m,), (a,)), ("log_softmax", (m, 0), (a, 0)),
                            ("concat", ([m, m], 1), ([a, a], 1)),
                            ("select", (cond, m, m * 2), (np.asarray(cond), a, a * 2)),
                            ("matmul", (m, m.T), (a, a.T)), ("linear", (m, m), (a, a)),
                            ("layer_norm", (m, (2, 3), m), (a, (2, 3), a))]:
        expected = on("basic", op, *plain)
        for out in (on("basic", op, *args), on(engine, op, *args)):   # BASIC's kernels use matrix methods
            assert type(out) is np.ndarray, op
            np.testing.assert_allclose(out, expected, rtol=1e-5, err_msg=op)


# ---------------------------------------------------------------- not arrays of numbers

PREFIX = "expected an array or array-like of numbers"
NOT_ARRAYS = [(object(), rf"x: {PREFIX}, got object$"), ({"a": 1}, rf"x: {PREFIX}, got dict$"),
              ({1.0, 2.0}, rf"x: {PREFIX}, got set$"),
              ([[1.0], [1.0, 2.0]], rf"x: {PREFIX}, got a list that numpy cannot turn into an array \(.*inhomogeneous"),
              ("abc", rf"x='abc': {PREFIX}, got str$"), (b"abc", rf"x=b'abc': {PREFIX}, got bytes$"),
              (None, rf"x=None: {PREFIX}$"),
              (["a", "b"], rf"x: {PREFIX}, got list \(numpy reads it as dtype <U1\)$"),
              ([1.0, None], rf"x: {PREFIX}, got list \(numpy reads it as dtype object\)$")]


@pytest.mark.parametrize("value,match", NOT_ARRAYS, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("op,call", [("gelu", lambda v: polyeng.gelu(v)),
                                     ("max_pool2d", lambda v: polyeng.max_pool2d(v, 2)),
                                     ("upsample_nearest", lambda v: polyeng.upsample_nearest(v, scale_factor=2))])
def test_values_that_are_not_arrays_are_named(op, call, value, match):
    with pytest.raises(TypeError, match=rf"^{match}"):
        call(value)


def test_every_array_argument_is_named():
    x = np.ones((2, 3), FLOAT32)
    cases = [("tensors[1]", lambda: polyeng.concat([x, {"a": 1}])),
             ("cond", lambda: polyeng.select("abc", x, x)),
             ("then", lambda: polyeng.select(np.ones(3, bool), object(), x)),
             ("a", lambda: polyeng.matmul([[1.0], [1.0, 2.0]], x)),
             ("bias", lambda: polyeng.linear(x, x, b"ab")),
             ("weight", lambda: polyeng.layer_norm(x, 3, weight={1, 2, 3})),
             ("h0", lambda: polyeng.lstm(np.ones((2, 1, 3), FLOAT32), lstm_params(1, 1), h0="zeros")),
             ("params[0][0] (w_ih of layer 0)", lambda: polyeng.lstm(np.ones((2, 1, 3), FLOAT32),
                                                                    [(object(),) + lstm_params(1, 1)[0][1:]]))]
    for name, call in cases:
        with pytest.raises(TypeError, match=rf"^{re.escape(name)}\W.*{PREFIX}"):
            call()


# ---------------------------------------------------------------- device tensors no engine owns

class DeviceBox:
    """A device tensor without ``__array__``: numpy cannot read its data."""

    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, array.dtype


class BoxEngine:
    name = "boxes"

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name, available=True, reason="", native_type=DeviceBox)
        registry.add_kernel("softmax", self.name, self.softmax)

    @staticmethod
    def softmax(x, axis):
        with polyeng.compute_eng("basic"):
            return DeviceBox(polyeng.softmax(x.array, axis))


def test_a_tensor_of_an_unregistered_engine_is_named(backends):
    box = DeviceBox(np.ones(3, FLOAT32))
    with pytest.raises(TypeError, match=r"^x is a test_bad_inputs\.DeviceBox, which no registered engine owns "
                                        r"\(register its engine, or convert it to a numpy array\)"):
        polyeng.softmax(box)
    plugin = backends(BoxEngine())
    assert isinstance(polyeng.softmax(box), DeviceBox)   # owned: the layout step picks its engine
    polyeng.unregister_backend(plugin)
    with pytest.raises(TypeError, match=r"^tensors\[0\] is a test_bad_inputs\.DeviceBox, which no registered"):
        polyeng.concat([box])
    polyeng.register_backend(plugin)   # the fixture unregisters it


def test_an_object_with_shape_and_dtype_only_is_not_an_array():
    class Described:
        shape, dtype = (3,), np.dtype(FLOAT32)
    with pytest.raises(TypeError, match=r"^weight is a .*Described, which no registered engine owns"):
        polyeng.linear(np.ones((2, 3), FLOAT32), Described())


def test_array_likes_with_a_dtype_keep_it_as_np_asarray_does():
    # a list has no dtype and takes the input's; an array-like with its own dtype is read as
    # numpy reads it, so a float64 weight beside float32 input is refused as an array would be
    x = np.ones((2, 3), FLOAT32)
    assert polyeng.layer_norm(x, 3, weight=[1.0, 1.0, 1.0]).dtype == FLOAT32
    with pytest.raises(TypeError, match="weight has dtype float64 but the input is float32"):
        polyeng.layer_norm(x, 3, weight=FakeTensor(np.ones(3)))
    out = polyeng.layer_norm(x, 3, weight=FakeTensor(np.ones(3, FLOAT32)))
    np.testing.assert_array_equal(out, polyeng.layer_norm(x, 3))


# ---------------------------------------------------------------- lstm: params of the other direction count

@pytest.mark.uses_ops("lstm")
def test_bidirectional_params_without_bidirectional_say_so(engine):
    x = np.ones((5, 1, 3), FLOAT32)
    with polyeng.compute_eng(engine, fallback=False):
        with pytest.raises(ValueError, match=r"params has 4 entries; with bidirectional=False that is 4 layers, "
                                             r"but params\[1\]\[0\] has shape \(8, 3\).*reverse direction in a "
                                             r"bidirectional model .* need bidirectional=True"):
            polyeng.lstm(x, lstm_params(2, 2))
        with pytest.raises(ValueError, match=r"params has 2 entries; with bidirectional=True that is 1 layer x 2 "
                                             r"directions, but params\[1\]\[0\] has shape \(8, 2\).*layer 1 in a "
                                             r"unidirectional model .* need bidirectional=False"):
            polyeng.lstm(x, lstm_params(2, 1), bidirectional=True)
        # input size equal to the hidden size: layer 1 cannot tell, layer 2 can
        with pytest.raises(ValueError, match=r"params has 4 entries.*params\[2\]\[0\] has shape \(8, 4\).*"
                                             r"layer 1's forward direction"):
            polyeng.lstm(np.ones((5, 1, 2), FLOAT32), lstm_params(2, 2, input_size=2))


def test_lstm_params_of_one_layer_must_be_wrapped():
    with pytest.raises(TypeError, match=r"params\[0\] is ndarray; .* a single layer's is written "
                                        r"\[\(w_ih, w_hh, b_ih, b_hh\)\]"):
        polyeng.lstm(np.ones((5, 1, 3), FLOAT32), lstm_params(1, 1)[0])


@pytest.mark.uses_ops("lstm")
def test_lstm_params_and_states_as_lists_take_the_input_dtype(engine):
    x = np.random.default_rng(1).standard_normal((4, 1, 3)).astype(FLOAT32)
    params = lstm_params(1, 1)
    as_lists = [tuple(p.tolist() for p in entry) for entry in params]
    h0 = [[[0.5, -0.5]]]
    y, (h, c) = on(engine, "lstm", x, as_lists, h0, h0)
    expected, _ = on("basic", "lstm", x, params, np.array(h0, FLOAT32), np.array(h0, FLOAT32))
    assert y.dtype == FLOAT32 and h.dtype == FLOAT32
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- promotion of every dtype pair

def _small_values(dtype, shape, seed):
    """Values 0..2 (0/1 for bool): every product and sum below is exact in every dtype."""
    values = np.random.default_rng(seed).integers(0, 3, shape)
    return (values > 0) if dtype == dt.bool_ else values.astype(dtype)


def _numpy_promotion(a, b):
    """numpy's result type; bfloat16, which numpy cannot promote, as dtypes.result_type extends it."""
    return dt.result_type(a, b) if dt.bfloat16 in (a, b) else np.result_type(a, b)


PAIRS = list(itertools.product(DTYPES, DTYPES))
PAIR_IDS = [f"{dt.short_name(a)}-{dt.short_name(b)}" for a, b in PAIRS]


@pytest.mark.parametrize("a_dtype,b_dtype", PAIRS, ids=PAIR_IDS)
def test_every_dtype_pair_promotes_as_numpy_or_is_refused(a_dtype, b_dtype):
    """The table, on the reference engine: supported results are numpy's; others name both arguments."""
    expected = _numpy_promotion(a_dtype, b_dtype)
    a, b = _small_values(a_dtype, (3, 3), 0), _small_values(b_dtype, (3, 3), 1)
    cond = np.array([True, False, True])
    calls = {"concat": (lambda: polyeng.concat([a, b]), r"tensors\[0\] \({a}\) and tensors\[1\] \({b}\)"),
             "select": (lambda: polyeng.select(cond, a, b), r"then \({a}\) and else_ \({b}\)"),
             "matmul": (lambda: polyeng.matmul(a, b), r"a \({a}\) and b \({b}\)")}
    for op, (call, names) in calls.items():
        if expected in DTYPES:
            with polyeng.compute_eng("basic", fallback=False):
                assert call().dtype == expected, op
        else:
            names = names.format(a=np.dtype(a_dtype), b=np.dtype(b_dtype))
            with pytest.raises(TypeError, match=rf"^{op}: {names} promote to {expected}, which is not among "
                                                r"polyeng's dtypes"):
                call()


@pytest.mark.uses_ops("concat", "select", "matmul")
def test_every_dtype_pair_gives_basics_result(engine):
    cond = np.array([True, False, True])
    for a_dtype, b_dtype in PAIRS:
        if _numpy_promotion(a_dtype, b_dtype) not in DTYPES:
            continue
        a, b = _small_values(a_dtype, (3, 3), 0), _small_values(b_dtype, (3, 3), 1)
        for op, args in [("concat", ([a, b],)), ("select", (cond, a, b)), ("matmul", (a, b))]:
            expected, out = on("basic", op, *args), on(engine, op, *args)
            assert out.dtype == expected.dtype, (op, a_dtype, b_dtype)
            np.testing.assert_array_equal(out, expected, err_msg=f"{op} {a_dtype} {b_dtype}")


@pytest.mark.uses_ops("concat", "select", "matmul")
def test_int8_with_uint8_is_refused_before_any_engine_runs(engine):
    a, b = np.ones((2, 2), np.int8), np.ones((2, 2), np.uint8)
    for call in (lambda: polyeng.concat([b, a]), lambda: polyeng.select(np.ones(2, bool), a, b),
                 lambda: polyeng.matmul(a, b), lambda: polyeng.concat([a, b, b])):
        with polyeng.compute_eng(engine, fallback=False), pytest.raises(TypeError, match="promote to int16"):
            call()
    # a wider third dtype takes both: numpy's promotion of the three is int32
    assert on(engine, "concat", [a, b, np.ones((1, 2), np.int32)]).dtype == np.int32


# ---------------------------------------------------------------- int64 on every engine

def _int64_values(shape, seed):
    x = random_values(np.random.default_rng(seed), shape, np.int64)
    x.flat[:3] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, 2 ** 53 + 1]   # not exact as float64
    return x


INT64_CASES = {
    "concat": lambda x, y: (([x, y[:, :, :1]], 2), {}),
    "permute_contiguous": lambda x, y: ((x, (3, 0, 2, 1)), {}),
    "select": lambda x, y: ((np.arange(6)[:, None] % 3 == 0, x, y[:1, :1, :1]), {}),
    "max_pool2d": lambda x, y: ((x, 2), {"padding": 1, "return_indices": True}),
    "max_pool3d": lambda x, y: ((x, 2), {"ceil_mode": True}),
    "upsample_nearest": lambda x, y: ((x,), {"size": (9, 4)}),
    "matmul": lambda x, y: ((x, y.swapaxes(-1, -2)), {}),
}


@pytest.mark.uses_ops(*INT64_CASES)
@pytest.mark.parametrize("op", sorted(INT64_CASES))
def test_int64_runs_on_every_engine_as_on_basic(engine, op):
    x, y = _int64_values((2, 3, 6, 5), 0), _int64_values((2, 3, 6, 5), 1)
    args, kwargs = INT64_CASES[op](x, y)
    expected = on("basic", op, *args, **kwargs)
    try:
        out = on(engine, op, *args, **kwargs)
    except polyeng.EngineError as exc:   # an engine may refuse int64, with its reason, never crash
        assert "rejected:" in str(exc) and "kernel failed" not in str(exc), exc
        return
    for got, want in zip(out if isinstance(out, tuple) else (out,), expected if isinstance(expected, tuple)
                         else (expected,)):
        assert got.dtype == want.dtype == np.int64 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.uses_ops("select")
def test_int64_scalars_stay_int64(engine):
    big = np.array([2 ** 60 + 1, -(2 ** 62)], np.int64)
    out = on(engine, "select", np.array([True, False]), big, 2 ** 53 + 1)
    assert out.dtype == np.int64 and out.tolist() == [2 ** 60 + 1, 2 ** 53 + 1]


# ---------------------------------------------------------------- sizes, axes and options

def test_zero_d_integer_arrays_and_ranges_are_ints():
    x = np.ones((1, 2, 4, 4), FLOAT32)
    assert polyeng.softmax(x, axis=np.array(1)).shape == x.shape
    assert polyeng.max_pool2d(x, np.array(2)).shape == (1, 2, 2, 2)
    assert polyeng.max_pool2d(x, range(2, 4)).shape == (1, 2, 2, 1)
    assert polyeng.layer_norm(x, np.array(4)).shape == x.shape
    assert polyeng.layer_norm(x, range(4, 5)).shape == x.shape
    assert polyeng.permute_contiguous(x, range(4)).shape == x.shape


@pytest.mark.parametrize("call,error,match", [
    (lambda x: polyeng.softmax(x, axis=np.array(True)), TypeError, r"axis=array\(True\): expected an int"),
    (lambda x: polyeng.permute_contiguous(x, (0.0, 1, 2, 3)), TypeError, r"dims\[0\]=0.0: expected an int"),
    (lambda x: polyeng.permute_contiguous(x, (0, True, 2, 3)), TypeError, r"dims\[1\]=True: expected an int"),
    (lambda x: polyeng.permute_contiguous(x, 0), TypeError, r"dims=0: expected a permutation of range\(4\)"),
    (lambda x: polyeng.max_pool2d(x, np.array([2.0, 2.0])), TypeError, r"kernel_size=\(2.0, 2.0\): expected an int"),
    (lambda x: polyeng.gelu(x, approximate=np.array(["tanh", "none"])), ValueError,
     r"approximate=array\(.*\): expected one of 'none', 'tanh'"),
    (lambda x: polyeng.concat({"a": x}), TypeError, r"tensors=dict: expected a list or tuple of arrays"),
    (lambda x: polyeng.concat({1, 2}), TypeError, r"tensors=set: expected a list or tuple of arrays"),
    (lambda x: polyeng.cast(x, []), TypeError, r"dtype=\[\] is not a supported dtype"),
])
def test_ill_typed_options_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call(np.ones((1, 2, 4, 4), FLOAT32))


def test_choice_hands_on_a_plain_str():
    args = OPS["gelu"].validate(x=np.ones(2, FLOAT32), approximate=np.str_("tanh"))
    assert type(args["approximate"]) is str


@pytest.mark.uses_ops("max_pool2d", "avg_pool2d")
@pytest.mark.parametrize("kwargs,match", [
    ({"stride": 2 ** 31}, r"stride=2147483648: every value must be <= 2147483647"),
    ({"stride": 2 ** 70}, r"stride=1180591620717411303424: every value must be <= 2147483647"),
    ({"dilation": (1, 2 ** 31)}, r"dilation=\(1, 2147483648\): every value must be <= 2147483647"),
    ({"padding": 2 ** 31}, r"padding=2147483648: every value must be <= 2147483647"),
])
def test_pooling_sizes_beyond_a_c_int_are_refused(engine, kwargs, match):
    x = np.ones((1, 1, 4, 4), FLOAT32)
    op = "avg_pool2d" if "dilation" not in kwargs else "max_pool2d"
    with polyeng.compute_eng(engine, fallback=False), pytest.raises(ValueError, match=match):
        getattr(polyeng, op)(x, 2, **kwargs)
    assert on(engine, "max_pool2d", x, 2, stride=2 ** 31 - 1).shape == (1, 1, 1, 1)


@pytest.mark.uses_ops("avg_pool2d")
def test_divisor_override_beyond_int64_is_refused(engine):
    x = np.ones((1, 1, 4, 4), FLOAT32)
    with polyeng.compute_eng(engine, fallback=False), \
            pytest.raises(ValueError, match=r"divisor_override=1180591620717411303424: expected an int <= "):
        polyeng.avg_pool2d(x, 2, divisor_override=2 ** 70)
    np.testing.assert_array_equal(on(engine, "avg_pool2d", x, 2, divisor_override=-(2 ** 40)), -(2.0 ** -38))


# ---------------------------------------------------------------- elementwise, mean, reshape, embedding

BROADCAST_RULE = r"do not broadcast together \(numpy's rule"
NOT_BOOL = r"does not take bool operands \(numpy's bool arithmetic is logical, not numeric\)"
TABLE = np.ones((4, 3), FLOAT32)


@pytest.mark.parametrize("call,error,match", [
    # impossible reshapes name the shape
    (lambda: polyeng.reshape(np.ones(6), (4, 2)), ValueError,
     r"^cannot reshape x of shape \(6,\) \(6 elements\) into shape=\(4, 2\) \(8 elements\)"),
    (lambda: polyeng.reshape(np.ones(6), 7), ValueError, r"^cannot reshape x of shape \(6,\) .* into shape=\(7,\)"),
    (lambda: polyeng.reshape(np.ones(6), (4, -1)), ValueError, r"into shape=\(4, -1\): the -1 cannot be inferred"),
    (lambda: polyeng.reshape(np.ones(6), (0, -1)), ValueError, r"into shape=\(0, -1\): the -1 cannot be inferred"),
    (lambda: polyeng.reshape(np.ones(6), (-1, -1)), ValueError, r"^shape=\(-1, -1\): expected sizes >= 0 and at most one -1"),
    (lambda: polyeng.reshape(np.ones(6), (-2, -3)), ValueError, r"^shape=\(-2, -3\): expected sizes >= 0"),
    (lambda: polyeng.reshape(np.ones(6), 6.0), TypeError, r"^shape=6.0: expected an int"),
    (lambda: polyeng.reshape(np.ones(1), True), TypeError, r"^shape=True: expected an int"),
    # shapes that do not broadcast name both operands
    (lambda: polyeng.add(np.ones(3), np.ones(4)), ValueError, rf"^a \(3,\) and b \(4,\) {BROADCAST_RULE}"),
    (lambda: polyeng.mul(np.ones((2, 3)), np.ones((3, 2))), ValueError, rf"^a \(2, 3\) and b \(3, 2\) {BROADCAST_RULE}"),
    (lambda: polyeng.div(np.ones((0, 3)), np.ones((2, 1))), ValueError, rf"^a \(0, 3\) and b \(2, 1\) {BROADCAST_RULE}"),
    (lambda: polyeng.pow(np.ones(3), np.ones(4)), ValueError, rf"^x \(3,\) and exponent \(4,\) {BROADCAST_RULE}"),
    # integer inputs to the float-only ops
    (lambda: polyeng.sigmoid(np.ones(3, np.int32)), TypeError, r"^x has dtype int32; sigmoid expects a floating-point"),
    (lambda: polyeng.tanh(np.ones(3, np.uint8)), TypeError, r"^x has dtype uint8; tanh expects a floating-point"),
    (lambda: polyeng.exp([1, 2]), TypeError, r"^x has dtype int64; exp expects a floating-point"),
    (lambda: polyeng.sqrt(np.ones(3, np.int8)), TypeError, r"^x has dtype int8; sqrt expects a floating-point"),
    (lambda: polyeng.erf(np.ones(3, np.int64)), TypeError, r"^x has dtype int64; erf expects a floating-point"),
    (lambda: polyeng.mean(np.ones(3, np.int8)), TypeError, r"^x has dtype int8; mean expects a floating-point"),
    (lambda: polyeng.pow(np.ones(3, np.int32), 2.0), TypeError, r"^x has dtype int32; pow expects floating-point"),
    (lambda: polyeng.pow(np.ones(3), np.ones(3, np.int64)), TypeError, r"^exponent has dtype int64; pow expects"),
    # bool arithmetic
    (lambda: polyeng.add(np.ones(3, bool), np.ones(3, bool)), TypeError, rf"^a has dtype bool; add {NOT_BOOL}"),
    (lambda: polyeng.sub(np.ones(3), np.ones(3, bool)), TypeError, rf"^b has dtype bool; sub {NOT_BOOL}"),
    (lambda: polyeng.mul(np.True_, np.ones(3)), TypeError, rf"^a=np.True_; mul {NOT_BOOL}"),
    (lambda: polyeng.div(np.ones(3), True), TypeError, rf"^b=True; div {NOT_BOOL}"),
    (lambda: polyeng.pow(np.ones(3), False), TypeError, rf"^exponent=False; pow {NOT_BOOL}"),
    (lambda: polyeng.relu(np.ones(3, bool)), TypeError, r"^x has dtype bool; relu expects a floating-point or integer"),
    # ids: integer dtypes only, every id in range, named with its place
    (lambda: polyeng.embedding(np.array([1.0]), TABLE), TypeError, r"^ids has dtype float64; embedding expects int32 or int64"),
    (lambda: polyeng.embedding(np.array([1], np.int8), TABLE), TypeError, r"^ids has dtype int8; embedding expects"),
    (lambda: polyeng.embedding(np.array([True]), TABLE), TypeError, r"^ids has dtype bool; embedding expects"),
    (lambda: polyeng.embedding(np.array([[0, 5], [1, 2]]), TABLE), ValueError,
     r"^ids\[0, 1\]=5 is out of range for weight with 4 rows \(expected 0 <= id < 4; 1 of 4 ids are outside\)"),
    (lambda: polyeng.embedding(np.array([[0, 1], [-1, 9]], np.int32), TABLE), ValueError,
     r"^ids\[1, 0\]=-1 is out of range for weight with 4 rows \(expected 0 <= id < 4; 2 of 4 ids are outside\)"),
    (lambda: polyeng.embedding(np.array(4), TABLE), ValueError, r"^ids=4 is out of range for weight with 4 rows"),
    (lambda: polyeng.embedding(np.array([0]), np.ones((4, 3), np.int32)), TypeError,
     r"^weight has dtype int32; embedding expects a floating-point"),
    (lambda: polyeng.embedding(np.array([0]), np.ones(4)), ValueError, r"^weight has shape \(4,\) \(1-D\); embedding expects a 2-D"),
    # mean: axes in range, distinct, at least one; keepdims a bool
    (lambda: polyeng.mean(TABLE, 2), ValueError, r"^axis=2 is out of range for an array with 2 dimensions; expected -2 <= axis < 2"),
    (lambda: polyeng.mean(TABLE, -3), ValueError, r"^axis=-3 is out of range for an array with 2 dimensions"),
    (lambda: polyeng.mean(TABLE, (0, 5)), ValueError, r"^axis\[1\]=5 is out of range for an array with 2 dimensions"),
    (lambda: polyeng.mean(TABLE, (0, 0)), ValueError, r"^axis=\(0, 0\) names an axis twice"),
    (lambda: polyeng.mean(TABLE, (1, -1)), ValueError, r"^axis=\(1, -1\) names an axis twice"),
    (lambda: polyeng.mean(TABLE, ()), ValueError, r"^axis=\(\): give axis=None to average over every axis"),
    (lambda: polyeng.mean(TABLE, 1.0), TypeError, r"^axis=1.0: expected an int"),
    (lambda: polyeng.mean(TABLE, True), TypeError, r"^axis=True: expected an int"),
    (lambda: polyeng.mean(TABLE, 0, 1), TypeError, r"^keepdims=1: expected True or False"),
    (lambda: polyeng.mean(TABLE, 0, None), TypeError, r"^keepdims=None: expected True or False"),
    (lambda: polyeng.mean(TABLE, keepdims="yes"), TypeError, r"^keepdims='yes': expected True or False"),
    # weak scalars that do not fit, and values that are no numbers
    (lambda: polyeng.add(np.ones(2, np.int8), 1000), ValueError, r"^b=1000 does not fit the other operand's dtype int8"),
    (lambda: polyeng.sub(-1, np.ones(2, np.uint8)), ValueError, r"^a=-1 does not fit the other operand's dtype uint8"),
    (lambda: polyeng.add(np.ones(2), 1j), TypeError, r"^b=1j: polyeng has no complex dtype"),
    (lambda: polyeng.mul(np.ones(2), "a"), TypeError, r"^b='a': expected an array or array-like of numbers"),
])
def test_bad_arguments_of_the_elementwise_ops_mean_reshape_and_embedding(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.uses_ops("add", "mean", "reshape", "embedding")
def test_bad_arguments_are_refused_before_any_engine_runs(engine):
    x = np.ones((2, 3), FLOAT32)
    for call, error in [(lambda: polyeng.add(x, np.ones(2)), ValueError), (lambda: polyeng.mean(x, (1, 1)), ValueError),
                        (lambda: polyeng.reshape(x, (4, 2)), ValueError),
                        (lambda: polyeng.embedding(np.array([3]), x), ValueError),
                        (lambda: polyeng.embedding(np.array([0.0]), x), TypeError)]:
        with polyeng.compute_eng(engine, fallback=False), pytest.raises(error) as caught:
            call()
        assert not isinstance(caught.value, polyeng.EngineError)
