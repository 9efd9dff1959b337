"""``auto_mixed_precision``: convert as many nodes as keep the outputs within tolerance.

In process, on the caller's inputs and engines:
1. convert every node the pass would convert; if the outputs are within tolerance, done;
2. measure each candidate's effect once: the graph with only that node converted (its inputs
   and outputs cast as the pass does), and its worst error against the original outputs;
3. order the candidates by that error and bisect for the fewest most sensitive nodes to keep
   in their original dtype (each probe is one conversion and one run of the graph);
4. validate the final graph; if it is still out of tolerance (errors do not add up
   monotonically), keep further nodes in sensitivity order until it passes. Keeping every
   candidate is the original graph, which always passes.

An error is measured as numpy's ``allclose`` would judge it: the largest ``|got - want|`` in
excess of ``atol + rtol * |want|`` over every float output (<= 0 passes); non-finite results
where the original was finite fail.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..engine import dtypes as dt
from ..engine.api import to_numpy
from .amp_pass import mixed_dtype, to_mixed_precision
from .ir import leaves


@dataclass
class AmpReport:
    """What ``auto_mixed_precision`` did: ``kept`` lists (node name, op, error it caused alone)
    for each node left in its original dtype; ``converted`` counts nodes running in the mixed
    dtype; ``attempts`` counts graphs converted and run; ``error`` is the final graph's worst
    excess over the tolerance (<= 0: within it) and ``max_abs_diff`` its largest difference."""
    dtype: str
    rtol: float
    atol: float
    kept: list = field(default_factory=list)
    converted: int = 0
    candidates: int = 0
    attempts: int = 0
    seconds: float = 0.0
    error: float = 0.0
    max_abs_diff: float = 0.0

    def __str__(self) -> str:
        lines = [f"auto_mixed_precision to {self.dtype} (rtol={self.rtol:g}, atol={self.atol:g}): "
                 f"{self.converted} of {self.candidates} candidate nodes in {self.dtype}, {len(self.kept)} kept; "
                 f"{self.attempts} attempts in {self.seconds:.2f} s; max |diff| {self.max_abs_diff:.3g}"]
        for name, op, error in self.kept:
            lines.append(f"  kept {name} ({op}): {_error_text(error)}")
        return "\n".join(lines)


def _error_text(error: float) -> str:
    if error == np.inf:
        return "converted alone, gave non-finite values"
    if error > 0:
        return f"converted alone, outputs off by {error:.3g} beyond the tolerance"
    return f"converted alone, within the tolerance (margin {-error:.3g}); kept for the sum of errors"


def _flat_outputs(result) -> list:
    return [to_numpy(a) for a in leaves(result, lambda v: hasattr(v, "shape") and hasattr(v, "dtype"))]


def _excess(got: list, want: list, rtol: float, atol: float) -> tuple:
    """(worst excess over atol + rtol*|want|, max |got - want|) over the float outputs."""
    worst, biggest = -np.inf, 0.0
    for g, w in zip(got, want):
        if w.dtype not in dt.FLOAT_DTYPES or w.size == 0:
            if not np.array_equal(g, w):
                return np.inf, np.inf
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        finite = np.isfinite(w64)
        if not np.array_equal(np.isfinite(g64), finite) or not np.array_equal(g64[~finite], w64[~finite],
                                                                               equal_nan=True):
            return np.inf, np.inf
        diff = np.abs(g64[finite] - w64[finite])
        if diff.size:
            worst = max(worst, float(np.max(diff - (atol + rtol * np.abs(w64[finite])))))
            biggest = max(biggest, float(np.max(diff)))
    return (worst if worst != -np.inf else 0.0 - atol), biggest


def auto_mixed_precision(graph, *inputs, dtype="bfloat16", rtol=1e-2, atol=1e-3, **kw_inputs):
    """``(converted graph, AmpReport)``: ``graph`` with as many nodes in ``dtype`` as keep every
    output within ``rtol``/``atol`` of the original graph's on ``inputs``."""
    mixed = mixed_dtype(dtype)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name}={value!r}: expected a number >= 0")
    start = time.perf_counter()
    want = _flat_outputs(graph(*inputs, **kw_inputs))
    report = AmpReport(dtype=mixed.name, rtol=float(rtol), atol=float(atol))

    def attempt(keep):
        report.attempts += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # numpy nodes: warned about once, below
            converted = to_mixed_precision(graph, mixed, missing_op_mode="ignore", keep=keep)
        error, biggest = _excess(_flat_outputs(converted(*inputs, **kw_inputs)), want, rtol, atol)
        return converted, error, biggest

    full = to_mixed_precision(graph, mixed, missing_op_mode="ignore")
    candidates = [n.name for n in full.nodes if n.amp and n.amp.mixed]
    report.candidates = len(candidates)
    everything = frozenset(candidates)
    converted, error, biggest = attempt(frozenset())
    if error > 0 and candidates:
        alone = {}
        for name in candidates:   # each candidate converted on its own
            alone[name] = attempt(everything - {name})[1]
        order = sorted(candidates, key=lambda n: -alone[n])
        low, high, best = 0, len(order), None   # keeping order[:k]: find the smallest k that passes
        while low < high:
            k = (low + high) // 2
            result = attempt(frozenset(order[:k]))
            if result[1] <= 0:
                high, best = k, (k, result)
            else:
                low = k + 1
        k = low
        if best is None or best[0] != k:
            best = (k, attempt(frozenset(order[:k])))
        while best[1][1] > 0 and k < len(order):   # validation failed: keep more, in order
            k += 1
            best = (k, attempt(frozenset(order[:k])))
        converted, error, biggest = best[1]
        ops = {n.name: n.op for n in graph.nodes}
        report.kept = [(name, ops[name], alone[name]) for name in order[:k]]
    # nodes kept in f32 can take FOLLOW nodes after them back to f32 too: count what runs mixed
    report.converted = sum(1 for n in converted.nodes if n.amp and n.amp.mixed and n.amp.category != "cast")
    report.error, report.max_abs_diff = error, biggest
    report.seconds = time.perf_counter() - start
    return converted, report
