"""Cold-start measures of ``tilecore compile`` (issue 18): the garbage collector off during a single
compile. It must leave the output unchanged."""

from __future__ import annotations

import gc
import os

import pytest
from support import CORPUS, has_plugin, run_cli

VADD = os.path.join(CORPUS, "vadd_f32.tileirbc")
needs_corpus = pytest.mark.skipif(not (os.path.exists(VADD) and has_plugin("tileas")),
                                  reason="needs the visible corpus and the tileas plugin")


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
