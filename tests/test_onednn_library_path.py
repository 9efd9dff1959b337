"""Which ``libdnnl.so.3`` the ONEDNN engine loads: the ``onednn-cpu-gomp`` wheel's own file, as its
``RECORD`` names it, before any other build in the environment's or the system's ``lib`` (another
build may use another OpenMP runtime), and without importing ``importlib.metadata``."""
import os
import subprocess
import sys

from polyeng.backends.onednn import _lib


def _wheel(site, lib_folder, name="onednn_cpu_gomp-2023.2.0.dist-info"):
    info = site / name
    info.mkdir(parents=True)
    lib_folder.mkdir(parents=True, exist_ok=True)
    (lib_folder / _lib.SONAME).write_bytes(b"wheel's")
    relative = os.path.relpath(lib_folder / _lib.SONAME, site)
    (info / "RECORD").write_text(f"onednn/__init__.py,,\n{relative},sha256=x,7\n")
    return str(lib_folder / _lib.SONAME)


def test_a_user_install_of_the_wheel_wins_over_another_build_in_the_environment(tmp_path, monkeypatch):
    prefix = tmp_path / "venv"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "lib" / _lib.SONAME).write_bytes(b"another build")
    user_site = tmp_path / "home" / ".local" / "lib" / "python3.11" / "site-packages"
    wheel = _wheel(user_site, tmp_path / "home" / ".local" / "lib")
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nothing here"), str(user_site)])
    assert _lib.library_path() == wheel
    # without the wheel, the environment's library
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert _lib.library_path() == str(prefix / "lib" / _lib.SONAME)


def test_a_wheel_whose_library_is_missing_falls_back(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _wheel(site, tmp_path / "gone")
    (tmp_path / "gone" / _lib.SONAME).unlink()
    base = tmp_path / "base"
    (base / "lib").mkdir(parents=True)
    (base / "lib" / _lib.SONAME).write_bytes(b"base")
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "base_prefix", str(base))
    assert _lib.library_path() == str(base / "lib" / _lib.SONAME)


def test_the_installed_wheel_is_found_without_importlib_metadata():
    code = ("import sys; from polyeng.backends.onednn import _lib; path = _lib.library_path(); "
            "print(path, 'importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "False" and out[0].endswith(_lib.SONAME), out
    assert os.path.exists(out[0])
