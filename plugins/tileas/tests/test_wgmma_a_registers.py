"""wgmma with A from registers on sm_90a (``wgmma.mma_async ... d, {a0..a3}, b-desc``): a dot whose A is an earlier
wgmma's accumulator cast to f16 / bf16 (flash attention's P @ V) reads it from the registers it is in instead of
writing it to shared memory. The stage-4 ops, the PTX, ptxas' SASS (HGMMA with a register A, fewer STS / BAR than
with ``--option tileas.wgmma_a_registers=off``) and the numbers in the emulator against numpy on sizes that are
not tile multiples (f32 and f16 accumulators, one and two 64-row instructions per warpgroup, 1-4 K steps)."""

from __future__ import annotations

import os
import re
import subprocess

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv

from tilecore.compiler import compile_file
from tilecore.emulate import hopper
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")
OFF = {"tileas.wgmma_a_registers": "off"}


@ct.kernel
def chain_f16(A, B, V, C, TM: ct.Constant[int], TK: ct.Constant[int], TN: ct.Constant[int]):
    """C = f16(A @ B) @ V with an f16 accumulator: the first dot's f32 fragment, cast, is the second's A."""
    z = ct.PaddingMode.ZERO
    a = ct.load(A, index=(ct.bid(0), 0), shape=(TM, TK), padding_mode=z)
    b = ct.load(B, index=(0, 0), shape=(TK, TK), padding_mode=z)
    v = ct.load(V, index=(0, 0), shape=(TK, TN), padding_mode=z)
    s = ct.mma(a, b, ct.full((TM, TK), 0.0, dtype=ct.float32))
    c = ct.mma(ct.astype(s, ct.float16), v, ct.full((TM, TN), 0.0, dtype=ct.float16))
    ct.store(C, index=(ct.bid(0), 0), tile=c)


_K = KernelSet({
    # one m64n64 per warpgroup, P 64 x 64: 4 K steps of 16 for P @ V
    "attn_f16": (ck.attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64]),
    # 128 rows: two m64 instructions per warpgroup (registers 0-15 and 16-31 of P), P 128 x 32: 2 K steps
    "attn_bf16": (ck.attention, ["bf16[2]/16", "bf16[2]/16", "bf16[2]/16", "f32[2]/16", 128, 32, 32]),
    "chain_f16": (chain_f16, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f16[2]/16", 64, 32, 64]),
}, "tileas-wgmma-rs-")


def _path(name: str) -> str:
    path = os.path.join(_K._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        ck.export_spec(*_K.table[name], name, path)
    return path


def _stage4(name: str, extra: dict | None = None) -> str:
    return str(compile_file(_path(name), "sm_90a", CompileOptions(emit="mlir", extra=extra or {}),
                            stop_after="convert-tileas-to-llvm").module)


def test_a_fragment_is_the_d_fragment_per_16_columns():
    """PTX ISA 9.7.15.5.1.1.1: the A registers a0..a7 of an m64nNk16 (Figure 148) hold, per thread, the elements
    8c .. 8c + 7 of an m64nN accumulator (Figure 149) shifted left by 16c columns, for every 16-column chunk c:
    what lets tileas pass an accumulator cast to 16 bits as the next dot's A."""
    a_rows, a_cols = hopper.a_fragment()
    d_rows, d_cols = hopper.d_fragment(64)
    for c in range(4):
        np.testing.assert_array_equal(d_rows[:, 8 * c:8 * c + 8], a_rows)
        np.testing.assert_array_equal(d_cols[:, 8 * c:8 * c + 8] - 16 * c, a_cols)
    assert sorted(zip(a_rows.ravel(), a_cols.ravel())) == [(r, c) for r in range(64) for c in range(16)]
    assert not hopper.valid_form(64, 8, "tf32", "tf32", "f32", True, True, a_regs=True)  # 16-bit A only


def test_attention_stage4_reads_p_from_registers():
    """P @ V takes ``cute_nvgpu.wgmma_rs`` (4 K steps: four words of P's fragment each, V's descriptor through the
    pipelined stage, N-major), Q K^T keeps the descriptor form; with the option off both read shared memory."""
    text = _stage4("attn_f16")
    assert text.count('"cute_nvgpu.wgmma_rs"') == 4 and text.count('"cute_nvgpu.wgmma"') == 4
    rs = [ln for ln in text.splitlines() if '"cute_nvgpu.wgmma_rs"' in ln]
    assert all('shape = array<i32: 64, 64, 16>' in ln and 'a_type = "f16"' in ln and 'b_major = "n"' in ln
               and 'acc_type = "f32"' in ln for ln in rs), rs[0]
    assert all(re.search(r"\(i32, i32, i32, i32, i64, !llvm\.struct<\(f32(, f32){31}\)>\)", ln) for ln in rs), rs[0]
    off = _stage4("attn_f16", OFF)
    assert off.count('"cute_nvgpu.wgmma_rs"') == 0 and off.count('"cute_nvgpu.wgmma"') == 8


def _sass(cubin: bytes, tmp_path) -> list[str]:
    from tilecore.serialize import find_nvidia_tool

    tool = find_nvidia_tool("cuobjdump")
    if not tool:
        pytest.skip("needs cuobjdump")
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin)
    out = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    return [ln.strip() for ln in out.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]


def _counts(lines: list[str]) -> dict:
    ops = [re.match(r"/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", ln).group(1) for ln in lines]
    return {k: ops.count(k) for k in ("HGMMA", "STS", "LDS", "BAR")} | {"all": len(ops)}


def test_attention_ptx_and_sass(tmp_path):
    """The PTX has the register-A form (``{%r..} x 4`` for A, B's descriptor, imm-trans-b 1: V is N-major); ptxas
    takes it: 8 HGMMA, 4 of them with a register A; P's shared-memory round trip is gone (fewer STS and BAR than
    with the option off)."""
    ptx = compile_file(_path("attn_f16"), "sm_90a", CompileOptions(emit="ptx")).artifacts["ptx"]
    ptx = "\n".join(ptx.values())
    form = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{(?:%[rf]\d+, ){31}%[rf]\d+\}, "
                      r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)
    assert len(form) == 4, ptx[:2000]
    on = _sass(compile_file(_path("attn_f16"), "sm_90a").artifacts["cubin"], tmp_path)
    off = _sass(compile_file(_path("attn_f16"), "sm_90a", CompileOptions(extra=OFF)).artifacts["cubin"], tmp_path)
    c_on, c_off = _counts(on), _counts(off)
    assert c_on["HGMMA"] == c_off["HGMMA"] == 8
    assert sum(bool(re.search(r"HGMMA\.64x64x16\.F32 R\d+, R\d+, gdesc", ln)) for ln in on) == 4
    assert not any(re.search(r"HGMMA\.\S+ R\d+, R\d+, gdesc", ln) for ln in off)
    assert c_on["STS"] < c_off["STS"] and c_on["BAR"] < c_off["BAR"] and c_on["all"] < c_off["all"], (c_on, c_off)


def _bits(x: np.ndarray, el: str) -> np.ndarray:
    """The array the kernel gets for float64 values ``x`` (already representable): f16, or bf16's bits."""
    if el == "f16":
        return x.astype(np.float16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _round(x: np.ndarray, el: str) -> np.ndarray:
    if el == "f16":
        return x.astype(np.float16).astype(np.float64)
    b = x.astype(np.float32).view(np.uint32)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("name, el, m, n, d, options", [
    ("attn_f16", "f16", 130, 200, 64, {}), ("attn_bf16", "bf16", 200, 72, 32, {}),
    ("attn_bf16", "bf16", 200, 72, 32, {"tileas.tma": "off"}), ("attn_f16", "f16", 70, 90, 64, OFF)])
def test_attention_numbers(name, el, m, n, d, options):
    """softmax(Q K^T) V on partial tiles (the kernel does not mask the zero-padded keys: the reference pads them
    too), P from registers (TMA- or cp.async-fed V), and with the option off, against numpy."""
    rng = np.random.default_rng(11)
    tm, tn = _K.table[name][1][4:6]
    q, k = (_round(rng.standard_normal(s) * 0.3, el) for s in ((m, d), (n, d)))
    v = _round(rng.standard_normal((n, d)), el)
    o = np.zeros((m, d), np.float32)
    from tilecore import emulate

    module = compile_file(_path(name), "sm_90a", CompileOptions(emit="mlir", extra=options),
                          stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    assert (", p, 1, 1, 1; }" in str(module)) == (options != OFF)  # the register-A form's inline PTX
    emulate.launch(module, name, (cdiv(m, tm), 1, 1), (128, 1, 1),
                   arr(_bits(q, el)) + arr(_bits(k, el)) + arr(_bits(v, el)) + arr(o))
    pad = -n % tn
    kp = np.concatenate([k, np.zeros((pad, d))])
    vp = np.concatenate([v, np.zeros((pad, d))])
    s = q @ kp.T
    p = np.exp(s - s.max(1, keepdims=True))
    tol = 2e-3 if el == "f16" else 2e-2  # P rounded to 8 significant bits for bf16
    np.testing.assert_allclose(o, (p / p.sum(1, keepdims=True)) @ vp, atol=tol, rtol=0)


def test_f16_accumulator_chain_numbers(tmp_path):
    """f16(A @ B) @ V with an f16 accumulator (``wgmma ... .f16.f16.f16``, the accumulator in f16 pairs): ptxas
    takes it (register-A HGMMA), and 150 rows (a partial second tile) match numpy with the products of P
    rounded to f16 once per K step of 16."""
    text = _stage4("chain_f16")
    assert text.count('"cute_nvgpu.wgmma_rs"') == 2 and 'acc_type = "f16"' in text
    sass = _sass(compile_file(_path("chain_f16"), "sm_90a").artifacts["cubin"], tmp_path)
    assert sum(bool(re.search(r"HGMMA\.64x64x16\.F16 R\d+, R\d+, gdesc", ln)) for ln in sass) == 2, \
        [ln for ln in sass if "HGMMA" in ln]
    rng = np.random.default_rng(12)
    m, tk, tn = 150, 32, 64
    a = rng.integers(-3, 4, (m, tk)).astype(np.float16)
    b = rng.integers(-3, 4, (tk, tk)).astype(np.float16)
    v = (rng.standard_normal((tk, tn)) * 0.25).astype(np.float16)
    c = np.zeros((m, tn), np.float16)
    _K.run("chain_f16", "sm_90a", (cdiv(m, 64), 1, 1), arr(a) + arr(b) + arr(v) + arr(c))
    p = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16).astype(np.float64)  # exact, then f16
    want = np.zeros((m, tn))
    for k0 in range(0, tk, 16):  # the f16 accumulator rounds after every m64nNk16
        want = (want + p[:, k0:k0 + 16] @ v[k0:k0 + 16].astype(np.float64)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, atol=1e-3 * np.abs(want).max(), rtol=0)
