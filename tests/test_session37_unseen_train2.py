"""Session 37's second batch of unseen training rows (wt37_unseent2; costmodel/published_runs.json sources
"mlperf-v5.1-*", typed before any was computed, 8f0fb9d4 and df6b1b8e, the FP8 recipe's name fixed before the first
computation, 01d93409): MLPerf Training v5.1's Llama 3.1 8B (and two 405B) submissions of eight organisations, each
row's figure and layout as its log and config print them, and the kernel model's ratios as first computed (our speed
over the published one), the estimate validate/FINDINGS.md quotes ("Unseen training rows, second batch, session 37").
Grouped as train_groups groups: "training rates", then each source; no GPU-hours row."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("mlperf-v5.1-cisco", "mlperf-v5.1-dell", "mlperf-v5.1-oracle", "mlperf-v5.1-verda", "mlperf-v5.1-uf",
           "mlperf-v5.1-amd", "mlperf-v5.1-gigacomputing", "mlperf-v5.1-nvidia")

# (tokens/s per GPU, seconds a step): the NeMo logs' median train_step_time (the first five entries dropped) and
# GBS x 8,192 / step / GPUs; AMD's implementation logs no step time: its median block of 12,288 samples over 384 steps.
PUBLISHED = {
    "mlperf-v5.1-cisco llama3.1-8b fp8 64xh100": (11380.9, 0.7198),
    "mlperf-v5.1-cisco llama3.1-8b fp8 tp2 128xh100": (8478.6, 0.4831),
    "mlperf-v5.1-dell llama3.1-8b fp8 8xb300": (29892.4, 0.5481),
    "mlperf-v5.1-dell llama3.1-8b fp8 xe9680l 16xb200": (28146.4, 0.5821),
    "mlperf-v5.1-dell llama3.1-8b fp8 xe9685l 16xb200": (28563.5, 0.5736),
    "mlperf-v5.1-dell llama3.1-8b nvfp4 xe9680l 8xb200": (36360.4, 0.4506),
    "mlperf-v5.1-oracle llama3.1-8b fp8 cp2 64xb200": (21411.4, 0.1913),
    "mlperf-v5.1-oracle llama3.1-8b nvfp4 8xb200": (36088.1, 0.454),
    "mlperf-v5.1-verda llama3.1-8b fp8 cp2 64xb200": (21433.8, 0.1911),
    "mlperf-v5.1-uf llama3.1-8b fp8 8xb200": (30139.8, 0.5436),
    "mlperf-v5.1-uf llama3.1-8b fp8 cp2 64xb200": (21603.4, 0.1896),
    "mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x": (31385.6, 1.04405),
    "mlperf-v5.1-gigacomputing llama3.1-8b fp8 8xmi355x": (29787.0, 1.10008),
    "mlperf-v5.1-nvidia llama3.1-8b nvfp4 8xgb200": (40454.3, 0.405),
    "mlperf-v5.1-nvidia llama3.1-8b fp8 cp2 72xgb200": (24279.8, 0.1687),
    "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb200": (11505.6, 0.089),
    "mlperf-v5.1-nvidia llama3.1-8b nvfp4 8xgb300": (47407.4, 0.3456),
    "mlperf-v5.1-nvidia llama3.1-8b fp8 cp2 72xgb300": (27807.2, 0.1473),
    "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300": (11976.6, 0.0855),
    "mlperf-v5.1-nvidia llama3.1-405b nvfp4 2560xgb200": (961.5, 3.1949),
    "mlperf-v5.1-nvidia llama3.1-405b nvfp4 5120xgb200": (919.0, 2.2286)}


def _runs() -> dict[str, dict]:
    return {r["id"]: r for s in SOURCES for r in runs_of(s)}


def test_each_row_is_its_log_step_and_config_layout():
    runs = _runs()
    assert {k: (r["published_tokens_per_s_per_gpu"], r["published_seconds_per_step"]) for k, r in runs.items()} == PUBLISHED
    for run in runs.values():  # the rate is the step's: GBS x 8,192 tokens over the step and the GPUs
        rate = run["global_batch"] * run["seq_len"] / run["published_seconds_per_step"] / run["gpus"]
        assert abs(rate - run["published_tokens_per_s_per_gpu"]) < 0.5 or "mi355x" in run["id"]
        assert run["dp"] * run["tp"] * run["pp"] * run.get("cp", 1) == run["gpus"]
    amd = runs["mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x"]
    # the median block (first typed from the rounded step, 31,385.5 and 29,786.9: retyped from the block, no ratio moved)
    assert amd["published_tokens_per_s_per_gpu"] == round(12288 * 8192 / 400.914 / 8, 1)
    giga = runs["mlperf-v5.1-gigacomputing llama3.1-8b fp8 8xmi355x"]
    assert giga["published_tokens_per_s_per_gpu"] == round(12288 * 8192 / 422.43 / 8, 1)


def test_the_setups_are_the_stated_layouts():
    runs = _runs()
    estimate, hardware, _ = train_setup_of(runs["mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300"])
    layout = estimate.layout
    assert (hardware.name, layout.tp, layout.cp, layout.dp, layout.microbatches, layout.fp8, layout.fp8_param_gather,
            estimate.workload.seq_len, estimate.workload.batch) == ("gb300", 2, 4, 64, 1, "current", True, 8192, 1)
    estimate, hardware, _ = train_setup_of(runs["mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x"])
    assert (hardware.name, estimate.layout.dp, estimate.layout.microbatches, estimate.layout.fp8,
            estimate.workload.batch) == ("mi355x", 8, 2, "delayed", 2)
    estimate, hardware, _ = train_setup_of(runs["mlperf-v5.1-nvidia llama3.1-405b nvfp4 2560xgb200"])
    assert (hardware.name, estimate.layout.pp, estimate.layout.virtual_stages, estimate.layout.dp,
            estimate.layout.microbatches, estimate.layout.fp8) == ("gb200", 8, 8, 40, 24, "nvfp4")
    _, hardware, _ = train_setup_of(runs["mlperf-v5.1-dell llama3.1-8b fp8 8xb300"])
    assert hardware.name == "b300"  # the run's own hardware over its source's B200


FIRST = {"mlperf-v5.1-cisco llama3.1-8b fp8 64xh100": 1.266,
         "mlperf-v5.1-cisco llama3.1-8b fp8 tp2 128xh100": 1.516,
         "mlperf-v5.1-uf llama3.1-8b fp8 8xb200": 0.996,
         "mlperf-v5.1-oracle llama3.1-8b fp8 cp2 64xb200": 1.084,
         "mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x": 1.277,
         "mlperf-v5.1-nvidia llama3.1-8b nvfp4 8xgb200": 0.965,
         "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300": 1.46,
         "mlperf-v5.1-nvidia llama3.1-405b nvfp4 2560xgb200": 1.007}
# wt37_mi355x: the MI355X's FP8 GEMMs at hipBLASLt's measured 0.622 of peak (ROCm blog cdna4-gemm-kernels,
# Table 5), not the generic 0.7 (costmodel/hardware/mi355x.json matmul_efficiency fp8): 1.277 -> 1.205; its fused
# attention at AITER's measured forward (HipKittens; kernel_facts.json flash2 cdna4), not the GEMMs' 0.622: -> 1.137
MOVED: dict[str, float] = {"mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x": 1.137}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


FIRST_STATS = {"training rates": ((21, 7.4, 17, 15, 9), (0.965, 1.516)),
               "mlperf-v5.1-cisco": ((2, 39.1, 1, 0, 0), (1.266, 1.516)),
               "mlperf-v5.1-dell": ((4, 2.9, 4, 4, 3), (0.996, 1.059)),
               "mlperf-v5.1-oracle": ((2, 5.3, 2, 2, 1), (1.021, 1.084)),
               "mlperf-v5.1-verda": ((1, 8.3, 1, 1, 0), (1.083, 1.083)),
               "mlperf-v5.1-uf": ((2, 3.9, 2, 2, 1), (0.996, 1.074)),
               "mlperf-v5.1-amd": ((1, 27.7, 1, 0, 0), (1.277, 1.277)),
               "mlperf-v5.1-gigacomputing": ((1, 34.6, 0, 0, 0), (1.346, 1.346)),
               "mlperf-v5.1-nvidia": ((8, 5.5, 6, 6, 4), (0.965, 1.46)),
               "GPU-hours": None}
NOW_STATS = {**FIRST_STATS,  # wt37_mi355x: the MI355X FP8 GEMM and attention rates measured (MOVED)
             "training rates": ((21, 7.4, 18, 15, 9), (0.965, 1.516)),
             "mlperf-v5.1-amd": ((1, 13.7, 1, 0, 0), (1.137, 1.137)),
             "mlperf-v5.1-gigacomputing": ((1, 19.8, 1, 0, 0), (1.198, 1.198))}


@pytest.mark.slow  # every row of the eight sources computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    groups = train_groups(every, SOURCES)
    assert groups.pop("GPU-hours") == []
    assert_summaries(every, groups, {k: v for k, v in NOW_STATS.items() if v is not None})
    # the pattern: the one-node rows within 6%, the data-parallel rows over many nodes with little work a GPU too fast
    one_node = [v for k, v in every.items() if k.split()[-1].startswith(("8x", "16x")) and "mi355x" not in k]
    assert len(one_node) == 8 and all(0.96 < v < 1.06 for v in one_node)
    assert sorted(k for k, v in every.items() if v > 1.25) == [
        "mlperf-v5.1-cisco llama3.1-8b fp8 64xh100",  # the MI355X rows 1.137, 1.198 since wt37_mi355x
        "mlperf-v5.1-cisco llama3.1-8b fp8 tp2 128xh100",
        "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb200", "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300"]


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
MOVED.update({'mlperf-v5.1-cisco llama3.1-8b fp8 64xh100': 1.269,
              'mlperf-v5.1-cisco llama3.1-8b fp8 tp2 128xh100': 1.523,
              'mlperf-v5.1-nvidia llama3.1-8b nvfp4 8xgb200': 0.967,
              'mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300': 1.461,
              'mlperf-v5.1-nvidia llama3.1-405b nvfp4 2560xgb200': 1.019})


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
NOW_STATS.update({'training rates': ((21, 7.4, 18, 15, 9), (0.967, 1.523)),
              'mlperf-v5.1-cisco': ((2, 39.6, 1, 0, 0), (1.269, 1.523)),
              'mlperf-v5.1-dell': ((4, 3.0, 4, 4, 3), (0.996, 1.059)),
              'mlperf-v5.1-oracle': ((2, 5.3, 2, 2, 1), (1.023, 1.084)),
              'mlperf-v5.1-nvidia': ((8, 5.6, 6, 6, 4), (0.967, 1.461))})


# the FP8 GEMMs' operands read in one byte (session 45): 1.461 before
MOVED.update({
              "mlperf-v5.1-nvidia llama3.1-8b fp8 tp2 cp4 512xgb300": 1.462})


# the FP8 GEMMs' operands in one byte (session 45): the group's top 1.461 before
NOW_STATS = {**NOW_STATS,
                 "mlperf-v5.1-nvidia": ((8, 5.6, 6, 6, 4), (0.967, 1.462))}
