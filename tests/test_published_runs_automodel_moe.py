"""NeMo AutoModel's MoE pre-training rows among the published runs (costmodel/published_runs.json source
"automodel-moe", session 26): NVIDIA-NeMo/Automodel docs/performance-summary.mdx at 36044ad3, DGX-H100
BF16, every row 'TE + DeepEP' under FSDP2, as the table prints them and the benchmark configs at the
same commit set their flags (the source's 'assumed' says which is whose)."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data

# The table's #GPUs, GBS, MBS, LBS, GA, PP, EP, VP, FSDP, step time (s), Tokens/sec/GPU; then the
# recomputation and --zero the configs give (activation_checkpointing, reshard_after_forward) and the
# attention kernel ('TE': cuDNN; TorchSDPA, FlexAttn: flash attention's rates)
TABLE = {
    "automodel-moe qwen3-30b-a3b ep8 8xh100": (8, 512, 4, 4, 16, 1, 8, 1, 8, 21.773, 12040, "full", 2, "cudnn"),
    "automodel-moe nemotron-3-nano ep8 8xh100": (8, 512, 4, 4, 16, 1, 8, 1, 8, 15.614, 16789, "full", 2, None),
    "automodel-moe nemotron-3-super ep64 64xh100": (64, 512, 2, 2, 4, 1, 64, 1, 64, 7.286, 4497, "full", 3, None),
    "automodel-moe nemotron-3-ultra ep64 128xh100": (128, 256, 2, 2, 1, 1, 64, 1, 128, 10.05, 815, "full", 3, "cudnn"),
    "automodel-moe deepseek-v3 pp4 vp8 ep64 1024xh100": (1024, 8192, 1, 8, 4, 4, 64, 8, 256, 37.87, 865, "full", 2,
                                                         "cudnn"),
    "automodel-moe deepseek-v3 pp4 vp8 ep64 256xh100": (256, 512, 1, 8, 1, 4, 64, 8, 64, 8.18, 1002, "full", 2, "cudnn"),
    "automodel-moe kimi-k2 pp8 vp4 ep32 256xh100": (256, 512, 1, 8, 2, 8, 32, 4, 32, 8.86, 924, "full", 2, "cudnn"),
}
# GPT-OSS 20B and 120B: EP '-' in the table; their configs' ep_size 8 and 64 (dp = ep: AutoModel's
# experts, biases included, left out of FSDP); FlexAttention timed at flash attention's rates
GPT_OSS = {
    "automodel-moe gpt-oss-20b ep8 8xh100": (8, 256, 2, 2, 16, 1, 8, 1, 8, 10.04, 13058, "none", 2, None),
    "automodel-moe gpt-oss-120b ep64 64xh100": (64, 512, 2, 2, 4, 1, 64, 1, 64, 4.30, 7626, "none", 2, None),
}
TABLE.update(GPT_OSS)


def _run(run_id):
    data = other_runs_data()
    return next(r for r in data["runs"] if r["id"] == run_id), data["sources"]["automodel-moe"]


def test_the_source_holds_nine_rows():
    data = other_runs_data()
    assert sorted(r["id"] for r in data["runs"] if r["id"].startswith("automodel-moe ")) == sorted(TABLE)


@pytest.mark.parametrize("run_id", sorted(TABLE))
def test_each_row_is_its_table_and_config(run_id):
    """Tokens/sec/GPU = GBS x 4,096 / (step time x #GPUs) within the step time's rounding; DP = #GPUs /
    PP = the FSDP column; GBS / (DP x MBS) micro-batches a step = LBS x GA / MBS; TP 1, CP 1, no
    sequence parallelism; FSDP2 with DeepEP's flex dispatcher, the experts EP-sharded."""
    from reports.published_runs import train_setup

    gpus, gbs, mbs, lbs, ga, pp, ep, vp, fsdp, seconds, tokens, recompute, zero, kernel = TABLE[run_id]
    run, source = _run(run_id)
    assert (run["published_tokens_per_s_per_gpu"], run["published_seconds_per_step"]) == (tokens, seconds)
    assert abs(gbs * 4096 / (seconds * gpus) / tokens - 1) < 0.001  # 8.86 s printed to 3 figures
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.cp, layout.pp, layout.dp, layout.ep, layout.virtual_stages) == (1, 1, pp, fsdp, ep, vp)
    assert layout.dp == gpus // pp and layout.sp is False
    assert layout.microbatches == gbs // (fsdp * mbs) == lbs * ga // mbs
    assert (workload.batch, workload.seq_len, workload.recompute) == (mbs, 4096, recompute)
    assert (layout.framework, layout.zero, layout.ep_dispatcher) == ("fsdp2", zero, "deepep")
    assert layout.schedule == ("interleaved" if pp > 1 else "1f1b")
    assert hardware.name == "h100-sxm" and options.get("attention_kernel") == kernel
    assert estimate.cfg.mtp_layers == 0
