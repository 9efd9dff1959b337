"""cast on oneDNN's reorder, for the pairs whose results equal BASIC's bit for bit.

Which pairs those are depends on the implementation oneDNN picks on this CPU. On an Intel Xeon
with AVX-512 its reorders gave BASIC's bits for bf16 -> f32, int8 -> f32/bf16/f16,
uint8 -> f32/bf16 and int32 -> f32 (``CANDIDATES``), while f32 -> bf16 flushes subnormals to
zero, f32 -> f16 turns -0.0 into +0.0 and f16 -> f32 differs too; there is no reorder for
bf16 <-> f16, uint8 -> f16, int32 -> bf16/f16 or any 64-bit type. On an AVX2 CPU it picks
``simple:any``, whose bf16 -> f32 turns -0.0 into +0.0. So a candidate pair is taken only
through an implementation that this process has checked: the first call of a pair reorders
every value of an 8- or 16-bit source (and int32's edges) in two layouts and compares the bits
with BASIC's; a call whose layout gets an implementation that was not checked, or that differed,
is turned down naming it. So is a conversion to or from a 16-bit float in oneDNN's scalar code
(``simple:*``, ``_primitive.scalar_conversion``), about 100 ns an element: sixty times NUMBA's
cast. A cast to the input's own dtype is a numpy copy."""
from __future__ import annotations

import threading

import numpy as np

from ...engine import dtypes as dt
from .._loader import limit
from . import _constants as C
from ._primitive import c_strides, cached, desc, elements_strides, reorder, scalar_conversion
from ._threads import threads_for
from .concat import describable

CANDIDATES = {(dt.bfloat16, dt.float32), (dt.int8, dt.float32), (dt.int8, dt.bfloat16), (dt.int8, dt.float16),
              (dt.uint8, dt.float32), (dt.uint8, dt.bfloat16), (dt.int32, dt.float32)}
CANDIDATES = {(np.dtype(s), np.dtype(t)) for s, t in CANDIDATES}

_checked: dict = {}   # (source, target) -> {implementation: None (same bits) or how it differed}
_checking = threading.Lock()


def _rule(call):
    x = call.args["x"]
    source, target = np.dtype(x.dtype), np.dtype(call.args["dtype"])
    if source == target:
        return None
    if (source, target) not in CANDIDATES:
        return (f"oneDNN's reorder from {source.name} to {target.name} is not bit for bit BASIC's "
                f"rounding (or does not exist)")
    if x.size == 0 or x.ndim == 0:
        return None   # no reorder runs (numpy's cast, which is BASIC's for these pairs)
    step = _step(x.shape, _strides(x), source, target)
    impl = step.impl
    if scalar_conversion(step, source, target):
        return (f"oneDNN's reorder from {source.name} to {target.name} takes {impl} for this layout, "
                f"its scalar code (about 100 ns an element)")
    verdicts = _verdicts(source, target)
    if impl not in verdicts:
        return (f"oneDNN's reorder from {source.name} to {target.name} takes {impl} for this layout, "
                f"whose results were not checked against BASIC's")
    if verdicts[impl] is not None:
        return f"oneDNN's reorder from {source.name} to {target.name} ({impl}) {verdicts[impl]}"
    return None


def _strides(x) -> tuple:
    """The strides, in elements, the reorder reads ``x`` with: its own, or those of the C-contiguous
    copy the kernel makes of a layout oneDNN cannot describe."""
    if describable(x):
        return elements_strides(x)
    return c_strides(x.shape)


def _step(shape, strides, source, target):
    key = ("cast", tuple(shape), strides, source.str, target.str)
    return cached(key, lambda: reorder(desc(shape, source, strides), desc(shape, target)))


def _patterns(source: np.dtype) -> np.ndarray:
    """Every value of an 8- or 16-bit type; int32's edges, rounding ties and a fixed sample."""
    if source.itemsize <= 2:
        bits = np.arange(1 << (8 * source.itemsize), dtype=f"u{source.itemsize}")
        return bits.view(source)
    info = np.iinfo(source)
    edges = [0, 1, -1, info.max, info.min, info.max - 64, info.min + 64]
    for e in range(24, 31):
        edges += [2 ** e - 1, 2 ** e + 1, 2 ** e + 3, -(2 ** e) - 1, -(2 ** e) - 3]
    sample = np.random.default_rng(0).integers(info.min, info.max, 4096, dtype=source, endpoint=True)
    return np.concatenate([np.array(edges, source), sample])


def _compare(got: np.ndarray, want: np.ndarray):
    """None where ``got`` has ``want``'s bits (NaN as NaN, whatever its payload), else how it differs."""
    nan = np.isnan(want)
    if not np.array_equal(np.isnan(got), nan):
        return "gives NaN where BASIC does not, or a number where BASIC gives NaN"
    kind = f"u{want.itemsize}"
    wrong = np.flatnonzero(got.view(kind)[~nan] != want.view(kind)[~nan])
    if wrong.size:
        i = wrong[0]
        return (f"gives {float(got[~nan][i])!r} where BASIC gives {float(want[~nan][i])!r} "
                f"({wrong.size} of {got.size} checked values differ)")
    return None


def _verdicts(source, target) -> dict:
    """Per implementation oneDNN took for this pair in the checked layouts: None where its bits were
    BASIC's, else how they differed. Checked once per process."""
    found = _checked.get((source, target))
    if found is not None:
        return found
    with _checking:
        found = _checked.get((source, target))
        if found is None:
            values = _patterns(source)
            want = dt.round_to(values, target)
            found = {}
            rows = 1 << (values.size.bit_length() // 2)
            cols = -(-values.size // rows)
            grid = np.resize(values, rows * cols).reshape(rows, cols).T   # a transposed layout
            for x, expected in ((values, want), (grid, dt.round_to(grid, target))):
                step = _step(x.shape, _strides(x), source, target)
                out = np.empty(x.shape, target)
                step.run({C.ARG_FROM: x, C.ARG_TO: out}, 1)
                verdict = _compare(out, expected)
                if found.get(step.impl, None) is None:
                    found[step.impl] = verdict
            _checked[(source, target)] = found
    return found


@limit(_rule)
def cast(p, x, dtype):
    if x.dtype == p.dtype or x.size == 0 or x.ndim == 0:
        return np.array(x, dtype=p.dtype, copy=True, order="C")
    if not describable(x):
        x = np.ascontiguousarray(x)
    step = _step(x.shape, _strides(x), x.dtype, p.dtype)
    out = np.empty(x.shape, p.dtype)
    step.run({C.ARG_FROM: x, C.ARG_TO: out}, threads_for(x.size * 4))
    return out
