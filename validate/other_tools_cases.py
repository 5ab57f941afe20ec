"""The cases validate/other_tools.py sets other tools' figures beside ours on: each case's inputs in
every tool's terms (our preset, Megatron-LM's arguments, llm-analysis's and LLM-Viewer's configs)
and the measurements (MEASURED) each is checked against, with where a test asserts them.

validate/other_tools.py runs the cases (ours, the tools found) and prints the table;
validate/other_tools_time.py times the same cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MEGATRON_ROWS = {row["config"]: row for row in
                 json.loads((Path(__file__).resolve().parent / "megatron_reference.json").read_text())["rows"]}
HARDWARE = "a100-80gb"  # each tool's A100 80GB SXM: a100-sxm-80gb, nvidia_A100_80G, a100_80g.json

#: Measurements by the project's tests (Hugging Face's LlamaForCausalLM under FakeTensorMode) and
#: one published time; each with where it is asserted.
MEASURED = {
    "params 7b": (6_738_415_616, "tests/test_measure.py::test_llama2_7b_full_size_under_fake_tensor_mode"),
    "params 70b": (68_976_648_192, "tests/published.py (Hugging Face's class count)"),
    "forward 7b 2048": (29_261_612_187_648, "FlopCounterMode, tests/test_measure.py::"
                        "test_llama2_7b_full_size_under_fake_tensor_mode (backward 2x: tests/test_hf_parity.py)"),
    "saved 7b 2048 sdpa": (12_553_068_556, "saved_tensors_hooks, tests/test_measure.py::"
                           "test_llama2_7b_saved_bytes_under_fake_tensor_mode_equal_the_findings_formula"),
    "kv 7b 2048": (1_073_741_824, "the cache after a 2,048-token prefill of HF's class under FakeTensorMode, "
                   "tests/test_other_tools.py::test_full_size_kv_cache_and_decode_step_of_the_class"),
    "gpt3 present s": (13.75, "Korthikanti et al. 2022, Table 5 (SP + selective)"),
    "gpt-fast tok/s": (104.9, "gpt-fast README's Benchmarks table, costmodel/published_runs.json"),
    "params llama3-8b": (8_030_261_248, "tests/published.py FLAGSHIPS (Hugging Face's class count); "
                         "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_of_the_class"),
    "forward llama3-8b 8192": (158_140_695_838_720, "FlopCounterMode (sdpa counted as eager), "
                               "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_of_the_class"),
    "saved llama3-8b 8192 sdpa": (57_124_487_180, "saved_tensors_hooks, "
                                  "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_of_the_class"),
    "kv llama3-8b 64x4096": (34_359_738_368, "the cache after a 64 x 4,096-token prefill of HF's class under "
                             "FakeTensorMode, "
                             "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_of_the_class"),
    "forward llama3.1-8b 32768": (1_054_775_248_420_864, "FlopCounterMode (sdpa counted as eager), "
                                  "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_of_the_class"),
    "fsdp2 llama3-8b shard": (4_015_130_624, "rank 0's sharded fp32 parameters (and gradients) of HF's class under "
                              "fully_shard on the fake process group of 8, "
                              "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_8b_under_fsdp2"),
    "saved llama3.1-8b 32768 sdpa": (228_497_948_684, "saved_tensors_hooks, "
                                     "tests/test_other_tools_gqa_moe.py::"
                                     "test_full_size_llama3_1_8b_saved_bytes_at_32k"),
    "saved llama3.1-8b 32768 eager": (6_838_318_399_500, "saved_tensors_hooks, "
                                      "tests/test_other_tools_gqa_moe.py::"
                                      "test_full_size_llama3_1_8b_saved_bytes_at_32k"),
    "saved llama3.1-8b 32768 dtensor tp8 sp": (58_554_073_100, "saved_tensors_hooks on rank 0 of HF's class under "
                                                "DTensor tp 8 + SP on the fake process group, "
                                                "tests/test_other_tools_gqa_moe.py::"
                                                "test_full_size_llama3_1_8b_under_dtensor_tp_and_sp_at_32k"),
    "params llama3-70b": (70_553_706_496, "tests/published.py FLAGSHIPS (Hugging Face's class count)"),
    "forward llama3-70b 8192": (1_314_637_949_698_048, "FlopCounterMode (sdpa counted as eager), "
                                "tests/test_other_tools_gqa_moe.py::test_full_size_llama3_70b_forward_flops"),
    "params mixtral-8x7b": (46_702_792_704, "tests/published.py FLAGSHIPS (Hugging Face's class count)"),
    "forward mixtral-8x7b 4096": (113_232_517_791_744, "FlopCounterMode on HF's MixtralForCausalLM under FakeTensorMode, "
                                  "tests/test_other_tools_gqa_moe.py::"
                                  "test_full_size_moe_forward_flops_of_the_classes"),
    "forward qwen3-30b-a3b 4096": (38_111_392_301_056, "FlopCounterMode on HF's Qwen3MoeForCausalLM under "
                                   "FakeTensorMode, tests/test_other_tools_gqa_moe.py::"
                                   "test_full_size_moe_forward_flops_of_the_classes"),
    "params qwen3-30b-a3b": (30_532_122_624, "tests/published.py REQUESTED (Hugging Face's Qwen3MoeForCausalLM "
                             "count)"),
}

LA_GPU, LA_DTYPE = "a100-sxm-80gb", "w16a16e16"


def llama_hf_config(preset: str) -> dict[str, Any]:
    """The config.json LLM-Viewer reads (its Llama rules), from our preset's sizes."""
    from costmodel.presets import load_preset

    cfg = load_preset(preset)
    return {"model_type": "llama", "hidden_size": cfg.d_model, "intermediate_size": cfg.d_ff,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads,
            "num_hidden_layers": cfg.n_decoder_layers, "vocab_size": cfg.vocab_size,
            "max_position_embeddings": cfg.max_positions}


def _megatron_case(config: str) -> dict[str, Any]:
    row = MEGATRON_ROWS[config]
    return {"args": row["args"], "num_microbatches": row["num_microbatches"]}


def _gpt3_megatron_args() -> dict[str, Any]:
    """Korthikanti's GPT-3 175B as Megatron's arguments: LayerNorm, GeLU, biases, tied output."""
    args = dict(MEGATRON_ROWS["llama2-7b tp1 pp1 dp8"]["args"])
    args.update(group_query_attention=False, num_query_groups=96, swiglu=False, normalization="LayerNorm",
                untie_embeddings_and_output_weights=False, add_bias_linear=True, use_distributed_optimizer=False,
                virtual_pipeline_model_parallel_size=3, sequence_parallel=True, recompute_granularity="selective",
                hidden_size=12288, num_attention_heads=96, kv_channels=128, ffn_hidden_size=49152, num_layers=96,
                padded_vocab_size=51200, seq_length=2048, tensor_model_parallel_size=8,
                pipeline_model_parallel_size=8, data_parallel_size=1, world_size=64)
    return args


def llm_analysis_model(preset: str) -> dict[str, Any]:
    """llm-analysis's ModelConfig with our preset's true sizes (written to a JSON file it reads).
    It bundles no Llama 3 or Mixtral, and its Hugging Face route (get_model_config_from_hf) passes
    only the layers, heads, hidden size, vocabulary and KV heads: intermediate_size and the experts
    are dropped there (a 4d FFN, one expert). expansion_ratio is given because its __post_init__
    asserts d_ff % d == 0 otherwise (14,336 / 4,096 = 3.5)."""
    from costmodel.presets import load_preset

    cfg = load_preset(preset)
    experts = {"moe_num_experts": cfg.n_experts, "moe_top_k": cfg.top_k} if cfg.n_experts else {}
    ffn = cfg.d_expert if cfg.n_experts else cfg.d_ff  # it has one FFN width: the experts' in a MoE
    return {"name": preset, "num_layers": cfg.n_decoder_layers, "n_head": cfg.n_heads, "hidden_dim": cfg.d_model,
            "vocab_size": cfg.vocab_size, "max_seq_len": cfg.max_positions, "num_key_value_heads": cfg.n_kv_heads,
            "ffn_embed_dim": ffn, "expansion_ratio": ffn / cfg.d_model, "model_type": "llama", **experts}


def _llama3_megatron_args(seq_length: int, tp: int, cp: int, dp: int) -> dict[str, Any]:
    """Llama 3.1 8B as Megatron's arguments (GQA 8 groups, SwiGLU, RMSNorm, untied, the vocabulary
    padded to a multiple of 128 x tp), sequence parallel, no recomputation, distributed optimizer."""
    args = dict(MEGATRON_ROWS["llama2-7b tp1 pp1 dp8"]["args"])
    args.update(group_query_attention=True, num_query_groups=8, ffn_hidden_size=14336,
                padded_vocab_size=-(-128256 // (128 * tp)) * 128 * tp, seq_length=seq_length,
                tensor_model_parallel_size=tp, context_parallel_size=cp, data_parallel_size=dp,
                sequence_parallel=tp > 1, world_size=tp * cp * dp)
    return args


def _qwen3_moe_megatron_args() -> dict[str, Any]:
    """Qwen3-30B-A3B as Megatron's arguments: 48 MoE layers of 128 experts (768 wide, top 8), 32 query
    heads of 128 on a hidden size of 2,048 (kv_channels 128: a 4,096-wide query), 4 KV groups; the
    Mixtral row's layout (ep 8, dp 8, 16 micro-batches of 4,096 tokens)."""
    args = dict(MEGATRON_ROWS["mixtral-8x7b tp1 ep8 dp8"]["args"])
    args.update(hidden_size=2048, num_attention_heads=32, kv_channels=128, num_query_groups=4, num_layers=48,
                ffn_hidden_size=6144, num_experts=128, moe_ffn_hidden_size=768, moe_router_topk=8,
                padded_vocab_size=151936)
    return args


CASES: dict[str, dict[str, Any]] = {
    "llama2-7b train 1 GPU": {
        "says": "Llama-2-7B, one sequence of 2,048 tokens, bf16, HF LlamaForCausalLM with sdpa, AdamW (fp32 "
                "master, m, v), no parallelism, no recomputation",
        "preset": "llama2-7b", "kind": "train", "seq_len": 2048, "batch": 1, "attention": "sdpa",
        "measured": {"params": "params 7b", "flops_sequence": ("forward 7b 2048", 3),
                     "activations": "saved 7b 2048 sdpa", "weights": ("params 7b", 2)},
        "llm_analysis": {"mode": "train", "model_name": "NousResearch_Llama-2-7b-hf", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 2048, "global_batch_size": 1,
                         "total_num_gpus": 1, "dp_size": 1, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama2-7b train tp1 pp1 dp8": {
        "says": "Megatron-LM, 16 micro-batches of one 4,096-token sequence a rank, distributed optimizer "
                "(ZeRO-1), flash attention, no recomputation",
        "preset": "llama2-7b", "kind": "megatron", "megatron_row": "llama2-7b tp1 pp1 dp8",
        "measured": {"params": "params 7b"},
        "megatron": _megatron_case("llama2-7b tp1 pp1 dp8"),
        "llm_analysis": {"mode": "train", "model_name": "NousResearch_Llama-2-7b-hf", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 4096, "global_batch_size": 128,
                         "total_num_gpus": 8, "dp_size": 8, "ds_zero": 1, "flash_attn": True,
                         "mlp_gated_linear_units": True},
    },
    "llama2-70b train tp8 pp4 dp2 sp selective": {
        "says": "Megatron-LM, sequence parallelism, selective recomputation, 16 micro-batches of one 4,096-"
                "token sequence, distributed optimizer; stage 0's memory",
        "preset": "llama2-70b", "kind": "megatron", "megatron_row": "llama2-70b tp8 pp4 dp2 sp selective",
        "measured": {"params": "params 70b"},
        "megatron": _megatron_case("llama2-70b tp8 pp4 dp2 sp selective"),
        "llm_analysis": {"mode": "train", "model_name": "upstage_Llama-2-70b-instruct-v2", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 4096, "global_batch_size": 32,
                         "total_num_gpus": 64, "dp_size": 2, "tp_size": 8, "pp_size": 4, "sp_size": 8, "ds_zero": 1,
                         "activation_recomputation": 1, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama2-7b prefill 2048 + decode": {
        "says": "Llama-2-7B bf16, batch 1: a 2,048-token prefill and one decode step at that context, "
                "the KV cache of 2,048 tokens",
        "preset": "llama2-7b", "kind": "infer", "prompt": 2048, "batch": 1,
        "measured": {"weights": ("params 7b", 2), "kv_cache": "kv 7b 2048"},
        "llm_analysis": {"mode": "infer", "model_name": "NousResearch_Llama-2-7b-hf", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 2048,
                         "num_tokens_to_generate": 1},
        "llm_viewer": {"config_name": "Llama-2-7b-hf", "preset": "llama2-7b",
                       "hardware": "nvidia_A100_80G", "seq_len": 2048, "batch": 1, "flash": True},
    },
    "llama2-7b decode gpt-fast": {
        "says": "Llama-2-7B bf16 as gpt-fast's README measured it: batch 1, a 5-token prompt, 200 tokens, "
                "CUDA graphs, one A100-80GB (power-limited to 330 W)",
        "preset": "llama2-7b", "kind": "decode", "run": "gpt-fast llama2-7b bf16",
        "measured": {"tokens_per_second": "gpt-fast tok/s"},
        "llm_analysis": {"mode": "infer", "model_name": "NousResearch_Llama-2-7b-hf", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 5, "num_tokens_to_generate": 200},
        "llm_viewer": {"config_name": "Llama-2-7b-hf", "preset": "llama2-7b",
                       "hardware": "nvidia_A100_80G", "seq_len": 5, "gen": 200, "batch": 1, "flash": True},
    },
    "gpt3-175b Korthikanti tp8 pp8 v3 sp selective": {
        "says": "GPT-3 175B as Korthikanti et al. 2022 Table 5 ran it: tp 8, pp 8 interleaved by 3, SP + "
                "selective recomputation, 64 sequences of 2,048 in micro-batches of 1, bf16; stage 0's memory",
        "preset": None, "kind": "korthikanti", "measured": {"seconds": "gpt3 present s"},
        "megatron": {"args": _gpt3_megatron_args(), "num_microbatches": 64},
        "llm_analysis": {"mode": "train", "model_name": "megatron-lm-175b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 2048, "global_batch_size": 64,
                         "total_num_gpus": 64, "dp_size": 1, "tp_size": 8, "pp_size": 8, "sp_size": 8,
                         "activation_recomputation": 1, "flash_attn": False},
        "calculon": {"application": {"hidden": 12288, "feedforward": 49152, "seq_size": 2048, "attn_heads": 96,
                                     "attn_size": 128, "num_blocks": 96},
                     "execution": "validation/seqsel/tab5/gpt3-175B_seqsel.json", "system": "systems/a100_80g.json"},
    },
    "llama3-8b train 1 GPU 8192": {
        "says": "Llama-3-8B (GQA 8 KV heads, vocabulary 128,256, untied), one sequence of 8,192 tokens, bf16, HF "
                "LlamaForCausalLM with sdpa, AdamW (fp32 master, m, v), no parallelism, no recomputation",
        "preset": "llama3-8b", "kind": "train", "seq_len": 8192, "batch": 1, "attention": "sdpa",
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3-8b 8192", 3),
                     "activations": "saved llama3-8b 8192 sdpa", "weights": ("params llama3-8b", 2)},
        "llm_analysis": {"mode": "train", "model_config": "llama3-8b", "gpu_name": LA_GPU, "dtype_name": LA_DTYPE,
                         "batch_size_per_gpu": 1, "seq_len": 8192, "global_batch_size": 1, "total_num_gpus": 1,
                         "dp_size": 1, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3-8b train ZeRO-3 dp8 8192": {
        "says": "Llama-3-8B, DeepSpeed ZeRO-3 over 8 GPUs (weights, gradients and optimizer sharded), one 8,192-"
                "token sequence a rank, bf16, sdpa, no recomputation; one rank's memory",
        "preset": "llama3-8b", "kind": "layout", "seq_len": 8192, "attention": "sdpa", "impl": "hf",
        "layout": {"dp": 8, "zero": 3, "framework": "deepspeed"},
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3-8b 8192", 3),
                     "activations": "saved llama3-8b 8192 sdpa"},
        "llm_analysis": {"mode": "train", "model_config": "llama3-8b", "gpu_name": LA_GPU, "dtype_name": LA_DTYPE,
                         "batch_size_per_gpu": 1, "seq_len": 8192, "global_batch_size": 8, "total_num_gpus": 8,
                         "dp_size": 8, "ds_zero": 3, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3-8b train FSDP2 dp8 8192": {
        "says": "Llama-3-8B, torch FSDP2 (fully_shard per decoder layer and the root) over 8 GPUs with bf16 "
                "compute and fp32 reduction (MixedPrecisionPolicy), one 8,192-token sequence a rank, sdpa, AdamW; "
                "one rank's memory",
        "preset": "llama3-8b", "kind": "layout", "seq_len": 8192, "attention": "sdpa", "impl": "hf",
        "layout": {"dp": 8, "zero": 3, "framework": "fsdp2"},
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3-8b 8192", 3),
                     "weights": "fsdp2 llama3-8b shard", "gradients": "fsdp2 llama3-8b shard",
                     "activations": "saved llama3-8b 8192 sdpa"},
        "llm_analysis": {"mode": "train", "model_config": "llama3-8b", "gpu_name": LA_GPU, "dtype_name": LA_DTYPE,
                         "batch_size_per_gpu": 1, "seq_len": 8192, "global_batch_size": 8, "total_num_gpus": 8,
                         "dp_size": 8, "ds_zero": 3, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3-8b decode batch 64 at 4096": {
        "says": "Llama-3-8B bf16, batch 64: a 4,096-token prefill of each sequence and one decode step at that "
                "context, the KV cache of 64 x 4,096 tokens",
        "preset": "llama3-8b", "kind": "infer", "prompt": 4096, "batch": 64,
        "measured": {"weights": ("params llama3-8b", 2), "kv_cache": "kv llama3-8b 64x4096"},
        "llm_analysis": {"mode": "infer", "model_config": "llama3-8b", "gpu_name": LA_GPU, "dtype_name": LA_DTYPE,
                         "batch_size_per_gpu": 64, "seq_len": 4096, "num_tokens_to_generate": 1},
        "llm_viewer": {"config_name": "Llama-3-8b", "preset": "llama3-8b",
                       "hardware": "nvidia_A100_80G", "seq_len": 4096, "batch": 64, "flash": True},
    },
    "llama3.1-8b train 1 GPU 32k sdpa": {
        "says": "Llama-3.1-8B, one sequence of 32,768 tokens, bf16, HF LlamaForCausalLM with sdpa attention"
                " (no n^2 tensor kept), "
                "AdamW, no parallelism, no recomputation",
        "preset": "llama3.1-8b", "kind": "train", "seq_len": 32768, "batch": 1, "attention": "sdpa",
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3.1-8b 32768", 3),
                     "activations": "saved llama3.1-8b 32768 sdpa", "weights": ("params llama3-8b", 2)},
        "llm_analysis": {"mode": "train", "model_config": "llama3.1-8b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 32768, "global_batch_size": 1,
                         "total_num_gpus": 1, "dp_size": 1, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3.1-8b train 1 GPU 32k eager": {
        "says": "Llama-3.1-8B, one sequence of 32,768 tokens, bf16, HF LlamaForCausalLM with eager attention"
                " (the fp32 softmax of 32 x 32,768^2 scores a layer), "
                "AdamW, no parallelism, no recomputation",
        "preset": "llama3.1-8b", "kind": "train", "seq_len": 32768, "batch": 1, "attention": "eager",
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3.1-8b 32768", 3),
                     "activations": "saved llama3.1-8b 32768 eager", "weights": ("params llama3-8b", 2)},
        "llm_analysis": {"mode": "train", "model_config": "llama3.1-8b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 32768, "global_batch_size": 1,
                         "total_num_gpus": 1, "dp_size": 1, "flash_attn": False, "mlp_gated_linear_units": True},
    },
    "llama3-70b train tp8 pp4 dp2 sp selective 8192": {
        "says": "Llama-3-70B (GQA 8 KV heads, vocabulary 128,256 padded to 129,024), Megatron-LM, tp 8 with SP, pp 4, "
                "dp 2, selective recomputation, 16 micro-batches of one 8,192-token sequence, distributed "
                "optimizer; stage 0's memory",
        "preset": "llama3-70b", "kind": "megatron",
        "megatron": {"args": {**MEGATRON_ROWS["llama2-70b tp8 pp4 dp2 sp selective"]["args"],
                              "padded_vocab_size": 129024, "seq_length": 8192}, "num_microbatches": 16},
        "measured": {"params": "params llama3-70b", "flops_sequence": ("forward llama3-70b 8192", 3)},
        "llm_analysis": {"mode": "train", "model_config": "llama3-70b", "gpu_name": LA_GPU, "dtype_name": LA_DTYPE,
                         "batch_size_per_gpu": 1, "seq_len": 8192, "global_batch_size": 32, "total_num_gpus": 64,
                         "dp_size": 2, "tp_size": 8, "pp_size": 4, "sp_size": 8, "ds_zero": 1,
                         "activation_recomputation": 1, "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3.1-8b train tp8 sp 32k": {
        "says": "Llama-3.1-8B, one 32,768-token sequence over tp 8 with sequence parallelism (Megatron-LM), "
                "flash attention, no recomputation, distributed optimizer over dp 1",
        "preset": "llama3.1-8b", "kind": "megatron",
        "megatron": {"args": _llama3_megatron_args(32768, tp=8, cp=1, dp=1), "num_microbatches": 1},
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3.1-8b 32768", 3)},
        "llm_analysis": {"mode": "train", "model_config": "llama3.1-8b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 32768, "global_batch_size": 1,
                         "total_num_gpus": 8, "dp_size": 1, "tp_size": 8, "sp_size": 8, "ds_zero": 1,
                         "flash_attn": True, "mlp_gated_linear_units": True},
    },
    "llama3.1-8b train DTensor tp8 sp 32k": {
        "says": "Llama-3.1-8B, HF LlamaForCausalLM (sdpa) under torch's DTensor tensor parallelism over 8 with "
                "sequence parallelism (validate/distributed/tensor_parallel.py's plan for HF's Llama: norms "
                "SequenceParallel, the logits gathered), one 32,768-token sequence, bf16, no recomputation",
        "preset": "llama3.1-8b", "kind": "layout", "seq_len": 32768, "attention": "sdpa", "impl": "hf",
        "layout": {"tp": 8, "sp": True, "framework": "fsdp2", "loss_parallel": False},
        "measured": {"params": "params llama3-8b", "flops_sequence": ("forward llama3.1-8b 32768", 3),
                     "activations": "saved llama3.1-8b 32768 dtensor tp8 sp"},
        "llm_analysis": {"mode": "train", "model_config": "llama3.1-8b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 32768, "global_batch_size": 1,
                         "total_num_gpus": 8, "dp_size": 1, "tp_size": 8, "sp_size": 8, "flash_attn": True,
                         "mlp_gated_linear_units": True},
    },
    "llama3.1-8b train tp4 cp2 sp 32k": {
        "says": "Llama-3.1-8B, one 32,768-token sequence over tp 4 (sequence parallel) and context parallelism "
                "2 (Megatron-LM), flash attention, no recomputation, distributed optimizer over dp x cp = 2",
        "preset": "llama3.1-8b", "kind": "megatron",
        "megatron": {"args": _llama3_megatron_args(32768, tp=4, cp=2, dp=1), "num_microbatches": 1},
        "measured": {"params": "params llama3-8b"},
    },
    "qwen3-30b-a3b train ep8 dp8": {
        "says": "Qwen3-30B-A3B (128 experts of 768, top 8; 32 query heads of 128 on d 2,048; q/k norms), "
                "Megatron-LM, experts over ep 8, dp 8, 16 micro-batches of one 4,096-token sequence a rank, "
                "distributed optimizer, flash attention, no recomputation",
        "preset": "qwen3-30b-a3b", "kind": "megatron",
        "megatron": {"args": _qwen3_moe_megatron_args(), "num_microbatches": 16},
        "measured": {"params": "params qwen3-30b-a3b", "flops_sequence": ("forward qwen3-30b-a3b 4096", 3)},
        "llm_analysis": {"mode": "train", "model_config": "qwen3-30b-a3b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 4096, "global_batch_size": 128,
                         "total_num_gpus": 8, "dp_size": 8, "ep_size": 8, "ds_zero": 1, "flash_attn": True,
                         "mlp_gated_linear_units": True},
    },
    "mixtral-8x7b train ep8 dp8": {
        "says": "Mixtral-8x7B (8 experts, top 2), Megatron-LM, experts over ep 8, dp 8, 16 micro-batches of one "
                "4,096-token sequence a rank, distributed optimizer, flash attention, no recomputation",
        "preset": "mixtral-8x7b", "kind": "megatron",
        "megatron": _megatron_case("mixtral-8x7b tp1 ep8 dp8"),
        "measured": {"params": "params mixtral-8x7b", "flops_sequence": ("forward mixtral-8x7b 4096", 3)},
        "llm_analysis": {"mode": "train", "model_config": "mixtral-8x7b", "gpu_name": LA_GPU,
                         "dtype_name": LA_DTYPE, "batch_size_per_gpu": 1, "seq_len": 4096, "global_batch_size": 128,
                         "total_num_gpus": 8, "dp_size": 8, "ep_size": 8, "ds_zero": 1, "flash_attn": True,
                         "mlp_gated_linear_units": True},
    },
}
