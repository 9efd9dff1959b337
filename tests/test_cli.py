"""The command line: info, explain, demo."""
import pytest
from support import FakeEngine

from polyeng.cli import main


def test_info_lists_engines_devices_and_defaults(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
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
    (["explain", "conv2d", "2x3"], "not a polyeng op"),
    (["explain", "softmax", "2x3", "--engine", "cuda"], "not a registered engine"),
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


def test_demo_runs_every_op_and_the_model(capsys):
    assert main(["demo", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    from polyeng.ops import OPS
    for op in OPS:
        assert f"  {op} " in out
    assert "model:" in out and "compute_eng('basic'" in out


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
