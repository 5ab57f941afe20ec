"""NVIDIA's DGX Cloud benchmarking recipes among the published runs (costmodel/published_runs.json sources
"dgxc-25.02" and "dgxc-25.02-nemotron", session 26): Llama 3.1 8B, 70B and 405B and Nemotron-4 15B and
340B on H100s (NeMo 24.12; the 340B 24.09), BF16 and FP8, each table's smallest and largest full-model
scale, as the READMEs, launch.sh, configure.sh and the yaml state."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data

# NVIDIA/dgxc-benchmarking at 8f5cbb3, llama3.1/README_<size>.md: GPUs, GBS, the table's step time (s) and
# tokens/s (all GPUs); then TP, PP, CP, VP, the yaml's vocabulary padded to 128 x TP
TABLES = {
    "dgxc-25.02 llama3.1-8b bf16 8xh100": (8, 128, 12.78, 82028, 1, 1, 2, 1, 128256),
    "dgxc-25.02 llama3.1-8b bf16 128xh100": (128, 2048, 13.16, 1275155, 1, 1, 2, 1, 128256),
    "dgxc-25.02 llama3.1-8b fp8 8xh100": (8, 128, 9.44, 111054, 1, 1, 2, 1, 128256),
    "dgxc-25.02 llama3.1-8b fp8 128xh100": (128, 2048, 9.73, 1725163, 1, 1, 2, 1, 128256),
    "dgxc-25.02 llama3.1-70b bf16 64xh100": (64, 128, 14.61, 71756, 4, 4, 2, 5, 128512),
    "dgxc-25.02 llama3.1-70b bf16 2048xh100": (2048, 4096, 14.84, 2260623, 4, 4, 2, 5, 128512),
    "dgxc-25.02 llama3.1-70b fp8 64xh100": (64, 128, 10.46, 100275, 4, 4, 2, 5, 128512),
    "dgxc-25.02 llama3.1-70b fp8 2048xh100": (2048, 4096, 10.99, 3053178, 4, 4, 2, 5, 128512),
    # the 405B's GPT-2 tokenizer (50,257 tokens) padded to 128 x TP 8 = 1,024: 51,200
    "dgxc-25.02 llama3.1-405b bf16 576xh100": (576, 252, 17.50, 117964, 8, 9, 2, 7, 51200),
    "dgxc-25.02 llama3.1-405b bf16 2304xh100": (2304, 1008, 17.70, 466527, 8, 9, 2, 7, 51200),
    "dgxc-25.02 llama3.1-405b fp8 576xh100": (576, 252, 11.00, 187671, 8, 9, 2, 7, 51200),
    "dgxc-25.02 llama3.1-405b fp8 2304xh100": (2304, 1008, 11.20, 737280, 8, 9, 2, 7, 51200),
}


@pytest.mark.parametrize("run_id", sorted(TABLES))
def test_each_dgxc_row_is_its_table_and_recipe(run_id):
    """The table's throughput over its GPUs (the README's formula, 8,192 x GBS / step time, within a
    step time's rounding); micro-batch 1 and GBS / DP micro-batches (GA 32, 64, 63 as the headers
    print); ZeRO-1 with bf16 gradient reduces; TP and P2P overlap on the 70B and 405B (their yaml's
    ub_tp_comm_overlap, overlap_p2p_comm); FP8 rows: delayed scaling, FP8 parameters, the amax over
    the TP group (NVTE_DP_AMAX_REDUCE_INTERVAL=0); cuDNN attention (NVTE_FUSED_ATTN=1)."""
    from reports.published_runs import train_setup

    gpus, global_batch, seconds, tokens, tp, pp, cp, vp, vocab = TABLES[run_id]
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    assert (run["published_tokens_per_s_per_gpu"], run["published_seconds_per_step"]) == (round(tokens / gpus, 3), seconds)
    assert abs(8192 * global_batch / seconds / tokens - 1) < 0.001
    estimate, hardware, options = train_setup(run, data["sources"]["dgxc-25.02"])
    layout, workload = estimate.layout, estimate.workload
    dp = gpus // (tp * pp * cp)
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.virtual_stages, layout.sp) == (tp, pp, cp, dp, vp, tp > 1)
    assert (workload.batch, layout.microbatches, workload.seq_len) == (1, global_batch // dp, 8192)
    assert layout.microbatches == {"8b": 32, "70b": 64, "405b": 63}[run_id.split()[1].split("-")[1]]  # the headers' GA
    assert (estimate.cfg.vocab_size, layout.zero, layout.grad_reduce_dtype, workload.recompute) == (vocab, 1, "bf16", "none")
    fp8 = " fp8 " in run_id
    assert (layout.fp8, layout.fp8_param_gather, layout.tp_only_amax_red) == (("delayed", True, True) if fp8 else (None, False, False))
    hidden = options.pop("overlap")
    assert (hidden.tp, hidden.pp, hidden.params, hidden.dp) == ((1.0, 1.0) if tp > 1 else (0.0, 0.0)) + (1.0, 2 / 3)
    assert hardware.name == "h100-sxm" and options == {"autocast": False, "attention_kernel": "cudnn"}


# nemotron/README_15b.md and README_340b.md at 8f5cbb3: GPUs, GBS, step time (s), tokens/s (all GPUs)
NEMOTRON = {
    "dgxc-25.02-nemotron nemotron4-15b bf16 16xh100": (16, 64, 2.812, 93223),
    "dgxc-25.02-nemotron nemotron4-15b bf16 2048xh100": (2048, 8192, 2.887, 11622595),
    "dgxc-25.02-nemotron nemotron4-15b fp8 16xh100": (16, 64, 2.039, 128565),
    "dgxc-25.02-nemotron nemotron4-15b fp8 2048xh100": (2048, 8192, 2.12, 15827562),
    "dgxc-25.02-nemotron nemotron4-340b fp8 128xh100": (128, 32, 3.16, 41478),
    "dgxc-25.02-nemotron nemotron4-340b fp8 2048xh100": (2048, 512, 3.49, 600903),
}


@pytest.mark.parametrize("run_id", sorted(NEMOTRON))
def test_each_dgxc_nemotron_row_is_its_table_and_recipe(run_id):
    """15B: TP 4, MBS 4, GA 4, cuDNN attention (NVTE_FUSED_ATTN=1), mcore_distributed_optim's fp32
    reduce; 340B: TP 8, PP 8, VP 12, MBS 1, GA 16, selective recomputation, flash-attn 2
    (NVTE_FUSED_ATTN=0), bf16 reduce, P2P overlap; both TP overlap, 4,096 tokens, 256,000-token
    vocabulary; FP8 rows delayed scaling with FP8 parameters and the amax over the TP group."""
    from reports.published_runs import train_setup

    gpus, global_batch, seconds, tokens = NEMOTRON[run_id]
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    assert (run["published_tokens_per_s_per_gpu"], run["published_seconds_per_step"]) == (round(tokens / gpus, 3), seconds)
    assert abs(4096 * global_batch / seconds / tokens - 1) < 0.002
    estimate, hardware, options = train_setup(run, data["sources"]["dgxc-25.02-nemotron"])
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    big = "340b" in run_id
    tp, pp, vp, micro, accumulation = (8, 8, 12, 1, 16) if big else (4, 1, 1, 4, 4)
    assert (layout.tp, layout.pp, layout.virtual_stages, layout.dp, layout.sp) == (tp, pp, vp, gpus // (tp * pp), True)
    assert (workload.batch, layout.microbatches, workload.seq_len) == (micro, accumulation, 4096)
    assert (cfg.vocab_size, cfg.activation, cfg.norm, cfg.d_model) == (256000, "relu2", "layernorm", 18432 if big else 6144)
    assert (workload.recompute, layout.grad_reduce_dtype) == (("selective", "bf16") if big else ("none", None))
    fp8 = " fp8 " in run_id
    assert (layout.fp8, layout.fp8_param_gather, layout.tp_only_amax_red) == (("delayed", True, True) if fp8 else (None, False, False))
    hidden = options.pop("overlap")
    assert (hidden.tp, hidden.pp, hidden.params) == (1.0, 1.0 if big else 0.0, 1.0)
    assert hardware.name == "h100-sxm"
    assert options == ({"autocast": False} if big else {"autocast": False, "attention_kernel": "cudnn"})
