"""Each engine's default budgets (max_num_seqs, max_batched_tokens), with their sources: what
`serve` runs when they are not given, and the prefill chunk `plan --serve` sizes a serving rank's
transient by (layout/serving_memory.py). No project imports: the layout model reads it too."""

from __future__ import annotations

from typing import Any

#: generate() has no token budget: a batch's whole padded prompts prefill in one step.
NO_TOKEN_BUDGET = 1 << 62

#: Per scheduler: (max_num_seqs, max_batched_tokens) when not given, with where each comes from.
DEFAULT_BUDGETS = {
    "vllm": (256, 2048, "vLLM's OpenAI-server defaults below 70 GiB or on an A100 (vllm/engine/arg_utils.py, "
                        "EngineArgs.get_batch_defaults)"),
    "sarathi": (256, 512, "Sarathi-Serve's chunk size of 512 tokens (its paper's Mistral-7B/Yi-34B setting)"),
    "orca": (256, 8192, "the same budgets as vLLM's"),
    "trtllm": (2048, 8192, "TensorRT-LLM's defaults: max_batch_size 2048, max_num_tokens 8192 (NVIDIA/TensorRT-LLM's "
                           "tuning guide, tuning-max-batch-size-and-max-num-tokens.md)"),
    "static": (8, NO_TOKEN_BUDGET, "a batch of 8, as one would call generate()"),
    "hf-fifo": (32, 2048, "transformers ContinuousBatchingConfig-like budgets"),
    "hf-prefill-first": (32, 2048, "transformers ContinuousBatchingConfig-like budgets"),
    # None: the model's context or 2048, whichever is larger.
    "vllm-v0": (256, None, "vLLM v0's SchedulerConfig defaults (vllm/config.py: max_num_seqs 256, "
                           "max_num_batched_tokens max(max_model_len, 2048))"),
    # None: SGLang's max_running_requests from its pool (serving/sglang.py max_running_requests, build_replica)
    "sglang": (None, 8192, "SGLang's server_args.py (0.3.0, 0.4.0 over 25,000 MB of GPU): chunked_prefill_size "
                           "8192; max_running_requests min(pool tokens // 2, max_num_reqs - 1 at 0.3.0, + 1 at 0.4.0)"),
}

#: vLLM's OpenAI-server defaults on GPUs of 70 GiB or more other than the A100 (H100, H200, MI300X).
VLLM_LARGE_GPU_BUDGETS = (1024, 8192, "vLLM's OpenAI-server defaults on >= 70 GiB GPUs other than the A100 "
                                      "(vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults)")


def default_budget(scheduler: str, hardware: Any, max_positions: int) -> tuple[int, int, str]:
    """(max_num_seqs, max_batched_tokens, their source) of `scheduler` on `hardware` when not given:
    vLLM's large-GPU defaults on GPUs of 70 GiB or more other than the A100; vLLM v0's token budget
    the model's context or 2048, whichever is larger."""
    seqs, tokens, source = DEFAULT_BUDGETS[scheduler]
    if scheduler == "vllm" and hardware.memory_bytes >= 70 * 2**30 and "a100" not in f"{hardware.name} {hardware.network_of}".lower():
        seqs, tokens, source = VLLM_LARGE_GPU_BUDGETS
    return seqs, max(max_positions, 2048) if tokens is None else tokens, source
