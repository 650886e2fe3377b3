"""The sm_100 family targets (Blackwell and newer): name, PTX ISA version."""

from tilecore.targets import Target

SM100_TARGETS = [
    ("sm_100", 86),
    ("sm_100a", 86),
    ("sm_103a", 88),
    ("sm_120", 87),
    ("sm_120a", 87),
]


def sm100_targets() -> list[Target]:
    return [Target.make(name, ptx) for name, ptx in SM100_TARGETS]
