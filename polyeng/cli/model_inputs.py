"""The inputs of ``polyeng run``: .npy files checked against the model's signature, ``--dim``
sizes, and random inputs drawn from the signature where none are given (ids that index an
embedding stay within its rows)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .console import UsageError

SEED = 0
DEFAULT_DIM = 8      # the size of a named (or unknown) dim that no input file and no --dim sets
SMALL_INT_HIGH = 10  # integer inputs that index no embedding take values in [0, 10)
NPY_MAGIC = b"\x93NUMPY"


def parse_dims(items: list[str], graph, given: dict) -> dict:
    """``--dim NAME=N`` as {name: N}; each name must be a named dim of the inputs, and agree with
    the input files that already fix it."""
    named = {d for v in graph.inputs for d in v.shape if isinstance(d, str)}
    dims = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or not size.strip().isdigit() or int(size) < 1:
            raise UsageError(f"--dim {item}: expected NAME=N with N a positive integer, e.g. --dim batch=4")
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
            with open(file, "rb") as f:
                if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                    raise UsageError(f"{where}: not a .npy file (no numpy header; write it with numpy.save)")
                f.seek(0)
                array = np.load(f, allow_pickle=False)
        except FileNotFoundError:
            raise UsageError(f"{where}: no such file") from None
        except (OSError, ValueError) as exc:   # a folder, a truncated file, an object array
            raise UsageError(f"{where}: cannot read it as a .npy file ({exc})") from None
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


# Nodes between a model input and an embedding that keep the ids' values: the loader's wrap of
# negative ONNX indices, and reshapes.
PASS_IDS = ("onnx.wrap_indices", "onnx.reshape", "onnx.unsqueeze", "onnx.squeeze", "onnx.flatten", "reshape")


def embedding_rows(graph) -> dict:
    """input name -> rows of the embedding tables it indexes directly: its ids must stay below."""
    inputs, constants, rows = {v.name for v in graph.inputs}, graph.constants, {}
    made_by = {out: node for node in graph.nodes for out in node.outputs}
    for node in graph.nodes:
        ids, weight = node.args.get("ids"), node.args.get("weight")
        if node.op != "embedding" or getattr(weight, "name", None) not in constants:
            continue
        source = getattr(ids, "name", None)
        while source in made_by and made_by[source].op in PASS_IDS:
            source = made_by[source].inputs[0]
        if source in inputs:
            found = constants[weight.name].shape[0]
            rows[source] = min(rows.get(source, found), found)
    return rows


@dataclass
class ModelInputs:
    arrays: list       # in the model's input order
    described: list    # name, dtype, shape, source of each
    dims: dict         # named dim -> size


def model_inputs(graph, given: dict, dims: dict, seed: int = SEED) -> ModelInputs:
    """The inputs from files, and random ones drawn from the signature for the rest (fixed seed).

    Integer ids that feed an embedding stay within its rows; other integers are small; a bool
    input (an attention mask) is True at least at the first place of its last axis, so no row is
    masked out whole; floats are standard normal.
    """
    rng, rows = np.random.default_rng(seed), embedding_rows(graph)
    sizes = dict(dims)
    for value in graph.inputs:   # the named dims the files fix
        if value.name in given:
            sizes.update({d: n for d, n in zip(value.shape, given[value.name][0].shape) if isinstance(d, str)})
    arrays, described = [], []
    for value in graph.inputs:
        dtype = np.dtype(value.dtype)
        if value.name in given:
            array, file = given[value.name]
            source = f"from {file}"
        else:
            shape = tuple(d if isinstance(d, int) else sizes.setdefault(d, DEFAULT_DIM) if isinstance(d, str)
                          else DEFAULT_DIM for d in value.shape)
            array, source = _random(rng, value, dtype, shape, rows.get(value.name))
        arrays.append(array)
        described.append({"name": value.name, "dtype": dtype.name, "shape": list(array.shape), "source": source})
    in_order = {d: sizes[d] for v in graph.inputs for d in v.shape if isinstance(d, str)}   # as the model names them
    return ModelInputs(arrays, described, in_order)


def _random(rng, value, dtype, shape, embedding_rows_count):
    if dtype == np.bool_:
        array = rng.random(shape) < 0.5
        if array.size:
            array[..., 0] = True
        return array, "random bools, the first of the last axis True"
    if dtype.kind in "iu":
        high = embedding_rows_count or SMALL_INT_HIGH
        why = "an embedding's rows" if embedding_rows_count else "small integers"
        return rng.integers(0, high, shape).astype(dtype), f"random in [0, {high}) ({why})"
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return rng.standard_normal(shape).astype(np.float32).astype(dtype), "random standard normal"
    raise UsageError(f"input {value.name}: no random values for dtype {dtype.name}; give it with "
                     f"--input {value.name}=FILE.npy")
