"""The tensor-map launch contract (tilecore.tensormaps): recipes resolved from kernel parameters, appended
after them, encoded for the emulator; ``tilecore compile`` prints them and ``--emit metadata`` writes them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support import run_cli

from tilecore.emulate.tensormap import decode
from tilecore.tensormaps import ZERO_MAP, TensorMapRecipe, append_maps, dumps, emulator_map, loads, unaligned

R = TensorMapRecipe(param=5, tensor=0, data_type=6, global_dim=({"param": 2}, {"param": 1}),
                    global_strides=({"param": 3, "scale": 2},), box_dim=(64, 128), element_strides=(1, 1), swizzle=3)
PARAMS = [np.zeros((100, 72), np.float16), np.int32(100), np.int32(72), np.int32(72), np.int32(1)]


def test_recipe_resolves_from_the_parameters_and_round_trips_as_json():
    f = R.resolve(PARAMS)
    assert f["global_dim"] == [72, 100] and f["global_strides"] == [144] and f["box_dim"] == [64, 128]
    assert loads(dumps([R])) == [R]
    assert R.describe() == ("param 5: tensor map of param 0 (f16, dims [p2, p1], strides [p3 x 2 B], box [64, 128], "
                            "swizzle 128B, zero fill)")
    zero = R.resolve([PARAMS[0], np.int32(0), np.int32(0), np.int32(0), np.int32(1)])
    assert zero["global_dim"] == [1, 1]  # an empty tensor still encodes (the kernel reads nothing of it)


def test_emulator_encoding_names_the_tensor_parameter():
    tm = decode(emulator_map(R, PARAMS).tobytes())
    assert (tm["arg"], tm["global_dim"], tm["global_strides"], tm["box_dim"], tm["swizzle"]) == \
        (0, [72, 100], [144], [64, 128], 3)


def test_append_maps_after_the_cutile_parameters():
    out = append_maps([R], PARAMS, lambda r, ps: "map")
    assert out[:5] == PARAMS and out[5] == "map"
    assert append_maps([R], out, lambda r, ps: pytest.fail("already there")) == out
    with pytest.raises(ValueError, match="takes 5 parameters and 1 tensor maps after them; got 4 arguments"):
        append_maps([R], PARAMS[:4], lambda r, ps: "map")


def test_optional_maps_of_unaligned_tensors_are_zeros():
    opt = TensorMapRecipe(**{**R.__dict__, "optional": True})
    odd = PARAMS[:3] + [np.int32(71)] + PARAMS[4:]  # rows of 142 bytes
    assert unaligned(opt, odd) and not unaligned(opt, PARAMS) and not unaligned(R, odd)
    assert unaligned(opt, PARAMS, address=0x1008) and not unaligned(opt, PARAMS, address=0x1010)
    assert not emulator_map(opt, odd).any() and ZERO_MAP == bytes(128)
    with pytest.raises(ValueError, match="globalStrides multiples of 16"):
        emulator_map(R, odd)


def test_compile_summary_and_emit_metadata(tmp_path):
    """A TMA kernel's ``wrote`` line names its tensor maps; ``--emit metadata`` writes the launch contract."""
    pytest.importorskip("cuda.tile")
    from support import has_plugin

    if not (has_plugin("tileas") and has_plugin("cute")):
        pytest.skip("needs the tileas and cute plugins")
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "plugins" / "tileas" / "tests"))
    import cutile_kernels as ck

    src = str(tmp_path / "mm.tileirbc")
    ck.export_spec(ck.matmul_f32acc, ["bf16[2]/16", "bf16[2]/16", "f32[2]/16", 128, 64, 32], "mm", src)
    out = str(tmp_path / "mm.json")
    r = run_cli("compile", src, "--gpu-name", "sm_90a", "--emit", "metadata", "--no-cache", "-o", out)
    assert r.returncode == 0, r.stderr
    # A's and B's maps (the K loop's TMA loads), C's (the epilogue's TMA store)
    assert "mm (18 params, 128 threads/CTA, 3 tensor maps: param 15: tensor map of param 0 (bf16" in r.stdout
    meta = json.load(open(out))
    (k,) = meta["kernels"]
    assert k["name"] == "mm" and k["params"] == 18 and k["threads_per_cta"] == 128
    assert [TensorMapRecipe.from_json(t).param for t in k["tensor_maps"]] == [15, 16, 17]
    assert k["tensor_maps"][1]["box_dim"] == [64, 32] and k["tensor_maps"][1]["swizzle"] == 3
    assert k["tensor_maps"][2]["box_dim"] == [64, 128] and k["tensor_maps"][2]["swizzle"] == 0
