"""Hub config.json files of 2025-2026 open models (session 38, validate/FINDINGS.md "Hub config.json files
of 2025-2026 models"), written out as the Hub has them, full size: every field of the file, nulls and
lists included. SOURCES says where each came from: "quoted" where a public file found with the library's
find_string quotes the Hub file's fields (its id for read_file), "from the Hub file" where the fields were
written out from the published file and its sizes checked against the model card's. tests/
test_hub_configs_session38.py pins each one's parameter count, ours and transformers 5.24's."""

from __future__ import annotations

from typing import Any

CONFIGS: dict[str, dict[str, Any]] = {}
CONFIGS["qwen3-next-80b-a3b-instruct"] = {
 "architectures": ["Qwen3NextForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643,
 "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu",
 "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
 "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
 "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_next", "moe_intermediate_size": 512,
 "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10,
 "num_hidden_layers": 48, "num_key_value_heads": 2, "output_router_logits": False, "partial_rotary_factor": 0.25,
 "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
 "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
 "transformers_version": "4.57.0.dev0", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
GLM45 = {"architectures": ["Glm4MoeForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
 "eos_token_id": [151329, 151336, 151338], "first_k_dense_replace": 3, "head_dim": 128, "hidden_act": "silu",
 "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 131072,
 "model_type": "glm4_moe", "moe_intermediate_size": 1536, "n_group": 1, "n_routed_experts": 160, "n_shared_experts": 1,
 "norm_topk_prob": True, "num_attention_heads": 96, "num_experts_per_tok": 8, "num_hidden_layers": 92,
 "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "pad_token_id": 151329, "partial_rotary_factor": 0.5,
 "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000, "routed_scaling_factor": 2.5,
 "tie_word_embeddings": False, "topk_group": 1, "torch_dtype": "bfloat16", "transformers_version": "4.54.0",
 "use_cache": True, "use_qk_norm": True, "vocab_size": 151552}
CONFIGS["glm-4.5"] = GLM45
CONFIGS["glm-4.6"] = dict(GLM45, max_position_embeddings=202752, transformers_version="4.57.1")
CONFIGS["glm-4.5-air"] = dict(GLM45, first_k_dense_replace=1, hidden_size=4096, intermediate_size=10944,
  moe_intermediate_size=1408, n_routed_experts=128, num_hidden_layers=46, use_qk_norm=False, transformers_version="4.54.1",
  routed_scaling_factor=1.0)
CONFIGS["minimax-m2"] = {"architectures": ["MiniMaxM2ForCausalLM"], "attn_type_list": [1] * 62, "bos_token_id": None,
 "eos_token_id": None, "head_dim": 128, "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 1536,
 "max_position_embeddings": 196608, "model_type": "minimax_m2", "mtp_transformer_layers": 1, "num_attention_heads": 48,
 "num_experts_per_tok": 8, "num_hidden_layers": 62, "num_key_value_heads": 8, "num_local_experts": 256,
 "num_mtp_modules": 3, "output_router_logits": False, "qk_norm_type": "per_layer", "rms_norm_eps": 1e-06,
 "rope_theta": 5000000, "rotary_dim": 64, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0,
 "scoring_func": "sigmoid", "shared_intermediate_size": 0, "tie_word_embeddings": False,
 "transformers_version": "4.46.1", "use_cache": True, "use_mtp": True, "use_qk_norm": True, "use_routing_bias": True,
 "vocab_size": 200064, "torch_dtype": "bfloat16",
 "quantization_config": {"activation_scheme": "dynamic", "fmt": "float8_e4m3fn", "quant_method": "fp8",
   "weight_block_size": [128, 128], "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]}}
CONFIGS["hunyuan-a13b-instruct"] = {"architectures": ["HunYuanMoEV1ForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.0, "attention_head_dim": 128, "bos_token_id": 1, "eos_token_id": 127960, "head_dim": 128,
 "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 3072,
 "max_position_embeddings": 32768, "mlp_bias": False, "model_type": "hunyuan_v1_moe",
 "moe_intermediate_size": [3072] * 32, "moe_topk": [8] * 32, "num_attention_heads": 32, "num_experts": 64,
 "num_hidden_layers": 32, "num_key_value_heads": 8, "num_shared_expert": [1] * 32, "pad_token_id": 127961,
 "rms_norm_eps": 1e-05, "rope_scaling": {"alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0,
   "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"}, "rope_theta": 10000.0, "tie_word_embeddings": True,
 "torch_dtype": "bfloat16", "use_cache": True, "use_mixed_mlp_moe": True, "use_qk_norm": True, "vocab_size": 128167}
CONFIGS["hunyuan-7b-instruct"] = {"architectures": ["HunYuanDenseV1ForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.1, "bos_token_id": 1, "eos_token_id": 127960, "head_dim": 128, "hidden_act": "silu",
 "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
 "mlp_bias": False, "model_type": "hunyuan_v1_dense", "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "pad_token_id": 127961, "rms_norm_eps": 1e-05,
 "rope_scaling": {"alpha": 50.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
   "type": "dynamic"}, "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
 "use_cache": True, "use_qk_norm": True, "vocab_size": 128256}
CONFIGS["seed-oss-36b-instruct"] = {"architectures": ["SeedOssForCausalLM"], "attention_bias": True,
 "attention_dropout": 0.1, "attention_out_bias": False, "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2,
 "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 27648,
 "max_position_embeddings": 524288, "mlp_bias": False, "model_type": "seed_oss", "num_attention_heads": 80,
 "num_hidden_layers": 64, "num_key_value_heads": 8, "residual_dropout": 0.1, "rms_norm_eps": 1e-06,
 "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0, "tie_word_embeddings": False,
 "torch_dtype": "bfloat16", "transformers_version": "4.55.0", "use_cache": True, "vocab_size": 155136}
CONFIGS["ernie-4.5-21b-a3b"] = {"architectures": ["Ernie4_5_MoeForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
 "hidden_act": "silu", "hidden_size": 2560, "intermediate_size": 12288, "max_position_embeddings": 131072,
 "model_type": "ernie4_5_moe", "moe_capacity": [64, 64, 64], "moe_gate": "topk", "moe_intermediate_size": 1536,
 "moe_k": 6, "moe_layer_end_index": 27, "moe_layer_interval": 1, "moe_layer_start_index": 1, "moe_num_experts": 64,
 "moe_num_shared_experts": 2, "moe_use_aux_free": True, "num_attention_heads": 20, "num_hidden_layers": 28,
 "num_key_value_heads": 4, "pad_token_id": 0, "rms_norm_eps": 1e-05, "rope_theta": 500000, "tie_word_embeddings": True,
 "torch_dtype": "bfloat16", "use_bias": False, "use_cache": False, "vocab_size": 103424}
CONFIGS["ernie-4.5-300b-a47b"] = dict(CONFIGS["ernie-4.5-21b-a3b"], hidden_size=8192, intermediate_size=28672,
 moe_intermediate_size=3584, moe_k=8, moe_layer_end_index=53, moe_layer_start_index=3, moe_num_shared_experts=0,
 num_attention_heads=64, num_hidden_layers=54, num_key_value_heads=8, tie_word_embeddings=False)
CONFIGS["ernie-4.5-0.3b"] = {"architectures": ["Ernie4_5ForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "head_dim": 128,
 "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072, "max_position_embeddings": 131072,
 "model_type": "ernie4_5", "num_attention_heads": 16, "num_hidden_layers": 18, "num_key_value_heads": 2,
 "pad_token_id": 0, "rms_norm_eps": 1e-05, "rope_theta": 500000, "tie_word_embeddings": True,
 "torch_dtype": "bfloat16", "use_bias": False, "use_cache": True, "vocab_size": 103424}
CONFIGS["apertus-8b-instruct"] = {"architectures": ["ApertusForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "bos_token_id": 1, "eos_token_id": 68, "hidden_act": "xielu", "hidden_size": 4096, "initializer_range": 0.02,
 "intermediate_size": 21504, "max_position_embeddings": 65536, "mlp_bias": False, "model_type": "apertus",
 "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pad_token_id": 3,
 "post_norm": False, "qk_norm": True, "rms_norm_eps": 1e-05,
 "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
   "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 12000000,
 "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.56.0.dev0", "use_cache": True,
 "vocab_size": 131072}
CONFIGS["apertus-70b-instruct"] = dict(CONFIGS["apertus-8b-instruct"], hidden_size=8192, intermediate_size=43008,
 num_attention_heads=64, num_hidden_layers=80)
EXAONE4_32B_NO_LAYER_TYPES = {"architectures": ["Exaone4ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
 "eos_token_id": 361, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
 "intermediate_size": 27392, "max_position_embeddings": 131072, "model_type": "exaone4", "num_attention_heads": 40,
 "num_hidden_layers": 64, "num_key_value_heads": 8, "pad_token_id": 0, "rms_norm_eps": 1e-05,
 "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
   "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 1000000,
 "sliding_window": 4096, "sliding_window_pattern": "LLLG", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
 "transformers_version": "4.54.0", "use_cache": True, "vocab_size": 102400}
OLMO3_7B_LAYER_TYPES = (["sliding_attention"] * 3 + ["full_attention"]) * 8
CONFIGS["olmo-3-7b"] = {"architectures": ["Olmo3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
 "intermediate_size": 11008, "layer_types": OLMO3_7B_LAYER_TYPES, "max_position_embeddings": 65536, "model_type": "olmo3",
 "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "pad_token_id": 100277,
 "rms_norm_eps": 1e-06, "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1,
   "factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "yarn"}, "rope_theta": 500000,
 "sliding_window": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.57.0",
 "use_cache": True, "vocab_size": 100278}
CONFIGS["olmo-3-32b"] = dict(CONFIGS["olmo-3-7b"], hidden_size=5120, intermediate_size=27648, num_attention_heads=40,
 num_key_value_heads=8, num_hidden_layers=64, layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 16)
CONFIGS["granite-4.0-h-small"] = {"architectures": ["GraniteMoeHybridForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.0, "attention_multiplier": 0.0078125, "bos_token_id": 100257, "embedding_multiplier": 12,
 "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 4096, "init_method": "mup", "initializer_range": 0.1,
 "intermediate_size": 768,
 "layer_types": ["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"]
   + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4,
 "logits_scaling": 16, "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_head": 64,
 "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 128, "mamba_proj_bias": False,
 "max_position_embeddings": 131072, "model_type": "granitemoehybrid", "normalization_function": "rmsnorm",
 "num_attention_heads": 32, "num_experts_per_tok": 10, "num_hidden_layers": 40, "num_key_value_heads": 8,
 "num_local_experts": 72, "output_router_logits": False, "pad_token_id": 100256, "position_embedding_type": "nope",
 "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000,
 "router_aux_loss_coef": 0.0, "shared_intermediate_size": 1024, "tie_word_embeddings": True,
 "torch_dtype": "bfloat16", "transformers_version": "4.56.0", "use_cache": True, "vocab_size": 100352}
CONFIGS["phi-4-mini-instruct"] = {"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu",
 "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192, "interpolate_factor": 1,
 "lm_head_bias": False, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "phi3",
 "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8, "original_max_position_embeddings": 4096,
 "pad_token_id": 199999, "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
 "rope_scaling": {"long_factor": [1.0] * 48, "short_factor": [1.0] * 48, "type": "longrope"},
 "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
 "transformers_version": "4.45.0", "use_cache": True, "vocab_size": 200064}
CONFIGS["command-a-03-2025"] = {"architectures": ["Cohere2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "bos_token_id": 5, "eos_token_id": 255001, "head_dim": 128, "hidden_act": "silu", "hidden_size": 12288,
 "initializer_range": 0.02, "intermediate_size": 36864, "layer_norm_eps": 1e-05, "logit_scale": 0.25,
 "max_position_embeddings": 131072, "model_type": "cohere2", "num_attention_heads": 96, "num_hidden_layers": 64,
 "num_key_value_heads": 8, "order_of_interleaved_layers": "local_attn_first", "pad_token_id": 0,
 "position_embedding_type": "rope_gptj", "rope_scaling": None, "rope_theta": 50000, "rotary_pct": 1.0,
 "sliding_window": 4096, "sliding_window_pattern": 4, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
 "use_cache": True, "use_embedding_sharing": True, "use_gated_activation": True, "vocab_size": 256000}
CONFIGS["deepseek-v3.2-exp"] = {"architectures": ["DeepseekV32ForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3,
 "hidden_act": "silu", "hidden_size": 7168, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048,
 "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
 "model_type": "deepseek_v32", "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8,
 "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128,
 "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
 "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
 "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
   "scale_fmt": "ue8m0", "weight_block_size": [128, 128]},
 "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000,
 "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": 4,
 "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.44.2", "use_cache": True,
 "v_head_dim": 128, "vocab_size": 129280}
CONFIGS["glm-4.7-flash"] = {"architectures": ["Glm4MoeLiteForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "eos_token_id": [154820, 154827, 154829], "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
 "intermediate_size": 10240, "kv_lora_rank": 512, "max_position_embeddings": 202752, "model_type": "glm4_moe_lite",
 "moe_intermediate_size": 1536, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 1, "norm_topk_prob": True,
 "num_attention_heads": 20, "num_experts_per_tok": 4, "num_hidden_layers": 47, "num_key_value_heads": 20,
 "num_nextn_predict_layers": 1, "pad_token_id": 154820, "partial_rotary_factor": 1.0, "q_lora_rank": 768,
 "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05, "rope_theta": 1000000,
 "routed_scaling_factor": 1.8, "tie_word_embeddings": False, "topk_group": 1, "dtype": "bfloat16",
 "transformers_version": "5.0.0.dev0", "use_cache": True, "v_head_dim": 256, "vocab_size": 154880}
CONFIGS["qwen3-coder-480b-a35b-instruct"] = {"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.0, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
 "hidden_size": 6144, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 262144,
 "max_window_layers": 62, "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 2560,
 "norm_topk_prob": True, "num_attention_heads": 96, "num_experts": 160, "num_experts_per_tok": 8,
 "num_hidden_layers": 62, "num_key_value_heads": 8, "output_router_logits": False, "qkv_bias": False,
 "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000000, "router_aux_loss_coef": 0.0,
 "shared_expert_intermediate_size": 0, "sliding_window": None, "tie_word_embeddings": False,
 "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True, "use_qk_norm": True,
 "use_sliding_window": False, "vocab_size": 151936}
CONFIGS["qwen3-4b-instruct-2507"] = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False,
 "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
 "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 9728, "max_position_embeddings": 262144,
 "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
 "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 5000000,
 "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
 "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
CONFIGS["gemma-3-270m"] = {"_sliding_window_pattern": 6, "architectures": ["Gemma3ForCausalLM"],
 "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2,
 "eos_token_id": 1, "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
 "hidden_size": 640, "initializer_range": 0.02, "intermediate_size": 2048,
 "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 3, "max_position_embeddings": 32768,
 "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 18, "num_key_value_heads": 1,
 "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
 "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 512, "torch_dtype": "bfloat16",
 "transformers_version": "4.55.0.dev0", "use_bidirectional_attention": False, "use_cache": True,
 "vocab_size": 262144}
CONFIGS["falcon3-7b-instruct"] = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
 "bos_token_id": 11, "eos_token_id": 11, "head_dim": 256, "hidden_act": "silu", "hidden_size": 3072,
 "initializer_range": 0.02, "intermediate_size": 23040, "max_position_embeddings": 32768, "mlp_bias": False,
 "model_type": "llama", "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 4,
 "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000042,
 "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.46.1", "use_cache": True,
 "vocab_size": 131072}
CONFIGS["exaone-4.0-32b"] = dict(EXAONE4_32B_NO_LAYER_TYPES, layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 16)

_QUOTED = "quoted by a public file found with find_string (read_file id {}): {}"
SOURCES: dict[str, str] = {
    "qwen3-next-80b-a3b-instruct": "from the Hub file Qwen/Qwen3-Next-80B-A3B-Instruct/config.json; the model card "
    "(pages corpus, its README on a Hub mirror): 48 layers, hidden 2048, 12 x (3 Gated DeltaNet + 1 gated attention), "
    "512 experts, 10 routed and 1 shared active",
    "glm-4.5": "from the Hub file zai-org/GLM-4.5/config.json; the sizes GLM-4.6's and GLM-4.7's share, " + _QUOTED.format(
        "65933949810, rtp-llm", "GLM-4.7's real values: hidden 5120, 92 layers, 96/8 heads, 160 experts, "
        "first_k_dense_replace 3, use_qk_norm, num_nextn_predict_layers 1"),
    "glm-4.6": "GLM-4.5's file with max_position_embeddings 202,752, " + _QUOTED.format(
        "2748342403", "GLM-4.6's config.json in a write-up, keys renamed"),
    "glm-4.5-air": _QUOTED.format("48221590695, ms-swift's docs", "Glm4MoeConfig as transformers 4.54.1 prints "
                                  "zai-org/GLM-4.5-Air's config.json"),
    "minimax-m2": _QUOTED.format("62596936354 and 66857997877", "MiniMax-M2's fields (62 layers, 256 experts, "
                                 "rotary_dim 64, 3 MTP modules) and its fp8 quantization_config"),
    "hunyuan-a13b-instruct": _QUOTED.format("57609511449 and 66504138143", "tencent/Hunyuan-A13B-Instruct's "
                                            "per-layer lists moe_intermediate_size, moe_topk, num_shared_expert"),
    "hunyuan-7b-instruct": "from the Hub file tencent/Hunyuan-7B-Instruct/config.json",
    "seed-oss-36b-instruct": _QUOTED.format("55089675296 and 69846294777", "ByteDance-Seed/Seed-OSS-36B-Instruct's "
                                            "sizes, attention_bias true and attention_out_bias false"),
    "ernie-4.5-21b-a3b": "from the Hub file baidu/ERNIE-4.5-21B-A3B-PT/config.json",
    "ernie-4.5-300b-a47b": "from the Hub file baidu/ERNIE-4.5-300B-A47B-PT/config.json",
    "ernie-4.5-0.3b": "from the Hub file baidu/ERNIE-4.5-0.3B-PT/config.json",
    "apertus-8b-instruct": "from the Hub file swiss-ai/Apertus-8B-Instruct-2509/config.json",
    "apertus-70b-instruct": "from the Hub file swiss-ai/Apertus-70B-Instruct-2509/config.json",
    "olmo-3-7b": "from the Hub file allenai/Olmo-3-7B-Instruct/config.json",
    "olmo-3-32b": "from the Hub file allenai/Olmo-3-32B-Think/config.json",
    "granite-4.0-h-small": "from the Hub file ibm-granite/granite-4.0-h-small/config.json",
    "phi-4-mini-instruct": "from the Hub file microsoft/Phi-4-mini-instruct/config.json (its 48 longrope "
    "factors written as 1.0 here: they change no count)",
    "command-a-03-2025": "from the Hub file CohereLabs/c4ai-command-a-03-2025/config.json",
    "deepseek-v3.2-exp": "from the Hub file deepseek-ai/DeepSeek-V3.2-Exp/config.json",
    "glm-4.7-flash": _QUOTED.format("69360130118", "GLM-4.7-Flash's latent attention (47 layers, 20 heads, "
                                    "kv_lora_rank 512, qk 192 + 64, v 256, 202,752 positions)")
    + "; the rest from the Hub file zai-org/GLM-4.7-Flash/config.json",
    "qwen3-coder-480b-a35b-instruct": "from the Hub file Qwen/Qwen3-Coder-480B-A35B-Instruct/config.json",
    "qwen3-4b-instruct-2507": "from the Hub file Qwen/Qwen3-4B-Instruct-2507/config.json; " + _QUOTED.format(
        "57609511449", "its sizes (hidden 2560, 36 layers, 32/8 heads, head_dim 128, 9728)"),
    "gemma-3-270m": "from the Hub file google/gemma-3-270m/config.json",
    "falcon3-7b-instruct": "from the Hub file tiiuae/Falcon3-7B-Instruct/config.json",
    "exaone-4.0-32b": "from the Hub file LGAI-EXAONE/EXAONE-4.0-32B/config.json, with its layer_types; "
    + _QUOTED.format("57006440881", "the 32B's sizes, sliding_window 4096, \"LLLG\" and layer_types"),
}


#: Each config of CONFIGS whose switches a tiny class can run, trimmed to odd small sizes (hidden 64, 4 heads,
#: vocab 128, 2-6 layers, windows of 4 tokens so that a prefill of 9 passes them) with every other field as the
#: Hub file has it (its lists cut to the layers kept): the cache after a prefill and a decode step's FLOPs,
#: ours against the class on real tensors (tests/test_hub_configs_session38.py).
SMALL = dict(pad_token_id=None, bos_token_id=None, eos_token_id=None, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=96,
             vocab_size=128)
TRIMS = {
    "olmo-3-7b": dict(SMALL, num_key_value_heads=4, num_hidden_layers=4, sliding_window=4,
                      layer_types=CONFIGS["olmo-3-7b"]["layer_types"][:4]),
    "exaone-4.0-32b": dict(SMALL, num_hidden_layers=4, sliding_window=4,
                           layer_types=CONFIGS["exaone-4.0-32b"]["layer_types"][:4]),
    "gemma-3-270m": dict(SMALL, num_key_value_heads=1, num_hidden_layers=6, sliding_window=4, query_pre_attn_scalar=16,
                         layer_types=CONFIGS["gemma-3-270m"]["layer_types"][:6]),
    "command-a-03-2025": dict(SMALL, num_hidden_layers=4, sliding_window=4),
    "hunyuan-a13b-instruct": dict(SMALL, attention_head_dim=16, num_hidden_layers=2, num_experts=4,
                                  moe_intermediate_size=[48, 48], moe_topk=[2, 2], num_shared_expert=[1, 1]),
    "minimax-m2": {**{k: v for k, v in SMALL.items()}, "rotary_dim": 8, "intermediate_size": 48, "num_local_experts": 4,
                   "num_experts_per_tok": 2, "num_hidden_layers": 2, "attn_type_list": [1, 1], "quantization_config": None},
    "glm-4.7-flash": dict(SMALL, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16,
                          qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=48, num_hidden_layers=2),
    "granite-4.0-h-small": dict(SMALL, mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16, mamba_chunk_size=4,
                                num_hidden_layers=4, layer_types=["mamba", "attention", "mamba", "mamba"],
                                num_local_experts=4, num_experts_per_tok=2, intermediate_size=48,
                                shared_intermediate_size=64),
    "qwen3-next-80b-a3b-instruct": dict(SMALL, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                                        linear_num_value_heads=4, num_experts=4, num_experts_per_tok=2,
                                        moe_intermediate_size=48, shared_expert_intermediate_size=48,
                                        num_hidden_layers=4),
    "seed-oss-36b-instruct": dict(SMALL, num_hidden_layers=2),
    "ernie-4.5-21b-a3b": dict(SMALL, num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_intermediate_size=48,
                              moe_layer_end_index=2),
    "apertus-8b-instruct": dict(SMALL, num_hidden_layers=2),
}
TRIMMED = {f"{name} (trimmed)": {**CONFIGS[name], **trim} for name, trim in TRIMS.items()}
