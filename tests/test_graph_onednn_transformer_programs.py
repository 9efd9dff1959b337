"""A transformer's nodes executed as one oneDNN program (``polyeng/backends/onednn/segment_plain.py``):
linear, matmul, layer_norm, softmax and fused_softmax, gelu, add and mul with broadcast and
constant operands, reshape, permute_contiguous, split and host views join the programs; their
results match the nodes run one by one; and what a program must not take (a mask holding -inf, a
row of equal values under a layer norm, values whose products may overflow, a shape that changed)
runs the nodes one by one."""
from __future__ import annotations

import numpy as np
import pytest

import polyeng
from polyeng.amp import to_mixed_precision
from polyeng.backends.onednn import _constants as C
from polyeng.backends.onednn._fpmath import cpu_flags
from polyeng.engine import dtypes as dt
from polyeng.graph import fuse, trace
from polyeng.graph.segments import MIN_NODES
from support import assert_identical, computes_bf16, onednn_computes_bf16, programs_taken

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available,
                                reason="onednn is unavailable")

RNG = np.random.default_rng(3)
B, S, D, H = 4, 12, 32, 2


def _w(*shape, scale=0.2):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


G, BETA = 1 + _w(D), _w(D)
W_QKV, B_QKV, W_O, B_O = _w(3 * D, D), _w(3 * D), _w(D, D), _w(D)
W_Q, W_K, W_V = _w(D, D), _w(D, D), _w(D, D)
W1, B1, W2, B2, W_HEAD = _w(64, D), _w(64), _w(D, 64), _w(D), _w(5, D)
SCALE = np.float32(0.25)
MIN = np.finfo(np.float32).min


def _block(x, q, k, v, mask):
    """Attention over heads (q, k, v of (batch, heads, seq, head dim)), its projection, the MLP."""
    s = polyeng.mul(polyeng.matmul(q, polyeng.permute_contiguous(k, (0, 1, 3, 2))), SCALE)
    o = polyeng.matmul(polyeng.fused_softmax(s, mask, axis=-1, nan_fill=0.0), v)
    o = polyeng.reshape(polyeng.permute_contiguous(o, (0, 2, 1, 3)), (-1, S, D))
    x = polyeng.add(x, polyeng.linear(o, W_O, B_O))
    h = polyeng.gelu(polyeng.linear(polyeng.layer_norm(x, (D,), G, BETA), W1, B1))
    return polyeng.add(x, polyeng.linear(h, W2, B2))


def vit_like(x, mask):
    """One fused qkv projection split into q, k and v (the batch moves to the second dim), and the
    class token's row (a strided view) through a head with a softmax."""
    h = polyeng.layer_norm(x, (D,), G, BETA)
    qkv = polyeng.reshape(polyeng.linear(h, W_QKV, B_QKV), (-1, S, 3, H, D // H))
    parts = polyeng.split(polyeng.permute_contiguous(qkv, (2, 0, 3, 1, 4)), 1, axis=0)
    q, k, v = (polyeng.reshape(t, (-1, H, S, D // H)) for t in parts)
    x = _block(x, q, k, v, mask)
    return polyeng.softmax(polyeng.linear(x[:, 0], W_HEAD), axis=-1), x


def bert_like(x, mask):
    """q, k and v from linears of their own, the batch first throughout."""
    h = polyeng.layer_norm(x, (D,), G, BETA)

    def heads(w):
        return polyeng.permute_contiguous(polyeng.reshape(polyeng.linear(h, w), (-1, S, H, D // H)), (0, 2, 1, 3))
    return _block(x, heads(W_Q), heads(W_K), heads(W_V), mask)


X = RNG.standard_normal((B, S, D)).astype(np.float32)


def _mask(value=MIN):
    m = np.zeros((B, 1, 1, S), np.float32)
    m[1:, ..., -3:] = value
    return m


def _tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _runs(fn, x, mask, planned_on=None):
    """(a planned run's results, whether a program took them, the results of the nodes one by one,
    the graph); the graph is traced and first run on ``planned_on`` (x, mask) when given."""
    first = planned_on or (x, mask)
    g = fuse(trace(fn, *first))
    g(*first)
    with programs_taken() as taken:
        got = _tuple(g(x, mask))
    want = _tuple(fuse(trace(fn, *first), disable="onednn_programs")(x, mask))
    return got, bool(taken) and all(taken), want, g


def close(got, want, tol=2e-5):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.max(np.abs(w))), 1e-30)
        assert float(np.max(np.abs(g.astype(np.float64) - w))) <= tol * scale


def same(got, want):
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def _planned_spans(program):
    """The programs a bf16 mixed precision graph is planned into: one of every node where oneDNN
    computes bf16; elsewhere (oneDNN 3.2 without AVX-512) each node computing a bf16 value (a
    product, an activation, a div or mul) runs as its node, ONEDNN turning it down, and every run
    of at least ``MIN_NODES`` nodes between them (f32 steps, casts, bf16 copies and views) is one
    program."""
    steps = program.steps
    if onednn_computes_bf16():
        return [(0, len(steps))]
    spans, first = [], 0
    for i in range(len(steps) + 1):
        if i == len(steps) or computes_bf16(steps[i]):
            if i - first >= MIN_NODES:
                spans.append((first, i))
            first = i + 1
    return spans


@pytest.mark.parametrize("fn", [vit_like, bert_like])
def test_an_encoder_runs_as_one_program_and_matches_the_nodes(fn):
    got, taken, want, g = _runs(fn, X, _mask())
    assert taken
    assert g._compiled().segment_spans == [(0, len(g._compiled().steps))]   # every node, the host view too
    close(got, want)


def test_a_gelu_after_a_linear_is_its_post_op():
    from polyeng.backends.onednn import segment
    _, taken, _, g = _runs(bert_like, X, _mask())
    entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
    program = entry.program.whole
    gelus = [s for s in g._compiled().steps if s.node.op == "gelu"]
    assert taken and len(gelus) == 1
    # the linear's result is the gelu's: no value of the linear of its own
    assert gelus[0].single in program.md
    assert g._compiled().steps[[s.node.op for s in g._compiled().steps].index("gelu") - 1].single not in program.md
    assert isinstance(program, segment.Program)


def _whole_program(g):
    """The oneDNN program of ``g``'s first plan (its first segment), as built for the whole batch."""
    return [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0] \
        .program.whole


def gpt2_like_mlp(x, mask, approximate="tanh", also_read=False, returned=None):
    """GPT-2's MLP: the first linear on rows, its result reshaped before the GELU; ``returned``
    ("view" or "gelu"): that value is an output too."""
    h = polyeng.reshape(polyeng.linear(polyeng.reshape(x, (-1, D)), W1, B1), (-1, S, 64))
    a = polyeng.gelu(h, approximate=approximate)
    y = polyeng.linear(polyeng.reshape(a, (-1, 64)), W2, B2)
    if returned:
        return y, {"view": h, "gelu": a}[returned]
    return (y, polyeng.mul(h, SCALE)) if also_read else y


@pytest.fixture(params=[False, True], ids=["fast_tanh", "tanh_gathers"])
def gathers(request, monkeypatch):
    """Both kinds of CPU: where oneDNN's tanh is fast (AVX-512), and where it gathers (AVX2), so
    that the tanh form of GELU is a logistic step of its own (``segment_plain.tanh_gathers``)."""
    from polyeng.backends.onednn import segment_plain
    monkeypatch.setattr(segment_plain, "tanh_gathers", lambda: request.param)
    return request.param


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_a_gelu_after_a_reshape_of_a_linear_is_its_post_op(approximate, gathers):
    fn = lambda x, mask: gpt2_like_mlp(x, mask, approximate)   # noqa: E731
    got, taken, want, g = _runs(fn, X, _mask())
    assert taken
    close(got, want)
    steps = g._compiled().steps
    program = _whole_program(g)
    gelu = next(s for s in steps if s.node.op == "gelu")
    view = steps[[s.node.op for s in steps].index("gelu") - 1]
    if approximate == "tanh" and gathers:   # x logistic(2u): one binary primitive of its own
        assert gelu.single not in program.alias and len(program.calls) == 3
        assert _logistic_gelus(program) == 1
        return
    assert program.alias[gelu.single] == view.single   # the GELU's value is the view's bytes
    assert len(program.calls) == 2   # the two linears, the GELU the first one's post-op


def _logistic_gelus(program) -> int:
    """The program's calls that are a binary x * x with the tanh GELU's five post-ops."""
    from polyeng.backends.onednn import _constants as C
    last = C.ARG_ATTR_MULTIPLE_POST_OP_BASE * 5 | C.ARG_SRC_1
    return sum(1 for _, args, _ in program.calls if last in args and C.ARG_SRC_1 in args)


def test_the_tanh_gelu_as_a_logistic_matches_the_nodes_at_every_magnitude(gathers):
    """x logistic(2u) against the nodes' 0.5 x (1 + tanh(u)) over 1e-30 to 1e30 of either sign and
    zero (x * x overflows from 1.9e19): within 2e-5 of the nodes' where their 1 + tanh(u) does not
    cancel (|x| < 3), of the function itself everywhere, and no NaN. The program runs it."""
    mags = np.concatenate([[0.0], np.geomspace(1e-30, 1e30, 191)]).astype(np.float32)
    x = np.concatenate([mags, -mags]).reshape(-1, D)   # 12 rows

    def fn(x):   # three nodes, so that they make a program (``MIN_NODES``)
        h = polyeng.gelu(polyeng.linear(x, np.eye(D, dtype=np.float32)), approximate="tanh")
        return polyeng.linear(h, np.eye(D, dtype=np.float32))
    g = fuse(trace(fn, x))
    g(x)
    with programs_taken() as taken:
        got = g(x)
    assert taken and all(taken)
    want = fuse(trace(fn, x), disable="onednn_programs")(x)
    assert not np.isnan(got).any()
    if gathers:   # the logistic has no cancellation: within 2e-5 of the function everywhere
        exact = x.astype(np.float64) / (1 + np.exp(-GELU_TANH * (x + 0.044715 * x.astype(np.float64) ** 3)))
        np.testing.assert_allclose(got, exact, rtol=2e-5, atol=1e-37)
    np.testing.assert_allclose(want[np.abs(x) < 3], got[np.abs(x) < 3], rtol=2e-5, atol=1e-37)


GELU_TANH = 2 * np.sqrt(2 / np.pi)


def test_a_tanh_gelu_whose_logistic_form_onednn_turns_down_is_its_eltwise(monkeypatch):
    """Where oneDNN has no binary with those post-ops for the storage (bf16 on an AVX2 CPU), the
    step is oneDNN's GELU (tanh form) as before: the program still builds and matches."""
    from polyeng.backends.onednn import segment_plain
    from polyeng.backends.onednn._lib import OneDNNError

    real = segment_plain.Primitive

    def refused(create, *args, **kwargs):   # oneDNN's answer to the binary x * x
        if create == "dnnl_binary_primitive_desc_create" and args[0] == C.BINARY_MUL:
            raise OneDNNError(create, C.UNIMPLEMENTED)
        return real(create, *args, **kwargs)
    monkeypatch.setattr(segment_plain, "tanh_gathers", lambda: True)
    monkeypatch.setattr(segment_plain, "Primitive", refused)
    fn = lambda x, mask: gpt2_like_mlp(x, mask, "tanh")   # noqa: E731
    got, taken, want, g = _runs(fn, X, _mask())
    assert taken
    close(got, want)
    program = _whole_program(g)
    assert len(program.calls) == 3 and _logistic_gelus(program) == 0


@pytest.mark.parametrize("returned, calls", [("gelu", 2), ("view", 3)])
def test_a_gelu_after_a_reshape_may_be_an_output_the_reshape_may_not(returned, calls):
    """The GELU's value is the view's bytes, so it may be returned; a returned view must keep the
    linear's own values: then the GELU is a primitive of its own."""
    fn = lambda x, mask: gpt2_like_mlp(x, mask, approximate="none", returned=returned)   # noqa: E731
    got, taken, want, g = _runs(fn, X, _mask())
    assert taken
    close(got, want)
    program = _whole_program(g)
    assert len(program.calls) == calls


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_a_reshaped_linear_read_by_another_node_keeps_its_gelu_a_step(approximate, gathers):
    fn = lambda x, mask: gpt2_like_mlp(x, mask, approximate, also_read=True)   # noqa: E731
    got, taken, want, g = _runs(fn, X, _mask())
    assert taken
    close(got, want)
    program = _whole_program(g)
    assert len(program.calls) == 4   # the linears, the GELU's own primitive and the mul


def test_the_batch_first_encoder_runs_in_lanes_and_the_moved_batch_in_one(monkeypatch):
    from polyeng.backends.onednn import lanes
    monkeypatch.setattr(lanes, "threads_now", lambda: 2)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 2)
    monkeypatch.setattr(lanes, "available_cores", lambda: 2)
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))   # the lanes where they build
    for fn, count in ((bert_like, 2), (vit_like, 1)):
        got, taken, want, g = _runs(fn, X, _mask())
        entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
        assert taken and len(entry.program._lanes[2]) == count, fn.__name__
        close(got, want)


@pytest.fixture(params=["compiled", "numpy"])
def scans(request, monkeypatch):
    """The guards' scans in compiled code (numba loaded, as ``compiled()`` loads it), or numpy's."""
    from polyeng.backends.onednn import _scans
    from polyeng.backends.onednn.segment import Program
    if request.param == "numpy":
        monkeypatch.setattr(Program, "_scans_compiled", lambda self: False)
    else:
        assert _scans.compiled() is not None, _scans._failed
    return request.param


@pytest.fixture(params=[False, True], ids=["mask_post_op", "products_by_gemm"])
def by_gemm(request, monkeypatch):
    """Both kinds of CPU: where a softmax's mask is the post-op of the scores' product, and where
    the product is gemm-based and the softmax's step adds it (``segment_plain.products_by_gemm``)."""
    from polyeng.backends.onednn import segment_plain
    monkeypatch.setattr(segment_plain, "products_by_gemm", lambda: request.param)
    return request.param


def test_masks_with_masked_places_run_in_the_program_and_a_row_masked_whole_does_not(scans, by_gemm):
    for value in (MIN, -np.inf):   # the lowest number, or -inf, in some places of each row
        got, taken, want, g = _runs(bert_like, X, _mask(value), planned_on=(X, _mask()))
        assert taken
        close(got, want)
        program = _whole_program(g)
        adds = [args for _, args, _ in program.calls if C.ARG_SRC_1 in args and len(args) == 3]
        assert (len(program.masked), len(adds)) == ((0, 1) if by_gemm else (1, 0))   # a binary add of its own
    m = _mask(-np.inf)
    m[0, ..., :] = -np.inf   # a row masked whole: NaN, which nan_fill makes 0
    got, taken, want, _ = _runs(bert_like, X, m, planned_on=(X, _mask()))
    assert not taken
    same(got, want)
    for bad in (np.nan, np.inf):
        m = _mask()
        m[2, 0, 0, 4] = bad
        got, taken, want, _ = _runs(bert_like, X, m, planned_on=(X, _mask()))
        assert not taken
        same(got, want)


def test_a_row_of_equal_values_under_a_layer_norm_runs_node_by_node(scans):
    x = X.copy()
    x[1, 5, :] = 2.5   # its normalised row is exactly the bias on every engine
    got, taken, want, _ = _runs(bert_like, x, _mask(), planned_on=(X, _mask()))
    assert not taken
    same(got, want)


def scores(x, mask):
    """Products of two values, whose bound is the bounds' product times the inner dim."""
    s = polyeng.matmul(polyeng.mul(x, SCALE), polyeng.permute_contiguous(x, (0, 2, 1)))
    return polyeng.gelu(polyeng.add(s, polyeng.reshape(mask, (B, 1, S))))


@pytest.mark.parametrize("fn", [vit_like, scores])
def test_values_that_may_overflow_run_node_by_node(fn, scans):
    got, taken, want, _ = _runs(fn, X, _mask())
    assert taken
    close(got, want)
    got, taken, want, _ = _runs(fn, X * np.float32(1e18), _mask(), planned_on=(X, _mask()))
    assert not taken
    same(got, want)


def test_a_view_whose_shape_argument_changed_runs_node_by_node():
    from polyeng.graph.segments import Segment

    class Never:
        def run(self, arrays):
            raise AssertionError("the program ran")
    shape = np.array([4, 8], np.int64)
    segment = Segment(Never(), 0, 2, [0], [1], [((4, 8), np.dtype(np.float32))], None,
                      checks=[(2, ("<i8", (2,), shape.tobytes()))])
    env = [np.zeros((4, 8), np.float32), None, np.array([8, 4], np.int64)]
    assert segment.run(env) is False


def test_the_bf16_mixed_precision_encoder_stays_within_one_percent():
    g = to_mixed_precision(fuse(trace(bert_like, X, _mask())), "bfloat16")
    g(X, _mask())
    got = _tuple(g(X, _mask()))
    want = _tuple(bert_like(X, _mask()))
    for a, b in zip(got, want):
        assert float(np.max(np.abs(a.astype(np.float32) - b))) <= 0.01 * float(np.max(np.abs(b)))


@pytest.mark.parametrize("fn", [vit_like, bert_like])
def test_a_bf16_mixed_precision_encoder_runs_as_one_program_casts_and_all(fn, scalar_casts_held):
    """The mixed precision pass's casts between f32 and bf16 (around the softmax, before each
    residual add) stay in the program, which matches the same graph's nodes one by one. Where
    oneDNN computes no bf16 the bf16 products and activations run as nodes, and the programs
    between them hold the casts."""
    mask = _mask()
    g = to_mixed_precision(fuse(trace(fn, X, mask)), "bfloat16")
    g(X, mask)
    with programs_taken() as taken:
        got = _tuple(g(X, mask))
    program = g._compiled()
    assert taken and all(taken)   # the whole program, or its lanes
    assert program.segment_spans == _planned_spans(program), program.segment_spans
    held = {i for a, b in program.segment_spans for i in range(a, b)}
    assert sum(step.node.op == "cast" for i, step in enumerate(program.steps) if i in held) >= 4
    want = _tuple(to_mixed_precision(fuse(trace(fn, X, mask), disable="onednn_programs"), "bfloat16")(X, mask))
    close([a.astype(np.float32) for a in got], [b.astype(np.float32) for b in want], 1e-2)


W_SEQ, W_FEATURES = _w(5, S), _w(3, D)


def moved_and_normed(x):
    """Under the mixed precision pass: a permutation (a buffer of the program) and the input itself
    cast to bf16 for the linears, whose results are cast back for a softmax and the output."""
    y = polyeng.linear(polyeng.permute_contiguous(x, (0, 2, 1)), W_SEQ)
    return polyeng.softmax(y, axis=-1), polyeng.linear(x, W_FEATURES)


@pytest.mark.parametrize("scale, taken", [(1.0, True), (1e-39, False)])
def test_a_cast_to_bf16_of_a_subnormal_runs_node_by_node(scale, taken, scalar_casts_held):
    """oneDNN's f32 -> bf16 flushes subnormals to zero, cast rounds them: a program's casts scan
    their f32 sources (a buffer of the program, an input) after the run, and a subnormal in one
    leaves the run to the nodes."""
    x = (RNG.standard_normal((B, S, D)) * scale).astype(np.float32)
    g = to_mixed_precision(fuse(trace(moved_and_normed, x)), "bfloat16")
    g(x)
    with programs_taken() as ran:
        got = g(x)
    program = g._compiled()
    assert program.segment_spans == _planned_spans(program) and set(ran) == {taken}   # lanes too
    # its casts: all four, or (oneDNN computing no bf16, the linears the nodes') two: the first
    # linear's result to f32 for the softmax, and the input to bf16 for the second linear
    casts = [i for i, step in enumerate(program.steps) if step.node.op == "cast"]
    assert len(casts) == 4 and sum(a <= i < b for a, b in program.segment_spans for i in casts) >= 2
    want = to_mixed_precision(fuse(trace(moved_and_normed, x), disable="onednn_programs"), "bfloat16")(x)
    if taken:
        close(got, want, 1e-2)
    else:
        same(got, want)
        assert np.count_nonzero(got[1]) > 0


def cast_round_trip(x):
    """A value cast to bf16 and back between f32 steps (a program's casts, its adds)."""
    a = polyeng.add(x, x)
    y = polyeng.cast(polyeng.cast(a, dt.bfloat16), np.float32)
    return polyeng.add(polyeng.add(y, a), a)


def test_a_cast_to_bf16_and_back_in_a_program_keeps_negative_zeros(scalar_casts_held):
    """oneDNN's reorders between f32 and bf16 make +0.0 of -0.0 on a CPU without AVX-512
    (``simple:any``): there a run whose cast source holds -0.0 is the nodes'; one without runs."""
    clean = RNG.standard_normal((B, S, D)).astype(np.float32)
    signed = clean.copy()
    signed.reshape(-1)[::5] = -0.0
    g = fuse(trace(cast_round_trip, clean))
    g(clean)
    nodes = fuse(trace(cast_round_trip, clean), disable="onednn_programs")
    for x in (clean, signed):
        with programs_taken() as ran:
            got = g(x)
        assert g._compiled().segment_spans == [(0, len(g._compiled().steps))] and ran
        assert_identical(got, nodes(x))
        if x is clean:
            assert all(ran)
    assert np.count_nonzero(np.signbit(got) & (got == 0)) > 0


def _scalar_cast(shape) -> bool:
    """Whether oneDNN converts a plain f32 value of ``shape`` to bf16 in its scalar code here."""
    from polyeng.backends.onednn._primitive import desc, reorder, scalar_conversion
    bf16 = np.dtype(dt.bfloat16)
    return scalar_conversion(reorder(desc(shape, np.float32), desc(shape, bf16)), np.float32, bf16)


@pytest.mark.parametrize("forced", [False, True], ids=["this-cpu", "scalar-code"])
@pytest.mark.parametrize("shape", [(2, 4, 8), (B, S, D)], ids=["64-elements", "1536-elements"])
def test_a_large_cast_in_onednns_scalar_code_is_left_to_the_nodes(monkeypatch, shape, forced):
    """oneDNN's scalar conversions (``simple:any`` without AVX-512) cost about 100 ns an element: a
    program holds such a cast of at most ``SCALAR_CAST`` elements and ends before a larger one,
    whose nodes give the same bits (``forced``: every conversion taken for scalar code, as on a
    CPU without AVX-512, whatever this one is)."""
    from polyeng.backends.onednn import segment
    if forced:
        monkeypatch.setattr(segment, "scalar_conversion", lambda step, source, target: True)
    x = RNG.standard_normal(shape).astype(np.float32)
    g = fuse(trace(cast_round_trip, x))
    g(x)
    got = g(x)
    program = g._compiled()
    casts = {i for i, step in enumerate(program.steps) if step.node.op == "cast"}
    held = {i for a, b in program.segment_spans for i in range(a, b)}
    assert len(casts) == 2
    if (forced or _scalar_cast(shape)) and x.size > segment.SCALAR_CAST:
        assert not casts & held, program.segment_spans
    else:
        assert casts <= held, program.segment_spans
    assert_identical(got, fuse(trace(cast_round_trip, x), disable="onednn_programs")(x))


def test_a_program_s_bf16_copies_keep_negative_zeros():
    """A program's bf16 permutations, reshapes, concats and outputs copy bytes (oneDNN's bf16
    reorder and concat on a CPU without AVX-512 compute v * 1 + 0, +0.0 for -0.0)."""
    from polyeng.backends.onednn import segment
    bf16 = np.dtype(dt.bfloat16)
    x = RNG.standard_normal((2, 3, 5)).astype(bf16)
    x.reshape(-1)[::3] = -0.0
    steps = [segment.Step("permute_contiguous", {"x": "x"}, {"dims": (0, 2, 1)}, "y", (2, 5, 3), None, bf16),
             segment.Step("reshape", {"x": "y"}, {}, "r", (10, 3), None, bf16),
             segment.Step("concat", {"tensors": ["r", "r"]}, {"axis": 0}, "c", (20, 3), None, bf16)]
    y, c = segment.Program(steps, ["x"], ["y", "c"], {}, {"x": x.shape}, "f32", {"x": bf16}).run([x])
    moved = np.ascontiguousarray(x.transpose(0, 2, 1))
    assert_identical(y, moved)
    assert_identical(c, np.concatenate([moved.reshape(10, 3)] * 2))


def head_of(x):
    """Only a cast (the mixed precision pass's) reads the input, or a view at its start."""
    return polyeng.softmax(polyeng.linear(polyeng.gelu(polyeng.linear(x, W1[:16])), W_HEAD[:, :16]), axis=-1)


@pytest.mark.parametrize("view, where, taken", [(False, -1, False), (True, -1, True), (True, 0, False)],
                         ids=["last-item", "outside-the-view", "inside-the-view"])
def test_one_subnormal_in_an_input_cast_to_bf16_is_found_where_the_program_reads_it(view, where, taken):
    x = RNG.standard_normal((B, S, D)).astype(np.float32)
    x.reshape(-1)[where] = np.float32(1e-39)

    def fn(x):
        return head_of(x[:2] if view else x)
    g = to_mixed_precision(fuse(trace(fn, x)), "bfloat16")
    g(x)
    with programs_taken() as ran:
        got = g(x)
    program = g._compiled()
    assert program.segment_spans == _planned_spans(program)
    if program.segment_spans:
        assert all(ran) if taken else (False in ran)   # in lanes, the lane holding it declines: the nodes run
    else:   # oneDNN computes no bf16: the casts are the nodes', as every other node
        assert not ran
        taken = False
    want = to_mixed_precision(fuse(trace(fn, x), disable="onednn_programs"), "bfloat16")(x)
    if taken:
        close([got.astype(np.float32)], [want.astype(np.float32)], 1e-2)
    else:
        same([got.view(np.uint16)], [want.view(np.uint16)])


def test_a_row_of_equal_values_in_a_view_of_an_input_runs_node_by_node():
    """A layer norm of the input's first images: the row check reads those images' rows."""
    x = RNG.standard_normal((B, S, D)).astype(np.float32)
    x[1, 5, :] = np.float32(2.5)

    def fn(x):
        return polyeng.gelu(polyeng.linear(polyeng.layer_norm(x[:2], (D,), G, BETA), W1))
    got, taken, want, _ = _runs(lambda x, m: fn(x), x, None)
    assert not taken
    same(got, want)


def filled_scores(x, keep, fill, swap=False, expose=False):
    """An attention's scores, scaled by a div, whose masked places a select sets to ``fill``
    (``swap``: ``keep`` holds the places to fill, select(keep, fill, scores)), then a softmax and
    the products after it;
    ``expose``: the filled scores are an output of the graph too."""
    s = polyeng.div(polyeng.matmul(polyeng.linear(x, W_Q), polyeng.permute_contiguous(x, (0, 2, 1))),
                    np.float32(5.65))
    filled = polyeng.select(keep, fill, s) if swap else polyeng.select(keep, s, fill)
    out = polyeng.linear(polyeng.matmul(polyeng.softmax(filled, axis=-1), x), W_O)
    return (out, filled) if expose else out


KEEP = np.ones((B, 1, S), bool)
KEEP[1:, :, -3:] = False


def _segments_run(monkeypatch):
    """Within the test, each planned segment's run: True where its program took the values."""
    from polyeng.graph import segments
    ran, real = [], segments.Segment.run
    monkeypatch.setattr(segments.Segment, "run", lambda self, env: ran.append(real(self, env)) or ran[-1])
    return ran


@pytest.mark.parametrize("swap", [False, True], ids=["keep-then", "fill-then"])
def test_an_attention_s_div_and_select_run_in_the_program(swap, monkeypatch):
    """The div by the head size's root becomes the product's post-op, and the select of the scores
    or float32's lowest number two binary steps: the whole graph is one program."""
    def fn(x, k):
        return filled_scores(x, k, MIN, swap)
    keep = ~KEEP if swap else KEEP
    g = fuse(trace(fn, X, keep))
    g(X, keep)
    ran = _segments_run(monkeypatch)
    got = g(X, keep)
    assert g._compiled().segment_spans == [(0, len(g._compiled().steps))] and ran == [True]
    want = fuse(trace(fn, X, keep), disable="onednn_programs")(X, keep)
    close([got], [want])
    close([got], [filled_scores(X, KEEP, MIN)])


@pytest.mark.parametrize("op, c, taken", [("div", 8.0, True), ("div", 1e37, False), ("mul", 1e-30, True),
                                          ("mul", 1e-37, False)])
def test_a_bf16_div_whose_quotients_may_be_subnormal_runs_node_by_node(op, c, taken):
    """oneDNN stores a bf16 quotient or product below bf16's smallest normal as 0, where the nodes
    keep it: the program scans the source of a div or mul by a constant (a buffer of the program,
    or its input; the constant first or second) for magnitudes that may make one and leaves such
    a run to the nodes."""
    def fn(x):
        h = polyeng.gelu(polyeng.linear(x, W_Q))
        d = polyeng.div(h, np.float32(c)) if op == "div" else polyeng.mul(np.float32(c), h)
        return d, polyeng.linear(d, W_O)
    g = to_mixed_precision(fuse(trace(fn, X)), "bfloat16")
    g(X)
    with programs_taken() as ran:
        got = g(X)
    program = g._compiled()
    assert program.segment_spans == _planned_spans(program)
    if program.segment_spans:
        assert all(ran) if taken else False in ran
    else:   # oneDNN computes no bf16: the div or mul is the node's, as every other node
        assert not ran
        taken = False
    want = to_mixed_precision(fuse(trace(fn, X), disable="onednn_programs"), "bfloat16")(X)
    if taken:
        close([a.astype(np.float32) for a in got], [b.astype(np.float32) for b in want], 1e-2)
    else:
        same([a.view(np.uint16) for a in got], [b.view(np.uint16) for b in want])


@pytest.mark.parametrize("keep", [KEEP, KEEP[:1]], ids=["per-image", "shared"])
def test_an_attention_s_select_runs_in_lanes(keep, monkeypatch):
    """Each lane reads its images' rows of the condition, or all of a condition of first dim 1."""
    from polyeng.backends.onednn import lanes
    monkeypatch.setattr(lanes, "threads_now", lambda: 2)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 2)
    monkeypatch.setattr(lanes, "available_cores", lambda: 2)
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))   # the lanes where they build

    def fn(x, k):
        return filled_scores(x, k, MIN)
    got, taken, want, g = _runs(fn, X, keep)
    entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
    assert taken and len(entry.program._lanes[2]) == 2
    close(got, want)


def test_a_condition_of_other_bytes_than_0_and_1_runs_node_by_node(monkeypatch):
    """numpy takes any nonzero byte of a bool array as True; the program reads the bytes as 0 and 1."""
    def fn(x, k):
        return filled_scores(x, k, MIN)
    keep = KEEP.view(np.uint8) * np.uint8(2)   # True is 2 here
    keep = keep.view(bool)
    g = fuse(trace(fn, X, KEEP))
    g(X, KEEP)
    ran = _segments_run(monkeypatch)
    got = g(X, keep)
    assert ran == [False]
    same([got], [fuse(trace(fn, X, KEEP), disable="onednn_programs")(X, keep)])


@pytest.mark.parametrize("fill, expose, taken", [(MIN, True, True), (-np.inf, False, False), (np.nan, False, False)],
                         ids=["lowest-exposed", "-inf", "nan"])
def test_a_softmax_takes_scores_filled_with_the_lowest_number(fill, expose, taken, monkeypatch):
    """A select the program does not hold (its result is an output too, or its fill is not
    finite) ends the program; the softmax after it may read any finite values from outside (the
    softmax subtracts each row's largest: an overflow to -inf there gives the nodes' 0), and an
    infinity or a NaN there leaves the run to the nodes."""
    fill = np.float32(fill)

    def fn(x, k):
        return filled_scores(x, k, fill, expose=expose)
    g = fuse(trace(fn, X, KEEP))
    g(X, KEEP)
    ran = _segments_run(monkeypatch)
    got = _tuple(g(X, KEEP))
    program = g._compiled()
    assert len(program.segment_spans) == 2 and program.segment_spans[1][1] == len(program.steps)
    assert program.steps[program.segment_spans[0][1]].node.op == "select"
    assert ran == [True, taken]   # the program after the select
    want = _tuple(fuse(trace(fn, X, KEEP), disable="onednn_programs")(X, KEEP))
    if taken:
        close(got, want)
    elif "avx512f" in cpu_flags():   # the nodes from the select on, on scores with BLAS's bits
        same(got, want)
    else:   # the nodes from the select on: NaN just where they give NaN. Before it the first program
        # made the scores, its products summed in oneDNN's order, which on an AVX2 CPU is not
        # OpenBLAS's (its Haswell kernels sum otherwise), so the rest is the nodes' within rounding
        for a, b in zip(got, want):
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        close([np.nan_to_num(a) for a in got], [np.nan_to_num(b) for b in want])


@pytest.mark.parametrize("divisor, held", [(np.float32(0.5), True), (np.full(S, 0.25, np.float32), True),
                                           (np.float32(0.0), False), (np.array([0.5, 0.0] * (S // 2), np.float32), False)],
                         ids=["scalar", "row", "zero", "row-with-zero"])
def test_a_div_by_a_constant_runs_in_the_program_unless_it_holds_zero(divisor, held):
    """A quotient is correctly rounded on every engine; a zero divisor (an infinity or NaN) is the
    nodes'."""
    def fn(x):
        s = polyeng.matmul(polyeng.linear(x, W_Q), polyeng.permute_contiguous(x, (0, 2, 1)))
        return polyeng.linear(polyeng.div(polyeng.gelu(s), divisor), W_HEAD[:, :S])
    got, taken, want, g = _runs(lambda x, m: fn(x), X, None)
    spans = g._compiled().segment_spans
    assert (spans == [(0, len(g._compiled().steps))]) is held
    if held:
        assert taken
        close(got, want)
    else:   # infinities from the zero divisor: the program after the div leaves them to the nodes
        same(got, want)


def test_a_lane_never_reads_a_constant_with_the_batch_first():
    """A host program's result (shape arithmetic, a constant to the program) may have the batch
    first: a view of it in a lane would read the first images' rows in every lane."""
    from polyeng.backends.onednn import lanes
    from polyeng.backends.onednn.segment import Step, Unsupported
    view = Step("view", {"x": "c"}, {"offset": 0, "strides": None, "whole": True}, "v", (B, S * D), None)
    for shape in ((B, S * D), (1, B * S * D)):   # a lane reads a view's bytes from the start, in its own shape
        with pytest.raises(Unsupported, match="constant"):
            lanes.lane_steps([view], B, 2, {"c": _w(*shape)})
    add = Step("add", {"a": "v", "b": "c"}, {}, "y", (B, S * D), None)   # broadcast along the batch: whole
    assert len(lanes.lane_steps([add], B, 2, {"c": _w(1, S * D)})) == 1
    # a weight whose first dim happens to be the batch is no image of it (a convolution of B output
    # channels, a linear of B outputs): the lanes build
    from polyeng.engine.call import Prepared
    linear = Step("linear", {"x": "v", "weight": "w"}, {}, "y", (B, S, B), Prepared((B, S, B), np.float32))
    assert len(lanes.lane_steps([linear], B, 2, {"w": _w(B, D)})) == 1


def test_a_run_whose_input_bounds_are_within_a_passed_run_skips_the_walk(monkeypatch):
    from polyeng.backends.onednn import lanes, segment
    monkeypatch.setattr(lanes, "threads_now", lambda: 1)   # one lane: one program run per call
    g = fuse(trace(scores, X, _mask()))
    g(X, _mask())
    walks, real_walk = [], segment.Program._walk

    def walk(self, *args):
        walks.append(True)
        return real_walk(self, *args)
    monkeypatch.setattr(segment.Program, "_walk", walk)
    with programs_taken() as taken:
        g(X, _mask())
        assert taken == [True] and len(walks) == 1
        g(X * np.float32(0.5), _mask())   # smaller bounds: no walk
        assert taken == [True, True] and len(walks) == 1
        big = g(X * np.float32(1e18), _mask())   # larger: walked, and turned down (the nodes ran)
        assert taken == [True, True] and len(walks) == 2
    same(_tuple(big), _tuple(fuse(trace(scores, X, _mask()), disable="onednn_programs")(X * np.float32(1e18), _mask())))


def rows_of_images(x, shift):
    """The batch's rows flattened for a linear and back, and an input broadcast along the batch."""
    h = polyeng.reshape(polyeng.layer_norm(polyeng.add(x, shift), (D,), G, BETA), (-1, D))   # (B * S, D)
    h = polyeng.linear(polyeng.gelu(polyeng.linear(h, W1, B1)), W2, B2)
    return polyeng.add(x, polyeng.reshape(h, (-1, S, D)))


def halves(x, shift):
    """The first of two halves of the rows: some images' rows, which no lane may take for its own."""
    y = polyeng.reshape(polyeng.add(x, shift), (2 * B, S * D // 2))
    return polyeng.gelu(polyeng.mul(y[:B], SCALE))   # a view of the first B rows


@pytest.mark.parametrize("fn, count", [(rows_of_images, 2), (halves, 1)])
def test_lanes_take_rows_of_images_and_inputs_broadcast_along_the_batch(monkeypatch, fn, count):
    from polyeng.backends.onednn import lanes
    monkeypatch.setattr(lanes, "threads_now", lambda: 2)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 2)
    monkeypatch.setattr(lanes, "available_cores", lambda: 2)
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))
    shift = _w(1, S, D)
    got, taken, want, g = _runs(fn, X, shift)
    entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
    assert taken and len(entry.program._lanes[2]) == count
    close(got, want)


def with_positions(x, positions):
    """An input of (sequence, features) added to (batch, sequence, features): aligned from the
    right, its first dim is the sequence's, which no lane may split as images: every lane reads it
    whole."""
    return polyeng.gelu(polyeng.linear(polyeng.layer_norm(polyeng.add(x, positions), (D,), G, BETA), W1, B1))


def test_an_input_aligned_from_the_right_is_read_whole_by_every_lane(monkeypatch):
    from polyeng.backends.onednn import lanes
    monkeypatch.setattr(lanes, "threads_now", lambda: 2)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 2)
    monkeypatch.setattr(lanes, "available_cores", lambda: 2)
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))
    x = RNG.standard_normal((S, S, D)).astype(np.float32)   # the batch as long as the sequence
    got, taken, want, g = _runs(with_positions, x, _w(S, D, scale=3.0))
    entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
    assert taken and entry.program.batch == S and len(entry.program._lanes[2]) == 2
    assert entry.program.rows[:2] == [1, 0]   # x split by images, the positions whole
    close(got, want)


def positions_read_twice(x, positions):
    """The position table added from the right, and also read by a linear of its own."""
    return polyeng.add(with_positions(x, positions), polyeng.linear(positions, W1))


def test_an_input_also_read_by_another_step_keeps_the_program_in_one_lane(monkeypatch):
    from polyeng.backends.onednn import lanes
    monkeypatch.setattr(lanes, "threads_now", lambda: 2)
    monkeypatch.setattr(lanes, "get_num_threads", lambda: 2)
    monkeypatch.setattr(lanes, "available_cores", lambda: 2)
    monkeypatch.setattr(lanes.trials, "choose", lambda key, n: (n, False))
    x = RNG.standard_normal((S, S, D)).astype(np.float32)
    got, taken, want, g = _runs(positions_read_twice, x, _w(S, D, scale=3.0))
    entry = [e for e in g._compiled().plans[next(iter(g._compiled().plans))] if hasattr(e, "program")][0]
    assert taken and entry.program.batch == 1
    close(got, want)


def total(x, mask):
    """A view of a 0-d value (a sum, indexed with None) between products."""
    h = polyeng.gelu(polyeng.linear(x, W_Q))
    s = polyeng.sum(polyeng.gelu(polyeng.linear(h, W_K)))
    return polyeng.mul(h, s[None])


def test_a_view_of_a_0d_value_runs_node_by_node_within_rounding():
    got, _, want, _ = _runs(total, X, _mask())
    close(got, want, 1e-5)
