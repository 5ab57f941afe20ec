"""What validate/hf_survey.py found running the CLI on transformers' own configs, kept as tests.

A field that divides another (attention heads, Qwen2-MoE's decoder_sparse_step) set to 0 was a
ZeroDivisionError traceback; it is one `error:` line naming the field, exit 2.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_configs import FAMILY_CONFIGS

#: (family config, field, value): each was a traceback before validate/FINDINGS.md's survey.
ZERO_DIVISORS = [
    ("phi3", "num_attention_heads", 0),
    ("falcon_new", "num_attention_heads", 0),
    ("bloom", "n_head", 0),
    ("bloom", "num_attention_heads", 0),
    ("qwen2_moe", "decoder_sparse_step", 0),
]


@pytest.mark.parametrize("family, field, value", ZERO_DIVISORS)
def test_a_zero_divisor_is_one_line_naming_the_field(family, field, value, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**FAMILY_CONFIGS[family], field: value}))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:")
    assert field in err and "at least 1" in err


# =============================================================================================
# The families the survey added: model types whose blocks already existed under other field names

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs of the added model types (sizes as tests/family_configs.py; expert widths a
#: multiple of 8, which the experts' grouped_mm needs in bf16).
NEW_FAMILY_CONFIGS = {
    # Ministral: Mistral's layers with a per-layer window (layer_types).
    "ministral": dict(_BASE, model_type="ministral", num_key_value_heads=2, head_dim=10,
                      sliding_window=5, rope_theta=10000.0,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
    # Gemma 3 text: Gemma 2's four norms and query_pre_attn_scalar, Qwen3-style q/k norms,
    # five sliding layers to one full by default (here sliding_window_pattern 2), no soft caps.
    "gemma3_text": dict(_BASE, model_type="gemma3_text", num_key_value_heads=2, head_dim=10,
                        query_pre_attn_scalar=12, sliding_window=4, sliding_window_pattern=2,
                        tie_word_embeddings=True),
    # Qwen3-MoE: Qwen3's attention, Qwen2-MoE's routing without the shared expert, a dense layer.
    "qwen3_moe": dict(_BASE, model_type="qwen3_moe", num_key_value_heads=2, head_dim=10,
                      num_experts=5, num_experts_per_tok=2, moe_intermediate_size=24,
                      mlp_only_layers=[1], norm_topk_prob=True, tie_word_embeddings=False),
    # DeepSeek-V2 (Lite: no query compression): latent attention, a first dense layer, softmax
    # routing over routed experts, two shared experts.
    "deepseek_v2": dict(_BASE, model_type="deepseek_v2", num_key_value_heads=6, q_lora_rank=None,
                        kv_lora_rank=7, qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5,
                        n_routed_experts=5, num_experts_per_tok=2, moe_intermediate_size=16,
                        n_shared_experts=2, first_k_dense_replace=1, topk_method="greedy"),
}


def _hf_count(fields: dict) -> int:
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("family", sorted(NEW_FAMILY_CONFIGS))
def test_added_family_parameters_equal_hugging_face(family):
    pytest.importorskip("transformers")
    from costmodel import estimate

    fields = NEW_FAMILY_CONFIGS[family]
    total = estimate(dict(fields, name=family), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count(fields)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(NEW_FAMILY_CONFIGS))
def test_added_family_is_exact_on_every_validate_row(family):
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(NEW_FAMILY_CONFIGS[family]), source=family, name=family)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2), target="hf")
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs", "bytes saved for backward",
            "KV-cache bytes"} <= {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []
