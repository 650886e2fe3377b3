"""PTX -> cubin: ``ptxas`` (a process) or nvJitLink (in-process, through ctypes).

Which one assembles is chosen by ``tilecore compile --option assembler=...``, else by
``$TILECORE_ASSEMBLER``:

* ``ptxas`` (the default): the ``ptxas`` of the ``nvidia-cuda-nvcc`` wheel (or ``$TILECORE_PTXAS``,
  or the one on ``PATH``), whole-program compilation, one process per kernel;
* ``nvjitlink``: ``libnvJitLink.so`` of the ``nvidia-nvjitlink`` wheel (or ``$TILECORE_NVJITLINK``),
  loaded with ctypes into the compiler; an error when it is missing or too old for the PTX;
* ``auto``: nvJitLink when it is installed and its version accepts the PTX ISA version of the
  target (``.version`` of the PTX), ptxas otherwise.

Both take the same options (``-arch=sm_XX``, ``-O<n>``, ``-g``, ``-lineinfo``; extra ptxas arguments
are handed to nvJitLink as ``-Xptxas=<arg>``) and report a rejected PTX the same way:
``error: <name>.ptx:<line>: <assembler> rejected the PTX: <first error>``, the other error lines as
notes. They do not produce the same SASS: nvJitLink always compiles PTX as relocatable code (ptxas
``-c``) and links it, which picks some instructions differently (``MOV`` / ``IMAD.MOV``) and adds a few
on some kernels (row_softmax_f16 525 against 514 on sm_80); the SASS of the nvJitLink path is that of
``ptxas -c``. That is why ptxas stays the default.

This module imports neither MLIR nor the plugins: the compile cache asks :func:`assembler_id` for
its keys before anything heavy is loaded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache

ENV = "TILECORE_ASSEMBLER"
CHOICES = ("ptxas", "nvjitlink", "auto")
DEFAULT = "ptxas"

# nvJitLink result codes (nvJitLink.h), for messages.
_RESULTS = ["SUCCESS", "UNRECOGNIZED_OPTION", "MISSING_ARCH", "INVALID_INPUT", "PTX_COMPILE", "NVVM_COMPILE",
            "INTERNAL", "THREADPOOL", "UNRECOGNIZED_INPUT", "FINALIZE", "NULL_INPUT", "INCOMPATIBLE_OPTIONS",
            "INCORRECT_INPUT_TYPE", "ARCH_MISMATCH", "OUTDATED_LIBRARY", "MISSING_FATBIN", "UNRECOGNIZED_ARCH",
            "UNSUPPORTED_ARCH", "LTO_NOT_ENABLED"]
_INPUT_PTX = 2  # NVJITLINK_INPUT_PTX


def _error(message: str, location: str | None = None, notes: list[str] | None = None):
    from .errors import TilecoreError

    return TilecoreError(message, location, notes)


# ------------------------------------------------------------------------------ finding the tools

def _nvidia_roots() -> list[str]:
    try:
        import nvidia  # namespace package of the CUDA wheels
    except ImportError:
        return []
    return list(nvidia.__path__)


def find_nvidia_tool(name: str) -> str | None:
    """Path of a CUDA tool from the ``nvidia-*`` wheels (``ptxas``, ``cuobjdump``, ``tileiras``)."""
    env = os.environ.get(f"TILECORE_{name.upper()}")
    if env:
        return env
    for root in _nvidia_roots():
        for sub in ("cu13/bin", "cuda_nvcc/bin", "cu12/bin"):
            cand = os.path.join(root, sub, name)
            if os.path.exists(cand):
                return cand
    return shutil.which(name)


def nvjitlink_path() -> str | None:
    """Path of ``libnvJitLink.so`` (``$TILECORE_NVJITLINK``, else from the ``nvidia-nvjitlink`` wheel)."""
    env = os.environ.get("TILECORE_NVJITLINK")
    if env:
        return env
    for root in _nvidia_roots():
        for sub in ("cu13/lib", "nvjitlink/lib", "cu12/lib"):
            d = os.path.join(root, sub)
            try:
                names = sorted(n for n in os.listdir(d) if n.startswith("libnvJitLink.so"))
            except OSError:
                continue
            if names:
                return os.path.join(d, min(names, key=len))  # libnvJitLink.so.13 before .so.13.5.37
    return None


def _wheel_version(path: str, dist_prefix: str) -> str:
    """The version of the wheel (``nvidia_cuda_nvcc-13.5.37.dist-info``) that installed ``path``, or ""."""
    d = os.path.dirname(os.path.realpath(path))
    for _ in range(5):  # site-packages/nvidia/cu13/bin/ptxas: the dist-info is 3 levels up
        d = os.path.dirname(d)
        try:
            for n in os.listdir(d):
                if n.startswith(dist_prefix + "-") and n.endswith(".dist-info"):
                    return n[len(dist_prefix) + 1: -len(".dist-info")]
        except OSError:
            return ""
    return ""


# ---------------------------------------------------------------------------------------- nvJitLink

class NvJitLink:
    """``libnvJitLink.so`` through ctypes: :meth:`assemble` PTX into a linked cubin."""

    def __init__(self, path: str):
        import ctypes

        self.path = path
        self._c = ctypes
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        if self.lib.nvJitLinkVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
            raise OSError(f"{path}: nvJitLinkVersion failed")
        self.version = (major.value, minor.value)
        # The header maps nvJitLinkCreate etc. to versioned symbols (__nvJitLinkCreate_13_5); the
        # plain names are the oldest ABI of the major version. Use the library's own version.
        suffix = f"_{major.value}_{minor.value}"
        for fn in ("Create", "Destroy", "AddData", "Complete", "GetLinkedCubinSize", "GetLinkedCubin",
                   "GetErrorLogSize", "GetErrorLog", "GetInfoLogSize", "GetInfoLog"):
            f = getattr(self.lib, f"__nvJitLink{fn}{suffix}", None) or getattr(self.lib, f"nvJitLink{fn}")
            f.restype = ctypes.c_int
            setattr(self, fn, f)
        self.AddData.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def max_ptx_isa(self) -> int:
        """The newest PTX ISA version (major*10+minor) this nvJitLink accepts."""
        return max_ptx_isa(*self.version)

    def _log(self, handle, kind: str) -> str:
        c = self._c
        n = c.c_size_t()
        if getattr(self, f"Get{kind}LogSize")(handle, c.byref(n)) != 0 or not n.value:
            return ""
        buf = c.create_string_buffer(n.value + 1)
        getattr(self, f"Get{kind}Log")(handle, buf)
        return buf.value.decode(errors="replace")

    def assemble(self, ptx: str, options: list[str], name: str) -> bytes:
        """Link one PTX module into a cubin; a failure raises :class:`AssemblerRejected` with the log."""
        c = self._c
        handle = c.c_void_p()
        opts = (c.c_char_p * len(options))(*[o.encode() for o in options])
        r = self.Create(c.byref(handle), len(options), opts)
        if r != 0:
            raise AssemblerRejected(f"nvJitLinkCreate failed: NVJITLINK_ERROR_{_result(r)} "
                                    f"(options: {' '.join(options)})", r)
        try:
            data = ptx.encode()
            r = self.AddData(handle, _INPUT_PTX, data, len(data), f"{name}.ptx".encode())
            if r == 0:
                r = self.Complete(handle)
            if r != 0:
                log = self._log(handle, "Error") or self._log(handle, "Info")
                raise AssemblerRejected(log or f"NVJITLINK_ERROR_{_result(r)}", r)
            size = c.c_size_t()
            self.GetLinkedCubinSize(handle, c.byref(size))
            buf = c.create_string_buffer(size.value)
            if self.GetLinkedCubin(handle, buf) != 0:
                raise AssemblerRejected("nvJitLinkGetLinkedCubin failed", -1)
            return buf.raw
        finally:
            self.Destroy(c.byref(handle))


class AssemblerRejected(Exception):
    """nvJitLink refused: its error log and result code."""

    def __init__(self, log: str, code: int):
        super().__init__(log)
        self.log = log
        self.code = code


def _result(code: int) -> str:
    return _RESULTS[code] if 0 <= code < len(_RESULTS) else str(code)


def max_ptx_isa(major: int, minor: int) -> int:
    """The newest PTX ISA version (major*10+minor) that CUDA ``major.minor``'s ptxas / nvJitLink accept."""
    if major == 12:
        return {0: 80, 1: 81, 2: 82, 3: 83, 4: 84, 5: 85, 6: 85, 7: 86, 8: 87}.get(minor, 88)
    if major == 13:
        return 90 + minor
    return 10_000 if major > 13 else 0  # a newer major accepts everything tilecore emits


_NVJITLINK: dict[str, NvJitLink | None] = {}


def nvjitlink() -> NvJitLink | None:
    """The loaded nvJitLink library (loaded once per process), or None when it is not installed."""
    path = nvjitlink_path()
    if path is None:
        return None
    if path not in _NVJITLINK:
        try:
            _NVJITLINK[path] = NvJitLink(path)
        except (OSError, AttributeError):
            _NVJITLINK[path] = None
    return _NVJITLINK[path]


# ---------------------------------------------------------------------------------------- selection

def requested() -> str:
    """The assembler asked for by ``$TILECORE_ASSEMBLER`` (``ptxas`` / ``nvjitlink`` / ``auto``)."""
    value = os.environ.get(ENV, "").strip().lower() or DEFAULT
    if value not in CHOICES:
        raise _error(f"{ENV}={value!r}: expected one of {', '.join(CHOICES)}")
    return value


def select(ptx_version: int | None = None, choice: str | None = None) -> str:
    """``"ptxas"`` or ``"nvjitlink"``: what assembles PTX of ISA ``ptx_version`` (major*10+minor).

    ``choice`` overrides ``$TILECORE_ASSEMBLER``. A forced ``nvjitlink`` that is missing or too old is
    an error; ``auto`` falls back to ptxas then.
    """
    choice = (choice or requested()).lower()
    if choice == "ptxas":
        return "ptxas"
    if choice not in CHOICES:
        raise _error(f"unknown assembler '{choice}': expected one of {', '.join(CHOICES)}")
    lib = nvjitlink()
    if lib is None:
        if choice == "nvjitlink":
            raise _error("nvJitLink not found: install nvidia-nvjitlink (pip install nvidia-nvjitlink) "
                         f"or set {ENV}=ptxas")
        return "ptxas"
    if ptx_version is not None and ptx_version > lib.max_ptx_isa():
        if choice == "nvjitlink":
            raise _error(f"nvJitLink {lib.version_string} cannot assemble PTX ISA {ptx_version // 10}."
                         f"{ptx_version % 10} (it accepts up to {lib.max_ptx_isa() // 10}.{lib.max_ptx_isa() % 10}); "
                         f"install a newer nvidia-nvjitlink or set {ENV}=ptxas")
        return "ptxas"
    return "nvjitlink"


@lru_cache(maxsize=None)
def _ptxas_version(path: str) -> str:
    version = _wheel_version(path, "nvidia_cuda_nvcc")
    if version:
        return version
    try:  # not from the wheel: ask it (about 5 ms, once per process)
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    m = re.search(r"\bV(\d[\w.]*)", out)
    return m.group(1) if m else "?"


def assembler_id(ptx_version: int | None = None, choice: str | None = None) -> str:
    """Which assembler would assemble PTX of ISA ``ptx_version``, with its version and file identity.

    ``"nvjitlink 13.5 13.5.37 <path>"`` or ``"ptxas 13.5.37 <path>"`` (plus size and modification time of
    the file, so a replaced tool changes it). Costs file-system calls only (nvJitLink is loaded when it
    is selected: ~7 ms, needed for its version).
    """
    name = select(ptx_version, choice)
    path = nvjitlink_path() if name == "nvjitlink" else find_nvidia_tool("ptxas")
    if not path:
        return f"{name} none"
    try:
        st = os.stat(path)
        stamp = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = "missing"
    if name == "nvjitlink":
        lib = nvjitlink()
        return f"nvjitlink {lib.version_string} {_wheel_version(path, 'nvidia_nvjitlink') or '?'} " \
               f"{os.path.realpath(path)} {stamp}"
    return f"ptxas {_ptxas_version(path)} {os.path.realpath(path)} {stamp}"


# --------------------------------------------------------------------------------------- assembling

_PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)
# "ptxas /tmp/x/k.ptx, line 4; error   : Unknown modifier" / "ptxas application ptx input, line 4; error : ..."
_DIAG = re.compile(r"^ptxas(?: (?P<file>.*?), line (?P<line>\d+);)?\s*(?P<kind>error|fatal|warning)\s*:\s*(?P<msg>.*)$")


def ptx_isa_version(ptx: str) -> int | None:
    """The ``.version`` of a PTX text as major*10+minor (``.version 8.3`` -> 83)."""
    m = _PTX_VERSION.search(ptx)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def options(arch: str, opt_level: int = 3, debug: bool = False, lineinfo: bool = False,
            extra_args: list[str] | None = None) -> list[str]:
    """The ptxas command-line options for these settings (nvJitLink takes the same spellings)."""
    opts = list(extra_args or [])
    if debug:
        opts.append("-g")
    elif lineinfo:
        opts.append("-lineinfo")
    return [*opts, f"-arch={arch}", f"-O{0 if debug else opt_level}"]


def _reject(assembler: str, name: str, log: str):
    """The TilecoreError for a rejected PTX: first error line as the message, the next ones as notes."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("ERROR NVJITLINK_ERROR_")] or lines  # nvJitLink's summary
    # nvJitLink on input that is not PTX: "ERROR 1: bad input: does not match type NVJITLINK_INPUT_PTX<name>"
    lines = [re.sub(r"^ERROR \d+: (.*NVJITLINK_INPUT_PTX).*$", r"\1", ln) for ln in lines]
    parsed = [(_DIAG.match(ln), ln) for ln in lines]
    first = next((i for i, (m, _) in enumerate(parsed) if m and m.group("kind") in ("error", "fatal")), None)
    if first is None:
        first = next((i for i, (_, ln) in enumerate(parsed) if "error" in ln.lower()), 0)
    if not lines:
        return _error(f"{assembler} rejected the PTX", f"{name}.ptx")

    def text(i):
        m, ln = parsed[i]
        if not m:
            return ln
        where = f"line {m.group('line')}: " if m.group("line") and i != first else ""
        return where + m.group("msg").strip()

    m = parsed[first][0]
    loc = f"{name}.ptx:{m.group('line')}" if m and m.group("line") else f"{name}.ptx"
    notes = [text(i) for i in range(len(lines)) if i != first and not lines[i].startswith("ptxas fatal")][:5]
    return _error(f"{assembler} rejected the PTX: {text(first)}", loc, notes)


def _strip_debug_target(ptx: str) -> str:
    # LLVM marks any module with a compile unit `.target ..., debug`; ptxas refuses that with
    # optimisation ("Optimized debugging not supported"), while -lineinfo only needs the .loc lines.
    return re.sub(r"^(\.target [^\n]*?), debug$", r"\1", ptx, flags=re.M)


def ptx_to_cubin(ptx: str, arch: str, opt_level: int = 3, debug: bool = False, lineinfo: bool = False,
                 extra_args: list[str] | None = None, name: str = "kernel", assembler: str | None = None) -> bytes:
    """Assemble PTX into a cubin with the selected assembler (see the module docstring).

    ``assembler`` (``ptxas`` / ``nvjitlink`` / ``auto``) overrides ``$TILECORE_ASSEMBLER``. A
    rejection is a TilecoreError ``<name>.ptx[:line]: <assembler> rejected the PTX: <first error>``.
    """
    if lineinfo and not debug:
        ptx = _strip_debug_target(ptx)
    which = select(ptx_isa_version(ptx), assembler)
    opts = options(arch, opt_level, debug, lineinfo, extra_args)
    if which == "nvjitlink":
        return _nvjitlink_assemble(ptx, opts, name)
    return _ptxas_assemble(ptx, opts, name)


def _nvjitlink_assemble(ptx: str, opts: list[str], name: str) -> bytes:
    lib = nvjitlink()
    # nvJitLink names ptxas options -Xptxas=...; its own options are spelled like ptxas' for these.
    own = ("-arch=", "-O", "-g", "-lineinfo")
    nv_opts = [o if o.startswith(own) else f"-Xptxas={o}" for o in opts]
    try:
        return lib.assemble(ptx, nv_opts, name)
    except AssemblerRejected as e:
        raise _reject("nvJitLink", name, e.log) from None


# glibc malloc settings for the ptxas process (read by glibc at its start; other C libraries and glibc
# before 2.35 ignore them): its heap on transparent huge pages where the system allows them (hugetlb=1:
# madvise) and grown 16 MiB at a time (top_pad). ptxas spends much of a small kernel's time faulting in
# fresh heap pages (3,800 faults for vadd_f32); with these 1,300, and its CPU time per corpus kernel
# drops ~20 % (vadd_f32 sm_80 11.5 -> 8.7 ms, row_softmax_f16 sm_90a 29.4 -> 23.8 ms, matmul_f16 sm_100a
# 77.5 -> 71.5 ms: user + sys of the ptxas process, median of 11, alternately). The cubin is the same
# bytes. A tunable the user sets wins.
PTXAS_MALLOC_TUNABLES = (("glibc.malloc.hugetlb", "1"), ("glibc.malloc.top_pad", str(16 << 20)))


def ptxas_env() -> dict | None:
    """The environment of a ptxas process: this one's with :data:`PTXAS_MALLOC_TUNABLES` added to
    ``GLIBC_TUNABLES`` (those the user set are kept); None (inherit it) where nothing is added."""
    user = os.environ.get("GLIBC_TUNABLES")
    have = {t.split("=", 1)[0] for t in (user or "").split(":") if t}
    add = [f"{k}={v}" for k, v in PTXAS_MALLOC_TUNABLES if k not in have]
    if not add:
        return None
    return {**os.environ, "GLIBC_TUNABLES": ":".join(([user] if user else []) + add)}


def _ptxas_assemble(ptx: str, opts: list[str], name: str) -> bytes:
    ptxas = find_nvidia_tool("ptxas")
    if not ptxas:
        raise _error("ptxas not found: install nvidia-cuda-nvcc (pip install nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory(prefix="tilecore-") as tmp:
        src = os.path.join(tmp, f"{name}.ptx")
        dst = os.path.join(tmp, f"{name}.cubin")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([ptxas, *opts, src, "-o", dst], capture_output=True, text=True, env=ptxas_env())
        if proc.returncode != 0:
            raise _reject("ptxas", name, (proc.stderr or proc.stdout).replace(src, f"{name}.ptx"))
        with open(dst, "rb") as fh:
            return fh.read()
