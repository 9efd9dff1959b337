"""The inputs of ``polyeng run`` given on the command line: ``--input`` .npy files checked against the
model's signature, and ``--dim`` sizes; ``polyeng.bench.inputs`` draws the rest at random."""
from __future__ import annotations

import os
import stat

import numpy as np

from .console import UsageError

NPY_MAGIC = b"\x93NUMPY"


def parse_dims(items: list[str], graph, given: dict) -> dict:
    """``--dim NAME=N`` as {name: N}; each name must be a named dim of the inputs, and agree with
    the input files that already fix it."""
    named = {d for v in graph.inputs for d in v.shape if isinstance(d, str)}
    dims = {}
    for item in items:
        name, sep, size = item.partition("=")
        # ASCII digits only: int() also reads other scripts' digits ("٣" is 3), which no one types on purpose
        if not sep or not (size.isascii() and size.isdigit()) or int(size) < 1:
            raise UsageError(f"--dim {item}: expected NAME=N with N a positive integer, e.g. --dim batch=4")
        if name in dims:
            raise UsageError(f"--dim {item}: {name} is given twice")
        if name not in named:
            known = ", ".join(sorted(named)) or "none (every dim is fixed)"
            raise UsageError(f"--dim {item}: the model's inputs have no dim named {name!r}; named dims: {known}")
        dims[name] = int(size)
    for value in graph.inputs:
        if value.name in given:
            for want, got in zip(value.shape, given[value.name][0].shape):
                if isinstance(want, str) and dims.get(want, got) != got:
                    raise UsageError(f"--dim {want}={dims[want]}: input {value.name} from its file has {want}={got}")
    return dims


def load_inputs(items: list[str], graph) -> dict:
    """``--input NAME=FILE.npy`` as {name: (array, file)}, each checked against the model's input NAME."""
    values = {v.name: v for v in graph.inputs}
    arrays, seen_dims = {}, {}
    for item in items:
        name, sep, file = item.partition("=")
        where = f"--input {item}"
        if not sep or not file:
            raise UsageError(f"{where}: expected NAME=FILE.npy")
        if name not in values:
            raise UsageError(f"{where}: the model has no input named {name!r}; its inputs: {', '.join(values)}")
        if name in arrays:
            raise UsageError(f"{where}: input {name} is given twice")
        try:
            if not stat.S_ISREG(os.stat(file).st_mode):   # a FIFO would block, /dev/zero never end
                raise UsageError(f"{where}: not a regular file")
            with open(file, "rb") as f:
                if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                    raise UsageError(f"{where}: not a .npy file (no numpy header; write it with numpy.save)")
                f.seek(0)
                array = np.load(f, allow_pickle=False)
        except FileNotFoundError:
            raise UsageError(f"{where}: no such file") from None
        except (OSError, ValueError) as exc:   # a folder, a truncated file, an object array
            raise UsageError(f"{where}: cannot read it as a .npy file ({exc})") from None
        if not array.dtype.isnative:   # written on a machine of the other byte order: the same numbers
            array = array.astype(array.dtype.newbyteorder("="))
        check_input(values[name], array, where, seen_dims)
        arrays[name] = array, file
    return arrays


def check_input(value, array, where: str, seen: dict) -> None:
    """The model's rules for one input (dtype; each fixed dim; a named dim the same size in every
    input), said in the words of the command line before anything runs."""
    shape, want = tuple(array.shape), value.shape
    described = "[" + ", ".join("?" if d is None else str(d) for d in want) + "]"
    if array.dtype != value.dtype:
        raise UsageError(f"{where}: input {value.name} has dtype {array.dtype.name}; the model takes "
                         f"{np.dtype(value.dtype).name}{described}")
    if len(shape) != len(want) or any(isinstance(w, int) and w != g for w, g in zip(want, shape)):
        raise UsageError(f"{where}: input {value.name} has shape {list(shape)}; the model takes {described}")
    for dim, size in zip(want, shape):
        if isinstance(dim, str):
            first = seen.setdefault(dim, (size, value.name))
            if first[0] != size:
                raise UsageError(f"{where}: input {value.name} has {dim}={size}, but input {first[1]} has "
                                 f"{dim}={first[0]}")
