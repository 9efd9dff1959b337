"""Entry-point plugins: found in group ``polyeng.backends``, switchable off, never breaking import."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = textwrap.dedent('''
    import polyeng

    class Doubler:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine("doubler", available=lambda: (True, ""))
            registry.add_kernel("concat", "doubler", self.concat)

        def concat(self, tensors, axis):
            import numpy as np
            return np.concatenate(tensors, axis=axis) * 2   # right shape and dtype, values its own
''')

BAD_IMPORT = "raise ImportError('libfoo.so not found')\n"


def _site(tmp_path, entries):
    """A folder on sys.path holding plugin modules and a dist-info that declares their entry points."""
    dist = tmp_path / "polyeng_test_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: polyeng-test-plugins\nVersion: 1.0\n")
    lines = ["[polyeng.backends]"]
    for name, (module, source, target) in entries.items():
        (tmp_path / f"{module}.py").write_text(source)
        lines.append(f"{name} = {target}")
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return str(tmp_path)


def _run(site, code, **env):
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, site]), **env)
    full.pop("POLYENG_DISABLE_PLUGIN_AUTOLOAD", None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


CODE = textwrap.dedent('''
    import numpy as np, polyeng
    for e in polyeng.engines():
        print(e.name, e.available, e.reason, ",".join(e.ops), sep="|")
    with polyeng.compute_eng("doubler"):
        print("values", polyeng.concat([np.ones((1, 2))], axis=0).tolist())
''')


def _engine_rows(out) -> dict:
    """CODE's engine lines by engine name: [name, available, reason, ops]."""
    return {line.split("|")[0]: line.split("|") for line in out.stdout.splitlines() if "|" in line}


def test_entry_point_plugin_is_loaded_and_a_broken_one_is_unavailable(tmp_path):
    site = _site(tmp_path, {"doubler": ("doubler_plugin", GOOD, "doubler_plugin:Doubler"),
                            "broken": ("broken_plugin", BAD_IMPORT, "broken_plugin")})
    out = _run(site, CODE)
    assert out.returncode == 0, out.stderr
    rows = _engine_rows(out)
    assert rows["doubler"][1:] == ["True", "", "concat"]
    assert rows["broken"][1] == "False" and "libfoo.so not found" in rows["broken"][2]
    assert rows["basic"][1] == "True"
    assert "values [[2.0, 2.0]]" in out.stdout


def test_autoload_can_be_switched_off(tmp_path):
    site = _site(tmp_path, {"doubler": ("doubler_plugin", GOOD, "doubler_plugin:Doubler")})
    out = _run(site, "import polyeng; print(sorted(e.name for e in polyeng.engines()))",
               POLYENG_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['basic', 'numba', 'onednn', 'opencl']"


def test_import_does_not_load_plugins(tmp_path):
    site = _site(tmp_path, {"broken": ("broken_plugin", BAD_IMPORT, "broken_plugin")})
    out = _run(site, "import sys, polyeng; print('broken_plugin' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_broken_entry_point_named_like_a_builtin_does_not_shadow_it(tmp_path):
    site = _site(tmp_path, {"basic": ("broken_plugin", BAD_IMPORT, "broken_plugin")})
    out = _run(site, CODE.replace('with polyeng.compute_eng("doubler"):', 'if True:'))
    assert out.returncode == 0, out.stderr
    rows = _engine_rows(out)
    assert rows["basic"][1] == "True"
    assert rows["basic-plugin"][1] == "False" and "libfoo.so not found" in rows["basic-plugin"][2]
    assert "values [[1.0, 1.0]]" in out.stdout


BAD_ACCEPTS = textwrap.dedent('''
    import polyeng

    class BadAccepts:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine("nodevice")
            registry.add_kernel("concat", "nodevice", lambda tensors, axis: tensors[0], accepts="axis=0 only")
''')


def test_an_entry_point_whose_hook_fails_leaves_its_engine_unavailable(tmp_path):
    # unlike register_backend, which raises: a broken installed plugin must not break polyeng
    site = _site(tmp_path, {"nodevice": ("nodevice_plugin", BAD_ACCEPTS, "nodevice_plugin:BadAccepts")})
    out = _run(site, CODE.replace('with polyeng.compute_eng("doubler"):', 'if True:'))
    assert out.returncode == 0, out.stderr
    rows = _engine_rows(out)
    assert rows["nodevice"][1] == "False"
    assert rows["nodevice"][2] == ("plugin 'nodevice' failed to register: TypeError: add_kernel('concat', "
                                   "'nodevice'): accepts='axis=0 only' must be a callable (call -> None or a "
                                   "reason string) or None")
    assert "values [[1.0, 1.0]]" in out.stdout


def test_a_bad_autoload_switch_is_an_error_on_first_use_not_on_import(tmp_path):
    site = _site(tmp_path, {"doubler": ("doubler_plugin", GOOD, "doubler_plugin:Doubler")})
    out = _run(site, "import polyeng; print('imported', flush=True); polyeng.engines()",
               POLYENG_DISABLE_PLUGIN_AUTOLOAD="maybe")
    assert out.stdout.strip() == "imported"
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1] == (
        "ValueError: POLYENG_DISABLE_PLUGIN_AUTOLOAD='maybe' is not a switch; expected 1, true, yes or on "
        "(autoload off), or 0, false, no, off or empty (autoload on)")


def test_without_a_declared_entry_point_importlib_metadata_is_not_loaded(tmp_path):
    # it and the modules it imports hold about 3 MB of every process that runs an op
    code = textwrap.dedent('''
        import sys, numpy as np, polyeng
        polyeng.relu(np.ones(3, np.float32))
        loaded = "importlib.metadata" in sys.modules   # before engines() asks numba and pyopencl
        print(sorted(e.name for e in polyeng.engines()), loaded)
    ''')
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _run(str(empty), code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("]")[1].strip() == "False", done.stdout
    # the same process with a plugin declared finds it
    done = _run(_site(tmp_path, {"doubler": ("doubler_plugin", GOOD, "doubler_plugin:Doubler")}), code)
    assert done.returncode == 0 and "'doubler'" in done.stdout and done.stdout.strip().endswith("True"), done.stdout


def test_the_entry_point_scan_defers_to_importlib_metadata_where_it_cannot_see(tmp_path, monkeypatch):
    from importlib.machinery import PathFinder
    from polyeng.engine import plugins
    own = [f for f in sys.meta_path if f is PathFinder or not hasattr(f, "find_distributions")]
    monkeypatch.setattr(sys, "meta_path", own)   # without what other tests' imports added
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert plugins._declared_anywhere() is False
    archive = tmp_path / "plugins.zip"   # a zip on sys.path: distributions may be inside
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(archive)])
    assert plugins._declared_anywhere() is True

    egg = tmp_path / "doubler-1.0-py3.11.egg"   # a plugin installed as an egg folder on sys.path
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: doubler\nVersion: 1.0\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[polyeng.backends]\ndoubler = doubler_plugin:Doubler\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(egg)])
    assert plugins._declared_anywhere() is True
    from importlib import metadata   # the case importlib.metadata's own path finder reads
    found = metadata.MetadataPathFinder.find_distributions(metadata.DistributionFinder.Context(path=[str(egg)]))
    assert [ep.name for d in found for ep in d.entry_points if ep.group == "polyeng.backends"] == ["doubler"]

    class Finder:   # a finder that lists distributions of its own
        @staticmethod
        def find_distributions(context=None):
            return iter(())
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", sys.meta_path + [Finder])
    assert plugins._declared_anywhere() is True
