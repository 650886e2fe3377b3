"""tilecore.assembler: PTX -> cubin with ptxas and with nvJitLink, on real PTX of a corpus kernel."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from support import CORPUS, has_plugin, run_cli

from tilecore import assembler
from tilecore.assembler import assembler_id, find_nvidia_tool, nvjitlink, ptx_to_cubin, select
from tilecore.errors import TilecoreError

VADD = os.path.join(CORPUS, "vadd_f32.tileirbc")
needs_corpus = pytest.mark.skipif(not (os.path.exists(VADD) and has_plugin("tileas")),
                                  reason="needs the visible corpus and the tileas plugin")
needs_nvjitlink = pytest.mark.skipif(nvjitlink() is None, reason="nvidia-nvjitlink not installed")
CUOBJDUMP = find_nvidia_tool("cuobjdump")

# ptxas refuses this one three times on line 4
BAD_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k() { bogus.instr %r1; ret; }
"""


@pytest.fixture(autouse=True)
def _no_assembler_env(monkeypatch):
    monkeypatch.delenv(assembler.ENV, raising=False)


@pytest.fixture(scope="module")
def vadd_ptx():
    from tilecore.compiler import compile_file
    from tilecore.options import CompileOptions

    if not (os.path.exists(VADD) and has_plugin("tileas")):
        pytest.skip("needs the visible corpus and the tileas plugin")
    res = compile_file(VADD, "sm_90a", CompileOptions(emit="ptx"))
    (text,) = res.artifacts["ptx"].values()
    return text


def sass(cubin: bytes, tmp_path) -> list[str]:
    """The instruction lines of ``cuobjdump -sass`` (addresses and encodings dropped)."""
    path = tmp_path / f"k{len(cubin)}.cubin"
    path.write_bytes(cubin)
    out = subprocess.run([CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    return [re.sub(r"/\*[0-9a-fx ]*\*/", "", ln).strip() for ln in out.splitlines()
            if re.match(r"^\s+/\*[0-9a-f]{4,}\*/", ln)]


def mnemonics(lines: list[str]) -> list[str]:
    return [ln.split()[0] for ln in lines if ln.split() and not ln.startswith("NOP")]


def test_default_is_ptxas():
    assert assembler.DEFAULT == "ptxas" and select() == "ptxas"
    ident = assembler_id()
    assert ident.startswith("ptxas ") and find_nvidia_tool("ptxas") in ident or os.path.realpath(
        find_nvidia_tool("ptxas")) in ident


@needs_corpus
def test_ptxas_path_on_corpus_ptx(vadd_ptx, tmp_path):
    cubin = ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="ptxas")
    assert cubin[:4] == b"\x7fELF"
    if CUOBJDUMP:
        assert "EXIT" in mnemonics(sass(cubin, tmp_path))


def test_ptxas_env_adds_malloc_tunables_and_keeps_the_users(monkeypatch):
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    env = assembler.ptxas_env()
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.hugetlb=1:glibc.malloc.top_pad={16 << 20}"
    assert env["PATH"] == os.environ["PATH"]
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0:glibc.cpu.x86_shstk=off")
    assert assembler.ptxas_env()["GLIBC_TUNABLES"] == \
        f"glibc.malloc.hugetlb=0:glibc.cpu.x86_shstk=off:glibc.malloc.top_pad={16 << 20}"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.top_pad=0:glibc.malloc.hugetlb=0")
    assert assembler.ptxas_env() is None  # both set by the user: ptxas inherits the environment


@needs_corpus
def test_ptxas_malloc_tunables_give_the_same_cubin(vadd_ptx, monkeypatch):
    tuned = ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="ptxas")
    monkeypatch.setattr(assembler, "PTXAS_MALLOC_TUNABLES", ())
    assert assembler.ptxas_env() is None or "GLIBC_TUNABLES" not in assembler.ptxas_env()
    assert ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="ptxas") == tuned


@needs_corpus
@needs_nvjitlink
def test_nvjitlink_path_same_sass_as_relocatable_ptxas(vadd_ptx, tmp_path):
    if not CUOBJDUMP:
        pytest.skip("cuobjdump not installed")
    jl = ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="nvjitlink")
    whole = ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="ptxas")
    # nvJitLink compiles PTX as relocatable code and links it: exactly ptxas -c's SASS ...
    reloc = ptx_to_cubin(vadd_ptx, "sm_90a", name="vadd_f32", assembler="ptxas", extra_args=["-c"])
    assert jl[:4] == b"\x7fELF"
    assert sass(jl, tmp_path) == sass(reloc, tmp_path)
    # ... which for this kernel has the same instructions as whole-program ptxas, two of them spelled
    # differently (MOV / IMAD.MOV, HFMA2.MMA / IMAD.MOV)
    a, b = mnemonics(sass(jl, tmp_path)), mnemonics(sass(whole, tmp_path))
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) <= 4


@needs_corpus
@needs_nvjitlink
def test_nvjitlink_options_debug_lineinfo_extra(vadd_ptx):
    for kw in ({"debug": True}, {"lineinfo": True}, {"opt_level": 0}, {"extra_args": ["-maxrregcount=32"]}):
        assert ptx_to_cubin(vadd_ptx, "sm_90a", name="v", assembler="nvjitlink", **kw)[:4] == b"\x7fELF"
    with pytest.raises(TilecoreError, match=r"nvJitLink rejected the PTX: .*Unknown option"):
        ptx_to_cubin(vadd_ptx, "sm_90a", name="v", assembler="nvjitlink", extra_args=["--no-such-option"])


@pytest.mark.parametrize("which, label", [("ptxas", "ptxas"), ("nvjitlink", "nvJitLink")])
def test_rejected_ptx_message(which, label):
    if which == "nvjitlink" and nvjitlink() is None:
        pytest.skip("nvidia-nvjitlink not installed")
    with pytest.raises(TilecoreError) as ei:
        ptx_to_cubin(BAD_PTX, "sm_80", name="k", assembler=which)
    e = ei.value
    assert e.render().splitlines() == [
        f"error: k.ptx:4: {label} rejected the PTX: Unknown modifier '.instr'",
        "note: line 4: Not a name of any known instruction: 'bogus'",
        "note: line 4: Unknown symbol '%r1'",
    ]


@needs_corpus
@pytest.mark.parametrize("which, label", [("ptxas", "ptxas"), ("nvjitlink", "nvJitLink")])
def test_rejected_arch_message(vadd_ptx, which, label):
    # PTX for sm_90a assembled for sm_80: refused without a line number, nothing of a temporary path
    if which == "nvjitlink" and nvjitlink() is None:
        pytest.skip("nvidia-nvjitlink not installed")
    with pytest.raises(TilecoreError) as ei:
        ptx_to_cubin(vadd_ptx, "sm_80", name="vadd_f32", assembler=which)
    assert ei.value.render() == (f"error: vadd_f32.ptx: {label} rejected the PTX: SM version specified by "
                                 ".target is higher than default SM version assumed")


@needs_nvjitlink
def test_selection_and_assembler_id(monkeypatch):
    lib = nvjitlink()
    top = lib.max_ptx_isa()
    assert select(83, "auto") == "nvjitlink" and select(83, "ptxas") == "ptxas"
    assert select(top + 1, "auto") == "ptxas"  # too new for this nvJitLink: ptxas
    with pytest.raises(TilecoreError, match=r"nvJitLink .* cannot assemble PTX ISA"):
        select(top + 1, "nvjitlink")
    monkeypatch.setenv(assembler.ENV, "nvjitlink")
    assert select(83) == "nvjitlink"
    ident = assembler_id()
    assert ident.startswith(f"nvjitlink {lib.version_string} ") and "libnvJitLink.so" in ident
    monkeypatch.setenv(assembler.ENV, "PTXAS")
    assert select(83) == "ptxas" and assembler_id().startswith("ptxas ")
    monkeypatch.setenv(assembler.ENV, "bogus")
    with pytest.raises(TilecoreError, match="TILECORE_ASSEMBLER='bogus': expected one of ptxas, nvjitlink, auto"):
        select(83)


def test_forced_nvjitlink_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("TILECORE_NVJITLINK", str(tmp_path / "libnvJitLink.so.none"))
    with pytest.raises(TilecoreError, match="nvJitLink not found: install nvidia-nvjitlink"):
        select(80, "nvjitlink")
    assert select(80, "auto") == "ptxas"


def test_assembler_module_imports_no_mlir():
    code = ("import sys, tilecore.assembler as a; a.assembler_id(); "
            "print(sorted(m for m in sys.modules if m.startswith(('mlir', 'tilecore_'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_serialize_reexports():
    from tilecore import serialize

    assert serialize.ptx_to_cubin is ptx_to_cubin and serialize.find_nvidia_tool is find_nvidia_tool


@needs_corpus
@needs_nvjitlink
def test_cli_with_each_assembler(tmp_path):
    sizes = {}
    for which in ("ptxas", "nvjitlink"):
        out = tmp_path / f"{which}.cubin"
        proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "-o", str(out), env={assembler.ENV: which})
        assert proc.returncode == 0, proc.stderr
        sizes[which] = len(out.read_bytes())
    assert sizes["ptxas"] != sizes["nvjitlink"]  # the linked cubin has more sections
    # --option assembler=... overrides the environment
    out = tmp_path / "opt.cubin"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "-o", str(out), "--option", "assembler=nvjitlink",
                   "--no-cache", env={assembler.ENV: "ptxas"})
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_bytes()) == sizes["nvjitlink"]
    proc = run_cli("compile", VADD, "--gpu-name", "sm_90a", "-o", str(out), "--option", "assembler=bogus", "--no-cache")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: unknown assembler 'bogus': expected one of ptxas, nvjitlink, auto"


@needs_corpus
def test_in_process_assembler_crash_is_an_error(vadd_ptx):
    # nvJitLink runs in the NVPTX back end's forked child: a native crash there is an error, not the
    # end of the compiler
    from tilecore.compiler import read_input
    from tilecore.options import CompileOptions
    from tilecore.plugins import get_plugin_manager
    from tilecore.serialize import module_to_ptx_and_cubin
    from tilecore.stages import StageContext, StageScheduler
    from tilecore.targets import resolve_target

    pm = get_plugin_manager()
    module, _ = read_input(VADD, pm)
    sched = StageScheduler(pm)
    sched.stages = [s for s in sched.stages if s.name != "serialize"]
    target = resolve_target("sm_90a", pm.targets())
    opts = CompileOptions(emit="mlir")
    sched.run(StageContext(module=module, target=target, options=opts, plugins=pm,
                           type_converter=pm.type_converter(opts)))
    ptx, cubins = module_to_ptx_and_cubin(module, lambda name, text: b"cubin of " + name.encode())
    assert list(ptx) == list(cubins) and cubins[next(iter(ptx))] == b"cubin of " + next(iter(ptx)).encode()

    def crash(name, text):  # killed as a native fault would kill it (SIGKILL: no faulthandler noise)
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(TilecoreError, match="LLVM NVPTX back end or nvJitLink failed"):
        module_to_ptx_and_cubin(module, crash)
