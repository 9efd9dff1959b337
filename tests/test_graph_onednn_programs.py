"""Runs of convolution-network nodes executed as one oneDNN program (``polyeng/graph/segments.py``,
``polyeng/backends/onednn/segment.py``): planned runs take them, their results match the nodes run
one by one and onnxruntime, and every case the program must not take (special values, values
that could overflow, pinned engines, fp math modes, verbose, another thread in it, the fusion
turned off) runs the nodes one by one."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import polyeng
from polyeng.graph import fuse, trace
from support import onednn_computes_bf16, programs_taken

pytestmark = pytest.mark.skipif(not {e.name: e for e in polyeng.engines()}["onednn"].available,
                                reason="onednn is unavailable")

RNG = np.random.default_rng(11)


def _w(cout, cin, k, scale=0.2):
    return (RNG.standard_normal((cout, cin, k, k)) * scale).astype(np.float32)


W_STEM, B_STEM = _w(16, 3, 3), RNG.standard_normal(16).astype(np.float32)
W_SQ, W_E1, W_E3 = _w(8, 16, 1), _w(16, 8, 1), _w(16, 8, 3)
W_DW = _w(32, 1, 3)
W_SE1, W_SE2 = _w(8, 32, 1), _w(32, 8, 1)
W_RES = _w(32, 32, 3, 0.05)


def net(x):
    """Every op a program holds: a stem with bias, max pooling in ceil mode, a fire module (pointwise
    convolutions with relu, concat), a depthwise convolution with hardswish, squeeze-excite (mean,
    pointwise convolutions, hardsigmoid, mul), a residual, average pooling, and the activations."""
    y = polyeng.relu(polyeng.conv2d(x, W_STEM, B_STEM, stride=2, padding=1))
    y = polyeng.max_pool2d(y, 3, stride=2, ceil_mode=True)
    s = polyeng.relu(polyeng.conv2d(y, W_SQ))
    y = polyeng.concat([polyeng.relu(polyeng.conv2d(s, W_E1)), polyeng.relu(polyeng.conv2d(s, W_E3, padding=1))],
                       axis=1)
    y = polyeng.hardswish(polyeng.conv2d(y, W_DW, groups=32, padding=1))
    e = polyeng.mean(y, axis=(2, 3), keepdims=True)
    e = polyeng.hardsigmoid(polyeng.conv2d(polyeng.silu(polyeng.conv2d(e, W_SE1)), W_SE2))
    y = polyeng.mul(y, e)
    y = polyeng.add(polyeng.conv2d(y, W_RES, padding=1), y)
    y = polyeng.leaky_relu(polyeng.tanh(polyeng.add(polyeng.sigmoid(y), y)), 0.1)
    y = polyeng.clip(polyeng.avg_pool2d(y, 2), -0.2, 0.3)
    return polyeng.mean(y, axis=(2, 3)), y


X = RNG.standard_normal((2, 3, 20, 18)).astype(np.float32)


@pytest.fixture
def program_runs(monkeypatch):
    """The count of program runs that took their values (not those that left them to the nodes)."""
    from polyeng.backends.onednn import lanes
    taken = []
    real = lanes.Lanes.run

    def run(self, arrays):
        out = real(self, arrays)
        if out is not None:
            taken.append(self)
        return out
    monkeypatch.setattr(lanes.Lanes, "run", run)
    return taken


def _graph():
    return fuse(trace(net, X))


def _per_node(x):
    return _graph_off()(x)


_off = []


def _graph_off():
    if not _off:
        _off.append(fuse(trace(net, X), disable="onednn_programs"))
    return _off[0]


def close(got, want, tol=2e-5):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(float(np.max(np.abs(w))), 1e-30)
        assert float(np.max(np.abs(g.astype(np.float64) - w))) <= tol * scale


def test_a_planned_run_takes_the_program_and_matches_the_nodes(program_runs):
    g = _graph()
    assert "onednn_programs x" in str(g)
    first = g(X)   # plans the nodes and builds the programs
    assert not program_runs
    spans = g._compiled().segment_spans
    assert spans and sum(b - a for a, b in spans) >= 20
    second = g(X)
    assert program_runs
    close(second, first)
    with polyeng.compute_eng("basic", fallback=False):
        close(second, fuse(trace(net, X), disable="all")(X))


def test_a_mean_without_kept_dims_is_an_output_of_the_program(program_runs):
    g = _graph()
    g(X)
    pooled, y = g(X)
    assert program_runs and pooled.shape == (2, 32) and y.shape[:2] == (2, 32)
    close([pooled], [y.mean(axis=(2, 3))], 1e-5)


W_FC, B_FC = (RNG.standard_normal((5, 32)) * 0.2).astype(np.float32), RNG.standard_normal(5).astype(np.float32)


def classifier_net(x):
    """A CNN's last mean without its kept dims, read by its classifier (a linear, then more)."""
    pooled, _ = net(x)
    return polyeng.relu(polyeng.linear(polyeng.relu(polyeng.linear(pooled, W_FC.T @ W_FC, None)), W_FC, B_FC))


def test_a_mean_read_by_a_classifier_ends_its_program(program_runs):
    """The mean's result is read by the next node, so it cannot be a step in the middle of a
    program; the program ends with it instead of before it (one graph node fewer per run)."""
    g = fuse(trace(classifier_net, X))
    first = g(X)
    second = g(X)
    assert program_runs
    compiled = g._compiled()
    mean_at = max(i for i, step in enumerate(compiled.steps) if step.node.op == "mean")
    assert any(a <= mean_at < b and b == mean_at + 1 for a, b in compiled.segment_spans), compiled.segment_spans
    close(second, first)
    with polyeng.compute_eng("basic", fallback=False):
        close(second, fuse(trace(classifier_net, X), disable="all")(X))


def test_large_values_whose_bound_stays_finite_run_in_the_program(program_runs):
    g = _graph()
    g(X)
    x = X.copy()
    x[1, 2, 3, 4] = 1e30
    close(g(x), _per_node(x), 1e-5)
    assert program_runs


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, 1e37, -3e38])
def test_values_that_may_leave_the_finite_range_run_node_by_node(program_runs, special):
    g = _graph()
    g(X)
    x = X.copy()
    x[1, 2, 3, 4] = special
    got = g(x)
    assert not program_runs
    want = _per_node(x)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)   # the very same path: NaN where it gives NaN


def test_a_first_run_computes_a_programs_nodes_on_onednn_and_keeps_the_selectors_plans(program_runs, monkeypatch,
                                                                                       capsys):
    """The selector sends relu to NUMBA here; the first run computes it on ONEDNN (the program
    computes it from the second run on), and the node keeps NUMBA's plan for the runs the program
    does not take (verbose)."""
    from polyeng.engine import dispatch, selector
    from polyeng.engine.plan_cache import PlanCache
    from polyeng.engine.plugins import registry
    monkeypatch.setattr(registry(), "plans", PlanCache())   # no decision an earlier test made
    real_preference, real_execute = selector._preference, dispatch.BoundPlan.execute
    monkeypatch.setattr(selector, "_preference", lambda call: (["numba"] if call.op == "relu" else [])
                        + [e for e in real_preference(call) if call.op != "relu" or e != "numba"])
    ran, probed, real_verdict = [], [], selector.verdict

    def execute(self, *args, **kwargs):
        ran.append((self.spec.name, self.decision.engine))
        return real_execute(self, *args, **kwargs)

    def verdict(call, reg, name):
        probed.append((call.op, name))
        return real_verdict(call, reg, name)
    monkeypatch.setattr(dispatch.BoundPlan, "execute", execute)
    monkeypatch.setattr(selector, "verdict", verdict)
    x = RNG.standard_normal((2, 3, 21, 17)).astype(np.float32)   # a signature no other test plans
    g, off = fuse(trace(net, x)), fuse(trace(net, x), disable="onednn_programs")

    def relu_engines(run):
        del ran[:]
        out = run()
        return {engine for op, engine in ran if op == "relu"}, out
    engines, want = relu_engines(lambda: off(x))
    assert engines == {"numba"}   # without programs the node runs as the selector chose
    monkeypatch.setattr(registry(), "plans", PlanCache())   # nor that one
    del probed[:]
    engines, first = relu_engines(lambda: g(x))
    assert engines == {"onednn"} and not program_runs
    close(first, want)
    engines, second = relu_engines(lambda: g(x))
    assert engines == set() and program_runs
    close(second, want)
    # nor was NUMBA asked about it: the node's own plan waits for a run that needs it
    assert ("relu", "numba") not in probed and ("relu", "onednn") in probed
    with polyeng.verbose(1):   # the program does not take it: the nodes' own plans run
        engines, third = relu_engines(lambda: g(x))
    capsys.readouterr()
    assert engines == {"numba"}
    close(third, want)


def test_scopes_that_choose_otherwise_run_node_by_node(program_runs):
    g = _graph()
    for scope in (lambda: polyeng.compute_eng("numba"), lambda: polyeng.compute_eng("basic", fallback=False),
                  lambda: polyeng.verbose(1)):
        with scope():
            g(X)
            g(X)
    assert not program_runs
    with polyeng.compute_eng("onednn"):   # the engine a program runs on: allowed
        g(X)
        g(X)
    assert program_runs


@pytest.mark.parametrize("mode", ["bf16", "tf32", "any"])
def test_under_an_fp_math_mode_the_convolutions_take_its_fpmath(program_runs, mode):
    g = _graph()
    want = g(X)
    with polyeng.fp_math_mode(mode):
        g(X)
        got = g(X)
    assert program_runs
    close(got, want, 1e-2)   # the convolutions may compute in bf16


@pytest.mark.parametrize("bf16", ["fp math", "mixed precision"])
def test_bf16_programs_take_amx_convolutions_where_the_cpu_has_them(program_runs, monkeypatch, bf16):
    """On a CPU with AMX-BF16 a program's bf16 convolutions let oneDNN choose their source layout
    (reordering their input where it differs), so that its AMX kernels run; elsewhere none does.
    Where oneDNN computes no bf16, a mixed precision graph's convolutions are its nodes'."""
    from polyeng.backends.onednn import _fpmath, segment
    convolutions = []   # every convolution primitive made (kept alive: their ids stay theirs)
    real = segment.Primitive

    def recorded(create, *args, **kwargs):
        prim = real(create, *args, **kwargs)
        if create == "dnnl_convolution_forward_primitive_desc_create":
            convolutions.append(prim)
        return prim
    monkeypatch.setattr(segment, "Primitive", recorded)
    g = _graph()
    want = g(X)
    if bf16 == "fp math":
        with polyeng.fp_math_mode("bf16"):
            g(X)
            program_runs.clear()
            got = g(X)
    else:
        g = polyeng.amp.to_mixed_precision(g, "bfloat16", missing_op_mode="ignore")
        g(X)
        program_runs.clear()
        got = g(X)
    made = {id(p) for p in convolutions}
    ran = [prim.impl for lanes in program_runs for prim, _, _ in lanes.whole.calls if id(prim) in made]
    if bf16 == "mixed precision" and not onednn_computes_bf16():
        # no bf16 convolution in oneDNN here: every convolution of the graph runs as its node, outside
        # the programs (a program may still hold its f32 steps and bf16 copies), and the results are
        # the nodes'
        program = g._compiled()
        convs = [i for i, step in enumerate(program.steps) if step.node.op in ("conv2d", "fused_conv")]
        assert len(convs) >= 7 and not ran
        assert not any(a <= i < b for a, b in program.segment_spans for i in convs), program.segment_spans
        close([np.asarray(a, np.float32) for a in got], want, 2e-2)
        return
    assert len(ran) >= 7, ran   # the stem, the fire module's three, the depthwise, squeeze-excite's two, ...
    amx = "amx_bf16" in _fpmath.cpu_flags()
    with_amx = sum("amx" in impl for impl in ran)
    # the two 3x3 convolutions of 8 and 32 channels at least (oneDNN keeps some pointwise ones of
    # f32 data on f32 kernels under the fp math mode, and has no AMX depthwise kernel)
    assert with_amx >= 2 if amx else with_amx == 0, ran
    close([np.asarray(a, np.float32) for a in got], want, 2e-2)


def test_other_shapes_plan_programs_of_their_own(program_runs):
    g = _graph()
    for n in (1, 3):
        x = RNG.standard_normal((n, 3, 20, 18)).astype(np.float32)
        g(x)
        close(g(x), _per_node(x))
    # one program per shape (oneDNN's layouts for a batch of 1 may end a run early: two there)
    assert {p.batch for p in program_runs} == {1, 3}


def test_threads_running_one_program_at_once_each_get_their_results():
    g = _graph()
    xs = [RNG.standard_normal((2, 3, 20, 18)).astype(np.float32) for _ in range(4)]
    wants = [_per_node(x) for x in xs]
    g(xs[0])
    wrong = []

    def work(k):
        for _ in range(10):
            got = g(xs[k])
            if not all(np.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(got, wants[k])):
                wrong.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_the_fusion_turned_off_makes_no_program(program_runs, monkeypatch):
    g = fuse(trace(net, X), disable=("onednn_programs",))
    assert "onednn_programs" not in str(g)
    g(X)
    g(X)
    assert not program_runs and not g._compiled().segment_spans
    monkeypatch.setenv("POLYENG_DISABLE_FUSIONS", "onednn_programs")
    g = fuse(trace(net, X))
    g(X)
    g(X)
    assert not program_runs


def test_a_value_returned_and_read_inside_leaves_the_program():
    def fn(x):
        y = polyeng.relu(polyeng.conv2d(x, W_STEM, B_STEM, padding=1))
        z = polyeng.max_pool2d(y, 2)
        return y, polyeng.relu(polyeng.conv2d(z, _w(8, 16, 3), padding=1))
    g = fuse(trace(fn, X))
    first = g(X)
    second = g(X)
    assert g._compiled().segment_spans
    close(second, first)
    assert second[0].flags.c_contiguous and second[0].flags.writeable


def test_an_input_of_another_layout_runs_node_by_node(program_runs):
    g = _graph()
    g(X)
    x = np.asfortranarray(X)
    close(g(x), _per_node(X))


def test_the_profile_names_the_program():
    g = _graph()
    text = str(g.profile(X, repeat=3))
    assert "onednn program" in text


def test_an_empty_batch_runs_node_by_node(program_runs):
    g = _graph()
    x = np.zeros((0, 3, 20, 18), np.float32)
    g(x)
    got = g(x)
    assert not program_runs and got[0].shape == (0, 32)


def _program_vs_nodes(fn, x):
    """(program result, node-by-node result, programs taken) of ``fn`` traced on ``x``, run twice."""
    g = fuse(trace(fn, x))
    g(x)
    with programs_taken() as taken:
        got = g(x)
    return got, fuse(trace(fn, x), disable="onednn_programs")(x), any(taken)


def _same(got, want):
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(a, b)


def test_a_max_pooling_window_with_no_tap_inside_is_not_held():
    w, w2 = _w(4, 3, 1), _w(4, 4, 1)

    def fn(x):   # windows of dilation 3 over a 2x2 image starting in the padding: -inf, not oneDNN's lowest
        y = polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(x, w)), 2, stride=1, padding=1, dilation=3)
        return polyeng.sigmoid(polyeng.conv2d(y, w2))
    got, want, _ = _program_vs_nodes(fn, RNG.standard_normal((1, 3, 2, 2)).astype(np.float32))
    _same(got, want)
    assert np.isnan(want).any()


def test_a_clip_above_the_values_lifts_the_bound():
    w1 = _w(16, 3, 3)
    wa = np.zeros((16, 16, 1, 1), np.float32)
    wa[0::2, :, 0, 0], wa[1::2, :, 0, 0] = 1.0, -1.0   # +-16e38: infinities of both signs
    wb = np.zeros((16, 16, 1, 1), np.float32)
    wb[:8, 0, 0, 0] = wb[:8, 1, 0, 0] = 1.0            # inf - inf: NaN

    def fn(x):
        y = polyeng.clip(polyeng.conv2d(x, w1, padding=1), 1e38, 3e38)
        a = polyeng.conv2d(y, wa)
        return polyeng.max_pool2d(polyeng.conv2d(a, wb), 2), a
    got, want, taken = _program_vs_nodes(fn, RNG.standard_normal((1, 3, 4, 4)).astype(np.float32))
    assert not taken
    _same(got, want)


def test_an_average_whose_window_sum_may_overflow_is_not_held():
    def fn(x):
        y = polyeng.relu(polyeng.conv2d(x, np.ones((4, 4, 1, 1), np.float32) * np.float32(0.25)))
        return polyeng.mean(polyeng.avg_pool2d(y, 4), axis=(2, 3), keepdims=True), polyeng.mean(y, axis=(2, 3), keepdims=True)
    x = np.full((1, 4, 32, 32), 5e35, np.float32)   # below the limit, but 16 or 1024 of them summed are not
    got, want, taken = _program_vs_nodes(fn, x)
    assert not taken
    _same(got, want)


def test_a_clip_with_number_bounds_and_leaky_relu_slopes_are_held_or_not_as_onednn_keeps_them():
    w = _w(8, 3, 3)

    def clipped(x):
        return polyeng.clip(polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(x, w, padding=1)), 2), 0.1, 0.5)
    got, want, taken = _program_vs_nodes(clipped, X)
    assert taken
    close([got], [want], 1e-6)

    w2 = _w(8, 8, 1)

    def zero_slope(x):   # oneDNN's max(x, 0) gives +0 where polyeng's slope * x gives -0
        y = polyeng.max_pool2d(polyeng.conv2d(polyeng.conv2d(x, w, padding=1), w2), 2)
        return polyeng.leaky_relu(y, 0.0)
    got, want, _ = _program_vs_nodes(zero_slope, X)
    close([got], [want], 1e-6)
    assert np.array_equal(np.signbit(got), np.signbit(want)) and np.signbit(want[want == 0]).any()


def test_the_profile_shows_only_programs_that_ran():
    g = _graph()
    g(X)
    with polyeng.compute_eng("numba", fallback=False):
        found = g.profile(X, repeat=2)
    assert "onednn program" not in [o["op"] for o in found.ops]
    x = X.copy()
    x[0, 0, 0, 0] = np.nan   # every run node by node
    assert "onednn program" not in [o["op"] for o in g.profile(x, repeat=2).ops]


def test_a_bf16_mixed_precision_graph_runs_as_programs_with_its_casts(program_runs, scalar_casts_held):
    import polyeng.amp
    g = polyeng.amp.to_mixed_precision(_graph(), "bfloat16")
    assert any(n.op == "cast" for n in g.nodes)
    first = g(X)
    second = g(X)
    assert program_runs and g._compiled().segment_spans
    want = _per_node(X)
    for a, b, w in zip(first, second, want):
        assert a.dtype == b.dtype
        scale = float(np.max(np.abs(w)))
        assert float(np.max(np.abs(b.astype(np.float64) - w))) <= 0.02 * scale
        assert float(np.max(np.abs(b.astype(np.float64) - a.astype(np.float64)))) <= 0.02 * scale


def test_a_cast_to_bf16_keeps_subnormals_of_4d_and_2d_values(scalar_casts_held):
    import polyeng.amp
    w = _w(8, 3, 3)

    def fn(x, z):
        y = polyeng.relu(polyeng.conv2d(x, w, padding=1))
        y = polyeng.max_pool2d(polyeng.conv2d(y, _W8), 2)
        return polyeng.cast(y, polyeng.bfloat16), polyeng.cast(z, polyeng.bfloat16)
    x = (RNG.standard_normal((2, 3, 8, 8)) * 1e-39).astype(np.float32)   # subnormal results
    z = (RNG.standard_normal((2, 5)) * 1e-39).astype(np.float32)
    g = fuse(trace(fn, x, z))
    first = g(x, z)
    second = g(x, z)
    assert g._compiled().segment_spans   # the convolutions still run as a program
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.view(np.uint16), b.view(np.uint16))
    assert np.count_nonzero(second[0]) > 0
    a = polyeng.amp.to_mixed_precision(_graph(), "bfloat16")
    a(X)
    assert a._compiled().segment_spans


_W8 = _w(8, 8, 1)


def test_a_small_cast_to_bf16_runs_in_the_program_unless_its_source_holds_a_subnormal(scalar_casts_held):
    w = _w(8, 3, 3)

    def fn(x):   # a squeeze-excite's shape: the mean in f32, cast to bf16, a bf16 convolution after it
        y = polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(x, w, padding=1)), 2)
        e = polyeng.cast(polyeng.mean(y, axis=(2, 3), keepdims=True), polyeng.bfloat16)
        return polyeng.conv2d(e, _W8.astype(polyeng.bfloat16))
    for scale, taken in ((1.0, True), (1e-39, False)):
        x = (RNG.standard_normal((2, 3, 8, 8)) * scale).astype(np.float32)
        got, want, ran = _program_vs_nodes(fn, x)
        assert ran is taken
        if scale == 1e-39:
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
        else:
            close([got.astype(np.float32)], [want.astype(np.float32)], 1e-2)


def test_a_cast_to_its_own_dtype_is_left_to_the_nodes():
    w = _w(8, 3, 3)

    def fn(x, z):   # bf16 to bf16 between the program's nodes: not a cast a program holds
        y = polyeng.max_pool2d(polyeng.relu(polyeng.conv2d(x, w, padding=1)), 2)
        return polyeng.mean(y, axis=(2, 3), keepdims=True), polyeng.cast(polyeng.cast(z, polyeng.bfloat16),
                                                                         polyeng.bfloat16)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    z = RNG.standard_normal((1, 1, 1, 1)).astype(np.float32)
    g = fuse(trace(fn, x, z))
    first = g(x, z)
    second = g(x, z)
    assert g._compiled().segment_spans
    close([second[0]], [first[0]], 1e-6)
    np.testing.assert_array_equal(second[1].view(np.uint16), first[1].view(np.uint16))


_W_UP = _w(8, 16, 1)


@pytest.mark.parametrize("up, held", [
    (lambda y: polyeng.upsample_nearest(y, scale_factor=2), True),
    (lambda y: polyeng.upsample_bilinear2d(y, scale_factor=2), True),
    (lambda y: polyeng.upsample_bilinear2d(y, size=(40, 36)), True),
    (lambda y: polyeng.upsample_bilinear2d(y, size=(5, 4)), True),
    (lambda y: polyeng.upsample_bilinear2d(y, size=(15, 14)), False),   # oneDNN's source coordinates round otherwise
    (lambda y: polyeng.upsample_nearest(y, scale_factor=0.5), False),   # oneDNN takes the odd pixels
    (lambda y: polyeng.upsample_bilinear2d(y, scale_factor=2, align_corners=True), False),
], ids=["nearest-x2", "bilinear-x2", "bilinear-size", "bilinear-down", "bilinear-size-15x14", "nearest-half",
        "bilinear-corners"])
def test_upsampling_runs_in_the_program_where_onednn_s_sources_are_pytorch_s(up, held):
    """A UNet's way up: the program holds oneDNN's resampling where it picks and weighs PyTorch's
    sources (the ONEDNN kernels' rule), and ends before it otherwise."""
    def fn(x):
        y = polyeng.relu(polyeng.conv2d(x, W_STEM, B_STEM, padding=1))
        return polyeng.sigmoid(polyeng.conv2d(up(y), _W_UP))
    got, want, ran = _program_vs_nodes(fn, X)
    g = fuse(trace(fn, X))
    g(X)
    g(X)   # planned: its programs built
    spans = g._compiled().segment_spans
    assert spans == ([(0, len(g._compiled().steps))] if held else [])   # else no run of 3 nodes is left
    assert ran is held
    close([got], [want])


def test_an_upsampling_larger_than_a_resampling_run_ends_the_program(monkeypatch):
    """oneDNN 3.2's resampling faults on large runs (``backends/onednn/upsample.py``): a program
    holds none larger than ``MAX_RUN`` items; the node runs on its own, in pieces."""
    from polyeng.backends.onednn import upsample
    monkeypatch.setattr(upsample, "MAX_RUN", X.shape[0] * 16 * 4 * X.shape[2] * X.shape[3] - 1)

    def fn(x):
        y = polyeng.relu(polyeng.conv2d(x, W_STEM, B_STEM, padding=1))
        return polyeng.sigmoid(polyeng.conv2d(polyeng.upsample_bilinear2d(y, scale_factor=2), _W_UP))
    got, want, ran = _program_vs_nodes(fn, X)
    g = fuse(trace(fn, X))
    g(X)
    g(X)
    assert g._compiled().segment_spans == []   # the conv and relu before it: no run of 3 nodes is left
    close([got], [want])


TRANSFORMER_ONLY = """
import sys
import numpy as np, polyeng
from polyeng.graph import fuse, trace
rng = np.random.default_rng(0)
w1, w2 = (rng.standard_normal((2, 32, 32)) * 0.2).astype(np.float32)
gamma, beta = np.ones(32, np.float32), np.zeros(32, np.float32)
def block(x):
    h = polyeng.layer_norm(x, (32,), gamma, beta)
    scores = polyeng.softmax(polyeng.matmul(polyeng.linear(h, w1), h), axis=-1)   # seq == width
    return polyeng.add(polyeng.gelu(polyeng.linear(polyeng.matmul(scores, h), w2)), x)
x = rng.standard_normal((2, 32, 32)).astype(np.float32)
with polyeng.compute_eng("basic"):   # tracing computes each op (a loaded model's graph does not)
    g = fuse(trace(block, x))
got = [g(x) for _ in range(3)]
numba_loaded = "numba" in sys.modules
from support import programs_taken
with programs_taken() as taken:
    got.append(g(x))
want = fuse(trace(block, x), disable="onednn_programs")(x)
print(numba_loaded, any(taken), all(np.allclose(r, want, rtol=1e-5, atol=1e-5) for r in got), flush=True)
"""


def test_a_graph_whose_nodes_programs_hold_runs_without_probing_numba(tmp_path):
    """The selector recommends NUMBA for layer_norm, softmax and gelu; in a graph whose program
    holds them no run needs their own plans, so numba (about 0.25 s and 64 MB) is never loaded."""
    import os
    import subprocess
    import sys
    script = tmp_path / "transformer_only.py"
    script.write_text(TRANSFORMER_ONLY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__)] + sys.path)}
    env.pop("POLYENG_COMPUTE_ENG", None)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "True"], done.stdout
