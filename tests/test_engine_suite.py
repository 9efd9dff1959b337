"""The per-family engine tests run on every engine registered for the run: a plugin engine put
under the suite with ``--polyeng-plugin`` gets the same tests as a built-in engine, under its own
name, run on its own kernels, and skips those of ops it does not implement with that reason."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLUGIN = "support:MirrorEngine"   # tests/support.py: softmax, log_softmax and gelu
EXEC_LINE = re.compile(r"polyeng,exec,(\w+),(\w+),(\w+),")
SECTION = re.compile(r"^_{3,} (\S.*?) _{3,}$", re.M)


# these test files do not use hypothesis, whose pytest plugin imports it whole: 1.7 of the 3 s
# that starting such a run took
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")


def pytest_run(*args, allow_skips=None):
    env = dict(os.environ, POLYENG_VERBOSE="1")   # one exec line per op call, naming the engine
    for name in ("POLYENG_REQUIRE_ENGINES", "POLYENG_TEST_PLUGINS", "PYTEST_ADDOPTS", "POLYENG_ALLOW_SKIPS"):
        env.pop(name, None)
    if allow_skips is not None:
        env["POLYENG_ALLOW_SKIPS"] = allow_skips
    command = [sys.executable, "-m", "pytest", *args, "--polyeng-plugin", PLUGIN,
               "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *NO_HYPOTHESIS]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def outcomes(output, outcome):
    return re.findall(rf"^{outcome} (tests/\S+::\S+)", output, re.M)


def test_a_plugin_engine_is_collected_like_a_built_in_one():
    code, output = pytest_run("tests/test_op_softmax.py", "--collect-only")
    assert code == 0, output
    ids = re.findall(r"^tests/\S+::\S+$", output, re.M)
    mirror = {i.replace("[mirror", "[ENGINE") for i in ids if "[mirror" in i}
    numba = {i.replace("[numba", "[ENGINE") for i in ids if "[numba" in i}
    assert mirror and mirror == numba
    assert not any("[basic" in i for i in ids)   # the reference is not tested against itself


def test_the_softmax_suite_runs_on_the_plugin_engines_kernels():
    code, output = pytest_run("tests/test_op_softmax.py", "-k", "mirror", "-rA")
    assert code == 0, output
    passed = outcomes(output, "PASSED")
    assert passed and all("[mirror" in test for test in passed), output
    # the only skips: device tensors, which the mirror engine does not have
    skipped = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", output, re.M)
    assert all("engine='mirror' has no device tensors" in reason for reason in skipped), skipped
    # every passed test ran softmax or log_softmax on the mirror's kernels (the tests pin the
    # engine with fallback=False, so no other engine can stand in), BASIC being the reference
    sections = SECTION.split(output.split("= PASSES =")[1])[1:]
    logs = dict(zip(sections[::2], sections[1::2]))
    assert len(logs) == len(passed)
    for test, log in logs.items():
        engines = {(op, engine) for op, engine, step in EXEC_LINE.findall(log)}
        assert {engine for op, engine in engines} <= {"mirror", "basic"}, (test, log)
        assert any(engine == "mirror" for op, engine in engines), (test, log)


def test_tests_of_ops_the_plugin_engine_lacks_are_skipped_with_the_reason():
    code, output = pytest_run("tests/test_op_activation.py", "tests/test_op_pooling.py",
                              "-k", "mirror", "-rA", allow_skips="does not implement")
    assert code == 0, output
    passed = outcomes(output, "PASSED")
    assert passed and all(test.startswith("tests/test_op_activation.py::") for test in passed)
    assert re.search(r"^SKIPPED \[\d+\] tests/test_op_pooling.py.*engine 'mirror' does not implement "
                     r"max_pool2d$", output, re.M), output
    assert "FAILED" not in output and "ERROR" not in output
    assert ",gelu,mirror," in output


def test_skips_of_ops_the_plugin_engine_lacks_fail_the_run_without_an_opt_out():
    code, output = pytest_run("tests/test_op_activation.py", "tests/test_op_pooling.py",
                              "-k", "mirror")
    assert code == 6, output
    assert re.search(r"^  tests/test_op_pooling.py::\S+\[mirror\]: engine 'mirror' does not implement "
                     r"max_pool2d$", output, re.M), output
