"""Targets: naming, compute capability, features, and the message for a missing arch plugin."""

from __future__ import annotations

import pytest

from tilecore.errors import TilecoreError
from tilecore.targets import Target, parse_target_name, resolve_target


def test_target_fields():
    t = Target.make("sm_90a", 80)
    assert (t.name, t.cc, t.arch_specific, t.ptx_version) == ("sm_90a", 90, True, 80)
    assert t.feature_string == "+ptx80"
    assert t.supports_clusters and t.at_least(90) and not t.at_least(100)
    s = Target.make("sm_80", 80)
    assert not s.arch_specific and not s.supports_clusters
    assert Target.make("sm_100a", 86, ("+foo",)).feature_string == "+ptx86,+foo"


@pytest.mark.parametrize("text", ["sm90a", "SM_90A", "90a", "sm_90a"])
def test_name_spellings(text):
    assert parse_target_name(text) == "sm_90a"


def test_unknown_blackwell_target_names_plugin_to_install():
    reg = {"sm_80": Target.make("sm_80", 80)}
    with pytest.raises(TilecoreError) as ei:
        resolve_target("sm_100a", reg)
    assert "install tilecore[sm100]" in ei.value.message
    assert "available targets: sm_80" in ei.value.message


def test_unknown_base_target_names_base_plugin():
    with pytest.raises(TilecoreError, match=r"install tilecore\[gpu_nvvm\]"):
        resolve_target("sm_86", {})


def test_garbage_target():
    with pytest.raises(TilecoreError, match="unknown target 'banana'"):
        resolve_target("banana", {})
