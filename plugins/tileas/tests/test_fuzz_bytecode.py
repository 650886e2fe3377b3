"""Mutated real bytecode is either read or rejected with a located error: never anything else."""

import glob
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tileas_test_paths import VISIBLE_CORPUS
from tilecore_tileas.bytecode import read_tileir

from tilecore.errors import TilecoreError
from tilecore.plugins import get_plugin_manager

FILES = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(VISIBLE_CORPUS, "*.tileirbc")))]
CTX = get_plugin_manager().make_context()


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(FILES)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, len(data) - 1)) if data else 0
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 8))]
        else:
            del data[pos:]
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_bytecode_reads_or_fails_cleanly(data):
    try:
        read_tileir(data, "fuzz.tileirbc", CTX)
    except TilecoreError as e:
        assert e.location and (re.fullmatch(r"fuzz\.tileirbc:\d+", e.location) or ":" in e.location)
        assert e.message and "Traceback" not in e.message
