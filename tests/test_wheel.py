"""The wheel built from this repository holds everything the command line needs: installed outside
the checkout, every command runs from it."""
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# What a build must not see: build outputs (a stale build/lib would put deleted modules in the
# wheel), the repository's history and the virtualenv.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__",
                                    ".pytest_cache", ".hypothesis")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(args, cwd, env=None, timeout=180):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (f"{' '.join(map(str, args))} exited {done.returncode}\n"
                                  f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """(path of the wheel, the package sources it was built from, the folder it is installed in)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy: an in-tree build writes build/ and egg-info into the checkout.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-cache-dir"]
    _run(pip + ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(source)],
         cwd=tmp)
    [path] = (tmp / "dist").glob("polyeng-*.whl")
    _run(pip + ["install", "--no-deps", "--no-index", "--target", str(tmp / "site"), str(path)], cwd=tmp)
    return path, source / "polyeng", tmp / "site"


@pytest.fixture
def polyeng_from_wheel(wheel, tmp_path):
    """Runs a command in a folder outside the checkout, with the installed wheel first on sys.path."""
    site = wheel[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))

    def run(*args):
        return _run(list(args), cwd=tmp_path, env=env)
    return run


def test_the_wheel_holds_every_package_file_and_the_command(wheel):
    path, package, _ = wheel
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    sources = {f"polyeng/{p.relative_to(package).as_posix()}" for p in package.rglob("*")
               if p.is_file() and p.suffix in (".py", ".cl")}
    kernels = {name for name in sources if name.endswith(".cl")}   # package data, not modules
    assert "polyeng/bench/workload.py" in names
    assert kernels and kernels <= names, f"OpenCL sources missing from the wheel: {sorted(kernels - names)}"
    assert sources <= names, f"missing from the wheel: {sorted(sources - names)}"
    bundled = {f"polyeng/models/{p.name}" for p in (package / "models").iterdir() if p.suffix in (".onnx", ".json")}
    assert "polyeng/models/models.json" in bundled and bundled <= names, sorted(bundled - names)
    assert "polyeng = polyeng.cli:main" in entry_points


def test_the_installed_wheel_shadows_the_checkout(wheel, polyeng_from_wheel):
    site = wheel[2].resolve()
    out = polyeng_from_wheel(sys.executable, "-c", "import polyeng.bench.workload as w, polyeng; "
                                                   "print(polyeng.__file__); print(w.__file__)")
    for line in out.splitlines():
        assert pathlib.Path(line).resolve().is_relative_to(site), line


def test_info_explain_and_demo_run_from_the_wheel(wheel, polyeng_from_wheel):
    assert "engines:" in polyeng_from_wheel(sys.executable, "-m", "polyeng", "info")
    script = wheel[2] / "bin" / "polyeng"   # the console script pip wrote for [project.scripts]
    if script.is_file():
        assert "step=" in polyeng_from_wheel(str(script), "explain", "softmax", "2x3:f32")
    assert "model:" in polyeng_from_wheel(sys.executable, "-m", "polyeng", "demo", "--repeats", "1")


def test_bench_runs_from_the_wheel(polyeng_from_wheel, tmp_path):
    # The chart needs the optional matplotlib; everything else must work without it.
    plot = importlib.util.find_spec("matplotlib") is not None
    report, chart = tmp_path / "bench.json", tmp_path / "bench.png"
    polyeng_from_wheel(sys.executable, "-m", "polyeng", "bench", "--cases", "softmax", "--repeat", "1",
                       "--scale", "0.05", "--no-torch", "--json", str(report),
                       *(["--plot", str(chart)] if plot else []))
    results = json.loads(report.read_text())["results"]
    assert {entry["case"] for entry in results} == {"softmax axis=-1", "softmax axis=1"}
    if plot:
        assert chart.read_bytes()[:8] == PNG_MAGIC


def test_warmup_runs_from_the_wheel(wheel, polyeng_from_wheel):
    out = polyeng_from_wheel(sys.executable, "-m", "polyeng", "warmup", "--engines", "numba", "--ops", "softmax",
                             "--dtype", "f32", "--quiet")
    assert "numba    2 calls" in out and "loaded from the disk cache" in out, out
    version = polyeng_from_wheel(sys.executable, "-m", "polyeng", "--version")
    assert version == f"polyeng {wheel[0].name.split('-')[1]}\n"


def test_run_takes_a_bundled_model_from_the_installed_package(wheel, polyeng_from_wheel):
    pytest.importorskip("onnx")
    path = polyeng_from_wheel(sys.executable, "-c", "from polyeng import models; "
                                                    "print(models.path('unet_opset17.onnx'))").strip()
    assert pathlib.Path(path).resolve().is_relative_to(wheel[2].resolve()), path
    out = polyeng_from_wheel(sys.executable, "-m", "polyeng", "run", path, "--repeat", "1", "--compare",
                             "--engine", "basic")   # no numba compile: the point is the path
    assert "logits  float32[8, 10]" in out and "max |diff|" in out, out
