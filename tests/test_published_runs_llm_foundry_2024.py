"""llm-foundry's January 2024 benchmark tables among the published runs (costmodel/published_runs.json
source "llm-foundry-2024", session 27): 'H100 80GB BF16 (Large Scale, >= 128 GPUs)' at 128 and 512 GPUs
and 'H100 80GB FP8', as scripts/train/benchmarking/README.md, sweep.py, sweep.sh and
submit_benchmarks.py state them at 5e85bd62d."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from reports.published_runs import other_runs, other_runs_data, train_setup

# the README's rows: id -> (MicroBatchSize, GradAccum, GlobalBatchSize, Throughput (T/s/GPU),
# Throughput (T/s), Sharding Strategy, Activation Checkpointing, NumParams)
ROWS = {
    "llm-foundry-2024 mpt-70b 2048 bf16 512xh100-sxm": (8, 1, 4096, 1007, 515636, "FULL_SHARD", True, 64862437376),
    "llm-foundry-2024 mpt-70b 2048 bf16 128xh100-sxm": (8, 1, 1024, 1058, 135490, "FULL_SHARD", True, 64862437376),
    "llm-foundry-2024 mpt-30b 2048 bf16 512xh100-sxm": (8, 1, 4096, 2115, 1083366, "FULL_SHARD", True, 29975214080),
    "llm-foundry-2024 mpt-30b 2048 bf16 128xh100-sxm": (8, 1, 1024, 2199, 281491, "FULL_SHARD", True, 29975214080),
    "llm-foundry-2024 mpt-13b 2048 bf16 512xh100-sxm": (16, 1, 8192, 4952, 2535811, "FULL_SHARD", True, 12853954560),
    "llm-foundry-2024 mpt-13b 2048 bf16 128xh100-sxm": (16, 1, 2048, 5080, 650264, "FULL_SHARD", True, 12853954560),
    "llm-foundry-2024 mpt-7b 2048 bf16 512xh100-sxm": (6, 1, 3072, 9670, 4951479, "FULL_SHARD", False, 6658859008),
    "llm-foundry-2024 mpt-7b 2048 bf16 128xh100-sxm": (6, 1, 768, 10475, 1340830, "FULL_SHARD", False, 6658859008),
    "llm-foundry-2024 mpt-3b 2048 bf16 512xh100-sxm": (8, 1, 4096, 21664, 11092218, "SHARD_GRAD_OP", False, 2651837440),
    "llm-foundry-2024 mpt-3b 2048 bf16 128xh100-sxm": (8, 1, 1024, 23422, 2998098, "SHARD_GRAD_OP", False, 2651837440),
    "llm-foundry-2024 mpt-1b 2048 bf16 512xh100-sxm": (12, 1, 6144, 39837, 20396905, "SHARD_GRAD_OP", False, 1315950592),
    "llm-foundry-2024 mpt-1b 2048 bf16 128xh100-sxm": (12, 1, 1536, 44123, 5647854, "SHARD_GRAD_OP", False, 1315950592),
    "llm-foundry-2024 mpt-3b 32768 fp8 8xh100-sxm": (3, 6, 144, 5856, 46853, "FULL_SHARD", True, 2730480640),
    "llm-foundry-2024 mpt-3b 8192 fp8 8xh100-sxm": (3, 6, 144, 19146, 153174, "FULL_SHARD", False, 2667566080),
    "llm-foundry-2024 mpt-3b 2048 fp8 8xh100-sxm": (10, 6, 480, 30586, 244692, "FULL_SHARD", False, 2651837440),
    "llm-foundry-2024 mpt-3b 512 fp8 8xh100-sxm": (40, 6, 1920, 36527, 292217, "FULL_SHARD", False, 2647905280),
    "llm-foundry-2024 mpt-1b 32768 fp8 8xh100-sxm": (1, 4, 32, 12580, 100643, "FULL_SHARD", False, 1378865152),
    "llm-foundry-2024 mpt-1b 8192 fp8 8xh100-sxm": (2, 4, 64, 32010, 256087, "FULL_SHARD", False, 1328533504),
    "llm-foundry-2024 mpt-1b 512 fp8 8xh100-sxm": (56, 4, 1792, 70315, 562523, "FULL_SHARD", False, 1312804864),
}
# mpt-<size>.yaml at 5e85bd62d: n_heads, d_model, n_layers; sweep.py's --attn_impl (the FP8 rows: the default, triton)
SHAPES = {"1b": (16, 2048, 24), "3b": (20, 2560, 32), "7b": (32, 4096, 32), "13b": (40, 5120, 40),
          "30b": (56, 7168, 48), "70b": (64, 8192, 80)}
FLASH2 = {"1b", "3b", "7b", "70b"}


def test_the_chosen_rows_are_all_here():
    ids = [r["id"] for r in other_runs_data()["runs"] if r["id"].startswith("llm-foundry-2024 ")]
    assert sorted(ids) == sorted(ROWS)


@pytest.mark.parametrize("run_id", sorted(ROWS))
def test_each_row_is_its_table_line(run_id):
    """Throughput (T/s/GPU) x GPUs within a GPU's rounding of Throughput (T/s); MBS x GA x GPUs = GBS;
    FSDP FULL_SHARD as ZeRO-3, SHARD_GRAD_OP as ZeRO-2; checkpointing as full recomputation; the
    model's parameters the NumParams column exactly (learned positions of max_seq_len rows); the
    attention kernel sweep.py names (flash: FlashAttention-2's rates; triton: FlashAttention's)."""
    from costmodel.estimation import Estimate

    micro, accumulation, global_batch, per_gpu, total, sharding, checkpointing, params = ROWS[run_id]
    size, seq, precision, gpus = run_id.split()[1][len("mpt-"):], int(run_id.split()[2]), run_id.split()[3], \
        int(run_id.split()[4].split("x")[0])
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    assert abs(per_gpu * gpus - total) <= gpus and micro * accumulation * gpus == global_batch
    assert (run["published_tokens_per_s_per_gpu"], run["params"]) == (per_gpu, params)
    source = data["sources"]["llm-foundry-2024"]
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.dp, layout.tp, layout.pp, layout.framework) == (gpus, 1, 1, "fsdp2")
    # amp_fp8: TE's delayed scaling under Composer's two autocasts (forward, loss); bf16: neither
    assert (layout.fp8, layout.fp8_autocast) == (("delayed", "forward-and-loss") if precision == "fp8" else (None, None))
    assert layout.zero == {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}[sharding]
    assert (workload.batch, layout.microbatches, workload.seq_len) == (micro, accumulation, seq)
    assert workload.recompute == ("full" if checkpointing else "none")
    assert (cfg.n_heads, cfg.d_model, cfg.n_layers, cfg.vocab_size, cfg.max_positions) == SHAPES[size] + (50368, seq)
    assert Estimate(cfg, Workload(seq_len=8)).total("params") == params
    flash2 = size in FLASH2 and precision == "bf16"  # the FP8 rows: submit_benchmarks.py's default, triton
    assert options == ({"autocast": False} if flash2 else {"autocast": False, "attention_kernel": "flash1"})
    assert hardware.name == "h100-sxm"


def test_the_fp8_rows_all_reduce_their_amaxes_as_composer_runs_them():
    """A micro-batch of the FP8 rows: 4 te.Linear GEMMs a block (Wqkv, out_proj, up_proj, down_proj),
    3 fp32 forward amaxes each all-reduced at the forward's and the loss's autocast exits, 2 backward
    ones once: mpt-3b (32 blocks) 1,536, 1,536 and 1,024 bytes, mpt-1b (24) 1,152, 1,152 and 768."""
    data = other_runs_data()
    source = data["sources"]["llm-foundry-2024"]
    for run_id, payloads in (("llm-foundry-2024 mpt-3b 2048 fp8 8xh100-sxm", [1536, 1536, 1024]),
                             ("llm-foundry-2024 mpt-1b 512 fp8 8xh100-sxm", [1152, 1152, 768])):
        estimate, _, _ = train_setup(next(r for r in data["runs"] if r["id"] == run_id), source)
        assert estimate.amax_reductions(estimate.stages[0]) == payloads


# each FP8 row's predicted tokens/s a GPU: (kernel-level model, roofline), kept whatever their error; since wt31_small
# (session 31) with the fused loss's traffic (blocks/head.py fused_loss_bytes: mpt-3b 32768 was 4476.0, 9730.8); since
# wt33_small (session 33) with the embedding's zeroed dense gradient each micro-batch (costmodel/embedding_grad.py: was
# 4473.9, 9721.6)
FP8_PREDICTED = {
    "llm-foundry-2024 mpt-3b 32768 fp8 8xh100-sxm": (4473.3, 9718.4),  # (4473.8, 9721.5) before wt46_mgsoftmax
    "llm-foundry-2024 mpt-3b 8192 fp8 8xh100-sxm": (16722.9, 30460.4),
    "llm-foundry-2024 mpt-3b 2048 fp8 8xh100-sxm": (29950.8, 47239.8),
    "llm-foundry-2024 mpt-3b 512 fp8 8xh100-sxm": (40606.3, 54991.6),
    "llm-foundry-2024 mpt-1b 32768 fp8 8xh100-sxm": (9670.7, 21224.5),
    "llm-foundry-2024 mpt-1b 8192 fp8 8xh100-sxm": (28401.0, 52401.1),
    "llm-foundry-2024 mpt-1b 512 fp8 8xh100-sxm": (75085.1, 104457.0),
}


@pytest.mark.slow
def test_every_row_is_expressible_and_the_fp8_rows_print_their_figures():
    """Every row a figure under both models; the FP8 rows (Transformer Engine's delayed scaling under
    Composer's FSDP, --fp8-autocast forward-and-loss) the figures above: the kernel model 0.76-1.15x
    of the published, the roofline 1.55-1.70x."""
    rows = {r["run"]: r for r in other_runs(sources=("llm-foundry-2024",))}  # (it computed all 1,697 to read these)
    assert len(rows) == len(ROWS)
    for run_id, row in rows.items():
        assert row["not_expressible"] is None and row["kernels"] > 0 and row["roofline"] > 0
        if run_id in FP8_PREDICTED:
            assert (round(row["kernels"], 1), round(row["roofline"], 1)) == FP8_PREDICTED[run_id]
