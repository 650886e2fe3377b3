"""SASS statistics of a cubin, read with ``cuobjdump`` (from ``nvidia-cuda-cuobjdump``).

``sass_stats(path)`` returns, over every function of the cubin, the executed-instruction
count, the registers and static shared memory (``cuobjdump -res-usage``) and the counts
of the instruction classes in :data:`CLASSES`, the ones that decide a kernel's speed.
``parse_sass(text)`` and ``classify(mnemonic)`` are the pure halves, usable on any
``cuobjdump -sass`` listing.
"""

from __future__ import annotations

import os
import re
import subprocess
from fnmatch import fnmatchcase

from tilecore.serialize import find_nvidia_tool

# The instruction classes that decide speed. A class matches on the opcode, the first
# dot-separated word of the mnemonic ("LDG" in "LDG.E.128.CONSTANT"), as a shell pattern
# ("UTC*MMA"); the first matching row wins. Memory classes marked "width" are split by
# access width in bits (".8", ".16", ".32", ".64", ".128"; no width modifier = 32).
CLASSES: list[tuple[str, tuple[str, ...], bool, str]] = [
    # name      opcodes                                        width  what it is
    ("ldg",     ("LDG",),                                       True,  "global load"),
    ("stg",     ("STG",),                                       True,  "global store"),
    ("lds",     ("LDS",),                                       True,  "shared load"),
    ("sts",     ("STS",),                                       True,  "shared store"),
    ("ldl/stl", ("LDL", "STL"),                                 False, "local memory (register spills)"),
    ("ldsm",    ("LDSM",),                                      False, "ldmatrix"),
    ("stsm",    ("STSM",),                                      False, "stmatrix"),
    ("ldgsts",  ("LDGSTS",),                                    False, "cp.async global -> shared"),
    ("tma",     ("UTMALDG", "UTMASTG", "UTMAREDG", "UBLKCP"),   False, "TMA / bulk copies"),
    ("syncs",   ("SYNCS",),                                     False, "mbarrier operations (sm_90+)"),
    ("shfl",    ("SHFL",),                                      False, "warp shuffle"),
    ("bar",     ("BAR",),                                       False, "CTA barrier"),
    ("hmma",    ("HMMA",),                                      False, "warp MMA, float (mma.sync)"),
    ("imma",    ("IMMA",),                                      False, "warp MMA, integer (mma.sync)"),
    ("gmma",    ("HGMMA", "IGMMA", "QGMMA", "BGMMA"),           False, "warpgroup MMA (wgmma, sm_90)"),
    ("utcmma",  ("UTC*MMA",),                                   False, "tcgen05 MMA (sm_100)"),
    ("utc",     ("UTC*",),                                      False, "other tcgen05: commit, tensor-memory alloc"),
    ("ldtm/sttm", ("LDTM", "STTM"),                             False, "tensor-memory loads / stores (sm_100)"),
    ("bra",     ("BRA", "BRX"),                                 False, "branch"),
    ("mufu",    ("MUFU",),                                      False, "special function unit"),
    ("atom",    ("ATOM", "ATOMG", "ATOMS", "RED", "REDG"),      False, "atomics / reductions to memory"),
]

WIDTHS = (8, 16, 32, 64, 128)
# Modifier -> access width in bits (global and shared loads / stores).
_WIDTH_OF = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128}
# MMA classes: a kernel whose SASS has any of these "uses MMA".
MMA_CLASSES = ("hmma", "imma", "gmma", "utcmma")

# One instruction line: "        /*0070*/   @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;"
_INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)(.*)$")
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RES_FUNC = re.compile(r"^\s*Function\s+(\S+?):\s*$")


def class_names() -> list[str]:
    """Every class key of the statistics, width-split classes expanded (``ldg.8`` ... ``ldg.128``)."""
    out = []
    for name, _, width, _ in CLASSES:
        out += [f"{name}.{w}" for w in WIDTHS] if width else [name]
    return out


def classify(mnemonic: str) -> str | None:
    """The class key of one SASS mnemonic (``"LDG.E.U16"`` -> ``"ldg.16"``), or None."""
    opcode, *mods = mnemonic.split(".")
    for name, opcodes, width, _ in CLASSES:
        if any(fnmatchcase(opcode, o) for o in opcodes):
            if not width:
                return name
            bits = next((_WIDTH_OF[m] for m in mods if m in _WIDTH_OF), 32)
            return f"{name}.{bits}"
    return None


def parse_sass(text: str) -> dict[str, list[str]]:
    """Function name -> mnemonics of a ``cuobjdump -sass`` listing, in order, without padding.

    ptxas ends every function with a branch to itself after the last EXIT and pads it
    with NOPs to an alignment; neither ever executes, so both are dropped.
    """
    funcs: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            current = funcs.setdefault(f.group(1), [])
            continue
        m = _INSN.match(line)
        if not m or current is None:
            continue
        addr, mnemonic, rest = m.groups()
        if mnemonic == "NOP":
            continue
        target = re.match(r"\s*(0x[0-9a-f]+)\s*;", rest)
        if mnemonic == "BRA" and target and int(target.group(1), 16) == int(addr, 16):
            continue  # the terminating self-loop
        current.append(mnemonic)
    return funcs


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """Function name -> ``{"REG": n, "SHARED": bytes, ...}`` of a ``cuobjdump -res-usage`` listing."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        f = _RES_FUNC.match(line)
        if f:
            current = out.setdefault(f.group(1), {})
        elif current is not None and "REG:" in line:
            current.update({k: int(v) for k, v in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line)})
    return out


def class_counts(mnemonics: list[str]) -> dict[str, int]:
    """Counts of every class key (zeros included) over ``mnemonics``."""
    counts = dict.fromkeys(class_names(), 0)
    for m in mnemonics:
        key = classify(m)
        if key:
            counts[key] += 1
    return counts


def _cuobjdump(tool: str, flag: str, cubin: str) -> subprocess.CompletedProcess:
    # cuobjdump -sass runs nvdisasm, which it finds on PATH (the same bin/ folder).
    env = dict(os.environ, PATH=os.path.dirname(tool) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([tool, flag, cubin], capture_output=True, text=True, env=env)


def sass_stats(cubin: str) -> dict:
    """SASS statistics of ``cubin``, summed over its functions (registers / shared: the maximum).

    Keys: ``instructions``, ``registers``, ``shared_bytes``, ``local_bytes``, ``functions``,
    ``classes`` (see :func:`class_names`), ``uses_mma``; or ``error`` when cuobjdump failed.
    """
    tool = find_nvidia_tool("cuobjdump")
    if not tool:
        return {"error": "cuobjdump not found (pip install nvidia-cuda-cuobjdump)"}
    sass = _cuobjdump(tool, "-sass", cubin)
    if sass.returncode != 0:
        return {"error": ((sass.stderr or sass.stdout).strip().splitlines() or ["cuobjdump failed"])[0]}
    funcs = parse_sass(sass.stdout)
    res = parse_res_usage(_cuobjdump(tool, "-res-usage", cubin).stdout)
    mnemonics = [m for ms in funcs.values() for m in ms]
    classes = class_counts(mnemonics)
    return {
        "instructions": len(mnemonics),
        "functions": {f: len(ms) for f, ms in funcs.items()},
        "registers": max((r.get("REG", 0) for r in res.values()), default=None),
        "shared_bytes": max((r.get("SHARED", 0) for r in res.values()), default=None),
        "local_bytes": max((r.get("LOCAL", 0) for r in res.values()), default=None),
        "classes": classes,
        "uses_mma": any(classes[c] for c in MMA_CLASSES),
    }
