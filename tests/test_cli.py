"""The command line: --version, info, explain, demo, warmup; one-line errors for bad arguments and
settings, Ctrl-C, and the notice of a cold numba compile."""
import json
import logging
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from support import FakeEngine

from polyeng.cli import build_parser, main

ROOT = pathlib.Path(__file__).resolve().parent.parent


def polyeng_process(*args, env=None, **popen):
    """``python -m polyeng ARGS`` from this checkout, as a Popen (stdout and stderr piped, text)."""
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "polyeng", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def run_polyeng(*args, env=None, timeout=300):
    proc = polyeng_process(*args, env=env)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_info_lists_engines_devices_and_defaults(backends, capsys):
    backends(FakeEngine("fake", ops=("concat",)))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    from polyeng.ops import OPS
    assert f"  basic      available; all {len(OPS)} ops\n" in out and "  fake       available; 1 op: concat\n" in out
    for text in ("engines:", "basic", "numba", "opencl", "OpenCL devices:", "fp math mode:", "compute engine:"):
        assert text in out


def test_explain_shows_step_and_every_candidate(backends, capsys):
    backends(FakeEngine("fake", ops=("concat",)))   # a candidate without the op
    assert main(["explain", "upsample_bilinear2d", "1x3x8x8:f32", "scale_factor=2", "align_corners=True",
                 "--engine", "opencl"]) == 0
    out = capsys.readouterr().out
    assert "step=user" in out and "user=opencl" in out
    for engine in ("basic", "numba", "opencl", "fake"):
        assert engine in out
    assert "not implemented" in out


def test_explain_parses_lists_scalars_and_huge_shapes(capsys):
    assert main(["explain", "concat", "[3:f32,3:f16]"]) == 0
    assert "compute=f32" in capsys.readouterr().out
    assert main(["explain", "softmax", "100000x100000x100"]) == 0   # placeholders take no memory
    assert main(["explain", "select", "4x5:bool", "2x3x4x5", "scalar:bf16"]) == 0


@pytest.mark.parametrize("argv,message", [
    (["explain", "softmax", "2x3:f8"], "dtype='f8'"),
    (["explain", "concat", "[2x3,3x4]", "axis=1"], "sizes must match"),
    (["explain", "conv3d", "2x3"], "not a polyeng op"),
    (["explain", "softmax", "2x3", "--engine", "cuda"], "not a registered engine"),
    (["explain", "softmax", "2x-3:f32"], "'2x-3:f32' is not a tensor: expected SHAPE:DTYPE"),
    (["explain", "softmax", "2.5x3"], "'2.5x3' is not a tensor"),
    (["explain", "softmax", "99999999999x99999999999:f32"], "more elements than numpy can index"),
])
def test_explain_errors_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng explain: ") and message in err and "Traceback" not in err


def test_explain_an_engine_that_cannot_run_the_call_is_a_one_line_error(backends, capsys):
    backends(FakeEngine("fake", ops=("concat",)))
    assert main(["explain", "matmul", "2x3", "3x4", "--engine", "fake", "--no-fallback"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng explain: ") and "engine 'fake' cannot run matmul" in err and "Traceback" not in err


def test_demo_runs_the_encoder_on_every_engine_in_f32_and_bf16(capsys):
    pytest.importorskip("onnx")
    import re

    import polyeng
    assert main(["demo", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("model: encoder_opset17.onnx") and "compiling numba kernels (first run only)..." in out
    assert re.search(r"\d+ of \d+ op nodes in bfloat16, \d+ casts", out)
    assert re.search(r"reference: onnxruntime \S+ on the same file: [\d.]+ ms", out)
    precisions = ("f32", "f32 fpm:bf16", "bf16 AMP")
    row = re.compile(r"^  (\S+)\s+(f32 fpm:bf16|f32|bf16 AMP)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+(\S+)\s+(.+)$")
    rows = {(m[1], m[2]): m for m in map(row.match, out.splitlines()) if m}
    engines = [e.name for e in polyeng.engines() if e.available] + ["recommend"]
    assert set(rows) == {(e, p) for e in engines for p in precisions}
    assert rows[("basic", "f32")][5] == "0.00e+00"
    for (engine, precision), m in rows.items():
        limit = 1e-4 if precision == "f32" else 5e-2
        assert float(m[3]) > 0 and float(m[4]) > 0 and float(m[5]) < limit, m[0]
        assert m[6] == "-" or float(m[6]) < limit, m[0]
        if engine == "onednn":   # an engine of a subset: what it lacks runs elsewhere
            assert "onednn: " in m[7] and "linear" in m[7].split("onednn: ")[1], m[0]
        elif engine != "recommend":
            assert m[7].startswith(f"all on {engine} ("), m[0]


def test_info_prints_what_each_engine_says_of_itself(backends, capsys):
    import polyeng

    class Described:
        def __init__(self, name, details):
            self.name, self.details = name, details

        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine(self.name, details=self.details)

    def broken():
        raise RuntimeError("driver gone")
    backends(Described("described", lambda: ["device A", "device B"]))
    backends(Described("broken", broken))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "described details:\n  device A\n  device B" in out
    assert "broken details:\n  (could not be listed: RuntimeError: driver gone)" in out


def test_version_comes_from_the_installed_metadata(capsys):
    from importlib import metadata
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"polyeng {metadata.version('polyeng')}\n"


def test_info_json_is_machine_readable(capsys):
    import polyeng
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"python", "numpy", "numba", "llvmlite", "pyopencl", "ml_dtypes", "polyeng"} <= set(info["versions"])
    if {e.name: e for e in polyeng.engines()}["onednn"].available:   # how its programs run, and where
        assert any(line.startswith("programs' compiled loop: llvmlite ") and line.endswith("compiled")
                   for line in info["details"]["onednn"]), info["details"]["onednn"]
    engines = {e["name"]: e for e in info["engines"]}
    assert set(engines) == {e.name for e in polyeng.engines()}
    assert engines["basic"]["available"] is True and engines["basic"]["reason"] == ""
    assert "softmax" in engines["basic"]["ops"]
    assert info["defaults"] == {"compute_engine": "recommend", "compute_engine_source": "default",
                                "fp_math_mode": "strict", "fp_math_mode_source": "default", "verbose": 0,
                                "plugin_autoload": True}
    if engines["opencl"]["available"]:
        devices = info["opencl_devices"]
        assert [d["used"] for d in devices].count(True) == 1
        assert {"index", "platform", "device", "type", "compute_units", "memory_mib", "fp64"} <= set(devices[0])


def test_explain_json_gives_the_decision_and_both_compute_names(capsys):
    assert main(["explain", "matmul", "64x768:f32", "768x768:f32", "--fp-math", "bf16", "--engine", "basic",
                 "--json"]) == 0
    decision = json.loads(capsys.readouterr().out)
    assert decision["op"] == "matmul" and decision["engine"] == "basic" and decision["step"] == "user"
    assert decision["fp_math_mode"] == "bf16"
    assert decision["compute_dtype"] == "bfloat16" and decision["compute_type"] == "bf16"
    verdicts = {c["engine"]: c["verdict"] for c in decision["candidates"]}
    assert verdicts["basic"] == "chosen" and set(verdicts) >= {"numba", "opencl"}
    assert all(set(c) == {"engine", "verdict", "reason"} for c in decision["candidates"])


def test_explain_defaults_to_the_process_settings(capsys):
    import polyeng
    polyeng.set_default_fp_math_mode("bf16")
    try:
        assert main(["explain", "matmul", "2x3", "3x4", "--json"]) == 0
    finally:
        polyeng.set_default_fp_math_mode("strict")
    assert json.loads(capsys.readouterr().out)["fp_math_mode"] == "bf16"


def test_every_explain_argument_has_help_and_the_tensor_syntax_is_explained(capsys):
    explain = build_parser()._subparsers._group_actions[0].choices["explain"]
    for action in explain._actions:
        assert action.help, f"{action.dest} has no help"
    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    text = capsys.readouterr().out
    for fragment in ("1x3x8x8:f32", "SHAPE:DTYPE", "name=value", "bf16", "[2x3,2x4]", "examples:",
                     "polyeng explain max_pool2d"):
        assert fragment in text


@pytest.mark.parametrize("argv,message", [
    (["bench", "--repeat", "x"], "argument --repeat: invalid int value: 'x'"),
    (["explain"], "the following arguments are required: op"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1 and err.startswith("polyeng")


def test_demo_needs_a_repetition(capsys):
    assert main(["demo", "--repeats", "0"]) == 2
    assert capsys.readouterr().err == "polyeng demo: error: --repeats 0: expected a positive number\n"


def test_no_command_is_a_one_line_error(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng: error: no command given") and err.count("\n") == 1


BAD_SETTINGS = [("POLYENG_VERBOSE", "abc"), ("POLYENG_COMPUTE_ENG", "nonsense"),
                ("POLYENG_DEFAULT_FP_MATH_MODE", "nonsense"), ("POLYENG_DISABLE_PLUGIN_AUTOLOAD", "maybe"),
                ("POLYENG_NUM_THREADS", "0")]


@pytest.mark.parametrize("command", [["info"], ["bench", "--quiet"], ["explain", "softmax", "2x3"],
                                     ["demo"], ["warmup"], ["run", "model.onnx"]], ids=lambda c: c[0])
@pytest.mark.parametrize("variable,value", BAD_SETTINGS, ids=[v for v, _ in BAD_SETTINGS])
def test_a_bad_environment_variable_is_one_line_and_exit_2(variable, value, command):
    code, out, err = run_polyeng(*command, env={variable: value}, timeout=120)
    assert code == 2, err
    assert err.startswith("polyeng: error: ") and f"{variable}={value!r}" in err
    assert err.count("\n") == 1 and "Traceback" not in err and out == ""


@pytest.mark.parametrize("command", [
    ["bench", "--cases", "concat", "--engines", "basic", "--no-torch", "--scale", "0.01", "--repeat", "100000"],
    ["demo", "--repeats", "1000"],   # onnxruntime's 1000 runs come first: a few seconds, not minutes
    ["warmup", "--engines", "numba", "--quiet"],   # interrupted inside a numba compile
], ids=lambda c: c[0])
def test_ctrl_c_exits_130_without_a_traceback(command, tmp_path):
    # verbose lines show that the command is running (past the imports) before it is interrupted
    proc = polyeng_process(*command, env={"POLYENG_VERBOSE": "1", "NUMBA_CACHE_DIR": str(tmp_path)})
    try:
        deadline = time.monotonic() + 120
        while "polyeng,exec," not in (line := proc.stderr.readline()):
            assert proc.poll() is None and time.monotonic() < deadline, f"the command ended before any op ran: {line}"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert err.rstrip().endswith("polyeng: interrupted") and "Traceback" not in err


_DROPPED_INTERRUPT = """
import ctypes, sys, time
import polyeng.cli as cli

def command(argv):
    # Ctrl-C landing in a Python callback of C code (as numba's LLVM object cache calls one for each
    # function it compiles) raises KeyboardInterrupt there, and ctypes drops it
    ctypes.CFUNCTYPE(None)(lambda: (_ for _ in ()).throw(KeyboardInterrupt))()
    print("after the callback", file=sys.stderr, flush=True)
    deadline = time.monotonic() + float(argv[0])
    while time.monotonic() < deadline:   # a long command that never looks for an interrupt
        sum(range(1000))
    print("ran to the end", file=sys.stderr)
    return 0

cli._run_command = command
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("twice", [False, True], ids=["once", "dropped-twice"])
def test_an_interrupt_dropped_inside_a_c_callback_still_ends_the_command(twice):
    script = _DROPPED_INTERRUPT
    if twice:   # the interrupt sent again lands in a callback too: it is sent once more
        script = script.replace("    print(\"after", "    ctypes.CFUNCTYPE(None)(lambda: time.sleep(0.5))()\n    print(\"after")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script, "60"], cwd=ROOT, text=True, capture_output=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert time.monotonic() - start < 30   # not the command's 60 s
    assert proc.stderr.endswith("polyeng: interrupted\n") and "ran to the end" not in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


_HALF_BUILT = """
import sys
import polyeng.cli as cli

class HalfBuilt:   # as llvmlite's OutputString: __init__ interrupted before it set what __del__ reads
    def __init__(self):
        raise KeyboardInterrupt

    def __del__(self):
        self._owned

def command(argv):
    HalfBuilt()

cli._run_command = command
sys.exit(cli.main([]))
"""


def test_an_object_the_interrupt_left_half_built_dies_quietly():
    proc = subprocess.run([sys.executable, "-c", _HALF_BUILT], cwd=ROOT, text=True, capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stderr == "polyeng: interrupted\n", proc.stderr


def test_a_closed_output_pipe_ends_quietly():
    proc = polyeng_process("info")
    proc.stdout.close()   # as ``polyeng info | head -0``: the reader is gone before anything is written
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err and err == ""


def test_library_notices_are_shown_on_stderr_while_a_command_runs(capsys):
    from polyeng.cli.console import notices
    logger = logging.getLogger("polyeng.compile")
    with notices():
        logger.info("compiling numba kernels for softmax")
    logger.info("not shown once the command is over")
    assert capsys.readouterr().err == "polyeng: compiling numba kernels for softmax\n"


def test_fallback_warnings_are_one_line_while_a_command_runs(capsys):
    import warnings

    import polyeng
    from polyeng.cli.console import notices
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with notices():
            warnings.warn("kernel of softmax on numba failed: RuntimeError: boom; ran on basic",
                          polyeng.FallbackWarning)
    assert capsys.readouterr().err == ("polyeng: warning: kernel of softmax on numba failed: RuntimeError: boom; "
                                       "ran on basic\n")


def test_a_cold_numba_compile_is_announced_once_per_family(tmp_path):
    bench = ["bench", "--cases", "softmax", "--engines", "numba", "--no-torch", "--scale", "0.01", "--repeat", "1",
             "--quiet"]
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    code, _, err = run_polyeng(*bench, env=env)   # softmax over the last axis and over axis 1: two kernels
    assert code == 0, err
    assert err == ("polyeng: compiling numba kernels for softmax, log_softmax "
                   "(first use; cached on disk for later runs)\n")
    code, _, err = run_polyeng(*bench, env=env)   # loaded from the disk cache: nothing to say
    assert code == 0 and err == ""


PROGRAM_LOOPS = """
import sys
from polyeng.backends.onednn import _llvm
optimised = []
real = _llvm._optimise
_llvm._optimise = lambda *args: optimised.append(1) or real(*args)
from polyeng.cli.warmup import _warm_program_loops
from polyeng.backends.onednn import _native, _scans
_warm_program_loops({"seconds": 0.0})
print(_native.available(), _scans.compiled() is not None, "numba" in sys.modules, len(optimised),
      "llvmlite.binding" in sys.modules)
"""


def test_warmup_compiles_the_onednn_programs_loops_and_scans_once_without_numba(tmp_path):
    """They are llvmlite's: compiled into the cache folder by the first process, loaded from it by
    the next without LLVM (which optimises nothing and does not load llvmlite's library), and
    numba is not loaded for them."""
    from polyeng.backends.onednn import _native
    if not _native.available():
        pytest.skip(f"no compiled loop for oneDNN programs here: {_native._loop.get('error')}")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    outs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", PROGRAM_LOOPS], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout.split())
    assert outs == [["True", "True", "False", "1", "True"], ["True", "True", "False", "0", "False"]], outs
    assert len(list((tmp_path / "polyeng" / "compiled").glob("*.o"))) == 2


def test_the_compiled_loops_work_where_the_cache_folder_cannot_be_written(tmp_path):
    from polyeng.backends.onednn import _native
    if not _native.available():
        pytest.skip(f"no compiled loop for oneDNN programs here: {_native._loop.get('error')}")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = dict(os.environ, XDG_CACHE_HOME=str(blocker))
    done = subprocess.run([sys.executable, "-c", PROGRAM_LOOPS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.split() == ["True", "True", "False", "1", "True"], \
        (done.stdout, done.stderr)


def test_warmup_compiles_once_then_loads_and_a_workqueue_process_compiles_nothing(tmp_path):
    """A second warmup loads every kernel from the disk cache. torch imported first loads its
    libgomp, so numba's pool runs on the workqueue layer, where a one-thread launch runs the
    kernel's serial compile: warmup has compiled those too. (One test: each cold warmup in a cache
    folder of its own costs a numba start and its compiles.)"""
    warmup = ["warmup", "--engines", "numba", "--ops", "softmax", "--dtype", "f32", "--quiet"]
    code, out, err = run_polyeng(*warmup, env={"NUMBA_CACHE_DIR": str(tmp_path)})
    assert code == 0 and err == "", err
    # softmax over the last axis and over another: two parallel kernels and their serial compiles
    assert "numba    2 calls" in out and "4 kernels compiled, 0 loaded from the disk cache" in out, out
    code, out, err = run_polyeng(*warmup, env={"NUMBA_CACHE_DIR": str(tmp_path)})
    assert code == 0 and "0 kernels compiled, 4 loaded from the disk cache" in out, out
    pytest.importorskip("torch")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_THREADING_LAYER", None)
    script = ("import torch, polyeng\n"
              "from polyeng.cli.warmup import numba_cache_counts, warmup_calls\n"
              "from polyeng.backends.numba import _runtime\n"
              "with polyeng.compute_eng('numba', fallback=False):\n"
              "    for op, args, kwargs in warmup_calls('f32'):\n"
              "        if op == 'softmax':\n"
              "            polyeng.softmax(*args, **kwargs)\n"
              "print(_runtime._pool.get('layer'), numba_cache_counts()[:2], len(_runtime._serial))\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "workqueue (0, 2) 2", done.stdout


def test_warmup_builds_opencl_programs(capsys):
    import polyeng
    from polyeng.cli.warmup import warmup_calls
    if not {e.name: e for e in polyeng.engines()}["opencl"].available:
        pytest.skip("opencl is unavailable (the CI run requires it)")
    assert main(["warmup", "--engines", "opencl", "--ops", "softmax,cast", "--dtype", "f32,bf16", "--quiet"]) == 0
    out, err = capsys.readouterr()
    calls = [len([1 for op, *_ in warmup_calls(d) if op in ("softmax", "cast")]) for d in ("f32", "bf16")]
    assert f"opencl   {sum(calls)} calls" in out and err == ""


@pytest.mark.parametrize("argv,message", [
    (["--engines", "cuda"], "not a registered engine"),
    (["--ops", "conv3d"], "conv3d is not an op"),
    (["--dtype", "f8"], "'f8' is not a supported dtype"),
])
def test_warmup_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(["warmup", "--quiet"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyeng warmup: error: ") and message in err and err.count("\n") == 1


def test_warmup_reports_kernels_that_fail_and_calls_an_engine_rejects(backends, capsys):
    backends(FakeEngine("crashing", ops=("softmax",), fail=("softmax",)))
    backends(FakeEngine("picky", ops=("softmax",), reject={"softmax": lambda call: "axis=1 unsupported"
                                                           if call.args["axis"] == 1 else None}))
    assert main(["warmup", "--engines", "crashing,picky", "--ops", "softmax", "--dtype", "f32", "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert "  picky    1 calls" in out and "  picky    rejected 1 calls: rejected: axis=1 unsupported" in out
    assert err.count("polyeng warmup: failed: crashing softmax f32: ") == 2 and "fake softmax kernel crashed" in err
