"""The base targets (Ampere, Ada, Hopper)."""

from tilecore.targets import Target

# name, PTX ISA version (major*10+minor) the NVPTX back end emits for it. Hopper takes PTX 8.3:
# the tensor-map proxy fences and tensormap.replace (TMA descriptor rebind) need it.
BASE_TARGETS = [
    ("sm_80", 80),
    ("sm_86", 80),
    ("sm_89", 81),  # the packed f8x2 conversions (Ada) need PTX 8.1 in the NVPTX back end
    ("sm_90", 83),
    ("sm_90a", 83),
]


def base_targets() -> list[Target]:
    return [Target.make(name, ptx) for name, ptx in BASE_TARGETS]
