"""Random cuTile program testing (issue 13).

A seeded generator (:mod:`.generator`) writes a ``@ct.kernel`` together with a numpy model of
it; :mod:`.runner` exports the kernel to TileIR bytecode with cuTile, compiles it with tilecore
for each SM, runs it in the CPU emulator (in a child process, so a crash is caught) and compares
with the model under dtype-aware tolerances (:mod:`.compare`). ``bench/fuzz_programs.py`` is the
command line; ``tests/fuzz/test_fuzz_programs.py`` the CI test.

Modules, one concept each:

- :mod:`.dtypes`: the dtype table (cuTile name, numpy storage, kind, SM floor, input range).
- :mod:`.npsem`: numpy models of tile semantics (padded tile loads, clipped stores, bf16 / f8
  rounding, integer division, gather / scatter, mma).
- :mod:`.menu`: the op menu: every item knows its cuTile source, its numpy model and when it applies.
- :mod:`.generator`: program model and rendering to Python source.
- :mod:`.compare`: the comparison of kernel outputs with the model.
- :mod:`.runner`: export / compile / emulate / classify / minimise / reproducers.
"""
