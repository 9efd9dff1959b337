"""Hostile and broken inputs: nothing read from outside what polyeng was given, and no input
that crashes the process. Crash cases run in a child process, so a crash fails the test
instead of ending the run."""
import json
import re
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import polyeng
import polyeng.onnx

ENGINES = [e.name for e in polyeng.engines() if e.available and e.name in ("basic", "numba", "opencl")]

SOFTMAX_SWEEP = """
    import json, sys
    import numpy as np, polyeng
    engine = sys.argv[1]
    # every row length to 40 (the crash was at 17-31), and around the next powers of two
    LENGTHS = list(range(1, 41)) + [47, 48, 49, 63, 64, 65, 70]
    rng = np.random.default_rng(0)
    worst = {}
    for dtype in (np.float16, polyeng.bfloat16, np.float32, np.float64):
        eps = 2.0 ** -7 if dtype == polyeng.bfloat16 else float(np.finfo(dtype).eps)
        for fn in (polyeng.softmax, polyeng.log_softmax):
            for n in LENGTHS:
                for shape, axis in (((3, n), -1), ((1, n), -1), ((2, n, 5), 1), ((2, n, 17), 1)):
                    x = rng.standard_normal(shape).astype(dtype)
                    with polyeng.compute_eng("basic"):
                        ref = fn(x.astype(np.float64), axis=axis)
                    with polyeng.compute_eng(engine, fallback=False):
                        got = np.asarray(fn(x, axis=axis)).astype(np.float64)
                    err = float(np.max(np.abs(got - ref)) / (eps * max(1.0, float(np.max(np.abs(ref))))))
                    key = f"{np.dtype(dtype).name} {fn.__name__}"
                    worst[key] = max(worst.get(key, 0.0), err)
    print(json.dumps(worst))
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_softmax_of_every_short_last_axis_runs_and_matches(engine):
    """float16 softmax on OPENCL crashed the process (SIGSEGV) for rows of 17-31 elements but 24."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SOFTMAX_SWEEP), engine], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"the sweep on {engine} ended with status {out.returncode}: {out.stderr[-2000:]}"
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(worst) == 8
    assert all(err <= 16 for err in worst.values()), worst   # the engine suite's tolerance for softmax


# --- external data: read only from the folder polyeng was given ----------------------------------

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

WEIGHT = np.arange(12, dtype=np.float32).reshape(3, 4)


def external_model(location="weights.bin", offset=0, length=None, dims=(3, 4)):
    """y = x + w, with w's 48 bytes kept in an external file at ``location``."""
    tensor = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=dims)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 4])], [tensor])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def write(folder, model, data=WEIGHT.tobytes(), data_name="weights.bin"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / data_name).write_bytes(data)
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_bytes_or_a_modelproto_naming_external_data_read_nothing_from_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / ".env").write_bytes(b"SECRET=hunter2-and-more-bytes-than-48!!!!!!!!!!!")
    monkeypatch.chdir(tmp_path)
    model = external_model(".env")
    for given in (model.SerializeToString(), model):
        with pytest.raises(ValueError, match=r"tensor 'w' keeps its data in an external file.*base_dir="):
            polyeng.onnx.load(given)
    assert model.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL   # the caller's proto untouched


def test_external_data_is_read_from_the_model_folder_or_base_dir(tmp_path):
    path = write(tmp_path / "m", external_model())
    x = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(polyeng.onnx.load(str(path))(x), x + WEIGHT)
    model = external_model()
    np.testing.assert_array_equal(polyeng.onnx.load(model, base_dir=tmp_path / "m")(x), x + WEIGHT)
    offset = write(tmp_path / "o", external_model(offset=8, length=48), data=b"12345678" + WEIGHT.tobytes())
    np.testing.assert_array_equal(polyeng.onnx.load(str(offset))(x), x + WEIGHT)


@pytest.mark.parametrize("location, message", [
    ("../outside.bin", "is not a file name inside the model's folder"),
    ("/etc/passwd", "is not a file name inside the model's folder"),
    ("sub/../../outside.bin", "is not a file name inside the model's folder"),
    ("missing.bin", "cannot be read"),
    ("link.bin", "passes through a symbolic link"),
    ("fifo", "is not a regular file"),
    (".", "is not a regular file"),
])
def test_external_data_outside_the_folder_or_not_a_file_is_refused(tmp_path, location, message):
    (tmp_path / "outside.bin").write_bytes(WEIGHT.tobytes())
    path = write(tmp_path / "m", external_model(location))
    os.symlink(tmp_path / "outside.bin", tmp_path / "m" / "link.bin")
    os.mkfifo(tmp_path / "m" / "fifo")   # reading it would block for ever
    with pytest.raises(ValueError, match=rf"tensor 'w': external data.*{message}"):
        polyeng.onnx.load(str(path))


@pytest.mark.parametrize("kwargs, data, message", [
    ({"length": 4}, WEIGHT.tobytes(), r"length 4 does not match its shape \[3, 4\] \(48 bytes\)"),
    ({}, WEIGHT.tobytes()[:40], r"holds 40 bytes; the tensor needs 48 from offset 0"),
    ({"offset": 1 << 40}, WEIGHT.tobytes(), r"the tensor needs 48 from offset 1099511627776"),
    ({"dims": (1 << 20, 1 << 20)}, WEIGHT.tobytes(), r"holds 48 bytes; the tensor needs 4398046511104"),
], ids=["length", "short-file", "offset", "huge-shape"])
def test_external_data_sizes_are_checked_before_reading(tmp_path, kwargs, data, message):
    path = write(tmp_path, external_model(**kwargs), data=data)
    with pytest.raises(ValueError, match=rf"tensor 'w': external data.*{message}"):
        polyeng.onnx.load(str(path))


# --- the command line: regular files only, strict numbers, one line and status 2 -----------------

ENCODER = os.path.join(os.path.dirname(polyeng.__file__), "models", "encoder_opset17.onnx")


def polyeng_cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "polyeng", *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("where", ["model", "input"])
def test_a_fifo_is_refused_not_waited_on(tmp_path, where):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)   # nobody ever writes: reading it would block for ever
    args = ["run", str(fifo)] if where == "model" else ["run", ENCODER, "--input", f"input_ids={fifo}"]
    out = polyeng_cli(*args, timeout=60)
    assert out.returncode == 2 and "not a regular file" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_device_is_refused_not_read_to_the_end():
    out = polyeng_cli("run", "/dev/zero", timeout=60)
    assert out.returncode == 2 and "/dev/zero: not a regular file" in out.stderr, out.stderr


@pytest.mark.parametrize("dims, message", [
    (["batch=\u0663"], r"--dim batch=\u0663: expected NAME=N with N a positive integer"),   # an Arabic-Indic 3
    (["batch= 3"], r"expected NAME=N with N a positive integer"),
    (["batch=2", "batch=3"], r"--dim batch=3: batch is given twice"),
])
def test_dims_are_strict(dims, message):
    args = ["run", ENCODER, "--repeat", "1"]
    for d in dims:
        args += ["--dim", d]
    out = polyeng_cli(*args)
    assert out.returncode == 2, out.stderr
    assert message.replace("\\u0663", "\u0663") in out.stderr.replace("\\", ""), out.stderr


def test_an_engine_asked_for_by_name_that_cannot_run_is_an_error():
    out = polyeng_cli("run", ENCODER, "--engine", "opencl", "--repeat", "1", env={"POLYENG_OPENCL_DEVICE": "nosuch"})
    assert out.returncode == 2 and "--engine opencl: the engine is unavailable" in out.stderr, out.stderr


def test_too_large_a_batch_is_one_line_and_status_2():
    out = polyeng_cli("run", ENCODER, "--dim", "batch=99999999999", "--repeat", "1")
    assert out.returncode == 2 and "out of memory" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_big_endian_npy_input_is_the_same_numbers(tmp_path):
    ids = np.arange(2 * 7, dtype=">i8").reshape(2, 7) % 50
    np.save(tmp_path / "ids.npy", ids)
    out = polyeng_cli("run", ENCODER, "--input", f"input_ids={tmp_path / 'ids.npy'}", "--repeat", "1")
    assert out.returncode == 0, out.stderr


# --- graph files: checked whole at load, each fault named, no memory taken for a lie ------------

import zipfile  # noqa: E402

from polyeng.graph import load as load_graph, trace  # noqa: E402

W = np.arange(12, dtype=np.float32).reshape(4, 3)


def _saved(tmp_path):
    graph = trace(lambda x: polyeng.relu(polyeng.matmul(x, W)) + 1.0, np.ones((2, 4), np.float32))
    path = tmp_path / "good.polyeng"
    graph.save(path)
    return path


def _rewritten(tmp_path, change, name="bad.polyeng", compression=zipfile.ZIP_STORED, level=None):
    """The good file with ``change(document, members)`` applied to its parsed graph.json and members."""
    with zipfile.ZipFile(_saved(tmp_path)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    document = json.loads(members.pop("graph.json"))
    change(document, members)
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", compression=compression, compresslevel=level) as archive:
        archive.writestr("graph.json", document if isinstance(document, (str, bytes)) else json.dumps(document))
        for n, data in members.items():
            archive.writestr(n, data)
    return path


BROKEN = {
    "no nodes": (lambda d, m: d.pop("nodes"), r"graph.json has no 'nodes'"),
    "nodes not a list": (lambda d, m: d.update(nodes=3), r"'nodes' is a int; expected a list"),
    "version 1.0": (lambda d, m: d.update(version=1.0), r"version 1.0 is not a version number"),
    "version '1'": (lambda d, m: d.update(version="1"), r"version '1' is not a version number"),
    "no version": (lambda d, m: d.pop("version"), r"version None is not a version number"),
    "undefined argument": (lambda d, m: d["nodes"][1]["args"]["dict"].update(x={"ref": "ghost"}),
                           r"argument 'ghost' is not defined before the node"),
    "nodes out of order": (lambda d, m: d["nodes"].reverse(), r"is not defined before the node"),
    "a cycle": (lambda d, m: d["nodes"][0]["args"]["dict"].update(a={"ref": d["nodes"][-1]["outputs"][0]}),
                r"argument 'v2' is not defined before the node"),
    "out of range": (lambda d, m: d["nodes"][0].update(out=5), r"out 5 names no output"),
    "meta not an object": (lambda d, m: d["nodes"][0].update(meta=[1]), r"meta is a list"),
    "two definitions": (lambda d, m: d["nodes"][1].update(outputs=list(d["nodes"][0]["outputs"])),
                        r"is not a new value's name"),
    "unknown op": (lambda d, m: d["nodes"][0].update(op="rm_rf"), r"an op this installation does not have: 'rm_rf'"),
    "bad dtype": (lambda d, m: d["constants"][0].update(dtype="complex512"), r"dtype 'complex512' is not one"),
    "negative dim": (lambda d, m: d["constants"][0].update(shape=[-4, 3]), r"has -4; expected sizes >= 0"),
    "missing member": (lambda d, m: m.clear(), r"the archive has no member"),
    "not npy": (lambda d, m: m.update({k: b"hello" for k in m}), r"is not a .npy array"),
    "shape mismatch": (lambda d, m: d["constants"][0].update(shape=[3, 4]), r"graph.json says float32\[3, 4\]"),
    "shared member": (lambda d, m: d["constants"].append(dict(d["constants"][0], name="twin")),
                      r"constant 'twin': member .* is constant .*'s already"),
    "undefined output": (lambda d, m: d.update(output_structure={"ref": "nowhere"}),
                         r"output 'nowhere' is defined by no input, constant or node"),
    "output_structure a number": (lambda d, m: d.update(output_structure=3.5),
                                  r"graph.json's 'output_structure' is 3.5: it returns no value"),
    "name not a string": (lambda d, m: d.update(name=[1]), r"graph.json's 'name' is a list; expected a str"),
    "leading_free not a bool": (lambda d, m: d.update(leading_free="no"),
                                r"graph.json's 'leading_free' is a str; expected a bool"),
    "input_names not the inputs'": (lambda d, m: d.update(input_names=["ghost"]),
                                    r"input_names\[0\] is 'ghost', but positional input 0 is input 'x'"),
    "input_names too few": (lambda d, m: d.update(input_names=[]),
                            r"'input_names' names 0 positional inputs; 'input_structure' has 1"),
    "input_structure one item": (lambda d, m: d.update(input_structure=[{"tuple": []}]),
                                 r"'input_structure' holds 1 item; expected 2: the positional inputs"),
    "input_structure undefined": (lambda d, m: d.update(input_structure=[{"tuple": [{"ref": "ghost"}]}, {"dict": {}}]),
                                  r"'input_structure' places 'ghost', which is not an input"),
    "input left out": (lambda d, m: d.update(input_structure=[{"tuple": [1.0]}, {"dict": {}}]),
                       r"input 'x' has no place in 'input_structure'"),
    "type not a pair": (lambda d, m: d["types"].update(v0="f4"), r"types\['v0'\] is 'f4'; expected \[dtype, shape\]"),
    "type of a bad dtype": (lambda d, m: d["types"].update(v0=["evil", [2]]),
                            r"types\['v0'\]: dtype 'evil' is not one polyeng has"),
    "type missing": (lambda d, m: d["types"].pop("v1"), r"value 'v1' has no entry in 'types'"),
    "huge constant": (lambda d, m: d["constants"][0].update(shape=[1 << 40, 1 << 40]),
                      r"over the load budget of 8589934592 \(max_bytes=\); constant 'W' of shape "
                      r"\[1099511627776, 1099511627776\] alone takes 4835703278458516698824704"),
    "args a list": (lambda d, m: d["nodes"][0].update(args=[1, 2]),
                    r"node 'n0' \(matmul\): args is a list; expected an object of the op's arguments"),
    "args nested deep": (lambda d, m: d["nodes"][0]["args"]["dict"].update(a=json.loads('{"tuple": [' * 25
                                                                                       + '{"ref": "x"}' + "]}" * 25)),
                         r"node 'n0' \(matmul\): argument 'a' nests 25 levels deep; arguments nest at most 8"),
    "untagged object": (lambda d, m: d["nodes"][0]["args"]["dict"].update(a={"ref": "x", "tuple": []}),
                        r"node 'n0' \(matmul\): args holds the object .* expected one key"),
    "ref not a name": (lambda d, m: d["nodes"][1]["args"]["dict"].update(x={"ref": [5]}),
                       r"node 'n1' \(relu\): args holds \{'ref': \[5\]\}, which names no value"),
    "amp of unknown keys": (lambda d, m: d["nodes"][0].update(amp={"foo": 1}),
                            r"node 'n0' \(matmul\): amp has the key 'foo'; expected category, why"),
    "amp of a bad category": (lambda d, m: d["nodes"][0].update(amp={"category": "maybe", "why": ""}),
                              r"node 'n0' \(matmul\): amp's category is 'maybe'; expected one of"),
    "amp mixed not a bool": (lambda d, m: d["nodes"][0].update(amp={"category": "allow", "why": "", "mixed": 1}),
                             r"node 'n0' \(matmul\): amp's mixed is a int; expected a bool"),
    "meta of an unknown tag": (lambda d, m: d["nodes"][0].update(meta={"evil": {}}),
                               r"node 'n0' \(matmul\): meta holds the unknown tagged value 'evil'"),
    "meta rows without x": (lambda d, m: d["nodes"][1].update(meta={"dict": {"rows": 2}}),
                            r"node 'n1' \(relu\): meta's rows needs the arguments x \(a value\) and key"),
    "node not an object": (lambda d, m: d["nodes"].insert(0, "n"), r"node 0 is a str; expected an object"),
    "node without op": (lambda d, m: d["nodes"][0].pop("op"), r"node 0 has no 'op'"),
    "node types of a bad dtype": (lambda d, m: d["nodes"][0].update(types=[["evil", [2, 3]]]),
                                  r"node 'n0' \(matmul\): output 0's type: dtype 'evil' is not one polyeng has"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_graph_files_are_refused_at_load_naming_the_fault(tmp_path, case):
    change, message = BROKEN[case]
    path = _rewritten(tmp_path, change)
    with pytest.raises(ValueError, match=message):
        load_graph(path)


def test_two_members_named_graph_json_are_refused(tmp_path):
    path = _saved(tmp_path)
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
        warnings.simplefilter("ignore")   # "Duplicate name": on purpose
        archive.writestr("graph.json", "[]")
    with pytest.raises(ValueError, match=r"the archive has 2 members named graph.json"):
        load_graph(path)


def test_a_constant_member_named_twice_is_refused(tmp_path):
    path = _saved(tmp_path)
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
        warnings.simplefilter("ignore")
        archive.writestr("constants/0.npy", archive.read("constants/0.npy"))
    with pytest.raises(ValueError, match=r"constant 'W': the archive has 2 members named 'constants/0.npy'"):
        load_graph(path)


def test_a_saved_graph_with_positional_inputs_nested_and_fixed_loads_and_runs(tmp_path):
    """input_names name the positional parameters: 'pair' holds inputs pair[0] and pair[1]; 'scale' none."""
    def fn(pair, scale, *rest, bias):
        return polyeng.matmul(pair[0], pair[1]) * scale + rest[0] + bias["b"]
    a, b = np.ones((2, 4), np.float32), np.ones((4, 3), np.float32)
    c, d = np.full((2, 3), 2, np.float32), {"b": np.full((2, 3), 3, np.float32)}
    graph = trace(fn, (a, b), 2.0, c, bias=d)
    graph.save(tmp_path / "g.polyeng")
    loaded = load_graph(tmp_path / "g.polyeng")
    np.testing.assert_array_equal(loaded((a, b), 2.0, c, bias=d), graph((a, b), 2.0, c, bias=d))


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "directory"])
def test_a_graph_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path, what):
    """A FIFO nobody writes would block for ever, /dev/zero never end: both refused before a byte is read."""
    path = {"fifo": tmp_path / "pipe.polyeng", "/dev/zero": "/dev/zero", "directory": tmp_path}[what]
    if what == "fifo":
        os.mkfifo(path)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(BOMB), str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    expected = "a directory, not a polyeng graph file" if what == "directory" else "not a regular file"
    assert out.stdout.startswith(f"refused: {path}: {expected}"), out.stdout


def test_deep_nesting_is_refused(tmp_path):
    twelve = []
    for _ in range(11):
        twelve = [twelve]
    path = _rewritten(tmp_path, lambda d, m: d.update(extra=twelve))
    load_graph(path)   # 12 levels: fine
    deep = tmp_path / "deep.polyeng"
    with zipfile.ZipFile(deep, "w") as archive:
        archive.writestr("graph.json", '{"format": "polyeng.graph", "version": 1, "x": ' + "[" * 100000
                         + "]" * 100000 + "}")
    with pytest.raises(ValueError, match="nests deeper than 64 levels"):
        load_graph(deep)


BOMB = """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))   # 1 GiB of address space
    from polyeng.graph import load
    try:
        load(sys.argv[1])
    except ValueError as exc:
        print("refused:", exc)
"""


def test_a_member_larger_than_its_shape_is_refused_before_it_is_read(tmp_path):
    """A 9 MB zip whose constant of 12 floats unpacks to 2 GB: refused under a 1 GiB address-space limit.
    (zlib's fastest level: 3 s to pack, where its default takes 12 s for a 2 MB file.)"""
    def inflate(d, m):
        name = d["constants"][0]["file"]
        m[name] = m[name][:128] + bytes(2 << 30)
    path = _rewritten(tmp_path, inflate, compression=zipfile.ZIP_DEFLATED, level=1)
    assert path.stat().st_size < 16 << 20
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(BOMB), str(path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused:" in out.stdout and "justify 48" in out.stdout, out.stdout


def test_the_load_budget_is_an_argument(tmp_path):
    path = _saved(tmp_path)
    with pytest.raises(ValueError, match=r"the constants take 48 bytes, over the load budget of 16 \(max_bytes=\)"):
        load_graph(path, max_bytes=16)
    assert load_graph(path, max_bytes=48) is not None


@pytest.mark.parametrize("location", ["C:\\\\weights.bin", "\\\\server\\\\share\\\\w.bin", "w\x00.bin", "c:w.bin"])
def test_external_data_locations_of_other_systems_or_with_nul_are_refused(tmp_path, location):
    path = write(tmp_path, external_model(location))
    with pytest.raises(ValueError, match=r"tensor 'w': external data location .* is not a file name inside"):
        polyeng.onnx.load(str(path))


# --- ONNX memory bombs: refused by the load budget before inference or folding takes the memory --

ONNX_BOMB = """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))   # 3 GiB of address space
    import polyeng.onnx
    try:
        polyeng.onnx.load(sys.argv[1])
    except ValueError as exc:
        print("refused:", exc)
"""


def _int64(name, values):
    return numpy_helper_from(np.array(values, np.int64), name)


def numpy_helper_from(array, name):
    from onnx import numpy_helper
    return numpy_helper.from_array(array, name)


def _bomb_model(kind):
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    if kind == "constant_of_shape":
        nodes = [helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill",
                                  value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [1.0]))]
        inits = [_int64("s", [1 << 16, 1 << 16])]   # 4 G floats: 16 GiB
    elif kind == "range":
        nodes = [helper.make_node("Range", ["a", "b", "c"], ["y"], name="count")]
        inits = [numpy_helper_from(np.array(0, np.int64), "a"), numpy_helper_from(np.array(1 << 40, np.int64), "b"),
                 numpy_helper_from(np.array(1, np.int64), "c")]
        out = helper.make_tensor_value_info("y", onnx.TensorProto.INT64, None)
    else:   # an initializer that claims 4 TiB and holds nothing
        claim = onnx.TensorProto(name="huge", data_type=onnx.TensorProto.FLOAT, dims=[1 << 40])
        nodes, inits = [helper.make_node("Identity", ["huge"], ["y"], name="pass")], [claim]
    graph = helper.make_graph(nodes, "bomb", [], [out], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("kind, message", [
    ("constant_of_shape", r"ConstantOfShape 'fill': asks for 4294967296 elements"),
    ("range", r"Range 'count': asks for 1099511627776 elements"),
    ("claim", r"initializer 'huge' of shape \[1099511627776\] takes 4398046511104 bytes"),
])
def test_a_tiny_model_asking_for_gigabytes_is_refused_before_the_memory_is_taken(tmp_path, kind, message):
    path = tmp_path / f"{kind}.onnx"
    path.write_bytes(_bomb_model(kind).SerializeToString())
    assert path.stat().st_size < 1024
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(ONNX_BOMB), str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused:" in out.stdout and re.search(message, out.stdout), out.stdout


def test_the_onnx_load_budget_is_an_argument():
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 4])],
                              [numpy_helper_from(WEIGHT, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ValueError, match=r"initializer 'w' of shape \[3, 4\] takes 48 bytes, over the load budget of 40"):
        polyeng.onnx.load(proto, max_bytes=40)
    assert polyeng.onnx.load(proto, max_bytes=48) is not None
