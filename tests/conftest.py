"""Shared pytest configuration for the polyeng test suite."""
from __future__ import annotations

import importlib
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
# * A run in which a test was skipped fails (exit status 6), listing each skip and
#   its reason, unless POLYENG_ALLOW_SKIPS opts out: "1" allows every skip, a comma
#   list allows the skips whose reason contains one of its words
#   (POLYENG_ALLOW_SKIPS=opencl,torch). A skip hides a comparison that did not run,
#   so it is never silent.
#
# Under pytest-xdist both guards act in the controlling process only: it checks
# the engines before any worker starts, and it receives every worker's reports.
#
# Engines under test
#
# A test that takes the `engine` fixture runs once per engine `polyeng.engines()`
# lists when the tests are collected, BASIC excepted (the reference the others are
# compared against); the test ids are the engine names (`-k mirror`). An engine
# that is unavailable, or lacks an op the test declares with
# `@pytest.mark.uses_ops("softmax", ...)` (on the test or as the module's
# `pytestmark`), has that test skipped with the reason. A test marked
# `@pytest.mark.device_tensors` runs only on engines that have device tensors
# (`polyeng.to_device` to them works), so the others do not show it as a skip.
#
# Engines of a subset (ONEDNN: what oneDNN's primitives do) run every test too, but
# a call the engine turns down at selection (its kernel's `accepts` gave a reason,
# or it lacks the op) ends that test as an expected failure (xfail) naming the
# reason, never as a pass or a skip; a kernel that accepted a call and then failed
# or gave a wrong result fails the test. The terminal summary counts the
# turned-down calls by reason, and a test needing an op the engine lacks is not
# generated for it (listed in the summary too).
#
# To put a plugin engine under the whole suite, register it before collection:
#
#     pytest --polyeng-plugin mypackage.engine:MyEngine      (repeatable)
#     POLYENG_TEST_PLUGINS=mypackage.engine:MyEngine,other:plugin pytest
#
# MODULE:ATTR is imported (tests/ is on the path, so `support:MirrorEngine` works);
# a class is instantiated, anything else is passed as it is to
# `polyeng.register_backend`. An engine installed through its entry point is listed
# without either. `-k <engine name>` selects that engine's tests.
# ---------------------------------------------------------------------------

REQUIRE_ENGINES_VAR = "POLYENG_REQUIRE_ENGINES"
ALLOW_SKIPS_VAR = "POLYENG_ALLOW_SKIPS"
SKIPPED_EXIT = 6
TEST_PLUGINS_VAR = "POLYENG_TEST_PLUGINS"
NOTHING_PASSED_EXIT = pytest.ExitCode.NO_TESTS_COLLECTED
REFERENCE_ENGINE = "basic"
SUBSET_ENGINES = ("onednn",)   # engines whose turned-down calls end a test as xfail (see above)
_turned_down: dict = {}   # (engine, reason) -> tests
_not_generated: dict = {}   # engine -> {op: tests}

_passed = {"count": 0}
_skipped: list = []   # (test id, reason) of every skip this run
_test_plugins: list = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--polyeng-plugin", action="append", default=[], metavar="MODULE:ATTR",
                     help="register this engine plugin before collection, so the engine tests run "
                          f"on it too (repeatable; also read from {TEST_PLUGINS_VAR}, comma-separated)")


def _plugin_specs(config: pytest.Config) -> list[str]:
    from_env = os.environ.get(TEST_PLUGINS_VAR, "").split(",")
    return [spec.strip() for spec in config.getoption("polyeng_plugin") + from_env if spec.strip()]


def _load_plugin(spec: str):
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise pytest.UsageError(f"--polyeng-plugin {spec!r}: expected MODULE:ATTR, e.g. support:MirrorEngine")
    try:
        plugin = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise pytest.UsageError(f"--polyeng-plugin {spec!r}: {type(exc).__name__}: {exc}") from None
    return plugin() if isinstance(plugin, type) else plugin


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "uses_ops(*names): the ops a test runs on its `engine`; an engine "
                                       "lacking one of them has the test skipped")
    config.addinivalue_line("markers", "device_tensors: the test runs on engines with device tensors only")
    _keep_graphs_apart(config)
    import polyeng

    for spec in _plugin_specs(config):
        plugin = _load_plugin(spec)
        try:
            polyeng.register_backend(plugin)
        except (TypeError, ValueError) as exc:
            raise pytest.UsageError(f"--polyeng-plugin {spec!r}: {exc}") from None
        _test_plugins.append(plugin)


def _keep_graphs_apart(config: pytest.Config) -> None:
    """The models the suite loads keep their converted graphs in a folder of the run's own, shared by
    its workers (they inherit the variable), not in the user's cache folder, whose 64 least
    recently used files they would push out. A folder the user names is kept."""
    if _is_xdist_worker(config) or os.environ.get("POLYENG_ONNX_CACHE_DIR"):
        return
    import atexit
    import shutil
    import tempfile
    folder = tempfile.mkdtemp(prefix="polyeng-test-graphs-")
    os.environ["POLYENG_ONNX_CACHE_DIR"] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    import polyeng

    while _test_plugins:
        polyeng.unregister_backend(_test_plugins.pop())


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
    _skipped.clear()
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


# Modules whose tests each spend a minute or so in child processes (the wheel's build and its
# demo, which compiles NUMBA's kernels in the wheel's own folder; probes and sweeps in fresh
# processes) are collected first. Last in file order, they kept one xdist worker busy after the
# other had nothing left to take: work stealing cannot split a running test.
RUN_FIRST = ("test_wheel.py", "test_contention.py", "test_hostile_inputs.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    items.sort(key=lambda item: item.path.name not in RUN_FIRST)   # stable: file order within each part


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    xfail = getattr(report, "wasxfail", "")
    for engine in SUBSET_ENGINES:
        prefix = f"{engine} turns this call down: "
        if report.when == "call" and xfail.startswith(prefix):
            _turned_down.setdefault((engine, xfail[len(prefix):]), []).append(report.nodeid)
    if report.when == "call" and report.passed:
        _passed["count"] += 1
    elif report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((report.nodeid, reason.removeprefix("Skipped: ")))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:   # a module-level importorskip or skip
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((report.nodeid, reason.removeprefix("Skipped: ")))


def _allowed_skip_words() -> list[str] | None:
    """None: every skip allowed; else the words of which a skip's reason must contain one."""
    value = os.environ.get(ALLOW_SKIPS_VAR, "").strip()
    if value.lower() in ("1", "true", "yes", "all"):
        return None
    return [word.strip().lower() for word in value.split(",") if word.strip()]


def _unallowed_skips() -> list[tuple[str, str]]:
    words = _allowed_skip_words()
    if words is None:
        return []
    return [(nodeid, reason) for nodeid, reason in _skipped
            if not any(word in reason.lower() for word in words)]


def _fail_run(session: pytest.Session, status: int, lines: list[str]) -> None:
    # Setting session.exitstatus here is what pytest returns from the run.
    session.exitstatus = status
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")  # xdist leaves the progress line open
        for line in lines:
            reporter.write_line(line, red=True, bold=True)
    else:
        print("\n".join(lines))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_xdist_worker(config) or exitstatus != pytest.ExitCode.OK:
        return
    if config.option.collectonly or getattr(config.option, "setuponly", False) \
            or getattr(config.option, "setupplan", False):
        return
    if _passed["count"] == 0:
        _fail_run(session, NOTHING_PASSED_EXIT,
                  ["polyeng: no test passed in this run (all skipped or deselected); exit status 5"])
        return
    skips = _unallowed_skips()
    if skips:
        _fail_run(session, SKIPPED_EXIT,
                  [f"polyeng: {len(skips)} test(s) skipped; a skip fails the run (exit status {SKIPPED_EXIT}) "
                   f"unless {ALLOW_SKIPS_VAR} allows it (1 for all, or words of the reasons: "
                   f"{ALLOW_SKIPS_VAR}=torch,opencl):"]
                  + [f"  {nodeid}: {reason}" for nodeid, reason in skips])


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


@pytest.fixture
def on_basic():
    """The test's calls on BASIC alone: known values and argument rules are the reference engine's."""
    import polyeng
    with polyeng.compute_eng("basic", fallback=False):
        yield


def _parametrized_directly(metafunc: pytest.Metafunc, name: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = names.split(",")
        if name in (n.strip() for n in names):
            return True
    return False


def _skip_reason(record, needed: set) -> str | None:
    if not record.available:
        return f"engine {record.name!r} is unavailable: {record.reason}"
    missing = sorted(needed - set(record.ops))
    if missing:
        return f"engine {record.name!r} does not implement {', '.join(missing)}"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The `engine` fixture's parameters: every engine registered now except the reference."""
    if "engine" not in metafunc.fixturenames or _parametrized_directly(metafunc, "engine"):
        return
    import polyeng
    from polyeng.ops import OPS

    marker = metafunc.definition.get_closest_marker("uses_ops")
    needed = set(marker.args) if marker is not None else set()
    if needed - set(OPS):   # a misspelt op would skip the test on every engine
        raise ValueError(f"uses_ops: unknown op {', '.join(sorted(needed - set(OPS)))}; "
                         f"expected names from {', '.join(sorted(OPS))}")
    params = []
    devices_only = metafunc.definition.get_closest_marker("device_tensors") is not None
    from polyeng.engine.plugins import registry
    for record in polyeng.engines():
        if record.name == REFERENCE_ENGINE:
            continue
        if devices_only and registry().engines[record.name].to_device is None:
            continue
        reason = _skip_reason(record, needed)
        if reason and record.available and record.name in SUBSET_ENGINES:
            for op in sorted(needed - set(record.ops)):
                _not_generated.setdefault(record.name, {}).setdefault(op, set()).add(metafunc.definition.nodeid)
            continue
        params.append(pytest.param(record.name, id=record.name,
                                   marks=pytest.mark.skip(reason=reason) if reason else ()))
    metafunc.parametrize("engine", params, indirect=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    params = getattr(getattr(item, "callspec", None), "params", {})
    engine = params.get("engine", params.get("on_engine"))
    if engine not in SUBSET_ENGINES or call.excinfo is None or report.when != "call":
        return
    from polyeng import EngineError
    exc = call.excinfo.value
    turned_down = (isinstance(exc, EngineError) and exc.engine == engine
                   and exc.reason.startswith(("rejected:", "not implemented:"))
                   and "accepts() raised" not in exc.reason)   # a bug in the rule, not a limit
    if turned_down:   # counted by pytest_runtest_logreport, which sees xdist workers' reports too
        report.outcome, report.wasxfail = "skipped", f"{engine} turns this call down: {exc.op}: {exc.reason}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not (_turned_down or _not_generated):
        return
    write = terminalreporter.write_line
    write("")
    for engine in SUBSET_ENGINES:
        downs = {reason: tests for (e, reason), tests in _turned_down.items() if e == engine}
        if downs:
            write(f"{engine}: {sum(map(len, downs.values()))} test(s) ended as xfail: the engine turned their call down")
            for reason, tests in sorted(downs.items(), key=lambda kv: -len(kv[1])):
                write(f"  {len(tests):5d}  {reason[:160]}")
        for op, tests in sorted(_not_generated.get(engine, {}).items()):
            write(f"{engine}: lacks {op}; {len(tests)} test function(s) not generated for it")


@pytest.fixture
def engine(request):
    """The name of one engine under test; see "Engines under test" at the top of this file."""
    return request.param


@pytest.fixture
def scalar_casts_held(monkeypatch):
    """Programs hold every cast whatever its size, also where oneDNN converts it in its scalar code
    (``simple:any`` without AVX-512), which a program holds only for small values
    (``segment.SCALAR_CAST``): for the tests of how a program's casts keep subnormals and -0.0."""
    from polyeng.backends.onednn import segment
    monkeypatch.setattr(segment, "SCALAR_CAST", 1 << 40)
