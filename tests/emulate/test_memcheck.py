"""Checked memory accesses of the CPU emulator: every bad global, shared, local or generic access is an
error naming the thread, the address and the nearest buffer, and the process survives it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support import has_plugin

from tilecore.emulate import launch
from tilecore.errors import TilecoreError
from tilecore.plugins import get_plugin_manager

pytestmark = pytest.mark.skipif(not has_plugin("gpu_nvvm"), reason="needs the gpu_nvvm plugin")


@pytest.fixture(scope="module")
def pm():
    return get_plugin_manager()


def kernel(pm, body: str, params: str = "%x: !llvm.ptr<1>", globals_: str = ""):
    """A one-kernel gpu.module @m whose kernel @k has ``params`` and ``body`` (%t: tid.x, %one: 1)."""
    from tilecore.mlir import ir

    with pm.make_context():
        return ir.Module.parse(f"""
        gpu.module @m {{
          {globals_}
          llvm.func @k({params}) attributes {{nvvm.kernel}} {{
            %t = nvvm.read.ptx.sreg.tid.x : i32
            %one = llvm.mlir.constant(1 : i32) : i32
            {body}
            llvm.return
          }}
        }}""")


def failure(m, **kw) -> str:
    with pytest.raises(TilecoreError) as e:
        launch(m, "k", **kw)
    return e.value.render()


def test_out_of_bounds_atomic_on_a_static_shared_array(pm):
    m = kernel(pm, """
        %buf = llvm.mlir.addressof @buf : !llvm.ptr<3>
        %p = llvm.getelementptr %buf[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i32
        %old = llvm.atomicrmw add %p, %one monotonic : !llvm.ptr<3>, i32
        """, globals_="llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 16 : i64} "
                      ": !llvm.array<32 x i32>")
    launch(m, "k", grid=2, block=32, args=[np.zeros(1, np.int32)])  # in bounds
    text = failure(m, grid=2, block=33, args=[np.zeros(1, np.int32)])
    assert re.search(r"out-of-bounds shared memory access: atomic on 4 bytes at 0x[0-9a-f]+ "
                     r"\(block \(0, 0, 0\), thread \(32, 0, 0\)\); shared @buf spans \[0x[0-9a-f]+, 0x[0-9a-f]+\), "
                     r"the access starts \+128 bytes from it", text), text


def test_out_of_bounds_store_to_dynamic_shared_memory(pm):
    m = kernel(pm, """
        %buf = llvm.mlir.addressof @dyn : !llvm.ptr<3>
        %p = llvm.getelementptr %buf[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
        %v = llvm.sitofp %t : i32 to f32
        llvm.store %v, %p : f32, !llvm.ptr<3>
        """, globals_="llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 16 : i64} "
                      ": !llvm.array<0 x f32>")
    launch(m, "k", grid=1, block=16, args=[np.zeros(1, np.int32)], shared_bytes=64)
    text = failure(m, grid=1, block=17, args=[np.zeros(1, np.int32)], shared_bytes=64)
    assert "out-of-bounds shared memory access: store to 4 bytes at" in text
    assert "thread (16, 0, 0)" in text and "the dynamic shared memory spans" in text
    assert "+64 bytes from it" in text


def test_out_of_bounds_local_memory_names_the_alloca(pm):
    m = kernel(pm, """
        %four = llvm.mlir.constant(4 : i32) : i32
        %buf = llvm.alloca %four x i32 : (i32) -> !llvm.ptr<5>
        %p = llvm.getelementptr %buf[%t] : (!llvm.ptr<5>, i32) -> !llvm.ptr<5>, i32
        llvm.store %t, %p : i32, !llvm.ptr<5>
        %v = llvm.load %p : !llvm.ptr<5> -> i32
        %o = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
        llvm.store %v, %o : i32, !llvm.ptr<1>
        """)
    out = np.zeros(8, np.int32)
    launch(m, "k", grid=1, block=4, args=[out])
    assert out[:4].tolist() == [0, 1, 2, 3]
    text = failure(m, grid=1, block=8, args=[out])
    assert re.search(r"out-of-bounds local memory access: store to 4 bytes at 0x[0-9a-f]+ \(block \(0, 0, 0\), "
                     r"thread \(4, 0, 0\)\); local buffer of i32 \(alloca at [^)]*\) spans .*\+16 bytes from it",
                     text), text


def test_local_buffers_die_with_their_function(pm):
    # @f returns a pointer to its own alloca; the kernel's store through it is out of bounds.
    from tilecore.mlir import ir

    with pm.make_context():
        m = ir.Module.parse("""
        gpu.module @m {
          llvm.func @f() -> !llvm.ptr<5> {
            %one = llvm.mlir.constant(1 : i32) : i32
            %a = llvm.alloca %one x i32 : (i32) -> !llvm.ptr<5>
            llvm.return %a : !llvm.ptr<5>
          }
          llvm.func @k(%x: !llvm.ptr<1>) attributes {nvvm.kernel} {
            %p = llvm.call @f() : () -> !llvm.ptr<5>
            %z = llvm.mlir.constant(0 : i32) : i32
            llvm.store %z, %p : i32, !llvm.ptr<5>
            llvm.return
          }
        }""")
    text = failure(m, grid=1, block=1, args=[np.zeros(1, np.int32)])
    assert "out-of-bounds local memory access: store to 4 bytes" in text and "there is no buffer" in text


def test_generic_pointers_reach_every_memory_and_are_checked(pm):
    m = kernel(pm, """
        %g = llvm.addrspacecast %x : !llvm.ptr<1> to !llvm.ptr
        %gp = llvm.getelementptr %g[%t] : (!llvm.ptr, i32) -> !llvm.ptr, i32
        %v = llvm.load %gp : !llvm.ptr -> i32
        %s = llvm.mlir.addressof @buf : !llvm.ptr<3>
        %sg = llvm.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
        %sp = llvm.getelementptr %sg[%t] : (!llvm.ptr, i32) -> !llvm.ptr, i32
        llvm.store %v, %sp : i32, !llvm.ptr
        %w = llvm.load %sp : !llvm.ptr -> i32
        %two = llvm.mlir.constant(2 : i32) : i32
        %w2 = llvm.mul %w, %two : i32
        llvm.store %w2, %gp : i32, !llvm.ptr
        """, globals_="llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 16 : i64} "
                      ": !llvm.array<8 x i32>")
    x = np.arange(8, dtype=np.int32)
    launch(m, "k", grid=1, block=8, args=[x])
    assert x.tolist() == [2 * i for i in range(8)]
    text = failure(m, grid=1, block=9, args=[np.arange(8, dtype=np.int32)])
    assert "out-of-bounds generic memory access: load from 4 bytes at" in text
    assert "thread (8, 0, 0)" in text and "argument 0 spans" in text and "+32 bytes from it" in text


def test_misaligned_vector_load_is_an_error_not_a_crash(pm):
    # A 16-byte aligned vector load from element 1 of the array: the host's aligned SSE load would
    # kill the process (SIGSEGV); on the GPU it is a misaligned address.
    m = kernel(pm, """
        %p = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
        %s = llvm.extractelement %v[%one : i32] : vector<4xf32>
        llvm.store %s, %p : f32, !llvm.ptr<1>
        """)
    text = failure(m, grid=1, block=2, args=[np.zeros(8, np.float32)])
    assert re.search(r"misaligned global memory access: load from 16 bytes at 0x[0-9a-f]+, which is not a "
                     r"multiple of 16 bytes \(block \(0, 0, 0\), thread \(1, 0, 0\)\); argument 0 spans .* "
                     r"\+4 bytes from it", text), text


def test_bulk_copy_past_a_local_buffer(pm):
    m = kernel(pm, """
        %eight = llvm.mlir.constant(8 : i32) : i32
        %buf = llvm.alloca %eight x i8 : (i32) -> !llvm.ptr<5>
        %g = llvm.addrspacecast %buf : !llvm.ptr<5> to !llvm.ptr
        %xg = llvm.addrspacecast %x : !llvm.ptr<1> to !llvm.ptr
        %n = llvm.add %eight, %t : i32
        "llvm.intr.memcpy"(%g, %xg, %n) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i32) -> ()
        """)
    launch(m, "k", grid=1, block=1, args=[np.zeros(16, np.uint8)])
    text = failure(m, grid=1, block=2, args=[np.zeros(16, np.uint8)])
    assert "out-of-bounds generic memory access: store to 9 bytes at" in text and "thread (1, 0, 0)" in text
    assert "local buffer of i8" in text


def test_unchecked_launch_skips_the_checks(pm):
    m = kernel(pm, """
        %p = llvm.getelementptr %x[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
        llvm.store %t, %p : i32, !llvm.ptr<1>
        """)
    x = np.zeros(64, np.int32)
    launch(m, "k", grid=1, block=32, args=[x[:32]], check_bounds=False)  # in bounds: the same numbers
    assert x[:32].tolist() == list(range(32))


def test_printf_pointers_are_read_only_inside_their_buffer(pm):
    m = kernel(pm, """
        %c = llvm.mlir.constant(16 : i64) : i64
        %f = llvm.inttoptr %c : i64 to !llvm.ptr
        %z = llvm.mlir.zero : !llvm.ptr
        %r = llvm.call @vprintf(%f, %z) : (!llvm.ptr, !llvm.ptr) -> i32
        """, globals_="llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32")
    text = failure(m, grid=1, block=1, args=[np.zeros(1, np.int32)])
    assert "printf's format string 0x10 points into no buffer (block (0, 0, 0), thread (0, 0, 0))" in text


def test_too_many_live_local_buffers_is_an_error(pm):
    m = kernel(pm, """
        %z = llvm.mlir.constant(0 : i32) : i32
        %n = llvm.mlir.constant(200 : i32) : i32
        llvm.br ^loop(%z : i32)
      ^loop(%i: i32):
        %more = llvm.icmp "slt" %i, %n : i32
        llvm.cond_br %more, ^body, ^exit
      ^body:
        %a = llvm.alloca %one x i32 : (i32) -> !llvm.ptr<5>
        llvm.store %i, %a : i32, !llvm.ptr<5>
        %next = llvm.add %i, %one : i32
        llvm.br ^loop(%next : i32)
      ^exit:
        """)
    text = failure(m, grid=1, block=1, args=[np.zeros(1, np.int32)])
    assert "more than 128 local buffers (alloca) live at once in one thread (block (0, 0, 0), thread (0, 0, 0))" \
        in text


def _binary_ops_kernel(pm, ty: str, vec: int, ops: tuple[str, ...]):
    """Kernel ``k(a, b, o0, o1, ...)``: thread t stores ``a[t] <op_k> b[t]`` to ``o_k[t]`` (``ty`` or a vector of it)."""
    vt = ty if vec == 1 else f"vector<{vec}x{ty}>"
    body = "\n".join(f"""
        %r{k} = llvm.{op} %x, %y : {vt}
        %po{k} = llvm.getelementptr %o{k}[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, {vt}
        llvm.store %r{k}, %po{k} : {vt}, !llvm.ptr<1>""" for k, op in enumerate(ops))
    return kernel(pm, f"""
        %pa = llvm.getelementptr %a[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, {vt}
        %pb = llvm.getelementptr %b[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, {vt}
        %x = llvm.load %pa : !llvm.ptr<1> -> {vt}
        %y = llvm.load %pb : !llvm.ptr<1> -> {vt}
        {body}
        """, params=", ".join(f"%{n}: !llvm.ptr<1>" for n in ["a", "b", *(f"o{k}" for k in range(len(ops)))]))


@pytest.mark.parametrize("ty,vec", [("i32", 1), ("i64", 1), ("i32", 4)])
def test_integer_division_by_zero_does_not_trap(pm, ty, vec):
    # On the host x / 0 and MIN / -1 raise SIGFPE; PTX leaves them unspecified: all ones for a
    # quotient by zero, the dividend for a remainder by zero, MIN / -1 wraps to MIN (remainder 0).
    m = _binary_ops_kernel(pm, ty, vec, ("sdiv", "udiv", "srem", "urem"))
    dt = np.int32 if ty == "i32" else np.int64
    low = np.iinfo(dt).min
    a = np.array([7, -7, 5, low, low, 9, 0, 12] * vec, dt)
    b = np.array([2, 2, 0, -1, 0, -4, 0, 5] * vec, dt)
    outs = [np.zeros_like(a) for _ in range(4)]
    for check in (True, False):
        launch(m, "k", grid=1, block=8, args=[a, b, *outs], check_bounds=check)
        sdiv, udiv, srem, urem = outs
        u = np.uint32 if dt is np.int32 else np.uint64
        au, bu = a.view(u), b.view(u)
        nz = b != 0
        assert (sdiv[~nz] == -1).all() and (udiv[~nz] == -1).all()
        assert (srem[~nz] == a[~nz]).all() and (urem[~nz] == a[~nz]).all()
        ovf = (a == low) & (b == -1)
        assert (sdiv[ovf] == low).all() and (srem[ovf] == 0).all()
        ok = nz & ~ovf
        assert (sdiv[ok] == np.trunc(a[ok] / b[ok]).astype(dt)).all()
        assert (srem[ok] == np.fmod(a[ok], b[ok])).all()
        assert (udiv.view(u)[nz] == au[nz] // bu[nz]).all() and (urem.view(u)[nz] == au[nz] % bu[nz]).all()


@pytest.mark.parametrize("src,dst,vec", [("f32", "i32", 1), ("f32", "i8", 1), ("f64", "i64", 1), ("f16", "i16", 1),
                                         ("f32", "i32", 4), ("bf16", "i8", 2)])
def test_float_to_integer_saturates_as_ptx_cvt(pm, src, dst, vec):
    # On the host fptosi / fptoui of a NaN or an out-of-range value is undefined (the result depends on the
    # CPU's instructions); the GPU's cvt.rzi clamps to the destination range and maps NaN to 0, and an 8-bit
    # result is a 16-bit cvt truncated (PTX ISA "cvt": float-to-integer conversions are clamped by default).
    st = src if vec == 1 else f"vector<{vec}x{src}>"
    dt_ = dst if vec == 1 else f"vector<{vec}x{dst}>"
    ops = "\n".join(f"""
        %r{k} = llvm.{op} %x : {st} to {dt_}
        %po{k} = llvm.getelementptr %o{k}[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, {dt_}
        llvm.store %r{k}, %po{k} : {dt_}, !llvm.ptr<1>""" for k, op in enumerate(("fptosi", "fptoui")))
    m = kernel(pm, f"""
        %pa = llvm.getelementptr %a[%t] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, {st}
        %x = llvm.load %pa : !llvm.ptr<1> -> {st}
        {ops}
        """, params="%a: !llvm.ptr<1>, %o0: !llvm.ptr<1>, %o1: !llvm.ptr<1>")
    fdt = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32}[src]
    vals = np.array([np.nan, -np.inf, np.inf, -1e30, 1e30, -300.7, 1120.9, 40000.0, -2.5, 3.99, 65537.0, 0.0] * 2,
                    np.float64)[: 12 * vec if vec > 1 else 12]
    if src == "f16":
        vals = np.clip(np.nan_to_num(vals, nan=np.nan, posinf=np.inf, neginf=-np.inf), -65504, 65504)
        vals[0], vals[1], vals[2] = np.nan, -np.inf, np.inf
    n = len(vals) // vec * vec
    vals = vals[:n]
    a = vals.astype(fdt)
    if src == "bf16":  # bf16 = the high half of an f32 (these values are exact in bf16 after rounding)
        a = (a.view(np.uint32) >> 16).astype(np.uint16)
        vals = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    else:
        vals = a.astype(np.float64)
    idt = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}[dst]
    bits = np.iinfo(idt).bits
    reg = max(bits, 16)  # PTX registers hold 16 bits at least
    o0, o1 = np.zeros(n, idt), np.zeros(n, idt)
    launch(m, "k", grid=1, block=n // vec, args=[a, o0, o1])
    def cvt(v: float, lo: int, hi: int) -> int:  # cvt.rzi to a `reg`-bit register, then the low `bits` bits
        i = 0 if np.isnan(v) else lo if v == -np.inf else hi if v == np.inf else min(max(int(v), lo), hi)
        return i % (1 << bits)

    half = 1 << (reg - 1)
    assert [cvt(v, -half, half - 1) for v in vals] == [int(x) % (1 << bits) for x in o0], (vals, o0)
    assert [cvt(v, 0, 2 * half - 1) for v in vals] == [int(x) % (1 << bits) for x in o1], (vals, o1)


@pytest.mark.parametrize("ty,vec", [("i32", 1), ("i64", 1), ("i16", 1), ("i32", 4)])
def test_shift_by_the_width_or_more_clamps_as_ptx(pm, ty, vec):
    # The host masks a shift amount (x86: x << (n % 32)); PTX's shl / shr clamp it to the register width:
    # shl and shr.u give 0, shr.s the sign. The amount is unsigned (-1 is a huge shift).
    m = _binary_ops_kernel(pm, ty, vec, ("shl", "lshr", "ashr"))
    dt = {"i16": np.int16, "i32": np.int32, "i64": np.int64}[ty]
    bits = np.iinfo(dt).bits
    a = np.array([-1000, 5, 12345, -7, -3, 9, 77, -1] * vec, dt)
    b = np.array([0, 1, bits - 1, bits, bits + 1, 2 * bits + 3, -1, 4] * vec, dt)
    outs = [np.zeros_like(a) for _ in range(3)]
    launch(m, "k", grid=1, block=8, args=[a, b, *outs])
    mask = (1 << bits) - 1
    for x, n, shl, lshr, ashr in zip(a.tolist(), b.tolist(), *(o.tolist() for o in outs)):
        n &= mask  # unsigned amount
        assert shl & mask == (0 if n >= bits else (x << n) & mask), (x, n, shl)
        assert lshr & mask == (0 if n >= bits else (x & mask) >> n), (x, n, lshr)
        assert ashr == (x >> min(n, bits - 1)), (x, n, ashr)
