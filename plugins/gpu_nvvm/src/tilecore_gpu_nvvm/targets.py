"""The base targets (Ampere, Ada, Hopper)."""

from tilecore.targets import Target

# name, PTX ISA version (major*10+minor) the NVPTX back end emits for it.
BASE_TARGETS = [
    ("sm_80", 80),
    ("sm_86", 80),
    ("sm_89", 80),
    ("sm_90", 80),
    ("sm_90a", 80),
]


def base_targets() -> list[Target]:
    return [Target.make(name, ptx) for name, ptx in BASE_TARGETS]
