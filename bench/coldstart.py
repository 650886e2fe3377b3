"""Where the time of one cold ``tilecore compile`` goes, phase by phase (process start to exit).

Usage:
    python bench/coldstart.py [KERNEL.tileirbc] [--gpu-name sm_90a] [-n 7] [--tree DIR ...]

A child process runs the command line's own steps (``tilecore.cli`` parser and, where the tree has
it, ``cold_compile_setup`` (GC off, MLIR libraries loading on a second thread), MLIR bindings, plugin
manager, registries, context with the IRDL dialects, bytecode reader, stages, serialize, writing the
cubin) and stamps each with the wall clock; the parent adds the interpreter's start (spawn to the
script's first line) and its shutdown (last stamp to the exit it observes). The child ends like
``python -m tilecore`` does in that tree: through ``tilecore.fastexit`` where the tree has it, else
``sys.exit``. No cache is read or written (``--no-cache``, an empty ``TILECORE_CACHE_DIR``).

``--tree DIR`` (repeatable) measures the tilecore checkout at DIR (``DIR`` and ``DIR/plugins/*/src``
first on ``PYTHONPATH``; e.g. ``git archive <commit> | tar -x -C DIR``) instead of the installed
one; with several trees the runs alternate and the table has one column per tree (before / after).
Median of N runs per phase; also the median wall time of N separate ``python -m tilecore compile``
processes. Whole-process times on a shared machine: read differences from one run.
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_KERNEL = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible", "vadd_f32.tileirbc")

CHILD = r'''
import time
S = [("script start", time.time())]
import os, sys
def mark(name):
    S.append((name, time.time()))
import tilecore.cli
kernel, gpu, out, stamps = sys.argv[1:5]
tilecore.cli._parser().parse_args(["compile", kernel, "--gpu-name", gpu, "-o", out])
if hasattr(tilecore.cli, "cold_compile_setup"):  # what the CLI's single compile does first, where the tree has it
    tilecore.cli.cold_compile_setup()
mark("import tilecore.cli + argument parsing")
import tilecore.batch, tilecore.compiler, tilecore.targets, tilecore.plugins  # what the CLI imports next
mark("import tilecore's compile modules")
import tilecore.mlir  # noqa: F401
mark("import the MLIR bindings")
from tilecore.plugins import get_plugin_manager
pm = get_plugin_manager()
mark("plugin discovery + plugin imports")
from tilecore.targets import resolve_target
target = resolve_target(gpu, pm.targets())
pm.stages(); pm.input_formats(); pm.dialects()
mark("registries (targets, stages, input formats, dialects)")
ctx = pm.make_context()
mark("MLIR context + IRDL dialects")
from tilecore.compiler import compile_module, read_input
module, _ = read_input(kernel, pm, ctx=ctx)
mark("read the input")
from tilecore.options import CompileOptions
res = compile_module(module, target, CompileOptions(), pm)
serialize = next(r.seconds for r in res.records if r.name == "serialize")
now = time.time()
S.append(("stages before serialize", now - serialize))
S.append(("serialize (NVPTX back end + assembler)", now))
with open(out, "wb") as fh:
    fh.write(res.artifacts["cubin"])
print(f"tilecore: wrote {out}")
mark("write the output")
with open(stamps, "w") as fh:
    fh.write(repr(S))
import tilecore
if not os.path.exists(os.path.join(tilecore.__path__[0], "fastexit.py")):  # a tree from before it
    sys.exit(0)
from tilecore.fastexit import exit_now
exit_now(0)
'''


def tree_pythonpath(tree: str, env: dict) -> str:
    """``PYTHONPATH`` that runs the tilecore checkout at ``tree`` (itself and its ``plugins/*/src``) first."""
    paths = [tree, *sorted(glob.glob(os.path.join(tree, "plugins", "*", "src")))]
    return os.pathsep.join(paths + [env["PYTHONPATH"]] if env.get("PYTHONPATH") else paths)


def child_env(tree: str | None, cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TILECORE_CACHE_DIR"] = cache_dir
    env["TILECORE_NO_CACHE"] = "1"
    if tree:
        env["PYTHONPATH"] = tree_pythonpath(tree, env)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", nargs="?", default=DEFAULT_KERNEL)
    ap.add_argument("--gpu-name", default="sm_90a")
    ap.add_argument("-n", type=int, default=7)
    ap.add_argument("--tree", action="append", default=[], metavar="DIR")
    a = ap.parse_args(argv)
    kernel = os.path.abspath(a.kernel)
    trees = [os.path.abspath(t) for t in a.tree] or [None]
    with tempfile.TemporaryDirectory(prefix="tilecore-coldstart-") as tmp:
        script = os.path.join(tmp, "child.py")
        with open(script, "w") as fh:
            fh.write(CHILD)
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        stamps, out = os.path.join(tmp, "stamps"), os.path.join(tmp, "out.cubin")
        phases = {t: [] for t in trees}
        whole = {t: [] for t in trees}

        def one(tree, record: bool) -> None:
            env = child_env(tree, cache)
            t0 = time.time()
            p = subprocess.run([sys.executable, script, kernel, a.gpu_name, out, stamps], env=env, cwd=tmp,
                               capture_output=True, text=True)
            t1 = time.time()
            if p.returncode != 0:
                raise SystemExit(f"error: the phase child failed ({tree or 'installed tilecore'}):\n{p.stderr}")
            s = ast.literal_eval(open(stamps).read())
            rows = [("interpreter start + site", s[0][1] - t0)]
            rows += [(s[i][0], s[i][1] - s[i - 1][1]) for i in range(1, len(s))]
            rows += [("interpreter shutdown", t1 - s[-1][1]), ("total (process wall)", t1 - t0)]
            t = time.perf_counter()
            q = subprocess.run([sys.executable, "-m", "tilecore", "compile", kernel, "--gpu-name", a.gpu_name,
                                "-o", out, "--no-cache"], env=env, cwd=tmp, capture_output=True, text=True)
            w = time.perf_counter() - t
            if q.returncode != 0:
                raise SystemExit(f"error: tilecore compile failed ({tree or 'installed tilecore'}):\n{q.stderr}")
            if record:
                phases[tree].append(rows)
                whole[tree].append(w)

        for tree in trees:  # warm-up: byte code caches, file cache
            one(tree, False)
        for _ in range(a.n):
            for tree in trees:
                one(tree, True)
    names = [r[0] for r in phases[trees[0]][0]]
    heads = [os.path.basename(t) or t for t in trees] if trees != [None] else ["ms"]
    print(f"cold `tilecore compile {os.path.basename(kernel)} --gpu-name {a.gpu_name}`, median of {a.n}, "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| phase | " + " | ".join(f"{h} (ms)" for h in heads) + " |")
    print("|---|" + "---|" * len(trees))
    for i, name in enumerate(names):
        cells = [f"{statistics.median(r[i][1] for r in phases[t]) * 1000:.1f}" for t in trees]
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = [f"{statistics.median(whole[t]) * 1000:.1f}" for t in trees]
    print("| `python -m tilecore compile`, separate runs | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
