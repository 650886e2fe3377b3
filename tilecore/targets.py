"""Compile targets: ``sm_XX`` / ``sm_XXa`` with compute capability, PTX version and features.

Targets are contributed by plugins (``tilecore_register_targets``): the base
plugin ``gpu_nvvm`` brings sm_80 .. sm_90a, the ``sm100`` plugin brings sm_100a
and newer. The core only knows which plugin to recommend for a name it does not
have (:data:`TARGET_PROVIDERS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import TilecoreError

_NAME = re.compile(r"^sm_(\d+)(a|f)?$")


@dataclass(frozen=True)
class Target:
    """One GPU target.

    ``name``: ``sm_90a``; ``cc``: compute capability as major*10+minor (90);
    ``arch_specific``: the ``a`` suffix (features that only this exact SM has,
    WGMMA on sm_90a, tcgen05 on sm_100a); ``ptx_version``: PTX ISA version as
    major*10+minor (80 -> ``+ptx80``); ``features``: extra LLVM feature flags.
    """

    name: str
    cc: int
    arch_specific: bool = False
    ptx_version: int = 80
    features: tuple[str, ...] = ()
    plugin: str = field(default="", compare=False)

    @property
    def feature_string(self) -> str:
        """The LLVM NVPTX feature string, ``+ptx80`` plus any extra features."""
        return ",".join([f"+ptx{self.ptx_version}", *self.features])

    @property
    def ptxas_arch(self) -> str:
        """The ``-arch`` value for ptxas (same spelling as the target name)."""
        return self.name

    @property
    def supports_clusters(self) -> bool:
        """Thread-block clusters exist from sm_90 on."""
        return self.cc >= 90

    def at_least(self, cc: int) -> bool:
        """True when this target's compute capability is >= ``cc``."""
        return self.cc >= cc

    @classmethod
    def make(cls, name: str, ptx_version: int, features: tuple[str, ...] = ()) -> "Target":
        """Build a Target from its name (``sm_90a`` -> cc 90, arch-specific)."""
        m = _NAME.match(name)
        if not m:
            raise ValueError(f"not a target name: {name!r}")
        return cls(name=name, cc=int(m.group(1)), arch_specific=m.group(2) == "a",
                   ptx_version=ptx_version, features=tuple(features))


# Which installable plugin provides which compute capabilities, for the message
# given when a target is unknown or its plugin is not installed.
TARGET_PROVIDERS: list[tuple[range, str]] = [
    (range(80, 100), "gpu_nvvm"),
    (range(100, 130), "sm100"),
]


def parse_target_name(name: str) -> str:
    """Normalise user spellings (``sm90a``, ``SM_90A``, ``90a``) to ``sm_90a``."""
    text = name.strip().lower()
    if text.startswith("sm") and not text.startswith("sm_"):
        text = "sm_" + text[2:]
    if text[:1].isdigit():
        text = "sm_" + text
    return text


def resolve_target(name: str, registry: dict[str, Target]) -> Target:
    """Look a target up by name; unknown names say which plugin to install."""
    norm = parse_target_name(name)
    if norm in registry:
        return registry[norm]
    m = _NAME.match(norm)
    known = ", ".join(sorted(registry, key=lambda n: (registry[n].cc, n))) or "none"
    if m:
        cc = int(m.group(1))
        for ccs, plugin in TARGET_PROVIDERS:
            if cc in ccs:
                raise TilecoreError(
                    f"unknown target '{norm}': it is provided by the '{plugin}' plugin, which is not "
                    f"installed or not loaded (install tilecore[{plugin}]); available targets: {known}")
    raise TilecoreError(f"unknown target '{name}'; available targets: {known}")
