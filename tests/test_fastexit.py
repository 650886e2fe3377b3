"""tilecore.fastexit: the command line leaves without the interpreter's finalization, losing nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import CORPUS, has_plugin


def run(code: str, env=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_status_atexit_threads_and_buffered_output():
    code = ("import atexit, sys, threading, time, tilecore.fastexit as f\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
            "sys.stdout.write('buffered, no newline'); sys.stderr.write('err text')\n"
            "f.exit_now(3)\n"
            "print('not reached')")
    proc = run(code, {"PYTHONUNBUFFERED": ""})
    assert proc.returncode == 3
    assert proc.stdout == "buffered, no newlinethread done\natexit ran\n"
    assert proc.stderr == "err text"


def test_c_stdio_flushed():
    # C-level buffered output (native code printing through libc) survives the os._exit
    code = ("import ctypes, tilecore.fastexit as f\n"
            "ctypes.CDLL(None).printf(b'from C\\n')\n"
            "f.exit_now(0)")
    proc = run(code, {"PYTHONUNBUFFERED": ""})  # buffered C stdio (-u / PYTHONUNBUFFERED unbuffers it too)
    assert proc.returncode == 0 and proc.stdout == "from C\n"


def test_steps_aside_when_asked_or_profiled():
    code = "import tilecore.fastexit as f; print(f.enabled())"
    assert run(code).stdout.strip() == "True"
    assert run(code, {"TILECORE_NO_FAST_EXIT": "1"}).stdout.strip() == "False"
    assert run("import sys, tilecore.fastexit as f; sys.setprofile(lambda *a: None); print(f.enabled())"
               ).stdout.strip() == "False"
    # exit_now(None) is status 0; a non-integer status goes through sys.exit (its message printed)
    assert run("import tilecore.fastexit as f; f.exit_now(None)").returncode == 0
    proc = run("import tilecore.fastexit as f; f.exit_now('bad')")
    assert proc.returncode == 1 and proc.stderr.strip() == "bad"


@pytest.mark.skipif(not has_plugin("tileas"), reason="needs the tileas plugin")
def test_python_m_tilecore_compile_and_error(tmp_path):
    out = tmp_path / "v.cubin"
    proc = subprocess.run([sys.executable, "-m", "tilecore", "compile", os.path.join(CORPUS, "vadd_f32.tileirbc"),
                           "--gpu-name", "sm_90a", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x7fELF" and f"wrote {out} (cubin" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "tilecore", "compile", str(tmp_path / "missing.tileirbc")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.startswith("error: ") and proc.stdout == ""
