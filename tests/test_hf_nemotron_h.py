"""NVIDIA's hybrid Mamba-2 / Transformer models (model_type "nemotron_h", costmodel/hf_nemotron_h.py)
against transformers 5.24's NemotronHForCausalLM built from the same config dict on the CPU:
parameters (dense and MoE layer patterns, legacy field names, biases, the class's defaults on the
meta device), the router's buffer, the training forward's matmul FLOPs (FlopCounterMode with
validate.measure's grouped_mm formula), a cached decode step's, the cache after a prefill
(attention keys and values beside each Mamba-2 layer's conv and scan states), with and without
the latent MoE of moe_latent_size, and the configs it
refuses, and the bytes a training forward saves for backward in the dense layer patterns (the
Mamba-2 mixers' torch path, attention, the MLP, the norms and the loss). Not compared: other ops'
elements in the Mamba-2 layers (blocks/mamba.py does not model them), and the saved bytes of the
MoE patterns (2,304 bytes a MoE layer apart at b 2, n 9: the MoE blocks', not the mixers').
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_saved_bytes_exact, buffer_bytes_both, estimated_total)
from tests.family_configs import hf_meta_count

#: Odd sizes no dimension shares: d 36, 4 query heads and 2 KV heads of 10 (no RoPE), MLP 37,
#: Mamba-2 6 heads of 5 with state 7 in 2 groups, conv 3, chunks of 4; experts of 12 (grouped_mm's
#: 16-byte strides in fp32 and bf16: a multiple of 8), shared expert 13, 5 experts top 2.
ODD = dict(model_type="nemotron_h", vocab_size=99, hidden_size=48, num_attention_heads=4,
           num_key_value_heads=2, head_dim=10, intermediate_size=37, ssm_state_size=7,
           mamba_num_heads=6, mamba_head_dim=5, n_groups=2, conv_kernel=3, chunk_size=4,
           n_routed_experts=5, num_experts_per_tok=2, moe_intermediate_size=16,
           moe_shared_expert_intermediate_size=13, n_group=1, topk_group=1)
DENSE = dict(ODD, hybrid_override_pattern="M*-M-*")
MOE = dict(ODD, hybrid_override_pattern="ME*EM-")
VARIANTS = {
    "dense": DENSE,
    "moe": MOE,
    # the list form with legacy names, and NemotronHConfig's older field names
    "legacy_names": dict({k: v for k, v in ODD.items() if k not in ("n_groups", "conv_kernel")},
                         layers_block_type=["mamba", "attention", "moe", "mlp"],
                         mamba_n_groups=3, mamba_d_conv=4, mamba_head_dim=4),
    "biases": dict(DENSE, use_bias=True, mlp_bias=True, use_conv_bias=False, tie_word_embeddings=True),
    "one_attention": dict(ODD, hybrid_override_pattern="MMM*M"),
    "no_mamba": dict(ODD, hybrid_override_pattern="*E-"),
    "mqa_one_group": dict(MOE, num_key_value_heads=1, n_groups=1, num_local_experts=7),
    # Nemotron 3 Super's LatentMoE: experts on a latent of 24 (grouped_mm's strides: a multiple of 8)
    "latent": dict(MOE, moe_latent_size=24),
    "latent_biases": dict(MOE, moe_latent_size=24, mlp_bias=True),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], name) == hf_meta_count(VARIANTS[name])


def test_parameters_of_the_class_defaults():
    """NemotronHConfig()'s own four layers (M, E, *, -) at its default sizes: 4096 wide, 128 Mamba
    heads of 64, 8 experts of 7,688."""
    assert estimated_total({"model_type": "nemotron_h"}, "defaults") == hf_meta_count(
        {"model_type": "nemotron_h"})


def test_router_buffer():
    ours, hf = buffer_bytes_both(MOE, "moe")
    assert ours == hf and hf > 0


def _forward_flops(fields: dict, b: int, n: int, backward: bool = False) -> int:
    """FlopCounterMode's count of NemotronHForCausalLM's training forward with its loss (and, with
    `backward`, the loss's backward too), eager attention."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from validate.measure.flops import EXTRA_FLOP_FORMULAS

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).train()
    ids = torch.randint(0, fields["vocab_size"], (b, n))
    with FlopCounterMode(display=False, custom_mapping=dict(EXTRA_FLOP_FORMULAS)) as counter:
        loss = model(ids, labels=ids).loss
        if backward:
            loss.backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("name", ["dense", "moe", "legacy_names", "biases", "latent", "latent_biases"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4)])
def test_training_forward_flops(name, b, n):
    from costmodel import estimate

    ours = estimate(dict(VARIANTS[name], name=name), seq_len=n, batch=b, dtype="fp32")
    assert ours.to_dict()["flops"]["forward"] == _forward_flops(VARIANTS[name], b, n)


@pytest.mark.parametrize("name", ["dense", "moe", "latent"])
def test_decode_step_flops(name):
    assert_decode_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", ["dense", "moe", "one_attention", "latent"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Keys and values of the attention layers (b h_kv n d_h each), and per Mamba-2 layer its conv
    state (b, H P + 2 G N, K) in the model's dtype and its scan state (b, H, P, N) in fp32."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("name", ["dense", "biases", "one_attention"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_for_backward(name, dtype):
    """NemotronHForCausalLM's training forward with its loss (validate's saved-tensor hooks,
    eager attention, b 2, n 9: three chunks of 4) against the tree's activations: the Mamba-2
    mixers' torch path (blocks/mamba.saved_bytes_torch), and nemotron_h's facts (fp32 norms that
    multiply by an fp32 copy of the weight, fp32 softmax and loss)."""
    assert_saved_bytes_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("change,message", [
    (dict(moe_latent_size=0), "moe_latent_size must be at least 1"),
    (dict(mlp_hidden_act="silu"), "mlp_hidden_act"),
    (dict(mamba_hidden_act="gelu"), "mamba_hidden_act"),
    (dict(hybrid_override_pattern="M*X"), "hybrid_override_pattern"),
    (dict(layers_block_type=["mamba", "sliding_attention"]), "layers_block_type"),
    (dict(hybrid_override_pattern="M*", mamba_num_heads=5), "not divisible"),
])
def test_refused_configs(change, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(dict(MOE, **change), name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(MOE, mlp_hidden_act="silu")))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "mlp_hidden_act" in err and len(err.strip().splitlines()) == 1


def test_nemotron_3_nano_preset():
    """The preset (Megatron-Bridge's Nemotron3NanoProvider) equals the class transformers builds
    from it: 31,577,937,344 parameters, the model card's "31.6B total"; 3,580,073,408 active (6 of
    128 experts a token), the card's "3.6B including embeddings"."""
    import json
    from pathlib import Path

    import costmodel
    from costmodel import estimate

    path = Path(costmodel.__file__).parent / "presets" / "nemotron-3-nano.json"
    fields = {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}
    params = estimate("nemotron-3-nano", seq_len=16).to_dict()["params"]
    assert params["total"] == hf_meta_count(fields) == 31_577_937_344
    assert params["active"] == 3_580_073_408


def test_a_nemotron_3_nano_row_builds_the_recipes_layout():
    """Megatron-Bridge 26.04.01's Nemotron 3 Nano FP8 row on 16 H100s: EP 8 of the 128 experts
    drawn from DP 16, micro-batch 1, 64 micro-batches of the 1,024 global batch."""
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "megatron-bridge-moe 26.04.01 nemotron-3-nano fp8 16xh100")
    estimate, hardware, _ = train_setup(run, data["sources"]["megatron-bridge-moe"])
    layout = estimate.layout
    assert estimate.cfg.family == "nemotron_h" and estimate.cfg.n_mixer_layers("mamba") == 23
    assert (layout.dp, layout.ep, layout.tp, layout.microbatches) == (16, 8, 1, 64)


def test_serve_holds_the_states_in_slots_and_refuses_transformers_engine(capsys):
    """A Mamba-2 layer's states do not grow with c: serve holds them per running request in the
    pool (serving/state_slots.py, tests/test_serving_state_slots.py); transformers' continuous
    batching refuses a linear_attention layer, so its schedulers are refused in one line."""
    from tests.cli_run import run_main

    code, out, err = run_main(["serve", "--model", "nemotron-3-nano", "--hardware", "h100-sxm", "--rate", "2",
                               "--requests", "20"], capsys)
    # vLLM's layout (tests/test_serving_vllm_states.py): 23 layers x (6,144 x 3 x 2 bf16 conv +
    # 64 x 64 x 128 x 2 bf16 scan) bytes; 6,144 B a token of keys and values, so 254 blocks of 16 tokens
    assert code == 0 and "recurrent states: 24,965,120 B per request per GPU, 254 blocks each" in out
    code, _, err = run_main(["serve", "--model", "nemotron-3-nano", "--hardware", "h100-sxm", "--rate", "2",
                             "--scheduler", "hf-fifo"], capsys)
    assert code == 2 and "Invalid layer type" in err and len(err.strip().splitlines()) <= 2


def test_full_recompute_checkpoints_each_kind_of_layer():
    """--recompute full wraps each one-mixer layer as any layer: one checkpoint leaf per kind
    (mamba, attention, mlp, moe: layer_pattern.MIXERS order), every other leaf of the layer rebuilt."""
    from costmodel.config import Workload
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(MOE, name="moe")
    model = CostModel(cfg, profile_for(cfg, Workload(seq_len=9, recompute="full")), phase="train")
    checkpoints = [leaf.kind for leaf in model.leaves if leaf.name == "checkpoint"]
    assert checkpoints == ["mamba", "attention", "mlp", "moe"]
    assert all(leaf.checkpointed for leaf in model.leaves if leaf.in_layer and leaf.name != "checkpoint")
