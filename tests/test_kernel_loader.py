"""Built-in kernels are found by name, engines are probed only when the priority order reaches
them, and kernels receive the prepared facts of their call."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyeng
from polyeng.backends import _loader
from polyeng.engine.call import Prepared
from polyeng.ops import OPS
from polyeng.engine.plugins import registry
from polyeng.engine.selector import NOT_PROBED


def test_every_builtin_kernel_is_the_function_named_after_its_op_in_its_family_file():
    reg = registry()
    for engine in ("basic", "numba", "opencl"):
        for op, spec in OPS.items():
            kernel = reg.kernel(op, engine)
            assert kernel is not None and kernel.prepared, (engine, op)
            module = f"polyeng.backends.{engine}.{spec.family}"
            fn = kernel.fn
            if not isinstance(fn, _loader.LazyKernel) and hasattr(fn, "fn"):
                fn = fn.fn   # OPENCL's guard around each kernel
            if isinstance(fn, _loader.LazyKernel):
                assert (fn.module, fn.op) == (module, op)
                fn = fn.load()
            assert fn is getattr(sys.modules[module], op), (engine, op)


def test_the_source_scan_finds_definitions_and_aliases_but_not_support_names():
    names = _loader._top_level_names("polyeng.backends.numba.pooling")
    assert {"avg_pool2d", "avg_pool3d", "max_pool2d", "max_pool3d"} <= names   # 3d is an alias line
    assert "geometry" not in names
    assert _loader._top_level_names("polyeng.backends.numba.no_such_family") == frozenset()


def register_package_engine(name, files, tmp_path, monkeypatch, backends):
    """An engine ``name`` whose kernels the loader finds in package ``<name>_engine`` made of
    ``files`` (family file name -> source), registered for one test."""
    package = tmp_path / f"{name}_engine"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for family, source in files.items():
        (package / f"{family}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))

    class PackageEngine:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine(name)
            _loader.register_kernels(registry, name, package.name)
    backends(PackageEngine())


def test_a_family_file_without_the_function_leaves_the_op_unimplemented(tmp_path, monkeypatch, backends):
    register_package_engine("partial", {"softmax": """
        import numpy as np

        def softmax(p, x, axis):
            e = np.exp(x - x.max(axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)
    """}, tmp_path, monkeypatch, backends)
    info = {e.name: e for e in polyeng.engines()}["partial"]
    assert info.ops == ("softmax",)   # log_softmax shares the family file but is not defined there
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    with polyeng.compute_eng("partial", fallback=False):
        np.testing.assert_allclose(polyeng.softmax(x, axis=1), polyeng.softmax(x, axis=1), rtol=1e-6)
    assert "partial_engine.softmax" in sys.modules
    decision = polyeng.explain("log_softmax", x)
    assert {c.engine: c.verdict for c in decision.candidates}["partial"] == "not implemented"


def test_kernels_get_the_prepared_facts_of_the_call(backends):
    seen = []

    class Recording:   # a built-in-style kernel record: called with the prepared facts first
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            from polyeng.engine.registry import KernelRecord
            registry.add_engine("recording")
            basic = registry.kernel("max_pool2d", "basic").fn
            registry.add_kernel_record(KernelRecord("max_pool2d", "recording",
                                                    lambda p, **args: seen.append(p) or basic(p, **args),
                                                    prepared=True))
    backends(Recording())
    x = np.arange(2 * 7 * 9, dtype=np.float32).reshape(1, 2, 7, 9)
    call = polyeng.engine.dispatch.make_call(OPS["max_pool2d"], OPS["max_pool2d"].validate(
        x=x, kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True, return_indices=True))
    p = call.prepared
    assert isinstance(p, Prepared)
    assert p.shape == (1, 2, 4, 5) and p.dtype == np.float32
    assert p.geometry.out == (4, 5) and p.first_index.shape == (4, 5)
    with polyeng.compute_eng("recording", fallback=False):
        values, index = polyeng.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    assert values.shape == p.shape and len(seen) == 1
    assert seen[0].geometry == p.geometry
    np.testing.assert_array_equal(seen[0].first_index, p.first_index)


def test_limits_of_a_kernel_reject_at_the_special_argument_step(backends):
    def reject_axis_0(call):
        return "axis 0 unsupported" if call.args["axis"] == 0 else None

    @_loader.limit(reject_axis_0)
    def softmax(p, x, axis):
        raise AssertionError("never called for axis 0")

    class Limited:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine("limited")
            registry.add_kernel("softmax", "limited", softmax, accepts=softmax.accepts)
    backends(Limited())
    x = np.ones((2, 3), np.float32)
    with polyeng.compute_eng("limited"):
        decision = polyeng.explain("softmax", x, axis=0)
    assert decision.step == "special-argument"
    assert {c.engine: (c.verdict, c.reason) for c in decision.candidates}["limited"] == \
        ("rejected", "axis 0 unsupported")


FIRST_CALL = textwrap.dedent("""
    import json, sys
    import numpy as np
    import polyeng
    y = polyeng.softmax(np.ones(8, np.float32))
    decision = polyeng.explain("softmax", np.ones(8, np.float32))
    print(json.dumps({"numba": "numba" in sys.modules, "pyopencl": "pyopencl" in sys.modules,
                      "sum": float(y.sum()), "verdicts": [c.verdict for c in decision.candidates]}))
""")


def test_a_small_call_on_basic_imports_neither_numba_nor_pyopencl():
    done = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["sum"] == pytest.approx(1.0)
    # the call ran on BASIC before any other engine was reached, so neither library was imported,
    # until explain probed every engine
    assert NOT_PROBED not in result["verdicts"]
    done = subprocess.run([sys.executable, "-c", FIRST_CALL.replace(
        'decision = polyeng.explain("softmax", np.ones(8, np.float32))', "decision = None").replace(
        '"verdicts": [c.verdict for c in decision.candidates]', '"verdicts": []')],
        capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["numba"] and not result["pyopencl"]


def test_a_run_lists_engines_it_did_not_reach_as_not_probed():
    from polyeng.engine.dispatch import plan_for
    x = np.ones(8, np.float32)
    spec = OPS["softmax"]
    plan = plan_for(spec, spec.validate(x=x, axis=-1), registry())
    verdicts = {c.engine: c.verdict for c in plan.decision.candidates}
    assert verdicts["basic"] == "chosen"
    assert verdicts["numba"] == verdicts["opencl"] == NOT_PROBED
    assert all(c.verdict != NOT_PROBED for c in polyeng.explain("softmax", x).candidates)


def test_facts_given_later_are_built_when_first_read_and_once():
    from polyeng.engine.call import later
    built = []
    p = Prepared((2,), np.float32, table=later(lambda: built.append(1) or np.arange(3)), plain=5)
    assert built == [] and p.plain == 5 and "<later>" in repr(p)
    assert p.table.tolist() == [0, 1, 2] and p.table is p.table and built == [1]
    with pytest.raises(AttributeError, match="no fact 'missing'"):
        p.missing


def test_explain_builds_no_window_tables_for_huge_placeholder_inputs():
    # a (200000, 200000) output: its divisor or index table alone would be 320 GB
    x = np.broadcast_to(np.zeros((), np.float32), (1, 1, 400000, 400000))
    assert polyeng.explain("avg_pool2d", x, 2).engine
    assert polyeng.explain("max_pool2d", x, 2, return_indices=True).engine


def test_the_source_scan_reads_bindings_not_text(tmp_path, monkeypatch):
    (tmp_path / "scanned.py").write_text(textwrap.dedent('''\
        """Docstring mentioning
        softmax = not a definition
        """
        import numpy as np
        from math import erf as gelu
        text = """
        log_softmax = inside a string
        """
        if np.__version__:
            def layer_norm(p, x):
                return x
        else:
            layer_norm = None
        try:
            cast = np.asarray
        except ImportError:
            pass
        matmul, linear = 1, 2
        lstm: int = 3
        select: int
        async def concat(p):
            pass
        class permute_contiguous:
            pass
        call(softmax=1)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    names = _loader._top_level_names("scanned")
    assert {"np", "gelu", "text", "layer_norm", "cast", "matmul", "linear", "lstm", "concat",
            "permute_contiguous"} <= names
    assert not names & {"softmax", "log_softmax", "select"}


def test_a_cached_plan_keeps_no_input_array_alive():
    import gc
    import weakref
    for op in (polyeng.avg_pool2d, polyeng.max_pool2d, polyeng.upsample_bilinear2d):
        x = np.ones((1, 1, 8, 8), np.float32)
        ref = weakref.ref(x)
        if op is polyeng.upsample_bilinear2d:
            op(x, scale_factor=2)
        else:
            op(x, 2)
        del x
        gc.collect()
        assert ref() is None, op.__name__
    # nor do prepared facts not read yet
    for name, kwargs in (("avg_pool2d", dict(kernel_size=2, stride=None, padding=0, ceil_mode=False,
                                             count_include_pad=True, divisor_override=None)),
                         ("max_pool2d", dict(kernel_size=2, stride=None, padding=0, dilation=1, ceil_mode=False,
                                             return_indices=True)),
                         ("upsample_bilinear2d", dict(size=None, scale_factor=2, align_corners=False))):
        x = np.ones((1, 1, 8, 8), np.float32)
        ref = weakref.ref(x)
        prepared = OPS[name].prepare(OPS[name].validate(x=x, **kwargs))
        del x
        gc.collect()
        assert ref() is None and prepared._later, name


def test_a_lazy_kernel_whose_module_fails_to_import_falls_back_with_a_warning(tmp_path, monkeypatch, backends):
    register_package_engine("broken", {"activation": """
        from polyeng_kernel_library_not_installed import gelu_kernel

        def gelu(p, x, approximate):
            return gelu_kernel(x)
    """}, tmp_path, monkeypatch, backends)
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    with polyeng.compute_eng("broken"):
        assert polyeng.explain("gelu", x).engine == "broken"   # not mistaken for a limit
        with pytest.warns(polyeng.FallbackWarning, match="polyeng_kernel_library_not_installed"):
            y = polyeng.gelu(x)
    np.testing.assert_array_equal(y, polyeng.gelu(x))


def test_builtin_kernels_are_found_when_polyeng_is_imported_from_a_zip(tmp_path):
    import pathlib
    import zipfile
    root = pathlib.Path(polyeng.__file__).parent
    archive = tmp_path / "polyeng.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in root.rglob("*"):
            if path.suffix in (".py", ".cl"):
                zf.write(path, path.relative_to(root.parent))
    code = ("import numpy as np, polyeng; assert polyeng.__file__.startswith(%r); "
            "print(float(polyeng.softmax(np.ones(4, np.float32)).sum()), "
            "sorted(e.name for e in polyeng.engines() if len(e.ops) == len(polyeng.ops.OPS)))" % str(archive))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(archive)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(None, 1) == ["1.0", "['basic', 'numba', 'opencl']\n"]


def test_the_scan_follows_an_edited_file_past_its_bytecode_cache(tmp_path, monkeypatch):
    """The scan reads the module's code from the bytecode cache it writes, as an import does; a
    file edited afterwards is read again (the cache records the source's time and size)."""
    import os
    monkeypatch.setattr(sys, "dont_write_bytecode", False)   # as without PYTHONDONTWRITEBYTECODE
    path = tmp_path / "edited_family.py"
    path.write_text("def gelu(p, x, approximate):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "gelu" in _loader._top_level_names("edited_family")
    assert list((tmp_path / "__pycache__").glob("edited_family.*.pyc"))
    path.write_text("def silu(p, x):\n    return x\n\nfor tanh in (1,):\n    pass\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 10))
    _loader._top_level_names.cache_clear()
    names = _loader._top_level_names("edited_family")
    assert {"silu", "tanh"} <= names and "gelu" not in names
