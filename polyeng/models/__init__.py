"""The ONNX models shipped with polyeng, exported by scripts/export_models.py from the PyTorch
modules of ``torch_zoo``: their catalogue (models.json) and their file paths.

Files are found through importlib.resources, next to this module, so an installed wheel serves
them as a source checkout does and no command depends on the checkout.
"""
from __future__ import annotations

import copy
import functools
import json
import pathlib
from importlib import resources

CATALOGUE = "models.json"


@functools.cache
def _catalogue() -> tuple:
    return tuple(json.loads(resources.files(__name__).joinpath(CATALOGUE).read_text()))


def entries() -> list[dict]:
    """One dict per bundled file: file, model, exporter, opset, inputs (name, dtype, shape with
    named dims, and the [low, high) range of integer inputs), outputs and description."""
    return copy.deepcopy(list(_catalogue()))


def entry(file: str) -> dict:
    """The catalogue entry of one bundled file, by its name (``"encoder_opset17.onnx"``; the
    ``.onnx`` may be left out)."""
    name = file if file.endswith(".onnx") else file + ".onnx"
    for found in _catalogue():
        if found["file"] == name:
            return copy.deepcopy(found)
    raise ValueError(f"{file!r} is not a bundled model; bundled: {', '.join(e['file'] for e in _catalogue())}")


def path(file: str) -> pathlib.Path:
    """The path of a bundled model file on disk, by its name as for ``entry``."""
    name = entry(file)["file"]
    found = resources.files(__name__).joinpath(name)
    if not isinstance(found, pathlib.Path):   # a zipped install has no file to hand to onnx
        raise FileNotFoundError(f"{name}: polyeng is installed without its files on disk ({found})")
    return found
