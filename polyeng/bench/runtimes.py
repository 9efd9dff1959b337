"""The runtimes a model run or a benchmark sets up, each refused with a ``BenchError`` the user can
act on: an ONNX file loaded as a polyeng graph, an onnxruntime session on it, torch, the thread
counts of torch and numba, and an output path checked before minutes of work."""
from __future__ import annotations

import contextlib
import os
from importlib import metadata

import numpy as np

import polyeng
from ..engine.environment import variables
from ..engine.threads import libgomp_loaded, note_passive_libgomp
from . import BenchError


def load_graph(path: str, disable_fusions=None):
    """``polyeng.onnx.load(path)``; every way a model can fail to load is a BenchError."""
    try:
        from .. import onnx as polyeng_onnx
        return polyeng_onnx.load(path, disable_fusions=disable_fusions)
    except FileNotFoundError:
        raise BenchError(f"{path}: no such file") from None
    except ImportError as exc:
        hint = "" if "polyeng[onnx]" in str(exc) else " (pip install 'polyeng[onnx]')"
        raise BenchError(f"{exc}{hint}") from None
    except (ValueError, TypeError) as exc:
        text = str(exc)
        raise BenchError(text if text.startswith(path) else f"{path}: {text}") from None


def as_list(result) -> list:
    """A graph's result (one array or a tuple) as a list of numpy arrays."""
    return [polyeng.to_numpy(a) for a in (result if isinstance(result, (tuple, list)) else (result,))]


def onnxruntime_session(path: str, threads: int | None = None):
    """An onnxruntime CPU session on ``path``, or None when onnxruntime is not installed."""
    try:
        import onnxruntime
    except ImportError:
        return None
    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def openvino_runner(path: str, threads: int | None, names: list, arrays: list):
    """A no-argument callable running ``path`` with OpenVINO's CPU plugin in f32 (its default on a CPU
    with bf16 units is bf16: ``INFERENCE_PRECISION_HINT=f32`` makes it a float32 peer), returning
    the outputs as numpy arrays; None when openvino is not installed."""
    try:
        import openvino
    except ImportError:
        return None
    config = {"INFERENCE_PRECISION_HINT": "f32"}
    if threads is not None:
        config["INFERENCE_NUM_THREADS"] = int(threads)
    compiled = openvino.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    feed = dict(zip(names, arrays))
    count = len(compiled.outputs)

    def run():
        request.infer(feed)
        return [np.array(request.get_output_tensor(i).data) for i in range(count)]
    return run


def load_torch(wanted: bool):
    """The torch module, or None when not ``wanted`` or not installed.

    The runners are timed interleaved in one process, so torch's OpenMP workers spinning after its
    call would take the cores from the next runner's (all runners went 1.6-2x slower). torch loads
    its own libgomp, which reads ``OMP_WAIT_POLICY`` once as it loads: a first import here sets it
    to PASSIVE for that moment, unless the user set it, as polyeng's thread policy does for numba."""
    if not wanted:
        return None
    import sys
    first = "torch" not in sys.modules and "OMP_WAIT_POLICY" not in os.environ
    loads_libgomp = first and not libgomp_loaded()
    try:
        with variables({"OMP_WAIT_POLICY": "PASSIVE"} if first else {}):
            import torch
    except ImportError:
        return None
    if loads_libgomp and libgomp_loaded():
        note_passive_libgomp()   # numba's pool may share that libgomp: it does not spin
    return torch


def installed_version(dist: str) -> str:
    try:
        return metadata.version(dist)   # without importing it: torch takes seconds to import
    except metadata.PackageNotFoundError:
        return "not installed"


@contextlib.contextmanager
def thread_settings(threads: int, torch):
    """Sets torch's thread count and polyeng's thread budget (every pool polyeng drives) for the
    run; yields what was set, as text."""
    notes, restore = {}, []
    if torch is not None:
        restore.append((torch.set_num_threads, torch.get_num_threads()))
        torch.set_num_threads(threads)
        notes["torch"] = str(threads)
    restore.append((polyeng.set_num_threads, polyeng.get_num_threads()))
    polyeng.set_num_threads(threads)
    notes["polyeng"] = str(threads)
    try:
        yield notes
    finally:
        for setter, value in restore:
            setter(value)


def thread_policy_text() -> str:
    """polyeng's thread policy in one line, for benchmark headers."""
    from ..engine.threads import policy
    found = policy()
    numba = found["pools"].get("numba")
    pool = f"numba {numba['layer']} layer, {numba['wait']}" if numba else "numba's pool not started"
    return f"budget {found['num_threads']} of {found['cores']} cores; {pool}"


def check_writable(option: str, path: str) -> None:
    """Refuse an output path that cannot be written before the run, not after minutes of it."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise BenchError(f"{option} {path}: is a directory; expected a file name")
    if not os.path.isdir(folder):
        raise BenchError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise BenchError(f"{option} {path}: not writable")
