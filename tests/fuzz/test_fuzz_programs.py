"""Random cuTile programs (issue 13): a fixed seed, 100 programs, each exported once, compiled (the
tensor-core templates for sm_80, sm_90a and sm_100a, the others for one of them in turn), run in the CPU
emulator and compared with its numpy model.

No program may mismatch, crash or be refused by the emulator, and tilecore may only reject what
``ALLOWED_REJECTIONS`` lists, except programs that use a feature of ``KNOWN_FAILURES`` (bugs being
fixed; each entry says which; empty the list as they are fixed). ``bench/fuzz_programs.py`` runs the
same check on any seeds and writes minimised reproducers.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")
pytest.importorskip("tilecore_sm100")

from fuzz import compare, runner  # noqa: E402
from fuzz.generator import generate  # noqa: E402

SEED = 20260
N_PROGRAMS = 100
SMS = ["sm_80", "sm_90a", "sm_100a"]

# Failures excused for programs that use a feature (a program's FEATURES; None: any program), with
# the bug behind it, optionally only when the failure text contains a marker. Empty it as the bugs
# get fixed.
#   feature                      marker in the failure (None: any)       bug
KNOWN_FAILURES: list[tuple[str | None, str | None, str]] = [
    # Fixed since they were listed (keep the shape of an entry for the next one):
    #   ("index_i64", None, "int64 index type fails to compile"), and likewise mma:tf32->f32, mma_batched,
    #   load_order, adv_slice_runtime, traversal_step_1 (the known bugs of issue 13's brief);
    #   found by this generator: ("loop", "'cuda_tile.continue' outside a 'for' or 'loop' body", "break /
    #   continue in a for"), ("store_bool" / "dtype:bool", "elements differ", "bool tiles bit-packed in
    #   memory"), (None, "float bits: varint exceeds 64 bits", "f64 max / min reduction identity unreadable"),
    #   ("mma_scaled_e8m0_pad", "elements differ", "e8m0 ZERO padding was 2**127: narrow_floats.encode wrapped
    #   below the smallest E8M0 value to the largest").
]

# Rejections by both compilers that are not tilecore bugs: message (normalised) -> reason.
ALLOWED_REJECTIONS: dict[str, str] = {}


def _excused(features: list[str], outcome: runner.Outcome) -> str | None:
    for feature, marker, bug in KNOWN_FAILURES:
        if (feature is None or feature in features) and (marker is None or marker in outcome.message):
            return bug
    return None


def _check(seed: int, work: str, sms=tuple(SMS), template: str | None = None) -> runner.ProgramResult:
    d = os.path.join(work, str(seed))
    try:
        r = runner.check_program(seed, list(sms), d, use_tileiras=False, template=template)
        r.source = ""
        return r
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_same_seed_same_program():
    assert generate(1234).render() == generate(1234).render()
    assert generate(1234).render() != generate(1235).render()
    sources = {generate(s).render() for s in range(30)}
    assert len(sources) == 30


def test_a_wrong_model_is_a_mismatch(tmp_path):
    """The comparison can fail: the same kernel against a model that is off by one (a program whose
    outputs are all compared exactly, so the test does not depend on tolerances)."""
    p = next(q for q in (generate(s, template="tiles") for s in range(1, 500))
             if q.min_sm == 80 and q.second_tile is None and all(c[0] == "exact" for c in q.checks.values()))
    src, bc, err = runner.prepare(p, str(tmp_path))
    assert err is None
    assert runner.isolated(runner.run_sm, src, bc, "sm_80").status == "ok"
    with open(src, "a") as fh:
        fh.write("\n_reference = reference\n\n\ndef reference(inp, S, T):\n"
                 "    out = _reference(inp, S, T)\n"
                 "    return {k: (~v if v.dtype == bool else v + 1) for k, v in out.items()}\n")
    o = runner.isolated(runner.run_sm, src, bc, "sm_80")
    assert o.status == "mismatched", o.message
    assert "elements differ" in o.message


def test_compare_tolerances():
    checks = {"a": ("exact", "i32"), "b": ("approx", "f16", 2.0, 1, 1, 0.0), "c": ("exact", "f32")}
    want = {"a": np.array([1, 2], np.int32), "b": np.array([1.0, 2.0], np.float16),
            "c": np.array([0.0, np.nan], np.float32)}
    got = {"a": np.array([1, 2], np.int32), "b": np.array([1.001, 2.0], np.float16),
           "c": np.array([-0.0, np.nan], np.float32)}
    assert compare.mismatches(got, want, checks) == []
    got["b"] = np.array([1.25, 2.0], np.float16)
    got["a"] = np.array([1, 3], np.int32)
    bad = compare.mismatches(got, want, checks)
    assert len(bad) == 2 and bad[0].startswith("a: 1/2") and bad[1].startswith("b: 1/2")


def test_mma_scaled_model_and_dot_check():
    """The model of ct.mma_scaled on cuTile's docstring example (ones, scales 2: 64 * 2 * 2 = 256) and a
    block of 16 with per-row / per-column scales; the "dot" check allows nterms * 2**-24 * sum(|terms|) and no
    more, and nothing where every term is 0."""
    from fuzz import npsem

    got = npsem.mma_scaled(np.ones((2, 64)), np.full((2, 2), 2.0), np.ones((64, 2)), np.full((2, 2), 2.0),
                           np.zeros((2, 2)))
    assert got.tolist() == [[256.0, 256.0], [256.0, 256.0]]
    a, b = np.arange(32.0).reshape(1, 32), np.ones((32, 1))
    sa, sb = np.array([[1.0, 0.5]]), np.array([[4.0], [2.0]])
    assert npsem.mma_scaled(a, sa, b, sb, np.ones((1, 1)))[0, 0] == 4 * sum(range(16)) + sum(range(16, 32)) + 1
    assert npsem.decode(np.array([0, 127, 130, 254], np.uint8), "f8e8m0").tolist() == [2.0**-127, 1, 8, 2.0**127]
    assert npsem.decode(np.array([1, 7, 9, 15], np.uint8), "f4e2m1").tolist() == [0.5, 6, -0.5, -6]
    want = {"y": np.array([1.0, 0.0], np.float32), "y_abs": np.array([1000.0, 0.0])}
    checks = {"y": ("dot", "f32", 100)}
    tol = 100 * 2.0**-24 * 1000
    assert compare.mismatches({"y": np.array([1 + 0.9 * tol, 0], np.float32)}, want, checks) == []
    assert compare.mismatches({"y": np.array([1 + 1.5 * tol, 0], np.float32)}, want, checks)
    assert compare.mismatches({"y": np.array([1, 1e-30], np.float32)}, want, checks)
    codes = npsem.fill_array("scales", (400,), "f8e4m3", np.random.default_rng(1), 2)
    vals = npsem.decode(codes, "f8e4m3")
    assert vals.min() >= 0.25 and vals.max() <= 4 and len(set(codes.tolist())) > 20


def test_printf_lines_are_compared_as_a_multiset():
    """Blocks print in any order; a missing, extra or different line is a mismatch."""
    assert runner._printf_mismatch("fz b=1\nfz b=0\n", ["fz b=0", "fz b=1"]) == []
    assert runner._printf_mismatch("fz b=1\n", ["fz b=0", "fz b=1"])
    assert runner._printf_mismatch("fz b=1\nfz b=2\n", ["fz b=0", "fz b=1"])


def test_crash_is_caught():
    """A child killed by a signal is classified as a crash, the parent goes on."""
    import signal

    def die():
        os.kill(os.getpid(), signal.SIGSEGV)

    o = runner.isolated(die)
    assert o.status == "crashed" and "SIGSEGV" in o.message


# Templates whose code differs most between the targets (mma.sync / wgmma / tcgen05 atoms): checked on every SM.
# A program of another template is checked on one SM, the targets taken in turn among those it may run on: the
# CI check stays at 100 different programs at a third of the compile and emulation time (bench/fuzz_programs.py
# runs every program on every SM).
EVERY_SM_TEMPLATES = {"mma", "attn", "mma_scaled"}


def sms_for(seed: int) -> tuple[str, ...]:
    """The SMs program ``seed`` of the CI check is compiled and run for."""
    p = generate(seed)
    if p.template in EVERY_SM_TEMPLATES:
        return tuple(SMS)
    fits = [sm for sm in SMS if int(re.sub(r"\D", "", sm)) >= p.min_sm] or SMS
    return (fits[seed % len(fits)],)


def test_ci_programs_cover_every_sm():
    """The rotation leaves no target out: each SM gets programs of several templates."""
    per_sm: dict[str, set[str]] = {sm: set() for sm in SMS}
    for seed in range(SEED, SEED + N_PROGRAMS):
        for sm in sms_for(seed):
            per_sm[sm].add(generate(seed).template)
    assert all(len(t) >= 4 for t in per_sm.values()), per_sm


def test_random_programs():
    work = tempfile.mkdtemp(prefix="fuzz-ci-")
    seeds = list(range(SEED, SEED + N_PROGRAMS))
    try:
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, initializer=runner.warm_up,
                                 initargs=(SMS,)) as pool:
            results = list(pool.map(_check, seeds, [work] * N_PROGRAMS, [sms_for(s) for s in seeds]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems, excused = [], []
    for r in results:
        for sm, o in r.outcomes.items():
            if o.status in ("ok", "skipped"):
                continue
            if o.status == "rejected" and runner.normalize(o.message) in ALLOWED_REJECTIONS:
                continue
            bug = _excused(r.features, o)
            line = f"seed {r.seed} {sm} {o.key[:300]}"
            if bug is not None:
                excused.append(f"{line}  [known: {bug}]")
            else:
                problems.append(line)
    slow = sorted(results, key=lambda r: -r.seconds)[:5]
    print(f"{len(results)} programs, {sum(len(r.outcomes) for r in results)} compiles; slowest: "
          + ", ".join(f"{r.seed} {r.template} {r.seconds:.1f} s" for r in slow))
    print(f"{len(excused)} known failures:")
    print("\n".join(excused))
    compiled = sum(o.status == "ok" for r in results for o in r.outcomes.values())
    assert compiled >= len(results), "most programs should compile and match"
    assert not problems, "\n".join(problems)


# The tensor-core programs (mma: every operand type cuTile's ct.mma takes; attention: two dots per
# iteration, the first scaled and fed to the second) again on the sm_80-family targets whose atoms differ
# (sm_86: the sm_80 atoms; sm_89: the e4m3 / e5m2 mma.sync atom), each program on one of them.
MMA_SMS = ("sm_86", "sm_89")
N_MMA_PROGRAMS = 16


def test_random_tensor_core_programs_on_sm86_sm89():
    work = tempfile.mkdtemp(prefix="fuzz-ci-mma-")
    seeds = list(range(SEED, SEED + N_MMA_PROGRAMS))
    templates = ["mma" if i % 4 else "attn" for i in range(N_MMA_PROGRAMS)]
    # each program on one of the two in turn (an 8-bit float program on sm_89: sm_86 has no f8 MMA)
    sms = [("sm_89",) if i % 2 or generate(s, template=t).min_sm > 86 else ("sm_86",)
           for i, (s, t) in enumerate(zip(seeds, templates))]
    assert {"sm_86", "sm_89"} <= {sm for pair in sms for sm in pair}
    try:
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, initializer=runner.warm_up,
                                 initargs=(list(MMA_SMS),)) as pool:
            results = list(pool.map(_check, seeds, [work] * len(seeds), sms, templates))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems = [f"seed {r.seed} ({r.template}) {sm} {o.key[:300]}" for r in results for sm, o in r.outcomes.items()
                if o.status not in ("ok", "skipped") and _excused(r.features, o) is None]
    assert not problems, "\n".join(problems)
    assert sum(o.status == "ok" for r in results for o in r.outcomes.values()) == len(seeds)


# Block-scaled MMA (template mma_scaled, cuTile's ct.mma_scaled): fixed seeds covering MXFP8 (e4m3 / e5m2, e8m0
# per 32), MXFP4 (e2m1, e8m0 per 16 / 32) and NVFP4 (e2m1, e4m3 per 16), on the tcgen05 atoms (64- / 128-row
# tiles) and the CUDA cores (16- / 32-row tiles, N = 16); below sm_100 a located rejection, as tileiras.
MMA_SCALED_SEEDS = {
    21: "mma_scaled:f8e5m2/f8e8m0/32",  # 64 x 64 x 64, scales of B transposed, an epilogue: tcgen05 mxf8f6f4
    27: "mma_scaled:f4e2m1/f8e8m0/32",  # 128 x 32 x 64 MXFP4: tcgen05 mxf4
    31: "mma_scaled:f8e4m3/f8e8m0/32",  # 32 x 16 x 64, an epilogue: CUDA cores
    5: "mma_scaled:f4e2m1/f8e4m3/16",  # 16 x 32 x 64 NVFP4: CUDA cores
}


def test_mma_scaled_programs():
    work = tempfile.mkdtemp(prefix="fuzz-ci-scaled-")
    seeds = list(MMA_SCALED_SEEDS)
    try:
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, initializer=runner.warm_up,
                                 initargs=(["sm_100a"],)) as pool:
            results = list(pool.map(_check, seeds, [work] * len(seeds), [("sm_90a", "sm_100a")] * len(seeds),
                                    ["mma_scaled"] * len(seeds)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        assert MMA_SCALED_SEEDS[r.seed] in r.features, (r.seed, r.features)
        assert "cuda_tile.mmaf_scaled" in r.ops
        o = r.outcomes["sm_100a"]
        assert o.status == "ok", f"seed {r.seed}: {o.key[:300]}"
        below = r.outcomes["sm_90a"]  # MIN_SM 100: rejected with a located error, as tileiras
        assert below.status == "skipped" and "rejected" in below.message
        assert re.search(r"prog\.py:\d+:\d+", below.message), below.message


# Round 3 of third-party kernels (side stream): integer / bool casts through an 8-bit float (tilecore refused itof
# to and ftoi / cmpf from e4m3 / e5m2 on sm_90a / sm_100a: "'arith.sitofp' on f8E4M3FN is not supported";
# tileiras compiles them; below sm_89 a located rejection, as tileiras), and a return inside a while loop (stage 1
# left it inside an scf.if: "'scf.if' op expects regions to end with 'scf.yield'").
ROUND3_SEEDS = {
    90009: "cast:i16->f8e4m3->i32",
    90035: "cast:i8->f8e5m2->f64",
    90099: "cast:i64->f8e5m2->bool",
    90148: "cast:bool->f8e4m3->i32",
    90056: "return_in_while",
}


def test_round3_forms():
    work = tempfile.mkdtemp(prefix="fuzz-ci-round3-")
    try:
        results = [_check(seed, work) for seed in ROUND3_SEEDS]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        feature = ROUND3_SEEDS[r.seed]
        assert feature in r.features, (r.seed, r.features)
        f8 = feature.startswith("cast:")
        assert not f8 or {"cuda_tile.itof", "cuda_tile.ftoi", "cuda_tile.cmpf"} & set(r.ops), r.ops
        for sm in ("sm_90a", "sm_100a") if f8 else SMS:
            assert r.outcomes[sm].status == "ok", f"seed {r.seed} {sm}: {r.outcomes[sm].key[:300]}"
        if f8:
            assert r.outcomes["sm_80"].status == "skipped"


# CTA pairs (issue 16): mma programs drawn with num_ctas=2 (the clusters stream) whose dots pair on sm_100a
# (tcgen05.mma.cta_group::2, feature cta_pairs: 128-row f16 / bf16 tiles); the same programs on sm_90a keep their
# 2-CTA clusters without pairs, on sm_80 no clusters. Seeds: the first two from 7000 with the feature.
def test_cta_pair_programs():
    seeds = [s for s in range(7000, 7200) if "cta_pairs" in generate(s, "mma").features][:2]
    assert len(seeds) == 2
    work = tempfile.mkdtemp(prefix="fuzz-ci-pairs-")
    try:
        results = [_check(seed, work, ("sm_90a", "sm_100a"), "mma") for seed in seeds]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        assert "num_ctas:2" in r.features, (r.seed, r.features)
        for sm in ("sm_90a", "sm_100a"):
            assert r.outcomes[sm].status == "ok", f"seed {r.seed} {sm}: {r.outcomes[sm].key[:300]}"


# Idioms of the third-party rounds (tests/fuzz/idioms.py, --template idioms): four seeds that together draw most
# idioms of the template (4-D tiles and tuple parameters, tuple / non-commutative scans both ways, the tuple reduce,
# helpers, while / nested / runtime-step loops, order="F", u64 scalars, permutes), each on one SM in turn (their
# lowering is target-independent but for the loads). Seed 116: a bf16 -> f16 cast with RA at f16 subnormal ties
# (found broken: stage 1 rounded nearest_away ties to even; plugins/tileas/tests/test_regressions_fuzz.py).
IDIOM_SEEDS = {228: ("sm_80", "tuple_parameter"), 1: ("sm_90a", "tuple_scan"), 33: ("sm_100a", "while_tile_condition"),
               116: ("sm_80", "directed_cast:bf16->f16:RA:subnormal")}


def test_idiom_programs():
    work = tempfile.mkdtemp(prefix="fuzz-ci-idioms-")
    try:
        results = [_check(seed, work, (sm,), "idioms") for seed, (sm, _) in IDIOM_SEEDS.items()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        sm, feature = IDIOM_SEEDS[r.seed]
        assert feature in r.features, (r.seed, r.features)
        assert r.outcomes[sm].status == "ok", f"seed {r.seed} {sm}: {r.outcomes[sm].key[:300]}"


def test_idiom_models():
    """The numpy models of the idioms on small cases worked by hand: a forward / backward fill, the affine
    recurrence h = a h + b both ways in wrapping int8, (max, first index, count), casts rounded in each direction."""
    from fuzz import npsem

    x = np.array([0, 3, 0, -2, 0], np.int32)
    assert npsem.fill_scan(x, 0, False).tolist() == [0, 3, 3, -2, -2]
    assert npsem.fill_scan(x, 0, True).tolist() == [3, 3, -2, -2, 0]
    a, b = np.array([2, 3, -1], np.int8), np.array([1, 100, 5], np.int8)
    assert npsem.affine_scan(a, b, 0, False).tolist() == [1, 103, -98]  # 3 * 1 + 100; -103 + 5 wrapped
    assert npsem.affine_scan(a, b, 0, True).tolist() == [-25, 115, 5]  # 3 * 5 + 100; 2 * 115 + 1 = 231 wrapped
    m, i, c = npsem.max_first_count(np.array([[1.0, 4.0, 4.0, -1.0]]), 1)
    assert (m.tolist(), i.tolist(), c.tolist()) == ([[4.0]], [[1]], [[2]])
    third = np.array([1 / 3, -1 / 3], np.float64)
    up = np.float32(1 / 3)  # the nearest f32 is above 1/3
    down = np.nextafter(up, np.float32(0))
    assert float(down) < 1 / 3 < float(up)
    assert npsem.directed_cast(third, "f32", "rz").tolist() == [down, -down]
    assert npsem.directed_cast(third, "f32", "rp").tolist() == [up, -down]
    assert npsem.directed_cast(third, "f32", "rm").tolist() == [down, -up]
    assert npsem.directed_cast(np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11]), "f16", "ra").tolist() == [1 + 2.0**-10,
                                                                                                  1 + 2 * 2.0**-10]
    assert npsem.directed_cast(np.array([1 + 2.0**-11], np.float64), "f16", "rz").tolist() == [1.0]
