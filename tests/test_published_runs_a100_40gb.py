"""llm-foundry's A100 40GB table among the published runs (costmodel/published_runs.json source
"llm-foundry-a100-40gb", session 27): MPT 125M-70B under Composer 0.13.4's FSDP (FULL_SHARD, mixed
precision PURE) on 8-128 A100 40GB, each row typed here from the table (mosaicml/llm-foundry
scripts/train/benchmarking/README.md at 300cc5c58 and 061f2c7c, 'A100 40GB'), and the FSDP2 bf16
gradient reduce-scatter (--grad-reduce-dtype bf16) its PURE mode runs."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data, train_setup

SOURCE = "llm-foundry-a100-40gb"

# The table's columns: MFU (%), Throughput (T/s), Throughput (T/s/GPU), # GPUs, MicroBatchSize,
# GradAccum, GlobalBatchSize, SeqLen, Activation Checkpointing, NumParams
TABLE = {
    "mpt-125m 2048 8xa100-40gb": (42.75, 1090678, 136334, 8, 26, 3, 624, 2048, False, 125311488),
    "mpt-125m 2048 128xa100-40gb": (38.86, 15863837, 123936, 128, 26, 1, 3328, 2048, False, 125311488),
    "mpt-350m 2048 8xa100-40gb": (49.17, 447963, 55995, 8, 16, 4, 512, 2048, False, 355985408),
    "mpt-350m 2048 128xa100-40gb": (45.61, 6647647, 51934, 128, 18, 1, 2304, 2048, False, 355985408),
    "mpt-760m 2048 8xa100-40gb": (52.89, 241389, 30173, 8, 12, 4, 384, 2048, False, 760470528),
    "mpt-760m 2048 128xa100-40gb": (50.73, 3704382, 28940, 128, 12, 1, 1536, 2048, False, 760470528),
    "mpt-1b 2048 8xa100-40gb": (56.23, 154171, 19271, 8, 8, 8, 512, 2048, False, 1315950592),
    "mpt-1b 2048 128xa100-40gb": (54.41, 2386897, 18647, 128, 10, 1, 1280, 2048, False, 1315950592),
    "mpt-3b 2048 8xa100-40gb": (57.82, 80520, 10065, 8, 5, 8, 320, 2048, False, 2651837440),
    "mpt-3b 2048 128xa100-40gb": (54.8, 1220885, 9538, 128, 6, 1, 768, 2048, False, 2651837440),
    "mpt-7b 2048 8xa100-40gb": (50.92, 29436, 3679, 8, 12, 4, 384, 2048, True, 6658859008),
    "mpt-7b 2048 128xa100-40gb": (50.14, 463749, 3623, 128, 18, 1, 2304, 2048, True, 6658859008),
    "mpt-13b 2048 8xa100-40gb": (43.94, 13347, 1668, 8, 4, 16, 512, 2048, True, 12853954560),
    "mpt-13b 2048 128xa100-40gb": (51.93, 252444, 1972, 128, 16, 1, 2048, 2048, True, 12853954560),
    "mpt-30b 2048 32xa100-40gb": (51.74, 27431, 857, 32, 4, 1, 128, 2048, True, 29975214080),
    "mpt-30b 2048 128xa100-40gb": (52.25, 110803, 865, 128, 6, 1, 768, 2048, True, 29975214080),
    "mpt-70b 2048 64xa100-40gb": (35.87, 17672, 276, 64, 2, 1, 128, 2048, True, 64862437376),
    "mpt-70b 2048 128xa100-40gb": (48.91, 48194, 376, 128, 4, 1, 512, 2048, True, 64862437376),
    "mpt-7b 16384 8xa100-40gb": (47.65, 17998, 2249, 8, 1, 4, 32, 16384, True, 6717579264),
    "mpt-13b 8192 8xa100-40gb": (43.95, 11258, 1407, 8, 1, 16, 128, 8192, True, 12885411840),
}

# examples/llm/yamls/mosaic_gpt/<size>.yaml at mosaicml/examples v0.0.4: n_heads, d_model, n_layers
SIZES = {"125m": (12, 768, 12), "350m": (16, 1024, 24), "760m": (12, 1536, 24), "1b": (16, 2048, 24),
         "3b": (20, 2560, 32), "7b": (32, 4096, 32), "13b": (40, 5120, 40), "30b": (56, 7168, 48),
         "70b": (64, 8192, 80)}


def _run(key: str) -> tuple[dict, dict]:
    data = other_runs_data()
    return next(r for r in data["runs"] if r["id"] == f"{SOURCE} {key}"), data["sources"][SOURCE]


def test_the_rows_are_the_twenty_chosen():
    """Of each model its 2,048-token rows at the table's smallest and largest GPU count, and the
    7B's and 13B's longest sequence: 20 rows, no other under this source."""
    data = other_runs_data()
    ids = {r["id"].split(" ", 1)[1] for r in data["runs"] if r["id"].split()[0] == SOURCE}
    assert ids == set(TABLE) and len(ids) == 20


@pytest.mark.parametrize("key", sorted(TABLE))
def test_each_row_is_its_table_and_recipe(key):
    """The table's T/s/GPU (its T/s over its GPUs, truncated), its micro-batch and gradient
    accumulation as the layout's micro-batches, FULL_SHARD as fsdp2 --zero 3, PURE's bf16
    reduce-scatter, checkpointing as full recomputation, MPT's Triton attention timed as
    FlashAttention (v1), on the a100-40gb preset."""
    mfu, tokens, per_gpu, gpus, micro, accum, global_batch, seq, checkpointing, params = TABLE[key]
    run, source = _run(key)
    assert run["published_tokens_per_s_per_gpu"] == per_gpu == tokens // gpus
    assert micro * accum * gpus == global_batch == run["global_batch"]
    assert run["params"] == params and run["gpt"] == list(SIZES[key.split()[0].split("-")[1]])
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.framework, layout.zero, layout.dp, layout.tp, layout.pp) == ("fsdp2", 3, gpus, 1, 1)
    assert (workload.batch, layout.microbatches, workload.seq_len) == (micro, accum, seq)
    assert workload.recompute == ("full" if checkpointing else "none")
    assert (layout.grad_reduce_dtype, estimate.collective_dtype("dp", "reduce_scatter")) == ("bf16", "bf16")
    assert (workload.dtype, cfg.vocab_size, cfg.max_positions, cfg.dropout) == ("bf16", 50368, seq, 0.0)
    assert hardware.name == "a100-40gb" and options == {"autocast": False, "attention_kernel": "flash1"}


@pytest.mark.parametrize("key", sorted(TABLE))
def test_the_mfu_column_follows_from_the_throughput_typed(key):
    """The README's MFU formula, (3 x 2 N s + 3 x 4 L d s^2) x samples/s / (GPUs x 312 TFLOP/s), on
    the T/s typed here gives the table's MFU within one unit of its last decimal (the table rounds
    the T/s it prints, not the one it divides): a mistyped throughput, GPU count or parameter count
    would not."""
    mfu, tokens, per_gpu, gpus, micro, accum, global_batch, seq, checkpointing, params = TABLE[key]
    heads, d_model, layers = SIZES[key.split()[0].split("-")[1]]
    flops_per_sequence = 3 * (2 * params * seq + layers * 2 * 2 * d_model * seq ** 2)
    assert abs(100 * flops_per_sequence * tokens / seq / (gpus * 312e12) - mfu) <= 0.0101


def test_the_model_is_mosaic_gpt_exactly():
    """The NumParams column is the GPT of these sizes exactly (learned positions of the row's
    sequence, biases, LayerNorm, tied embeddings): 125M and the 16k 7B."""
    from costmodel.config import Workload
    from costmodel.estimation import Estimate

    for key in ("mpt-125m 2048 8xa100-40gb", "mpt-7b 16384 8xa100-40gb", "mpt-70b 2048 64xa100-40gb"):
        run, source = _run(key)
        estimate, _, _ = train_setup(run, source)
        assert Estimate(estimate.cfg, Workload(seq_len=8)).total("params") == TABLE[key][-1]


def test_the_70b_reduce_scatters_in_bf16_half_the_fp32_bytes():
    """MPT-70B on 64 ranks, one micro-batch: FSDP2 pads each tensor to 64 rows' multiple; the
    step's reduce-scatter moves 2 bytes an element of the padded model (PURE), where an fp32
    reduce (FSDP2's default here) moves 4, and the all-gathers (forward and the recomputing
    backward's) are the same either way."""
    from dataclasses import replace

    from costmodel.layout.rank import ParallelEstimate

    run, source = _run("mpt-70b 2048 64xa100-40gb")
    estimate, _, _ = train_setup(run, source)
    fp32 = ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, grad_reduce_dtype=None))
    bf16, default = estimate.to_dict()["communication"]["dp"], fp32.to_dict()["communication"]["dp"]
    assert 2 * bf16["reduce_scatter"] == default["reduce_scatter"]
    assert bf16["all_gather"] == default["all_gather"]
    assert bf16["reduce_scatter"] >= 2 * TABLE["mpt-70b 2048 64xa100-40gb"][-1]
