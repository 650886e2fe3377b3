"""IRDL definitions of the ``cute`` and ``cute_nvgpu`` companion dialects (first ops)."""

from tilecore.dialects import DialectDef

CUTE_NVGPU_IRDL = """
irdl.dialect @cute_nvgpu {
  irdl.operation @fence_view_async_shared {
  }
  irdl.operation @elect_one {
    %0 = irdl.is i1
    irdl.results(pred: %0)
  }
  irdl.operation @tcgen05_fence_before_thread_sync {
  }
  irdl.operation @tcgen05_fence_after_thread_sync {
  }
}
"""

CUTE_IRDL = """
irdl.dialect @cute {
  irdl.operation @thread_idx {
    %0 = irdl.is i32
    irdl.results(idx: %0)
  }
}
"""


def dialects() -> list[DialectDef]:
    return [DialectDef("cute", CUTE_IRDL), DialectDef("cute_nvgpu", CUTE_NVGPU_IRDL)]
