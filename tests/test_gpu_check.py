"""scripts/gpu_check.py's build half (the run half needs a GPU and CuPy: see README, "Checking on a GPU")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import ROOT, has_plugin, needs_gpu_nvvm


@needs_gpu_nvvm
def test_build_writes_a_cubin_per_kernel_and_a_manifest(tmp_path):
    if not (has_plugin("tileas") and has_plugin("nvgpu_nvvm")):
        pytest.skip("needs the tileas and nvgpu_nvvm plugins (TileIR reader, nvgpu lowering)")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py"), "build", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["gpu"] == "sm_90a"
    for case in manifest["cases"]:
        cubin = tmp_path / f"{case.split('@')[0]}.cubin"
        assert cubin.read_bytes()[:4] == b"\x7fELF", case
    assert {"matmul_f16", "wgmma_m64n8k16", "tma_box", "mma_ldmatrix_cp_async", "mbarrier_phase"} <= set(
        manifest["cases"])
    # matmul also with its dots on the CUDA cores (to time tensor cores against FMA on the GPU)
    assert (tmp_path / "matmul_f16.fma.cubin").read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "matmul_f16.fma.cubin").read_bytes() != (tmp_path / "matmul_f16.cubin").read_bytes()
