"""The suite's own guards: a skipped test fails the run unless POLYENG_ALLOW_SKIPS opts out."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SKIPPING_TESTS = '''
import pytest
def test_ok(): pass
def test_skip(): pytest.skip("needs the moon")
'''
SKIPPING_MODULE = '''
import pytest
pytest.importorskip("no_such_module_for_polyeng_tests")
def test_never(): pass
'''


def _run_pytest(tmp_path: Path, allow: str | None, *extra) -> subprocess.CompletedProcess:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    env = {k: v for k, v in os.environ.items() if k not in ("POLYENG_ALLOW_SKIPS", "POLYENG_REQUIRE_ENGINES",
                                                            "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    if allow is not None:
        env["POLYENG_ALLOW_SKIPS"] = allow
    # no hypothesis plugin: it imports hypothesis whole, 1.7 of the 3 s such a run took
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           *extra, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("allow, status", [(None, 6), ("", 6), ("sun,stars", 6), ("1", 0), ("Moon", 0),
                                           ("sun, moon", 0)])
def test_a_skip_fails_the_run_unless_allowed(tmp_path, allow, status):
    (tmp_path / "test_s.py").write_text(SKIPPING_TESTS)
    result = _run_pytest(tmp_path, allow)
    assert result.returncode == status, result.stdout + result.stderr
    if status:
        assert "test_s.py::test_skip: needs the moon" in result.stdout
        assert "POLYENG_ALLOW_SKIPS" in result.stdout


def test_a_skipped_module_fails_the_run(tmp_path):
    (tmp_path / "test_s.py").write_text(SKIPPING_TESTS)
    (tmp_path / "test_m.py").write_text(SKIPPING_MODULE)
    result = _run_pytest(tmp_path, "moon")
    assert result.returncode == 6, result.stdout + result.stderr
    assert "no_such_module_for_polyeng_tests" in result.stdout


def test_skips_under_xdist_fail_the_run(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_s.py").write_text(SKIPPING_TESTS)
    result = _run_pytest(tmp_path, None, "-n", "2")
    assert result.returncode == 6, result.stdout + result.stderr
    assert "needs the moon" in result.stdout
