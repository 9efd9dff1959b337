"""``polyeng explain``: one op call, written on the command line, and the engine decision it gets."""
from __future__ import annotations

import ast
import re
import sys

import numpy as np

_TENSOR = re.compile(r"^(\d+(?:x\d+)*|scalar)(?::(\w+))?$")


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
        return np.broadcast_to(np.zeros((), as_dtype(match.group(2) or "f32")), shape)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def run(args) -> int:
    import polyeng
    positional, keywords = [], {}
    try:
        for item in args.args:
            name, sep, value = item.partition("=")
            if sep and name.isidentifier():
                keywords[name] = parse_value(value)
            else:
                positional.append(parse_value(item))
        with polyeng.compute_eng(args.engine, fallback=not args.no_fallback), polyeng.fp_math_mode(args.fp_math):
            decision = polyeng.explain(args.op, *positional, **keywords)
    except (ValueError, TypeError, polyeng.EngineError) as exc:
        print(f"polyeng explain: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(decision)
    return 0
