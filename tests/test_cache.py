"""The compile cache: keys, entries, eviction, concurrent writers, the CLI (hits import no MLIR)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from support import CORPUS, DATA, has_plugin, needs_gpu_nvvm, run_cli

from tilecore import cache as tc

VADD_GPU = os.path.join(DATA, "vadd_gpu.mlir")
VADD = os.path.join(CORPUS, "vadd_f32.tileirbc")
needs_corpus = pytest.mark.skipif(not (os.path.isfile(VADD) and has_plugin("tileas")),
                                  reason="needs the corpus and the tileas plugin")


# -- keys -------------------------------------------------------------------------------------------
def test_key_changes_with_each_ingredient(clean_env):
    env = tc.environment()
    assert env is not None
    base = dict(data=b"kernel", path="k.tileirbc", gpu_name="sm_80")
    key = tc.compile_key(**base, env=env)
    assert key == tc.compile_key(**base, env=tc.environment_digest(env))  # a digest is as good as the dict
    assert key == tc.compile_key(b"kernel", "elsewhere/k.tileirbc", "sm_80", env=env)  # content, not the path
    assert key == tc.compile_key(b"kernel", "k.tileirbc", "SM_80", env=env)  # the normalised target
    variants = [
        dict(base, data=b"kernel2"),
        dict(base, path="k.mlir"),
        dict(base, gpu_name="sm_90a"),
        dict(base, emit="ptx"),
        dict(base, opt_level=2),
        dict(base, debug=True),
        dict(base, lineinfo=True),
        dict(base, extra={"tileas.dot": "fma"}),
        dict(base, index_bitwidth=32),
    ]
    keys = {tc.compile_key(**v, env=env) for v in variants}
    assert len(keys) == len(variants) and key not in keys
    other_env = dict(env, assembler=env["assembler"] + "x")
    assert tc.compile_key(**base, env=other_env) != key
    # with line info the absolute path can reach the PTX, so it counts
    assert tc.compile_key(b"k", "a/k.mlir", "sm_80", lineinfo=True, env=env) != \
        tc.compile_key(b"k", "b/k.mlir", "sm_80", lineinfo=True, env=env)


def test_environment_names_versions_plugins_and_assembler(clean_env):
    env = tc.environment()
    from tilecore.entry_points import version

    assert env["tilecore"][0] == version("tilecore")
    assert "xtc-mlir-python-bindings" in env["tools"] and "nvidia-cuda-nvcc" in env["tools"]
    names = [p[0] for p in env["plugins"]]
    assert names == sorted(names)
    for p in env["plugins"]:
        assert p[3] == version(p[2])
    assert env["assembler"]
    # the same selection rules as the plugin manager
    if names:
        clean_env.setenv("TILECORE_DISABLED_PLUGINS", names[0])
        assert [p[0] for p in tc.environment()["plugins"]] == names[1:]
        clean_env.setenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "1")
        assert tc.environment()["plugins"] == []
        clean_env.delenv("TILECORE_DISABLED_PLUGINS")  # (with one plugin installed it was names[-1] too)
        assert [p[0] for p in tc.environment(load=[names[-1]])["plugins"]] == [names[-1]]
    # a plugin loaded by module name has no version the metadata can tell: not cacheable
    assert tc.environment(load=["tilecore_fixture_thirdparty.plugin"]) is None


def test_environment_changes_with_a_plugin_and_its_version(clean_env, with_thirdparty, tmp_path):
    env = tc.environment()
    entry = next(p for p in env["plugins"] if p[0] == "thirdparty")
    assert entry[2:4] == ["tilecore-fixture-thirdparty", "0.0.1"]
    clean_env.setenv("TILECORE_DISABLED_PLUGINS", "thirdparty")
    without = tc.environment()
    assert "thirdparty" not in [p[0] for p in without["plugins"]]
    assert tc.environment_digest(without) != tc.environment_digest(env)
    clean_env.delenv("TILECORE_DISABLED_PLUGINS")
    # the same plugin, another version: a copy of the site folder with its metadata changed, ahead on sys.path
    site = tmp_path / "site2"
    shutil.copytree(with_thirdparty, site)
    meta = next(site.glob("tilecore_fixture_thirdparty-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.0.1", "Version: 0.0.2"))
    clean_env.syspath_prepend(str(site))
    bumped = tc.environment()
    assert next(p for p in bumped["plugins"] if p[0] == "thirdparty")[3] == "0.0.2"
    assert tc.environment_digest(bumped) != tc.environment_digest(env)


def test_environment_changes_with_the_assembler(clean_env, tmp_path):
    before = tc.environment()
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.0, V99.0.1'\n")
    fake.chmod(0o755)
    clean_env.setenv("TILECORE_PTXAS", str(fake))
    after = tc.environment()
    assert after["assembler"] != before["assembler"] and str(fake) in after["assembler"]


def test_source_tree_stamp_follows_edits(tmp_path, monkeypatch):
    """A package run from a source tree (editable install, checkout on sys.path): its files count."""
    src = tmp_path / "proj" / "src" / "mypkg_stamp"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("x = 1\n")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "junk.pyc").write_bytes(b"ignored")
    monkeypatch.syspath_prepend(str(src.parent))
    first = tc.source_stamp("mypkg_stamp")
    assert first.startswith(f"source:{src}:1:")
    (src / "__init__.py").write_text("x = 22\n")
    assert tc.source_stamp("mypkg_stamp") != first
    assert "mypkg_stamp" not in sys.modules  # located, not imported
    # installed into site-packages: the distribution's version says it all
    site = tmp_path / "lib" / "site-packages"
    shutil.copytree(src, site / "mypkg_site")
    monkeypatch.syspath_prepend(str(site))
    assert tc.source_stamp("mypkg_site") == "" and tc.source_stamp("no_such_pkg_xyz") == ""
    # tilecore itself: run from this checkout (editable install) its files count; installed from a wheel
    # (the tox environments) its version does
    here = os.path.dirname(tc.__file__)
    if "site-packages" in here:
        assert tc.source_stamp("tilecore") == ""
    else:
        assert tc.source_stamp("tilecore").startswith(f"source:{here}:")


def test_parse_size():
    assert tc.parse_size("1G") == 1 << 30 and tc.parse_size("512MiB") == 512 << 20
    assert tc.parse_size("64k") == 64 << 10 and tc.parse_size("1000") == 1000 and tc.parse_size("1.5K") == 1536
    with pytest.raises(Exception, match="bad size"):
        tc.parse_size("lots")


# -- the store --------------------------------------------------------------------------------------
def test_put_get_bytes_and_text(cache_dir):
    c = tc.CompileCache()
    assert c.directory == str(cache_dir)
    assert c.get("ab" * 32) is None
    assert c.put("ab" * 32, b"\x7fELF\x00binary", {"target": "sm_80", "kernels": ["k (1 params)"]})
    assert c.put("cd" * 32, "PTX text é", {"target": "sm_90a"})
    hit = c.get("ab" * 32)
    assert hit.data == b"\x7fELF\x00binary" and hit.meta["target"] == "sm_80" and hit.meta["kernels"] == ["k (1 params)"]
    assert c.get("cd" * 32).data == "PTX text é"
    info = c.info()
    assert info["entries"] == 2 and info["bytes"] > 0 and info["limit"] == tc.DEFAULT_LIMIT


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "header"])
def test_corrupt_entry_is_a_miss_and_rewritten(cache_dir, damage):
    c = tc.CompileCache()
    key = "ef" * 32
    c.put(key, b"A" * 1000, {"target": "sm_80"})
    path = c._path(key)
    raw = open(path, "rb").read()
    if damage == "truncate":
        raw = raw[:-10]
    elif damage == "flip":
        raw = raw[:-1] + bytes([raw[-1] ^ 1])
    elif damage == "magic":
        raw = b"X" + raw[1:]
    else:
        raw = raw.replace(b'"size": 1000', b'"size": 99')
    open(path, "wb").write(raw)
    assert c.get(key) is None
    c.put(key, b"A" * 1000, {"target": "sm_80"})
    assert c.get(key).data == b"A" * 1000


def test_lru_eviction(cache_dir):
    c = tc.CompileCache(limit=10_000)
    keys = [f"{i:02x}" * 32 for i in range(8)]
    for i, k in enumerate(keys[:6]):  # ~1.2 KB each, older first
        c.put(k, bytes([i]) * 1000)
        os.utime(c._path(k), (1000 + i, 1000 + i))
    assert c.get(keys[0]) is not None  # the oldest, used now: most recent
    for k in keys[6:]:
        c.put(k, b"z" * 3000)  # over 10 kB: evict to 9 kB, least recently used first
    left = {k for k in keys if os.path.exists(c._path(k))}
    assert keys[0] in left and keys[6] in left and keys[7] in left
    assert keys[1] not in left and keys[2] not in left
    info = c.info()
    assert info["bytes"] <= 10_000
    assert int(open(os.path.join(c.root, "usage")).read()) == info["bytes"]


def test_concurrent_writers_two_processes(cache_dir):
    """Two processes write the same and different keys at once into a small cache (eviction under way):
    every entry left is whole, the bookkeeping matches the files, no temporary file remains."""
    script = textwrap.dedent("""
        import sys
        from tilecore.cache import CompileCache
        c = CompileCache(limit=200_000)
        who = sys.argv[1]
        for i in range(150):
            c.put(f"{i % 40:064x}", bytes([i % 251]) * 5000, {"n": i % 40})  # shared keys
            c.put(f"{who}{i:063x}", b"x" * 3000, {"who": who})               # own keys
            e = c.get(f"{(i * 7) % 40:064x}")
            assert e is None or e.data == bytes([e.data[0]]) * 5000
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, w], env=dict(os.environ)) for w in "ab"]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    c = tc.CompileCache(limit=200_000)
    entries = c._entries()
    assert entries and all(not os.path.basename(p).startswith(".tmp") for p, _, _ in entries)
    for path, _, _ in entries:
        assert c.get(os.path.basename(path)) is not None, path
    total = sum(s for _, s, _ in entries)
    assert total <= 200_000
    assert int(open(os.path.join(c.root, "usage")).read()) == total


# -- the command line -------------------------------------------------------------------------------
HIT_PROBE = textwrap.dedent("""
    import sys
    from tilecore.cli import main
    rc = main(sys.argv[1:])
    print("MLIR-IMPORTED" if "mlir" in sys.modules else "NO-MLIR", file=sys.stderr)
    sys.exit(rc)
""")


def _probe(*args):
    return subprocess.run([sys.executable, "-c", HIT_PROBE, *args], capture_output=True, text=True,
                          env=dict(os.environ))


@needs_gpu_nvvm
def test_cli_hit_imports_no_mlir_and_prints_the_same_summary(cache_dir, tmp_path):
    out1, out2 = tmp_path / "a.cubin", tmp_path / "b.cubin"
    miss = _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-o", str(out1))
    assert miss.returncode == 0, miss.stderr
    assert "MLIR-IMPORTED" in miss.stderr
    hit = _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-o", str(out2))
    assert hit.returncode == 0, hit.stderr
    assert "NO-MLIR" in hit.stderr
    assert out1.read_bytes() == out2.read_bytes()
    assert miss.stdout.replace(str(out1), "OUT") == hit.stdout.replace(str(out2), "OUT")
    assert f"wrote {out2} (cubin, {len(out2.read_bytes())} bytes) for sm_90a; kernels: vadd (4 params)" in hit.stdout
    # PTX to stdout from the cache: the same bytes as compiled
    p1 = run_cli("compile", VADD_GPU, "--emit", "ptx", "-o", "-")
    p2 = _probe("compile", VADD_GPU, "--emit", "ptx", "-o", "-")
    assert p1.returncode == p2.returncode == 0 and p1.stdout == p2.stdout and "NO-MLIR" in p2.stderr
    # --no-cache and the inspection flags run the pipeline
    assert "MLIR-IMPORTED" in _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-o", str(out2),
                                     "--no-cache").stderr
    timed = _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-o", str(out2), "--timing")
    assert "stage timing report" in timed.stderr and "MLIR-IMPORTED" in timed.stderr
    # another option is another entry
    assert "MLIR-IMPORTED" in _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-O2", "-o", str(out2)).stderr
    assert "NO-MLIR" in _probe("compile", VADD_GPU, "--gpu-name", "sm_90a", "-O2", "-o", str(out2)).stderr


@needs_gpu_nvvm
def test_cli_corrupt_entry_is_recompiled_and_rewritten(cache_dir, tmp_path):
    out = tmp_path / "k.cubin"
    assert run_cli("compile", VADD_GPU, "-o", str(out)).returncode == 0
    good = out.read_bytes()
    c = tc.CompileCache()
    (path, _, _), = c._entries()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    proc = _probe("compile", VADD_GPU, "-o", str(out))
    assert proc.returncode == 0 and "MLIR-IMPORTED" in proc.stderr and out.read_bytes() == good
    assert c.get(os.path.basename(path)).data == good
    assert "NO-MLIR" in _probe("compile", VADD_GPU, "-o", str(out)).stderr


@needs_gpu_nvvm
def test_cli_cache_disabled_by_env(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TILECORE_NO_CACHE", "1")
    out = tmp_path / "k.cubin"
    assert run_cli("compile", VADD_GPU, "-o", str(out)).returncode == 0
    assert not cache_dir.exists() or tc.CompileCache().info()["entries"] == 0


@needs_gpu_nvvm
def test_cli_cache_info_and_clear(cache_dir, tmp_path):
    info = run_cli("cache", "info")
    assert info.returncode == 0
    assert f"directory: {cache_dir}" in info.stdout and "entries:   0" in info.stdout
    assert "limit:     1.0 GiB (1073741824 bytes)" in info.stdout
    for gpu in ("sm_80", "sm_90a"):
        assert run_cli("compile", VADD_GPU, "--gpu-name", gpu, "-o", str(tmp_path / f"{gpu}.cubin")).returncode == 0
    data = json.loads(run_cli("cache", "info", "--json", env={"TILECORE_CACHE_SIZE": "64M"}).stdout)
    assert data["entries"] == 2 and data["bytes"] > 2 * 3000 and data["limit"] == 64 << 20
    assert data["directory"] == str(cache_dir)
    clear = run_cli("cache", "clear")
    assert clear.returncode == 0
    assert f"removed 2 cache entries ({tc.format_bytes(data['bytes'])}) from {cache_dir}" in clear.stdout
    assert "entries:   0" in run_cli("cache", "info").stdout
    bad = run_cli("cache", "info", env={"TILECORE_CACHE_SIZE": "huge"})
    assert bad.returncode == 1 and bad.stderr.startswith("error: TILECORE_CACHE_SIZE: bad size 'huge'")
    assert "Traceback" not in bad.stderr
