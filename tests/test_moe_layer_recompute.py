"""Megatron-Core's recompute module "moe" (--recompute layernorm-moe: recompute_modules
['layernorm', 'moe'], the model zoo's long-context Qwen3 235B command): MoELayer.forward under
tensor_parallel.checkpoint (megatron/core/transformer/moe/moe_layer.py lines 247-249, 701-716,
NVIDIA/Megatron-LM d98e8a64dd) keeps nothing of the router and routed experts, reruns their forward
in backward, and with it the dispatch and combine. Exact integers on the odd folded model of
tests/test_parallel_folding.py (tp 2 with SP, dp 3, EP 3, 12 tokens: 6 a rank, 12 routed slots)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset
from tests.test_parallel_folding import FOLDED, _odd_moe


def _estimate(recompute: str, cfg=None) -> ParallelEstimate:
    workload = Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
    return ParallelEstimate(cfg or _odd_moe(), workload, FOLDED)


def test_the_moe_layer_keeps_nothing_of_its_router_and_experts():
    """Per layer on a rank: the routed experts keep 5,160 bytes without recomputation (3 int64 a slot
    288, 4 x 6 counts 24, 12 fp32 routing weights 48, the gathered input and the gate-up and down
    outputs 2 x 12 x (2 x 64 + 3 x 24) = 4,800), 4,584 under moe_act (less the down input 12 x 24 x 2);
    the router 312 (fp32 scores 4 x 6 x 6, int64 top-2 96, the renormalised sum and weights 24 + 48);
    the pre-MoE norm's output 768 (6 x 64 bf16). Under "moe" all three go: 12,096 -> 5,856 a layer,
    where layernorm-moe-act keeps 10,752 (the router's 312 and the experts' 4,584)."""
    layer = {r: _estimate(r).part("layer.decoder", "saved") for r in ("none", "layernorm-moe-act", "layernorm-moe")}
    assert layer == {"none": 12_096, "layernorm-moe-act": 10_752, "layernorm-moe": 5_856}
    assert layer["none"] - layer["layernorm-moe"] == 5_160 + 312 + 768
    assert layer["layernorm-moe-act"] - layer["layernorm-moe"] == 4_584 + 312
    assert _estimate("layernorm-moe").part("layer.decoder", "expert_saved") == 0


def test_the_moe_layer_reruns_its_forward_and_its_all_to_alls():
    """Recomputed matmul FLOPs (the whole model's, HFU's numerator): per layer the router
    2 x 12 x 64 x 6 = 9,216 and the experts 2 x 24 slots x 3 x 64 x 24 = 221,184, two layers 460,800.
    The all-to-all: the rerun forward sends the counts again and dispatches and combines again,
    2 x (2 x 48 + 3 x 2 x 12 x 128) = 18,624 bytes for two layers, where once forward and once
    backward gave 12,384."""
    moe, plain = _estimate("layernorm-moe"), _estimate("none")
    assert moe.numbers["recomputed_flops"] == 2 * (9_216 + 221_184) == 460_800
    assert plain.numbers.get("recomputed_flops", 0) == 0
    assert moe.communication(moe.stages[0])["ep"] == {"all_to_all": 2 * (2 * 48 + 3 * 2 * 12 * 128)} \
        == {"all_to_all": 18_624}
    assert plain.communication(plain.stages[0])["ep"] == {"all_to_all": 12_384}


def _unfolded(recompute: str, cfg) -> ParallelEstimate:
    """tp 1, dp 3, EP 3: a rank's 12 tokens, 24 routed slots."""
    workload = Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
    return ParallelEstimate(cfg, workload, Layout(dp=3, ep=3, framework="megatron", zero=1))


def test_shared_experts_and_latent_projections_rerun_with_their_moe_layer():
    """MoELayer's custom_forward (d98e8a64dd lines 651-700) runs shared_experts_compute and a latent
    MoE's fc1_latent_proj / fc2_latent_proj (preprocess, postprocess) inside the "moe" checkpoint:
    they keep nothing and rerun. On tp 1 (12 tokens a rank) with a shared SwiGLU of 40: it keeps
    Megatron's fused SwiGLU's 3 x 12 x 40 x 2 = 2,880 bytes a layer without recomputation, and its
    forward 2 x 12 x 3 x 64 x 40 = 184,320 FLOPs a layer reruns under layernorm-moe. Latent width 32
    beside it: fc2's input 12 x 32 x 2 = 768 bytes kept without, and the rerun a layer is the router
    9,216, the experts 2 x 24 x 3 x 32 x 24 = 110,592, the two projections 2 x (2 x 12 x 64 x 32) =
    98,304 and the shared expert 184,320."""
    plain, shared = _odd_moe(), _odd_moe().replace(name="odd-shared", d_shared=40)
    latent = shared.replace(name="odd-latent", d_latent=32)
    saved = {(name, r): _unfolded(r, cfg).part("layer.decoder", "saved")
             for name, cfg in (("plain", plain), ("shared", shared), ("latent", latent))
             for r in ("none", "layernorm-moe")}
    assert saved[("shared", "none")] - saved[("plain", "none")] == 3 * 12 * 40 * 2 == 2_880
    assert saved[("shared", "layernorm-moe")] == saved[("plain", "layernorm-moe")] == 11_712
    assert saved[("latent", "layernorm-moe")] == 11_712
    rerun = {name: _unfolded("layernorm-moe", cfg).numbers["recomputed_flops"]
             for name, cfg in (("plain", plain), ("shared", shared), ("latent", latent))}
    assert rerun["plain"] == 460_800  # as on the folded layout: the router's and experts' FLOPs alike
    assert rerun["shared"] - rerun["plain"] == 2 * 184_320
    assert rerun["latent"] == 2 * (9_216 + 110_592 + 98_304 + 184_320) == 804_864


def test_core_attn_beside_the_moe_layer():
    """layernorm-moe-core-attn (recompute_modules layernorm, moe_act, moe, core_attn: Megatron-
    Bridge's Nemotron 3 Super H100 recipe) adds the attention core's checkpoint
    (checkpoint_core_attention): the kernel and rerun selective recomputation has, 73,728 FLOPs and
    192 bytes a layer fewer kept, on top of layernorm-moe."""
    cfg = _odd_moe().replace(name="odd-shared", d_shared=40)
    moe, both = _unfolded("layernorm-moe", cfg), _unfolded("layernorm-moe-core-attn", cfg)
    selective, none = _unfolded("selective", cfg), _unfolded("none", cfg)
    assert selective.numbers["recomputed_flops"] == 73_728
    assert both.numbers["recomputed_flops"] - moe.numbers["recomputed_flops"] == 73_728
    assert none.part("layer.decoder", "saved") - selective.part("layer.decoder", "saved") == 192
    assert moe.part("layer.decoder", "saved") - both.part("layer.decoder", "saved") == 192
    with pytest.raises(ConfigError, match="has no routed experts"):
        ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=16, recompute="layernorm-moe-core-attn",
                                                            impl="megatron", attention="flash"), Layout())


def test_shared_experts_under_tensor_parallelism_are_refused_in_one_line():
    """Their tensor-parallel gathers and reduce-scatters would rerun with them: not modelled."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.timing import step_time

    estimate = _estimate("layernorm-moe", _odd_moe().replace(name="odd-shared", d_shared=40))
    with pytest.raises(ConfigError, match="tensor-parallel collectives rerun with them are not modelled"):
        step_time(estimate, load_hardware("h100-sxm")).step()
    with pytest.raises(ConfigError, match="has no routed experts"):
        ParallelEstimate(load_preset("llama3-8b"), Workload(seq_len=16, recompute="layernorm-moe", impl="megatron",
                                                            attention="flash"), FOLDED.__class__())


def test_the_choice_reaches_the_command_line(capsys):
    assert cli.main(["estimate", "--model", "qwen3-30b-a3b", "--seq-len", "4096", "--recompute", "layernorm-moe",
                     "--impl", "megatron", "--attention", "flash"]) == 0
    assert "error" not in capsys.readouterr().err
