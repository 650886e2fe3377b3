"""SASS statistics of a cubin through ``cuobjdump`` (from ``nvidia-cuda-cuobjdump``).

``sass_stats(path)`` returns the instruction count, registers, shared memory and
counts of the instruction classes in :data:`CLASSES` (the ones that decide speed).
"""

from __future__ import annotations

import os
import re
import subprocess

from tilecore.serialize import find_nvidia_tool

# class name -> regular expression on the SASS mnemonic (opcode with its modifiers).
# Global loads / stores are split by access width (bits; no width suffix = 32).
CLASSES: list[tuple[str, str]] = [
    ("ldg.8", r"^LDG\b.*\.(U8|S8)\b"),
    ("ldg.16", r"^LDG\b.*\.(U16|S16)\b"),
    ("ldg.32", r"^LDG\b(?!.*\.(U8|S8|U16|S16|64|128)\b)"),
    ("ldg.64", r"^LDG\b.*\.64\b"),
    ("ldg.128", r"^LDG\b.*\.128\b"),
    ("stg.8", r"^STG\b.*\.(U8|S8)\b"),
    ("stg.16", r"^STG\b.*\.(U16|S16)\b"),
    ("stg.32", r"^STG\b(?!.*\.(U8|S8|U16|S16|64|128)\b)"),
    ("stg.64", r"^STG\b.*\.64\b"),
    ("stg.128", r"^STG\b.*\.128\b"),
    ("lds", r"^LDS\b"),
    ("sts", r"^STS\b"),
    ("ldgsts", r"^LDGSTS\b"),
    ("shfl", r"^SHFL\b"),
    ("bar", r"^BAR\b"),
    ("hmma", r"^HMMA\b"),
    ("imma", r"^IMMA\b"),
    ("hgmma", r"^HGMMA\b"),
    ("utc", r"^UTC\w*"),
    ("bra", r"^BRA\b"),
    ("mufu", r"^MUFU\b"),
    ("atom", r"^(ATOM|ATOMG|RED|ATOMS)\b"),
]
_CLASS_RE = [(name, re.compile(rx)) for name, rx in CLASSES]

# "        /*0070*/                   LDG.E R2, desc[UR4][R2.64] ;"
_INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


def _env(tool: str) -> dict:
    # cuobjdump -sass runs nvdisasm, found on PATH next to it.
    return dict(os.environ, PATH=os.path.dirname(tool) + os.pathsep + os.environ.get("PATH", ""))


def sass_stats(cubin: str) -> dict:
    """Instruction count, registers, shared bytes and class counts of ``cubin``."""
    tool = find_nvidia_tool("cuobjdump")
    if not tool:
        return {"error": "cuobjdump not found (pip install nvidia-cuda-cuobjdump)"}
    sass = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True, env=_env(tool))
    if sass.returncode != 0:
        return {"error": (sass.stderr or sass.stdout).strip().splitlines()[:1]}
    mnemonics = [m.group(2) for m in _INSN.finditer(sass.stdout)]
    # cuobjdump pads functions with NOPs / a trailing BRA-to-self; count what executes.
    real = [m for m in mnemonics if m != "NOP"]
    classes = {name: 0 for name, _ in CLASSES}
    for m in real:
        for name, rx in _CLASS_RE:
            if rx.search(m):
                classes[name] += 1
    res = subprocess.run([tool, "-res-usage", cubin], capture_output=True, text=True, env=_env(tool)).stdout
    reg = re.search(r"REG:(\d+)", res)
    shared = re.search(r"SHARED:(\d+)", res)
    return {"instructions": len(real), "registers": int(reg.group(1)) if reg else None,
            "shared_bytes": int(shared.group(1)) if shared else None, "classes": classes}
