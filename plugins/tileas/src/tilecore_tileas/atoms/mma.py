"""tileas' side of the MMA atom interface (:mod:`tilecore.mma`): the built-in CUDA-core atom.

``tileas-select-atoms`` builds a :class:`~tilecore.mma.MmaRequest` per dot and picks the admissible
atom of kind ``mma`` and interface :data:`~tilecore.mma.MMA_INTERFACE` with the highest priority; it is
recorded as ``atom = #nv_tileas.atom<"name">`` and stage 4 lowers the dot with it
(:mod:`tilecore_tileas.stage4_tileas_to_llvm.dot`): the CUDA-core atom (:func:`fma_atom`, admissible for
every request, lowest priority) runs per-thread multiply-adds on the blocked layout; a warp-level
tensor-core atom (the ``cute`` plugin's ``mma.sm80.*``, a third party's) fixes the accumulator's
:class:`~tilecore_tileas.layout.fragment.Fragment` layout and is called per warp and K step.
"""

from __future__ import annotations

from tilecore.atoms import Atom
from tilecore.mma import MMA_INTERFACE, ROW_PAD_BYTES, MmaRequest, SmemOperand  # noqa: F401 (re-exported)


def is_tensor_core(atom) -> bool:
    return atom is not None and not atom.data.get("cuda_cores") and "inst" in atom.data


def _lower_fma(cg, *args):
    from ..stage4_tileas_to_llvm.dot import dot_fma

    return dot_fma(cg, *args)


def fma_atom() -> Atom:
    """The CUDA-core MMA atom: every element type, every shape, every target (lowest priority)."""
    return Atom("mma.cuda_core.fma", "mma", lower=_lower_fma, priority=-100,
                data={"interface": MMA_INTERFACE, "cuda_cores": True},
                description="per-thread multiply-add loop over K on the blocked layout (CUDA cores)")
