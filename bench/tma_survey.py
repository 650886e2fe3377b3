"""Which kernels use HGMMA and TMA on sm_90a, and what TMA stores save (issue 15).

    python bench/tma_survey.py            # corpus + generated mma / attention programs: SASS counts
    python bench/tma_survey.py --stores   # epilogues: TMA store against --option tileas.tma_store=off

Survey: every visible-corpus kernel and the first ``--n`` programs of the fuzzer's ``mma`` template (5 of
``attn``), compiled for sm_90a; static SASS counts (``cuobjdump -sass``) of HGMMA, UTMALDG, UTMASTG, LDGSTS,
HMMA, STG. Stores: the TMA test kernels (plugins/tileas/tests/test_tma_pipeline.py), instructions, STG /
STS / LDS / BAR / UTMASTG with the TMA-store epilogue and with the plain one.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "plugins", "tileas", "tests")]

from sass import sass_stats  # noqa: E402

from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402
from tilecore.serialize import find_nvidia_tool  # noqa: E402


def counts(bytecode: str, options: dict | None = None) -> dict:
    cub = compile_file(bytecode, "sm_90a", CompileOptions(extra=options or {})).artifacts["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
        fh.write(cub)
    try:
        st = sass_stats(fh.name)
        text = subprocess.run([find_nvidia_tool("cuobjdump"), "-sass", fh.name], capture_output=True, text=True).stdout
    finally:
        os.unlink(fh.name)
    c = st["classes"]
    width = {k: sum(v for n, v in c.items() if n.split(".")[0] == k) for k in ("stg", "sts", "lds")}
    return {"instructions": st["instructions"], "HGMMA": c["gmma"], "HMMA": c["hmma"], "LDGSTS": c["ldgsts"],
            "UTMALDG": text.count("UTMALDG"), "UTMASTG": text.count("UTMASTG"), "STG": width["stg"],
            "STS": width["sts"], "LDS": width["lds"], "BAR": c["bar"]}


def survey(n: int) -> None:
    from fuzz import generator, runner

    rows = [(os.path.basename(p)[:-len(".tileirbc")], p, "")
            for p in sorted(glob.glob("/work/shared/corpus/visible/*.tileirbc"))]
    work = tempfile.mkdtemp(prefix="tma-survey-")
    for tmpl, count in (("mma", n), ("attn", 5)):
        for seed in range(1, count + 1):
            p = generator.generate(seed, tmpl)
            _, bc, err = runner.prepare(p, os.path.join(work, f"{tmpl}{seed}"))
            feats = sorted(f for f in p.features if f.startswith(("mma", "attn")) or f == "load_order")
            rows.append((f"{tmpl}{seed}", None if err else bc, f"tile={p.tile} {' '.join(feats)}" if not err else err))
    for name, bc, info in rows:
        if bc is None:
            print(f"{name:22s} export failed: {info}")
            continue
        c = counts(bc)
        print(f"{name:22s} " + " ".join(f"{k}={c[k]:3d}" for k in ("HGMMA", "UTMALDG", "UTMASTG", "LDGSTS", "HMMA", "STG"))
              + f"  {info}")


def stores() -> None:
    import test_tma_pipeline as t
    from tileas_test_paths import VISIBLE_CORPUS

    kernels = {"matmul f16 128x128x64, f32 C": t._path("tma_f16"), "matmul bf16 128x64x32, f32 C": t._path("tma_bf16"),
               "batched matmul f16 64x64x32": t._path("tma_bmm"), "flash attention 64x64, d 64": t._attn_path(),
               "corpus matmul_f16 (no facts)": os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc")}
    for name, path in kernels.items():
        for label, opts in (("TMA store", {}), ("st.global", {"tileas.tma_store": "off"})):
            c = counts(path, opts)
            print(f"{name:30s} {label:9s} " + " ".join(f"{k} {c[k]:5d}" for k in
                                                       ("instructions", "STG", "STS", "LDS", "BAR", "UTMASTG", "UTMALDG")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", action="store_true", help="compare the TMA-store epilogue with st.global")
    ap.add_argument("--n", type=int, default=20, help="generated mma programs (default 20)")
    a = ap.parse_args()
    stores() if a.stores else survey(a.n)


if __name__ == "__main__":
    main()
