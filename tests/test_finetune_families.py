"""Fine-tuning memory (costmodel/finetune.py) for the families added in session 18, against peft
0.21 on the real transformers 5.24 class at odd sizes: the mixtures of experts (Mixtral, Qwen2-MoE
with its shared expert and dense layers, Qwen3-MoE, OLMoE, GraniteMoE), LoRA on their attention projections; Gemma
(whose RMSNorm keeps an fp32 normalised tensor for its weight), SmolLM3 and Granite by Llama's
module names; Gemma 2, Gemma 3 and OLMo 2 with their other norms; Phi-3 by its fused qkv_proj and
gate_up_proj. Each run compares parameters, trainable parameters, the base's bytes, the
adapters, their gradients, the bytes saved for backward and AdamW's state after a step.
"""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.finetune import finetune_memory
from costmodel.lora_adapters import FineTune
from costmodel.presets import load_preset
from tests.test_finetune import assert_adamw_run_equals_peft


def test_qwen3_30b_a3b_lora_by_hand(capsys):
    """The request that was refused: LoRA on Qwen3-30B-A3B. peft's default q_proj and v_proj on
    48 layers of d 2,048: q A 16 x 2,048 + B 4,096 x 16, v A 16 x 2,048 + B 512 x 16 (4 KV heads)."""
    assert cli.main(["finetune", "--model", "Qwen/Qwen3-30B-A3B", "--method", "lora"]) == 0
    assert "trainable 6.68 M (6,684,672," in capsys.readouterr().out
    assert 48 * (16 * 2048 + 4096 * 16 + 16 * 2048 + 512 * 16) == 6_684_672


def test_mixtral_targets_and_refusals():
    cfg = load_preset("mixtral-8x7b")
    memory = finetune_memory(cfg, Workload(seq_len=2048, attention="sdpa"),
                             FineTune(targets=("q_proj", "k_proj", "v_proj", "o_proj")))
    # q, k, v, o on 32 layers of d 4,096 with 8 KV heads of 128; the experts carry no adapter. (all-linear sized
    # this too until session 42, where peft 0.21 adapts the router and experts as well: refused now.)
    assert memory.trainable_params == 32 * 16 * (2 * 4096 + 2 * (4096 + 1024) + 2 * 4096) == 13_631_488
    with pytest.raises(ConfigError, match="fused 3-D parameters"):
        finetune_memory(cfg, Workload(seq_len=64), FineTune(targets=("gate_proj",)))
    with pytest.raises(ConfigError, match="all-linear on mixtral: peft 0.21 adapts its router and routed experts"):
        finetune_memory(cfg, Workload(seq_len=64), FineTune(targets=("all-linear",)))
    # Qwen3-MoE: peft 0.21 adapts the fused experts' down_proj for target "down_proj" (a
    # ParamWrapper, lora_A of r x E rows), measured, not modelled: refused with its dense layer's.
    with pytest.raises(ConfigError, match="'down_proj' is not a linear layer of qwen3_moe"):
        finetune_memory(_odd("qwen3_moe", -1), Workload(seq_len=7), FineTune(targets=("down_proj",)))
    with pytest.raises(ConfigError, match="--recompute full"):
        finetune_memory(cfg, Workload(seq_len=64, recompute="full"), FineTune())
    # QLoRA: the experts stay in bf16 (bitsandbytes replaces nn.Linear only), so the nf4 base is
    # still most of the bf16 one, and the figures say why.
    lora, qlora = (finetune_memory(cfg, Workload(seq_len=64), FineTune(method=m)) for m in ("lora", "qlora"))
    assert 0.9 * lora.base_weights < qlora.base_weights < lora.base_weights
    assert any("routed experts" in note for note in qlora.notes)


def test_phi3_mini_default_is_the_fused_qkv_proj(capsys):
    """Phi-3-mini: d 3,072, 32 heads of 96 and 32 KV heads; qkv_proj A 16 x 3,072 + B 9,216 x 16."""
    memory = finetune_memory(load_preset("phi3-mini"), Workload(seq_len=2047, attention="sdpa"), FineTune())
    assert memory.trainable_params == 32 * (16 * 3072 + 9216 * 16) == 6_291_456
    with pytest.raises(ConfigError, match="'q_proj' is not a linear layer of phi3"):
        finetune_memory(load_preset("phi3-mini"), Workload(seq_len=64), FineTune(targets=("q_proj",)))
    assert cli.main(["finetune", "--model", "phi3-mini", "--lora-targets", "gate_up_proj", "--seq-len", "1024"]) == 0
    assert "lora r=16 on gate_up_proj" in capsys.readouterr().out


def _odd(family: str, index: int):
    from costmodel.hf import from_hf_config
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS
    from tests.test_hf_survey_configs import NEW_FAMILY_CONFIGS

    config = ODD_FAMILY_CONFIGS[family][index] if index >= 0 else NEW_FAMILY_CONFIGS[family]
    return from_hf_config(config, name=f"odd-{family}")


CASES = [  # (family, odd config: family_odd_configs' index, or -1: test_hf_survey_configs'), targets,
    # adapter dtype, attention
    ("mixtral", 0, ("q_proj", "k_proj", "v_proj", "o_proj"), "bf16", "sdpa"),
    ("mixtral", 8, None, "fp32", "eager"),  # 7 experts, top 4, MHA of head_dim 8
    ("qwen2_moe", 0, ("all-linear",), "fp32", "eager"),  # shared expert, layer 1 dense
    ("qwen2_moe", 3, ("o_proj", "q_proj"), "bf16", "sdpa"),  # decoder_sparse_step 2
    ("qwen2_moe", 0, ("gate_proj", "down_proj"), "fp32", "eager"),  # the shared expert's and layer 1's MLP
    ("qwen2_moe", 11, ("all-linear",), "bf16", "sdpa"),  # 4 layers, two dense, 9 experts
    # (Qwen3-MoE, Mixtral and OLMoE by their attention names: peft 0.21's all-linear adapts their router and
    # experts too, refused since session 42; these runs always handed peft the list targets_of made)
    ("qwen3_moe", -1, ("q_proj", "k_proj", "v_proj", "o_proj"), "bf16", "sdpa"),  # q/k norms, a dense layer
    ("gemma", 0, ("all-linear",), "bf16", "sdpa"),  # fp32 x_hat in every RMSNorm
    ("gemma", 2, ("q_proj", "v_proj"), "fp32", "eager"),
    ("smollm3", -1, ("all-linear",), "bf16", "sdpa"),  # RoPE left out on some layers
    ("granite", -1, ("all-linear",), "fp32", "eager"),  # embedding, residual and logit multipliers
    ("gemma2", 0, ("all-linear",), "bf16", "eager"),  # four norms a layer, soft caps, windows of 4
    ("gemma3_text", -1, ("all-linear",), "bf16", "eager"),  # four norms and fp32 q/k norms
    ("olmo2", -1, ("all-linear",), "bf16", "sdpa"),  # post-sublayer norms only, whole-width q/k norms
    ("olmo2", -1, ("q_proj", "down_proj"), "fp32", "eager"),
    ("phi3", 9, None, "bf16", "sdpa"),  # the default: the fused qkv_proj; o_proj keeps its own input
    ("phi3", 4, ("qkv_proj", "down_proj"), "fp32", "eager"),
    ("phi3", 0, ("gate_up_proj", "o_proj"), "bf16", "eager"),  # the fused gate/up projection
]


@pytest.mark.slow
@pytest.mark.parametrize("family, index, targets, adapter_dtype, attention", CASES)
def test_family_lora_equals_peft(family, index, targets, adapter_dtype, attention):
    pytest.importorskip("peft")
    workload = Workload(seq_len=7, batch=2, dtype="bf16", attention=attention)
    tune = FineTune(rank=3, alpha=6.0, targets=targets, adapter_dtype=adapter_dtype)
    assert_adamw_run_equals_peft(_odd(family, index), workload, tune)


@pytest.mark.slow
@pytest.mark.parametrize("family, index, targets", [("mixtral", 0, ("q_proj", "k_proj", "v_proj", "o_proj")), ("qwen2_moe", 0, ("all-linear",))])
def test_moe_qlora_equals_peft(family, index, targets):
    """QLoRA on a mixture of experts: bitsandbytes quantizes the nn.Linear layers (attention, the
    shared expert; not the router, which transformers leaves out) and leaves the fused 3-D routed
    experts in bf16: nf4's scope "linear" (costmodel/quantization.py)."""
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    workload = Workload(seq_len=7, batch=2, dtype="bf16", attention="sdpa")
    tune = FineTune(method="qlora", rank=3, alpha=6.0, targets=targets, adapter_dtype="bf16")
    assert_adamw_run_equals_peft(_odd(family, index), workload, tune)


MORE_MOE_CASES = [  # (test module whose CONFIGS holds the config, its key, method, targets, adapter dtype, attention)
    ("tests.test_hf_llama_variants", "olmoe", "lora", ("q_proj", "k_proj", "v_proj", "o_proj"), "bf16", "sdpa"),  # whole-width q/k norms
    ("tests.test_hf_llama_variants", "olmoe-biases", "lora", ("q_proj", "o_proj"), "fp32", "eager"),
    ("tests.test_hf_llama_variants", "olmoe", "qlora", ("q_proj", "k_proj", "v_proj", "o_proj"), "bf16", "sdpa"),
    ("tests.test_hf_moe_extra", "granitemoe", "lora", ("all-linear",), "bf16", "sdpa"),  # multipliers
    ("tests.test_hf_moe_extra", "granitemoe-defaults", "lora", None, "fp32", "eager"),
    ("tests.test_hf_moe_extra", "granitemoe", "qlora", ("all-linear",), "bf16", "sdpa"),
]


@pytest.mark.slow
@pytest.mark.parametrize("module, key, method, targets, adapter_dtype, attention", MORE_MOE_CASES)
def test_olmoe_and_granitemoe_equal_peft(module, key, method, targets, adapter_dtype, attention):
    """OLMoE and GraniteMoE: Llama's attention names, fused 3-D experts (GraniteMoE's
    ParallelExperts too), so the same accounting as Mixtral's."""
    import importlib

    pytest.importorskip("peft")
    if method == "qlora":
        pytest.importorskip("bitsandbytes")
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(importlib.import_module(module).CONFIGS[key], name=f"odd-{key}")
    workload = Workload(seq_len=7, batch=2, dtype="bf16", attention=attention)
    tune = FineTune(method=method, rank=3, alpha=6.0, targets=targets, adapter_dtype=adapter_dtype)
    assert_adamw_run_equals_peft(cfg, workload, tune)
