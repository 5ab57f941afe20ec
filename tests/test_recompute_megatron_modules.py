"""Megatron-Core's selective recomputation by module, as Megatron-Bridge's MoE recipes name it.

['layernorm', 'moe_act'] (--recompute layernorm-moe-act), as Megatron-Bridge's GPT-OSS 120B recipes set it (scripts/performance/configs/
gpt_oss/gpt_oss_workload_base_configs.py at 21d102f5e, and every tag v0.2.0-v0.5.0; overrides.py
_set_recompute_overrides makes the granularity 'selective'), in Transformer Engine's layer
(NVIDIA/Megatron-LM 44151194): the attention's norm is fused into linear_qkv (input_layernorm
IdentityOp, gpt_layer_specs.py), so "layernorm" reruns only the pre-MLP norm of a MoE layer
(transformer_layer.py 437-494), kept as its input only; "moe_act" runs TEGroupedMLP's activation
under CheckpointWithoutOutput (moe/experts.py 707-718): its output, linear_fc2's input, is discarded
and rebuilt by one more activation pass in backward.

['mla_up_proj'] (--recompute mla-up-proj), DeepSeek-V3's recipes on GB200 and B200
(scripts/performance/configs/deepseek at 97ad8cc6f; run_script.py at v0.1.0rc4 for the token-drop
runs): multi_latent_attention.py's qkv_up_proj_and_rope_apply under CheckpointWithoutOutput, the
latent norms fused into the up-projection linears in Transformer Engine's spec: the up-projections,
their norms and RoPE rerun, the layer's norms do not (they are "deepseek"'s "layernorm" half).

Exact integers on the odd DeepSeek-V3 (tests/family_odd_configs.py: d 48, 8 experts of 16, top 3;
3 layers, the first dense), Megatron's profile with flash, b 3, n 5, bf16: 15 tokens, 45 slots.
"""

import sys
from pathlib import Path

import pytest

import cli
from costmodel import symbols as S
from costmodel.blocks import Experts
from costmodel.blocks.base import Profile
from costmodel.hf import from_hf_config
from costmodel.layout.plan import PLANNED_RECOMPUTES

sys.path.insert(0, str(Path(__file__).parent))
from family_odd_configs import _deepseek_v3  # noqa: E402
from test_recompute_deepseek import number, saved_by_leaf, tree  # noqa: E402

CFG = from_hf_config(_deepseek_v3()[0], "odd-deepseek-v3")


def test_only_the_moe_layers_ffn_norm_and_expert_activation_rerun():
    """The pre-MLP norm of each MoE layer reruns (read 15 x 48 and write it, 2 bytes each: 2,880,
    and its 48 weights: 2,976), and the experts' fused SwiGLU (weighted_bias_swiglu_impl) reads
    the 45 x 2 x 16 gate_up output and writes the 45 x 16 product: 3 x 720 x 2 = 4,320. Not the
    attention's norm, not the dense layer's FFN norm (IdentityOp in Megatron's spec), not the final
    norm; nothing reruns without the option."""
    assert [leaf.path for leaf in tree(CFG, "none").leaves if leaf.rerun is not None] == []
    reruns = {leaf.path: number(CFG, leaf.rerun.bytes_other)
              for leaf in tree(CFG, "layernorm-moe-act").leaves if leaf.rerun is not None}
    assert reruns == {"decoder.moe_layer.ffn.norm": 2_976, "decoder.moe_layer.ffn.experts": 4_320}


def test_what_the_checkpoints_no_longer_keep():
    """The MoE layer's FFN norm keeps its input only (15 x 48 x 2 = 1,440, not input and output
    2,880); the experts drop linear_fc2's input, 45 x 16 x 2 = 1,440 (14,252 -> 12,812). The
    attention's norm and the dense layer keep what they kept."""
    none, rerun = tree(CFG, "none"), tree(CFG, "layernorm-moe-act")
    before, after = saved_by_leaf(CFG, none), saved_by_leaf(CFG, rerun)
    assert (before["ffn.norm"], after["ffn.norm"]) == (2_880, 1_440)
    assert (before["ffn.experts"], after["ffn.experts"]) == (14_252, 12_812)
    assert before["self_attention.norm"] == after["self_attention.norm"] == 2_880
    assert saved_by_leaf(CFG, none, "dense") == saved_by_leaf(CFG, rerun, "dense")


def test_gpt_oss_clamped_activation_reruns_fused_with_its_bias():
    """gpt-oss's experts under Megatron (tests/test_megatron_moe_passes.py's layer: 12 tokens, d 64,
    6 experts of 24, top 2, S = 24): the rerun is weighted_bias_quick_geglu_impl's one pass, 3 x 24
    x 24 x 2 = 3,456 bytes; the kept bytes fall by fc2's input, 24 x 24 x 2 = 1,152 (10,488 -> 9,336)."""
    values = {S.b: 1, S.n: 12, S.d: 64, S.d_x: 24, S.E: 6, S.k: 2, S.e: 2}

    def experts(recompute: str) -> Experts:
        return Experts(S.b * S.n, Profile(impl="megatron", family="gpt_oss", recompute=recompute),
                       bias=True, clamped=True)

    assert experts("none").recomputed_part() is None
    assert int(experts("layernorm-moe-act").recomputed_part().bytes_other.xreplace(values)) == 3_456
    assert [int(experts(r).cost().saved_bytes.xreplace(values)) for r in ("none", "layernorm-moe-act")] \
        == [10_488, 9_336]


def test_named_only_and_typed_on_the_command_line(capsys):
    """plan does not try it (a recipe's module list, asked for by name); simulate takes it, and a
    misspelt name is one line and exit status 2."""
    assert "layernorm-moe-act" not in PLANNED_RECOMPUTES
    args = ["simulate", "--train", "--model", "gpt-oss-120b", "--hardware", "h100-sxm", "--seq-len", "4096",
            "--batch", "1", "--impl", "megatron", "--attention", "flash", "--recompute"]
    assert cli.main(args + ["layernorm-moe-act"]) == 0
    capsys.readouterr()
    assert cli.main(args + ["layernorm-moe-ac"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_mla_up_proj_is_deepseek_without_the_layer_norms():
    """Every leaf "deepseek" reruns but the layer's norms (the attention's and the FFN's of each
    layer, 2,976 bytes each, and the final norm): latent attention's up-projections (64,080 FLOPs
    a layer) and RoPE (1,680 bytes). Latent attention keeps its latents only (3,510 -> 1,080) and
    the flash kernel no q, k, v (3,600 -> 0), as under "deepseek"; the norms keep input and output
    (2,880), as without recomputation."""
    def reruns(recompute):
        return {leaf.path: (number(CFG, leaf.rerun.bytes_other), number(CFG, leaf.rerun.flops_matmul))
                for leaf in tree(CFG, recompute).leaves if leaf.rerun is not None}

    deepseek, up = reruns("deepseek"), reruns("mla-up-proj")
    assert up == {path: v for path, v in deepseek.items() if not path.endswith("norm")}
    assert up["decoder.moe_layer.self_attention.mla"] == (0, 64_080)
    assert up["decoder.moe_layer.self_attention.rope"] == (1_680, 0)
    none, kept, both = (saved_by_leaf(CFG, tree(CFG, r)) for r in ("none", "mla-up-proj", "deepseek"))
    assert (none["self_attention.mla"], kept["self_attention.mla"], both["self_attention.mla"]) == (3_510, 1_080, 1_080)
    assert kept["self_attention.scores"] == both["self_attention.scores"] == 0
    assert kept["self_attention.norm"] == kept["ffn.norm"] == none["ffn.norm"] == 2_880
    assert "mla-up-proj" not in PLANNED_RECOMPUTES


@pytest.mark.parametrize("model, recompute, part", [("llama3-8b", "mla-up-proj", "latent attention"),
                                                    ("mixtral-8x7b", "mla-up-proj", "latent attention"),
                                                    ("llama3-8b", "layernorm-moe-act", "routed experts")])
def test_a_module_the_model_lacks_is_refused_in_one_line(capsys, model, recompute, part):
    """Nothing to rerun or free: one sentence naming the missing part, exit status 2."""
    for command in (["simulate", "--train"], ["plan", "--gpus", "8"]):  # plan: before its search (review)
        assert cli.main(command + ["-m", model, "--recompute", recompute]) == 2, command
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"has no {part}" in err and recompute in err
