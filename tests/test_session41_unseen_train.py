"""Session 41's unseen training rows (wt41_unseent; costmodel/published_runs.json sources "torchao-moe-b200" and
"gpu-hours-olmoe", typed before either was computed: 2cf43419): torchao's MXFP8 MoE README's end-to-end TorchTitan
table (Llama 4 Scout cut to 2 layers on 4 B200s, bf16 and MXFP8 on the linears and grouped GEMMs) and OLMoE-1B-7B's
pretraining (5.1T tokens, 10 days on 256 H100s, as GPU-hours); the kernel model's ratios as first computed (our speed
over the published one; a GPU-hours row's published hours over ours), the figures validate/FINDINGS.md quotes
("Unseen training rows, session 41"). Nothing in the model was changed for them."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("torchao-moe-b200", "gpu-hours-olmoe")


def test_the_torchao_rows_are_the_readmes_table():
    """'Throughput (Median Tokens/s)': bf16 baseline 49381.0, MXFP8 for Linears + Grouped GEMMs 70747.0 (1.433x);
    'FSDP=4, EP=4; AC=none; compile=True; seq_len=8192; local_bs=8', the 17bx16e model cut to 2 layers."""
    runs = runs_of("torchao-moe-b200")
    assert [(r.get("fp8"), r["published_tokens_per_s_per_gpu"]) for r in runs] == [(None, 49381.0), ("mxfp8", 70747.0)]
    assert round(runs[1]["published_tokens_per_s_per_gpu"] / runs[0]["published_tokens_per_s_per_gpu"], 3) == 1.433
    for run in runs:
        estimate, hardware, options = train_setup_of(run)
        layout, cfg = estimate.layout, estimate.cfg
        assert (hardware.name, layout.dp, layout.ep, layout.tp, layout.zero, estimate.workload.batch,
                estimate.workload.seq_len, layout.microbatches, options["compiled"]) == \
            ("b200", 4, 4, 1, 3, 8, 8192, 1, True)
        # two RoPE chunked-attention layers of Scout's 5,120, a shared expert and top-1 of 16 routed experts of 8,192
        assert (cfg.n_layers, cfg.d_model, cfg.n_experts, cfg.top_k, cfg.d_expert, cfg.d_shared, cfg.nope_layers) == \
            (2, 5120, 16, 1, 8192, 8192, 0)


def test_the_olmoe_row_is_the_papers_run_and_configs_shape():
    """256 H100s x 10 days = 61,440 GPU-hours for 5.1T tokens; OLMoE-1B-7B: 6,919,161,856 parameters, 1,282,017,280
    active (the paper's 6.9B / 1.3B: 16 layers of 2,048, 64 experts of 1,024, top 8, 50,304 tokens, untied)."""
    from costmodel import estimate as estimate_of

    (run,) = runs_of("gpu-hours-olmoe")
    assert (run["gpus"], run["tokens"], run["published_gpu_hours"]) == (256, 5.1e12, 256 * 10 * 24)
    estimate, hardware, _ = train_setup_of(run)
    cfg = estimate.cfg
    assert (hardware.name, estimate.layout.dp, estimate.layout.zero, estimate.workload.batch * estimate.layout.dp) == \
        ("h100-sxm", 256, 3, 1024)
    params = estimate_of(cfg, seq_len=4096).to_dict()["params"]
    assert (params["total"], params["active"]) == (6_919_161_856, 1_282_017_280)


FIRST = {"torchao-moe-b200 llama4-scout-2l fsdp4 ep4 compile bf16 4xb200": 1.984,
         "torchao-moe-b200 llama4-scout-2l fsdp4 ep4 compile mxfp8 linears+grouped 4xb200": 1.543,
         "gpu-hours-olmoe olmoe-1b-7b 5.1T tokens": 0.492}
MOVED: dict[str, float] = {}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


FIRST_STATS = {"training rates": ((2, 76.4, 0, 0, 0), (1.543, 1.984)),
               "torchao-moe-b200": ((2, 76.4, 0, 0, 0), (1.543, 1.984)),
               "gpu-hours-olmoe": ((1, 50.8, 0, 0, 0), (0.492, 0.492)),
               "GPU-hours": ((1, 50.8, 0, 0, 0), (0.492, 0.492))}
NOW_STATS = {**FIRST_STATS}


@pytest.mark.slow  # every row of the two sources computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    assert_summaries(every, train_groups(every, SOURCES), NOW_STATS)
    # the pattern: the torchao rows too fast by about what the same team's dense B200 table is (torchao-mx-b200's bf16
    # Llama 3 8B, 2.07x), the MXFP8 row's measured 1.433x gain above ours (1.433 / (1.984 / 1.543) = 1.11x)
    bf16 = every["torchao-moe-b200 llama4-scout-2l fsdp4 ep4 compile bf16 4xb200"]
    dense = ratios(("torchao-mx-b200",), tables=published_tables)["torchao-mx-b200 llama3-8b fsdp compile bf16 8xb200"]
    assert abs(bf16 - dense) < 0.1


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
MOVED.update({'torchao-moe-b200 llama4-scout-2l fsdp4 ep4 compile bf16 4xb200': 1.985})
NOW_STATS.update({'training rates': ((2, 76.4, 0, 0, 0), (1.543, 1.985)),
              'torchao-moe-b200': ((2, 76.4, 0, 0, 0), (1.543, 1.985))})
