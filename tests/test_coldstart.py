"""Cold-start measures of ``tilecore compile`` (issue 18): the MLIR libraries loaded on a second thread
(tilecore.preload), the garbage collector off during a single compile, dataclass methods from a byte-code
cache (tilecore.codecache). Each must leave the output unchanged."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest
from support import CORPUS, has_plugin, run_cli

VADD = os.path.join(CORPUS, "vadd_f32.tileirbc")
needs_corpus = pytest.mark.skipif(not (os.path.exists(VADD) and has_plugin("tileas")),
                                  reason="needs the visible corpus and the tileas plugin")


def test_preload_loads_the_bindings_libraries_once_and_the_bindings_work():
    code = (
        "import sys, tilecore.preload as p\n"
        "started = p.start()\n"
        "p.wait()\n"
        "maps = open('/proc/self/maps').read()\n"
        "before = {l.split()[-1] for l in maps.splitlines() if l.endswith(('libMLIRPythonCAPI.so', 'libLLVM.so'))}\n"
        "mlir_before = 'mlir' in sys.modules\n"
        "from tilecore.mlir import ir\n"
        "maps = open('/proc/self/maps').read()\n"
        "after = {l.split()[-1] for l in maps.splitlines() if l.endswith(('libMLIRPythonCAPI.so', 'libLLVM.so'))}\n"
        "with ir.Context():\n"
        "    m = ir.Module.parse('func.func @f(%a: i32) -> i32 { %b = arith.addi %a, %a : i32\\n return %b : i32 }')\n"
        "print(started, mlir_before, sorted(os.path.basename(x) for x in before), before == after, p.start(),\n"
        "      'arith.addi' in str(m))\n"
    )
    proc = subprocess.run([sys.executable, "-c", "import os\n" + code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # loaded by the thread before any mlir module was imported; the bindings' import found the same files
    assert proc.stdout.strip() == "True False ['libLLVM.so', 'libMLIRPythonCAPI.so'] True False True"


def test_preload_does_nothing_once_the_bindings_are_loaded():
    import tilecore.mlir  # noqa: F401
    from tilecore import preload

    assert preload.start() is False
    preload.wait()  # no thread: returns at once


def test_preload_library_path_is_the_bindings_own():
    import mlir._mlir_libs

    from tilecore import preload

    assert preload.library_path() == os.path.join(os.path.dirname(mlir._mlir_libs.__file__), "libMLIRPythonCAPI.so")


@needs_corpus
def test_single_compile_output_equals_the_in_process_compile_and_gc_is_restored(tmp_path):
    from tilecore.cli import main
    from tilecore.compiler import compile_file

    # the CLI's cold path (a fresh process: preload thread, GC off) against a compile in this process
    out = tmp_path / "vadd.cubin"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "-o", str(out), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    want = compile_file(VADD, "sm_90a").artifacts["cubin"]
    assert out.read_bytes() == want
    # main() called from Python leaves the collector as it found it
    assert gc.isenabled()
    again = tmp_path / "again.cubin"
    assert main(["compile", VADD, "--gpu-name", "sm_90a", "-o", str(again), "--no-cache"]) == 0
    assert gc.isenabled() and again.read_bytes() == want
    gc.disable()
    try:
        assert main(["compile", VADD, "--gpu-name", "sm_90a", "-o", str(again), "--no-cache"]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def _codecache_child(cache_file: str, code: str) -> str:
    """Run ``code`` in a fresh interpreter with tilecore.codecache installed on ``cache_file``."""
    prog = ("import sys, tilecore.codecache as c\n"
            f"c.path = lambda: {cache_file!r}\n"
            "assert c.install()\n" + code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


DATACLASSES = (
    "import dataclasses, typing\n"
    "@dataclasses.dataclass(frozen=True)\n"
    "class P:\n"
    "    x: int\n"
    "    y: typing.Tuple[int, ...] = ()\n"
    "@dataclasses.dataclass(order=True)\n"
    "class Q:\n"
    "    a: str\n"
    "    b: list = dataclasses.field(default_factory=list)\n"
    "p = P(1, (2,))\n"
    "try:\n"
    "    p.x = 3\n"
    "    frozen = False\n"
    "except dataclasses.FrozenInstanceError:\n"
    "    frozen = True\n"
    "print(repr(p), p == P(1, (2,)), hash(p) == hash(P(1, (2,))), frozen, Q('a') < Q('b'), Q('a').b,\n"
    "      P.__init__.__annotations__['x'] is int, c._new)\n"
)


def test_codecache_gives_the_same_classes_and_compiles_a_text_once(tmp_path):
    from tilecore import codecache

    cache_file = str(tmp_path / "pycache" / "codecache.dataclasses")
    first = _codecache_child(cache_file, DATACLASSES + "print(c.save())\n")
    # annotations stay objects (compiled without tilecore's __future__ flags, as dataclasses' exec does)
    assert first == "P(x=1, y=(2,)) True True True True [] True True\nTrue"
    assert open(cache_file, "rb").read().startswith(__import__("importlib.util").util.MAGIC_NUMBER)
    # a second process takes every method from the file: nothing compiled, nothing to write
    assert _codecache_child(cache_file, DATACLASSES + "print(c.save())\n") == \
        "P(x=1, y=(2,)) True True True True [] True False\nFalse"
    # the builtin exec is back after uninstall
    import dataclasses

    assert codecache.install() and dataclasses.exec is codecache._exec
    codecache.uninstall()
    assert "exec" not in vars(dataclasses)


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x00\x00\x00\x00" + b"\xff" * 20, None])
def test_codecache_ignores_a_corrupt_or_foreign_file_and_rewrites_it(tmp_path, content):
    import importlib.util
    import marshal

    cache_file = tmp_path / "codecache.dataclasses"
    if content is None:  # the right texts, but values that are not code objects
        _codecache_child(str(cache_file), DATACLASSES + "c.save()\n")
        table = marshal.loads(cache_file.read_bytes()[len(importlib.util.MAGIC_NUMBER):])
        assert len(table) >= 8
        content = importlib.util.MAGIC_NUMBER + marshal.dumps({t: "raise SystemExit(3)" for t in table})
    cache_file.write_bytes(content)
    out = _codecache_child(str(cache_file), DATACLASSES + "print(c.save())\n")
    assert out == "P(x=1, y=(2,)) True True True True [] True True\nTrue"
    assert cache_file.read_bytes().startswith(importlib.util.MAGIC_NUMBER)


def test_codecache_writes_nothing_when_byte_code_is_not_written(tmp_path):
    cache_file = tmp_path / "codecache.dataclasses"
    out = _codecache_child(str(cache_file), "sys.dont_write_bytecode = True\n" + DATACLASSES + "print(c.save())\n")
    assert out.endswith("True\nFalse") and not cache_file.exists()


def test_sm100_atoms_are_registered_only_for_targets_that_admit_them():
    from tilecore.plugins import get_plugin_manager
    from tilecore.targets import resolve_target

    if not has_plugin("sm100"):
        pytest.skip("needs the sm100 plugin")
    pm = get_plugin_manager()
    code = ("import sys\nfrom tilecore.plugins import get_plugin_manager\nfrom tilecore.targets import resolve_target\n"
            "pm = get_plugin_manager()\n"
            "a = pm.atoms(resolve_target('sm_90a', pm.targets()))\n"
            "print(any(x.plugin == 'sm100' for x in a.values()), 'tilecore_sm100.mma_sm100' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False False", proc.stderr
    blackwell = pm.atoms(resolve_target("sm_100a", pm.targets()))
    sm100 = [a for a in blackwell.values() if a.plugin == "sm100"]
    assert sm100 and all(a.min_cc == 100 for a in sm100)


def test_a_process_whose_preload_started_spawns_its_batch_workers():
    # a fork while the preload thread may hold the loader's lock could leave the child deadlocked
    code = ("import tilecore.preload as p, tilecore.batch as b\n"
            "before = b._start_method()\n"
            "p.start()\n"
            "print(before, b._start_method(), 'mlir' in __import__('sys').modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "fork spawn False", proc.stderr
