"""Inputs drawn from an ONNX model's signature, so that a model runs with no data at hand: ids that
index an embedding stay within its rows, masks keep a True place, other integers are small, floats
standard normal; inputs given as arrays (``polyeng run --input``) fix the named dims they carry."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..onnx.host_programs import PROGRAM, pass_through_source   # runs without the onnx package
from . import BenchError

SEED = 0
DEFAULT_DIM = 8      # the size of a named (or unknown) dim that no given input and no chosen size sets
SMALL_INT_HIGH = 10  # integer inputs that index no embedding take values in [0, 10)


# Nodes between a model input and an embedding that keep the ids' values: the loader's wrap of
# negative ONNX indices, and reshapes (inside a program of host steps too).
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
        while source in made_by and made_by[source].op in PASS_IDS + (PROGRAM,):
            maker = made_by[source]
            source = maker.inputs[0] if maker.op != PROGRAM else pass_through_source(maker, source, PASS_IDS)
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
    """The ``given`` inputs ({name: (array, file)}), and random ones drawn from the signature for the
    rest (fixed seed); ``dims`` sizes the named dims no given input fixes.

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
    raise BenchError(f"input {value.name}: no random values for dtype {dtype.name}; give it with "
                     f"--input {value.name}=FILE.npy")
