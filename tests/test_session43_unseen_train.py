"""Session 43's unseen training rows (wt43_unseent; costmodel/published_runs.json sources "litgpt-thunder" and
"litgpt-thunder-2024-03", typed before any of each was computed: a0974c45, 1ebc374f). Lightning Thunder's
pretraining benchmark in litgpt's extensions/thunder/README.md: TinyLlama 1.1B on A100-SXM4-40GB, 4 x 2,048 tokens a
GPU, Fabric's 'bf16-true', fully sharded (ZeRO 3) on 8 GPUs, replicated (DDP) on 8 and on one GPU, eager, Thunder
(two executor lists) and, in the table's first version, torch.compile (Inductor). The first rows from Lightning
Fabric / Thunder. Each row's figure as its source prints it, the kernel model's ratios as first computed (our speed
over the published one), the figures validate/FINDINGS.md quotes ("Unseen training rows, session 43"). Nothing in
the model was changed for them."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("litgpt-thunder", "litgpt-thunder-2024-03")

# 101e31d2's table: (id tag, devices, 'ms/iter @ step 10'); the 'Not supported' rows and Unsloth's left out
THUNDER_TABLE = [("fsdp eager", 8, 456.57), ("fsdp thunder-nvfuser", 8, 333.56), ("ddp eager", 8, 569.46),
                 ("ddp thunder-torchcompile", 8, 426.44), ("ddp thunder-nvfuser", 8, 356.01),
                 ("single eager", 1, 447.65), ("single thunder-torchcompile", 1, 373.37),
                 ("single thunder-nvfuser", 1, 322.25)]
# fc600439's table, its Inductor rows (--compiler torch)
INDUCTOR_TABLE = [("fsdp inductor", 8, 318.71), ("ddp inductor", 8, 348.19), ("single inductor", 1, 320.22)]


@pytest.mark.parametrize("source, table", [("litgpt-thunder", THUNDER_TABLE), ("litgpt-thunder-2024-03", INDUCTOR_TABLE)])
def test_the_rows_are_the_readmes_tables(source, table):
    """Each row one step-ending iteration: one micro-batch of 4 x 2,048 tokens a GPU (global batch 4 x GPUs), its
    'ms/iter' as the step and 8,192 tokens / that as the rate; Thunder and Inductor rows compiled, eager ones not;
    FSDP as --zero 3, the replicated rows as --zero 2, one GPU as --zero 3 with dp 1."""
    rows = runs_of(source)
    assert len(rows) == len(table)
    for run, (tag, gpus, ms) in zip(rows, table):
        assert run["id"] == f"{source} tinyllama-1.1b {tag} {gpus}xa100-40gb"
        assert run["published_seconds_per_step"] == round(ms / 1000, 5)
        assert run["published_tokens_per_s_per_gpu"] == round(8192 / (ms / 1000), 1)
        estimate, hardware, options = train_setup_of(run)
        layout, workload = estimate.layout, estimate.workload
        assert (hardware.name, layout.dp, layout.microbatches, workload.batch, workload.seq_len) == \
            ("a100-40gb", gpus, 1, 4, 2048)
        assert (layout.framework, layout.zero, layout.pure_precision) == ("fsdp2", 2 if "ddp" in tag else 3, True)
        assert options.get("compiled", False) == ("eager" not in tag)
    assert round(8192 / 0.45657, 1) == 17942.5  # the FSDP eager row


def test_the_model_is_litgpts_tiny_llama():
    """litgpt/config.py 'tiny-llama-1.1b' at 101e31d2: 22 layers, 2,048 wide, 32 heads, 4 query groups, LLaMAMLP
    5,632, vocabulary 32,000, untied (TrainArgs tie_embeddings False)."""
    estimate, _, _ = train_setup_of(runs_of("litgpt-thunder")[0])
    cfg = estimate.cfg
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, cfg.vocab_size,
            cfg.tie_embeddings) == (22, 2048, 32, 4, 5632, 32000, False)


FIRST = {"litgpt-thunder tinyllama-1.1b fsdp eager 8xa100-40gb": 1.146,
         "litgpt-thunder tinyllama-1.1b ddp eager 8xa100-40gb": 1.446,
         "litgpt-thunder tinyllama-1.1b single eager 1xa100-40gb": 1.144,
         "litgpt-thunder tinyllama-1.1b single thunder-nvfuser 1xa100-40gb": 1.106,
         "litgpt-thunder-2024-03 tinyllama-1.1b fsdp inductor 8xa100-40gb": 1.067}
MOVED: dict[str, float] = {}


def test_first_computed_ratios_of_a_few_rows():
    assert_first_computed(SOURCES, FIRST, MOVED)


FIRST_STATS = {"training rates": ((11, 14.6, 9, 2, 0), (1.067, 1.45)),
               "litgpt-thunder": ((8, 17.8, 6, 0, 0), (1.106, 1.45)),
               "litgpt-thunder-2024-03": ((3, 9.9, 3, 2, 0), (1.067, 1.184))}
NOW_STATS = {**FIRST_STATS}


@pytest.mark.slow  # every row of the sources computed
def test_the_rows_as_first_computed(published_tables):
    """Every row too fast; the replicated (DDP) rows furthest: published DDP eager is 122 ms a step slower than one
    GPU, ours 3 ms (the bucketed bf16 all-reduce under the backward); the two Thunder executor lists are one row to
    the model (compiled), so their published gap (373 vs 322 ms on one GPU) shows as two ratios."""
    every = ratios(SOURCES, tables=published_tables)
    groups = {name: keys for name, keys in train_groups(every, SOURCES).items() if keys}
    assert_summaries(every, groups, NOW_STATS)
    assert all(value > 1 for value in every.values())
    row = "litgpt-thunder tinyllama-1.1b {} 8xa100-40gb".format
    assert every[row("ddp eager")] > every[row("fsdp eager")] + 0.25
    single = "litgpt-thunder tinyllama-1.1b single {} 1xa100-40gb".format
    # ours eager -> nvFuser 1.343x on one GPU, published 447.65 / 322.25 = 1.389x
    assert round(every[single("thunder-nvfuser")] / every[single("eager")] * 447.65 / 322.25, 3) == 1.343
