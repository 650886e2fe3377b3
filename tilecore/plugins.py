"""The plugin manager: discovery, blocking, provenance, isolation of broken plugins.

Plugins are found through the entry point group ``tilecore.plugins``
(``<name> = "<module>"``). ``TILECORE_DISABLE_PLUGIN_AUTOLOAD=1`` turns discovery
off; ``TILECORE_DISABLED_PLUGINS=a,b`` blocks named plugins; ``load=[...]``
(the CLI's ``-p NAME``) loads a plugin explicitly, by entry point name or module.

Every hook is called plugin by plugin, so a plugin that raises or returns
something malformed is reported (:class:`LoadProblem`: plugin, hook, reason) and
skipped, and the others keep working. Duplicate stage, target, atom, dialect or
input-format names are an error naming both plugins.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError

GROUP = "tilecore.plugins"


@dataclass
class PluginInfo:
    """A loaded plugin: its name, module and distribution (name, version)."""

    name: str
    module: str
    dist: str = ""
    version: str = ""
    registers: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class LoadProblem:
    """A plugin that failed: which hook (or ``import``) and why."""

    plugin: str
    hook: str
    reason: str

    def render(self) -> str:
        return f"warning: plugin '{self.plugin}' skipped in {self.hook}: {self.reason}"




class PluginManager:
    """Loads plugins and collects what they register, with provenance."""

    def __init__(self, load: list[str] | None = None, autoload: bool | None = None,
                 disabled: list[str] | None = None):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.problems: list[LoadProblem] = []
        if autoload is None:
            autoload = os.environ.get("TILECORE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes")
        env_disabled = [s.strip() for s in os.environ.get("TILECORE_DISABLED_PLUGINS", "").split(",") if s.strip()]
        self.disabled = set(env_disabled) | set(disabled or [])
        self._cache: dict[Any, Any] = {}
        from .entry_points import distributions, entry_points, version  # not importlib.metadata: see there

        # One scan of sys.path for the core's version and the plugins; before the core plugin's import,
        # which imports MLIR (a cold compile's libraries may still be loading: tilecore.preload).
        dists = distributions()
        from . import core_plugin

        self._register(core_plugin, PluginInfo("core", core_plugin.__name__, "tilecore", version("tilecore", dists)))
        eps = {ep.name: ep for ep in entry_points(GROUP, dists)}
        wanted = list(load or [])
        if autoload:
            wanted = sorted(eps) + [w for w in wanted if w not in eps]
        for name in wanted:
            if name in self.disabled or name in self.plugins:
                continue
            self._load_one(name, eps.get(name))

    # -- loading ------------------------------------------------------------------
    def _load_one(self, name: str, ep) -> None:
        try:
            if ep is not None:
                module = ep.load()
                dist = ep.dist.name if ep.dist is not None else ""
                version = ep.dist.version if ep.dist is not None else ""
                info = PluginInfo(name, ep.value, dist, version)
            else:
                module = importlib.import_module(name)
                info = PluginInfo(name.rsplit(".", 1)[-1], name, "", getattr(module, "__version__", ""))
        except Exception as e:  # noqa: BLE001 - a broken plugin never takes the core down
            self.problems.append(LoadProblem(name, "import", f"{type(e).__name__}: {e}"))
            return
        self._register(module, info)

    def _register(self, module, info: PluginInfo) -> None:
        try:
            self.pm.register(module, name=info.name)
        except Exception as e:  # noqa: BLE001 - pluggy validation errors (bad hookimpl names ...)
            self.problems.append(LoadProblem(info.name, "register", f"{type(e).__name__}: {e}"))
            return
        self.plugins[info.name] = info

    def block(self, name: str) -> None:
        """Unregister a loaded plugin (``TILECORE_DISABLED_PLUGINS`` at run time)."""
        self.pm.unregister(name=name)
        self.plugins.pop(name, None)
        self._cache.clear()

    # -- calling hooks --------------------------------------------------------------
    def call(self, hook: str, expect: type | tuple[type, ...] | None, **kwargs) -> list[tuple[str, Any]]:
        """Call ``hook`` on every plugin; return (plugin, item) pairs of valid items.

        A plugin whose hook raises, returns a non-list, or returns an item that is
        not an instance of ``expect`` is reported in :attr:`problems` and skipped.
        """
        out: list[tuple[str, Any]] = []
        caller = getattr(self.pm.hook, hook)
        for impl in reversed(caller.get_hookimpls()):
            pname = self.pm.get_name(impl.plugin) or "?"
            try:
                args = {k: kwargs[k] for k in impl.argnames}
                res = impl.function(**args)
            except Exception as e:  # noqa: BLE001
                self._problem(pname, hook, f"raised {type(e).__name__}: {e}")
                continue
            if res is None:
                continue
            if expect is None:
                continue
            if not isinstance(res, (list, tuple)):
                self._problem(pname, hook, f"returned {type(res).__name__}, expected a list")
                continue
            bad = [r for r in res if not isinstance(r, expect)]
            if bad:
                names = expect.__name__ if isinstance(expect, type) else "/".join(t.__name__ for t in expect)
                self._problem(pname, hook, f"returned {type(bad[0]).__name__} {bad[0]!r:.60}, expected {names}")
                continue
            for r in res:
                if hasattr(r, "plugin") and not getattr(r, "plugin", ""):
                    try:
                        r.plugin = pname
                    except Exception:  # noqa: BLE001 - frozen dataclass
                        object.__setattr__(r, "plugin", pname)
                out.append((pname, r))
        return out

    def _problem(self, plugin: str, hook: str, reason: str) -> None:
        p = LoadProblem(plugin, hook, reason)
        if all(vars(p) != vars(q) for q in self.problems):
            self.problems.append(p)

    def _unique(self, kind: str, items: list[tuple[str, Any]], overrides: bool = False) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for pname, item in items:
            key = item.name
            if key in seen:
                other = seen[key].plugin
                raise PluginError(f"duplicate {kind} '{key}' registered by plugins '{other}' and '{pname}'")
            seen[key] = item
        if overrides:
            for item in list(seen.values()):
                target = getattr(item, "overrides", None)
                if target and target in seen:
                    del seen[target]
        return seen

    # -- registries -------------------------------------------------------------------
    def _cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def targets(self) -> dict:
        from .targets import Target

        return self._cached("targets", lambda: self._unique(
            "target", self.call("tilecore_register_targets", Target)))

    def stages(self) -> dict:
        from .stages import Stage

        return self._cached("stages", lambda: self._unique(
            "stage", self.call("tilecore_register_stages", Stage)))

    def dialects(self) -> dict:
        from .dialects import DialectDef

        return self._cached("dialects", lambda: self._unique(
            "dialect", self.call("tilecore_register_dialects", DialectDef)))

    def input_formats(self) -> list:
        from .inputs import InputFormat

        return self._cached("inputs", lambda: list(self._unique(
            "input format", self.call("tilecore_register_input_formats", InputFormat)).values()))

    def emulator_ops(self) -> dict:
        """The emulator extensions (:class:`~tilecore.emulate.optable.EmulatorOps`) by name."""
        from .emulate.optable import EmulatorOps

        return self._cached("emulator_ops", lambda: self._unique(
            "emulator extension", self.call("tilecore_register_emulator_ops", EmulatorOps)))

    def atoms(self, target) -> dict:
        from .atoms import Atom

        return self._cached(("atoms", target), lambda: self._unique(
            "atom", self.call("tilecore_register_atoms", Atom, target=target), overrides=True))

    def patterns(self, stage: str, target, options) -> list:
        from .conversion import Pattern

        out = []
        for pname, p in self.call("tilecore_register_patterns", Pattern, stage=stage, target=target,
                                  options=options):
            if not isinstance(p.root, str) or "." not in p.root:
                self._problem(pname, "tilecore_register_patterns",
                              f"pattern {p.name} has no root op name (root={p.root!r})")
                continue
            out.append(p)
        return out

    def native_passes(self, stage: str, target, options) -> list:
        from .conversion import NativePass

        return [p for _, p in self.call("tilecore_register_native_passes", NativePass,
                                        stage=stage, target=target, options=options)]

    def type_converter(self, options=None):
        """A fresh shared type converter extended by every plugin's conversions."""
        from .typeconv import TypeConverter

        conv = TypeConverter(index_bitwidth=getattr(options, "index_bitwidth", 64))
        self.call("tilecore_register_type_conversions", None, converter=conv)
        return conv

    def make_context(self):
        """An MLIR context with every plugin dialect loaded."""
        from .dialects import make_context

        def skip(defn, reason):
            self._problem(defn.plugin, "tilecore_register_dialects", reason)

        return make_context(list(self.dialects().values()), on_error=skip)

    def describe(self) -> list[dict]:
        """What each plugin registers (for ``tilecore plugins``)."""
        from .options import CompileOptions

        reg: dict[str, dict[str, list[str]]] = {n: {} for n in self.plugins}

        def add(plugin, kind, name):
            reg.setdefault(plugin, {}).setdefault(kind, []).append(name)

        for t in self.targets().values():
            add(t.plugin, "targets", t.name)
        for s in self.stages().values():
            add(s.plugin, "stages", s.name)
        for d in self.dialects().values():
            add(d.plugin, "dialects", d.name)
        for f in self.input_formats():
            add(f.plugin, "input_formats", f.name)
        tgts = sorted(self.targets().values(), key=lambda t: -t.cc)
        if tgts:
            for a in self.atoms(tgts[0]).values():
                add(a.plugin, "atoms", a.name)
            opts = CompileOptions()
            for s in self.stages().values():
                for p in self.patterns(s.name, tgts[0], opts):
                    add(p.plugin, "patterns", f"{s.name}:{p.root}:{p.name}")
        out = []
        for name, info in self.plugins.items():
            out.append({"name": name, "module": info.module, "distribution": info.dist,
                        "version": info.version, "registers": {k: sorted(v) for k, v in reg.get(name, {}).items()}})
        return out


_DEFAULT: PluginManager | None = None


def get_plugin_manager(load: list[str] | None = None, refresh: bool = False) -> PluginManager:
    """The process-wide plugin manager (created on first use)."""
    global _DEFAULT
    if _DEFAULT is None or refresh or load:
        _DEFAULT = PluginManager(load=load)
    return _DEFAULT
