"""Shared pytest configuration for the polyeng test suite."""
from __future__ import annotations

import os

import pytest

# ---------------------------------------------------------------------------
# Run guards
#
# A suite that silently skips a whole engine (no OpenCL driver, numba missing)
# or runs nothing at all still exits 0, which hides a broken setup. Two guards:
#
# * POLYENG_REQUIRE_ENGINES="basic,numba,opencl" (comma list; `scripts/bootstrap
#   test` and CI set it) stops the run before any test when a named engine is not
#   registered or not available, printing the engine's own reason (exit status 3).
#   Unset or empty: no requirement, so a plain `pytest` on a machine without
#   OpenCL still runs, skipping that engine.
# * A run in which no test passed exits non-zero (5) even if nothing failed,
#   e.g. when every test was skipped.
#
# Under pytest-xdist both guards act in the controlling process only: it checks
# the engines before any worker starts, and it receives every worker's reports.
# ---------------------------------------------------------------------------

REQUIRE_ENGINES_VAR = "POLYENG_REQUIRE_ENGINES"
NOTHING_PASSED_EXIT = pytest.ExitCode.NO_TESTS_COLLECTED

_passed = {"count": 0}


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _engine_problems(required: list[str]) -> list[str]:
    """One line per required engine that cannot run, saying why."""
    import polyeng

    records = {record.name.lower(): record for record in polyeng.engines()}
    problems = []
    for name in required:
        record = records.get(name.lower())
        if record is None:
            problems.append(f"engine {name!r} is not registered (registered: {', '.join(sorted(records))})")
        elif not record.available:
            problems.append(f"engine {name!r} is unavailable: {record.reason}")
    return problems


def pytest_sessionstart(session: pytest.Session) -> None:
    _passed["count"] = 0
    if _is_xdist_worker(session.config):
        return
    required = [name.strip() for name in os.environ.get(REQUIRE_ENGINES_VAR, "").split(",") if name.strip()]
    problems = _engine_problems(required) if required else []
    if problems:
        pytest.exit(
            f"{REQUIRE_ENGINES_VAR}={','.join(required)}, but " + "; ".join(problems)
            + ". Run ./scripts/bootstrap to install what is missing, or change the variable.",
            returncode=3,
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        _passed["count"] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_xdist_worker(config) or exitstatus != pytest.ExitCode.OK:
        return
    if config.option.collectonly or getattr(config.option, "setuponly", False) \
            or getattr(config.option, "setupplan", False):
        return
    if _passed["count"] == 0:
        # Setting session.exitstatus here is what pytest returns from the run.
        session.exitstatus = NOTHING_PASSED_EXIT
        message = "polyeng: no test passed in this run (all skipped or deselected); exit status 5"
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")  # xdist leaves the progress line open
            reporter.write_line(message, red=True, bold=True)
        else:
            print(message)


# ---------------------------------------------------------------------------
# Shared fixtures
# ---------------------------------------------------------------------------


@pytest.fixture
def backends():
    """``backends(plugin)`` registers a backend for one test and unregisters it afterwards."""
    import polyeng

    registered = []

    def register(plugin):
        polyeng.register_backend(plugin)
        registered.append(plugin)
        return plugin
    yield register
    for plugin in reversed(registered):
        polyeng.unregister_backend(plugin)


@pytest.fixture(params=["numba", "opencl"])
def engine(request):
    """Each JIT engine in turn, for the test modules shared by NUMBA and OPENCL; skipped where
    the engine is unavailable (the CI run requires both, see POLYENG_REQUIRE_ENGINES)."""
    import polyeng
    if not {e.name: e for e in polyeng.engines()}[request.param].available:
        pytest.skip(f"{request.param} is unavailable (the CI run requires it)")
    return request.param
