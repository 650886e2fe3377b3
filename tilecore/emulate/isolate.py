"""Run one emulated launch in a child process, so that a native fault cannot kill the caller.

The kernel's code runs natively in the emulator: with bounds checks off (or through a path the
checks miss) a wild access is a real SIGSEGV / SIGBUS of the process running it. An isolated launch
sends the module (text, with its locations), the launch parameters and the arrays to a fresh
interpreter (``python -m tilecore.emulate.isolate IN OUT``), which compiles and runs the kernel and
sends back the arrays, the printf text or the :class:`~tilecore.errors.TilecoreError`. A child killed
by a signal becomes ``the kernel 'k' crashed the emulator (SIGSEGV) ...``; one that runs longer than
``timeout`` seconds is killed.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile

import numpy as np

from ..errors import TilecoreError
from .engine import LaunchResult, copy_back, overlap_groups


def _module_text(module) -> str:
    if isinstance(module, str):
        return module
    return module.operation.get_asm(enable_debug_info=True)


def _child_env() -> dict:
    """The caller's environment, with the directory holding this ``tilecore`` first on PYTHONPATH."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def launch_isolated(module, kernel: str, grid, block, args, shared_bytes: int = 0, check_bounds: bool = True,
                    timeout: float | None = None) -> LaunchResult:
    """:func:`tilecore.emulate.launch` in a child process; see there (``isolate=True``)."""
    args = list(args)
    request = {"module": _module_text(module), "kernel": kernel, "grid": grid, "block": block, "args": args,
               "shared_bytes": shared_bytes, "check_bounds": check_bounds,
               "addresses": [a.ctypes.data if isinstance(a, np.ndarray) else 0 for a in args]}
    with tempfile.TemporaryDirectory(prefix="tilecore-emulate-") as tmp:
        inp, out = os.path.join(tmp, "launch.pkl"), os.path.join(tmp, "result.pkl")
        with open(inp, "wb") as f:
            pickle.dump(request, f, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            proc = subprocess.run([sys.executable, "-m", "tilecore.emulate.isolate", inp, out], env=_child_env(),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TilecoreError(f"the kernel '{kernel}' did not finish within {timeout:g} s in the emulator "
                                "(its child process was killed)") from None
        if proc.returncode < 0:
            hint = ("run it with bounds checks on to find the access" if not check_bounds else
                    "the emulator's checks did not catch this fault: please report it")
            raise TilecoreError(f"the kernel '{kernel}' crashed the emulator ({_signal_name(-proc.returncode)}); "
                                f"{hint}")
        if proc.returncode != 0 or not os.path.exists(out):
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise TilecoreError(f"the emulator's child process for kernel '{kernel}' failed with exit status "
                                f"{proc.returncode}: {tail[0]}")
        with open(out, "rb") as f:
            reply = pickle.load(f)
    if "error" in reply:
        message, location, notes = reply["error"]
        raise TilecoreError(message, location, notes)
    outputs = reply["outputs"]
    copy_back([args[i] for i in reply["pointers"]], outputs)
    return LaunchResult(outputs, reply["printf"])


def _realias(args, addresses) -> list:
    """``args`` (unpickled: each array its own copy) with the arrays that overlapped in the caller's memory (at
    ``addresses``) made views into one buffer again, so that the launch shares their memory as the caller's would
    (:func:`.engine.shared_copies`)."""
    args = list(args)
    for lo, hi, members in overlap_groups(addresses, args):
        buf = np.empty(hi - lo, np.uint8)
        for i in members:  # the caller's bytes (overlapping parts are the same bytes in each)
            buf[addresses[i] - lo:addresses[i] - lo + args[i].nbytes] = args[i].reshape(-1).view(np.uint8)
        for i in members:
            a = args[i]
            args[i] = buf[addresses[i] - lo:addresses[i] - lo + a.nbytes].view(a.dtype).reshape(a.shape)
    return args


def _child(inp: str, out: str) -> int:
    """Body of the child process: run the launch described in ``inp``, write the reply to ``out``."""
    from . import compile_kernel

    with open(inp, "rb") as f:
        req = pickle.load(f)
    try:
        k = compile_kernel(req["module"], req["kernel"], check_bounds=req["check_bounds"])
        res = k.launch(req["grid"], req["block"], _realias(req["args"], req["addresses"]), req["shared_bytes"])
        reply = {"outputs": res.outputs, "printf": res.printf, "pointers": k.pointer_indices()}
    except TilecoreError as e:
        reply = {"error": (e.message, e.location, e.notes)}
    with open(out, "wb") as f:
        pickle.dump(reply, f, protocol=pickle.HIGHEST_PROTOCOL)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
