"""CI smoke test of bench/compare.py: one kernel, one SM, N=1 (structure only, no timing assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import CORPUS, ROOT, has_plugin

from tilecore.serialize import find_nvidia_tool

pytestmark = pytest.mark.skipif(not (has_plugin("tileas") and find_nvidia_tool("tileiras") and os.path.isdir(CORPUS)),
                                reason="needs the tileas plugin, tileiras and ../shared/corpus")


def test_compare_one_kernel(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "compare.py"), "--no-generated", "-n", "1",
                           "--sm", "sm_80", "--kernel", "vadd_f32", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "geomean time ratio tilecore/tileiras" in proc.stdout
    data = json.loads(out.read_text())
    (row,) = data["results"]
    assert (row["kernel"], row["sm"]) == ("vadd_f32", "sm_80")
    ti = row["tileiras"]
    assert ti["ok"] and ti["runs"] == 1 and ti["median_s"] > 0 and ti["peak_rss_kib"] > 0
    assert ti["sass"]["instructions"] > 0 and ti["sass"]["registers"] > 0
    assert set(ti["sass"]["classes"]) >= {"ldg.32", "ldg.128", "stg.32", "lds", "shfl", "hmma", "bra"}
    tc = row["tilecore"]
    assert tc["ok"], tc
    assert "serialize" in tc["stages"] and tc["slowest_stage"] in tc["stages"]
    assert row["time_ratio"] > 0 and row["sass_ratio"] > 0
    assert data["summary"]["kernels_compared"] == 1
