"""bench/throughput.py: a one-kernel, one-SM, N=1 smoke run of every part; the JSON's structure.

Nothing here asserts a timing: the figures are the bench's business.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import CORPUS, ROOT, has_plugin

from tilecore.assembler import find_nvidia_tool

THROUGHPUT = os.path.join(ROOT, "bench", "throughput.py")
needs_tools = pytest.mark.skipif(not (find_nvidia_tool("tileiras") and os.path.isdir(CORPUS) and has_plugin("tileas")),
                                 reason="needs tileiras, ../shared/corpus/visible and the tileas plugin")


@needs_tools
def test_throughput_one_kernel(tmp_path):
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, THROUGHPUT, "-n", "1", "--kernel", "vadd", "--sm", "sm_80",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["meta"]["kernels"] == ["vadd_f32"] and data["meta"]["sms"] == ["sm_80"]
    assert data["targets"] == {"cold_geomean_ratio": 1.0, "batch_speedup": 2.0, "hit_process_ms": 60.0,
                               "hit_per_job_ms": 1.0}
    (row,) = data["cold"]["rows"]
    assert row["tilecore"]["ok"] and row["tileiras"]["ok"] and row["ratio"] > 0
    assert data["batch"]["tilecore_error"] is None and data["batch"]["tilecore_outputs"] == 1
    assert data["batch"]["speedup_vs_tileiras"] > 0
    hit = data["hit"]
    assert hit["process_runs"] == 1 and hit["compile_many_cached"] == 1 == hit["compile_many_jobs"]
    assert "warning" not in data  # the no-cache runs left their cache folder empty
    for line in ("(a) cold: geomean tilecore / tileiras over 1 of 1 pairs", "(b) batch, 1 pairs, 2 processes",
                 "(c) cache hit, whole tilecore compile process", "warm process, tilecore.compile_many"):
        assert line in proc.stdout


def test_throughput_bad_part():
    proc = subprocess.run([sys.executable, THROUGHPUT, "--parts", "cold,bogus"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown part 'bogus'" in proc.stderr


@needs_tools
def test_throughput_two_trees_and_profile(tmp_path):
    """--tree BEFORE --tree AFTER: cold and batch run both checkouts (here the same sources under two names),
    the last one's figures are the run's; profile splits a warm worker's job into its phases."""
    before = tmp_path / "before"
    before.symlink_to(ROOT)
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, THROUGHPUT, "-n", "1", "--kernel", "vadd", "--sm", "sm_80",
                           "--parts", "cold,batch,profile", "--tree", str(before), "--tree", ROOT,
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    labels = [str(before), os.path.abspath(ROOT)]
    assert data["meta"]["trees"] == labels and data["meta"]["tree"] == labels[1]
    (row,) = data["cold"]["rows"]
    assert list(row["trees"]) == labels and row["tilecore"] == row["trees"][labels[1]]
    assert set(row["ratio_by_tree"]) == set(labels) and set(data["cold"]["geomean_ratio_by_tree"]) == set(labels)
    assert list(data["batch"]["trees"]) == labels
    assert data["batch"]["tilecore_median_s"] == data["batch"]["trees"][labels[1]]["tilecore_median_s"]
    assert data["batch"]["tilecore_cpu_median_s"] > 0 and data["batch"]["tileiras_cpu_median_s"] > 0
    assert all(len(t["tilecore_cpu_s"]) == 1 for t in data["batch"]["trees"].values())
    (p,) = data["profile"]["rows"]
    assert p["kernel"] == "vadd_f32" and p["sm"] == "sm_80" and "error" not in p
    assert p["llvm_s"] > 0 and p["assembler_s"] > 0 and "convert-tileas-to-llvm" in p["stage_s"]
    assert p["wall_s"] >= p["stages_s"] + p["llvm_s"] + p["assembler_s"]
    for line in (f"batch {labels[0]}: ", f"batch {labels[1]}: ", "(d) warm worker, sum over the pairs"):
        assert line in proc.stdout
