"""Session 40's unseen training rows (wt40_unseent; costmodel/published_runs.json sources "mlperf-v5.0-nvidia",
"mlperf-v5.0-coreweave", "mlperf-v4.1-nvidia", "mlperf-v4.1-oracle", "mlperf-v3.0-nvidia", "mlperf-v3.0-coreweave" and "swissai-megatron-pr10", typed before any was
computed: 6e0c5a9e, c2887fa4 and c2258c81): three MLPerf Training rounds no row had come from (v3.0's and v4.1's GPT-3
175B, v5.0's Llama 3.1 405B), each row's figure as its submission's log gives it and its layout as the submission's
config files state it, and the Swiss AI Megatron-LM fork's Llama 3.2 3B on Alps' GH200s (its PR #10); the kernel
model's ratios as first computed (our speed over the published one), the figures validate/FINDINGS.md quotes ("Unseen
training rows, session 40"). Nothing in the model was changed for them."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("mlperf-v5.0-nvidia", "mlperf-v5.0-coreweave", "mlperf-v4.1-nvidia", "mlperf-v4.1-oracle",
           "mlperf-v3.0-nvidia", "mlperf-v3.0-coreweave", "swissai-megatron-pr10")

# each log's (GPUs, global_batch_size, seconds a step: the median train_step_time / train_step_timing after the first
# five, or v4.1's median block over its steps) as parsed from the results' result_0.txt
V50 = {"mlperf-v5.0-nvidia": [(512, 1152, 55.1027), (2048, 1152, 14.2069), (2432, 1216, 12.7003), (2560, 1120, 11.1841),
                              (8192, 1536, 5.1820), (256, 448, 19.0940), (512, 896, 19.6012)],
       "mlperf-v5.0-coreweave": [(512, 896, 19.4304), (1024, 768, 8.4492), (1536, 1152, 8.4904), (2048, 1280, 7.1521),
                                 (2496, 1248, 5.8223)]}
GPT = {"mlperf-v4.1-nvidia": [(256, 2048, 18.4076), (512, 2048, 9.5351), (64, 2048, 36.0646)],
       "mlperf-v4.1-oracle": [(1536, 3072, 5.2235), (3072, 3072, 3.3203)],
       "mlperf-v3.0-nvidia": [(512, 2048, 12.0831), (768, 3072, 12.1284)],
       "mlperf-v3.0-coreweave": [(768, 3072, 12.3229), (1536, 3072, 6.3266), (3584, 2688, 2.5944)]}


def test_the_rows_are_the_logs_steps_and_rates():
    """tokens/s a GPU = global batch x sequence / step / GPUs, to the figure typed (3 decimals for v3.0/v4.1, 1 for
    v5.0); gradient accumulation = GBS / (DP x MBS), as each log's gradient_accumulation_steps prints it."""
    accumulation = {"mlperf-v5.0-nvidia": [288, 72, 64, 56, 24, 112, 112], "mlperf-v5.0-coreweave": [112, 48, 48, 40, 32],
                    "mlperf-v4.1-nvidia": [128, 64, 512], "mlperf-v4.1-oracle": [32, 16],
                    "mlperf-v3.0-nvidia": [128, 128], "mlperf-v3.0-coreweave": [128, 64, 24]}
    for name, rows in {**V50, **GPT}.items():
        runs = runs_of(name)
        seq, digits = (8192, 1) if name.startswith("mlperf-v5.0") else (2048, 3)
        assert [(r["gpus"], r["global_batch"], r["published_seconds_per_step"]) for r in runs] == rows, name
        for r in runs:
            assert r["published_tokens_per_s_per_gpu"] == pytest.approx(
                round(r["global_batch"] * seq / r["published_seconds_per_step"] / r["gpus"], digits), abs=0.011), r["id"]
        assert [r["global_batch"] // (r["dp"] * r["micro_batch"]) for r in runs] == accumulation[name], name


def test_the_layouts_are_the_configs():
    """405B: TP 8 (H100) or 4 (GB200), PP 8 x VP 8 with the embedding and loss as layers (ASYM_PP_EMBED/LOSS),
    CP 2, MBS 1, FP8 delayed with FP8 parameters, the GB200 rows' whole iteration in CUDA graphs; GPT-3: TP 4, PP 8,
    VP 12 (v3.0, MBS 1), 6 (NVIDIA v4.1, MBS 2) or 4 (Oracle v4.1, MBS 2), FP8 parameters from v4.1 only."""
    for name in V50:
        for run in runs_of(name):
            estimate, hardware, _ = train_setup_of(run)
            layout = estimate.layout
            gb200 = hardware.name == "gb200"
            assert (layout.tp, layout.pp, layout.cp, layout.virtual_stages, layout.fp8, layout.fp8_param_gather) == \
                (4 if gb200 else 8, 8, 2, 8, "delayed", True), run["id"]
            assert (run.get("cuda_graph_scope") == ["full_iteration"]) == gb200 == ("xgb200" in run["id"]), run["id"]
            # the 126 transformer layers over 64 chunks, the first and last one layer short: their embedding and loss
            assert run["stage_layers"] == [1] + [2] * 62 + [1] and sum(run["stage_layers"]) == 126
    for name, vp in (("mlperf-v4.1-nvidia", 6), ("mlperf-v4.1-oracle", 4), ("mlperf-v3.0-nvidia", 12),
                     ("mlperf-v3.0-coreweave", 12)):
        for run in runs_of(name):
            estimate, hardware, _ = train_setup_of(run)
            layout = estimate.layout
            assert (layout.tp, layout.pp, layout.virtual_stages, estimate.cfg.vocab_size) == (4, 8, vp, 50688), run["id"]
            assert estimate.workload.batch == (1 if name.startswith("mlperf-v3.0") else 2)
            assert layout.fp8_param_gather == name.startswith("mlperf-v4.1") and not layout.tp_only_amax_red
            assert hardware.name == ("b200" if run["id"].endswith("64xb200") else "h100-sxm")


def test_the_swiss_ai_rows_are_the_prs_launch():
    """Megatron's logged TFLOP/s (~505 on one quad-GH200 node at MBS 1, ~493 on 8 at MBS 2), the PR's script: GBS 256,
    sequence 8,192, TP/PP/CP 1, the distributed optimizer with --use-precision-aware-optimizer and bf16 main grads,
    the FLOPs every (query, key) pair (training.py's num_floating_point_operations at 5da06b7d)."""
    runs = runs_of("swissai-megatron-pr10")
    assert [(r["gpus"], r["micro_batch"], r["published_tflops_per_gpu"]) for r in runs] == [(4, 1, 505), (32, 2, 493)]
    for run in runs:
        estimate, hardware, _ = train_setup_of(run)
        layout = estimate.layout
        assert (hardware.name, hardware.gpus_per_node, estimate.workload.seq_len, layout.microbatches * layout.dp
                * estimate.workload.batch, layout.zero, layout.grad_reduce_dtype, layout.precision_aware_optimizer) == \
            ("gh200-96gb", 4, 8192, 256, 1, "bf16", "te-master")
        assert (estimate.cfg.n_layers, estimate.cfg.d_model, estimate.cfg.vocab_size, estimate.cfg.tie_embeddings) == \
            (28, 3072, 128256, True)


FIRST = {"mlperf-v5.0-nvidia llama3.1-405b fp8 tp8 512xh100": 0.99,
         "mlperf-v5.0-nvidia llama3.1-405b fp8 tp8 8192xh100": 1.036,
         "mlperf-v5.0-nvidia llama3.1-405b fp8 tp4 256xgb200": 1.058,
         "mlperf-v5.0-coreweave llama3.1-405b fp8 tp4 2496xgb200": 1.097,
         "mlperf-v4.1-nvidia gpt3-175b vp6 64xb200": 0.975,
         "mlperf-v4.1-oracle gpt3-175b vp4 1536xh100": 1.039,
         "mlperf-v4.1-oracle gpt3-175b vp4 3072xh100": 1.226,
         "mlperf-v3.0-nvidia gpt3-175b 512xh100": 1.16,
         "mlperf-v3.0-coreweave gpt3-175b 3584xh100": 1.228,
         "swissai-megatron-pr10 llama3.2-3b mbs1 4xgh200": 1.275,
         "swissai-megatron-pr10 llama3.2-3b mbs2 32xgh200": 1.266}
MOVED: dict[str, float] = {}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


FIRST_STATS = {"training rates": ((24, 8.0, 24, 16, 9), (0.972, 1.275)),
               "mlperf-v5.0-nvidia": ((7, 1.0, 7, 7, 5), (0.99, 1.087)),
               "mlperf-v5.0-coreweave": ((5, 8.1, 5, 5, 0), (1.077, 1.097)),
               "mlperf-v4.1-nvidia": ((3, 2.5, 3, 3, 3), (0.972, 0.991)),
               "mlperf-v4.1-oracle": ((2, 13.3, 2, 1, 1), (1.039, 1.226)),
               "mlperf-v3.0-nvidia": ((2, 16.3, 2, 0, 0), (1.16, 1.165)),
               "mlperf-v3.0-coreweave": ((3, 18.8, 3, 0, 0), (1.183, 1.228)),
               "swissai-megatron-pr10": ((2, 27.1, 2, 0, 0), (1.266, 1.275))}
NOW_STATS = {**FIRST_STATS}


@pytest.mark.slow  # every row of the seven sources computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    groups = train_groups(every, SOURCES)
    assert groups.pop("GPU-hours") == []
    assert_summaries(every, groups, NOW_STATS)
    # the pattern: every H100 405B row within 4%; v3.0's GPT-3 rows all too fast, above v3.1's same layout (1.092 at
    # 512 GPUs: the same config a NeMo release later ran 8.4% shorter steps, 11.066 s against 12.083 s)
    assert all(0.98 < v < 1.04 for k, v in every.items() if k.endswith("xh100") and "405b" in k)
    v31 = ratios(("mlperf-v3.1-nvidia",), tables=published_tables)["mlperf-v3.1-nvidia gpt3-175b 512xh100"]
    assert min(v for k, v in every.items() if k.startswith("mlperf-v3.0")) > v31 + 0.06


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
MOVED.update({'mlperf-v5.0-nvidia llama3.1-405b fp8 tp8 512xh100': 0.993,
              'mlperf-v5.0-nvidia llama3.1-405b fp8 tp8 8192xh100': 1.039,
              'mlperf-v5.0-nvidia llama3.1-405b fp8 tp4 256xgb200': 1.065,
              'mlperf-v5.0-coreweave llama3.1-405b fp8 tp4 2496xgb200': 1.104,
              'mlperf-v4.1-nvidia gpt3-175b vp6 64xb200': 0.982,
              'mlperf-v4.1-oracle gpt3-175b vp4 1536xh100': 1.043,
              'mlperf-v4.1-oracle gpt3-175b vp4 3072xh100': 1.231,
              'mlperf-v3.0-nvidia gpt3-175b 512xh100': 1.166,
              'mlperf-v3.0-coreweave gpt3-175b 3584xh100': 1.234,
              'swissai-megatron-pr10 llama3.2-3b mbs1 4xgh200': 1.28,
              'swissai-megatron-pr10 llama3.2-3b mbs2 32xgh200': 1.27})


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
NOW_STATS.update({'training rates': ((24, 8.7, 24, 15, 9), (0.976, 1.28)),
              'mlperf-v5.0-nvidia': ((7, 0.7, 7, 7, 5), (0.993, 1.094)),
              'mlperf-v5.0-coreweave': ((5, 8.8, 5, 4, 0), (1.084, 1.104)),
              'mlperf-v4.1-nvidia': ((3, 1.8, 3, 3, 3), (0.976, 0.995)),
              'mlperf-v4.1-oracle': ((2, 13.7, 2, 1, 1), (1.043, 1.231)),
              'mlperf-v3.0-nvidia': ((2, 16.9, 2, 0, 0), (1.166, 1.171)),
              'mlperf-v3.0-coreweave': ((3, 19.4, 3, 0, 0), (1.189, 1.234)),
              'swissai-megatron-pr10': ((2, 27.5, 2, 0, 0), (1.27, 1.28))})
