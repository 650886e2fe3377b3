"""CPU emulator: gpu-dialect kernels lowered by stage convert-nvgpu-and-gpu-to-nvvm, run and compared with numpy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from support import CORPUS as VISIBLE_CORPUS
from support import has_plugin

from tilecore.compiler import compile_module, read_input
from tilecore.emulate import compile_kernel, launch
from tilecore.errors import TilecoreError
from tilecore.options import CompileOptions
from tilecore.plugins import get_plugin_manager
from tilecore.targets import resolve_target

# The kernels are gpu-dialect modules lowered by stage 6 (gpu_nvvm), which also brings sm_80.
pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")

HERE = os.path.dirname(__file__)
KERNELS = os.path.join(HERE, "kernels")
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def pm():
    return get_plugin_manager()


def lowered(pm, path):
    module, _ = read_input(path, pm)
    res = compile_module(module, resolve_target("sm_80", pm.targets()), CompileOptions(emit="mlir"), pm,
                         stages=["convert-nvgpu-and-gpu-to-nvvm"])
    return res.module


def kernel_path(name):
    return os.path.join(KERNELS, name + ".mlir")


def test_vector_add_runs_sequentially_and_matches(pm):
    m = lowered(pm, os.path.join(ROOT, "tilecore", "data", "vadd_gpu.mlir"))
    n = 10_000
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    k = compile_kernel(m, "vadd")
    assert not k.collective
    outputs, text = launch(m, "vadd", grid=(n + 127) // 128, block=128, args=[a, b, c, n])
    np.testing.assert_array_equal(c, a + b)
    np.testing.assert_array_equal(outputs[2], a + b)
    assert text == ""
    # the caller's module is left as it was; MLIR text works too
    assert "nvvm.read.ptx.sreg.tid.x" in str(m)
    c2 = np.zeros(n, np.float32)
    launch(str(m), "vadd", grid=(n + 127) // 128, block=128, args=[a, b, c2, n])
    np.testing.assert_array_equal(c2, a + b)


def test_warp_collectives(pm):
    m = lowered(pm, kernel_path("warp_ops"))
    nt = 64
    x = np.random.default_rng(1).integers(0, 100, nt).astype(np.float32)
    outs = [np.zeros(2, np.float32), np.zeros(nt, np.float32), np.zeros(nt, np.float32), np.zeros(nt, np.float32),
            np.zeros(2, np.uint32), np.zeros(nt, np.int32), np.zeros(nt, np.uint32), np.zeros(2, np.int32)]
    res = launch(m, "warp_ops", grid=1, block=nt, args=[x, *outs])
    assert compile_kernel(m, "warp_ops").collective
    out, up, down, idx, ballot, elect, match, redux = res.outputs[1:]
    w = x.reshape(2, 32)
    np.testing.assert_allclose(out, w.sum(axis=1), rtol=1e-6)
    lane = np.arange(32)
    # up by 3: lanes 0..2 keep their own value; down by 5: lanes 27..31 keep theirs; idx: lane 3
    np.testing.assert_array_equal(up.reshape(2, 32), np.where(lane < 3, w, np.roll(w, 3, axis=1)))
    np.testing.assert_array_equal(down.reshape(2, 32), np.where(lane > 26, w, np.roll(w, -5, axis=1)))
    np.testing.assert_array_equal(idx.reshape(2, 32), np.repeat(w[:, 3:4], 32, axis=1))
    expect_ballot = [sum(1 << i for i in range(32) if int(w[r, i]) % 2 == 1) for r in range(2)]
    assert ballot.tolist() == expect_ballot
    assert elect.reshape(2, 32).sum(axis=1).tolist() == [1, 1] and elect[0] == 1 and elect[32] == 1
    for t in range(nt):
        r, ln = divmod(t, 32)
        want = sum(1 << j for j in range(32) if int(w[r, j]) % 4 == int(w[r, ln]) % 4)
        assert int(match[t]) == want
    assert redux.tolist() == [sum(range(32)), sum(range(32, 64))]


def test_block_reduction_through_shared_memory(pm):
    m = lowered(pm, kernel_path("block_reduce"))
    x = np.random.default_rng(2).random(4 * 256, dtype=np.float32)
    out = np.zeros(4, np.float32)
    launch(m, "block_reduce", grid=4, block=256, args=[x, out])
    np.testing.assert_allclose(out, x.reshape(4, 256).sum(axis=1), rtol=1e-5)


def test_atomic_histogram_global_and_shared(pm):
    m = lowered(pm, kernel_path("histogram"))
    n = 1000
    x = np.random.default_rng(3).integers(0, 1000, n).astype(np.int32)
    bins, sbins = np.zeros(16, np.int32), np.zeros(16, np.int32)
    launch(m, "histogram", grid=(n + 127) // 128, block=128, args=[x, bins, sbins, n])
    want = np.bincount(x % 16, minlength=16)
    np.testing.assert_array_equal(bins, want)
    np.testing.assert_array_equal(sbins, want)


def test_libdevice_math_and_printf(pm):
    m = lowered(pm, kernel_path("math_printf_assert"))
    n = 300
    x = np.random.default_rng(4).random(n, dtype=np.float32) * 4
    y = np.zeros(n, np.float32)
    res = launch(m, "math_printf_assert", grid=3, block=128, args=[x, y, np.int32(n)])
    np.testing.assert_allclose(y, np.exp(x) + np.sqrt(x), rtol=1e-6)
    lines = res.printf.splitlines()
    assert lines == [f"block {b}: y={y[b * 128]:.3f} n={n}" for b in range(3)]


def test_failing_assert_reports_message_file_and_line(pm):
    m = lowered(pm, kernel_path("math_printf_assert"))
    x = np.ones(64, np.float32)
    x[37] = -1.0
    with pytest.raises(TilecoreError) as e:
        launch(m, "math_printf_assert", grid=1, block=64, args=[x, np.zeros(64, np.float32), np.int32(64)])
    text = e.value.render()
    assert "device-side assertion failed: x must be non-negative" in text
    assert "math_printf_assert.mlir:20" in text
    assert "thread (37, 0, 0)" in text


def test_unknown_nvvm_op_fails_with_its_name(pm):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
            nvvm.breakpoint
            llvm.return
          }
        }""")
    with pytest.raises(TilecoreError, match="does not support 'nvvm.breakpoint'"):
        compile_kernel(m, "k")


def test_barrier_deadlock_is_reported(pm):
    from tilecore.mlir import ir

    # lanes 0..15 wait in a full-mask shuffle that lanes 16..31 never join (they wait at a barrier)
    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %c16 = llvm.mlir.constant(16 : i32) : i32
            %full = llvm.mlir.constant(-1 : i32) : i32
            %c31 = llvm.mlir.constant(31 : i32) : i32
            %lo = llvm.icmp "slt" %t, %c16 : i32
            llvm.cond_br %lo, ^a, ^b
          ^a:
            %v = nvvm.shfl.sync bfly %full, %t, %c16, %c31 : i32 -> i32
            llvm.return
          ^b:
            nvvm.barrier0
            llvm.return
          }
        }""")
    with pytest.raises(TilecoreError, match=r"deadlock: all 32 running threads of the CTA wait: barrier 0 "
                                            r"\(16 of 32 arrived\); 'shfl.bfly' in warp 0"):
        launch(m, "k", grid=1, block=32, args=[np.zeros(1, np.int32)])


def test_block_must_match_the_kernels_reqntid(pm):
    """A kernel with ``nvvm.reqntid`` (PTX ``.reqntid``) runs only with exactly that block, as on a GPU; another
    block is an error naming both (a 256-thread kernel launched with 128 threads gave NaNs)."""
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 64>} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %q = llvm.getelementptr %p[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %t, %q : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    with pytest.raises(TilecoreError, match=r"kernel 'k' must be launched with blocks of \(64, 1, 1\) threads "
                                            r"\(its nvvm.reqntid, PTX .reqntid\), got \(128, 1, 1\)"):
        launch(m, "k", grid=1, block=128, args=[np.zeros(128, np.int32)])
    out = np.zeros(64, np.int32)
    launch(m, "k", grid=1, block=(64, 1, 1), args=[out])
    np.testing.assert_array_equal(out, np.arange(64))


def test_wrong_argument_count(pm):
    m = lowered(pm, os.path.join(ROOT, "tilecore", "data", "vadd_gpu.mlir"))
    with pytest.raises(TilecoreError, match="takes 4 arguments"):
        launch(m, "vadd", grid=1, block=32, args=[np.zeros(4, np.float32)])


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tilecore", "run", *args], cwd=cwd, capture_output=True, text=True)


def test_cli_run_gpu_dialect_module(tmp_path):
    n = 500
    x = (np.arange(n, dtype=np.float32) / 100)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros(n, np.float32))
    r = _cli(kernel_path("math_printf_assert"), "--kernel", "math_printf_assert", "--grid", "4", "--block", "128",
             "--arg", "x.npy", "--arg", "y.npy", "--arg", str(n), "--out-dir", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "block 0: y=1.000 n=500" in r.stdout
    y = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(y, np.exp(x) + np.sqrt(x), rtol=1e-6)


def test_cli_run_reports_device_assert(tmp_path):
    np.save(tmp_path / "x.npy", -np.ones(8, np.float32))
    np.save(tmp_path / "y.npy", np.zeros(8, np.float32))
    r = _cli(kernel_path("math_printf_assert"), "--kernel", "math_printf_assert", "--block", "8",
             "--arg", "x.npy", "--arg", "y.npy", "--arg", "8", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("error: ") and "math_printf_assert.mlir:20: device-side assertion failed" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "y.out.npy").exists()


def test_votes_match_redux_sregs_named_barriers_dynamic_shared(pm):
    m = lowered(pm, kernel_path("more_ops"))
    nf = 20
    x = np.random.default_rng(5).integers(0, 1000, 128).astype(np.int32)
    x[70] = 5  # any(x == 5) true in warp 2 only
    r = np.zeros(128 * nf, np.int32)
    launch(m, "more_ops", grid=2, block=(32, 2), args=[x, r], shared_bytes=64 * 4)
    r = r.reshape(128, nf).view(np.uint32)
    for g in range(128):
        cta, t = divmod(g, 64)
        lane, warp = t % 32, t // 32
        w = x[(g // 32) * 32:(g // 32) * 32 + 32]
        cta_x = x[cta * 64:cta * 64 + 64]
        want = [1, int((w == 5).any()), 0, 0xFFFFFFFF, 1, w.min(), w.max(), np.bitwise_or.reduce(w),
                int(lane < 31), (1 << lane) - 1, (~((1 << lane) - 1)) & 0xFFFFFFFF, t // 32, 2, cta, 2, warp,
                int((cta_x % 2).sum()), 1, cta * 64 + (t + 1) % 64, cta + 10]
        assert r[g].tolist() == [int(v) for v in want], (g, r[g].tolist(), want)


CORPUS = VISIBLE_CORPUS


@pytest.mark.skipif(not os.path.isdir(CORPUS) or not has_plugin("tileas"),
                    reason="needs the TileIR corpus and the tileas plugin")
def test_tileir_bytecode_rowsum_through_the_pipeline(pm):
    from tilecore.emulate.cli import load_module

    m = load_module(os.path.join(CORPUS, "rowsum_f32.tileirbc"), "sm_80", pm)
    x = np.random.default_rng(6).random((32, 256), dtype=np.float32)
    out = np.zeros(32, np.float32)
    # (x, rows, cols, row stride, col stride, out, n, out stride); 8 rows per CTA, 128 threads
    launch(m, "rowsum_f32", grid=4, block=128, args=[x, 32, 256, 256, 1, out, 32, 1])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


@pytest.mark.skipif(not os.path.isdir(CORPUS) or not has_plugin("tileas"),
                    reason="needs the TileIR corpus and the tileas plugin")
def test_cli_run_tileir_bytecode(tmp_path):
    n = 1024
    np.save(tmp_path / "a.npy", np.arange(n, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.full(n, 0.5, np.float32))
    np.save(tmp_path / "c.npy", np.zeros(n, np.float32))
    r = _cli(os.path.join(CORPUS, "vadd_f32.tileirbc"), "--kernel", "vadd_f32", "--grid", "8", "--block", "128",
             *[x for a in ("a.npy", "b.npy", "c.npy") for x in ("--arg", a, "--arg", str(n), "--arg", "1")],
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "c.out.npy"), np.arange(n, dtype=np.float32) + 0.5)


def test_cli_run_bad_grid_and_missing_kernel(tmp_path):
    r = _cli(kernel_path("block_reduce"), "--kernel", "block_reduce", "--grid", "0", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and "--grid must be" in r.stderr
    r = _cli(kernel_path("block_reduce"), "--kernel", "nope", cwd=tmp_path)
    assert r.returncode == 1 and "no kernel 'nope' in the module" in r.stderr and "block_reduce" in r.stderr


def test_local_memory_alloca_in_addrspace5_is_per_thread(pm):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %one = llvm.mlir.constant(1 : i32) : i32
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %slot = llvm.alloca %one x i32 : (i32) -> !llvm.ptr<5>
            llvm.store %t, %slot : i32, !llvm.ptr<5>
            nvvm.barrier0
            %v = llvm.load %slot : !llvm.ptr<5> -> i32
            %p = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %v, %p : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    out = np.zeros(64, np.int32)
    launch(m, "k", grid=1, block=64, args=[out])
    np.testing.assert_array_equal(out, np.arange(64))


def test_warp_collective_waits_only_for_non_exited_lanes(pm):
    from tilecore.mlir import ir

    # block of 48: warp 1 has 16 lanes; threads 40..47 exit before the full-mask shuffle
    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %c40 = llvm.mlir.constant(40 : i32) : i32
            %one = llvm.mlir.constant(1 : i32) : i32
            %full = llvm.mlir.constant(-1 : i32) : i32
            %c31 = llvm.mlir.constant(31 : i32) : i32
            %stay = llvm.icmp "slt" %t, %c40 : i32
            llvm.cond_br %stay, ^work, ^exit
          ^work:
            %v = nvvm.shfl.sync bfly %full, %t, %one, %c31 : i32 -> i32
            %p = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %v, %p : i32, !llvm.ptr<1>
            llvm.br ^exit
          ^exit:
            llvm.return
          }
        }""")
    out = np.full(48, -1, np.int32)
    launch(m, "k", grid=1, block=48, args=[out])
    np.testing.assert_array_equal(out[:40], np.arange(40) ^ 1)
    assert (out[40:] == -1).all()


def test_barrier_arrive_producer_consumer(pm):
    from tilecore.mlir import ir

    # warp 1 produces into shared memory and arrives at barrier 1; warp 0 waits there and consumes
    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.mlir.global internal @buf() {addr_space = 3 : i32} : !llvm.array<32 x i32>
          llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %c1 = llvm.mlir.constant(1 : i32) : i32
            %c32 = llvm.mlir.constant(32 : i32) : i32
            %c64 = llvm.mlir.constant(64 : i32) : i32
            %c100 = llvm.mlir.constant(100 : i32) : i32
            %buf = llvm.mlir.addressof @buf : !llvm.ptr<3>
            %producer = llvm.icmp "sge" %t, %c32 : i32
            llvm.cond_br %producer, ^produce, ^consume
          ^produce:
            %lane = llvm.sub %t, %c32 : i32
            %v = llvm.add %t, %c100 : i32
            %p = llvm.getelementptr %buf[%lane] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
            llvm.store %v, %p : i32, !llvm.ptr<3>
            nvvm.barrier.arrive id = %c1 number_of_threads = %c64
            llvm.return
          ^consume:
            nvvm.barrier id = %c1 number_of_threads = %c64
            %q = llvm.getelementptr %buf[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
            %w = llvm.load %q : !llvm.ptr<3> -> i32
            %o = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %w, %o : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    out = np.zeros(32, np.int32)
    launch(m, "k", grid=1, block=64, args=[out])
    np.testing.assert_array_equal(out, np.arange(32) + 132)


@pytest.mark.parametrize("callee, message", [
    ("__nv_j0f", "no host version of the libdevice function '__nv_j0f'"),
    ("my_device_fn", "does not support calls of the external function 'my_device_fn'"),
])
def test_unknown_external_calls_fail_with_their_name(pm, callee, message):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse(f"""
        gpu.module @m {{
          llvm.func @{callee}(f32) -> f32
          llvm.func @k(%x: f32) attributes {{nvvm.kernel}} {{
            %y = llvm.call @{callee}(%x) : (f32) -> f32
            llvm.return
          }}
        }}""")
    with pytest.raises(TilecoreError, match=message):
        compile_kernel(m, "k")


def test_cli_run_lowered_module_with_2d_grid(tmp_path):
    lowered_file = tmp_path / "block_reduce.nvvm.mlir"
    r = subprocess.run([sys.executable, "-m", "tilecore", "opt", kernel_path("block_reduce"), "--stages",
                        "convert-nvgpu-and-gpu-to-nvvm", "-o", str(lowered_file)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(7).random(6 * 256, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros(6, np.float32))
    r = _cli(str(lowered_file), "--kernel", "block_reduce", "--grid", "6", "--block", "256,1,1",
             "--arg", "x.npy", "--arg", "out.npy", "--out-dir", "res", "--no-bounds-check", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "res" / "out.npy"), x.reshape(6, 256).sum(axis=1), rtol=1e-5)


def test_assert_in_one_thread_stops_a_cta_waiting_at_a_barrier(pm):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.mlir.global internal constant @msg("tid != 5\\00") {addr_space = 0 : i32}
          llvm.mlir.global internal constant @file("k.cu\\00") {addr_space = 0 : i32}
          llvm.mlir.global internal constant @fn("k\\00") {addr_space = 0 : i32}
          llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)
          llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %c5 = llvm.mlir.constant(5 : i32) : i32
            %bad = llvm.icmp "eq" %t, %c5 : i32
            llvm.cond_br %bad, ^fail, ^ok
          ^fail:
            %m = llvm.mlir.addressof @msg : !llvm.ptr
            %f = llvm.mlir.addressof @file : !llvm.ptr
            %n = llvm.mlir.addressof @fn : !llvm.ptr
            %line = llvm.mlir.constant(42 : i32) : i32
            %one = llvm.mlir.constant(1 : i64) : i64
            llvm.call @__assertfail(%m, %f, %line, %n, %one) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
            llvm.br ^ok
          ^ok:
            nvvm.barrier0
            %p = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %t, %p : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    out = np.zeros(128, np.int32)
    with pytest.raises(TilecoreError) as e:
        launch(m, "k", grid=2, block=128, args=[out])
    assert e.value.render() == ("error: k.cu:42: device-side assertion failed: tid != 5 "
                                "(in k, block (0, 0, 0), thread (5, 0, 0))")


def test_redux_sync_float_min_max_with_abs(pm):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %full = llvm.mlir.constant(-1 : i32) : i32
            %zero = llvm.mlir.constant(0 : i32) : i32
            %one = llvm.mlir.constant(1 : i32) : i32
            %p = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
            %v = llvm.load %p : !llvm.ptr<1> -> f32
            %mn = nvvm.redux.sync fmin %v, %full : f32 -> f32
            %mx = nvvm.redux.sync fmax %v, %full {abs = true} : f32 -> f32
            %first = llvm.icmp "eq" %t, %zero : i32
            llvm.cond_br %first, ^w, ^e
          ^w:
            llvm.store %mn, %out : f32, !llvm.ptr<1>
            %q = llvm.getelementptr %out[%one] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
            llvm.store %mx, %q : f32, !llvm.ptr<1>
            llvm.br ^e
          ^e:
            llvm.return
          }
        }""")
    x = np.random.default_rng(8).standard_normal(32).astype(np.float32)
    out = np.zeros(2, np.float32)
    launch(m, "k", grid=1, block=32, args=[x, out])
    assert out.tolist() == [x.min(), np.abs(x).max()]


@pytest.mark.skipif(not os.path.isdir(CORPUS) or not has_plugin("tileas"),
                    reason="needs the TileIR corpus and the tileas plugin")
def test_tileir_bytecode_transpose_and_row_softmax(pm):
    from tilecore.emulate.cli import load_module

    x = np.random.default_rng(9).random((64, 128), dtype=np.float32)
    out = np.zeros((128, 64), np.float32)
    m = load_module(os.path.join(CORPUS, "transpose_f32.tileirbc"), "sm_80", pm)
    # 32x64 tiles at (ctaid.x, ctaid.y); (x, rows, cols, strides..., out, rows, cols, strides...)
    launch(m, "transpose_f32", grid=(2, 2), block=128, args=[x, 64, 128, 128, 1, out, 128, 64, 64, 1])
    np.testing.assert_array_equal(out, x.T)

    h = np.random.default_rng(10).standard_normal((8, 512)).astype(np.float16)
    sm = np.zeros((8, 512), np.float16)
    m = load_module(os.path.join(CORPUS, "row_softmax_f16.tileirbc"), "sm_80", pm)
    launch(m, "row_softmax_f16", grid=4, block=128, args=[h, 8, 512, 512, 1, sm, 8, 512, 512, 1])
    f = h.astype(np.float32)
    ref = np.exp(f - f.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(sm.astype(np.float32), ref, atol=1e-3)


def test_out_of_bounds_global_access_fails_the_launch(pm):
    m = lowered(pm, os.path.join(ROOT, "tilecore", "data", "vadd_gpu.mlir"))
    a, b, c = np.ones(100, np.float32), np.ones(100, np.float32), np.zeros(100, np.float32)
    # n = 128 while the arrays hold 100 elements: thread 100 loads past the end of a
    with pytest.raises(TilecoreError) as e:
        launch(m, "vadd", grid=1, block=128, args=[a, b, c, 128])
    text = e.value.render()
    assert "out-of-bounds global memory access: load from 4 bytes at" in text
    assert "thread (100, 0, 0)" in text and "argument 0 spans" in text and "+400 bytes from it" in text
    assert (c == 0).all()  # nothing is copied back from a failed launch
    # unchecked, the same launch with in-bounds n runs
    launch(m, "vadd", grid=1, block=128, args=[a, b, c, 100], check_bounds=False)
    assert (c == 2).all()


@pytest.mark.skipif(not os.path.isdir(CORPUS) or not has_plugin("tileas"),
                    reason="needs the TileIR corpus and the tileas plugin")
def test_cli_run_tileir_without_the_tileas_plugin_is_a_clean_error(tmp_path):
    env = dict(os.environ, TILECORE_DISABLED_PLUGINS="tileas")
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", os.path.join(CORPUS, "vadd_f32.tileirbc"),
                        "--kernel", "vadd_f32"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("error: vadd_f32.tileirbc: no installed plugin can read this input")
    assert "Traceback" not in r.stderr


def test_module_global_in_global_memory_passes_bounds_checks(pm):
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.mlir.global internal constant @tab(dense<[7, 11, 13, 17]> : tensor<4xi32>) {addr_space = 1 : i32}
              : !llvm.array<4 x i32>
          llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %tab = llvm.mlir.addressof @tab : !llvm.ptr<1>
            %p = llvm.getelementptr %tab[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            %v = llvm.load %p : !llvm.ptr<1> -> i32
            %o = llvm.getelementptr %out[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %v, %o : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    out = np.zeros(4, np.int32)
    launch(m, "k", grid=1, block=4, args=[out])
    assert out.tolist() == [7, 11, 13, 17]
    with pytest.raises(TilecoreError, match="load from 4 bytes .* global @tab spans .* \\+16 bytes from it"):
        launch(m, "k", grid=1, block=5, args=[np.zeros(5, np.int32)])


def _mma_fragments(a, b, c, elem):
    """Per-lane register files of mma.sync (PTX ISA layouts) for A 16xK, B Kx8, C 16x8: m16n8k16 for
    f16 / bf16 (2 elements per register), m16n8k32 for s8 / u8 (4 per register, i32 accumulators)."""
    per = 2 if elem in ("f16", "bf16") else 4
    width = 32 // per
    bits = {"f16": lambda x: int(np.float16(x).view(np.uint16)),
            "bf16": lambda x: int(np.float32(x).view(np.uint32) >> 16)}.get(elem, lambda x: int(x) & 0xFF)
    k = a.shape[1]
    a_regs, b_regs = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32)
    c_regs = np.zeros((32, 4), np.float32 if per == 2 else np.int32)

    def pack(values):
        return sum(bits(v) << (width * e) for e, v in enumerate(values))

    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i, (r, col) in enumerate(((g, per * t), (g + 8, per * t), (g, per * t + k // 2),
                                      (g + 8, per * t + k // 2))):
            a_regs[lane, i] = pack(a[r, col:col + per])
        for i, kk in enumerate((per * t, per * t + k // 2)):
            b_regs[lane, i] = pack(b[kk:kk + per, g])
        c_regs[lane] = [c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1]]
    return a_regs, b_regs, c_regs


def _mma_kernel(pm, reg: str, acc: str, attrs: str):
    """A one-warp kernel: each lane loads its A (4), B (2) and C (4) registers from three arrays, runs
    one nvvm.mma.sync with ``attrs`` and stores its 4 D registers where it loaded C."""
    from tilecore.mlir import ir

    struct = f"!llvm.struct<({acc}, {acc}, {acc}, {acc})>"
    loads, stores = [], []
    for name, count, ty in (("a", 4, reg), ("b", 2, reg), ("c", 4, acc)):
        for i in range(count):  # %co{i}: the word of C register i, reused for D
            loads.append(f"%{name}i{i} = llvm.mlir.constant({i} : i32) : i32\n"
                         f"%{name}o{i} = llvm.add %{name}base, %{name}i{i} : i32\n"
                         f"%{name}p{i} = llvm.getelementptr %{name}[%{name}o{i}] : (!llvm.ptr<1>, i32) -> "
                         f"!llvm.ptr<1>, i32\n%{name}{i} = llvm.load %{name}p{i} : !llvm.ptr<1> -> {ty}")
    for i in range(4):
        stores.append(f"%d{i} = llvm.extractvalue %r[{i}] : {struct}\n"
                      f"%dp{i} = llvm.getelementptr %d[%co{i}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32\n"
                      f"llvm.store %d{i}, %dp{i} : {acc}, !llvm.ptr<1>")
    newline = "\n"
    with pm.make_context():
        return ir.Module.parse(f"""
        gpu.module @m {{
          llvm.func @k(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %d: !llvm.ptr<1>)
              attributes {{nvvm.kernel}} {{
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %k2 = llvm.mlir.constant(2 : i32) : i32
            %k4 = llvm.mlir.constant(4 : i32) : i32
            %abase = llvm.mul %t, %k4 : i32
            %bbase = llvm.mul %t, %k2 : i32
            %cbase = llvm.mul %t, %k4 : i32
            {newline.join(loads)}
            %r = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3]
                {{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, {attrs}}}
                : ({reg}, {reg}, {acc}) -> {struct}
            {newline.join(stores)}
            llvm.return
          }}
        }}""")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_mma_sync_m16n8k16_is_a_warp_collective(pm, elem):
    reg = "vector<2xf16>" if elem == "f16" else "i32"
    ptx = "" if elem == "f16" else \
        ", multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>"
    m = _mma_kernel(pm, reg, "f32", "shape = #nvvm.shape<m = 16, n = 8, k = 16>" + ptx)
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32) / 4
    b = rng.integers(-4, 5, (16, 8)).astype(np.float32) / 4
    c = rng.integers(-8, 9, (16, 8)).astype(np.float32)
    a_regs, b_regs, c_regs = _mma_fragments(a, b, c, elem)
    d = np.zeros((32, 4), np.float32)
    launch(m, "k", grid=1, block=32, args=[a_regs, b_regs, c_regs, d])
    _, _, want = _mma_fragments(a, b, a @ b + c, elem)
    np.testing.assert_array_equal(d, want)


def test_mma_sync_m16n8k8_tf32_ignores_the_low_13_bits(pm):
    """m16n8k8 .tf32 (one element per 32-bit register; PTX ISA fragments for mma.m16n8k8 .tf32: A0 (g, t),
    A1 (g+8, t), A2 (g, t+4), A3 (g+8, t+4); B0 (t, g), B1 (t+4, g)): operands carrying bits below tf32
    precision multiply as if those 13 bits were zero."""
    tf32 = ", multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>"
    m = _mma_kernel(pm, "i32", "f32", "shape = #nvvm.shape<m = 16, n = 8, k = 8>" + tf32)
    rng = np.random.default_rng(5)
    a = (rng.integers(-64, 65, (16, 8)) / 16).astype(np.float32)  # exact in tf32
    b = (rng.integers(-64, 65, (8, 8)) / 16).astype(np.float32)
    c = rng.integers(-8, 9, (16, 8)).astype(np.float32)
    noise_a = rng.integers(0, 1 << 13, a.shape).astype(np.uint32)  # below tf32 precision
    noise_b = rng.integers(0, 1 << 13, b.shape).astype(np.uint32)
    a_bits, b_bits = a.view(np.uint32) | noise_a, b.view(np.uint32) | noise_b
    a_regs, b_regs, c_regs = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32), np.zeros((32, 4), np.float32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        a_regs[lane] = [a_bits[g, t], a_bits[g + 8, t], a_bits[g, t + 4], a_bits[g + 8, t + 4]]
        b_regs[lane] = [b_bits[t, g], b_bits[t + 4, g]]
        c_regs[lane] = [c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1]]
    d = np.zeros((32, 4), np.float32)
    launch(m, "k", grid=1, block=32, args=[a_regs, b_regs, c_regs, d])
    want = a @ b + c  # small integers / 256: exact in f32
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        assert d[lane].tolist() == [want[g, 2 * t], want[g, 2 * t + 1], want[g + 8, 2 * t], want[g + 8, 2 * t + 1]]


def test_cvt_rna_tf32_f32_rounds_ties_away(pm):
    """nvvm.convert.float.to.tf32 (rna): nearest tf32, ties away from zero, low 13 bits cleared;
    infinities and NaN pass; the largest finite f32 rounds up to infinity."""
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %p = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
            %v = llvm.load %p : !llvm.ptr<1> -> f32
            %r = nvvm.convert.float.to.tf32 %v {rnd = #nvvm.fp_rnd_mode<rna>}
            %q = llvm.getelementptr %y[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
            llvm.store %r, %q : i32, !llvm.ptr<1>
            llvm.return
          }
        }""")
    x = np.array([0x3F801000, 0xBF801000, 0x3F800FFF, 0x3F803000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x00001000],
                 np.uint32)
    y = np.zeros(8, np.uint32)
    launch(m, "k", grid=1, block=8, args=[x.view(np.float32), y])
    assert [hex(v) for v in y] == [hex(v) for v in (0x3F802000, 0xBF802000, 0x3F800000, 0x3F804000, 0x7F800000,
                                                     0x7F800000, 0xFF800000, 0x00002000)]


def test_float_conversions_the_jit_lacks_are_bound_and_round_to_nearest_even(pm):
    """fptrunc f64 -> f16 / bf16 and f32 -> bf16 are compiler-rt calls on the host (no instruction);
    the emulator binds them. f64 -> bf16 rounds once, from the double (1 + 2^-8 + 2^-40 is just
    above a tie: 0x3F81; through f32 it would become the tie and round to even, 0x3F80)."""
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%x: !llvm.ptr<1>, %h: !llvm.ptr<1>, %b: !llvm.ptr<1>, %bs: !llvm.ptr<1>)
              attributes {nvvm.kernel} {
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %px = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f64
            %v = llvm.load %px : !llvm.ptr<1> -> f64
            %vh = llvm.fptrunc %v : f64 to f16
            %vb = llvm.fptrunc %v : f64 to bf16
            %vs = llvm.fptrunc %v : f64 to f32
            %vsb = llvm.fptrunc %vs : f32 to bf16
            %ph = llvm.getelementptr %h[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f16
            %pb = llvm.getelementptr %b[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
            %ps = llvm.getelementptr %bs[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, bf16
            llvm.store %vh, %ph : f16, !llvm.ptr<1>
            llvm.store %vb, %pb : bf16, !llvm.ptr<1>
            llvm.store %vsb, %ps : bf16, !llvm.ptr<1>
            llvm.return
          }
        }""")
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-9, 1 + 2**-8 + 2**-40, -2.5, 3.4e38, 2.0**-133, np.inf, np.nan,
                  65520.0, 1 / 3], np.float64)
    h, b, bs = (np.zeros(len(x), np.uint16) for _ in range(3))
    launch(m, "k", grid=1, block=len(x), args=[x, h, b, bs])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16).view(np.uint16))
    want = [0x3F80, 0x3F80, 0x3F81, 0x3F81, 0xC020, 0x7F80, 0x0001, 0x7F80, 0x7FC0, 0x4780, 0x3EAB]
    assert [hex(v) for v in b] == [hex(v) for v in want]
    # through f32: the same except the value whose f32 rounding lands on the tie
    assert [hex(v) for v in bs] == [hex(v) for v in want[:3] + [0x3F80] + want[4:]]


def test_host_module_is_compiled_for_the_baseline_cpu_not_the_host(pm, monkeypatch):
    """Every function of the JIT module names the architecture's baseline CPU and features, so a
    host with AVX512-BF16 (native bf16 conversion flushing subnormals) computes what any other does."""
    from tilecore.emulate import hostmodule
    from tilecore.mlir import ir

    monkeypatch.setattr(hostmodule.platform, "machine", lambda: "x86_64")
    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @k(%x: !llvm.ptr<1>) attributes {nvvm.kernel, target_cpu = "sm_90a"} { llvm.return }
        }""")
        host = hostmodule.build(m, "k")
        funcs = [f for f in host.module.body.operations if f.operation.name == "llvm.func" and len(f.regions[0].blocks)]
        assert len(funcs) > 3  # the kernel, the driver and the helpers
        for f in funcs:
            assert f.attributes["target_cpu"].value == "x86-64"
            assert str(f.attributes["target_features"]) == '#llvm.target_features<["+cx8", "+fxsr", "+mmx", "+sse", "+sse2"]>'



def test_mma_sync_m16n8k32_integer_mixed_signedness(pm):
    """m16n8k32 u8 x s8 -> s32 (wrapping): the integer row of the warp collective."""
    m = _mma_kernel(pm, "i32", "i32", "shape = #nvvm.shape<m = 16, n = 8, k = 32>, "
                    "intOverflowBehavior = #nvvm.mma_int_overflow<wrapped>, "
                    "multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<s8>")
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (16, 32))
    b = rng.integers(-128, 128, (32, 8))
    c = rng.integers(-1000, 1000, (16, 8))
    c[0, 0] = 2**31 - 1  # wraps
    a_regs, b_regs, c_regs = _mma_fragments(a, b, c, "u8")
    d = np.zeros((32, 4), np.int32)
    launch(m, "k", grid=1, block=32, args=[a_regs, b_regs, c_regs, d])
    want = ((a @ b + c + 2**31) % 2**32 - 2**31).astype(np.int64)
    _, _, want_regs = _mma_fragments(a, b, want, "u8")
    np.testing.assert_array_equal(d, want_regs)
