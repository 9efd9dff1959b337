"""pad (torch.nn.functional.pad): BASIC against known values, PyTorch and the argument rules; every
engine under test (see conftest) against BASIC bit for bit, over modes, dtypes, ranks, odd shapes,
negative pads, strided and zero-size inputs, rows long enough to split across tasks; graphs, dask
arrays and device tensors."""
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from support import BITS, assert_identical, assert_same_bits, run_on
from support import random_values as values

MODES = ["constant", "reflect", "replicate"]
DTYPES = [np.float16, dt.bfloat16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]
DTYPE_IDS = [np.dtype(d).name for d in DTYPES]
pytestmark = pytest.mark.uses_ops("pad")


def fill_for(dtype, mode):
    """A value every dtype holds (constant mode), 0 otherwise."""
    if mode != "constant":
        return 0.0
    return {np.dtype(np.bool_): True, np.dtype(np.uint8): 200, np.dtype(np.int8): -7}.get(np.dtype(dtype), -3)


def random_pads(rng, shape, k, mode):
    """``k`` (before, after) pairs for the last ``k`` dims of ``shape``, negative ones included,
    valid for ``mode``."""
    pads = []
    for i in range(k):
        n = shape[len(shape) - 1 - i]
        if mode == "reflect":
            before, after = (int(v) for v in rng.integers(-(n - 1), n, 2))
            if n + before + after < 1:
                before, after = abs(before), abs(after)
        else:
            before, after = (int(v) for v in rng.integers(-(n // 2), 4, 2))
            if mode == "replicate" and n + before + after < 1:
                before, after = abs(before), abs(after)
        pads += [before, after]
    return tuple(pads)


# -- known values on BASIC -------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_known_values():
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 4)               # [[1, 2, 3, 4]]
    assert polyeng.pad(x, (2, 1)).tolist() == [[0, 0, 1, 2, 3, 4, 0]]
    assert polyeng.pad(x, (2, 1), value=9).tolist() == [[9, 9, 1, 2, 3, 4, 9]]
    assert polyeng.pad(x, (2, 1), mode="reflect").tolist() == [[3, 2, 1, 2, 3, 4, 3]]
    assert polyeng.pad(x, (2, 1), mode="replicate").tolist() == [[1, 1, 1, 2, 3, 4, 4]]
    assert polyeng.pad(x, (-1, 2)).tolist() == [[2, 3, 4, 0, 0]]                       # a negative pad crops
    assert polyeng.pad(x, (-1, 2), mode="reflect").tolist() == [[2, 3, 4, 3, 2]]       # about the edge of x
    assert polyeng.pad(x, (-3, 1), mode="replicate").tolist() == [[4, 4]]
    assert polyeng.pad(x, (-4, 2)).tolist() == [[0, 0]]
    assert polyeng.pad(x, (0, 0, 1, 0), value=-1).tolist() == [[-1, -1, -1, -1], [1, 2, 3, 4]]
    y = np.arange(6).reshape(2, 3)
    assert polyeng.pad(y, (1, 1, 1, 1), mode="reflect").tolist() == [
        [4, 3, 4, 5, 4], [1, 0, 1, 2, 1], [4, 3, 4, 5, 4], [1, 0, 1, 2, 1]]
    assert polyeng.pad(y, (1, 0, 0, 1), mode="replicate").tolist() == [[0, 0, 1, 2], [3, 3, 4, 5], [3, 3, 4, 5]]
    z = np.array(5.0, np.float32)
    out = polyeng.pad(z, ())
    assert out.shape == () and out == 5 and not np.shares_memory(out, z)


@pytest.mark.usefixtures("on_basic")
def test_result_is_a_new_c_contiguous_array_of_x_dtype():
    x = np.arange(12, dtype=np.int8).reshape(3, 4)
    for mode in MODES:
        for pads in [(), (0, 0), (1, 2)]:
            out = polyeng.pad(x, pads, mode=mode)
            assert out.dtype == np.int8 and out.flags.c_contiguous and not np.shares_memory(out, x)


@pytest.mark.usefixtures("on_basic")
def test_value_is_cast_to_x_dtype():
    assert polyeng.pad(np.zeros(1, np.int32), (1, 0), value=2.0).tolist() == [2, 0]         # a whole float
    assert polyeng.pad(np.zeros(1, np.uint8), (1, 0), value=255).tolist() == [255, 0]
    assert polyeng.pad(np.zeros(1, np.int64), (1, 0), value=2 ** 63 - 1)[0] == 2 ** 63 - 1   # exactly
    assert polyeng.pad(np.zeros(1, bool), (1, 0), value=1).tolist() == [True, False]
    assert polyeng.pad(np.zeros(1, np.float32), (1, 0), value=True).tolist() == [1.0, 0.0]
    assert polyeng.pad(np.zeros(1, np.float16), (1, 0), value=np.float64(65504)).tolist() == [65504, 0]
    assert polyeng.pad(np.zeros(1, np.float32), (1, 0), value=np.array(-2.5))[0] == -2.5      # a 0-d array
    assert polyeng.pad(np.ones(1, np.float32), (1, 0), value=None).tolist() == [0.0, 1.0]     # as torch's None
    out = polyeng.pad(np.zeros(1, np.float16), (2, 0), value=float("-inf"))
    assert out[0] == -np.inf
    assert np.isnan(polyeng.pad(np.zeros(1, dt.bfloat16), (1, 0), value=float("nan"))[0].astype(np.float32))
    assert np.signbit(polyeng.pad(np.zeros(1, np.float64), (1, 0), value=-0.0)[0])
    for mode in ("reflect", "replicate"):   # 0 is what torch accepts with another mode, as no value at all
        assert polyeng.pad(np.ones((1, 2), np.int8), (1, 0), mode=mode, value=0).tolist() == [[1, 1, 1]]
        assert polyeng.pad(np.ones((1, 2), np.int8), (1, 0), mode=mode, value=None).tolist() == [[1, 1, 1]]


# -- PyTorch ---------------------------------------------------------------------------------------

def torch_pad(x, pads, mode, value):
    """``torch.nn.functional.pad`` of ``x``: bfloat16 through its bits, bool as uint8 for reflect and
    replicate (which torch does not implement for bool); reflect and replicate on the dims before the
    padded ones folded into one channel dim, torch's unbatched form for that many padded dims."""
    torch = pytest.importorskip("torch")
    dtype = np.dtype(x.dtype)
    x = np.ascontiguousarray(x)
    if dtype == dt.bfloat16:
        t = torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    elif dtype == np.bool_ and mode != "constant":
        t = torch.from_numpy(x.view(np.uint8).copy())
    else:
        t = torch.from_numpy(x.copy())
    k = len(pads) // 2
    lead = x.shape[:x.ndim - k]
    if mode != "constant":
        t = t.reshape((math.prod(lead),) + x.shape[x.ndim - k:])
    y = torch.nn.functional.pad(t, pads, mode=mode, value=value if mode == "constant" else None)
    if mode != "constant":
        y = y.reshape(lead + tuple(y.shape[1:]))
    if dtype == dt.bfloat16:
        return y.view(torch.int16).numpy().view(dt.bfloat16)
    if dtype == np.bool_:
        return y.numpy().view(np.bool_)
    return y.numpy()


TORCH_SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 5), (2, 2, 3, 2, 3), (1, 9, 1), (3, 2, 1, 4)]


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_matches_torch(mode, dtype):
    pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    value = fill_for(dtype, mode)
    checked = 0
    for shape in TORCH_SHAPES:
        x = values(rng, shape, dtype)
        for k in range(1, min(len(shape), 3) + 1):   # torch's reflect and replicate pad at most 3 dims
            if mode != "constant" and len(shape) == k:
                continue   # no dim left to fold the others into
            for _ in range(4):
                pads = random_pads(rng, shape, k, mode)
                want = torch_pad(x, pads, mode, value)
                assert_identical(polyeng.pad(x, pads, mode=mode, value=value), want)
                checked += 1
    assert checked > 40


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=["float32", "int64"])
def test_constant_mode_pads_every_dim_as_torch(dtype):
    rng = np.random.default_rng(12)
    for shape in [(4,), (2, 3), (2, 3, 4), (2, 1, 3, 2), (1, 2, 3, 2, 2)]:
        x = values(rng, shape, dtype)
        pads = random_pads(rng, shape, len(shape), "constant")
        assert_identical(polyeng.pad(x, pads, value=5), torch_pad(x, pads, "constant", 5))


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("mode,numpy_mode", [("reflect", "reflect"), ("replicate", "edge")])
def test_more_padded_dims_than_torch_takes_match_numpy(mode, numpy_mode):
    # torch's reflect and replicate stop at 3 padded dims and need a dim in front; numpy.pad's
    # reflect and edge are the same rules for non-negative pads
    x = values(np.random.default_rng(13), (3, 2, 4, 3, 5), np.float32)
    for pads in [(1, 2, 0, 1, 2, 2, 1, 0), (2, 1, 1, 1, 1, 3, 1, 1, 1, 2)]:
        widths = [(0, 0)] * x.ndim
        for i in range(len(pads) // 2):
            widths[-1 - i] = (pads[2 * i], pads[2 * i + 1])
        assert_identical(polyeng.pad(x, pads, mode=mode), np.pad(x, widths, mode=numpy_mode))
    v = np.arange(5, dtype=np.int32)   # a 1-D input, which torch's reflect refuses
    assert polyeng.pad(v, (2, 3), mode=mode).tolist() == np.pad(v, (2, 3), mode=numpy_mode).tolist()


@pytest.mark.usefixtures("on_basic")
def test_sixteen_bit_values_round_through_float32_as_torch():
    pytest.importorskip("torch")
    for dtype, v in [(np.float16, 1 + 2 ** -11 + 2 ** -40), (dt.bfloat16, 1 + 2 ** -8 + 2 ** -40),
                     (dt.bfloat16, 0.1), (np.float16, 1e-10), (np.float16, -65504.0)]:
        x = np.zeros((1, 2), dtype)
        assert_identical(polyeng.pad(x, (1, 1), value=v), torch_pad(x, (1, 1), "constant", v))


# -- zero-size inputs --------------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
def test_zero_size_inputs_follow_torch():
    torch = pytest.importorskip("torch")
    out = polyeng.pad(np.zeros((3, 0), np.float32), (1, 1), value=2)
    assert out.tolist() == [[2, 2]] * 3                                         # constant pads an empty dim
    assert out.tolist() == torch.nn.functional.pad(torch.zeros(3, 0), (1, 1), value=2).tolist()
    assert polyeng.pad(np.zeros((0, 3)), (1, 1)).shape == (0, 5)
    assert polyeng.pad(np.zeros((0, 3)), (1, 1, 2, 0)).tolist() == [[0.0] * 5] * 2
    for mode in ("reflect", "replicate"):
        assert polyeng.pad(np.zeros((0, 3, 3), np.int8), (1, 1), mode=mode).shape == (0, 3, 5)
        for shape, pads in [((2, 3, 0), (1, 1)), ((2, 3, 0), (0, 0)), ((2, 0, 3), (1, 1, 1, 1))]:
            with pytest.raises(ValueError, match=rf"pads=.*mode='{mode}' pads dim \d of x \(shape .*\), which is empty"):
                polyeng.pad(np.zeros(shape, np.float32), pads, mode=mode)
            with pytest.raises(RuntimeError):
                torch.nn.functional.pad(torch.zeros(shape), pads, mode=mode)


# -- bad arguments -----------------------------------------------------------------------------------

@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("kwargs,error,match", [
    ({"pads": 1}, TypeError, r"^pads=1: expected a tuple of ints"),
    ({"pads": "ab"}, TypeError, r"^pads='ab': expected a tuple of ints"),
    ({"pads": None}, TypeError, r"^pads=None"),
    ({"pads": (1.0, 1)}, TypeError, r"^pads=\(1\.0, 1\): pads\[0\]=1\.0 is not an int"),
    ({"pads": (True, 1)}, TypeError, r"pads\[0\]=True is not an int"),
    ({"pads": (1,)}, ValueError, r"^pads=\(1,\): has 1 values; expected an even number"),
    ({"pads": (1, 1, 1, 1, 1, 1)}, ValueError, r"^pads=\(1, 1, 1, 1, 1, 1\): pads 3 dims but x is 2-D"),
    ({"pads": (-4, -1)}, ValueError, r"^pads=\(-4, -1\): \(-4, -1\) crops 5 elements from dim 1 of x "
                                     r"\(shape \(3, 4\)\), which has 4"),
    ({"pads": (0, 0, 2, -6)}, ValueError, r"crops 6 elements from dim 0"),
    ({"pads": (4, 0), "mode": "reflect"}, ValueError, r"^pads=\(4, 0\): \(4, 0\) on dim 1 .*mode='reflect' takes "
                                                      r"pads less than the size of the dim they pad \(4\)"),
    ({"pads": (0, 0, 1, 3), "mode": "reflect"}, ValueError, r"\(1, 3\) on dim 0 .*less than .* \(3\)"),
    ({"pads": (-3, -1), "mode": "reflect"}, ValueError, r"leaves dim 1 of x \(shape \(3, 4\)\) with 0 elements; "
                                                       r"mode='reflect' must leave at least one"),
    ({"pads": (-5, 0), "mode": "replicate"}, ValueError, r"leaves dim 1 .* with -1 elements"),
    ({"pads": (1, 1), "mode": "circular"}, ValueError, r"^mode='circular': expected one of 'constant', "
                                                       r"'reflect', 'replicate'"),
    ({"pads": (1, 1), "mode": None}, ValueError, r"^mode=None"),
    ({"pads": (1, 1), "mode": "reflect", "value": 1.0}, ValueError,
     r"^value=1\.0: only mode='constant' takes a value; mode='reflect'"),
    ({"pads": (1, 1), "mode": "replicate", "value": float("nan")}, ValueError, r"^value=nan: only mode='constant'"),
    ({"pads": (1, 1), "value": "a"}, TypeError, r"^value='a': expected a number"),
    ({"pads": (1, 1), "value": 1j}, TypeError, r"^value=1j: expected a number"),
    ({"pads": (1, 1), "value": [1.0]}, TypeError, r"^value=\[1\.0\]: expected a number"),
])
def test_bad_arguments_name_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        polyeng.pad(np.ones((3, 4), np.float32), **kwargs)


@pytest.mark.usefixtures("on_basic")
@pytest.mark.parametrize("dtype,value,match", [
    (np.int32, 1.5, r"^value=1\.5 does not fit x's dtype int32 \(expected a whole number\)"),
    (np.int64, float("nan"), r"^value=nan does not fit x's dtype int64"),
    (np.int8, float("inf"), r"^value=inf does not fit x's dtype int8"),
    (np.uint8, 300, r"^value=300 does not fit x's dtype uint8 \(0 to 255\)"),
    (np.uint8, -1, r"^value=-1 does not fit x's dtype uint8"),
    (np.int8, 200, r"^value=200 does not fit x's dtype int8 \(-128 to 127\)"),
    (np.int64, 2 ** 63, r"^value=9223372036854775808 does not fit x's dtype int64"),
    (np.int64, 2.0 ** 63, r"does not fit x's dtype int64"),
    (np.bool_, 2, r"^value=2 does not fit x's dtype bool \(expected True, False, 0 or 1\)"),
    (np.bool_, 0.5, r"^value=0\.5 does not fit x's dtype bool"),
    (np.float16, 65505.0, r"^value=65505\.0 does not fit x's dtype float16 \(largest finite magnitude 65504\)"),
    (np.float16, 1e6, r"^value=1000000\.0 does not fit x's dtype float16"),
    (dt.bfloat16, 3.4e38, r"^value=3\.4e\+38 does not fit x's dtype bfloat16"),
    (np.float32, -1e39, r"^value=-1e\+39 does not fit x's dtype float32"),
    (np.float64, 10 ** 400, r"does not fit x's dtype float64"),
])
def test_a_value_that_does_not_fit_x_is_refused(dtype, value, match):
    with pytest.raises(ValueError, match=match):
        polyeng.pad(np.zeros((2, 2), dtype), (1, 1), value=value)


@pytest.mark.usefixtures("on_basic")
def test_bad_x_and_huge_outputs():
    with pytest.raises(TypeError, match="complex64"):
        polyeng.pad(np.ones(3, np.complex64), (1, 1))
    with pytest.raises(TypeError, match="^x"):
        polyeng.pad("abc", (1, 1))
    with pytest.raises(ValueError, match=r"^pads=\(0, 4611686018427387904\) on x of shape \(2,\): pad's output "
                                         r"would have shape"):
        polyeng.pad(np.ones(2, np.float32), (0, 2 ** 62))


@pytest.mark.usefixtures("on_basic")
def test_pads_may_be_a_list_range_or_integer_array():
    x = np.arange(4.0)
    want = polyeng.pad(x, (1, 2))
    for pads in ([1, 2], np.array([1, 2]), (np.int64(1), np.int32(2)), range(1, 3)):
        assert_identical(polyeng.pad(x, pads), want)


# -- every engine against BASIC ----------------------------------------------------------------------

SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 5), (2, 2, 3, 2, 3), (1, 37), (5, 1), (3, 17, 1, 2), (4, 2, 2, 9)]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_engine_matches_basic(engine, mode, dtype):
    rng = np.random.default_rng(21)
    value = fill_for(dtype, mode)
    for shape in SHAPES:
        x = values(rng, shape, dtype)
        for k in range(len(shape) + 1):
            pads = random_pads(rng, shape, k, mode)
            assert_same_bits(engine, "pad", x, pads, mode=mode, value=value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pads", [(0, 0, 1, 2), (0, 0, 0, 0, 2, 1), (1, 0, 0, 0, 0, 0, 0, 1), (0, 0), (0, 0, -1, 1),
                                  (3, 2, 0, 0, 0, 0, 1, 1)], ids=str)
def test_dims_after_the_last_padded_one_move_as_blocks(engine, mode, pads):
    # unpadded trailing dims move whole: blocks of 5 f16 (10 bytes, as 2-byte words), 4 f32 (two 8-byte
    # words), 8 int8 (one 8-byte word), 4 f64
    rng = np.random.default_rng(22)
    for dtype, shape in [(np.float16, (3, 4, 5, 5)), (np.float32, (2, 3, 5, 4)), (np.int8, (4, 3, 4, 8)),
                         (np.float64, (2, 3, 3, 4))]:
        assert_same_bits(engine, "pad", values(rng, shape, dtype), pads, mode=mode, value=fill_for(dtype, mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,pads", [(((1 << 17) + 19,), (7, 3)), ((3, 40003), (5, -7)),
                                        ((2, 300, 301), (2, 1, 1, 3)), ((64, 8, 33, 35), (1, 1, 2, 2)),
                                        ((4, 3, 3, 5000), (0, 0, 1, 2))], ids=str)
def test_large_inputs_split_across_tasks(engine, mode, shape, pads):
    # past NUMBA's one-thread size: rows longer than a task (split into blocks), and many short rows
    x = values(np.random.default_rng(23), shape, np.float32)
    assert_same_bits(engine, "pad", x, pads, mode=mode, value=fill_for(np.float32, mode))


LAYOUTS = {
    "transposed": lambda a: a.transpose(2, 0, 1),
    "negative-strides": lambda a: a[::-1, :, ::-2],
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),
    "sliced": lambda a: a[:, 1:, 1:4],
    "fortran": np.asfortranarray,
    "read-only": lambda a: np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float16, dt.bfloat16, np.float64, np.uint8, np.bool_],
                         ids=["float16", "bfloat16", "float64", "uint8", "bool"])
@pytest.mark.parametrize("mode", MODES)
def test_non_contiguous_and_read_only_inputs(engine, mode, dtype, layout):
    base = values(np.random.default_rng(24), (4, 5, 6), dtype)
    x = LAYOUTS[layout](base)
    kept = x.copy()
    for pads in [(1, 2), (2, 1, 0, 1), (-1, 1, 1, 1, 0, 2)]:
        got = run_on(engine, "pad", x, pads, mode=mode, value=fill_for(dtype, mode))
        assert not np.shares_memory(got, base)
        assert_identical(got, run_on("basic", "pad", np.ascontiguousarray(x), pads, mode=mode,
                                     value=fill_for(dtype, mode)))
    assert_identical(x, kept)   # the input is untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=["float32", "float16", "float64"])
def test_special_values_keep_their_bits(engine, dtype):
    # pad only moves elements: NaN payloads, signed zeros and infinities come out as they went in
    nan_bits = {2: [0x7E01, 0xFE02], 4: [0x7FC00001, 0xFF800002], 8: [0x7FF8000000000001, 0xFFF0000000000002]}
    size = np.dtype(dtype).itemsize
    special = np.array(nan_bits[size], BITS[size]).view(dtype)
    x = np.resize(np.concatenate([special, np.array([0.0, -0.0, np.inf, -np.inf, 1.5], dtype)]), (3, 7))
    for mode in MODES:
        for pads in [(2, 3), (3, 1, 2, 2)]:
            got = run_on(engine, "pad", x, pads, mode=mode)
            assert_identical(got, run_on("basic", "pad", x, pads, mode=mode))
    nan = run_on(engine, "pad", x, (1, 0), value=float("nan"))
    assert np.isnan(nan[:, 0]).all()


@pytest.mark.parametrize("mode", MODES)
def test_zero_size_inputs(engine, mode):
    cases = [((0,), (1, 2)), ((3, 0), (1, 1)), ((0, 3), (1, 1, 2, 0)), ((0, 2, 5), (1, 1)), ((2, 0, 4), (1, 2)),
             ((2, 3), (-2, -1))]
    for shape, pads in cases:
        x = np.zeros(shape, np.float32)
        try:
            want = run_on("basic", "pad", x, pads, mode=mode, value=fill_for(np.float32, mode))
        except ValueError:
            assert mode != "constant"
            with pytest.raises(ValueError, match="pads="):
                run_on(engine, "pad", x, pads, mode=mode)
            continue
        assert_identical(run_on(engine, "pad", x, pads, mode=mode, value=fill_for(np.float32, mode)), want)


def test_zero_d_input(engine):
    x = np.array(-3.5, np.float32)
    assert_identical(run_on(engine, "pad", x, ()), x)


# -- the op's catalogue entry, fp math, recommendation ------------------------------------------------

def test_pad_is_an_exact_follow_op_chunked_by_its_own_rule():
    from polyeng.amp import Category
    from polyeng.dask.ops import RULES
    from polyeng.ops import OPS
    spec = OPS["pad"]
    assert spec.exact and spec.category is Category.FOLLOW and spec.family == "pad"
    assert spec.chunking == "pad" and "pad" in RULES and polyeng.pad is spec.function


def test_sixteen_bit_inputs_are_not_converted_under_a_low_precision_mode():
    x = values(np.random.default_rng(30), (3, 9), np.float32)
    want = run_on("basic", "pad", x, (1, 2), mode="reflect")
    with polyeng.fp_math_mode("bf16"):
        assert_identical(polyeng.pad(x, (1, 2), mode="reflect"), want)
    h = values(np.random.default_rng(31), (3, 9), np.float16)
    with polyeng.fp_math_mode("bf16"):
        assert_identical(polyeng.pad(h, (1, 2), value=0.1), run_on("basic", "pad", h, (1, 2), value=0.1))


def test_recommendation_depends_on_size_and_mode():
    small, large = np.broadcast_to(np.float32(0), (8, 8)), np.broadcast_to(np.float32(0), (64, 64, 64, 16))
    assert polyeng.explain("pad", small, (1, 1)).engine == "basic"
    assert polyeng.explain("pad", large, (1, 1)).engine == "numba"
    middle = np.broadcast_to(np.float32(0), (16, 64, 64))   # 64K elements: numpy's fill wins, its gather loses
    assert polyeng.explain("pad", middle, (1, 1)).engine == "basic"
    assert polyeng.explain("pad", middle, (1, 1), mode="reflect").engine == "numba"


# -- graphs, dask and device tensors ---------------------------------------------------------------

def test_graph_of_pads():
    x = values(np.random.default_rng(40), (2, 3, 5), np.float32)

    def model(v):
        return polyeng.pad(polyeng.pad(v, (1, 1, 1, 1), mode="reflect"), (0, 2), value=1.5)
    graph = polyeng.graph.trace(model, x)
    assert [n.op for n in graph.nodes] == ["pad", "pad"]
    assert_identical(graph(x), model(x))
    y = values(np.random.default_rng(41), (4, 3, 5), np.float32)
    assert_identical(graph(y), model(y))   # a new batch size through the same graph


@pytest.mark.parametrize("mode", MODES)
def test_dask_arrays_stay_lazy_and_equal_the_eager_op(mode):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = values(np.random.default_rng(42), (6, 5, 7), np.float32)
    for pads in [(1, 2), (2, -1, 1, 3), (0, 0, 1, 1), (1, 1, 0, 0, 2, 1), ()]:
        lazy = polyeng.pad(da.from_array(x, chunks=(4, 2, 3)), pads, mode=mode, value=fill_for(np.float32, mode))
        want = polyeng.pad(x, pads, mode=mode, value=fill_for(np.float32, mode))
        assert isinstance(lazy, da.Array) and lazy.shape == want.shape and lazy.dtype == want.dtype
        for d in range(x.ndim):   # padded dims are one chunk, the others keep theirs
            padded = d >= x.ndim - len(pads) // 2 and any(pads[2 * (x.ndim - 1 - d):2 * (x.ndim - 1 - d) + 2])
            assert len(lazy.chunks[d]) == (1 if padded else len(da.from_array(x, chunks=(4, 2, 3)).chunks[d]))
        assert_identical(dask.compute(lazy, scheduler="sync")[0], want)


@pytest.mark.device_tensors
@pytest.mark.parametrize("dtype", [np.float64, dt.bfloat16, np.int8, np.bool_], ids=["float64", "bfloat16", "int8", "bool"])
def test_device_tensors_stay_on_their_engine(engine, dtype):
    x = values(np.random.default_rng(43), (2, 3, 5), dtype)
    t = polyeng.to_device(x, engine)
    value = fill_for(dtype, "constant")
    result = run_on(engine, "pad", run_on(engine, "pad", t, (1, 2, 1, 0), mode="reflect"), (2, 2), value=value)
    assert not isinstance(result, np.ndarray)   # the chain stayed on the device
    want = polyeng.pad(polyeng.pad(x, (1, 2, 1, 0), mode="reflect"), (2, 2), value=value)
    assert_identical(polyeng.to_numpy(result), want)
    empty = polyeng.to_device(np.zeros((2, 0), dtype), engine)
    assert_identical(polyeng.to_numpy(run_on(engine, "pad", empty, (1, 1), value=value)),
                     polyeng.pad(np.zeros((2, 0), dtype), (1, 1), value=value))


# -- ONNX Pad with negative pads, against onnxruntime ------------------------------------------------

def _crops():
    try:
        from onnx_cases import PAD_CROPS
    except ImportError:   # no onnx: the test below skips
        return []
    return PAD_CROPS


@pytest.mark.parametrize("case", _crops(), ids=lambda c: c.name)
def test_onnx_pad_crops_match_onnxruntime_on_every_engine(case):
    # the reference evaluator's numpy.pad refuses negative pads; onnxruntime crops, then pads
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import polyeng.onnx
    session = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    graph = polyeng.onnx.load(case.model)
    for engine in [e.name for e in polyeng.engines() if e.available and "pad" in e.ops]:
        for (x,) in case.calls:
            (want,) = session.run(None, {"x": x})
            with polyeng.compute_eng(engine, fallback=False):
                assert_identical(graph(x), want)


def test_onnx_reflect_pads_too_large_for_a_named_dim_are_a_value_error_at_run_time():
    pytest.importorskip("onnx")
    import polyeng.onnx
    from onnx_cases import pad_case
    graph = polyeng.onnx.load(pad_case("reflect_named", ["N", 6], [2, 0, 0, 0], mode="reflect").model)
    assert graph(np.ones((3, 6), np.float32)).shape == (5, 6)
    with pytest.raises(ValueError, match=r"pads=\(0, 0, 2, 0\): \(2, 0\) on dim 0 of x \(shape \(2, 6\)\); "
                                         r"mode='reflect' takes pads less than"):
        graph(np.ones((2, 6), np.float32))
