"""A reference interpreter for tileas' stage-4 output (arith / math / cf / llvm / gpu in a gpu.module).

Used by the numeric end-to-end tests while ``tilecore.emulate`` is not available: it
runs a kernel's ``llvm.func`` for every thread of every block (threads of a block are
generators that meet at ``gpu.barrier`` and, per warp, at ``gpu.shuffle``), with global
memory in numpy buffers and a shared buffer per block. Floats are numpy scalars of the
op's type, so f16 / f32 rounding is that of the hardware formats.
"""

from __future__ import annotations

import math

import numpy as np

from tilecore.mlir import ir

FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
INT_W = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}
NP_OF = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.uint8, "i8": np.uint8,
         "i16": np.uint16, "i32": np.uint32, "i64": np.uint64}


def _size(t: str) -> int:
    if t.startswith("vector<"):
        n, el = t[7:-1].split("x")
        return int(n) * _size(el)
    if t.startswith("!llvm.ptr"):
        return 8
    if t in FLOATS:
        return {"f16": 2, "f32": 4, "f64": 8}[t]
    return max(1, INT_W[t] // 8)


def _s(v, w):
    return v - (1 << w) if v >> (w - 1) & 1 else v


def _m(v, w):
    return v & ((1 << w) - 1)


class Memory:
    """Global buffers by id; a pointer is (buffer id, byte offset)."""

    def __init__(self):
        self.bufs: list[np.ndarray] = []

    def add(self, arr: np.ndarray) -> tuple:
        self.bufs.append(np.frombuffer(arr.tobytes(), dtype=np.uint8).copy())
        return (len(self.bufs) - 1, 0)

    def view(self, ptr, t: str, n: int = 1):
        buf, off = ptr
        dt = NP_OF[t]
        nb = np.dtype(dt).itemsize * n
        data = self.bufs[buf]
        if off < 0 or off + nb > len(data):
            raise IndexError(f"out-of-bounds access at byte {off} of a {len(data)}-byte buffer")
        return data[off:off + nb].view(dt)


class Interpreter:
    """Runs one kernel (see the module docstring)."""

    def __init__(self, module, kernel: str):
        self.fn = None
        for top in module.body.operations:
            if top.operation.name == "gpu.module":
                for op in top.regions[0].blocks[0].operations:
                    if op.operation.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == kernel:
                        self.fn = op.operation
        assert self.fn is not None, kernel
        self.mem = Memory()
        self.globals = {}  # symbol -> pointer, for globals with an initial value (not shared memory)
        for top in module.body.operations:
            if top.operation.name != "gpu.module":
                continue
            for op in top.regions[0].blocks[0].operations:
                op = op.operation
                if op.name == "llvm.mlir.global" and "value" in op.attributes:
                    data = np.array(ir.DenseElementsAttr(op.attributes["value"]))
                    self.globals[ir.StringAttr(op.attributes["sym_name"]).value] = self.mem.add(data)
        self.printed: list[str] = []
        self.compiled = {}

    # -- run ---------------------------------------------------------------------------------
    def launch(self, grid, block, args):
        """``args``: numpy arrays (copied into global memory) or Python / numpy scalars."""
        vals, arrays = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                p = self.mem.add(a)
                vals.append(p)
                arrays.append((p, a))
            elif isinstance(a, (np.floating, float)):
                vals.append(a)
            else:
                vals.append(_m(int(a), 64))
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    self._block((bx, by, bz), grid, block, vals)
        out = []
        for p, a in arrays:
            out.append(np.frombuffer(self.mem.bufs[p[0]].tobytes(), dtype=a.dtype).reshape(a.shape).copy())
        return out

    def _block(self, bid, grid, block, args):
        smem = np.zeros(1 << 16, dtype=np.uint8)
        nthreads = block[0]
        gens = [self._thread(t, bid, grid, block, args, smem) for t in range(nthreads)]
        results = {t: None for t in range(nthreads)}
        alive = set(range(nthreads))
        while alive:
            events = {}
            for t in sorted(alive):
                try:
                    events[t] = gens[t].send(results[t])
                except StopIteration:
                    events[t] = None
            done = [t for t, e in events.items() if e is None]
            for t in done:
                alive.discard(t)
            kinds = {e[0] for e in events.values() if e is not None}
            if len(kinds) > 1:
                raise RuntimeError(f"threads diverged at synchronisation points: {kinds}")
            for t in alive:
                results[t] = None
            if kinds == {"shfl"}:
                for t in alive:
                    _, val, off = events[t]
                    src = t ^ off
                    results[t] = events[src][1] if src in events and events[src] is not None else val

    # -- thread ------------------------------------------------------------------------------
    def _thread(self, tid, bid, grid, block, args, smem):
        env = {}
        entry = self.fn.regions[0].blocks[0]
        for a, v in zip(entry.arguments, args):
            t = str(a.type)
            env[a] = _m(v, INT_W[t]) if t in INT_W and isinstance(v, int) else v
        ctx = {"tid": tid, "bid": bid, "grid": grid, "block": block, "smem": smem}
        blk = entry
        while True:
            nxt = None
            for op in blk.operations:
                op = op.operation
                name = op.name
                if name == "cf.br":
                    nxt = (op.successors[0], [env[v] for v in op.operands])
                    break
                if name == "cf.cond_br":
                    segs = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
                    ops = list(op.operands)
                    c = env[ops[0]]
                    t_args = ops[1:1 + segs[1]]
                    f_args = ops[1 + segs[1]:]
                    nxt = (op.successors[0], [env[v] for v in t_args]) if c else \
                        (op.successors[1], [env[v] for v in f_args])
                    break
                if name == "llvm.return":
                    return
                if name == "cf.assert":  # the device assert of cuda_tile.assert
                    if not env[op.operands[0]]:
                        raise RuntimeError(f"assertion failed: {ir.StringAttr(op.attributes['msg']).value}")
                    continue
                if name == "gpu.barrier":
                    yield ("barrier",)
                    continue
                if name == "gpu.shuffle":
                    v = env[op.operands[0]]
                    off = env[op.operands[1]]
                    r = yield ("shfl", v, off)
                    env[op.results[0]] = r
                    env[op.results[1]] = 1
                    continue
                res = self.eval(op, env, ctx)
                if op.results:
                    if len(op.results) == 1:
                        env[op.results[0]] = res
                    else:
                        for r, v in zip(op.results, res):
                            env[r] = v
            if nxt is None:
                raise RuntimeError("block without terminator")
            blk, vals = nxt
            for a, v in zip(blk.arguments, vals):
                env[a] = v

    # -- ops ---------------------------------------------------------------------------------
    def eval(self, op, env, ctx):
        name = op.name
        ins = [env[v] for v in op.operands]
        rt = str(op.results[0].type) if op.results else ""
        d, _, n = name.partition(".")
        if name == "arith.constant":
            return self._const(op.attributes["value"], rt)
        if d == "arith":
            return self._arith(n, ins, op, rt)
        if d == "math":
            return self._math(n, ins, rt)
        if d == "llvm":
            return self._llvm(n, ins, op, rt, ctx)
        if d == "gpu":
            return self._gpu(n, op, ins, ctx)
        raise NotImplementedError(name)

    def _const(self, attr, rt):
        if rt in FLOATS:
            return FLOATS[rt](ir.FloatAttr(attr).value)
        return _m(ir.IntegerAttr(attr).value, INT_W[rt])

    def _arith(self, n, ins, op, rt):
        st = str(op.operands[0].type) if op.operands else ""
        w = INT_W.get(st, 0)
        if n in ("addf", "subf", "mulf", "divf", "remf", "maxnumf", "minnumf", "maximumf", "minimumf"):
            a, b = ins
            with np.errstate(all="ignore"):
                return {"addf": lambda: a + b, "subf": lambda: a - b, "mulf": lambda: a * b,
                        "divf": lambda: a / b, "remf": lambda: np.fmod(a, b), "maxnumf": lambda: np.fmax(a, b),
                        "minnumf": lambda: np.fmin(a, b), "maximumf": lambda: np.maximum(a, b),
                        "minimumf": lambda: np.minimum(a, b)}[n]()
        if n == "negf":
            return -ins[0]
        if n == "cmpf":
            a, b = float(ins[0]), float(ins[1])
            p = ir.IntegerAttr(op.attributes["predicate"]).value
            unord = math.isnan(a) or math.isnan(b)
            base = {1: a == b, 2: a > b, 3: a >= b, 4: a < b, 5: a <= b, 6: a != b, 7: True}
            if p == 0:
                return 0
            if p == 15:
                return 1
            if p <= 7:
                return int(not unord and base[p])
            if p == 14:
                return int(unord)
            return int(unord or base[p - 7])
        if n == "cmpi":
            a, b = ins
            p = ir.IntegerAttr(op.attributes["predicate"]).value
            sa, sb = _s(a, w), _s(b, w)
            return int({0: a == b, 1: a != b, 2: sa < sb, 3: sa <= sb, 4: sa > sb, 5: sa >= sb, 6: a < b,
                        7: a <= b, 8: a > b, 9: a >= b}[p])
        if n == "select":
            return ins[1] if ins[0] else ins[2]
        rw = INT_W.get(rt, 0)
        if n in ("extui", "index_cast", "trunci") or (n == "extsi" and False):
            if n == "index_cast" and st != "index" and rw > w:
                return _m(_s(ins[0], w), rw)
            return _m(ins[0], rw)
        if n == "extsi":
            return _m(_s(ins[0], w), rw)
        if n in ("sitofp", "uitofp"):
            v = _s(ins[0], w) if n == "sitofp" else ins[0]
            return FLOATS[rt](v)
        if n in ("fptosi", "fptoui"):
            f = float(ins[0])
            return _m(int(f) if math.isfinite(f) else 0, rw)
        if n in ("extf", "truncf"):
            return FLOATS[rt](ins[0])
        if n == "mului_extended":
            p = ins[0] * ins[1]
            return (_m(p, w), _m(p >> w, w))
        if n == "bitcast":
            if rt in FLOATS:
                return np.array([ins[0]], dtype=NP_OF[st]).view(FLOATS[rt])[0]
            return int(np.array([ins[0]], dtype=NP_OF[st]).view(NP_OF[rt])[0])
        a, b = ins[0], ins[1] if len(ins) > 1 else 0
        sa, sb = _s(a, w), _s(b, w)
        r = {
            "addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
            "divui": lambda: a // b, "remui": lambda: a % b,
            "divsi": lambda: int(sa / sb) if sb else 0, "remsi": lambda: sa - int(sa / sb) * sb if sb else 0,
            "ceildivsi": lambda: -((-sa) // sb), "floordivsi": lambda: sa // sb, "ceildivui": lambda: -((-a) // b),
            "andi": lambda: a & b, "ori": lambda: a | b, "xori": lambda: a ^ b, "shli": lambda: a << b,
            "shrui": lambda: a >> b, "shrsi": lambda: sa >> b, "maxsi": lambda: max(sa, sb),
            "minsi": lambda: min(sa, sb), "maxui": lambda: max(a, b), "minui": lambda: min(a, b),
        }[n]()
        return _m(r, w)

    def _math(self, n, ins, rt):
        x = ins[0]
        f = FLOATS.get(rt)
        with np.errstate(all="ignore"):
            if n == "fma":
                return f(float(ins[0]) * float(ins[1]) + float(ins[2]))
            if n == "absi":
                w = INT_W[rt]
                return _m(abs(_s(x, w)), w)
            if n == "fpowi":
                return f(float(x) ** _s(ins[1], 32))
            fn = {"absf": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
                  "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
                  "sinh": np.sinh, "cosh": np.cosh, "floor": np.floor, "ceil": np.ceil}.get(n)
            if fn is not None:
                return f(fn(f(x)))
            if n == "powf":
                return f(np.power(f(x), f(ins[1])))
            if n == "atan2":
                return f(np.arctan2(f(x), f(ins[1])))
        raise NotImplementedError(f"math.{n}")

    def _load(self, ptr, t, ctx):
        if t.startswith("vector<"):
            cnt, el = t[7:-1].split("x")
            return [self._load((ptr[0], ptr[1] + i * _size(el)), el, ctx) for i in range(int(cnt))]
        if ptr[0] == "smem":
            raw = ctx["smem"][ptr[1]:ptr[1] + np.dtype(NP_OF[t]).itemsize].view(NP_OF[t])[0]
        else:
            raw = self.mem.view(ptr, t)[0]
        return FLOATS[t](raw) if t in FLOATS else int(raw)

    def _store(self, ptr, v, t, ctx):
        if t.startswith("vector<"):
            cnt, el = t[7:-1].split("x")
            for i in range(int(cnt)):
                self._store((ptr[0], ptr[1] + i * _size(el)), v[i], el, ctx)
            return
        dt = NP_OF[t]
        if ptr[0] == "smem":
            ctx["smem"][ptr[1]:ptr[1] + np.dtype(dt).itemsize].view(dt)[0] = v
        else:
            self.mem.view(ptr, t)[0] = v

    def _llvm(self, n, ins, op, rt, ctx):
        if n == "getelementptr":
            el = str(ir.TypeAttr(op.attributes["elem_type"]).value)
            raw = list(ir.DenseI32ArrayAttr(op.attributes["rawConstantIndices"]))
            base, dyn = ins[0], iter(ins[1:])
            idx = 0
            for r in raw:
                if r == -2147483648:
                    v = next(dyn)
                    w = INT_W[str(op.operands[1].type)]
                    idx += _s(v, w)
                else:
                    idx += r
            return (base[0], base[1] + idx * _size(el))
        if n == "load":
            return self._load(ins[0], rt, ctx)
        if n == "store":
            self._store(ins[1], ins[0], str(op.operands[0].type), ctx)
            return None
        if n == "mlir.addressof":
            name = ir.FlatSymbolRefAttr(op.attributes["global_name"]).value
            return self.globals.get(name, ("smem", 0))
        if n in ("mlir.poison", "mlir.undef"):
            return [0] * int(rt[7:-1].split("x")[0]) if rt.startswith("vector<") else 0
        if n == "mlir.zero":
            return (None, 0) if rt.startswith("!llvm.ptr") else 0
        if n == "extractelement":
            return ins[0][ins[1]]
        if n == "insertelement":
            v = list(ins[0])
            v[ins[2]] = ins[1]
            return v
        if n == "atomicrmw":
            t = str(op.operands[1].type)
            old = self._load(ins[0], t, ctx)
            mode = ["xchg", "add", "sub", "_and", "nand", "_or", "_xor", "max", "min", "umax", "umin", "fadd",
                    "fsub", "fmax", "fmin"][ir.IntegerAttr(op.attributes["bin_op"]).value]
            w = INT_W.get(t, 0)
            a, b = old, ins[1]
            new = {"add": lambda: _m(a + b, w), "sub": lambda: _m(a - b, w), "fadd": lambda: a + b,
                   "xchg": lambda: b, "_and": lambda: a & b,
                   "_or": lambda: a | b, "_xor": lambda: a ^ b, "max": lambda: _m(max(_s(a, w), _s(b, w)), w),
                   "min": lambda: _m(min(_s(a, w), _s(b, w)), w), "umax": lambda: max(a, b),
                   "umin": lambda: min(a, b), "fmax": lambda: max(a, b), "fmin": lambda: min(a, b)}[mode]()
            self._store(ins[0], new, t, ctx)
            return old
        if n == "cmpxchg":
            t = str(op.operands[1].type)
            old = self._load(ins[0], t, ctx)
            ok = old == ins[1]
            if ok:
                self._store(ins[0], ins[2], t, ctx)
            return (old, int(ok))
        if n == "ptrtoint":  # a pointer as an integer: buffer id in the high bits, byte offset below
            return (ins[0][0] << 40) | ins[0][1]
        if n == "inttoptr":
            return (ins[0] >> 40, ins[0] & ((1 << 40) - 1))
        if n == "extractvalue":
            return ins[0][list(ir.DenseI64ArrayAttr(op.attributes["position"]))[0]]
        if n == "intr.trap":
            raise RuntimeError("trap")
        raise NotImplementedError(f"llvm.{n}")

    def _gpu(self, n, op, ins, ctx):
        dim = "xyz".index(str(op.attributes["dimension"])[-2]) if "dimension" in op.attributes else 0
        if n == "thread_id":
            return ctx["tid"] if dim == 0 else 0
        if n == "block_id":
            return ctx["bid"][dim]
        if n == "grid_dim":
            return ctx["grid"][dim]
        if n == "block_dim":
            return ctx["block"][dim]
        if n == "printf":
            fmt = ir.StringAttr(op.attributes["format"]).value
            self.printed.append(fmt % tuple(float(v) if isinstance(v, np.floating) else v for v in ins))
            return None
        raise NotImplementedError(f"gpu.{n}")
