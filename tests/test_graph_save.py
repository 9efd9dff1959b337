"""Graph files (SPEC §6): a plain and a converted graph round-trip with their constants, as a zip
of JSON and .npy members that loads without pickle; other files are clear errors."""
import json
import warnings
import zipfile

import numpy as np
import pytest

import polyeng
from polyeng import amp, model_zoo
from polyeng.graph import load, trace
from support import assert_same_tree

RNG = np.random.default_rng(2)
X = RNG.standard_normal((2, 5, 16)).astype(np.float32)
IDX = np.array([2, 0, 1])


def model(x):
    # numpy nodes with keys of every kind: ints, slices, None, Ellipsis, an index array
    y = model_zoo_encoder(x)
    parts = (y[0, 1:3], y[None, ..., ::2], y[:, IDX], y.T, -y, y.astype(np.int32), polyeng.cast(y, np.float16))
    return {"y": y, "parts": parts}


model_zoo_encoder = model_zoo.encoder_layer(hidden=16, heads=2, ffn=32, seed=4)




@pytest.fixture(scope="module")
def graph():
    return trace(model, X)


@pytest.fixture(scope="module")
def converted(graph):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return amp.to_mixed_precision(graph, "bfloat16")


@pytest.mark.parametrize("which", ["graph", "converted"])
def test_round_trip_gives_identical_results(which, graph, converted, tmp_path):
    original = {"graph": graph, "converted": converted}[which]
    path = tmp_path / "model.pgraph"
    original.save(path)
    loaded = load(path)
    assert str(loaded) == str(original)
    assert [(v.name, v.dtype, v.shape) for v in loaded.inputs] == [(v.name, v.dtype, v.shape) for v in original.inputs]
    assert {k: (a.dtype, a.shape) for k, a in loaded.constants.items()} == \
        {k: (a.dtype, a.shape) for k, a in original.constants.items()}
    for k, a in original.constants.items():
        assert loaded.constants[k].tobytes() == a.tobytes()
    other = RNG.standard_normal((3, 5, 16)).astype(np.float32)
    for x in (X, other):
        assert_same_tree(loaded(x), original(x))


def test_numpy_scalars_keep_their_dtype():
    from polyeng.graph import deserialize, serialize
    for value in (np.float32(0.5), np.float16(-2.0), np.float64(0.1), np.int8(-7), np.uint64(2**63 + 5),
                  np.int64(-1), np.bool_(True), np.asarray(1.5, polyeng.bfloat16)[()]):
        encoded = json.loads(json.dumps(serialize._encode((value, [value]), "value")))
        decoded = deserialize._decode(encoded, "value")
        for got in (decoded[0], decoded[1][0]):
            assert type(got) is type(value) and got.dtype == value.dtype and got == value, (value, got)
    for bad in ({"scalar": ["float32"]}, {"scalar": ["float32", "1"]}, {"scalar": ["int8", 300]},
                {"scalar": ["str", 1]}, {"scalar": ["no_such_dtype", 1]}):
        with pytest.raises(ValueError, match="value"):
            deserialize._decode(bad, "value")


def test_loaded_constants_count_as_constant_so_engines_keep_what_they_derive(converted, tmp_path):
    # a read-only view of writeable memory does not: its reordered weights were made on every call
    from polyeng.backends._constant import constant
    converted.save(tmp_path / "c.pgraph")
    loaded = load(tmp_path / "c.pgraph")
    assert loaded.constants and all(constant(a) for a in loaded.constants.values())
    assert all(not a.flags.writeable for a in loaded.constants.values())


def test_converted_graph_keeps_bf16_constants(converted, tmp_path):
    assert any(a.dtype == polyeng.bfloat16 for a in converted.constants.values())
    converted.save(tmp_path / "c.pgraph")
    loaded = load(tmp_path / "c.pgraph")
    assert [a.dtype for a in loaded.constants.values()] == [a.dtype for a in converted.constants.values()]
    assert [n.amp.category for n in loaded.nodes] == [n.amp.category for n in converted.nodes]


def test_file_is_a_zip_of_json_and_npy_without_pickle(converted, tmp_path):
    path = tmp_path / "c.pgraph"
    converted.save(path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert "graph.json" in names
        document = json.loads(archive.read("graph.json"))
        assert document["format"] == "polyeng.graph" and isinstance(document["version"], int)
        members = [n for n in names if n != "graph.json"]
        assert members and all(n.endswith(".npy") for n in members)
        for name in members:
            with archive.open(name) as f:
                assert np.load(f, allow_pickle=False).dtype != object


def test_a_newer_version_is_refused(graph, tmp_path):
    path, newer = tmp_path / "g.pgraph", tmp_path / "newer.pgraph"
    graph.save(path)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(newer, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "graph.json":
                document = json.loads(data)
                document["version"] += 1
                data = json.dumps(document)
            dst.writestr(name, data)
    with pytest.raises(ValueError, match="version .* newer"):
        load(newer)


def test_files_that_are_not_graphs_are_clear_errors(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a polyeng graph file"):
        load(text)
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("readme.md", "hi")
    with pytest.raises(ValueError, match="not a polyeng graph file"):
        load(other_zip)
    wrong_format = tmp_path / "wrong.zip"
    with zipfile.ZipFile(wrong_format, "w") as archive:
        archive.writestr("graph.json", json.dumps({"format": "onnx", "version": 1}))
    with pytest.raises(ValueError, match="not a polyeng graph file"):
        load(wrong_format)
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.ones(3))
    with pytest.raises(ValueError, match="not a polyeng graph file"):
        load(npz)
    not_json = tmp_path / "bad.zip"
    with zipfile.ZipFile(not_json, "w") as archive:
        archive.writestr("graph.json", "not json {")
    with pytest.raises(ValueError, match="not a polyeng graph file .graph.json is not JSON"):
        load(not_json)
    a_list = tmp_path / "list.zip"
    with zipfile.ZipFile(a_list, "w") as archive:
        archive.writestr("graph.json", "[1, 2]")
    with pytest.raises(ValueError, match="not a polyeng graph file"):
        load(a_list)
