"""bench/compare.py (tilecore vs tileiras) and bench/sass.py (cuobjdump statistics).

The harness smoke test runs one corpus kernel with N=1 for one SM and checks the JSON
structure and that tileiras' side carries real numbers; nothing here asserts a timing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from support import CORPUS, ROOT

from tilecore.serialize import find_nvidia_tool

COMPARE = os.path.join(ROOT, "bench", "compare.py")
TILEIRAS = find_nvidia_tool("tileiras")
CUOBJDUMP = find_nvidia_tool("cuobjdump")
needs_tools = pytest.mark.skipif(not (TILEIRAS and CUOBJDUMP and os.path.isdir(CORPUS)),
                                 reason="needs tileiras, cuobjdump and ../shared/corpus/visible")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "bench", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(os.path.join(ROOT, "bench"))
    return mod


sass = _load("sass")


def harness(*args, timeout=300):
    return subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True, timeout=timeout)


# -------------------------------------------------------------------------- sass.py

@pytest.mark.parametrize("mnemonic, key", [
    ("LDG.E", "ldg.32"), ("LDG.E.128.CONSTANT", "ldg.128"), ("LDG.E.U16", "ldg.16"), ("LDG.E.S8", "ldg.8"),
    ("STG.E.64", "stg.64"), ("LDS", "lds.32"), ("LDS.U8", "lds.8"), ("STS.128", "sts.128"),
    ("LDSM.16.M88.4", "ldsm"), ("STL.64", "ldl/stl"), ("SHFL.BFLY", "shfl"), ("HMMA.16816.F32", "hmma"),
    ("IMMA.16832.S8.S8", "imma"), ("HGMMA.64x128x16.F32", "gmma"), ("UTCHMMA", "utcmma"), ("UTCBAR", "utc"),
    ("STTM.x8", "ldtm/sttm"), ("BRA.U", "bra"), ("MUFU.RCP", "mufu"), ("ATOMG.E.ADD.STRONG.GPU", "atom"),
    ("UTMALDG.2D", "tma"), ("BAR.SYNC.DEFER_BLOCKING", "bar"),
    # look-alikes that are not in a class
    ("HFMA2.MMA", None), ("LDC.64", None), ("NOP", None),
])
def test_classify(mnemonic, key):
    assert sass.classify(mnemonic) == key
    if key:
        assert key in sass.class_names()


def test_parse_sass_drops_padding():
    listing = """
\tcode for sm_90
\t\tFunction : k
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
                                                                       /* 0x000fe20000000800 */
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;    /* 0x0000000402048981 */
        /*0020*/               @P1 BRA 0x40 ;                          /* 0x0000000000001947 */
        /*0030*/                   EXIT ;                              /* 0x000000000000794d */
        /*0040*/                   BRA 0x40;                           /* 0xfffffffc00fc7947 */
        /*0050*/                   NOP;                                /* 0x0000000000007918 */
"""
    assert sass.parse_sass(listing) == {"k": ["LDC", "LDG.E.128", "BRA", "EXIT"]}


@needs_tools
def test_sass_stats_of_a_tileiras_cubin(tmp_path):
    cubin = tmp_path / "vadd.cubin"
    subprocess.run([TILEIRAS, "--gpu-name=sm_90", "--opt-level=3", f"--output-file={cubin}",
                    os.path.join(CORPUS, "vadd_f32.tileirbc")], check=True)
    st = sass.sass_stats(str(cubin))
    env = dict(os.environ, PATH=os.path.dirname(CUOBJDUMP) + os.pathsep + os.environ["PATH"])
    listing = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], capture_output=True, text=True, env=env).stdout
    lines = [ln for ln in listing.splitlines() if ln.lstrip().startswith("/*") and "*/ " in ln
             and not ln.lstrip().startswith("/* 0x")]
    # every listed instruction but the NOP padding and the final branch-to-self
    assert st["instructions"] == len([ln for ln in lines if " NOP" not in ln]) - 1
    assert st["functions"] == {"vadd_f32": st["instructions"]}
    assert st["registers"] > 0 and st["shared_bytes"] == 0 and st["local_bytes"] == 0
    assert st["classes"]["ldg.32"] + st["classes"]["ldg.128"] > 0 and st["classes"]["stg.32"] > 0
    assert st["uses_mma"] is False


# ----------------------------------------------------------------------- compare.py

@needs_tools
def test_compare_one_kernel(tmp_path):
    out = tmp_path / "r.json"
    proc = harness("--no-generated", "-n", "1", "--sm", "sm_80", "--kernel", "vadd_f32", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "geomean time ratio tilecore/tileiras" in proc.stdout
    assert proc.stdout.splitlines()[0].split()[:4] == ["kernel", "sm", "tilecore", "s"]
    data = json.loads(out.read_text())
    assert {"meta", "summary", "results"} <= set(data)
    assert data["meta"]["n"] == 1 and data["meta"]["sms"] == ["sm_80"] and "release" in data["meta"]["tileiras"]
    (row,) = data["results"]
    assert (row["kernel"], row["sm"], row["tileiras_gpu"], row["origin"]) == ("vadd_f32", "sm_80", "sm_80", "corpus")
    ti = row["tileiras"]
    assert ti["ok"] and ti["runs"] == 1 and len(ti["wall_s"]) == 1
    assert 0 < ti["min_s"] <= ti["median_s"] and ti["peak_rss_kib"] > 1024 and ti["cubin_bytes"] > 0
    assert ti["sass"]["instructions"] > 0 and ti["sass"]["registers"] > 0
    assert set(ti["sass"]["classes"]) == set(sass.class_names())
    tc = row["tilecore"]
    s = data["summary"]
    assert s["pairs"] == 1 and set(s["per_sm"]) == {"sm_80"}
    if tc["ok"]:  # tilecore's side: numbers plus its per-stage breakdown
        assert "read-input" in tc["stages"] and "serialize" in tc["stages"]
        assert tc["slowest_stage"] in tc["stages"] and tc["startup_s"] >= 0
        assert row["time_ratio"] > 0 and row["sass_ratio"] > 0 and row["uses_mma"] is False
        assert s["both_compile"] == 1 and s["geomean_time_ratio"] > 0
    else:  # listed, not hidden
        assert tc["error"] and s["tilecore_failures"] == [{"kernel": "vadd_f32", "sm": "sm_80", "error": tc["error"]}]
        assert "tilecore cannot compile: vadd_f32 @ sm_80" in proc.stdout
    # the stored result prints the same tables again, without measuring
    shown = harness("--show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(proc.stdout.rsplit("\nwrote ", 1)[0])


@needs_tools
def test_compare_lists_kernels_neither_compiles(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = (open(os.path.join(CORPUS, "vadd_f32.tileirbc"), "rb")).read()
    (corpus / "truncated.tileirbc").write_bytes(good[: len(good) // 3])
    out = tmp_path / "r.json"
    proc = harness("--corpus", str(corpus), "--no-generated", "-n", "1", "--sm", "sm_90a", "--out", str(out),
                   "--markdown")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("| kernel | sm | tilecore s |")
    assert "| truncated | sm_90a | FAIL | FAIL |" in proc.stdout
    assert "tilecore cannot compile: truncated @ sm_90a: error: " in proc.stdout
    assert "tileiras cannot compile: truncated @ sm_90a: " in proc.stdout
    data = json.loads(out.read_text())
    (row,) = data["results"]
    assert row["tileiras_gpu"] == "sm_90"
    assert not row["tilecore"]["ok"] and row["tilecore"]["error"].startswith("error: ")
    assert "Traceback" not in row["tilecore"]["error"]
    assert not row["tileiras"]["ok"] and row["tileiras"]["error"]
    s = data["summary"]
    assert s["both_compile"] == 0 and s["geomean_time_ratio"] is None
    assert [f["kernel"] for f in s["tilecore_failures"]] == ["truncated"]


def test_compare_missing_corpus(tmp_path):
    proc = harness("--corpus", str(tmp_path / "nowhere"), "--no-generated", "--out", str(tmp_path / "r.json"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {tmp_path / 'nowhere'}: corpus folder not found"
    assert not (tmp_path / "r.json").exists()


def test_compare_show_rejects_other_json(tmp_path):
    bad = tmp_path / "other.json"
    bad.write_text('{"results": []}')
    proc = harness("--show", str(bad))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {bad}: not a compare.py result (KeyError: 'summary')")


@needs_tools
def test_compare_timeout_is_a_failure(tmp_path):
    out = tmp_path / "r.json"
    proc = harness("--no-generated", "-n", "1", "--sm", "sm_80", "--kernel", "vadd_f32", "--timeout", "0.01",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())["results"]
    assert row["tilecore"] == {"ok": False, "error": "error: timed out after 0.01 s"}
    assert row["tileiras"] == {"ok": False, "error": "error: timed out after 0.01 s"}
