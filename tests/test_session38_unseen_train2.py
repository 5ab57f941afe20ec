"""Session 38's second batch of unseen training rows (wt38_unseent2; costmodel/published_runs.json sources
"olmo2-32b-blog" and "gpu-hours-olmo3", typed before any was computed, 73c4c16c): each row's figure and layout as its
source prints them, and the kernel model's ratios as first computed (our speed over the published one; a GPU-hours
row's published hours over ours), the estimate validate/FINDINGS.md quotes ("Unseen training rows, second batch,
session 38"). Grouped as train_groups groups: "training rates", each source, "GPU-hours"."""

from __future__ import annotations

import pytest

import costmodel
from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, source_of, train_groups, train_setup_of

SOURCES = ("olmo2-32b-blog", "gpu-hours-olmo3")


def test_the_olmo2_32b_row_is_the_blogs_rate_at_the_official_scripts_layout():
    """Ai2's OLMo 2 32B post: 'above 1,800 tokens per second per GPU'; OLMo-core's official 32B script: 2,048 x 4,096
    a step, HSDP in shards of 64, its >= 1,024-GPU branch's micro-batch of 2; OLMo 2 32B's shape gives its
    published size (32.2B)."""
    (run,) = runs_of("olmo2-32b-blog")
    assert (run["gpus"], run["dp"], run["dp_shard"], run["seq_len"], run["micro_batch"], run["global_batch"],
            run["published_tokens_per_s_per_gpu"]) == (1024, 1024, 64, 4096, 2, 2048, 1800)
    estimate, hardware, options = train_setup_of(run)
    assert costmodel.estimate(estimate.cfg).to_dict()["params"]["total"] == 32_234_279_936
    assert (estimate.layout.framework, estimate.layout.zero, estimate.layout.microbatches, estimate.workload.recompute,
            estimate.cfg.n_kv_heads, hardware.name, options["compiled"]) == ("fsdp2", 3, 1, "full", 8, "h100-sxm", True)
    assert "feed-forward-only checkpointing as full recomputation" in source_of("olmo2-32b-blog")["assumed"]


def test_the_olmo3_rows_are_the_reports_hours_over_the_readmes_tokens():
    """The Olmo 3 report's pretraining H100-hours (7B ~234k, 32B ~1.05M) over the OLMo-core README's stage-1 tokens
    (5.93T, 5.50T), at the official pretrain scripts' layouts: 8,192-token sequences, sliding windows of 4,096 on
    three layers of four; the 7B is OLMo 2 7B's shape (7,298,617,344 parameters)."""
    runs = {r["id"]: r for r in runs_of("gpu-hours-olmo3")}
    assert {k: (r["gpus"], r["micro_batch"], r["global_batch"], r["tokens"], r["published_gpu_hours"])
            for k, r in runs.items()} == {
        "gpu-hours-olmo3 7b 5.93T tokens": (256, 2, 512, 5.93e12, 234000),
        "gpu-hours-olmo3 32b 5.5T tokens": (1024, 1, 1024, 5.5e12, 1050000)}
    seven, _, _ = train_setup_of(runs["gpu-hours-olmo3 7b 5.93T tokens"])
    big, _, _ = train_setup_of(runs["gpu-hours-olmo3 32b 5.5T tokens"])
    assert costmodel.estimate(seven.cfg).to_dict()["params"]["total"] == 7_298_617_344
    assert (seven.cfg.sliding_window, seven.cfg.n_window_layers, big.cfg.n_window_layers, seven.workload.seq_len,
            seven.workload.recompute, big.layout.microbatches) == (4096, 24, 48, 8192, "none", 1)


FIRST = {"olmo2-32b-blog olmo2-32b hsdp 1024xh100": 1.128,
         "gpu-hours-olmo3 7b 5.93T tokens": 1.454,
         "gpu-hours-olmo3 32b 5.5T tokens": 1.686}


# wt46_mgsoftmax: a recomputed forward pays its leaves' launches again (StepTime.compute): OLMo 2 32B 1.128 -> 1.126
MOVED = {"olmo2-32b-blog olmo2-32b hsdp 1024xh100": 1.126}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


FIRST_STATS = {"training rates": ((1, 12.8, 1, 0, 0), (1.128, 1.128)),
               "olmo2-32b-blog": ((1, 12.8, 1, 0, 0), (1.128, 1.128)),
               "gpu-hours-olmo3": ((2, 57.0, 0, 0, 0), (1.454, 1.686)),
               "GPU-hours": ((2, 57.0, 0, 0, 0), (1.454, 1.686))}


@pytest.mark.slow  # every row of the two sources computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    assert_summaries(every, train_groups(every, SOURCES), NOW_STATS)
    # every row too fast; the measured rate (OLMo 2 32B, 13%) far closer than the whole-run hours (45-69%), which
    # hold restarts, checkpoints and network issues; the 32B's hours further off than the 7B's
    assert min(every.values()) > 1.1
    assert every["olmo2-32b-blog olmo2-32b hsdp 1024xh100"] < every["gpu-hours-olmo3 7b 5.93T tokens"] \
        < every["gpu-hours-olmo3 32b 5.5T tokens"]

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each group it moved, its summary before beside it
NOW_STATS = {**FIRST_STATS,
    "training rates": ((1, 12.6, 1, 0, 0), (1.126, 1.126)),  # was ((1, 12.8, 1, 0, 0), (1.128, 1.128))
    "olmo2-32b-blog": ((1, 12.6, 1, 0, 0), (1.126, 1.126))}  # was ((1, 12.8, 1, 0, 0), (1.128, 1.128))
