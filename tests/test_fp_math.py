"""The fp math mode lattice, per-op mixed precision rules, and engines under the mode."""
import threading

import numpy as np
import pytest

import polyeng
from polyeng.amp import Category
from polyeng.engine import dtypes as dt
from polyeng.engine.mixed_precision import conversion_override, register_mixed_precision_conversion, \
    unregister_mixed_precision_conversion
from polyeng.engine.fpmath import ALLOWED, allowed_compute, round_to_tf32

M = polyeng.FpMathMode
RNG = np.random.default_rng(5)
A = RNG.standard_normal((16, 40)).astype(np.float32)
B = RNG.standard_normal((40, 8)).astype(np.float32)


def test_lattice_table():
    assert ALLOWED == {M.STRICT: ("f32",), M.TF32: ("tf32", "f32"), M.BF16: ("bf16", "tf32", "f32"),
                       M.F16: ("f16", "tf32", "f32"), M.ANY: ("bf16", "f16", "tf32", "f32")}


@pytest.mark.parametrize("mode", list(M))
def test_which_compute_types_each_mode_allows(mode):
    allow, follow, deny = Category.ALLOW, Category.FOLLOW, Category.DENY
    assert allowed_compute(allow, dt.float32, mode) == ALLOWED[mode]
    for category in (follow, deny):
        assert allowed_compute(category, dt.float32, mode) == ("f32",)
    for category in (allow, follow, deny):
        assert allowed_compute(category, dt.float64, mode) == ("f64",)       # f64 untouched
        assert allowed_compute(category, dt.int32, mode) == ("s32",)         # integers untouched
        assert allowed_compute(category, dt.bool_, mode) == ("bool",)
        assert allowed_compute(category, dt.float16, mode) == ("f32",)       # 16-bit storage: f32 accumulation
        assert allowed_compute(category, dt.bfloat16, mode) == ("f32",)
    assert allowed_compute(allow, dt.float32, mode, exact=True) == ("f32",)


def test_mode_names_dtypes_and_invalid_values():
    assert polyeng.fp_math_mode("TF32").mode is M.TF32
    assert polyeng.fp_math_mode(polyeng.bfloat16).mode is M.BF16
    assert polyeng.fp_math_mode(np.float16).mode is M.F16
    assert polyeng.fp_math_mode(np.float32).mode is M.STRICT
    for bad in ("fp8", "", "bfloat"):
        with pytest.raises(ValueError, match="strict, bf16, f16, tf32, any"):
            polyeng.fp_math_mode(bad)
    for incompatible in (np.int8, np.float64):
        with pytest.raises(ValueError, match="not a compatible down-conversion type"):
            polyeng.fp_math_mode(incompatible)
    with pytest.raises(ValueError, match="expected one of strict"):
        polyeng.set_default_fp_math_mode("halfway")


@pytest.mark.parametrize("name,mode", [("bfloat16", M.BF16), ("float16", M.F16), ("Float32", M.STRICT),
                                       ("tf32", M.TF32), (polyeng.bfloat16, M.BF16), (np.float16, M.F16),
                                       (np.dtype(np.float32), M.STRICT)])
def test_modes_given_as_dtype_names_and_types(name, mode):
    assert polyeng.fp_math_mode(name).mode is mode
    polyeng.set_default_fp_math_mode(name)
    try:
        assert polyeng.get_fp_math_mode() is mode
    finally:
        polyeng.set_default_fp_math_mode("strict")


@pytest.mark.parametrize("bad", [None, 3.5, object(), True, [1]])
def test_values_that_are_no_mode_at_all_list_the_valid_ones(bad):
    for setter in (polyeng.fp_math_mode, polyeng.set_default_fp_math_mode):
        with pytest.raises(TypeError, match=r"is not an fp math mode; expected one of strict, bf16, f16, tf32, "
                                            r"any, or a float dtype or its name: float32 \(strict\), bfloat16"):
            setter(bad)
    assert polyeng.get_fp_math_mode() is M.STRICT


def test_dtype_names_that_are_no_down_conversion_type_list_the_valid_ones():
    for bad in ("float64", "int8", "bool"):
        with pytest.raises(ValueError, match=f"mode={bad} is not a compatible down-conversion type.*"
                                             "expected one of strict, bf16, f16, tf32, any"):
            polyeng.fp_math_mode(bad)


@pytest.mark.parametrize("mode,args,short,dtype", [
    ("strict", (A, B), "f32", np.float32), ("tf32", (A, B), "tf32", np.float32),
    ("bf16", (A, B), "bf16", polyeng.bfloat16), ("f16", (A, B), "f16", np.float16),
    ("any", (A.astype(np.float64), B), "f64", np.float64),
    ("bf16", ((A * 9).astype(np.int8), (B * 9).astype(np.int8)), "s8", np.int8)])
def test_decision_gives_the_compute_dtype_and_its_short_name(mode, args, short, dtype):
    with polyeng.fp_math_mode(mode):
        decision = polyeng.explain("matmul", *args)
    assert isinstance(decision.compute_dtype, np.dtype) and decision.compute_dtype == np.dtype(dtype)
    assert decision.compute_type == short


def test_default_mode_and_scopes_restore_on_exception():
    polyeng.set_default_fp_math_mode("tf32")
    try:
        assert polyeng.get_fp_math_mode() is M.TF32
        with pytest.raises(RuntimeError):
            with polyeng.fp_math_mode("bf16"):
                with polyeng.fp_math_mode("any"):
                    raise RuntimeError
        assert polyeng.get_fp_math_mode() is M.TF32
    finally:
        polyeng.set_default_fp_math_mode("strict")


def test_threads_have_their_own_mode():
    seen = {}
    barrier = threading.Barrier(2)

    def worker(mode):
        with polyeng.fp_math_mode(mode):
            barrier.wait()
            seen[mode] = polyeng.get_fp_math_mode().value
    threads = [threading.Thread(target=worker, args=(m,)) for m in ("bf16", "f16")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"bf16": "bf16", "f16": "f16"}


def _round(a, compute):
    if compute == "tf32":
        return round_to_tf32(a)
    if compute == "f32":
        return a
    return a.astype(dt.as_dtype(compute)).astype(np.float32)


@pytest.mark.parametrize("mode,compute", [("strict", "f32"), ("tf32", "tf32"), ("bf16", "bf16"),
                                          ("f16", "f16"), ("any", "bf16")])
def test_allow_ops_round_inputs_and_accumulate_in_f32(mode, compute, caplog):
    with polyeng.fp_math_mode(mode):
        decision = polyeng.explain("matmul", A, B)
        with polyeng.verbose(1), caplog.at_level("INFO", logger="polyeng"):
            out = polyeng.matmul(A, B)
    assert (decision.fp_math_mode, decision.compute_type) == (mode, compute)
    assert decision.compute_dtype == (np.float32 if compute == "tf32" else dt.as_dtype(compute))
    assert f"fpm:{mode},{compute}," in caplog.messages[-1]
    assert out.dtype == np.float32
    expected = (_round(A, compute).astype(np.float64) @ _round(B, compute).astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if compute != "f32":   # the rounding is real: results differ from strict f32
        assert not np.array_equal(out, A @ B)


def test_linear_and_lstm_follow_the_mode_too():
    w = RNG.standard_normal((8, 40)).astype(np.float32)
    with polyeng.fp_math_mode("bf16"), polyeng.compute_eng("basic", fallback=False):
        out = polyeng.linear(A, w)
        assert polyeng.explain("lstm", A[None], [(RNG.standard_normal((8, 40)).astype(np.float32),
                                                  RNG.standard_normal((8, 2)).astype(np.float32), None, None)]
                               ).compute_type == "bf16"
    np.testing.assert_allclose(out, _round(A, "bf16") @ _round(w, "bf16").T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bf16", "f16", "tf32", "any"])
def test_numba_computes_allow_ops_in_f32_under_every_mode(mode):
    """Rounding f32 inputs first would leave NUMBA's arithmetic f32 all the same (slower and less
    accurate, for nothing), and every mode allows f32: its ALLOW kernels give strict f32's bits."""
    if not any(e.name == "numba" and e.available for e in polyeng.engines()):
        pytest.skip("numba is unavailable")
    rng = np.random.default_rng(21)
    x, w = rng.standard_normal((6, 16)).astype(np.float32), rng.standard_normal((12, 16)).astype(np.float32)
    params = [(rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32),
               None, None)]
    calls = {"matmul": (x, w.T), "linear": (x, w), "lstm": (x[:, None], params)}
    for op, args in calls.items():
        with polyeng.compute_eng("numba", fallback=False):
            strict = getattr(polyeng, op)(*args)
            with polyeng.fp_math_mode(mode):
                decision = polyeng.explain(op, *args)
                hinted = getattr(polyeng, op)(*args)
        assert (decision.engine, decision.fp_math_mode, decision.compute_type) == ("numba", mode, "f32"), op
        for a, b in zip(np.asarray(strict if op != "lstm" else strict[0]).ravel(),
                        np.asarray(hinted if op != "lstm" else hinted[0]).ravel()):
            assert a.tobytes() == b.tobytes(), op
    with polyeng.compute_eng("numba", fallback=False), polyeng.fp_math_mode(mode):   # integer work: its own type
        assert polyeng.explain("matmul", (x * 9).astype(np.int8), (w.T * 9).astype(np.int8)).compute_type == "s8"


FOLLOW_CALLS = [
    ("concat", ([A, A],), {"axis": 1}), ("permute_contiguous", (A, (1, 0)), {}),
    ("select", (A > 0, A, np.float32(0)), {}), ("max_pool2d", (A[None, None], 3), {"stride": 2}),
    ("upsample_nearest", (A[None], ), {"scale_factor": 2}), ("avg_pool2d", (A[None, None], 2), {}),
    ("upsample_bilinear2d", (A[None, None],), {"scale_factor": 2}), ("gelu", (A,), {}),
    ("softmax", (A,), {}), ("log_softmax", (A,), {"axis": 0}), ("layer_norm", (A, 40), {}),
]


@pytest.mark.parametrize("op,args,kwargs", FOLLOW_CALLS, ids=[c[0] for c in FOLLOW_CALLS])
def test_follow_and_deny_ops_are_bit_exact_under_every_mode(op, args, kwargs):
    strict = getattr(polyeng, op)(*args, **kwargs)
    for mode in M:
        with polyeng.fp_math_mode(mode):
            assert polyeng.explain(op, *args, **kwargs).compute_type == "f32"
            np.testing.assert_array_equal(getattr(polyeng, op)(*args, **kwargs), strict)


def test_f64_and_integer_work_is_untouched():
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    ai, bi = (A * 10).astype(np.int32), (B * 10).astype(np.int32)
    with polyeng.fp_math_mode("any"):
        assert polyeng.explain("matmul", a64, b64).compute_type == "f64"
        np.testing.assert_array_equal(polyeng.matmul(a64, b64), a64 @ b64)
        np.testing.assert_array_equal(polyeng.matmul(ai, bi), ai @ bi)
        half = polyeng.matmul(A.astype(np.float16), B.astype(np.float16))
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, (A.astype(np.float16).astype(np.float32)
                                         @ B.astype(np.float16).astype(np.float32)).astype(np.float16))


def test_tf32_rounding():
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, -(1 + 3 * 2 ** -11),
                  np.inf, -np.inf, np.float32(3.4028235e38), 0.0, -0.0, 1e-40], np.float32)
    out = round_to_tf32(x)
    assert out[:4].tolist() == [1.0, 1 + 2 ** -9, 1 + 2 ** -10, -(1 + 2 ** -9)]
    assert out[4] == np.inf and out[5] == -np.inf and out[6] == np.inf   # max f32 rounds up to inf
    assert out[7] == 0 and np.signbit(out[8])
    assert out[9] == pytest.approx(1e-40, rel=2 ** -10)
    assert np.isnan(round_to_tf32(np.array([np.nan], np.float32))).all()
    bits = round_to_tf32(RNG.standard_normal(1000).astype(np.float32)).view(np.uint32)
    assert (bits & 0x1FFF == 0).all()


# -- mixed precision rules --------------------------------------------------------------------------
def allow_rule(call, mixed_dtype):
    return Category.ALLOW, "float32", mixed_dtype


def deny_rule(call, mixed_dtype):
    return 2, "float32", "float32"


def test_registered_rule_changes_the_category_and_highest_level_wins():
    with polyeng.fp_math_mode("bf16"):
        assert polyeng.explain("softmax", A).compute_type == "f32"
        register_mixed_precision_conversion("softmax", allow_rule, level=20)
        try:
            assert polyeng.explain("softmax", A).compute_type == "bf16"
            register_mixed_precision_conversion("softmax", deny_rule, level=5)   # lower level: no effect
            assert polyeng.explain("softmax", A).compute_type == "bf16"
            with conversion_override("softmax", deny_rule):                      # scoped: beats every level
                assert polyeng.explain("softmax", A).compute_type == "f32"
                with conversion_override("matmul", deny_rule):
                    assert polyeng.explain("matmul", A, B).compute_type == "f32"
                    assert polyeng.explain("softmax", A).compute_type == "f32"
                assert polyeng.explain("matmul", A, B).compute_type == "bf16"
            assert polyeng.explain("softmax", A).compute_type == "bf16"
            out = polyeng.softmax(A)
            np.testing.assert_allclose(out, polyeng.softmax(_round(A, "bf16")), rtol=1e-6)
        finally:
            unregister_mixed_precision_conversion("softmax", 20)
            unregister_mixed_precision_conversion("softmax", 5)
        assert polyeng.explain("softmax", A).compute_type == "f32"


def test_rule_decorator_and_errors():
    @register_mixed_precision_conversion("gelu", level=11)
    def gelu_rule(call, mixed_dtype):
        return "allow", "float32", mixed_dtype
    try:
        with polyeng.fp_math_mode("f16"):
            assert polyeng.explain("gelu", A).compute_type == "f16"
    finally:
        unregister_mixed_precision_conversion("gelu", 11)
    with pytest.raises(ValueError, match="op_name='conv3d' is not a polyeng op"):
        register_mixed_precision_conversion("conv3d", allow_rule)
    with pytest.raises(TypeError, match="level='high'"):
        register_mixed_precision_conversion("gelu", allow_rule, level="high")
    with pytest.raises(ValueError, match="no user rule"):
        unregister_mixed_precision_conversion("gelu", 0)
    with conversion_override("gelu", lambda call, m: ("sometimes", "float32", m)):
        with pytest.raises(ValueError, match="category 'sometimes'"):
            polyeng.gelu(A)
    with conversion_override("gelu", lambda call, m: (Category.ALLOW, "int8", m)):
        with pytest.raises(ValueError, match="accumulation dtype 'int8'"):
            polyeng.gelu(A)


# -- engines under the mode -------------------------------------------------------------------------
class TypedEngine:
    def __init__(self, name, compute_types):
        self.name, self.compute_types, self.seen = name, compute_types, []

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name)
        registry.add_kernel("matmul", self.name, self.matmul, compute_types=self.compute_types)

    def matmul(self, a, b):
        self.seen.append((a.dtype, bool((a.view(np.uint32) & 0xFFFF == 0).all())))
        return a @ b


@pytest.fixture
def typed(backends):
    return lambda name, types: backends(TypedEngine(name, types))


def test_engine_that_cannot_go_lower_computes_in_a_more_accurate_allowed_type(typed):
    engine = typed("f32only", ("f32",))
    with polyeng.compute_eng("f32only"), polyeng.fp_math_mode("bf16"):
        decision = polyeng.explain("matmul", A, B)
        out = polyeng.matmul(A, B)
    assert (decision.engine, decision.step, decision.compute_type) == ("f32only", "user", "f32")
    assert engine.seen == [(np.float32, False)]
    np.testing.assert_array_equal(out, A @ B)


def test_engine_that_only_computes_low_precision_is_rejected_under_strict(typed):
    engine = typed("bf16only", ("bf16",))
    with polyeng.compute_eng("bf16only"):
        decision = polyeng.explain("matmul", A, B)
        assert (decision.engine, decision.step) == ("basic", "special-argument")
        reason = {c.engine: c.reason for c in decision.candidates}["bf16only"]
        assert "computes matmul in bf16 only; fp math mode strict allows f32" in reason
        with polyeng.fp_math_mode("bf16"):
            assert polyeng.explain("matmul", A, B).engine == "bf16only"
            polyeng.matmul(A, B)
    assert engine.seen == [(np.float32, True)]   # inputs arrive rounded to bf16 (low 16 bits zero)
