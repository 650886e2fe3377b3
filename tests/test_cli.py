"""The ``tilecore`` command: the main job, inspection flags, stage 7/8, serialize, and error handling."""

from __future__ import annotations

import json
import os

import pytest
from support import DATA, ROOT, has_plugin, needs_gpu_nvvm, run_cli

from tilecore.mlir import ir

VADD = os.path.join(DATA, "vadd_gpu.mlir")


def test_help_and_version():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for cmd in ("compile", "opt", "disasm", "plugins", "pipeline", "run"):
        assert cmd in proc.stdout
    assert run_cli("--version").stdout.startswith("tilecore 0.1.0")


@needs_gpu_nvvm
@pytest.mark.parametrize("gpu", ["sm_80", "sm_90a"])
def test_compile_bundled_kernel_to_cubin(tmp_path, gpu):
    out = tmp_path / "vadd.cubin"
    proc = run_cli("compile", VADD, "--gpu-name", gpu, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert f"wrote {out} (cubin, {len(data)} bytes) for {gpu}; kernels: vadd (4 params)" in proc.stdout


@needs_gpu_nvvm
def test_emit_ptx_llvm_mlir(tmp_path):
    ptx = tmp_path / "k.ptx"
    assert run_cli("compile", VADD, "--gpu-name", "sm_90a", "--emit", "ptx", "-o", str(ptx)).returncode == 0
    text = ptx.read_text()
    assert ".target sm_90a" in text and ".version 8.4" in text and ".entry vadd(" in text
    ll = tmp_path / "k.ll"
    proc = run_cli("compile", VADD, "--emit", "llvm", "-o", str(ll))
    assert proc.returncode == 0, proc.stderr
    assert "define ptx_kernel void @vadd" in ll.read_text() or "define void @vadd" in ll.read_text()
    mlir = tmp_path / "k.mlir"
    assert run_cli("compile", VADD, "--emit", "mlir", "-o", str(mlir)).returncode == 0
    assert '#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">' in mlir.read_text()


@needs_gpu_nvvm
def test_attach_nvvm_target_writes_exactly_one_target_with_opt_level(tmp_path):
    out = tmp_path / "k.mlir"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "-O1", "--emit", "mlir", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("#nvvm.target") == 1
    assert '#nvvm.target<O = 1, chip = "sm_90a", features = "+ptx84">' in text


@needs_gpu_nvvm
def test_attach_nvvm_target_links_libdevice_only_for_a_module_declaring_nv_functions(tmp_path):
    from tilecore.serialize import libdevice_path

    if libdevice_path() is None:
        pytest.skip("nvidia-nvvm (libdevice) not installed")
    plain = tmp_path / "plain.mlir"
    assert run_cli("compile", VADD, "--emit", "mlir", "-o", str(plain)).returncode == 0
    assert "link = " not in plain.read_text()
    src = tmp_path / "calls.mlir"
    src.write_text(open(VADD).read().replace(
        "gpu.module @vadd_module {", "gpu.module @vadd_module {\n    llvm.func @__nv_expf(f32) -> f32"))
    out = tmp_path / "calls_out.mlir"
    proc = run_cli("compile", str(src), "--emit", "mlir", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("#nvvm.target") == 1
    assert f'link = ["{libdevice_path()}"]' in text


@needs_gpu_nvvm
def test_llvm_opt_level_option_sets_only_the_nvvm_target_level(tmp_path):
    out = tmp_path / "k.mlir"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "--option", "llvm-opt-level=1", "--emit", "mlir",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert '#nvvm.target<O = 1, chip = "sm_90a", features = "+ptx84">' in out.read_text()
    # ptxas keeps -O: the real ptxas, through a wrapper that records its command line
    from tilecore.assembler import find_nvidia_tool

    ptxas = find_nvidia_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    wrapper, log = tmp_path / "ptxas", tmp_path / "ptxas.args"
    wrapper.write_text(f'#!/bin/sh\necho "$@" > {log}\nexec {ptxas} "$@"\n')
    wrapper.chmod(0o755)
    cubin = tmp_path / "k.cubin"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "--option", "llvm-opt-level=1", "--no-cache",
                   "-o", str(cubin), env={"TILECORE_PTXAS": str(wrapper), "TILECORE_ASSEMBLER": "ptxas"})
    assert proc.returncode == 0, proc.stderr
    assert cubin.read_bytes()[:4] == b"\x7fELF"
    assert "-arch=sm_90a -O3" in log.read_text()
    bad = tmp_path / "bad.cubin"
    proc = run_cli("compile", VADD, "--option", "llvm-opt-level=fast", "-o", str(bad))
    assert proc.returncode == 1 and not bad.exists()
    assert "error: --option llvm-opt-level=fast: expected 0, 1, 2 or 3" in proc.stderr
    assert "Traceback" not in proc.stderr


@needs_gpu_nvvm
def test_attach_nvvm_target_replaces_existing_targets(tmp_path):
    src = tmp_path / "two.mlir"
    src.write_text(open(VADD).read().replace(
        "gpu.module @vadd_module {",
        'gpu.module @vadd_module [#nvvm.target<chip = "sm_70">, #nvvm.target<chip = "sm_75">] {'))
    out = tmp_path / "k.mlir"
    assert run_cli("compile", str(src), "--emit", "mlir", "-o", str(out)).returncode == 0
    text = out.read_text()
    assert text.count("#nvvm.target") == 1 and 'chip = "sm_80"' in text


@needs_gpu_nvvm
def test_dump_dir_print_ir_after_all_and_timing(tmp_path):
    dump = tmp_path / "dump"
    tj = tmp_path / "t.json"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_80", "-o", str(tmp_path / "k.cubin"), "--dump-dir", str(dump),
                   "--print-ir-after-all", "--timing", "--timing-json", str(tj))
    assert proc.returncode == 0, proc.stderr
    files = sorted(os.listdir(dump))
    assert any(f.endswith("-convert-nvgpu-and-gpu-to-nvvm.mlir") for f in files)
    assert any(f.endswith("-attach-nvvm-target.mlir") for f in files)
    assert all(f[:2].isdigit() and f[2] == "-" for f in files)
    stage6 = next(f for f in files if f.endswith("convert-nvgpu-and-gpu-to-nvvm.mlir"))
    assert "gpu.thread_id" not in (dump / stage6).read_text()
    assert "// -----// IR Dump After convert-nvgpu-and-gpu-to-nvvm (gpu_nvvm) //----- //" in proc.stderr
    assert "tilecore stage timing report" in proc.stderr
    data = json.loads(tj.read_text())
    names = [s["stage"] for s in data["stages"]]
    assert names[0] == "read-input" and "serialize" in names
    s6 = next(s for s in data["stages"] if s["stage"] == "convert-nvgpu-and-gpu-to-nvvm")
    assert s6["patterns"]["gpu_nvvm:IndexQuery[block_dim]"] == 1


@needs_gpu_nvvm
def test_lineinfo_puts_loc_and_file_into_ptx(tmp_path):
    out = tmp_path / "k.ptx"
    proc = run_cli("compile", VADD, "--lineinfo", "--emit", "ptx", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert ".file" in text and "vadd_gpu.mlir" in text
    assert ".loc" in text
    plain = tmp_path / "p.ptx"
    run_cli("compile", VADD, "--emit", "ptx", "-o", str(plain))
    assert ".loc" not in plain.read_text()
    cub = tmp_path / "g.cubin"
    assert run_cli("compile", VADD, "-g", "-o", str(cub)).returncode == 0


@needs_gpu_nvvm
def test_opt_runs_selected_stages():
    proc = run_cli("opt", VADD, "--stages", "convert-nvgpu-and-gpu-to-nvvm")
    assert proc.returncode == 0, proc.stderr
    assert "nvvm.read.ptx.sreg.tid.x" in proc.stdout and "gpu.thread_id" not in proc.stdout
    assert "#nvvm.target" not in proc.stdout
    bad = run_cli("opt", VADD, "--stages", "no-such-stage")
    assert bad.returncode == 1 and "error: unknown stage 'no-such-stage'" in bad.stderr


@needs_gpu_nvvm
def test_pipeline_lists_stages_in_order():
    proc = run_cli("pipeline", "--gpu-name", "sm_90a", "--json")
    assert proc.returncode == 0, proc.stderr
    names = [s["stage"] for s in json.loads(proc.stdout)["stages"]]
    tail = ["convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info", "serialize"]
    assert names[-4:] == tail
    text = run_cli("pipeline", "--gpu-name", "sm_90a").stdout
    assert "gpu.block_dim" in text and "-> gpu_nvvm:IndexQuery[block_dim]" in text


# -- errors -------------------------------------------------------------------------


def assert_clean_error(proc, *fragments):
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: "), proc.stderr
    for f in fragments:
        assert f in proc.stderr, proc.stderr


def test_missing_input(tmp_path):
    out = tmp_path / "x.cubin"
    proc = run_cli("compile", str(tmp_path / "nope.mlir"), "-o", str(out))
    assert_clean_error(proc, "nope.mlir: cannot read input")
    assert not out.exists()


def test_unparsable_mlir_reports_file_line_col_and_writes_nothing(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text("module {\n  %0 = arith.constant 1 : i32\n  this is not mlir\n}\n")
    out = tmp_path / "bad.cubin"
    proc = run_cli("compile", str(src), "-o", str(out))
    assert_clean_error(proc, f"error: {src}:3:")
    assert not out.exists()
    assert os.listdir(tmp_path) == ["bad.mlir"]


def test_unknown_input_format(tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(b"\x00\x01garbage")
    assert_clean_error(run_cli("compile", str(src)), "data.bin: no installed plugin can read this input")


def test_unknown_target():
    assert_clean_error(run_cli("compile", VADD, "--gpu-name", "sm_999"), "unknown target 'sm_999'")


def test_uninstalled_arch_plugin_is_named():
    proc = run_cli("compile", VADD, "--gpu-name", "sm_100a", env={"TILECORE_DISABLED_PLUGINS": "sm100"})
    assert_clean_error(proc, "install tilecore[sm100]")


@needs_gpu_nvvm
def test_illegal_survivor_names_stage_op_location_and_exits_1(tmp_path):
    src = tmp_path / "k.mlir"
    src.write_text("""module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%out: !llvm.ptr<1>, %n: index) kernel {
      %t = tensor.empty(%n) : tensor<?xf32>
      %c0 = arith.constant 0 : index
      %v = tensor.extract %t[%c0] : tensor<?xf32>
      llvm.store %v, %out : f32, !llvm.ptr<1>
      gpu.return
    }
  }
}""")
    out = tmp_path / "k.cubin"
    proc = run_cli("compile", str(src), "-o", str(out))
    assert_clean_error(proc, f"error: {src}:4:12: failed to legalize operation 'tensor.empty' in stage "
                             "'convert-nvgpu-and-gpu-to-nvvm'", f"{src}:6:12: illegal op 'tensor.extract' survived")
    assert not out.exists()


@needs_gpu_nvvm
def test_ptxas_rejection_is_clean(tmp_path):
    # A kernel whose PTX needs a newer SM than the target: ptxas refuses, we report it.
    src = tmp_path / "k.mlir"
    src.write_text("""module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k() attributes {nvvm.kernel} {
      nvvm.fence.proxy.acquire <cta> %p, %n : !llvm.ptr, i32
      llvm.return
    }
  }
}""".replace("nvvm.fence.proxy.acquire <cta> %p, %n : !llvm.ptr, i32",
             "%p = llvm.mlir.zero : !llvm.ptr\n      %n = llvm.mlir.constant(128 : i32) : i32\n"
             "      nvvm.fence.proxy.acquire <cta> %p, %n"))
    out = tmp_path / "k.cubin"
    proc = run_cli("compile", str(src), "--gpu-name", "sm_80", "-o", str(out))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ")
    assert not out.exists()


def test_no_mlir_import_for_help():
    import subprocess
    import sys

    code = "import sys, tilecore.cli as c; c._parser(); print('mlir' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    assert out == "False"


def test_mlir_bindings_load_without_numpy_and_keep_element_builders():
    import subprocess
    import sys

    # mlir.ir would import numpy (~70 ms) for four attribute builders; tilecore.mlir hides it and
    # registers the same builders with numpy imported on first use.
    code = ("import sys, tilecore.mlir as m; before = 'numpy' in sys.modules\n"
            "with m.ir.Context():\n"
            "    a = m.ir.AttrBuilder.get('I32ElementsAttr')([1, 2], m.ir.Context.current)\n"
            "    b = m.ir.AttrBuilder.get('F64ElementsAttr')([0.5], m.ir.Context.current)\n"
            "print(before, a, b)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False dense<[1, 2]> : tensor<2xi32> dense<5.000000e-01> : tensor<1xf64>", proc.stderr


def test_error_locations_render(tmp_path):
    from tilecore.errors import format_location

    with ir.Context():
        assert format_location(ir.Location.file("a.py", 3, 9)) == "a.py:3:9"
        assert format_location(ir.Location.name("x", ir.Location.file("b.py", 1, 2))) == "b.py:1:2"
        assert format_location(ir.Location.unknown()) == "unknown"


@pytest.mark.skipif(not has_plugin("tileas"), reason="needs the tileas plugin")
def test_main_job_bundled_tileir_kernel(tmp_path):
    """The README's first command: the bundled TileIR bytecode kernel to a cubin."""
    out = tmp_path / "vadd_f32.cubin"
    proc = run_cli("compile", os.path.join(ROOT, "examples", "vadd_f32.tileirbc"), "--gpu-name", "sm_90a",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"
    assert "kernels: vadd_f32 (9 params, 128 threads/CTA)" in proc.stdout


@needs_gpu_nvvm
def test_output_dash_is_stdout(tmp_path):
    proc = run_cli("compile", VADD, "--emit", "ptx", "-o", "-", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert ".entry vadd(" in proc.stdout
    assert proc.stderr.startswith("tilecore: wrote stdout (ptx, ")
    assert os.listdir(tmp_path) == []


def test_closed_stdout_pipe_stops_quietly():
    """``tilecore plugins | head -1`` (any command): the reader closes the pipe; tilecore stops without a traceback or an
    'internal error' (it said 'error: internal error: BrokenPipeError')."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "tilecore", "plugins"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.close()  # before tilecore has started: its first write meets a closed pipe
    err = p.stderr.read()
    p.wait(timeout=120)
    assert p.returncode == 1 and err == ""
