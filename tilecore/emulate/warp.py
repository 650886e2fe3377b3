"""Semantics of the warp-collective instructions (PTX ISA), one row per instruction.

Every row is ``fn(mask, lanes) -> {lane: result}`` where ``lanes`` maps each
participating lane (all of ``mask`` have arrived) to the ``(a, b, c)`` operands
it passed to ``__emu_warp``: ``a`` the value (up to 64 bits), ``b`` / ``c`` the
instruction's other operands. Results are 64-bit; instructions that also return
a predicate put it in bit 32. The opcode passed from the kernel is the row's
index in :data:`WARP_OPS`.
"""

from __future__ import annotations

M32 = 0xFFFFFFFF


def _shfl(mode: str):
    def fn(mask, lanes):
        out = {}
        for lane, (a, b, c) in lanes.items():
            bval, cval, segmask = b & 31, c & 31, (c >> 8) & 31
            max_lane = (lane & segmask) | (cval & ~segmask & 31)
            min_lane = lane & segmask
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            else:  # idx
                j = min_lane | (bval & ~segmask & 31)
                ok = j <= max_lane
            if not ok:
                j = lane
            # A source lane outside the member mask is unpredictable on the GPU: own value here.
            src = lanes.get(j, (a,))[0]
            out[lane] = (src & M32) | (int(ok) << 32)
        return out
    return fn


def _vote(kind: str):
    def fn(mask, lanes):
        preds = {lane: bool(a & 1) for lane, (a, _, _) in lanes.items()}
        vals = list(preds.values())
        if kind == "ballot":
            r = sum(1 << lane for lane, p in preds.items() if p)
        elif kind == "all":
            r = int(all(vals))
        elif kind == "any":
            r = int(any(vals))
        else:  # uni
            r = int(all(vals) or not any(vals))
        return {lane: r for lane in lanes}
    return fn


def _match_any(mask, lanes):
    return {lane: sum(1 << other for other, (v, _, _) in lanes.items() if v == a) for lane, (a, _, _) in lanes.items()}


def _match_all(mask, lanes):
    vals = {a for a, _, _ in lanes.values()}
    same = len(vals) == 1
    r = (sum(1 << lane for lane in lanes) | (1 << 32)) if same else 0
    return {lane: r for lane in lanes}


def _s32(v):
    v &= M32
    return v - (1 << 32) if v & 0x80000000 else v


def _redux(kind: str):
    def fn(mask, lanes):
        vals = [a & M32 for a, _, _ in lanes.values()]
        if kind == "add":
            r = sum(vals)
        elif kind == "umin":
            r = min(vals)
        elif kind == "umax":
            r = max(vals)
        elif kind == "min":
            r = min(_s32(v) for v in vals)
        elif kind == "max":
            r = max(_s32(v) for v in vals)
        elif kind == "and":
            r = M32
            for v in vals:
                r &= v
        elif kind == "or":
            r = 0
            for v in vals:
                r |= v
        else:  # xor
            r = 0
            for v in vals:
                r ^= v
        return {lane: r & M32 for lane in lanes}
    return fn


def _redux_f(kind: str):
    import math
    import struct

    def fn(mask, lanes):
        flags = next(iter(lanes.values()))[2]
        take_abs, keep_nan = flags & 1, flags & 2
        vals = [struct.unpack("<f", struct.pack("<I", a & M32))[0] for a, _, _ in lanes.values()]
        if take_abs:
            vals = [abs(v) for v in vals]
        if keep_nan and any(math.isnan(v) for v in vals):
            r = math.nan
        else:
            finite = [v for v in vals if not math.isnan(v)] or [math.nan]
            r = min(finite) if kind == "fmin" else max(finite)
        return {lane: struct.unpack("<I", struct.pack("<f", r))[0] for lane in lanes}
    return fn


def _elect(mask, lanes):
    leader = min(lanes)
    return {lane: int(lane == leader) | (leader << 1) for lane in lanes}


def _warp_sync(mask, lanes):
    return {lane: 0 for lane in lanes}


WARP_OPS: dict[str, object] = {
    "shfl.idx": _shfl("idx"), "shfl.up": _shfl("up"), "shfl.down": _shfl("down"), "shfl.bfly": _shfl("bfly"),
    "vote.all": _vote("all"), "vote.any": _vote("any"), "vote.uni": _vote("uni"), "vote.ballot": _vote("ballot"),
    "match.any": _match_any, "match.all": _match_all,
    **{f"redux.{k}": _redux(k) for k in ("add", "umin", "umax", "min", "max", "and", "or", "xor")},
    "redux.fmin": _redux_f("fmin"), "redux.fmax": _redux_f("fmax"),
    "elect": _elect, "bar.warp.sync": _warp_sync,
}
WARP_NAMES: list[str] = list(WARP_OPS)


def opcode(name: str) -> int:
    """The opcode the kernel passes to ``__emu_warp`` for the row ``name``."""
    return WARP_NAMES.index(name)
