"""A dozen deliberately odd config.json dicts for every family of issue 14, for parity tests.

Each dict is what a config.json on the Hub could hold for its `model_type`, at odd sizes (hidden 48
or 40, 6 or 5 heads, intermediate 37 or 29, vocab 99 or 101, head dimensions other than
hidden/heads wherever the family reads `head_dim`) so that a swapped dimension shows up as a wrong
count. The variants walk each family's switches: biases, tying, GQA and MQA, windows on all or
some layers, partial rotary, parallel or sequential residuals, pre- or post-norm, projections,
dropout where real configs of the family set it, and for the experts their counts, top-k, shared
experts and dense layers. Fields left out take transformers 5.24's defaults, which is part of
what is tested (Qwen3's and Gemma's head_dim, Mistral's window, GPT-NeoX's rotary_pct).

Experts' widths and hidden sizes are multiples of 8: torch._grouped_mm, transformers' default
experts kernel, needs 16-byte row strides on the CPU (FINDINGS 11.3).
"""

from __future__ import annotations

from typing import Any

_D = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
          num_hidden_layers=2, max_position_embeddings=64)
_S = dict(vocab_size=101, hidden_size=40, num_attention_heads=5, intermediate_size=29,
          num_hidden_layers=3, max_position_embeddings=64)


def _llama() -> list[dict[str, Any]]:
    base = dict(_D, model_type="llama", tie_word_embeddings=False)
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    return [
        dict(base, num_key_value_heads=2, head_dim=10, rope_scaling=scaling),
        dict(base, num_key_value_heads=1, rope_scaling=scaling, rope_theta=500000.0),
        dict(base, num_key_value_heads=3, attention_bias=True, mlp_bias=True),
        dict(base, num_key_value_heads=2, tie_word_embeddings=True, head_dim=12),
        dict(_S, model_type="llama", num_key_value_heads=5),
        dict(_S, model_type="llama", num_key_value_heads=1, head_dim=6, mlp_bias=True),
        dict(base, num_hidden_layers=1, num_key_value_heads=2,
             rope_scaling={"rope_type": "linear", "factor": 2.0}),
        dict(base, num_key_value_heads=2, head_dim=16, rope_theta=1000000.0),
        dict(base, num_key_value_heads=6, attention_dropout=0.1),
        dict(base, num_key_value_heads=2, head_dim=8, hidden_act="gelu"),
        dict(base, num_key_value_heads=2, rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                             "rope_theta": 10000.0}),
        dict(base, num_hidden_layers=3, num_key_value_heads=3, head_dim=14, attention_bias=True),
    ]


def _qwen2() -> list[dict[str, Any]]:
    base = dict(_D, model_type="qwen2", num_key_value_heads=2)
    return [
        dict(base, tie_word_embeddings=True),
        dict(base, tie_word_embeddings=False),
        dict(base, num_key_value_heads=1, tie_word_embeddings=True),
        dict(base, num_key_value_heads=6),  # MHA (the class default would be 32 KV heads)
        dict(_S, model_type="qwen2", num_key_value_heads=5, tie_word_embeddings=False),
        dict(base, head_dim=10),  # an extra key the attention reads with getattr
        dict(base, num_hidden_layers=3, use_sliding_window=True, sliding_window=4,
             max_window_layers=1),  # layers 1 and 2 slide
        dict(base, use_sliding_window=True, sliding_window=6, max_window_layers=0),
        dict(base, use_sliding_window=False, sliding_window=4),  # no window after all
        dict(base, num_hidden_layers=1, attention_dropout=0.1),
        dict(base, rope_scaling={"type": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 32}),
        dict(base, num_hidden_layers=3, num_key_value_heads=3, intermediate_size=53),
    ]


def _qwen3() -> list[dict[str, Any]]:
    base = dict(_D, model_type="qwen3", num_key_value_heads=2, tie_word_embeddings=False)
    return [
        dict(base, head_dim=10),
        dict(base),  # head_dim absent: Qwen3Config's 128, not hidden/heads
        dict(base, head_dim=10, attention_bias=True),
        dict(base, head_dim=8, num_key_value_heads=1, tie_word_embeddings=True),
        dict(_S, model_type="qwen3", num_key_value_heads=5, head_dim=12),
        dict(base, head_dim=10, num_hidden_layers=3, use_sliding_window=True, sliding_window=4,
             max_window_layers=2),
        dict(base, head_dim=6, num_key_value_heads=6),
        dict(base, head_dim=10, attention_dropout=0.1),
        dict(base, head_dim=14, num_hidden_layers=1),
        dict(base, head_dim=10, layer_types=["full_attention", "sliding_attention"],
             use_sliding_window=True, sliding_window=5),
        dict(base, head_dim=16, num_key_value_heads=3, intermediate_size=53),
        dict(base, head_dim=10, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 32}),
    ]


def _gemma() -> list[dict[str, Any]]:
    base = dict(_D, model_type="gemma", num_key_value_heads=2, head_dim=10)
    return [
        dict(base, hidden_act="gelu_pytorch_tanh"),
        dict(base, num_key_value_heads=1),  # Gemma-2B: multi-query
        dict(base, hidden_act="gelu"),  # the legacy value, read as the tanh approximation
        dict(base, tie_word_embeddings=False),
        dict(base, head_dim=16, num_key_value_heads=6),
        dict(_S, model_type="gemma", num_key_value_heads=5, head_dim=8),
        dict(_D, model_type="gemma", num_key_value_heads=2),  # head_dim absent: 256
        dict(base, attention_bias=True),
        dict(base, num_hidden_layers=3, head_dim=12, num_key_value_heads=3),
        dict(base, num_hidden_layers=1, attention_dropout=0.1),
        dict(base, intermediate_size=53, head_dim=6),
        dict(base, num_key_value_heads=1, head_dim=18, tie_word_embeddings=False),
    ]


def _gemma2() -> list[dict[str, Any]]:
    base = dict(_D, model_type="gemma2", num_hidden_layers=3, num_key_value_heads=2, head_dim=10,
                sliding_window=4, query_pre_attn_scalar=12)
    return [
        dict(base, attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
        dict(base, attn_logit_softcapping=None, final_logit_softcapping=None),
        dict(base, attn_logit_softcapping=None),
        dict(base, final_logit_softcapping=None, num_hidden_layers=4),
        dict(base, sliding_window=20),  # longer than every prompt here
        dict(base, num_hidden_layers=1),  # one sliding layer and no full one
        dict(base, layer_types=["full_attention", "sliding_attention", "sliding_attention"]),
        dict(base, tie_word_embeddings=False, num_key_value_heads=1),
        dict(_S, model_type="gemma2", num_key_value_heads=5, head_dim=8, sliding_window=3),
        dict(base, hidden_activation="gelu_pytorch_tanh", head_dim=16, num_key_value_heads=6),
        dict(base, attention_bias=True, query_pre_attn_scalar=10),
        dict(_D, model_type="gemma2", num_key_value_heads=2),  # class defaults: head_dim 256, w 4096
    ]


def _phi3() -> list[dict[str, Any]]:
    base = dict(_D, model_type="phi3", num_key_value_heads=2, pad_token_id=None,
                tie_word_embeddings=False)
    return [
        dict(base, sliding_window=5),
        dict(base, partial_rotary_factor=0.75, tie_word_embeddings=True),
        dict(base),  # no window
        dict(base, num_key_value_heads=None, sliding_window=3),  # MHA
        dict(base, num_key_value_heads=1, partial_rotary_factor=0.5),
        dict(_S, model_type="phi3", num_key_value_heads=5, pad_token_id=None, sliding_window=6),
        dict(base, resid_pdrop=0.1),
        dict(base, attention_dropout=0.1, sliding_window=4),
        dict(base, head_dim=10, sliding_window=7),
        dict(base, num_hidden_layers=3, num_key_value_heads=3, intermediate_size=53),
        dict(base, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                    "partial_rotary_factor": 0.25}),
        dict(base, num_hidden_layers=1, sliding_window=2, resid_pdrop=0.2, attention_dropout=0.1),
    ]


def _mistral() -> list[dict[str, Any]]:
    base = dict(_D, model_type="mistral", num_key_value_heads=2, tie_word_embeddings=False)
    return [
        dict(base, head_dim=10, sliding_window=4),
        dict(base),  # sliding_window absent: MistralConfig's 4096
        dict(base, sliding_window=None),
        dict(base, num_key_value_heads=1, sliding_window=7),
        dict(_S, model_type="mistral", num_key_value_heads=5, sliding_window=2),
        dict(base, head_dim=12, sliding_window=11, tie_word_embeddings=True),
    ]


def _gpt_neox() -> list[dict[str, Any]]:
    base = dict(_D, model_type="gpt_neox", tie_word_embeddings=False)
    return [
        dict(base, rotary_pct=0.25, use_parallel_residual=True),
        dict(base),  # rotary_pct absent: 0.25
        dict(base, rotary_pct=1.0),
        dict(base, rotary_pct=0.5, use_parallel_residual=False),
        dict(base, attention_bias=False, rotary_pct=0.5),
        dict(base, tie_word_embeddings=True),
        dict(_S, model_type="gpt_neox", rotary_pct=0.5),
        dict(base, hidden_dropout=0.1, rotary_pct=0.5),
        dict(base, attention_dropout=0.1, hidden_dropout=0.1, use_parallel_residual=False),
        dict(base, num_hidden_layers=1, intermediate_size=53, hidden_act="gelu_pytorch_tanh"),
        dict(base, rope_scaling={"rope_type": "linear", "factor": 2.0}, rotary_pct=0.75),
        dict(base, num_hidden_layers=3, num_attention_heads=4, rotary_pct=0.5),
    ]


def _falcon() -> list[dict[str, Any]]:
    new = dict(_D, model_type="falcon", new_decoder_architecture=True, num_kv_heads=2,
               ffn_hidden_size=37, bias=False, parallel_attn=True, alibi=False)
    old = dict(_D, model_type="falcon", new_decoder_architecture=False, multi_query=True,
               ffn_hidden_size=37, bias=False, parallel_attn=True, alibi=False)
    return [
        dict(new),
        dict(new, num_kv_heads=1),
        dict(new, num_kv_heads=6, bias=True),
        dict(new, num_ln_in_parallel_attn=1),  # Falcon2-11B's layout
        dict(new, tie_word_embeddings=False, ffn_hidden_size=None),  # 4 d
        dict(old),
        dict(old, bias=True, tie_word_embeddings=False),
        dict(old, parallel_attn=False),
        dict(dict(_S, model_type="falcon"), alibi=False),  # FalconConfig's defaults: the 7B layout
        dict(new, hidden_dropout=0.1),
        dict(old, num_hidden_layers=3, ffn_hidden_size=53),
        dict(new, num_hidden_layers=1, num_kv_heads=3, activation="relu"),
        # Falcon-RW: ALiBi, multi-head attention, sequential, biases
        dict(old, alibi=True, multi_query=False, parallel_attn=False, bias=True),
        dict(old, alibi=True, multi_query=False, parallel_attn=True, num_hidden_layers=3),
        dict(_S, model_type="falcon", alibi=True, multi_query=False, parallel_attn=False,
             tie_word_embeddings=False),
    ]


def _opt() -> list[dict[str, Any]]:
    base = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, ffn_dim=37,
                num_hidden_layers=2, max_position_embeddings=64, model_type="opt", dropout=0.0)
    return [
        dict(base, word_embed_proj_dim=40, do_layer_norm_before=False),  # OPT-350m's layout
        dict(base, word_embed_proj_dim=48, do_layer_norm_before=True),
        dict(base),  # word_embed_proj_dim absent: hidden_size
        dict(base, dropout=0.1),  # what every OPT checkpoint sets
        dict(base, dropout=0.1, do_layer_norm_before=False, word_embed_proj_dim=32),
        dict(base, enable_bias=False),
        dict(base, tie_word_embeddings=False, word_embed_proj_dim=40),
        dict(base, attention_dropout=0.1, dropout=0.1),
        dict(base, num_hidden_layers=3, ffn_dim=53, num_attention_heads=4),
        dict(base, num_hidden_layers=1, do_layer_norm_before=False),
        dict(vocab_size=101, hidden_size=40, num_attention_heads=5, ffn_dim=29, num_hidden_layers=2,
             max_position_embeddings=40, model_type="opt"),  # the class's dropout 0.1
        dict(base, activation_function="gelu", word_embed_proj_dim=24),
    ]


def _bloom() -> list[dict[str, Any]]:
    base = dict(vocab_size=99, hidden_size=48, n_head=6, n_layer=2, model_type="bloom")
    return [
        dict(base),
        dict(base, tie_word_embeddings=False),
        dict(base, n_head=4),
        dict(base, n_layer=3, n_head=8),
        dict(base, n_layer=1),
        dict(vocab_size=101, hidden_size=40, n_head=5, n_layer=2, model_type="bloom"),
        dict(base, hidden_dropout=0.1),
        dict(base, attention_dropout=0.1),
        dict(base, hidden_size=64, n_head=16),
        dict(base, num_hidden_layers=2, num_attention_heads=3),  # the attribute-mapped names
        dict(base, n_embed=56, n_head=7),  # the legacy name of hidden_size
        dict(base, vocab_size=37, hidden_size=24, n_head=2, n_layer=3),
    ]


def _mixtral() -> list[dict[str, Any]]:
    base = dict(_D, model_type="mixtral", num_key_value_heads=2, head_dim=10,
                intermediate_size=40, num_local_experts=5, num_experts_per_tok=2,
                tie_word_embeddings=False)
    return [
        dict(base),
        dict(base, num_experts_per_tok=1),
        dict(base, num_local_experts=3, num_experts_per_tok=3),
        dict(base, num_key_value_heads=1, intermediate_size=24),
        dict(base, head_dim=None, num_key_value_heads=6),
        dict(base, sliding_window=4),
        dict(base, num_experts=4),  # the attribute-mapped name of num_local_experts
        dict(base, tie_word_embeddings=True, num_hidden_layers=3),
        dict(base, hidden_size=40, num_attention_heads=5, num_key_value_heads=5, head_dim=8,
             num_local_experts=7, num_experts_per_tok=4, intermediate_size=16),
        dict(base, num_hidden_layers=1, attention_dropout=0.1),
        dict(base, router_jitter_noise=0.0, intermediate_size=56),
        dict(base, num_local_experts=8, num_experts_per_tok=2, intermediate_size=8),
    ]


def _qwen2_moe() -> list[dict[str, Any]]:
    base = dict(_D, model_type="qwen2_moe", num_key_value_heads=2, num_experts=6,
                num_experts_per_tok=3, moe_intermediate_size=24,
                shared_expert_intermediate_size=29, tie_word_embeddings=False)
    return [
        dict(base, mlp_only_layers=[1], norm_topk_prob=False),
        dict(base, norm_topk_prob=True),
        dict(base),  # mlp_only_layers absent: every layer has experts
        dict(base, num_hidden_layers=3, decoder_sparse_step=2),  # layer 1 only
        dict(base, mlp_only_layers=[0], num_experts_per_tok=1, shared_expert_intermediate_size=16),
        dict(base, qkv_bias=False),
        dict(base, num_experts=4, num_experts_per_tok=4, moe_intermediate_size=16),
        dict(base, num_key_value_heads=6, tie_word_embeddings=True),
        dict(base, hidden_size=40, num_attention_heads=5, num_key_value_heads=1,
             moe_intermediate_size=8, intermediate_size=29),
        dict(base, num_hidden_layers=1),
        dict(base, attention_dropout=0.1, mlp_only_layers=[1]),
        dict(base, num_hidden_layers=4, mlp_only_layers=[0, 3], num_experts=9),
    ]


def _deepseek_v3() -> list[dict[str, Any]]:
    base = dict(_D, model_type="deepseek_v3", num_hidden_layers=3, num_key_value_heads=6,
                q_lora_rank=20, kv_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=6,
                v_head_dim=7, n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3,
                n_shared_experts=1, moe_intermediate_size=16, first_k_dense_replace=1,
                routed_scaling_factor=2.5, norm_topk_prob=True, tie_word_embeddings=False)
    return [
        dict(base),
        dict(base, q_lora_rank=None),  # DeepSeek-V2-Lite-style direct query projection
        dict(base, first_k_dense_replace=0),
        dict(base, first_k_dense_replace=2, n_shared_experts=2),
        dict(base, n_shared_experts=0),
        dict(base, norm_topk_prob=False),
        dict(base, n_group=2, topk_group=1, num_experts_per_tok=2),
        dict(base, attention_bias=True),
        dict(base, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, kv_lora_rank=16),
        dict(base, num_attention_heads=4, num_key_value_heads=4, moe_intermediate_size=8),
        dict(base, rope_interleave=False, tie_word_embeddings=True),
        dict(base, n_routed_experts=16, n_group=8, topk_group=3, num_experts_per_tok=4,
             num_hidden_layers=2),
    ]


ODD_FAMILY_CONFIGS: dict[str, list[dict[str, Any]]] = {
    "llama": _llama(), "qwen2": _qwen2(), "qwen3": _qwen3(), "gemma": _gemma(),
    "gemma2": _gemma2(), "phi3": _phi3(), "mistral": _mistral(), "gpt_neox": _gpt_neox(),
    "falcon": _falcon(), "opt": _opt(), "bloom": _bloom(), "mixtral": _mixtral(),
    "qwen2_moe": _qwen2_moe(), "deepseek_v3": _deepseek_v3(),
}
MOE_FAMILIES = ("mixtral", "qwen2_moe", "deepseek_v3")


def odd_family_cases() -> list[tuple[str, dict[str, Any]]]:
    """(id, config dict) for every odd config: "family-index"."""
    return [(f"{family}-{i}", config) for family, configs in ODD_FAMILY_CONFIGS.items()
            for i, config in enumerate(configs)]
