"""Converted models kept on disk (``polyeng.onnx.graph_cache``): a second load of the same bytes
reads polyeng's own graph file, gives the same graph and the same bits, and does without onnx;
anything the conversion depends on makes a new file; what cannot be kept is not."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import polyeng.onnx

onnx = pytest.importorskip("onnx")
from onnx_cases import F32, build, composites, mlp_model, node, randn  # noqa: E402

from polyeng.onnx import graph_cache, registry  # noqa: E402


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    """Each test's own cache folder, with the cache on."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(graph_cache.ENV, raising=False)
    monkeypatch.delenv(graph_cache.DIR_ENV, raising=False)
    return tmp_path / "cache" / "polyeng" / "graphs"


def kept(folder) -> list:
    return sorted(p.name for p in folder.glob("*" + graph_cache.SUFFIX)) if folder.exists() else []


def saved(model, tmp_path, name="m.onnx") -> str:
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def attention_model():
    return next(c for c in composites() if c.name.startswith("attention")).model


def test_a_second_load_reads_the_kept_graph_and_gives_the_same_bits(tmp_path, cache_home):
    path = saved(attention_model(), tmp_path)
    converted = polyeng.onnx.load(path)
    assert len(kept(cache_home)) == 1
    (file,) = cache_home.iterdir()
    stamp = file.stat().st_mtime_ns
    os.utime(file, ns=(stamp - 10**9, stamp - 10**9))
    again = polyeng.onnx.load(path)
    assert file.stat().st_mtime_ns > stamp - 10**9   # a hit marks the file most recently used
    assert again is not converted and str(again) == str(converted)
    from polyeng.backends._constant import constant   # the engines keep their reordered weights
    assert all(constant(a) for a in again.constants.values())
    assert again.input_names == converted.input_names and again.output_names == converted.output_names
    x = randn(2, 5, 8)
    for _ in range(3):   # the first run plans, later runs may take oneDNN programs
        want, got = converted(x), again(x)
        assert np.array_equal(want, got)


def test_the_kept_graph_loads_in_a_process_without_onnx(tmp_path, cache_home):
    path = saved(mlp_model(), tmp_path)
    x = randn(3, 6)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", polyeng.onnx.load(path)(x))
    script = textwrap.dedent(f"""
        import sys
        sys.modules["onnx"] = None   # importing onnx now fails
        import numpy as np, polyeng.onnx
        got = polyeng.onnx.load({path!r})(np.load({str(tmp_path / "x.npy")!r}))
        assert np.array_equal(got, np.load({str(tmp_path / "want.npy")!r})), (got,)
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_without_onnx_and_nothing_kept_the_error_still_says_what_to_install(tmp_path, monkeypatch):
    path = saved(mlp_model(), tmp_path)
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'polyeng\[onnx\]'"):
        polyeng.onnx.load(path)


def test_bytes_are_kept_like_a_file(cache_home):
    data = mlp_model().SerializeToString()
    first = polyeng.onnx.load(data)
    assert len(kept(cache_home)) == 1
    second = polyeng.onnx.load(bytearray(data))
    assert len(kept(cache_home)) == 1 and str(second) == str(first)


def test_other_bytes_and_other_options_make_other_files(tmp_path, cache_home):
    path = saved(attention_model(), tmp_path)
    polyeng.onnx.load(path)
    polyeng.onnx.load(path, disable_fusions=["gelu_erf"])
    polyeng.onnx.load(path, max_bytes=1 << 20)
    polyeng.onnx.load(saved(mlp_model(), tmp_path, "other.onnx"))
    assert len(kept(cache_home)) == 4
    plain = polyeng.onnx.load(path, disable_fusions=["gelu_erf"])
    assert len(kept(cache_home)) == 4 and "gelu" not in str(plain)   # read back: the fusion still off


def test_the_environment_turns_fusions_off_for_kept_graphs_too(tmp_path, cache_home, monkeypatch):
    path = saved(attention_model(), tmp_path)
    fused = polyeng.onnx.load(path)
    monkeypatch.setenv("POLYENG_DISABLE_FUSIONS", "gelu_erf")
    plain = polyeng.onnx.load(path)
    assert "gelu" in str(fused) and "gelu" not in str(plain) and len(kept(cache_home)) == 2


def test_bad_options_are_refused_before_the_cache_is_read(tmp_path):
    path = saved(mlp_model(), tmp_path)
    polyeng.onnx.load(path)
    with pytest.raises(ValueError, match="unknown fusion name"):
        polyeng.onnx.load(path, disable_fusions=["no_such_fusion"])
    with pytest.raises(ValueError, match="max_bytes=-1"):
        polyeng.onnx.load(path, max_bytes=-1)
    with pytest.raises(TypeError, match="cache='yes'"):
        polyeng.onnx.load(path, cache="yes")


@pytest.mark.parametrize("off", ["0", "false", "no", "off"])
def test_the_cache_is_turned_off_by_the_argument_or_the_environment(tmp_path, cache_home, monkeypatch, off):
    path = saved(mlp_model(), tmp_path)
    polyeng.onnx.load(path, cache=False)
    assert kept(cache_home) == []
    monkeypatch.setenv(graph_cache.ENV, off)
    polyeng.onnx.load(path)
    assert kept(cache_home) == []
    polyeng.onnx.load(path, cache=True)   # the argument wins
    assert len(kept(cache_home)) == 1


def test_a_bad_switch_in_the_environment_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(graph_cache.ENV, "sometimes")
    with pytest.raises(ValueError, match="POLYENG_ONNX_CACHE='sometimes' is not a switch"):
        polyeng.onnx.load(saved(mlp_model(), tmp_path))


def test_a_damaged_file_is_converted_again_and_replaced(tmp_path, cache_home):
    path = saved(mlp_model(), tmp_path)
    want = polyeng.onnx.load(path)
    (file,) = cache_home.iterdir()
    good = file.read_bytes()
    file.write_bytes(good[: len(good) // 2])
    again = polyeng.onnx.load(path)
    assert str(again) == str(want) and file.read_bytes() == good


def test_a_model_with_external_data_is_not_kept(tmp_path, cache_home):
    path = str(tmp_path / "big.onnx")
    onnx.save_model(mlp_model(), path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    x = randn(2, 6)
    want = polyeng.onnx.load(path)(x)
    assert kept(cache_home) == []
    # the weights may change without the model file changing: each load reads them anew
    changed = onnx.load(path)
    for init in changed.graph.initializer:
        array = onnx.numpy_helper.to_array(init) * 2
        init.CopyFrom(onnx.numpy_helper.from_array(array, init.name))
    onnx.save_model(changed, str(tmp_path / "twice.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    os.replace(tmp_path / "twice.onnx", path)
    assert not np.array_equal(polyeng.onnx.load(path)(x), want) and kept(cache_home) == []


def test_a_model_proto_is_not_kept(cache_home):
    polyeng.onnx.load(mlp_model())
    assert kept(cache_home) == []


def test_a_model_that_does_not_load_is_not_kept_and_fails_each_time(tmp_path, cache_home):
    model = build([node("Hardmax", ["x"], ["y"])], [("x", F32, [2, 3])], [("y", F32)])
    path = saved(model, tmp_path)
    for _ in range(2):
        with pytest.raises(ValueError, match="Hardmax"):
            polyeng.onnx.load(path)
    assert kept(cache_home) == []


def test_a_converter_from_outside_polyeng_keeps_its_conversions_out_of_the_cache(tmp_path, cache_home):
    model = build([node("Hardmax", ["x"], ["y"])], [("x", F32, [2, 3])], [("y", F32)])
    path = saved(model, tmp_path)

    @registry.converter("Hardmax")
    def hardmax(n):
        n.set(0, n.need(0, "X"))
    try:
        x = randn(2, 3)
        assert np.array_equal(polyeng.onnx.load(path)(x), x)
        assert kept(cache_home) == []
        polyeng.onnx.load(saved(mlp_model(), tmp_path, "mlp.onnx"))
        assert kept(cache_home) == []
    finally:
        registry.unregister(hardmax)
    polyeng.onnx.load(saved(mlp_model(), tmp_path, "mlp.onnx"))
    assert len(kept(cache_home)) == 1


def test_a_folder_it_cannot_write_to_only_costs_the_conversion(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    path = saved(mlp_model(), tmp_path)
    x = randn(2, 6)
    assert np.array_equal(polyeng.onnx.load(path)(x), polyeng.onnx.load(path, cache=False)(x))


def test_the_least_recently_used_files_go_beyond_the_limits(tmp_path):
    folder = tmp_path / "graphs"
    folder.mkdir()
    for i in range(6):
        file = folder / f"{i}{graph_cache.SUFFIX}"
        file.write_bytes(b"x" * 100)
        os.utime(file, ns=(i * 10**9, i * 10**9))
    (folder / "other.txt").write_text("not a graph file")
    (folder / "killed.tmp").write_bytes(b"half a file")   # a killed writer's, an hour and more ago
    stale = (time.time() - graph_cache.STALE_SECONDS - 60) * 10**9
    os.utime(folder / "killed.tmp", ns=(int(stale), int(stale)))
    (folder / "writing.tmp").write_bytes(b"a live writer's")
    graph_cache.prune(folder, max_files=4, max_bytes=10**6)
    assert not (folder / "killed.tmp").exists() and (folder / "writing.tmp").exists()
    assert kept(folder) == [f"{i}{graph_cache.SUFFIX}" for i in (2, 3, 4, 5)]
    graph_cache.prune(folder, max_files=4, max_bytes=250)
    assert kept(folder) == [f"{i}{graph_cache.SUFFIX}" for i in (4, 5)]
    assert (folder / "other.txt").exists()


def test_a_host_steps_numpy_scalar_keeps_its_dtype_in_the_kept_graph(tmp_path, cache_home):
    # ConstantOfShape on a named dim runs on the host with its np.float32 fill value; read back as a
    # Python float it made a float64 tensor (a GRU's zero h0 was then refused)
    fill = onnx.helper.make_tensor("fill", onnx.TensorProto.FLOAT, [1], [0.5])
    model = build([node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["c"], value=fill),
                   node("Add", ["x", "c"], ["y"])], [("x", F32, ["N", 3])], [("y", F32)])
    path = saved(model, tmp_path)
    x = randn(2, 3)
    want = polyeng.onnx.load(path)(x)
    got = polyeng.onnx.load(path)(x)
    assert len(kept(cache_home)) == 1 and got.dtype == want.dtype == np.float32
    assert np.array_equal(got, want)


def test_the_fp_math_mode_at_load_time_is_part_of_the_key(tmp_path, cache_home):
    # a MatMul of two initializers folds at load time, under the mode in force
    inits = {"a": randn(4, 8), "b": randn(8, 3)}
    model = build([node("MatMul", ["a", "b"], ["c"]), node("Add", ["x", "c"], ["y"])],
                  [("x", F32, [4, 3])], [("y", F32)], inits=inits)
    path = saved(model, tmp_path)
    x = randn(4, 3)
    with polyeng.fp_math_mode("bf16"):
        polyeng.onnx.load(path)
    strict = polyeng.onnx.load(path)
    assert len(kept(cache_home)) == 2
    assert np.array_equal(strict(x), polyeng.onnx.load(path, cache=False)(x))


def test_a_kept_file_with_a_bad_checksum_is_converted_again(tmp_path, cache_home):
    path = saved(mlp_model(), tmp_path)
    want = polyeng.onnx.load(path)
    (file,) = cache_home.iterdir()
    data = bytearray(file.read_bytes())
    at = data.index(b'"format"')   # inside graph.json, stored uncompressed: its CRC no longer holds
    data[at + 1] ^= 1
    file.write_bytes(bytes(data))
    assert str(polyeng.onnx.load(path)) == str(want)


def test_without_a_home_folder_nothing_is_kept_and_the_load_works(tmp_path, monkeypatch):
    from polyeng.models import export_cache

    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(export_cache, "default_folder", no_home)
    x = randn(2, 6)
    path = saved(mlp_model(), tmp_path)
    assert np.array_equal(polyeng.onnx.load(path)(x), polyeng.onnx.load(path, cache=False)(x))


def test_odd_inputs_behave_as_without_the_cache(tmp_path, cache_home):
    data = mlp_model().SerializeToString()
    strided = memoryview(bytes(2 * len(data)))[::2]   # not contiguous
    with pytest.raises(ValueError):
        polyeng.onnx.load(strided, cache=False)
    with pytest.raises(ValueError):
        polyeng.onnx.load(strided)
    noncontiguous = memoryview(bytearray(data * 2)).cast("B")[::1][: len(data)]
    assert str(polyeng.onnx.load(noncontiguous)) == str(polyeng.onnx.load(data, cache=False))


def test_constants_over_the_budget_together_are_not_kept(tmp_path, cache_home):
    inits = {"w1": randn(16, 16), "w2": randn(16, 16)}   # 1 KiB each, 2 KiB together
    model = build([node("MatMul", ["x", "w1"], ["h"]), node("MatMul", ["h", "w2"], ["y"])],
                  [("x", F32, ["N", 16])], [("y", F32)], inits=inits)
    path = saved(model, tmp_path)
    polyeng.onnx.load(path, max_bytes=1500)
    assert kept(cache_home) == []


def test_a_file_replaced_while_it_loads_is_kept_under_the_bytes_converted(tmp_path, cache_home, monkeypatch):
    # another process replaces the file after its bytes were hashed and before they are converted:
    # the new model's graph must not be kept under the old bytes' key
    first, second = mlp_model(), mlp_model()   # the same structure, other weights
    path = saved(first, tmp_path)
    replaced = tmp_path / "second.onnx"
    onnx.save(second, str(replaced))
    real = graph_cache.file_bytes

    def replacing(model):
        os.replace(replaced, model)
        return real(model)
    monkeypatch.setattr(graph_cache, "file_bytes", replacing)
    x = randn(2, 6)
    got = polyeng.onnx.load(path)(x)
    monkeypatch.setattr(graph_cache, "file_bytes", real)
    assert np.array_equal(got, polyeng.onnx.load(second, cache=False)(x))
    onnx.save(first, path)   # the first model's bytes again: its own graph, not the second's
    assert np.array_equal(polyeng.onnx.load(path)(x), polyeng.onnx.load(first, cache=False)(x))
    assert not np.array_equal(polyeng.onnx.load(path)(x), got)


def test_a_text_format_model_file_is_read_as_its_name_says(tmp_path, cache_home):
    path = str(tmp_path / "m.textproto")
    onnx.save_model(mlp_model(), path, format="textproto")
    x = randn(2, 6)
    want = polyeng.onnx.load(path, cache=False)(x)
    assert np.array_equal(polyeng.onnx.load(path)(x), want)
    assert len(kept(cache_home)) == 1
    assert np.array_equal(polyeng.onnx.load(path)(x), want)


def test_polyeng_onnx_cache_dir_names_the_folder(tmp_path, cache_home, monkeypatch):
    chosen = tmp_path / "elsewhere"
    monkeypatch.setenv(graph_cache.DIR_ENV, str(chosen))
    path = saved(mlp_model(), tmp_path)
    x = randn(2, 6)
    want = polyeng.onnx.load(path)(x)
    assert len(kept(chosen)) == 1 and kept(cache_home) == []
    assert np.array_equal(polyeng.onnx.load(path)(x), want)
    monkeypatch.setenv(graph_cache.DIR_ENV, "")   # empty: the default folder
    polyeng.onnx.load(path)
    assert len(kept(cache_home)) == 1
