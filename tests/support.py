"""Test helpers: a fake engine plugin, a fake device tensor type, and a plugin engine with
kernels of its own to run the engine test suite on."""
from __future__ import annotations

import contextlib
import functools
import math

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt


class FakeTensor:
    """A device tensor native to the fake engine: a numpy array in a box."""

    def __init__(self, array):
        self.array = np.asarray(array)
        self.shape, self.dtype = self.array.shape, self.array.dtype

    def __array__(self, dtype=None, copy=None):
        return self.array if dtype is None else self.array.astype(dtype)


class FakeEngine:
    """A plugin engine whose kernels run BASIC underneath and count their calls.

    ``reject``: op -> accepts() callable; ``fail``: ops whose kernel raises at run time;
    ``native``: return FakeTensor results and own FakeTensor inputs.
    """

    def __init__(self, name="fake", ops=("concat", "upsample_bilinear2d", "softmax"), *, reject=None,
                 fail=(), available=True, native=False):
        self.name, self.ops, self.reject, self.fail = name, ops, reject or {}, set(fail)
        self.available, self.native = available, native
        self.calls = []

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name, available=self.available,
                            reason="" if self.available is True else "fake engine switched off",
                            native_type=FakeTensor if self.native else None)
        for op in self.ops:
            registry.add_kernel(op, self.name, self._kernel(op), accepts=self.reject.get(op))

    def _kernel(self, op):
        def kernel(**kwargs):
            self.calls.append(op)
            if op in self.fail:
                raise RuntimeError(f"fake {op} kernel crashed")
            plain = {k: (np.asarray(v) if isinstance(v, FakeTensor) else
                         [np.asarray(t) for t in v] if isinstance(v, list) else v) for k, v in kwargs.items()}
            with polyeng.compute_eng("basic"):
                result = getattr(polyeng, op)(**plain)
            return FakeTensor(result) if self.native else result
        return kernel


def align_corners_unsupported(call):
    return "align_corners=True unsupported" if call.args["align_corners"] else None


def random_values(rng, shape, dtype):
    """Random values of ``dtype``: NaN, +-Inf and -0.0 first among the floats, the whole range
    (extremes included) for the ints, both values for bool."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(shape) * 100).astype(np.float32).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32).astype(dtype)
    flat = a.reshape(-1)
    flat[: min(4, flat.size)] = special[: min(4, flat.size)]
    return a


def device_tensor_or_skip(x, engine):
    """``x`` as a device tensor of ``engine``; the calling test is skipped when the engine has
    no device tensors (``polyeng.to_device`` refuses it with a ValueError)."""
    try:
        return polyeng.to_device(x, engine)
    except ValueError as exc:
        pytest.skip(str(exc))


_erf = np.frompyfunc(math.erf, 1, 1)


def _widened(x):
    """The array a kernel works on: 16-bit floats in float32. Without ``native_storage`` the
    dispatcher already hands them over widened and rounds the result back to storage."""
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


def _shifted(x, axis):
    x = x.reshape(1) if x.ndim == 0 else x
    return x - x.max(axis=axis, keepdims=True)


class MirrorEngine:
    """A plugin engine ("mirror") with plain numpy kernels of its own for softmax, log_softmax
    and gelu; ``pytest --polyeng-plugin support:MirrorEngine`` runs the engine tests on it.

    Kernels take the public op's keyword arguments after validation and return the result in
    the input's dtype.
    """

    name = "mirror"
    ops = ("softmax", "log_softmax", "gelu")

    @polyeng.hookimpl
    def polyeng_register(self, registry):
        registry.add_engine(self.name, available=True, reason="", native_type=None)
        for op in self.ops:
            registry.add_kernel(op, self.name, getattr(self, op))

    def softmax(self, x, axis):
        if x.size == 0:
            return np.empty_like(x)
        e = np.exp(_shifted(_widened(x), axis))
        return (e / e.sum(axis=axis, keepdims=True)).reshape(x.shape).astype(x.dtype)

    def log_softmax(self, x, axis):
        if x.size == 0:
            return np.empty_like(x)
        shifted = _shifted(_widened(x), axis)
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).reshape(x.shape).astype(x.dtype)

    def gelu(self, x, approximate):
        w = _widened(x)
        if approximate == "tanh":
            y = 0.5 * w * (1 + np.tanh(math.sqrt(2 / math.pi) * (w + 0.044715 * w ** 3)))
        else:
            phi = np.asarray(_erf(w.astype(np.float64) / math.sqrt(2.0)), dtype=np.float64).astype(w.dtype)
            y = 0.5 * w * (1 + phi)
        return np.asarray(y).astype(x.dtype)


def assert_same_tree(got, want):
    """``got`` is ``want`` bit for bit, nested dicts, lists and tuples included (same container
    types and keys); device tensors are brought to the host first."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want)
        for k in want:
            assert_same_tree(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_tree(g, w)
    else:
        got = polyeng.to_numpy(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def lstm_params(lm):
    """The one-layer ``params`` of a ``polyeng.model_zoo.lstm_language_model``'s LSTM."""
    w = lm.weights
    return [(w["lstm.weight_ih_l0"], w["lstm.weight_hh_l0"], w["lstm.bias_ih_l0"], w["lstm.bias_hh_l0"])]


from conftest import SUBSET_ENGINES  # noqa: E402  engines of a subset of the calls: "Engines under test" there


def turned_down(engine, op, *args, **kwargs) -> bool:
    """Whether ``engine``, one of SUBSET_ENGINES, turns this call down at selection (a limit it declares)."""
    if engine not in SUBSET_ENGINES:
        return False
    with polyeng.compute_eng(engine):
        return polyeng.explain(op, *args, **kwargs).engine != engine


def run_on(engine, op, *args, **kwargs):
    """``polyeng.<op>(*args, **kwargs)`` on ``engine`` alone (no fallback)."""
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def both(engine, op, *args, **kwargs):
    """The op's result on BASIC and on ``engine``."""
    return run_on("basic", op, *args, **kwargs), run_on(engine, op, *args, **kwargs)


def assert_same_bits(engine, op, *args, **kwargs):
    """``engine``'s result is BASIC's bit for bit, as a C-contiguous numpy array."""
    expected = run_on("basic", op, *args, **kwargs)
    actual = run_on(engine, op, *args, **kwargs)
    assert type(actual) is np.ndarray
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.flags.c_contiguous
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes()


BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}   # an unsigned type of each item size


def bits(a):
    """The stored bit patterns: NaN payloads and the sign of zero compare too."""
    a = np.ascontiguousarray(a)
    return a.view(BITS[a.dtype.itemsize])


def assert_identical(actual, expected):
    """``actual`` is a numpy array of ``expected``'s dtype and shape, with the same bits."""
    assert type(actual) is np.ndarray
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape)
    np.testing.assert_array_equal(bits(actual), bits(expected))


def assert_close_tree(expected, actual, **tol):
    """``actual`` (device tensors brought back) within ``tol`` of ``expected``, nested lists and tuples
    alike; integer and bool results equal."""
    if isinstance(expected, (tuple, list)):
        assert len(expected) == len(actual)
        for e, a in zip(expected, actual):
            assert_close_tree(e, a, **tol)
        return
    actual = polyeng.to_numpy(actual)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


def sample_values(shape, dtype, seed=0):
    """Values of ``dtype``: bools, small non-negative integers, or floats of a spread of 10."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == dt.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


@contextlib.contextmanager
def programs_taken():
    """Within the block, whether each oneDNN program run (``segment.Program.run``, a lane's too,
    also one a compiled lane worker ran: ``native_task``, then ``checks_pass``) took its values
    (True) or left them to the nodes (False), in order."""
    from polyeng.backends.onednn import segment
    taken, real, real_task, real_checks = [], segment.Program.run, segment.Program.native_task, \
        segment.Program.checks_pass
    on_workers = set()

    def run(self, arrays, *rest):
        out = real(self, arrays, *rest)
        taken.append(out is not None)
        return out

    def native_task(self, *args):
        on_workers.add(id(self))
        return real_task(self, *args)

    def checks_pass(self, arrays):
        ok = real_checks(self, arrays)
        if id(self) in on_workers:   # the worker's run ended: this is its outcome
            on_workers.discard(id(self))
            taken.append(ok)
        return ok
    segment.Program.run, segment.Program.native_task, segment.Program.checks_pass = run, native_task, checks_pass
    try:
        yield taken
    finally:
        segment.Program.run, segment.Program.native_task, segment.Program.checks_pass = real, real_task, \
            real_checks


@contextlib.contextmanager
def numba_threads(count: int):
    """numba's thread count for this thread set to ``count`` (at most its pool) for the block."""
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@functools.lru_cache(maxsize=1)
def onednn_computes_bf16() -> bool:
    """Whether oneDNN has bf16 kernels on this CPU, asked of oneDNN itself: it builds a bf16 relu.
    oneDNN 3.2 has none on a CPU without AVX-512 (AMD's Zen 3, say): its bf16 eltwise, binary,
    normalization, pooling, softmax, reduction, convolution and product primitives are unimplemented
    there (its reorders and reference concat remain) and ONEDNN turns such calls down
    (``onednn_turns_down``)."""
    from polyeng.backends.onednn import _constants as C
    from polyeng.backends.onednn._lib import OneDNNError
    from polyeng.backends.onednn._primitive import Primitive, desc
    md = desc((64,), dt.bfloat16)
    try:
        Primitive("dnnl_eltwise_forward_primitive_desc_create", C.FORWARD_INFERENCE, C.ELTWISE_RELU, md.handle,
                  md.handle, 0.0, 0.0, None, keep=(md,))
    except OneDNNError as exc:
        if exc.status != C.UNIMPLEMENTED:
            raise
        return False
    return True


def bf16_fp_math_computes_bf16() -> bool:
    """Whether ONEDNN computes ALLOW ops' f32 work in bf16 under the bf16 fp math mode: the
    library's own condition, a CPU with AVX512-BF16 or AMX-BF16 (``_fpmath.native_types``);
    elsewhere the mode computes them in f32."""
    from polyeng.backends.onednn import _fpmath
    return "bf16" in _fpmath.native_types()


def onednn_turns_down(op, *args, **kwargs):
    """A call oneDNN has no implementation for on this CPU: ONEDNN turns it down with oneDNN's
    reason, and another engine runs it. Returns (that result, BASIC's result) for the caller to
    compare."""
    with polyeng.compute_eng("onednn"):
        decision = polyeng.explain(op, *args, **kwargs)
        got = getattr(polyeng, op)(*args, **kwargs)
    assert decision.engine != "onednn", decision
    reason = next(c.reason for c in decision.candidates if c.engine == "onednn")
    assert "unimplemented" in reason, reason
    return got, run_on("basic", op, *args, **kwargs)


# graph ops that compute nothing: casts, copies and views (a program holds them in any dtype)
MOVES = frozenset({"cast", "reshape", "permute_contiguous", "split", "np.getitem", "np.transpose", "onnx.reshape",
                   "onnx.squeeze", "onnx.unsqueeze", "onnx.flatten", "onnx.slice", "onnx.getitem"})


def computes_bf16(step) -> bool:
    """Whether a graph step (``graph._compiled().steps``) computes bf16 values: a product, an
    activation, arithmetic; not a cast, a copy or a view."""
    types = step.node.types
    return step.node.op not in MOVES and bool(types) and np.dtype(types[0][0]) == dt.bfloat16


def assert_programs_between_bf16_work(program):
    """A bf16 mixed precision graph on a CPU where oneDNN computes no bf16 (``onednn_computes_bf16``):
    the nodes computing bf16 values run as nodes (ONEDNN turns them down), none in a program, and
    from the first program on every cast and every node computing f32 values (host nodes aside)
    is in one."""
    steps, spans = program.steps, program.segment_spans
    held = {i for first, stop in spans for i in range(first, stop)}
    assert held, "no program"
    inside = [(i, steps[i].node.op) for i in sorted(held) if computes_bf16(steps[i])]
    assert not inside, inside
    outside = [(i, s.node.op) for i, s in enumerate(steps) if i >= spans[0][0] and i not in held
               and (s.node.op == "cast" or (s.node.op not in MOVES and not s.node.op.startswith(("onnx.", "np."))
                                            and s.node.types and np.dtype(s.node.types[0][0]) == np.float32))]
    assert not outside, (outside, spans)
