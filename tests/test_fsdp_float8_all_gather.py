"""torchao's FSDP2 float8 all-gather (--fp8-param-gather under --framework fsdp2 --fp8 tensorwise;
costmodel/layout/fp8_options.py): the layers' linear weights all-gathered at one byte an element, no
forward weight cast, the shards as FSDP2 holds them; the torchtitan 405B rows whose toml turns it on."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.kernel_shapes import Gemm
from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes
from costmodel.layout.spec import Layout
from reports.published_runs import other_runs_data, train_setup

ROW = "torchtitan-405b-2024 llama3.1-405b fsdp16 tp8 float8 128xh100"


def _estimate(run_id: str, **changes):
    data = other_runs_data()
    run = {**next(r for r in data["runs"] if r["id"] == run_id), **changes}
    return train_setup(run, data["sources"][run_id.split()[0]])[0]


def test_the_405b_gathers_its_linear_weights_in_fp8():
    """Llama 3.1 405B at TP 8: a layer's linears d x (q + 2 kv) + d x d + 3 d x d_ff = 16,384 x 194,560 =
    3,187,671,040 weights, 398,458,880 a TP rank, 126 layers: 50,205,818,880 FP8 weights a rank. FSDP2 gathers
    the layers twice a micro-batch (forward, and again in backward: reshard_after_forward), so the float8
    all-gather moves 2 x 50,205,818,880 bytes fewer (one byte each, not bf16's two); the root (embedding,
    norm, 'output', left in bf16 by torchtitan's module_filter_fn) and the reduce-scatters unchanged."""
    fp8 = _estimate(ROW)
    bf16 = _estimate(ROW, fp8_param_gather=False)
    stage = fp8.stages[0]
    assert fp8.layout.fp8_param_gather and not bf16.layout.fp8_param_gather
    assert fp8.on_stage(stage, "fp8_params") == 126 * 16384 * 194560 // 8 == 50_205_818_880
    gathered, plain = fp8.communication(stage)["dp"], bf16.communication(stage)["dp"]
    assert plain["all_gather"] - gathered["all_gather"] == 2 * 50_205_818_880
    assert (plain["all_gather"], gathered["reduce_scatter"]) == (201_890_496_512, plain["reduce_scatter"])
    # no Megatron-style saving: FSDP2's shards stay as they were
    assert fp8.memory(stage)["weights"] == bf16.memory(stage)["weights"]


def test_the_weight_arrives_in_fp8_so_its_forward_cast_does_not_run():
    """torchao tensorwise charges the weight an amax (2 bytes an element) and a cast (3) each forward; with the
    float8 all-gather neither runs (1024 x 2048 weights: 10,485,760 bytes fewer), the backward's column-major
    copy still does; Megatron-Core's FP8 parameters (current scaling, cached a step) as before."""
    gemm = [Gemm(4096, 2048, 1024)]
    assert cast_bytes(gemm, CAST_PASSES["tensorwise"], needs_tn=True) == (31_457_280, 71_303_168)
    assert cast_bytes(gemm, CAST_PASSES["tensorwise"], needs_tn=True, fp8_params=True) == (20_971_520, 71_303_168)
    assert cast_bytes(gemm, CAST_PASSES["current"], needs_tn=True, microbatches=2, fp8_params=True) == \
        (26_214_400, 50_331_648)


@pytest.mark.parametrize("fields, message", [
    (dict(fp8="rowwise"), "for --fp8 tensorwise; here --fp8 rowwise"),
    (dict(fp8="tensorwise", ep=2, dp=4), "without expert parallelism"),
])
def test_only_torchaos_tensorwise_weights_are_gathered_in_float8(fields, message):
    with pytest.raises(ConfigError, match=message):
        Layout(**{"framework": "fsdp2", "zero": 3, "dp": 8, "fp8_param_gather": True, **fields})
    Layout(framework="fsdp2", zero=3, dp=8, fp8="tensorwise", fp8_param_gather=True)


def test_the_rows_whose_toml_turns_it_on():
    """train_configs/llama3_405b.toml: [float8] enable_fsdp_float8_all_gather = true (line 58 at 3faaa1a0d,
    59 at 9dec370): the 405B Float8 rows of both tables; the BF16 row and the 8B/70B rows keep it off."""
    runs = other_runs_data()["runs"]
    on = sorted(r["id"] for r in runs if r.get("fp8_param_gather") and r["id"].split()[0].startswith("torchtitan"))
    assert len(on) == 8 and all("405b" in r and "float8" in r for r in on)
    assert not any(r.get("fp8_param_gather") for r in runs if r["id"].startswith("torchtitan") and "405b" not in r["id"])
