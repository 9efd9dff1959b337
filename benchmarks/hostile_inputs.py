"""Hostile and broken inputs to polyeng, each tried in its own process, with a tally of how they end.

Run: ``.venv/bin/python benchmarks/hostile_inputs.py [--only onnx|graph|cli] [--jobs N] [--verbose] [-k TEXT]``

The same cases every run: small ONNX models built with ``onnx.helper`` for ``polyeng.onnx.load``, rewritten
``.polyeng`` files for ``polyeng.graph.load`` and ``python -m polyeng run`` command lines, each naming the
culprit (node, attribute, tensor, input or JSON key) its error should mention. Each runs in a subprocess
(3 GiB of address space, 60 s) and is: crashed (a signal, the timeout, MemoryError or RecursionError);
silently accepted (it loaded, and an ONNX model ran on zeros under ``--engine``; the command exited 0);
clear (ValueError, TypeError or FileNotFoundError naming the culprit as a word; for the command, status 2
and one ``polyeng ...:`` line without a traceback); or unclear (anything else). Valid inputs among them are
sanity controls, counted apart. ``--verbose`` prints each case that is not clear, with its message.
"""
import argparse
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections import Counter, defaultdict, namedtuple
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TIMEOUT_S = 60
MEMORY_LIMIT = 3 << 30
F, I64 = TensorProto.FLOAT, TensorProto.INT64
# family: onnx, graph or cli; cls: its class of fault; culprit: None for a valid input (a control)
Case = namedtuple("Case", "family cls name culprit spec")

# --- the child: sets the limit, then loads (and runs) one input, or runs the command line ----------
CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
if sys.argv[2] == "cli":
    import runpy
    sys.argv = ["polyeng"] + sys.argv[3:]
    runpy.run_module("polyeng", run_name="__main__", alter_sys=True)
    raise SystemExit(0)
mode, spec, stage, out = sys.argv[2], json.loads(sys.argv[3]), "load", {}
try:
    import numpy as np, polyeng
    if mode == "onnx":
        import onnx, polyeng.onnx
        path, given = spec.get("path"), spec.get("given")
        model = {"bytes": lambda: open(path, "rb").read(), "proto": lambda: onnx.load(path, load_external_data=False),
                 "value": lambda: spec["value"]}.get(given, lambda: path)()
        graph = polyeng.onnx.load(model, max_bytes=spec.get("max_bytes"))
    else:
        import polyeng.graph
        graph = polyeng.graph.load(spec["path"])
    stage = "run"
    shapes = [([d if isinstance(d, int) else 1 for d in v.shape], np.dtype(v.dtype)) for v in graph.inputs]
    if sum(int(np.prod(s, dtype=object)) * t.itemsize for s, t in shapes) > 1 << 28:
        out = dict(message="loaded; its inputs are too large to run on zeros")
    else:
        with polyeng.compute_eng(spec["engine"]):
            graph(*[np.zeros(s, t) for s, t in shapes])
    stage = "ok"
except (MemoryError, RecursionError) as exc:
    out = dict(crash=True, type=type(exc).__name__, message=str(exc)[:3000])
except BaseException as exc:
    out = dict(type=f"{type(exc).__module__}.{type(exc).__qualname__}".replace("builtins.", ""),
               expected=isinstance(exc, (ValueError, TypeError, FileNotFoundError)), message=str(exc)[:3000])
print("OUTCOME " + json.dumps(dict(out, stage=stage)), flush=True)
"""


def run_case(case: Case, engine: str) -> dict:
    """What became of the case: crash, stage (load, run or ok), type, expected, message."""
    args = case.spec["args"] if case.family == "cli" else [json.dumps(dict(case.spec, engine=engine))]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **case.spec.get("env", {}))
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(MEMORY_LIMIT), case.family, *args], text=True,
                              capture_output=True, errors="replace", timeout=TIMEOUT_S, cwd=case.spec["cwd"], env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return dict(crash=True, type="timeout", message=f"still running after {TIMEOUT_S} s")
    if proc.returncode < 0:
        return dict(crash=True, type=f"signal {-proc.returncode}", message=proc.stderr[-1500:])
    if case.family == "cli":
        return cli_outcome(proc)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("OUTCOME ")]
    if not lines:
        return dict(crash=True, type=f"exit {proc.returncode}, no outcome", message=proc.stderr[-1500:])
    return json.loads(lines[-1][len("OUTCOME "):])


def cli_outcome(proc) -> dict:
    err = proc.stderr.strip()
    if "Traceback" in err:
        crash = re.match(r"(\w+\.)*(MemoryError|RecursionError)\b", err.splitlines()[-1]) is not None
        return dict(stage="load", crash=crash, type="traceback", message=err[-1500:])
    if proc.returncode == 0:
        return dict(stage="ok")
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("polyeng: warning:")]
    one_line = len(lines) == 1 and re.match(r"polyeng( \w+)?: ", lines[0]) is not None
    return dict(stage="load", type=f"exit {proc.returncode}", expected=proc.returncode == 2 and one_line, message=err)


def verdict(case: Case, result: dict, root: str) -> str:
    accepted = result.get("stage") == "ok" or (case.family == "graph" and result.get("stage") == "run")
    if case.culprit is None:
        return "control ok" if accepted and not result.get("crash") else "control failed"
    if result.get("crash"):
        return "crashed"
    if accepted:
        return "silently accepted"
    message = result.get("message", "").replace(root, "<tmp>")   # the random folder's name names nothing
    named = re.search(rf"(?<!\w){re.escape(case.culprit)}(?!\w)", message)
    return "clear" if result.get("expected") and named else "unclear"


# --- ONNX models: the builders, then the cases by class -------------------------------------------
def N(op, inputs, outputs, name, **attrs):
    """A node; a single input or output may be given as a string."""
    return helper.make_node(op, *[[v] if isinstance(v, str) else v for v in (inputs, outputs)], name=name, **attrs)


def mk(nodes, inputs=(("feats", F, [2, 3]),), outputs=(("y", F, None),), inits=(), opset=17):
    graph = helper.make_graph(list(nodes), "probe", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def arr(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype), name)


def tensor(name, dims, dtype=F, raw=None, external=None, **fields):
    """A TensorProto; ``external``: the {key: value} entries of data kept in an external file."""
    entries = [onnx.StringStringEntryProto(key=k, value=str(v)) for k, v in (external or {}).items()]
    return TensorProto(name=name, data_type=dtype, dims=dims, raw_data=raw, external_data=entries, **fields,
                       data_location=TensorProto.DEFAULT if external is None else TensorProto.EXTERNAL)


def one(op, name, ins="feats", shape=(2, 3), inits=(), opset=17, **attrs):
    """y = op(feats, other inputs) with ``inits`` among them."""
    return mk([N(op, ins, "y", name, **attrs)], inputs=[("feats", F, list(shape))], inits=inits, opset=opset)


i64 = partial(arr, dtype=np.int64)
relu = partial(one, "Relu", "act")
pool = partial(one, "MaxPool", "pool", shape=(1, 1, 4, 4))


def add_w(weight, dtype=F):
    return mk([N("Add", ["feats", "weight"], "y", "adder")], inputs=[("feats", dtype, [3, 4])], inits=[weight])


def external(location=None, **entries):
    """y = feats + weight, with weight's 48 bytes in a file beside the model."""
    return add_w(tensor("weight", [3, 4], external=({"location": location} if location is not None else {}) | entries))


def const(value=None, **attrs):
    return mk([N("Constant", [], "y", "const", **({"value": value} if value else {}), **attrs)], inputs=[])


def folded(op, name, *inits, **attrs):
    """y = feats * 0 + float(op(constants)): the op folds at load time."""
    return mk([N(op, [t.name for t in inits], "c", name, **attrs), N("Cast", "c", "cf", "tofloat", to=F),
               N("Mul", ["feats", "zero"], "z", "times0"), N("Add", ["z", "cf"], "y", "plus")],
              inputs=[("feats", F, [1])], inits=[*inits, arr("zero", [0.0])])


def changed(model, elem_type=None, dim0=None, type_proto=None, attr=None, init=None, opsets=None, ir_version=None):
    """``model`` with its input's elem_type, first dim or type, an attribute more on its first node, an
    initializer more, or its opset imports ([(domain, version)]) or ir_version replaced."""
    t = model.graph.input[0].type
    if elem_type is not None:
        t.tensor_type.elem_type = elem_type
    if dim0 is not None:
        t.tensor_type.shape.dim[0].dim_value = dim0
    if type_proto is not None:
        t.CopyFrom(type_proto)
    model.graph.node[0].attribute.extend([attr] if attr else [])
    model.graph.initializer.extend([init] if init else [])
    if opsets is not None:
        del model.opset_import[:]
        model.opset_import.extend(helper.make_opsetid(domain, version) for domain, version in opsets)
    model.ir_version = ir_version or model.ir_version
    return model


def counting(limit, cast=False, dtype=np.int64):
    nodes = [N("Range", ["r0", "r1", "r2"], "r" if cast else "y", "count")]
    nodes += [N("Cast", "r", "y", "cast", to=I64)] if cast else []
    return mk(nodes, [], [("y", 0, None)], [arr("r0", 0, dtype), arr("r1", limit, dtype), arr("r2", 1, dtype)])


def put(d: Path, data, name="m.onnx", **spec) -> dict:
    """The spec of a case whose model is ``data`` written to d/name (``given``: how it is passed to load)."""
    (d / name).write_bytes(data if isinstance(data, bytes) else data.SerializeToString())
    return dict(spec, path=str(d / name))


SUB = helper.make_graph([N("Relu", "a", "b", "inner")], "body", [helper.make_tensor_value_info("a", F, [1])],
                        [helper.make_tensor_value_info("b", F, [1])])
CHAIN = ["feats", *(f"h{i}" for i in range(2999)), "y"]
RESIZE = (("feats", "", "scales"), (1, 1, 2, 2), [arr("scales", [1, 1, 2, 2])])
LSTM = dict(ins=("feats", "W", "R"), shape=(2, 1, 3), inits=[arr("W", [[[1] * 3] * 16]), arr("R", [[[1] * 4] * 16])])
FILL = N("ConstantOfShape", "s", "y", "fill", value=helper.make_tensor("v", F, [1], [1.0]))
X6, TABLE, ONES = arr("x", range(6)), i64("table", [10, 20, 30]), np.ones((3, 4))
POOL = [("kernel_shape", [2.5, 2.5]), ("kernel_shape", "22"), ("kernel_shape", [-2, -2]), ("kernel_shape", [2]),
        ("kernel_shape", [9, 9]), ("strides", [0, 0]), ("dilations", [0, 0]), ("pads", [1]), ("auto_pad", "BOGUS")]
ONE_ATTR = [   # (op, node name, attribute, value)
    ("Softmax", "soft", "axis", 1.5), ("Softmax", "soft", "axis", 5), ("Cast", "cast", "to", 999),
    ("Cast", "cast", "to", 8), ("Transpose", "tr", "perm", [0, 0]), ("Transpose", "tr", "perm", [0, 1, 2]),
    ("Flatten", "flat", "axis", 9), ("ReduceMean", "mean", "keepdims", 3), ("Unsqueeze", "unsq", "axes", [0]),
    ("Relu", "act", "frobnicate", 1)]
TENSORS = [   # (what is wrong with initializer 'weight' of y = feats + weight, the tensor)
    ("dims [-1, 4] and no data", tensor("weight", [-1, 4])),
    ("raw_data of 40 bytes for float32 [3, 4]", tensor("weight", [3, 4], raw=bytes(40))),
    ("float_data of 5 values for [3, 4]", tensor("weight", [3, 4], float_data=[1.0] * 5)),
    *[(f"data_type {t}", tensor("weight", [3, 4], t, raw=bytes(48))) for t in (999, 0)],
    ("of strings", tensor("weight", [3, 4], TensorProto.STRING, string_data=[b"a"] * 12)),
    ("with raw_data and float_data", tensor("weight", [3, 4], raw=bytes(48), float_data=[1.0] * 12)),
    ("bfloat16 of 7 bytes", tensor("weight", [2, 2], TensorProto.BFLOAT16, raw=bytes(7))),
    ("claiming [2**31, 2**31]", tensor("weight", [1 << 31, 1 << 31])),
    ("external, without entries", tensor("weight", [3, 4], external={}))]
# Each case: (name, culprit or None for a control, the model, or build(d) -> a spec: path, given, max_bytes)
ONNX_CASES = {
    "structure": [
        ("Relu (control)", None, relu()),
        ("3000-node chain (control)", None, mk(N("Relu", CHAIN[i], CHAIN[i + 1], f"r{i}") for i in range(3000))),
        ("cycle", "first", mk([N("Relu", "b", "a", "first"), N("Relu", "a", "b", "then"), N("Neg", "b", "y", "last")])),
        ("undefined input", "ghost", mk([N("Add", ["feats", "ghost"], "y", "adder")])),
        ("out-of-order nodes", "late", mk([N("Relu", "h", "y", "late"), N("Relu", "feats", "h", "early")])),
        ("two nodes write one output", "h", mk([N("Relu", "feats", "h", "one"), N("Neg", "feats", "h", "two"),
                                                N("Relu", "h", "y", "act")])),
        ("duplicate graph input names", "feats", mk(relu().graph.node, [("feats", F, [2, 3]), ("feats", F, [4])])),
        ("node output reuses an input's name", "feats", mk([N("Relu", "feats", "feats", "clobber"),
                                                             N("Neg", "feats", "y", "neg")])),
        ("initializer shadows an input of another shape", "feats", changed(relu(), init=arr("feats", [1.0]))),
        ("graph output never computed", "nowhere", mk(relu().graph.node, outputs=[("nowhere", F, None)])),
        ("node with no outputs", "mute", mk([N("Relu", "feats", [], "mute"), *relu().graph.node])),
        ("graph input without a type", "feats", changed(relu(), type_proto=onnx.TypeProto())),
        *[(f"graph input of elem_type {t}", "feats", changed(relu(), elem_type=t)) for t in (0, 999, 8)],
        ("unknown op", "frob", one("Frobnicate", "frob")),
        ("too many inputs", "act", one("Relu", "act", ("feats", "feats"))),
        ("Add of shapes that do not broadcast", "adder", add_w(arr("weight", [1.0, 2.0, 3.0]))),
        ("If with subgraphs", "branch", mk([N("If", "cond", "y", "branch", then_branch=SUB, else_branch=SUB)],
                                           [("cond", TensorProto.BOOL, [])])),
    ],
    "attributes": [
        ("MaxPool (control)", None, pool(kernel_shape=[2, 2])),
        ("MaxPool kernel_shape missing", "kernel_shape", pool()),
        *[(f"MaxPool {k}={v!r}", k, pool(**{"kernel_shape": [2, 2], k: v})) for k, v in POOL],
        ("AveragePool ceil_mode=5", "ceil_mode", one("AveragePool", "pool", shape=(1, 1, 4, 4), kernel_shape=[2, 2],
                                                  ceil_mode=5)),
        *[(f"{op} {k}={v!r}", k, one(op, n, **{k: v})) for op, n, k, v in ONE_ATTR],
        ("Relu with a graph attribute", "body", relu(body=SUB)),
        ("Softmax axis given twice", "axis", changed(one("Softmax", "soft", axis=1),
                                                     attr=helper.make_attribute("axis", 0))),
        ("Concat axis missing", "axis", one("Concat", "cat", ("feats", "feats"))),
        ("Cast to missing", "to", one("Cast", "cast")),
        ("Gemm transA=2", "transA", one("Gemm", "gemm", ("feats", "w"), inits=[arr("w", ONES)], transA=2)),
        ("Gather axis=3 on rank 2", "axis", one("Gather", "gather", ("feats", "i"), inits=[i64("i", [0])], axis=3)),
        ("Gelu approximate='bogus'", "approximate", one("Gelu", "gelu", approximate="bogus", opset=20)),
        ("Squeeze axes attribute at opset 17", "axes", one("Squeeze", "sq", shape=(1, 3), axes=[0])),
        ("Resize mode='warp'", "mode", one("Resize", "resize", *RESIZE, mode="warp")),
        ("LSTM hidden_size missing", "hidden_size", one("LSTM", "lstm", **LSTM)),
        ("LSTM direction='sideways'", "direction", one("LSTM", "lstm", hidden_size=4, direction="sideways", **LSTM)),
        ("Constant with no value", "const", const()),
        ("Constant with two values", "const", const(value_float=1.0, value_int=2)),
    ],
    "tensors": [
        ("an initializer (control)", None, add_w(arr("weight", ONES))),
        *[(f"initializer {what}", "weight", add_w(t)) for what, t in TENSORS],
        ("two initializers of one name", "weight", changed(add_w(arr("weight", ONES)), init=arr("weight", [1.0]))),
        ("Constant of raw_data 40 bytes for [3, 4]", "const", const(tensor("v", [3, 4], raw=bytes(40)))),
        ("input dim -5", "feats", changed(relu(), dim0=-5)),
        ("input dim 2**62", "feats", changed(relu(), dim0=1 << 62)),
    ],
    "folding": [
        ("Gather on constants in range (control)", None, folded("Gather", "gather", TABLE, i64("i", [2]))),
        *[(f"Gather index {i!r} on constants", "gather", folded("Gather", "gather", TABLE, arr("i", [i], type(i))))
          for i in (5, -10)],
        ("integer Div by zero on constants", "div", folded("Div", "div", i64("a", [1, 2, 3]), i64("b", [0, 1, 1]))),
        *[(f"Reshape [6] to {s} on constants", "reshape", folded("Reshape", "reshape", X6, i64("s", s)))
          for s in ([4, 4], [-1, -1], [-2, 3])],
        ("Reshape an input to [4, 4]", "reshape", one("Reshape", "reshape", ("feats", "s"), inits=[i64("s", [4, 4])])),
        ("Slice step 0 on constants", "slice", folded("Slice", "slice", X6, i64("start", [0]), i64("end", [6]),
                                                      i64("axis", [0]), i64("step", [0]))),
        ("Unsqueeze axis 9 on constants", "unsqueeze", folded("Unsqueeze", "unsqueeze", X6, i64("a", [9]))),
        ("Concat of mismatched constants", "concat", folded("Concat", "concat", X6, arr("b", ONES), axis=0)),
        ("Range step 0", "count", folded("Range", "count", i64("r0", 0), i64("r1", 5), i64("r2", 0))),
    ],
    "opsets": [
        ("opset 13 (control)", None, changed(relu(), opsets=[("", 13)])),
        ("newest opset (control)", None, changed(relu(), opsets=[("", onnx.defs.onnx_opset_version())])),
        ("no default opset", "opset", changed(relu(), opsets=[("com.example", 1)])),
        ("no opset at all", "opset", changed(relu(), opsets=[])),
        *[(f"opset {v}", f"opset {v}", changed(relu(), opsets=[("", v)])) for v in (7, 99, -1)],
        ("default opset imported twice", "opset", changed(relu(), opsets=[("", 13), ("", 17)])),
        ("ir_version 99", "ir_version", changed(relu(), ir_version=99)),
    ],
    "not-a-model": [
        ("bytes that are text", "bytes", lambda d: put(d, b"hello, world\n" * 20, given="bytes")),
        ("empty bytes", "bytes", lambda d: put(d, b"", given="bytes")),
        ("an empty ModelProto", "ModelProto", lambda d: put(d, b"", given="proto")),
        ("random bytes in a file", "m.onnx", lambda d: put(d, np.random.default_rng(0).bytes(4096))),
        ("empty file", "m.onnx", lambda d: put(d, b"")),
        ("truncated model file", "m.onnx", lambda d: put(d, add_w(arr("weight", ONES)).SerializeToString()[:200])),
        ("a directory", "m.onnx", lambda d: (d / "m.onnx").mkdir() or {"path": str(d / "m.onnx")}),
        ("a missing path", "m.onnx", lambda d: {"path": str(d / "m.onnx")}),
        ("a FIFO", "m.onnx", lambda d: os.mkfifo(d / "m.onnx") or {"path": str(d / "m.onnx")}),
        ("/dev/zero", "/dev/zero", lambda d: {"path": "/dev/zero"}),
        ("model=123", "model", lambda d: {"given": "value", "value": 123}),
    ],
    "external-data": [
        ("external data in the folder (control)", None, external("weights.bin")),
        ("bytes naming external data", "weight", lambda d: put(d, external("weights.bin"), given="bytes")),
        ("a ModelProto naming external data", "weight", lambda d: put(d, external("weights.bin"), given="proto")),
        *[(f"location {where!r}", "weight", external(where))
          for where in ("../outside.bin", "/etc/passwd", ".", "", "w\x00.bin", "short.bin")],
        ("a symlink out", "weight", lambda d: os.symlink("../outside.bin", d / "ln") or put(d, external("ln"))),
        ("a FIFO", "weight", lambda d: os.mkfifo(d / "fifo") or put(d, external("fifo"))),
        *[(f"{k} {v!r}", "weight", external("weights.bin", **{k: v}))
          for k, v in (("offset", 1 << 40), ("offset", -8), ("length", 4))],
        ("Constant in ../outside.bin", "const", const(tensor("v", [3, 4], external=dict(location="../outside.bin")))),
    ],
    "memory-bombs": [
        ("ConstantOfShape [2**16, 2**16]", "fill", mk([FILL], [], inits=[i64("s", [1 << 16, 1 << 16])])),
        ("ConstantOfShape of Shape of a [2**16, 2**16] input", "fill",
         mk([N("Shape", "feats", "s", "shape"), FILL], [("feats", F, [1 << 16, 1 << 16])])),
        ("ConstantOfShape of a folded Concat", "fill", mk([N("Concat", ["a", "a"], "s", "cat", axis=0), FILL], [],
                                                          inits=[i64("a", [1 << 16])])),
        ("Range 2**40", "count", counting(1 << 40)),
        ("Range 1e6 over max_bytes=1000", "count", lambda d: put(d, counting(1_000_000), max_bytes=1000)),
        ("Range(0, 8e6) feeding Cast (control: 32 MB)", None, counting(8e6, True, np.float32)),
        ("Expand to 2**40", "expand", one("Expand", "expand", ("feats", "s"), (1,), [i64("s", [1 << 20] * 2)])),
        ("initializer claiming 4 TiB", "huge", mk([N("Identity", "huge", "y", "pass")], [], [("y", F, None)],
                                                  [tensor("huge", [1 << 40])])),
        ("Constant claiming 4 TiB", "const", const(tensor("v", [1 << 40]))),
        ("Resize by 1e5", "resize", one("Resize", "resize", *RESIZE[:2], [arr("scales", [1, 1] + [1e5] * 2)])),
    ],
}


def onnx_cases(tmp: Path):
    (tmp / "onnx").mkdir()
    (tmp / "onnx" / "outside.bin").write_bytes(bytes(48))
    for cls, cases in ONNX_CASES.items():
        for name, culprit, model in cases:
            d = Path(tempfile.mkdtemp(dir=tmp / "onnx"))
            (d / "weights.bin").write_bytes(np.arange(12, dtype=np.float32).tobytes())
            (d / "short.bin").write_bytes(bytes(40))
            spec = model(d) if callable(model) else put(d, model, "model.onnx")
            yield Case("onnx", cls, name, culprit, dict(spec, cwd=str(d)))


# --- graph files: the saved file with graph.json or its member changed, then whole archives -------
def edit(path, value):
    """A change setting graph.json's ``path`` (keys and indices) to ``value``; DROP deletes it."""
    def change(doc, members):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        if value is DROP:
            del doc[last]
        elif isinstance(doc, list) and last == len(doc):
            doc.append(value)
        else:
            doc[last] = value
    return change


def npy(array=None, header: bytes | None = None):
    """An .npy file of ``array``, or of ``header`` (padded) and 48 bytes of data."""
    if header is None:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=True)
        return buffer.getvalue()
    header = header.ljust(max(127, len(header) + 1)) + b"\n"
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + bytes(48)


def member(data):
    return lambda doc, members: members.update({"constants/0.npy": data(members["constants/0.npy"])})


DROP = object()
KEYS = "format version inputs input_names input_structure types constants nodes output_structure".split()
C0, N0, N1, N2 = ("constants", 0), ("nodes", 0), ("nodes", 1), ("nodes", 2)
# n0 = matmul(a=x, b=W) -> v0, n1 = relu(x=v0) -> v1, n2 = add(a=v1, b=1.0) -> v2
A0, A1, B2 = (*N0, "args", "dict", "a"), (*N1, "args", "dict", "x"), (*N2, "args", "dict", "b")
OP, OUT = (*N0, "op"), (*N0, "out")
WRONG = [("format", 1), ("inputs", 3), ("input_names", "x"), ("input_structure", [{"tuple": []}]), ("types", []),
         ("constants", {}), ("nodes", "n"), ("output_structure", 3.5), ("name", [1]), ("leading_free", "no")]
TUPLES = json.loads('{"tuple": [' * 25 + '{"ref": "x"}' + "]}" * 25)
EDITS = {   # class: [(path in graph.json, new value or DROP, culprit)]; the file has input x, constant W, nodes n0-n2
    "missing-keys": [((key,), DROP, key) for key in KEYS],
    "wrong-types": [((key,), v, key) for key, v in WRONG] + [(("types", "v0"), v, "v0") for v in ("f4", ["evil", [2]])],
    "versions": [(("version",), v, "version") for v in (1.0, "1", 0, 999, 1 << 70)],
    "entries": [
        (("extra",), [1, 2], None), (("inputs", 0), "x", "input 0"), (("inputs", 0, "dtype"), DROP, "dtype"),
        (("inputs", 0, "dtype"), "float99", "float99"), (("inputs", 0, "shape"), "2,4", "shape"),
        (("input_names",), ["ghost"], "ghost"), (("inputs", 1), {"name": "x", "dtype": "float32", "shape": [2]}, "x"),
        ((*C0, "file"), 5, "file"), ((*C0, "file"), "graph.json", "W"), ((*C0, "name"), "x", "x"),
        ((*C0, "dtype"), "complex512", "complex512"), ((*C0, "shape"), [-4, 3], "shape"), ((*C0, "shape"), [3, 4], "W"),
        ((*C0, "shape"), [2.5, 3], "shape"), ((*C0, "shape"), [1 << 40] * 2, "W"),
        (("constants", 1), dict(name="twin", file="constants/0.npy", dtype="float32", shape=[4, 3]), "twin")],
    "nodes": [
        (OP, DROP, "op"), (OP, 5, "op"), *[(OP, op, op) for op in ("rm_rf", "np.save", "os.system")],
        ((*N0, "args"), [1, 2], "args"), ((*N0, "args"), {"evil": 1}, "evil"), (B2, {"dtype": "evil"}, "evil"),
        (B2, {"slice": [0] * 9}, "slice"), (A0, TUPLES, "n0"), ((*N0, "outputs"), "v0", "outputs"),
        ((*N0, "outputs"), [], "outputs"), ((*N0, "types"), DROP, "types"), ((*N0, "amp"), {"foo": 1}, "amp"),
        *[((*N0, "meta"), v, "meta") for v in ([1], {"evil": {}})], *[(OUT, v, "out") for v in (5, -1, "0", True)]],
    "refs": [
        (A1, {"ref": "ghost"}, "ghost"), (A0, {"ref": "v2"}, "v2"), (A0, {"ref": "v0"}, "v0"), (A1, {"ref": 5}, "n1"),
        ((*N1, "outputs"), ["v0"], "v0"), ((*N0, "outputs"), ["x"], "x"),
        (("output_structure",), {"ref": "nowhere"}, "nowhere"),
        (("input_structure",), [{"tuple": [{"ref": "ghost"}]}, {"dict": {}}], "ghost")],
}
HEADER = b"{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"
# class: [(name, culprit or None for a control, change(graph.json's document, the other members))]
GRAPH_CASES = {cls: [(" ".join(map(str, path)) + (" dropped" if value is DROP else f" = {value!r}"[:60]), culprit,
                      edit(path, value)) for path, value, culprit in edits] for cls, edits in EDITS.items()}
GRAPH_CASES["entries"].append(("the saved file (control)", None, lambda doc, members: None))
GRAPH_CASES["refs"].append(("nodes out of order", "v1", lambda doc, members: doc["nodes"].reverse()))
GRAPH_CASES["members"] = [
    ("missing member", "W", lambda doc, members: members.clear()),
    ("member 'hello'", "W", member(lambda old: b"hello")),
    ("pickled object array", "W", member(lambda old: npy(np.full((4, 3), None, dtype=object)))),
    ("truncated member", "W", member(lambda old: old[:100])),
    ("npy header claiming 2**40 elements", "W", member(lambda old: npy(header=HEADER % b"(1099511627776,)"))),
    ("npy header of 60000 bytes", "W", member(lambda old: npy(header=(HEADER % b"(4, 3)").ljust(60000)))),
    ("npy header a call, not a dict", "W", member(lambda old: npy(header=b"__import__('os').getcwd()"))),
    ("member of 64 MiB for 48 bytes", "W", member(lambda old: old + bytes(64 << 20))),
]


def zipped(path: Path, members: dict, compression=zipfile.ZIP_DEFLATED) -> Path:
    """``members`` added to the archive at ``path``; an int stands for that many zero bytes, 16 MiB at a time."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a", compression=compression) as archive:
        warnings.simplefilter("ignore")   # "Duplicate name": on purpose
        for name, data in members.items():
            with archive.open(name, "w", force_zip64=isinstance(data, int)) as f:
                for _ in range(data >> 24 if isinstance(data, int) else 0):
                    f.write(bytes(1 << 24))
                f.write(b"" if isinstance(data, int) else data)
    return path


def lying_size(path: Path, doc: bytes) -> Path:
    """The constant's member inflates to 256 MiB while the zip's directory says 176 bytes."""
    data = bytearray(zipped(path, {"graph.json": doc, "constants/0.npy": 256 << 20}).read_bytes())
    struct.pack_into("<I", data, data.rfind(b"PK\x01\x02") + 24, 176)   # the last member's directory entry
    path.write_bytes(bytes(data))
    return path


def archive_cases(good: dict):
    """(class, name, culprit, build(path) -> the path to load): faults of the archive, or of graph.json as text."""
    doc = good["graph.json"]
    deep = b'{"format": "polyeng.graph", "version": 1, "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    nan = doc.replace(b'"nodes": [', b'"nodes": NaN, "z": [')
    return [
        ("file", "not a zip", "g.polyeng", lambda p: p.write_bytes(b"hello") and p),
        ("file", "empty file", "g.polyeng", lambda p: p.touch() or p),
        ("file", "a directory", "g.polyeng", lambda p: p.mkdir() or p),
        ("file", "a missing path", "g.polyeng", lambda p: p),
        ("file", "a FIFO", "g.polyeng", lambda p: os.mkfifo(p) or p),
        ("file", "/dev/zero", "/dev/zero", lambda p: Path("/dev/zero")),
        ("file", "zip without graph.json", "graph.json", lambda p: zipped(p, {"other.txt": b"x"})),
        ("file", "graph.json not JSON", "graph.json", lambda p: zipped(p, {"graph.json": b"{nope"})),
        ("file", "'nodes' NaN", "nodes", lambda p: zipped(p, good | {"graph.json": nan})),
        ("file", "two graph.json members", "graph.json", lambda p: zipped(zipped(p, good), {"graph.json": b"[]"})),
        ("nesting", "100000 nested lists", "graph.json", lambda p: zipped(p, {"graph.json": deep})),
        ("zip-bombs", "graph.json of 300 MiB of zeros", "graph.json", lambda p: zipped(p, {"graph.json": 300 << 20})),
        ("zip-bombs", "member inflating to 1 GiB", "W", lambda p: zipped(p, good | {"constants/0.npy": 1 << 30})),
        ("zip-bombs", "member of 256 MiB, its size stated as 176", "W", lambda p: lying_size(p, doc)),
    ]


def graph_cases(tmp: Path):
    import polyeng
    from polyeng.graph import trace
    W = np.arange(12, dtype=np.float32).reshape(4, 3)   # noqa: N806  (the constant's name in the file)
    (tmp / "graph").mkdir()
    good = tmp / "graph" / "good.polyeng"
    trace(lambda x: polyeng.relu(polyeng.matmul(x, W)) + 1.0, np.ones((2, 4), np.float32)).save(good)
    with zipfile.ZipFile(good) as archive:
        saved = {n: archive.read(n) for n in archive.namelist()}
    for cls, cases in GRAPH_CASES.items():
        for name, culprit, change in cases:
            d, members = Path(tempfile.mkdtemp(dir=tmp / "graph")), dict(saved)
            document = json.loads(members.pop("graph.json"))
            change(document, members)
            path = zipped(d / "g.polyeng", {"graph.json": json.dumps(document).encode(), **members}, zipfile.ZIP_STORED)
            yield Case("graph", cls, name, culprit, {"path": str(path), "cwd": str(d)})
    for cls, name, culprit, build in archive_cases(saved):
        d = Path(tempfile.mkdtemp(dir=tmp / "graph"))
        yield Case("graph", cls, name, culprit, {"path": str(build(d / "g.polyeng")), "cwd": str(d)})


# --- the command line: run in the folder of its files ----------------------------------------------
def cli_cases(tmp: Path):
    import polyeng
    encoder = str(Path(polyeng.__file__).parent / "models" / "encoder_opset17.onnx")
    d = tmp / "cli"
    d.mkdir()
    os.mkfifo(d / "pipe")
    ids = np.arange(16, dtype=np.int64).reshape(2, 8) % 50
    for name, array in {"ids": ids, "big": ids.astype(">i8"), "float": ids.astype(np.float32), "huge_ids": ids + 99999,
                        "object": ids.astype(object)}.items():
        np.save(d / f"{name}.npy", array, allow_pickle=True)
    (d / "text.npy").write_text("not an array\n")
    (d / "text.onnx").write_text("not a model\n")
    run = ["run", encoder, "--repeat", "1"]
    cases = [   # (class, name, culprit or None for a control, arguments[, environment])
        ("files", "the encoder (control)", None, run),
        ("files", "a big-endian int64 input (control)", None, run + ["--input", "input_ids=big.npy"]),
        *[("files", f"model {path}", path, ["run", path, "--repeat", "1"])
          for path in ("pipe", "/dev/zero", "text.onnx")],
        *[("files", f"--input input_ids={path}", path, run + ["--input", f"input_ids={path}"])
          for path in ("pipe", "/dev/zero", "nosuch.npy", "text.npy")],
        *[("inputs", f"--input input_ids={path}", "input_ids", run + ["--input", f"input_ids={path}"])
          for path in ("float.npy", "huge_ids.npy", "object.npy")],
        ("inputs", "an input the model does not have", "ghost", run + ["--input", "ghost=ids.npy"]),
        ("inputs", "--input without '='", "--input", run + ["--input", "ids.npy"]),
        ("inputs", "input_ids given twice", "input_ids", run + ["--input", "input_ids=ids.npy"] * 2),
        *[("options", f"--dim {dim!r}", dim.split("=")[0], run + ["--dim", dim])
          for dim in ("batch=\u0663", "batch=99999999999", "batch=0", "nosuch=3")],
        ("options", "--dim repeated", "batch", run + ["--dim", "batch=2", "--dim", "batch=3"]),
        ("options", "--engine warp9", "warp9", run + ["--engine", "warp9"]),
        *[("options", f"--repeat {n}", "--repeat", ["run", encoder, "--repeat", n]) for n in ("0", "abc")],
        ("options", "--json to a directory", "--json", run + ["--json", "."]),
        ("options", "POLYENG_COMPUTE_ENG=bogus", "POLYENG_COMPUTE_ENG", run, {"POLYENG_COMPUTE_ENG": "bogus"}),
    ]
    for cls, name, culprit, args, *env in cases:
        yield Case("cli", cls, name, culprit, {"args": args, "env": env[0] if env else {}, "cwd": str(d)})


# --- the tally ----------------------------------------------------------------------------------
COLUMNS, CONTROLS = ["clear", "unclear", "silently accepted", "crashed"], {"control ok", "control failed"}


def report(results, verbose: bool) -> None:
    rows, total = defaultdict(Counter), Counter()
    for case, _, v in results:
        rows[f"{case.family}/{case.cls}"][v] += 1
        total[v] += 1
    print(f"{'class':26} {'tried':>5} {'clear':>5} {'unclear':>7} {'accepted':>8} {'crashed':>7}   controls")
    for key, c in rows.items():
        controls = f"{c['control ok']} ok, {c['control failed']} failed" if c.keys() & CONTROLS else ""
        print(f"{key:26} {sum(c[col] for col in COLUMNS):5} {c['clear']:5} {c['unclear']:7} "
              f"{c['silently accepted']:8} {c['crashed']:7}   {controls}")
    print(f"tried {sum(total[col] for col in COLUMNS)} clear {total['clear']} unclear {total['unclear']} "
          f"silently-accepted {total['silently accepted']} crashed {total['crashed']}")
    print(f"controls {total['control ok'] + total['control failed']}: ok {total['control ok']} "
          f"failed {total['control failed']}")
    for case, result, v in results if verbose else ():
        if v not in ("clear", "control ok"):
            print(f"\n[{v}] {case.family}/{case.cls}: {case.name} (culprit {case.culprit!r}; stage "
                  f"{result.get('stage', '-')}, {result.get('type', 'no exception')})\n    "
                  + " ".join(result.get("message", "").split())[:400])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["onnx", "graph", "cli"])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="cases run at once (default: the CPUs)")
    parser.add_argument("--engine", default="basic", help="the engine ONNX models run on zeros under (default basic)")
    parser.add_argument("-k", dest="match", help="only the cases whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="print each case that is not clear, with its message")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="polyeng-hostile-") as tmp:
        makers = {"onnx": onnx_cases, "graph": graph_cases, "cli": cli_cases}
        cases = [c for family, make in makers.items() if args.only in (None, family) for c in make(Path(tmp))
                 if args.match is None or args.match in c.name]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outcomes = list(pool.map(lambda c: run_case(c, args.engine), cases))
        report([(c, r, verdict(c, r, tmp)) for c, r in zip(cases, outcomes)], args.verbose)


if __name__ == "__main__":
    main()
