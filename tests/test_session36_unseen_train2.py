"""Session 36's second batch of unseen training rows (wt36_unseent2; costmodel/published_runs.json sources
"ms-swift-megatron", "ms-swift-deepspeed", "ms-swift-qwen3-megatron", "ms-swift-qwen3-deepspeed", "ms-swift-long-megatron",
"ms-swift-long-deepspeed", "fast-llm", "bionemo-og2-fsdp2" and "bionemo-og2-megatron", typed before any was computed,
c2033178): each row's figure and layout as its source prints them, and the kernel model's ratios as first computed (our
speed over the published one), the estimate validate/FINDINGS.md quotes ("Unseen training rows, second batch")."""

from __future__ import annotations

import pytest

from reports.published_runs import run_kind
from tests.unseen_rows import assert_first_computed, assert_summaries, decode_groups, ratios, runs_of, source_of, \
    train_setup_of

SOURCES = ("ms-swift-megatron", "ms-swift-deepspeed", "ms-swift-qwen3-megatron", "ms-swift-qwen3-deepspeed",
           "ms-swift-long-megatron", "ms-swift-long-deepspeed", "fast-llm", "bionemo-og2-fsdp2", "bionemo-og2-megatron")


def _runs() -> dict[str, dict]:
    return {r["id"]: r for s in SOURCES for r in runs_of(s)}


def test_the_ms_swift_rows_are_its_seconds_an_iteration():
    """Tokens/s per GPU = global batch x max_length (--packing fills every row) / the page's or the script header's
    s/it / GPUs: the Megatron-SWIFT benchmark (8 A800), the Qwen3 best practice (16 A800), the long-context scripts (4 A100)."""
    runs = {k: r for k, r in _runs().items() if k.startswith("ms-swift")}
    assert len(runs) == 11
    seconds = {k: r["published_seconds_per_step"] for k, r in runs.items()}
    assert seconds == {"ms-swift-megatron qwen2.5-14b tp4 sp selective 8xa800": 9.04,
                       "ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800": 2.93,
                       "ms-swift-deepspeed qwen2.5-14b zero2 8xa800": 10.32,
                       "ms-swift-deepspeed qwen2.5-14b zero3 8xa800": 10.56,
                       "ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800": 6.02,
                       "ms-swift-deepspeed qwen1.5-moe-a2.7b zero3 8xa800": 24.3,
                       "ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800": 9.6,
                       "ms-swift-qwen3-deepspeed qwen3-30b-a3b zero3 16xa800": 91.2,
                       "ms-swift-long-megatron qwen2.5-7b tp4 32k 4xa100": 23,
                       "ms-swift-long-deepspeed qwen2.5-7b zero3 16k 4xa100": 10,
                       "ms-swift-long-deepspeed qwen2.5-3b zero3 ring cp4 64k 4xa100": 30}
    for run in runs.values():
        tokens = run["global_batch"] * run["seq_len"] / run["published_seconds_per_step"] / run["gpus"]
        assert run["published_tokens_per_s_per_gpu"] == round(tokens, 3), run["id"]
    assert runs["ms-swift-megatron qwen2.5-14b tp4 sp selective 8xa800"]["published_tokens_per_s_per_gpu"] == 1812.389
    estimate, hardware, _ = train_setup_of(runs["ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800"])
    cfg, layout = estimate.cfg, estimate.layout
    # Qwen1.5-MoE-A2.7B's config.json: 60 experts of 1,408, top 4 (not renormalised), a gated shared expert of 5,632
    assert (cfg.n_layers, cfg.d_model, cfg.n_experts, cfg.top_k, cfg.d_expert, cfg.d_shared, cfg.shared_expert_gate,
            cfg.renormalize_top_k, cfg.qkv_bias, cfg.vocab_size) == (24, 2048, 60, 4, 1408, 5632, True, False, True, 151936)
    # moe.sh: PP 2 with --decoder_last_pipeline_num_layers 11, EP 4 inside DP 4, four micro-batches of one row
    assert (layout.pp, layout.stage_layers, layout.ep, layout.dp, layout.microbatches, estimate.workload.recompute) == \
        (2, (13, 11), 4, 4, 4, "full")
    assert hardware.intra_node_bandwidth_bytes_per_s == 200e9  # the A800's NVLink, 200 GB/s a direction
    estimate, _, _ = train_setup_of(runs["ms-swift-long-deepspeed qwen2.5-3b zero3 ring cp4 64k 4xa100"])
    layout = estimate.layout
    assert (layout.cp, layout.cp_rotate, layout.dp, layout.zero, layout.microbatches, estimate.workload.recompute) == \
        (4, "ring", 1, 3, 8, "full")  # --sequence_parallel_size 4 (ring attention), GAS 8, gradient checkpointing
    estimate, _, _ = train_setup_of(runs["ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800"])
    assert (estimate.layout.tp, estimate.layout.pp, estimate.layout.ep, estimate.layout.moe_permute_fusion) == (1, 2, 8, False)
    kinds = {k.split()[1]: run_kind(r, source_of(k.split()[0])) for k, r in runs.items()}
    assert kinds["qwen1.5-moe-a2.7b"] == kinds["qwen3-30b-a3b"] == "MoE training"  # config_changes' experts count
    assert kinds["qwen2.5-14b"] == "dense training"


def test_the_fast_llm_and_bionemo_rows_are_their_readmes():
    """Fast-LLM: 9,500 then 9,800 tokens/s/H100 on 32 H100 (batch 32 x 8,192, ZeRO-2); BioNeMo OG2 7B on 48 H100: the
    recipe's 6.60 s and the Megatron baseline's 5.01 s a step at GBS 384 of 8,192 tokens."""
    runs = _runs()
    fast = {k: r["published_tokens_per_s_per_gpu"] for k, r in runs.items() if k.startswith("fast-llm")}
    assert fast == {"fast-llm mistral-7b zero2 first-readme 32xh100": 9500, "fast-llm mistral-7b zero2 32xh100": 9800}
    estimate, hardware, _ = train_setup_of(runs["fast-llm mistral-7b zero2 32xh100"])
    assert (estimate.layout.framework, estimate.layout.zero, estimate.layout.dp, estimate.cfg.sliding_window,
            hardware.name) == ("deepspeed", 2, 32, 4096, "h100-sxm")
    og2 = {k: (r["published_seconds_per_step"], r["published_tokens_per_s_per_gpu"]) for k, r in runs.items()
           if k.startswith("bionemo")}
    assert og2 == {"bionemo-og2-fsdp2 og2-7b bf16 fsdp48 48xh100": (6.6, 9929.697),
                   "bionemo-og2-megatron og2-7b fp8 tp4 dp12 48xh100": (5.01, 13081.038)}
    estimate, _, _ = train_setup_of(runs["bionemo-og2-fsdp2 og2-7b bf16 fsdp48 48xh100"])
    assert (estimate.cfg.vocab_size, estimate.cfg.n_kv_heads, estimate.layout.microbatches,
            estimate.layout.grad_reduce_dtype) == (256, 8, 4, "fp32")  # 2 x 4 x 48 = 384


FIRST = {"ms-swift-megatron qwen2.5-14b tp4 sp selective 8xa800": 0.999,
         "ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800": 1.167,
         "ms-swift-deepspeed qwen2.5-14b zero3 8xa800": 1.115,
         "ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800": 3.121,
         "ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800": 2.963,
         "ms-swift-long-megatron qwen2.5-7b tp4 32k 4xa100": 0.793,
         "ms-swift-long-deepspeed qwen2.5-3b zero3 ring cp4 64k 4xa100": 0.663,
         "fast-llm mistral-7b zero2 32xh100": 0.992,
         "bionemo-og2-fsdp2 og2-7b bf16 fsdp48 48xh100": 0.981,
         "bionemo-og2-megatron og2-7b fp8 tp4 dp12 48xh100": 0.718}
# id -> the ratio now, where a sourced change moved it: wt36_hfmoe, transformers 4.51's loop over every expert in
# training (a host sync and the expert's own kernels each: costmodel/layout/hf_moe_loop.py)
MOVED: dict[str, float] = {"ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800": 2.241}


def test_a_few_rows_as_first_computed(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and the lowest and highest ratio, as first
# computed (c2033178, before any change to the model)
FIRST_COMPUTED = {"all": ((15, 16.7, 9, 6, 5), (0.663, 46.27)),
                  "ms-swift-megatron": ((2, 8.4, 2, 1, 1), (0.999, 1.167)),
                  "ms-swift-deepspeed": ((4, 111.8, 2, 1, 0), (1.096, 12.348)),
                  "ms-swift-qwen3-megatron": ((1, 196.3, 0, 0, 0), (2.963, 2.963)),
                  "ms-swift-qwen3-deepspeed": ((1, 4527.0, 0, 0, 0), (46.27, 46.27)),
                  "ms-swift-long-megatron": ((1, 20.7, 1, 0, 0), (0.793, 0.793)),
                  "ms-swift-long-deepspeed": ((2, 19.2, 1, 1, 1), (0.663, 0.953)),
                  "fast-llm": ((2, 1.6, 2, 2, 2), (0.992, 1.023)),
                  "bionemo-og2-fsdp2": ((1, 1.9, 1, 1, 1), (0.981, 0.981)),
                  "bionemo-og2-megatron": ((1, 28.2, 0, 0, 0), (0.718, 0.718))}
NOW = {**FIRST_COMPUTED,  # wt36_hfmoe: the HF MoE loop (layout/hf_moe_loop.py) moved the three transformers MoE rows
       "all": ((15, 16.7, 9, 6, 5), (0.663, 23.827)),
       "ms-swift-deepspeed": ((4, 67.8, 2, 1, 0), (1.096, 8.916)),
       "ms-swift-qwen3-deepspeed": ((1, 2282.7, 0, 0, 0), (23.827, 23.827))}


@pytest.mark.slow
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    assert_summaries(every, decode_groups(every, SOURCES), NOW)
    # the pattern: the ten dense rows within 0.66-1.12x (median 7.1%), the five MoE rows all too fast (1.17x-46x), the
    # HF (transformers + DeepSpeed) MoE rows the furthest, ZeRO-3 further than ZeRO-2 on the same model
    dense = [v for k, v in every.items() if "moe" not in k and "qwen3-30b" not in k]
    moe = [v for k, v in every.items() if "moe" in k or "qwen3-30b" in k]
    assert len(dense) == 10 and 0.66 < min(dense) and max(dense) < 1.12 and min(moe) > 1.16
    assert every["ms-swift-deepspeed qwen1.5-moe-a2.7b zero3 8xa800"] > 3 * every["ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800"]


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
MOVED.update({'ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800': 1.168,
              'ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800': 2.967,
              'ms-swift-long-megatron qwen2.5-7b tp4 32k 4xa100': 0.794,
              'fast-llm mistral-7b zero2 32xh100': 0.995,
              'bionemo-og2-fsdp2 og2-7b bf16 fsdp48 48xh100': 0.983,
              'bionemo-og2-megatron og2-7b fp8 tp4 dp12 48xh100': 0.726})
NOW.update({'all': ((15, 16.8, 9, 6, 5), (0.663, 23.827)),
              'ms-swift-megatron': ((2, 8.5, 2, 1, 1), (0.999, 1.168)),
              'ms-swift-qwen3-megatron': ((1, 196.7, 0, 0, 0), (2.967, 2.967)),
              'ms-swift-long-megatron': ((1, 20.6, 1, 0, 0), (0.794, 0.794)),
              'fast-llm': ((2, 1.6, 2, 2, 2), (0.995, 1.026)),
              'bionemo-og2-fsdp2': ((1, 1.7, 1, 1, 1), (0.983, 0.983)),
              'bionemo-og2-megatron': ((1, 27.4, 0, 0, 0), (0.726, 0.726))})

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each group it moved, its summary before beside it
NOW = {**NOW,
    "all": ((15, 16.5, 9, 6, 5), (0.663, 23.794)),  # was ((15, 16.8, 9, 6, 5), (0.663, 23.827))
    "ms-swift-megatron": ((2, 8.3, 2, 1, 1), (0.999, 1.165)),  # was ((2, 8.5, 2, 1, 1), (0.999, 1.168))
    "ms-swift-deepspeed": ((4, 67.5, 2, 1, 0), (1.095, 8.898)),  # was ((4, 67.8, 2, 1, 0), (1.096, 8.916))
    "ms-swift-qwen3-megatron": ((1, 196.0, 0, 0, 0), (2.96, 2.96)),  # was ((1, 196.7, 0, 0, 0), (2.967, 2.967))
    "ms-swift-qwen3-deepspeed": ((1, 2279.4, 0, 0, 0), (23.794, 23.794)),  # was ((1, 2282.7, 0, 0, 0), (23.827, 23.827))
    "ms-swift-long-deepspeed": ((2, 19.2, 1, 1, 1), (0.663, 0.952))}  # was ((2, 19.2, 1, 1, 1), (0.663, 0.953))

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each row it moved, its ratio before beside it
MOVED = {**MOVED,
    "ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800": 1.165,  # was 1.168
    "ms-swift-deepspeed qwen2.5-14b zero3 8xa800": 1.114,  # was 1.115
    "ms-swift-deepspeed qwen1.5-moe-a2.7b zero2 8xa800": 2.236,  # was 2.241
    "ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800": 2.96}  # was 2.967
