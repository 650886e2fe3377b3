"""The plugin manager: discovery, blocking, explicit loading, isolation, duplicates, third-party overrides."""

from __future__ import annotations

import json
import textwrap

import pytest
from support import has_plugin, run_cli

from tilecore.atoms import select_atom
from tilecore.compiler import compile_module
from tilecore.errors import PluginError, TilecoreError
from tilecore.mlir import ir
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

ALL_FIVE = ["cute", "gpu_nvvm", "nvgpu_nvvm", "sm100", "tileas"]
all_installed = pytest.mark.skipif(not all(has_plugin(p) for p in ALL_FIVE), reason="needs all five plugins")
base_installed = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs gpu_nvvm")

LANE_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: !llvm.ptr<1>) kernel {
      %l = gpu.lane_id
      %v = arith.index_cast %l : index to i32
      llvm.store %v, %out : i32, !llvm.ptr<1>
      gpu.return
    }
  }
}
"""


def ops_of(module):
    names = []
    module.operation.walk(lambda op: names.append(op.name) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    return names


def lower_stage6(pm, text=LANE_KERNEL, target="sm_80"):
    ctx = pm.make_context()
    with ctx:
        m = ir.Module.parse(text)
    compile_module(m, resolve_target(target, pm.targets()), CompileOptions(emit="mlir"), pm,
                   stages=["convert-nvgpu-and-gpu-to-nvvm"])
    return ops_of(m)


@all_installed
def test_five_plugins_with_distributions_and_versions(clean_env):
    pm = PluginManager()
    for name, dist in [("gpu_nvvm", "tilecore-gpu-nvvm"), ("nvgpu_nvvm", "tilecore-nvgpu-nvvm"),
                       ("cute", "tilecore-cute"), ("tileas", "tilecore-tileas"), ("sm100", "tilecore-sm100")]:
        info = pm.plugins[name]
        assert info.dist == dist and info.version == "0.1.0"
    assert pm.problems == []
    assert pm.targets()["sm_100a"].plugin == "sm100"
    assert pm.targets()["sm_90a"].plugin == "gpu_nvvm"


@all_installed
def test_plugins_json_cli_lists_registrations(clean_env):
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    by = {p["name"]: p for p in data["plugins"]}
    assert set(ALL_FIVE) <= set(by)
    assert "sm_90a" in by["gpu_nvvm"]["registers"]["targets"]
    assert "sm_100a" in by["sm100"]["registers"]["targets"]
    assert "convert-nvgpu-and-gpu-to-nvvm" in by["gpu_nvvm"]["registers"]["stages"]
    assert "serialize" in by["core"]["registers"]["stages"]


def test_autoload_disabled_gives_core_only_and_p_loads_explicitly(clean_env):
    clean_env.setenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    pm = PluginManager()
    assert list(pm.plugins) == ["core"]
    with pytest.raises(TilecoreError, match=r"install tilecore\[gpu_nvvm\]"):
        resolve_target("sm_80", pm.targets())
    if has_plugin("gpu_nvvm"):
        pm2 = PluginManager(load=["gpu_nvvm"])
        assert set(pm2.plugins) == {"core", "gpu_nvvm"}
        assert pm2.plugins["gpu_nvvm"].dist == "tilecore-gpu-nvvm"
        proc = run_cli("-p", "gpu_nvvm", "plugins", "--json", env={"TILECORE_DISABLE_PLUGIN_AUTOLOAD": "1"})
        assert [p["name"] for p in json.loads(proc.stdout)["plugins"]] == ["core", "gpu_nvvm"]


@pytest.mark.skipif(not has_plugin("sm100"), reason="needs sm100")
def test_disabled_plugins_env_blocks_by_name(clean_env):
    clean_env.setenv("TILECORE_DISABLED_PLUGINS", "sm100, cute")
    pm = PluginManager()
    assert "sm100" not in pm.plugins and "cute" not in pm.plugins
    with pytest.raises(TilecoreError) as ei:
        resolve_target("sm_100a", pm.targets())
    assert "install tilecore[sm100]" in ei.value.message


def test_broken_plugin_is_reported_and_skipped(clean_env, with_thirdparty):
    pm = PluginManager(load=["tilecore_fixture_thirdparty.broken"])
    probs = [p for p in pm.problems if p.plugin == "tilecore_fixture_thirdparty.broken"]
    assert len(probs) == 1
    assert probs[0].hook == "import"
    assert "deliberately broken" in probs[0].reason
    assert "core" in pm.plugins
    assert "serialize" in pm.stages()


def test_malformed_hook_results_are_reported_and_skipped(clean_env, with_thirdparty):
    pm = PluginManager(load=["tilecore_fixture_thirdparty.malformed"])
    targets = pm.targets()
    stages = pm.stages()
    probs = {p.hook: p for p in pm.problems if p.plugin == "malformed"}
    assert "returned str, expected a list" in probs["tilecore_register_targets"].reason
    assert "raised ValueError: stage table unavailable" in probs["tilecore_register_stages"].reason
    assert pm.patterns("convert-nvgpu-and-gpu-to-nvvm", None, None) is not None
    probs = {p.hook: p for p in pm.problems if p.plugin == "malformed"}
    assert probs["tilecore_register_patterns"].reason == "pattern Rootless has no root op name (root='')"
    assert "serialize" in stages
    if has_plugin("gpu_nvvm"):
        assert "sm_80" in targets
    proc = run_cli("-p", "tilecore_fixture_thirdparty.malformed", "plugins", env={"PYTHONPATH": with_thirdparty})
    assert proc.returncode == 0
    assert "warning: plugin 'malformed' skipped in tilecore_register_targets: returned str" in proc.stderr


def _write_module(tmp_path, name, body):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


def test_duplicate_names_fail_naming_both_plugins(clean_env, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("dup_a", "dup_b"):
        _write_module(tmp_path, name, """
            from tilecore.hookspecs import hookimpl
            from tilecore.targets import Target
            from tilecore.stages import Stage
            from tilecore.atoms import Atom
            from tilecore.dialects import DialectDef

            @hookimpl
            def tilecore_register_targets():
                return [Target.make("sm_87", 80)]

            @hookimpl
            def tilecore_register_stages():
                return [Stage("my-stage")]

            @hookimpl
            def tilecore_register_atoms(target):
                return [Atom("my.atom", "copy")]

            @hookimpl
            def tilecore_register_dialects():
                return [DialectDef("mydialect", "irdl.dialect @mydialect {}")]
        """)
    clean_env.setenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    pm = PluginManager(load=["dup_a", "dup_b"])
    for call, kind, name in [(pm.targets, "target", "sm_87"), (pm.stages, "stage", "my-stage"),
                             (lambda: pm.atoms(None), "atom", "my.atom"),
                             (pm.dialects, "dialect", "mydialect")]:
        with pytest.raises(PluginError) as ei:
            call()
        assert ei.value.message == f"duplicate {kind} '{name}' registered by plugins 'dup_a' and 'dup_b'" or \
            ei.value.message == f"duplicate {kind} '{name}' registered by plugins 'dup_b' and 'dup_a'"


def test_stage_ordering_errors_name_plugins(clean_env, tmp_path, monkeypatch):
    from tilecore.stages import StageScheduler

    monkeypatch.syspath_prepend(str(tmp_path))
    _write_module(tmp_path, "cyc", """
        from tilecore.hookspecs import hookimpl
        from tilecore.stages import Stage

        @hookimpl
        def tilecore_register_stages():
            return [Stage("s-one", after=("s-two",)), Stage("s-two", after=("s-one",))]
    """)
    _write_module(tmp_path, "dangling", """
        from tilecore.hookspecs import hookimpl
        from tilecore.stages import Stage

        @hookimpl
        def tilecore_register_stages():
            return [Stage("lonely", after=("no-such-stage",))]
    """)
    clean_env.setenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    with pytest.raises(PluginError, match=r"cycle among 's-one' \(cyc\), 's-two' \(cyc\)"):
        StageScheduler(PluginManager(load=["cyc"]))
    with pytest.raises(PluginError, match="stage 'lonely' of plugin 'dangling' is ordered relative to unknown "
                                          "stage 'no-such-stage'"):
        StageScheduler(PluginManager(load=["dangling"]))


@base_installed
def test_thirdparty_override_wins_and_can_be_blocked(clean_env, with_thirdparty):
    pm = PluginManager()
    assert pm.plugins["thirdparty"].dist == "tilecore-fixture-thirdparty"
    ops = lower_stage6(pm)
    assert "nvvm.read.ptx.sreg.tid.x" in ops and "llvm.and" in ops
    assert "nvvm.read.ptx.sreg.laneid" not in ops

    clean_env.setenv("TILECORE_DISABLED_PLUGINS", "thirdparty")
    blocked = PluginManager()
    assert "thirdparty" not in blocked.plugins
    ops = lower_stage6(blocked)
    assert "nvvm.read.ptx.sreg.laneid" in ops and "llvm.and" not in ops


@base_installed
def test_thirdparty_pattern_shown_as_winner_in_pipeline(clean_env, with_thirdparty):
    proc = run_cli("pipeline", "--gpu-name", "sm_80", "--json", env={"PYTHONPATH": with_thirdparty})
    assert proc.returncode == 0, proc.stderr
    stage6 = next(s for s in json.loads(proc.stdout)["stages"] if s["stage"] == "convert-nvgpu-and-gpu-to-nvvm")
    winners = stage6["patterns"]["gpu.lane_id"]
    # the only Python pattern: without it upstream's convert-gpu-to-nvvm (gpu_nvvm's native pass) lowers lane_id
    assert winners == [{"pattern": "LaneIdFromTid", "plugin": "thirdparty", "benefit": 10}]
    assert any("convert-gpu-to-nvvm" in p["pipeline"] for p in stage6["native_passes"])


@base_installed
def test_thirdparty_custom_atom_is_selected(clean_env, with_thirdparty):
    pm = PluginManager()
    t = resolve_target("sm_80", pm.targets())
    atoms = pm.atoms(t)
    assert atoms["thirdparty.copy.fast"].plugin == "thirdparty"
    chosen = select_atom(atoms, "copy", t)
    assert chosen.name == "thirdparty.copy.fast"
    assert chosen.lower() == "thirdparty.copy.fast"


def test_dialect_that_does_not_load_is_reported_and_skipped(clean_env, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_module(tmp_path, "baddialect", """
        from tilecore.hookspecs import hookimpl
        from tilecore.dialects import DialectDef

        @hookimpl
        def tilecore_register_dialects():
            return [DialectDef("broken_d", "irdl.dialect @broken_d { this is not irdl }"),
                    DialectDef("fine_d", "irdl.dialect @fine_d { irdl.operation @op {} }")]
    """)
    clean_env.setenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    pm = PluginManager(load=["baddialect"])
    ctx = pm.make_context()
    probs = [p for p in pm.problems if p.plugin == "baddialect"]
    assert len(probs) == 1 and probs[0].hook == "tilecore_register_dialects"
    assert probs[0].reason.startswith("IRDL definition of dialect 'broken_d' does not load: ")
    with ctx:
        m = ir.Module.parse('"fine_d.op"() : () -> ()')
    assert "fine_d.op" in str(m)
