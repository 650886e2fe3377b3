"""The sm_100 family targets (Blackwell and newer): name, PTX ISA version."""

from tilecore.targets import Target

# PTX 9.0 everywhere: nvvm.blocksareclusters (.blocksareclusters, clustered kernels from tileas) needs it.
SM100_TARGETS = [
    ("sm_100", 90),
    ("sm_100a", 90),
    ("sm_103a", 90),
    ("sm_120", 90),
    ("sm_120a", 90),
]


def sm100_targets() -> list[Target]:
    return [Target.make(name, ptx) for name, ptx in SM100_TARGETS]
