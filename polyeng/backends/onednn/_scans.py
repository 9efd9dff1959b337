"""The scans of a program's guards (``segment.Program.bounded`` and ``checks_pass``) in one
compiled pass each (llvmlite's, as the programs' loop: ``_llvm.py``).

Run through numpy, a guard is a few ufunc calls per value (a sum of squares for each input, the
largest and smallest of each softmax mask, four ufuncs over every layer norm's statistics), about
1 us of dispatch each and one pass over the value each: 32-34 us per run of the GPT-2 test model
at batch 1, whose primitives took about 220 us (15-19 us here). Here each value is read once, as
integers where that lets LLVM vectorise the reduction without assuming that no NaN is met
(``_scan_loops.py``):

- ``magnitude``: the largest ``|x|`` of f32 values (their bits less the sign, an integer max; a
  NaN's bits lie above infinity's, so a NaN gives NaN);
- ``extremes``: (largest, smallest) of f32 values in one pass over their bits made monotone
  (the sign bit set: the other bits flipped), and whether one is a NaN;
- ``rows_in_doubt``: whether any layer norm row's statistics leave it in doubt (the rule of
  ``normalization.may_be_constant``, in f32 as there);
- ``masked_rows``: for a mask holding -inf (masked places), its smallest other value and whether
  a row is masked whole, in one compiled scan of two loops per row (numpy took four passes over
  the whole mask, 50 us per call of GPT-2's TorchScript export at batch 1, whose causal mask
  holds -inf).

Each function has numpy's form too (``*_numpy``), which the caller uses where llvmlite cannot
compile the scans and the tests compare with.
"""
from __future__ import annotations

import numpy as np

from .normalization import may_be_constant

_scans: dict = {}   # "magnitude", "extremes", "doubt": the compiled functions, once made


_failed: list = []   # why the scans could not be made, once tried


def _compile() -> dict:
    if not _scans:
        from . import _scan_loops as L
        # compiled now, and tried, so that a failure is found here and not in a run
        values = np.array([1.0, -2.0], np.float32)
        if L.magnitude_bits(values.view(np.int32)) != 2.0:
            raise RuntimeError("the compiled magnitude scan gave a wrong result")
        L.extreme_keys(values.view(np.int32))
        L.doubt(values, values)
        L.masked_rows(values.view(np.int32), 1)
        _scans.update(magnitude=L.magnitude_bits, extremes=L.extreme_keys, doubt=L.doubt, masked=L.masked_rows)
    return _scans


def compiled() -> dict | None:
    """The compiled scans, or None where llvmlite cannot make them (then numpy's forms serve)."""
    if _failed:
        return None
    try:
        return _compile()
    except Exception as exc:   # llvmlite missing or failing: numpy's forms serve
        _failed.append(f"{type(exc).__name__}: {exc}")
        return None


def magnitude(flat) -> float:
    """The largest magnitude of C-contiguous 1-D f32 ``flat`` (0.0 if empty, NaN if it holds one)."""
    if not flat.size:
        return 0.0
    return _scans["magnitude"](flat.view(np.int32))


def magnitude_numpy(flat) -> float:
    if not flat.size:
        return 0.0
    return float(np.max(np.abs(flat)))


def extremes(flat) -> tuple[float, float, bool]:
    """(largest, smallest, holds a NaN) of C-contiguous 1-D f32 ``flat`` (NaNs aside; 0.0, 0.0 if
    empty or only NaN)."""
    if not flat.size:
        return 0.0, 0.0, False
    hi, lo, nan = _scans["extremes"](flat.view(np.int32))
    if nan:   # the keys of NaNs lie beyond infinity's: the extremes of the rest, from numpy
        return extremes_numpy(flat)
    return hi, lo, False


def extremes_numpy(flat) -> tuple[float, float, bool]:
    if not flat.size:
        return 0.0, 0.0, False
    finite = flat == flat
    nan = not bool(finite.all())
    if nan:
        flat = flat[finite]
        if not flat.size:
            return 0.0, 0.0, True
    return float(flat.max()), float(flat.min()), nan


def masked_rows(flat, row: int) -> tuple[float, bool]:
    """(the smallest value of C-contiguous 1-D f32 ``flat`` that is not -inf, 0.0 if none; whether
    one of its rows of ``row`` values is -inf only), for values that are finite or -inf (a
    softmax's mask whose largest value is finite: ``segment._mask_range``)."""
    if not flat.size:
        return 0.0, False
    lo, whole = _scans["masked"](flat.view(np.int32), row)
    return lo, bool(whole)


def masked_rows_numpy(flat, row: int) -> tuple[float, bool]:
    if not flat.size:
        return 0.0, False
    masked = np.isneginf(flat)
    whole = bool(masked.reshape(-1, row).all(axis=-1).any())
    rest = flat[~masked]
    return (float(rest.min()) if rest.size else 0.0), whole


def rows_in_doubt(mean, var) -> bool:
    """Whether any row's layer norm statistics ``mean``, ``var`` (f32, C-contiguous) leave it in
    doubt (``normalization.may_be_constant``)."""
    return bool(_scans["doubt"](mean, var))


def rows_in_doubt_numpy(mean, var) -> bool:
    return bool(may_be_constant(mean, var).any())

