"""``polyeng explain``: one op call, written on the command line, and the engine decision it gets."""
from __future__ import annotations

import ast
import json
import re

import numpy as np

_TENSOR = re.compile(r"^(\d+(?:x\d+)*|scalar)(?::(\w+))?$")
# what a tensor written with a typo looks like: sizes with signs or dots, an empty size, "x" ends
_NEAR_TENSOR = re.compile(r"^[-+.\d]*(?:x[-+.\d]*)+(?::\w*)?$|^[-+.\d]+:\w*$")


def _is_tensor_spec(text: str) -> bool:
    match = _TENSOR.match(text.strip())
    return bool(match) and ("x" in match.group(1) or bool(match.group(2)) or match.group(1) == "scalar")


def parse_value(text: str):
    """A CLI argument value: ``2x3x8x8:f32`` is a tensor (``8:f16`` a 1-D one, ``scalar:f32`` a 0-d
    one), ``[2x3,2x3]`` a list of them, anything else a Python literal (or a plain string).

    Tensors are zero-stride placeholders: explain looks at shapes and dtypes only, so even
    huge shapes cost no memory.
    """
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        items = [t for t in text[1:-1].split(",") if t.strip()]
        if items and all(_is_tensor_spec(t) for t in items):
            return [parse_value(t) for t in items]
    if _is_tensor_spec(text):
        from ..engine.dtypes import as_dtype
        match = _TENSOR.match(text)
        shape = () if match.group(1) == "scalar" else tuple(int(d) for d in match.group(1).split("x"))
        try:
            return np.broadcast_to(np.zeros((), as_dtype(match.group(2) or "f32")), shape)
        except ValueError:   # numpy's "iterator is too large" / "Maximum allowed dimension exceeded"
            raise ValueError(f"{text!r}: shape {shape} has more elements than numpy can index "
                             f"(at most 2**63 - 1 in all)") from None
    if _NEAR_TENSOR.match(text):
        raise ValueError(f"{text!r} is not a tensor: expected SHAPE:DTYPE with sizes of non-negative "
                         f"integers joined by 'x', e.g. 2x3x8x8:f32, 8:f16 or scalar:f32")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _dtype_name(value) -> str | None:
    """``numpy.dtype`` name of a decision's compute dtype, given as a dtype or as a short name."""
    if value is None or value == "":
        return None
    from ..engine.dtypes import as_dtype
    try:
        return str(np.dtype(value)) if not isinstance(value, str) else str(as_dtype(value))
    except TypeError:
        return "float32" if value == "tf32" else str(value)   # tf32 work is stored as float32


def as_json(decision) -> dict:
    """The decision as plain JSON values: the engine, the step and every candidate's verdict."""
    from ..engine.dtypes import short_name
    dtype = _dtype_name(decision.compute_dtype)
    compute_type = getattr(decision, "compute_type", None)
    if compute_type is None:   # a decision that gives the short name as its compute dtype
        compute_type = decision.compute_dtype if isinstance(decision.compute_dtype, str) else short_name(dtype)
    return {"op": decision.op, "engine": decision.engine, "step": decision.step,
            "user_engine": decision.user_engine, "fallback": decision.fallback,
            "fp_math_mode": str(getattr(decision.fp_math_mode, "value", decision.fp_math_mode)),
            "compute_dtype": dtype, "compute_type": compute_type or None,
            "candidates": [{"engine": c.engine, "verdict": c.verdict, "reason": c.reason}
                           for c in decision.candidates]}


def run(args) -> int:
    import polyeng
    from .console import UsageError
    positional, keywords = [], {}
    try:
        for item in args.args:
            name, sep, value = item.partition("=")
            if sep and name.isidentifier():
                keywords[name] = parse_value(value)
            else:
                positional.append(parse_value(item))
        engine = polyeng.get_compute_eng() if args.engine is None else args.engine
        mode = polyeng.get_fp_math_mode() if args.fp_math is None else args.fp_math
        with polyeng.compute_eng(engine, fallback=not args.no_fallback), polyeng.fp_math_mode(mode):
            decision = polyeng.explain(args.op, *positional, **keywords)
    except (ValueError, TypeError, polyeng.EngineError) as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(as_json(decision), indent=2) if args.json else decision)
    return 0
