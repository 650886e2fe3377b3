"""Entry points and versions of installed distributions, read from their metadata folders.

``importlib.metadata`` costs 30-60 ms to import here (it brings in the email package): more than
any other part of tilecore's start-up but the MLIR libraries, for every ``tilecore compile``. The
plugin manager needs only one group's entry points and each distribution's name and version,
which this module reads directly: for every directory on ``sys.path``, each
``<name>-<version>.dist-info`` (or ``.egg-info``) folder's ``entry_points.txt`` and the ``Name`` /
``Version`` headers of its ``METADATA`` (``PKG-INFO``). As in importlib.metadata, the first
distribution of a name on ``sys.path`` wins. Zip files on ``sys.path`` are not searched.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from functools import cached_property


class Distribution:
    """An installed distribution: its metadata folder; ``name`` and ``version`` from its metadata
    (read on first use)."""

    def __init__(self, path: str):
        self.path = path
        stem = os.path.basename(path).rsplit(".", 1)[0]
        self.key = _normalize(stem.split("-", 1)[0])  # the folder name's (escaped) project name
        self._stem_version = stem.split("-", 1)[1] if "-" in stem else ""

    @cached_property
    def _headers(self) -> dict[str, str]:
        """The ``Name`` / ``Version`` headers of the metadata file (the lines before the first blank one)."""
        out: dict[str, str] = {}
        for fname in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self.path, fname), encoding="utf-8") as f:
                    for line in f:
                        if not line.strip():
                            break
                        key, sep, value = line.partition(":")
                        if sep and key in ("Name", "Version"):
                            out.setdefault(key, value.strip())
            except OSError:
                continue
            break
        return out

    @property
    def name(self) -> str:
        return self._headers.get("Name", self.key)

    @property
    def version(self) -> str:
        return self._headers.get("Version", self._stem_version)

    def entry_points(self, group: str) -> list[EntryPoint]:
        """The entry points this distribution declares in ``group`` (``[group]`` of entry_points.txt)."""
        try:
            with open(os.path.join(self.path, "entry_points.txt"), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        out, section = [], None
        for line in lines:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
            elif section == group and "=" in line:
                name, value = (x.strip() for x in line.split("=", 1))
                out.append(EntryPoint(name, value.split("[", 1)[0].strip(), self))
        return out


class EntryPoint:
    """``name = module[:attribute]`` declared by ``dist``.

    A plain class, not a dataclass: importing :mod:`dataclasses` (it brings in :mod:`inspect` and
    :mod:`ast`) costs ~6 ms, a tenth of a ``tilecore compile`` answered by the compile cache.
    """

    __slots__ = ("name", "value", "dist")

    def __init__(self, name: str, value: str, dist: Distribution):
        self.name, self.value, self.dist = name, value, dist

    def __eq__(self, other) -> bool:
        return isinstance(other, EntryPoint) and (self.name, self.value, self.dist) == (other.name, other.value, other.dist)

    def __hash__(self) -> int:
        return hash((self.name, self.value, self.dist))

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, dist={self.dist.path!r})"

    def load(self):
        """Import the module and return the object the entry point names."""
        module, _, attr = self.value.partition(":")
        obj = importlib.import_module(module.strip())
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
        return obj


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions() -> list[Distribution]:
    """Every distribution found on ``sys.path``, the first of each name only."""
    seen: set[str] = set()
    out = []
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a missing folder, a zip file
            continue
        for d in names:
            if d.endswith((".dist-info", ".egg-info")):
                dist = Distribution(os.path.join(entry or ".", d))
                if dist.key not in seen:
                    seen.add(dist.key)
                    out.append(dist)
    return out


def entry_points(group: str, dists: list[Distribution] | None = None) -> list[EntryPoint]:
    """Every entry point in ``group``, in ``sys.path`` order (of ``dists`` when given: one scan for
    several questions)."""
    return [ep for dist in (distributions() if dists is None else dists) for ep in dist.entry_points(group)]


def version(name: str, dists: list[Distribution] | None = None) -> str:
    """The version of distribution ``name`` ("" when it is not installed)."""
    key = _normalize(name)
    return next((d.version for d in (distributions() if dists is None else dists) if d.key == key), "")
