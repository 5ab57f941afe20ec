"""Configs of real models, as their config.json on the Hugging Face Hub writes them, that no preset,
odd config or formula was fitted to: the parameter count equals Hugging Face's class built from
the same dict, and (for the ones small enough to measure in seconds) every validate row is exact.

The dicts keep the fields that shape the model, with the Hub's keys and values (Falcon's
`num_kv_heads` and `new_decoder_architecture`, OPT's `do_layer_norm_before` and
`word_embed_proj_dim`, Phi-3.5's longrope scaling, Moonlight's `q_lora_rank: null`); the rope
factors are placeholders of the right length, which change no count.
"""

from __future__ import annotations

import pytest

from tests.family_configs import assert_rows_exact

pytest.importorskip("torch")

import torch  # noqa: E402
import transformers  # noqa: E402

from costmodel import estimate  # noqa: E402
from costmodel.config import Workload  # noqa: E402
from costmodel.presets import config_from_dict  # noqa: E402
from validate.compare import validate  # noqa: E402

#: name: (config.json's fields, total parameters of Hugging Face's class, active per token or None).
#: Published, rounded: Falcon-RW-1B 1.3B, Falcon-7B 7B, Falcon-40B 40B, OPT-350M 350M, Pythia-160M
#: 162,322,944 (Biderman et al. 2023, Table 1 "total params"), Mistral-NeMo 12B, Gemma-7B 8.54B,
#: Gemma-2-27B 27.2B, Phi-3.5-mini 3.8B, Qwen2-57B-A14B 57B with 14B active, Moonlight-16B-A3B 16B
#: with 3B active.
REAL = {
    "falcon-rw-1b": ({
        "model_type": "falcon", "alibi": True, "bias": True, "hidden_size": 2048, "multi_query": False,
        "num_attention_heads": 32, "num_hidden_layers": 24, "parallel_attn": False,
        "new_decoder_architecture": False, "vocab_size": 50304,
    }, 1_311_625_216, None),
    "falcon-7b": ({
        "model_type": "falcon", "alibi": False, "bias": False, "hidden_size": 4544, "multi_query": True,
        "num_attention_heads": 71, "num_hidden_layers": 32, "new_decoder_architecture": False,
        "parallel_attn": True, "vocab_size": 65024,
    }, 6_921_720_704, None),
    "falcon-40b": ({
        "model_type": "falcon", "alibi": False, "bias": False, "hidden_size": 8192, "multi_query": True,
        "num_attention_heads": 128, "num_kv_heads": 8, "num_hidden_layers": 60,
        "new_decoder_architecture": True, "parallel_attn": True, "vocab_size": 65024,
    }, 41_303_293_952, None),
    "opt-350m": ({
        "model_type": "opt", "do_layer_norm_before": False, "ffn_dim": 4096, "hidden_size": 1024,
        "num_attention_heads": 16, "num_hidden_layers": 24, "vocab_size": 50272,
        "word_embed_proj_dim": 512, "max_position_embeddings": 2048, "activation_function": "relu",
        "enable_bias": True,
    }, 331_196_416, None),
    "pythia-160m": ({
        "model_type": "gpt_neox", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "rotary_pct": 0.25, "vocab_size": 50304, "use_parallel_residual": True,
        "tie_word_embeddings": False, "max_position_embeddings": 2048, "hidden_act": "gelu",
    }, 162_322_944, None),
    "mistral-nemo-12b": ({
        "model_type": "mistral", "hidden_size": 5120, "head_dim": 128, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
        "vocab_size": 131072, "sliding_window": None, "max_position_embeddings": 1024000,
        "rope_theta": 1000000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    }, 12_247_782_400, None),
    "gemma-7b": ({
        "model_type": "gemma", "hidden_size": 3072, "head_dim": 256, "num_attention_heads": 16,
        "num_key_value_heads": 16, "intermediate_size": 24576, "num_hidden_layers": 28,
        "vocab_size": 256000, "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
    }, 8_537_680_896, None),
    "gemma-2-27b": ({
        "model_type": "gemma2", "hidden_size": 4608, "intermediate_size": 36864, "num_hidden_layers": 46,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 256000,
        "max_position_embeddings": 8192, "sliding_window": 4096, "query_pre_attn_scalar": 144,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
    }, 27_227_128_320, None),
    "phi-3.5-mini": ({
        "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "sliding_window": 262144, "tie_word_embeddings": False, "hidden_act": "silu",
        "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48},
    }, 3_821_079_552, None),
    "qwen2-57b-a14b": ({
        "model_type": "qwen2_moe", "hidden_size": 3584, "intermediate_size": 18944,
        "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480, "num_experts": 64,
        "num_experts_per_tok": 8, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "vocab_size": 151936, "decoder_sparse_step": 1,
        "norm_topk_prob": False, "max_position_embeddings": 32768, "tie_word_embeddings": False,
    }, 57_408_658_944, 14_249_270_784),
    "moonlight-16b-a3b": ({
        "model_type": "deepseek_v3", "hidden_size": 2048, "intermediate_size": 11264,
        "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
        "num_experts_per_tok": 6, "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": None,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_hidden_layers": 27, "n_group": 1, "topk_group": 1,
        "vocab_size": 163840, "routed_scaling_factor": 2.446, "scoring_func": "sigmoid",
        "topk_method": "noaux_tc", "tie_word_embeddings": False, "max_position_embeddings": 8192,
        "norm_topk_prob": True,
    }, 15_960_108_544, 2_914_774_528),
}

#: Small enough to measure every validate row under FakeTensorMode in a few seconds each.
MEASURED = ("falcon-rw-1b", "opt-350m", "pythia-160m", "phi-3.5-mini", "moonlight-16b-a3b")


def hugging_face_count(fields: dict) -> int:
    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


# Building these takes more than 3 s (falcon-rw-1b 13 s, moonlight-16b-a3b 4 s on 2 cores)
SLOW_BUILDS = ("falcon-rw-1b", "moonlight-16b-a3b")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_BUILDS
                                  else name for name in REAL])
def test_real_config_parameters_equal_hugging_face(name):
    fields, total, active = REAL[name]
    params = estimate(dict(fields, name=name), seq_len=64).to_dict()["params"]
    assert params["total"] == total == hugging_face_count(fields)
    assert params.get("active") == active


@pytest.mark.slow
@pytest.mark.parametrize("name", MEASURED)
def test_real_config_is_exact_on_every_validate_row(name):
    fields, _, _ = REAL[name]
    cfg = config_from_dict(dict(fields), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=32, batch=2, dtype="bf16", gen_tokens=2), target="hf")
    assert_rows_exact(rows)
