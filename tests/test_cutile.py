"""tilecore.cutile (issue 17): cuTile kernels launched with ct.launch's conventions.

CPU path: every visible corpus kernel (cuTile sources: plugins/tileas/tests/cutile_kernels.py, and
``rowsum_f32`` below, which that file lacks) and a few programs of the random generator
(tests/fuzz) run through ``tilecore.cutile.launch`` on numpy arrays and match numpy. GPU path
without a GPU: the specialisation derived from arguments, the launch contract, the parameters
marshalled for ``cuda.core.launch`` (read back from cuda-core's own parameter buffer) and the launch
configuration; the errors a user meets. ``scripts/gpu_check.py cutile`` runs the GPU path itself.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from typing import Annotated

import numpy as np
import pytest
from support import CORPUS, ROOT, run_cli

ct = pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")
sys.path.insert(0, os.path.join(ROOT, "plugins", "tileas", "tests"))

import cutile_kernels as ck  # noqa: E402

import tilecore.cutile as tc  # noqa: E402
from tilecore.cutile import gpu  # noqa: E402
from tilecore.cutile.arrays import describe  # noqa: E402
from tilecore.cutile.contract import LaunchContract, ParamEntry  # noqa: E402
from tilecore.cutile.kernel import _CACHE  # noqa: E402
from tilecore.cutile.specialize import array_spec, bind, from_spelling  # noqa: E402
from tilecore.errors import TilecoreError  # noqa: E402

RNG = np.random.default_rng(17)
f16, f32, i32 = np.float16, np.float32, np.int32


def cdiv(a, b):
    return -(-a // b)


def rand(shape, dtype=f32):
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=tol, atol=tol)


@ct.kernel
def rowsum_f32(x, out, TM: ct.Constant[int], N: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(out, index=(bid,), tile=ct.sum(ct.load(x, index=(bid, 0), shape=(TM, N)), axis=1))


@ct.kernel
def copy_i64(x: Annotated[ct.Array, ct.ArrayAnnotation(index_dtype=ct.int64)], y, n, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) * n)


@ct.kernel
def not_exportable(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t + ct.bid(0, 1, 2))  # bid takes one axis: cuTile refuses it


# ------------------------------------------------------------------------------ the visible corpus, CPU path
def _softmax(x):
    t = x.astype(f32)
    e = np.exp(t - t.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).astype(f16)


def _gelu(x):
    t = x.astype(f32)
    return (0.5 * t * (1 + np.tanh(f32(0.7978845608) * (t + f32(0.044715) * t * t * t)))).astype(f16)


# name -> (kernel, make arrays, grid, args from arrays, reference from arrays (-> (index of output, value)), tol)
CORPUS_CASES = {
    "vadd_f32": (ck.vadd_f32, lambda: (rand(1000), rand(1000), np.zeros(1000, f32)), (cdiv(1000, 128),),
                 lambda a, b, c: (a, b, c, 128), lambda a, b, c: (2, a + b), 0),
    "saxpy_f32": (ck.saxpy_f32, lambda: (rand(1000), rand(1000), np.zeros(1000, f32)), cdiv(1000, 256),
                  lambda x, y, o: (f32(2.5), x, y, o, 256), lambda x, y, o: (2, f32(2.5) * x + y), 1e-6),
    "relu_f16": (ck.relu_f16, lambda: (rand((20, 100), f16), np.zeros((20, 100), f16)), (cdiv(20, 16), cdiv(100, 64)),
                 lambda x, y: (x, y, 16, 64), lambda x, y: (1, np.maximum(x, 0)), 0),
    "gelu_f16": (ck.gelu_f16, lambda: (rand(600, f16), np.zeros(600, f16)), (cdiv(600, 256),),
                 lambda x, y: (x, y, 256), lambda x, y: (1, _gelu(x)), 2e-3),
    "rowsum_f32": (rowsum_f32, lambda: (rand((20, 256)), np.zeros(20, f32)), (cdiv(20, 8),),
                   lambda x, o: (x, o, 8, 256), lambda x, o: (1, x.sum(1)), 1e-4),
    "row_softmax_f16": (ck.row_softmax_f16, lambda: (rand((5, 512), f16), np.zeros((5, 512), f16)), (cdiv(5, 2),),
                        lambda x, y: (x, y, 2, 512), lambda x, y: (1, _softmax(x)), 1e-2),
    "transpose_f32": (ck.transpose_f32, lambda: (rand((40, 70)), np.zeros((70, 40), f32)), (cdiv(40, 32), cdiv(70, 64)),
                      lambda x, y: (x, y, 32, 64), lambda x, y: (1, x.T), 0),
    "rownorm_loop_if_f32": (ck.rownorm_loop_if_f32, lambda: (rand((10, 300)), np.zeros(10, f32)), (cdiv(10, 4),),
                            lambda x, o: (x, o, 2, 4, 128), lambda x, o: (1, np.sqrt((x * x).sum(1))), 1e-4),
    "matmul_f16": (ck.matmul_f32acc, lambda: (rand((200, 100), f16), rand((100, 150), f16), np.zeros((200, 150), f16)),
                   (2, 2), lambda a, b, c: (a, b, c, 128, 128, 64),
                   lambda a, b, c: (2, (a.astype(f32) @ b.astype(f32)).astype(f16)), 1e-2),
}


def _corpus_param_types(name: str) -> list[str]:
    from tilecore.compiler import compile_file
    from tilecore.emulate.hostmodule import find_kernel_module

    res = compile_file(os.path.join(CORPUS, f"{name}.tileirbc"), "sm_80", stop_after="translate-debug-info")
    holder = find_kernel_module(res.module, name)
    func = next(op for op in holder.regions[0].blocks[0].operations
                if op.operation.name == "llvm.func" and op.attributes["sym_name"].value == name)
    return [str(a.type) for a in func.regions[0].blocks[0].arguments]


@pytest.mark.parametrize("name", sorted(CORPUS_CASES))
def test_corpus_kernel_through_launch_matches_numpy(name):
    kernel, make, grid, args, ref, tol = CORPUS_CASES[name]
    arrays = make()
    tc.launch(None, grid, kernel, args(*arrays))
    out, want = ref(*arrays)
    close(arrays[out], want, tol)
    # the specialisation derived from these numpy arrays has the kernel ABI of the corpus bytecode
    compiled = tc.compile(kernel, args(*arrays))
    if os.path.exists(os.path.join(CORPUS, f"{name}.tileirbc")):
        assert [p.type for p in compiled.contract.params] == _corpus_param_types(name)


def test_second_call_is_cached_and_a_new_dtype_is_a_new_specialisation():
    _CACHE.clear()  # other tests in this process may have filled it to its size limit (an LRU: len stays put)
    a, b, c = rand(300), rand(300), np.zeros(300, f32)
    tc.launch(None, 3, ck.vadd_f32, (a, b, c, 128))
    first = tc.compile(ck.vadd_f32, (a, b, c, 128))
    n = len(_CACHE)
    c[:] = 0
    tc.launch(None, 3, ck.vadd_f32, (a, b, c, 128))
    assert len(_CACHE) == n and tc.compile(ck.vadd_f32, (a, b, c, 128)) is first
    close(c, a + b, 0)
    x, y, z = rand(300, np.float64), rand(300, np.float64), np.zeros(300, np.float64)
    tc.launch(None, 3, ck.vadd_f32, (x, y, z, 128))  # same kernel, f64 arrays: compiled anew, as cuTile does
    assert len(_CACHE) == n + 1
    close(z, x + y, 0)


def test_strided_views_are_read_and_updated_in_place():
    x = rand((20, 200), f16)
    y = np.full((40, 100), 7, f16)
    view_in, view_out = x[:, ::2], y[::2]  # last axis stride 2 (no unit-stride fact); every other row
    tc.launch(None, (cdiv(20, 16), cdiv(100, 64)), ck.relu_f16, (view_in, view_out, 16, 64))
    close(y[::2], np.maximum(x[:, ::2], 0), 0)
    assert (y[1::2] == 7).all()  # rows between the view's are untouched


def test_printf_goes_to_stdout_and_a_failing_assert_names_the_source_line(capfd):
    x = np.ones(256, f32)
    tc.launch(None, 2, ck.print_assert_f32, (x, 128))
    assert capfd.readouterr().out.splitlines() == ["block 0 sum 128.000000", "block 1 sum 128.000000"]
    x[:128] = -1
    with pytest.raises(TilecoreError) as e:
        tc.launch(None, 2, ck.print_assert_f32, (x, 128))
    line = next(i for i, t in enumerate(open(ck.__file__), 1) if 'ct.assert_(ct.sum(t) >= 0.0, "negative sum")' in t)
    assert "device-side assertion failed: negative sum" in e.value.message
    assert e.value.location == f"{ck.__file__}:{line}"


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16])
def test_printf_promotes_narrow_integers(capfd, dt):
    """8- / 16-bit integers reach vprintf as 32-bit values. cuda_tile integers are signless, so the
    conversion decides: %d sign-extends the element's bits, %u / %x zero-extend them (a uint8 above 127
    needs %u to print as itself, an int8 below 0 needs %d)."""
    x = np.array([-3, 5], np.int64).astype(dt)
    tc.launch(None, 1, ck.print_narrow_ints, (x, 2))
    bits = 8 * x.itemsize
    unsigned = [int(v) % 2**bits for v in x]
    signed = [u - 2**bits if u >= 2 ** (bits - 1) else u for u in unsigned]
    want = [f"[{signed[0]}, {signed[1]}] [{unsigned[0]}, {unsigned[1]}] [{unsigned[0]:x}, {unsigned[1]:x}]"]
    assert capfd.readouterr().out.splitlines() == want  # a tile prints whole, as a list (tileiras)


def test_fuzz_programs_through_launch_match_their_models(tmp_path):
    from fuzz import compare, runner
    from fuzz.dtypes import DTYPES
    from fuzz.generator import generate
    from fuzz.test_fuzz_programs import KNOWN_FAILURES

    known = {feature for feature, _marker, _bug in KNOWN_FAILURES}
    ok = 0
    for seed in range(1000, 1100):
        p = generate(seed)
        dts = {q.dt for q in p.params}
        if (p.min_sm > 80 or p.second_tile is not None or any(DTYPES[d].encoded or d == "bool" for d in dts)
                or "index_i64" in p.features or p.features & known or any(f.startswith("cast:bool") for f in p.features)):
            continue  # numpy holds no bf16 / f8 arrays; programs of the fuzz test's known failures are left out
        path = tmp_path / f"fz_{seed}.py"
        path.write_text(p.render())
        mod = runner.load_module(str(path))
        (_, tile), = mod.SIGNATURES
        inp = mod.make_inputs(list(mod.EXTENTS), tile, np.random.default_rng(seed))
        want = mod.reference({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inp.items()},
                             list(mod.EXTENTS), tile)
        args = [inp[name] if kind == "array" else np.dtype(DTYPES[dt].storage).type(inp[name])
                for name, kind, dt, _rank, _idx in mod.PARAMS]
        tc.launch(None, tuple(mod.grid(list(mod.EXTENTS), tile)), mod.KERNEL, args + list(tile))
        assert compare.mismatches(inp, want, mod.CHECKS) == [], f"seed {seed}"
        ok += 1
        if ok == 4:
            break
    assert ok == 4


# ------------------------------------------------------------------------------ compile(): artifacts, contract
def test_compile_gives_cubin_ptx_and_the_launch_contract():
    k = tc.compile(ck.saxpy_f32, ("f32", "f32[1]", "f32[1]", "f32[1]", 256), gpu_name="sm_90a")
    assert k.cubin[:4] == b"\x7fELF" and k.gpu_name == "sm_90a"
    assert ".entry saxpy_f32" in k.ptx and ".reqntid 128, 1, 1" in k.ptx
    c = k.contract
    assert c.threads == (128, 1, 1) and k.threads_per_cta == 128 and c.shared_bytes == 0 and c.cluster == (1, 1, 1)
    assert [(p.kind, p.name, p.axis, p.type) for p in c.params] == [
        ("scalar", "alpha", None, "f32"),
        ("pointer", "x", None, "!llvm.ptr<1>"), ("shape", "x", 0, "i32"), ("stride", "x", 0, "i32"),
        ("pointer", "y", None, "!llvm.ptr<1>"), ("shape", "y", 0, "i32"), ("stride", "y", 0, "i32"),
        ("pointer", "out", None, "!llvm.ptr<1>"), ("shape", "out", 0, "i32"), ("stride", "out", 0, "i32")]
    assert "x.strides[0]: i32" in c.describe()
    # the same kernel from a cuTile KernelSignature (what the spellings stand for) is the same compiled kernel
    sig = ck.KernelSignature([ck._param(p) for p in ck.KERNELS["saxpy_f32"][1]], ck.CallingConvention.cutile_python_v1())
    assert tc.compile(ck.saxpy_f32, sig, gpu_name="sm_90a") is k
    x, y, o = rand(600), rand(600), np.zeros(600, f32)
    k.launch(None, cdiv(600, 256), (f32(2.5), x, y, o, 256))
    close(o, f32(2.5) * x + y, 1e-6)


def test_specialisation_facts_follow_cutile():
    base = np.zeros(4096 + 16, f32)
    a = base[:1024]  # numpy's allocations are 16-byte aligned
    s = array_spec(describe(a))
    assert (s.dtype, s.ndim, s.index, s.stride_constant, s.shape_divisible_by, s.base_divisible_by, s.may_alias) == \
        ("f32", 1, "i32", (1,), (16,), 16, False)
    assert array_spec(describe(base[1:1001])).base_divisible_by == 1  # 4 bytes in: not 16-byte aligned
    m = np.zeros((8, 64), f16)
    s = array_spec(describe(m))
    assert s.stride_constant == (None, 1) and s.stride_divisible_by == (8, 1)  # 64 f16 = 128 bytes = 8 x 16 B
    assert array_spec(describe(m[:, ::3])).stride_constant == (None, None)
    assert array_spec(describe(np.broadcast_to(np.zeros(4, f32), (8, 4)))).may_alias  # stride 0: overlapping
    specs, _ = bind(copy_i64, (np.zeros(64, f32), np.zeros(64, f32), 3, 64))
    assert [getattr(s, "index", None) for s in specs] == ["i64", "i32", None, None]  # from ct.ArrayAnnotation
    assert [str(s) for s in specs] == ["float32[1] (int64 index)", "float32[1]", "int32", "64"]
    assert str(bind(copy_i64, (np.zeros(64, f32), np.zeros(64, f32), f16(3), 64))[0][2]) == "float16"
    assert from_spelling("f32[2]i64").constraint() == ck._param("f32[2]i64")


# ------------------------------------------------------------------------------ marshalling for the GPU path
def _param_buffer(values) -> list:
    """What cuda.core hands the driver for ``values`` (its own ParamHolder): one address per parameter."""
    from cuda.core._kernel_arg_handler import ParamHolder

    holder = ParamHolder(values)
    return holder, (ctypes.c_void_p * len(values)).from_address(holder.ptr)


def test_marshalled_parameters_for_a_compiled_kernel():
    pytest.importorskip("cuda.core")
    k = tc.compile(ck.rownorm_loop_if_f32, ("f32[2]", "f32[1]", "i32", 4, 128))
    x, o = np.zeros((10, 300), f32), np.zeros(10, f32)
    values = k.bind((x[:, :280], o, 2, 4, 128))  # a view: row stride 300 elements, shape 280
    params = gpu.parameters(k.contract, values)
    assert params == [x.ctypes.data, 10, 280, 300, 1, o.ctypes.data, 10, 1, 2]
    assert [type(p) for p in params] == [int] + [np.int32] * 4 + [int] + [np.int32] * 2 + [np.int32]
    holder, addrs = _param_buffer(params)
    assert ctypes.c_uint64.from_address(addrs[0]).value == x.ctypes.data
    assert [ctypes.c_int32.from_address(addrs[i]).value for i in (1, 2, 3, 4, 8)] == [10, 280, 300, 1, 2]


def test_marshalling_int64_indices_and_typed_scalars():
    pytest.importorskip("cuda.core")
    contract = LaunchContract("k", (256, 1, 1), (1, 1, 1), 0, (
        ParamEntry("pointer", 0, "x", None, "!llvm.ptr<1>", "f16"), ParamEntry("shape", 0, "x", 0, "i64"),
        ParamEntry("shape", 0, "x", 1, "i64"), ParamEntry("stride", 0, "x", 0, "i64"),
        ParamEntry("stride", 0, "x", 1, "i64"), ParamEntry("scalar", 1, "alpha", None, "f16", "f16"),
        ParamEntry("scalar", 2, "n", None, "i64", "i64"), ParamEntry("scalar", 3, "flag", None, "i1", "bool")))
    x = np.zeros((3, 5), f16)
    values = [describe(x), 1.5, 2**40, True]
    params = gpu.parameters(contract, values)
    assert [type(p) for p in params[1:]] == [np.int64] * 4 + [np.float16, np.int64, np.bool_]
    holder, addrs = _param_buffer(params)
    assert [ctypes.c_int64.from_address(addrs[i]).value for i in range(1, 5)] == [3, 5, 5, 1]
    assert ctypes.c_uint16.from_address(addrs[5]).value == 0x3E00  # 1.5 as f16 bits
    assert ctypes.c_int64.from_address(addrs[6]).value == 2**40 and ctypes.c_bool.from_address(addrs[7]).value
    narrow = LaunchContract("k", (1, 1, 1), (1, 1, 1), 0, (ParamEntry("scalar", 0, "n", None, "i32", "i32"),))
    with pytest.raises(TilecoreError, match="does not fit int32"):
        gpu.parameters(narrow, [2**40])


def test_launch_config_is_the_contract():
    pytest.importorskip("cuda.core")
    k = tc.compile(ck.vadd_f32, ("f32[1]", "f32[1]", "f32[1]", 128))
    cfg = gpu.launch_config(k.contract, (8, 1, 1))
    assert (cfg.grid, cfg.block, cfg.shmem_size, cfg.cluster) == ((8, 1, 1), (128, 1, 1), 0, None)
    clustered = LaunchContract("k", (128, 1, 1), (2, 1, 1), 0, ())
    # cuda.core counts clusters when a cluster is set (its LaunchConfig asks the driver about clusters)
    assert gpu.launch_dims(clustered, (8, 1, 1)) == {"grid": (4, 1, 1), "cluster": (2, 1, 1), "block": (128, 1, 1),
                                                     "shmem_size": 0}
    with pytest.raises(TilecoreError, match="whole number of clusters"):
        from tilecore.cutile.contract import check_grid

        check_grid((7,), clustered)


# ------------------------------------------------------------------------------ errors a user meets
def test_argument_not_matching_the_compiled_specialisation():
    k = tc.compile(ck.vadd_f32, ("f32[1]", "f32[1]", "f32[1]", 128))
    a = np.zeros(256, f32)
    with pytest.raises(TilecoreError, match=r"argument 'b' is float16\[1\], the kernel was compiled for float32\[1\]"):
        k.launch(None, 2, (a, a.astype(f16), a, 128))
    with pytest.raises(TilecoreError, match=r"argument 'a' is float32\[2\]"):
        k.launch(None, 2, (a.reshape(2, 128), a, a, 128))
    with pytest.raises(TilecoreError, match="constant 'TILE' is 64, the kernel was compiled for 128"):
        k.launch(None, 2, (a, a, a, 64))


def test_non_contiguous_last_axis_where_unit_stride_was_assumed():
    k = tc.compile(ck.vadd_f32, ("f32[1]", "f32[1]", "f32[1]", 128))
    a = np.zeros(512, f32)
    with pytest.raises(TilecoreError, match="argument 'c' has stride 2 on its last axis, but the kernel was compiled "
                                            "assuming unit stride"):
        k.launch(None, 2, (a[:256], a[:256], a[::2], 128))


def test_grid_too_large_and_bad_grid():
    a = np.zeros(128, f32)
    with pytest.raises(TilecoreError, match="too large: axis y has 65536 tile blocks, at most 65535"):
        tc.launch(None, (1, 65536), ck.vadd_f32, (a, a, a, 128))
    with pytest.raises(TilecoreError, match="below 1"):
        tc.launch(None, (0,), ck.vadd_f32, (a, a, a, 128))


def test_kernel_cutile_cannot_export():
    with pytest.raises(TilecoreError, match="cuTile cannot export kernel 'not_exportable'") as e:
        tc.launch(None, 1, not_exportable, (np.zeros(128, f32), 128))
    assert e.value.location.startswith(f"{__file__}:")


def test_not_a_kernel_and_argument_count():
    with pytest.raises(TilecoreError, match="expected a @ct.kernel"):
        tc.launch(None, 1, cdiv, (1, 2))
    with pytest.raises(TilecoreError, match=r"takes 4 arguments \(a, b, c, TILE\), got 3"):
        tc.launch(None, 1, ck.vadd_f32, (np.zeros(8, f32),) * 3)
    with pytest.raises(TilecoreError, match="does not fit int32"):
        tc.launch(None, 1, ck.while_break_i32, (np.zeros(8, i32), np.zeros(8, i32), 2**40, 128))


def _no_gpu() -> str | None:
    try:
        from cuda.core import Device

        Device(0)
    except ImportError:
        return "cuda-core missing"
    except Exception:  # noqa: BLE001 - no driver / no device
        return None
    return "a GPU is present"


def test_device_cuda_without_a_gpu():
    reason = _no_gpu()
    if reason:
        pytest.skip(reason)
    with pytest.raises(TilecoreError, match="device='cuda' but no CUDA GPU can be used"):
        tc.launch(None, 1, ck.vadd_f32, (np.zeros(128, f32),) * 3 + (128,), device="cuda")


def test_cuda_core_missing_gives_the_install_hint():
    code = textwrap.dedent("""
        import sys
        sys.modules["cuda.core"] = None  # as if cuda-core were not installed
        from tilecore.cutile.gpu import cuda_core
        from tilecore.errors import TilecoreError
        try:
            cuda_core()
        except TilecoreError as e:
            print(e.message)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    assert "needs NVIDIA's cuda-core package" in out and "pip install tilecore[cuda]" in out


# ------------------------------------------------------------------------------ tilecore run FILE.py::KERNEL
KERNELS_PY = '''
import cuda.tile as ct


@ct.kernel
def vadd(x, y, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(out, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) + ct.load(y, index=(bid,), shape=(TILE,)))


@ct.kernel
def positive(x, TILE: ct.Constant[int]):
    ct.assert_(ct.min(ct.load(x, index=(ct.bid(0),), shape=(TILE,))) > 0.0, "x must be positive")
'''


def test_cli_runs_a_kernel_from_a_python_file(tmp_path):
    (tmp_path / "my_kernels.py").write_text(KERNELS_PY)
    x, y = rand(1000), rand(1000)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "out.npy", np.zeros(1000, f32))
    r = run_cli("run", "my_kernels.py::vadd", "--grid", "8", "--arg", "x.npy", "--arg", "y.npy", "--arg", "out.npy",
                "--const", "TILE=128", "--out-dir", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    close(np.load(tmp_path / "res" / "out.npy"), x + y, 0)
    r = run_cli("run", "my_kernels.py::positive", "--grid", "8", "--arg", "x.npy", "--const", "TILE=128",
                cwd=tmp_path)
    line = KERNELS_PY.splitlines().index(next(t for t in KERNELS_PY.splitlines() if "ct.assert_" in t)) + 1
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {tmp_path / 'my_kernels.py'}:{line}: device-side assertion failed: x must "
                               "be positive")
    r = run_cli("run", "my_kernels.py::vadd", "--grid", "8", "--arg", "x.npy", "--const", "TILE=128", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == "error: kernel 'vadd' takes 3 --arg (x, y, out), got 1"
    r = run_cli("run", "my_kernels.py::vadd", "--grid", "8", "--arg", "x.npy", "--arg", "y.npy", "--arg", "out.npy",
                cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == "error: kernel 'vadd' needs --const TILE=VALUE"
    r = run_cli("run", "my_kernels.py::nope", "--grid", "8", cwd=tmp_path)
    assert r.stderr.strip() == "error: my_kernels.py: 'nope' is not defined (kernels in the file: positive, vadd)"


def test_example_prints_its_error_against_numpy():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "cutile_softmax.py")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    err = float(r.stdout.rsplit(" ", 1)[1])
    assert "softmax 100x256 on the CPU emulator (sm_80, 128 threads/CTA)" in r.stdout and err < 1e-6
