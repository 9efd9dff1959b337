"""Each op's recommendation: NUMBA from its measured size threshold, BASIC below; matmul and
linear stay on BASIC below OpenBLAS's threaded sizes (ONEDNN from there, where it runs); without
NUMBA the preference list ends on BASIC."""
import numpy as np
import pytest

import polyeng
from polyeng.ops import OPS
from support import FakeEngine


def placeholder(*shape, dtype=np.float32):
    return np.broadcast_to(np.zeros((), dtype), shape)


@pytest.mark.parametrize("op", sorted(set(OPS) - {"matmul", "linear", "reshape"}))
def test_every_op_has_a_size_threshold(op):
    rule = OPS[op].recommend
    assert rule is not None and hasattr(rule, "min_elements")
    assert OPS[op].preference == ("numba",)


def test_small_calls_stay_on_basic_and_large_ones_go_to_numba():
    small, large = placeholder(3, 5), placeholder(64, 64, 64)
    assert polyeng.explain("select", small > 0, small, small).engine == "basic"
    assert polyeng.explain("select", large > 0, large, large).engine == "numba"
    threshold = OPS["softmax"].recommend.min_elements
    assert polyeng.explain("softmax", placeholder(threshold - 1)).engine == "basic"
    assert polyeng.explain("softmax", placeholder(threshold)).engine == "numba"


def test_matmul_and_linear_recommend_basic_below_threaded_blas_sizes():
    a = placeholder(128, 128)   # 2^21 multiply-adds
    b = placeholder(255, 128)   # 255 x 128 x 255: just below 2^23
    assert polyeng.explain("matmul", a, a).engine == "basic"
    assert polyeng.explain("linear", a, a).engine == "basic"
    assert polyeng.explain("linear", b, b).engine == "basic"


def test_large_f32_products_recommend_onednn_where_it_runs_them():
    """OpenBLAS would run them on its threads, which spin for ~0.1 s afterwards; oneDNN's sleep."""
    from polyeng.backends._blas_threads import SMALL_WORK
    onednn = {e.name: e for e in polyeng.engines()}["onednn"].available
    a = placeholder(256, 128)   # 256 x 128 x 256: exactly 2^23
    assert 256 * 128 * 256 == SMALL_WORK
    for op in ("matmul", "linear"):
        assert polyeng.explain(op, a, a.T if op == "matmul" else a).engine == ("onednn" if onednn else "basic")
    # vector-shaped products stay with BLAS (faster there), and so do batches of small products
    assert polyeng.explain("linear", placeholder(1, 8192), placeholder(2048, 8192)).engine == "basic"
    assert polyeng.explain("linear", placeholder(63, 4096), placeholder(2048, 4096)).engine == "basic"
    assert polyeng.explain("matmul", placeholder(1024, 8192), placeholder(8192)).engine == "basic"
    assert polyeng.explain("matmul", placeholder(1 << 23), placeholder(1 << 23)).engine == "basic"
    assert polyeng.explain("matmul", placeholder(64, 64, 64), placeholder(64, 64, 64)).engine == "basic"
    wide = placeholder(512, 512, dtype=np.float64)   # f64: oneDNN has no f64 product
    assert polyeng.explain("matmul", wide, wide).engine == "basic"
    ints = placeholder(512, 512, dtype=np.int32)
    assert polyeng.explain("matmul", ints, ints).engine == "basic"


def test_reshape_recommends_basic_at_every_size():
    # numpy's reshape is the whole of the work on the host: a view, or numpy's own copy
    for shape in [(3, 5), (64, 64, 64)]:
        assert polyeng.explain("reshape", placeholder(*shape), (-1,)).engine == "basic"


def test_a_rejecting_user_engine_leaves_the_recommendation_in_charge(backends):
    # an engine that rejects every call stands in front; the recommendation still decides
    reject = {"softmax": lambda call: "never"}
    backends(FakeEngine("never", ops=("softmax",), reject=reject))
    with polyeng.compute_eng("never"):
        decision = polyeng.explain("softmax", placeholder(64, 64))
    assert decision.engine == "numba" and decision.step == "special-argument"
    assert decision.plan == ["numba", "basic"]


def _recurrent_args(gates, steps, batch, inputs, hidden):
    """x and one layer's params of an lstm (4 gates) or gru (3) call, as placeholders."""
    rows = gates * hidden
    return placeholder(steps, batch, inputs), [(placeholder(rows, inputs), placeholder(rows, hidden),
                                                placeholder(rows), placeholder(rows))]


@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD", ""])
@pytest.mark.parametrize("own", [False, True], ids=["openblas-products", "own-products"])
def test_lstm_goes_to_onednn_from_the_crossover_measured_on_its_makers_cpu(monkeypatch, vendor, own):
    """f32 data: 2^16 elements on an Intel CPU, 2^17 elsewhere, but NUMBA at every size where its loop
    makes its own products (a CPU with AVX2 and no AVX-512, parts of whole 16-column blocks); other
    data: 2^16 on an Intel CPU, 2^21 elsewhere (``ops/lstm.py`` has the measurements)."""
    from polyeng.backends.numba import _small_gemm
    from polyeng.backends.onednn import _fpmath
    monkeypatch.setattr(_fpmath, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(_small_gemm, "wanted", lambda: own)
    onednn = {e.name: e for e in polyeng.engines()}["onednn"].available

    def engine(*shape, dtype=np.float32):
        x, params = _recurrent_args(4, *shape)
        if dtype != np.float32:
            x, params = x.astype(dtype), [tuple(a.astype(dtype) for a in params[0])]
        return polyeng.explain("lstm", x, params).engine
    large = "numba" if own or not onednn else "onednn"
    assert engine(64, 8, 64, 128) == large   # 2^17 elements and 1024 (biases)
    assert engine(16, 1, 16, 32) == "numba"   # 6,912 elements
    assert engine(256, 64, 256, 256) == large   # 2^22 and more
    assert engine(64, 8, 64, 100) == ("onednn" if onednn and vendor == "GenuineIntel" else "numba")   # 2^16.6
    assert engine(64, 8, 128, 200) == ("onednn" if onednn else "numba")   # 2^18.3: parts of 50 units
    sixteen_bit = "onednn" if onednn and vendor == "GenuineIntel" else "numba"
    assert engine(64, 8, 64, 128, dtype=polyeng.bfloat16) == sixteen_bit   # 2^17: 16-bit data from 2^21 elsewhere


@pytest.mark.parametrize("vendor, engine", [("GenuineIntel", "onednn"), ("AuthenticAMD", "numba"), ("", "numba")])
def test_gru_goes_to_onednn_from_2_16_elements_on_an_intel_cpu_only(monkeypatch, vendor, engine):
    """2^16 elements on an Intel CPU (``ops/gru.py`` has the measurements), NUMBA elsewhere."""
    from polyeng.backends.onednn import _fpmath
    monkeypatch.setattr(_fpmath, "cpu_vendor", lambda: vendor)
    onednn = {e.name: e for e in polyeng.engines()}["onednn"].available
    x, params = _recurrent_args(3, 64, 8, 64, 128)   # 2^16.7 elements
    assert polyeng.explain("gru", x, params).engine == (engine if onednn else "numba")
    x, params = _recurrent_args(3, 32, 8, 64, 64)    # 2^15.4
    assert polyeng.explain("gru", x, params).engine == "numba"
    x, params = _recurrent_args(3, 256, 64, 256, 256)   # 2^22 and more: NUMBA on other makers' CPUs still
    assert polyeng.explain("gru", x, params).engine == (engine if onednn else "numba")
