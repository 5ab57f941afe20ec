"""The released config.json files of the families validate/hf_survey.py added (Qwen3-30B-A3B,
DeepSeek-V2-Lite, Gemma 3 1B, Granite 3.2 2B, SmolLM3 3B, OLMo 2 1B), kept as tests: their
parameters equal Hugging Face's class count and the published totals, and `--config` reads a
model folder, a multimodal config's language model and a config that names only its architecture.
The survey's small family configs are tests/test_hf_survey_configs.py's.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_configs import hf_meta_count as _hf_count


#: Real config.json files of the added families (the fields that shape the model, with the Hub's
#: keys and values), with the published total where one is published.
#: - Qwen/Qwen3-30B-A3B: 48 layers, hidden 2048, 32 query and 4 KV heads of 128, 128 experts of 768,
#:   8 per token (github.com/zyzshishui/slime scripts/models/qwen3-30B-A3B.sh; model card: 30.5B
#:   total, 3.3B activated).
#: - deepseek-ai/DeepSeek-V2-Lite: 27 layers, hidden 2048, 16 heads, q_lora_rank null, kv_lora_rank
#:   512, one dense layer of 10944, 64 routed experts of 1408 (6 per token) and 2 shared (Megatron
#:   Bridge's deepseek_v2_lite recipe; model card: 15.7B total, 2.4B active).
#: - google/gemma-3-1b-it: 26 layers, hidden 1152, 4 query heads and 1 KV head of 256, a window of
#:   512 on five layers in six (keras-hub keras_hub/src/models/gemma3/gemma3_presets.py:
#:   "gemma3_instruct_1b" params 999,885,952).
REAL_ADDED = {
    "qwen3-30b-a3b": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
        "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True,
        "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 48, "num_key_value_heads": 4, "rope_scaling": None,
        "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
        "use_sliding_window": False, "vocab_size": 151936,
    },
    "deepseek-v2-lite": {
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
        "n_shared_experts": 2, "norm_topk_prob": False, "num_attention_heads": 16,
        "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
        "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                         "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                         "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
        "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy",
        "v_head_dim": 128, "vocab_size": 102400,
    },
    "gemma-3-1b-it": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "attention_bias": False,
        "attn_logit_softcapping": None, "final_logit_softcapping": None, "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "intermediate_size": 6912,
        "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 26,
        "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512,
        "sliding_window_pattern": 6, "vocab_size": 262144,
    },
    # ibm-granite/granite-3.2-2b-instruct (granite-3.1-2b's shape: 40 layers, hidden 2048, 32
    # query and 8 KV heads, 8192-wide MLP, 49,155 tokens, tied embeddings).
    "granite-3.2-2b-instruct": {
        "architectures": ["GraniteForCausalLM"], "model_type": "granite", "attention_bias": False,
        "attention_multiplier": 0.015625, "embedding_multiplier": 12.0, "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 8192, "logits_scaling": 8.0,
        "max_position_embeddings": 131072, "mlp_bias": False, "num_attention_heads": 32,
        "num_hidden_layers": 40, "num_key_value_heads": 8, "residual_multiplier": 0.22,
        "rope_theta": 5000000.0, "tie_word_embeddings": True, "vocab_size": 49155,
    },
    # HuggingFaceTB/SmolLM3-3B: 36 layers, hidden 2048, 16 query and 4 KV heads, 11008-wide MLP,
    # 128,256 tokens, tied embeddings, no RoPE on every fourth layer (layers 3, 7, ..., 35).
    "smollm3-3b": {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11008,
        "max_position_embeddings": 65536, "mlp_bias": False, "num_attention_heads": 16,
        "num_hidden_layers": 36, "num_key_value_heads": 4, "no_rope_layer_interval": 4,
        "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)], "pad_token_id": 128004,
        "rope_theta": 5000000.0, "sliding_window": None, "tie_word_embeddings": True,
        "use_sliding_window": False, "vocab_size": 128256,
    },
    # allenai/OLMo-2-0425-1B: 16 layers, hidden 2048, 16 heads (no GQA), 8192-wide MLP, 100,352
    # tokens, untied embeddings.
    "olmo-2-0425-1b": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
        "max_position_embeddings": 4096, "num_attention_heads": 16, "num_hidden_layers": 16,
        "num_key_value_heads": 16, "pad_token_id": 100277, "rms_norm_eps": 1e-06,
        "rope_theta": 500000, "tie_word_embeddings": False, "vocab_size": 100352,
    },
}
#: Published totals: Gemma-3-1B keras-hub's (above); Granite 3.2 2B the Hub's safetensors count
#: of ibm-granite/granite-3.2-2b-instruct and ibm-granite/granite-guardian-3.1-2b, 2,533,531,648,
#: as a public parameter table of Hub repos lists them (find_string "2,533,531,648"); SmolLM3-3B
#: 3,075,098,624 and OLMo-2-0425-1B (its Instruct) 1,484,916,736 in the same table
#: (HuggingFaceTB/SmolLM3-3B, allenai/OLMo-2-0425-1B-Instruct).
PUBLISHED = {"gemma-3-1b-it": 999_885_952, "granite-3.2-2b-instruct": 2_533_531_648,
             "smollm3-3b": 3_075_098_624, "olmo-2-0425-1b": 1_484_916_736}


def _cli_total(name: str, tmp_path, capsys) -> int:
    """The parameters `estimate --config` reports for REAL_ADDED[name]'s config.json."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(REAL_ADDED[name]))
    code, out, _ = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0
    return json.loads(out)["params"]["total"]


@pytest.mark.parametrize("name", sorted(REAL_ADDED))
def test_real_added_config_parameters_equal_hugging_face(name, tmp_path, capsys):
    pytest.importorskip("transformers")
    fields = REAL_ADDED[name]
    total = _cli_total(name, tmp_path, capsys)
    assert total == _hf_count({k: v for k, v in fields.items() if k != "architectures"})


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_real_added_config_parameters_equal_the_published_total(name, tmp_path, capsys):
    assert name in REAL_ADDED
    assert _cli_total(name, tmp_path, capsys) == PUBLISHED[name]


def test_a_model_folder_is_read_through_its_config_json(tmp_path, capsys):
    """`--config` on a folder downloaded from the Hub reads its config.json (the folder names it)."""
    folder = tmp_path / "gemma-3-1b-it"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(REAL_ADDED["gemma-3-1b-it"]))
    code, out, _ = run_main(["estimate", "--config", str(folder), "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    assert result["params"]["total"] == 999_885_952
    assert result["inputs"]["model"] == "gemma-3-1b-it"
    code, _, err = run_main(["estimate", "--config", str(tmp_path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "no config.json" in err
    # --model takes the same folder, as transformers' from_pretrained takes a local path
    code, out, _ = run_main(["estimate", "--model", str(folder), "--json"], capsys)
    assert code == 0 and json.loads(out)["params"]["total"] == 999_885_952


def test_a_multimodal_config_is_read_as_its_language_model(tmp_path, capsys):
    """Gemma 3 4B's config.json is Gemma3ForConditionalGeneration (a vision tower too): read as its
    text_config, the head tied as Gemma3Config's default has it (tests/test_hf_multimodal.py)."""
    from costmodel import estimate
    from costmodel.hf import from_hf_config

    text = dict(REAL_ADDED["gemma-3-1b-it"], hidden_size=2560, num_hidden_layers=34)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["Gemma3ForConditionalGeneration"],
                                "model_type": "gemma3", "text_config": text,
                                "vision_config": {"model_type": "siglip_vision_model"}}))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    alone = from_hf_config(dict(text, tie_word_embeddings=True), name="text")
    assert json.loads(out)["params"]["total"] == estimate(alone).to_dict()["params"]["total"]


@pytest.mark.parametrize("name", sorted(REAL_ADDED))
def test_architectures_alone_name_the_added_model_types(name):
    """A config.json that names only `architectures` is read as the model type that class is
    registered under (costmodel.hf.ARCHITECTURE_TYPES)."""
    from costmodel.hf import from_hf_config

    fields = REAL_ADDED[name]
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    assert from_hf_config(bare, name=name) == from_hf_config(fields, name=name)
