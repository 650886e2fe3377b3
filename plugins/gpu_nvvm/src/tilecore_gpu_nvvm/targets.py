"""The base targets (Ampere, Ada, Hopper)."""

from tilecore.targets import Target

# name, PTX ISA version (major*10+minor) the NVPTX back end emits for it. Ada and Hopper take PTX 8.4:
# mma.sync with e4m3 / e5m2 operands needs it (the packed f8x2 conversions need 8.1, the tensor-map
# proxy fences and tensormap.replace on Hopper 8.3).
BASE_TARGETS = [
    ("sm_80", 80),
    ("sm_86", 80),
    ("sm_89", 84),
    ("sm_90", 84),
    ("sm_90a", 84),
]


def base_targets() -> list[Target]:
    return [Target.make(name, ptx) for name, ptx in BASE_TARGETS]
