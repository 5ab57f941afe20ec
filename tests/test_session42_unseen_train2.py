"""Session 42's second set of unseen training rows (wt42_unseent2; costmodel/published_runs.json sources
"nemo-perf-nvfp4" and "swissai-megatron-pr23", typed before any was computed: d23d49ac). A third party's NeMo
performance-script reproduction of Llama 3 8B pretraining on one 8-B200 node in BF16, FP8 (delayed scaling), MXFP8 and
NVFP4 (vuiseng9/nemo-perf-nvfp4's README table), and the Swiss AI Megatron-LM fork's pull request #23 (a 300M Llama-3
shape on 32 GH200, its script's own '~140 TFLOPS/GPU' and '~0.9 s' iteration). Each row's figure as its source prints
it, the kernel model's ratios as first computed (our speed over the published one), the one row the model refuses and
why, the figures validate/FINDINGS.md quotes ("Unseen training rows, part 2"). Nothing in the model was changed."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("nemo-perf-nvfp4", "swissai-megatron-pr23")

# the README's 'Pretrain llama3-8b' table: precision -> (row fp8, TPS/GPU); 'Config: 8xB200, GBS=128, MBS=2,
# Seq.Len=8192, TP=1, PP=1, CP=1, VP=1, EP=1, GA=8'
NVFP4_TABLE = [(None, 21618), ("delayed", 29567), ("mxfp8", 28432), ("nvfp4", 35578)]


def test_the_nemo_perf_nvfp4_rows_are_the_readmes_pretraining_table():
    """tokens/s a GPU as printed (128 x 8,192 / train_step_timing / 8: the NVFP4 row's example log's 3.684 s gives its
    35,578, truncated); the layout the README's config line states on the b200 preset; FP8 parameters on the delayed-scaling and
    MXFP8 rows (NeMo v2.5.0rc0's bf16_with_fp8_mixed and bf16_with_mxfp8_mixed), the MXFP8 row's parameter all-gather
    not overlapped (the perf script's reuse_grad_buf_for_mxfp8_param_ag)."""
    rows = runs_of("nemo-perf-nvfp4")
    assert [(r.get("fp8"), r["published_tokens_per_s_per_gpu"]) for r in rows] == NVFP4_TABLE
    assert int(128 * 8192 / 3.684 / 8) == 35578  # 35,578.7, the README truncates
    for run in rows:
        assert (run["gpus"], run["tp"], run["pp"], run["dp"], run["seq_len"], run["micro_batch"],
                run["global_batch"]) == (8, 1, 1, 8, 8192, 2, 128)
        assert run.get("fp8_param_gather", False) == (run.get("fp8") in ("delayed", "mxfp8"))
        assert run["overlap"] == {"params": 0.0 if run.get("fp8") == "mxfp8" else 1.0}
    estimate, hardware, _ = train_setup_of(rows[0])
    assert (hardware.name, estimate.cfg.d_model, estimate.cfg.n_decoder_layers, estimate.layout.zero,
            estimate.workload.recompute) == ("b200", 4096, 32, 1, "none")
    assert estimate.layout.microbatches == 8


def test_the_swissai_pr23_row_is_its_script():
    """submit-llama3-300m.sh at the PR's merge 415da45c: 6 x 2,048, 16 heads, 4 KV groups, SwiGLU 6,144, Llama 3.1's
    128,256 tokens tied (the PR's 0.29B transformer and 0.26B embedding parameters), 8 nodes of 4 GH200, MBS 2, GBS 256,
    sequence 4,096; '~140' TFLOP/s compared, '~0.9 s' kept beside it."""
    (run,) = runs_of("swissai-megatron-pr23")
    assert (run["published_tflops_per_gpu"], run["published_seconds_per_step"]) == (140, 0.9)
    estimate, hardware, _ = train_setup_of(run)
    cfg, layout, workload = estimate.cfg, estimate.layout, estimate.workload
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.d_ff, cfg.vocab_size,
            cfg.tie_embeddings) == (6, 2048, 16, 4, 128, 6144, 128256, True)
    assert cfg.vocab_size * cfg.d_model == 262_668_288  # the PR's 'Embedding layer: 0.26B'
    assert (hardware.name, layout.dp, layout.microbatches, workload.batch, workload.seq_len) == \
        ("gh200-96gb", 32, 4, 2, 4096)


FIRST = {"nemo-perf-nvfp4 llama3-8b bf16 8xb200": 1.032,
         "nemo-perf-nvfp4 llama3-8b fp8-ds 8xb200": 1.058,
         "nemo-perf-nvfp4 llama3-8b nvfp4 8xb200": 1.074,
         "swissai-megatron-pr23 llama3-300m mbs2 32xgh200": 3.658}
MOVED: dict[str, float] = {}
# MXFP8 parameters (--fp8-param-gather with --fp8 mxfp8): the layout models FP8 parameters for the per-tensor recipes only
REFUSED = ("nemo-perf-nvfp4 llama3-8b mxfp8 8xb200",)


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, REFUSED, tables=published_tables)


FIRST_STATS = {"training rates": ((4, 6.6, 3, 3, 1), (1.032, 3.658)),
               "nemo-perf-nvfp4": ((3, 5.8, 3, 3, 1), (1.032, 1.074)),
               "swissai-megatron-pr23": ((1, 265.8, 0, 0, 0), (3.658, 3.658))}
NOW_STATS = {**FIRST_STATS}


def test_the_rows_as_first_computed():
    """Five rows, so not slow: every expressible row too fast; the lower the precision, the further (BF16 -> FP8 ->
    NVFP4: the published speedups 1.37x and 1.65x over BF16, ours 1.40x and 1.71x)."""
    every = ratios(SOURCES, refused={})
    groups = {name: keys for name, keys in train_groups(every, SOURCES).items() if keys}
    assert_summaries(every, groups, NOW_STATS)
    bf16, fp8, nvfp4 = (every[f"nemo-perf-nvfp4 llama3-8b {p} 8xb200"] for p in ("bf16", "fp8-ds", "nvfp4"))
    assert bf16 < fp8 < nvfp4
    # NVFP4 1.71x before session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv; merged in session 44)
    assert round(fp8 / bf16 * 29567 / 21618, 2) == 1.40 and round(nvfp4 / bf16 * 35578 / 21618, 2) == 1.72


# Session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv; merged in session 44) moved these, each
# from the figure before.
MOVED.update({"swissai-megatron-pr23 llama3-300m mbs2 32xgh200": 3.67,  # 3.658
              "nemo-perf-nvfp4 llama3-8b nvfp4 8xb200": 1.076})  # 1.074
NOW_STATS.update({"training rates": ((4, 6.7, 3, 3, 1), (1.032, 3.67)),  # 6.6, 3.658
                  "nemo-perf-nvfp4": ((3, 5.8, 3, 3, 1), (1.032, 1.076)),  # 1.074
                  "swissai-megatron-pr23": ((1, 267.0, 0, 0, 0), (3.67, 3.67))})  # 265.8, 3.658
