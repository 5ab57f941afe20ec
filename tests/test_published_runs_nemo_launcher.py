"""The NeMo Megatron launcher's 2022 GPT-3 throughput tables among the published runs
(costmodel/published_runs.json source "nemo-launcher-2022", session 27): GPT-3 5B and 175B on DGX
A100 80GB, each table's smallest and largest scale, with the layout of the launcher's predefined
configurations (NVIDIA/NeMo-Framework-Launcher at 1f1e6be5, conf/training/gpt3/5b.yaml and 175b.yaml)."""

from __future__ import annotations

import pytest

from costmodel.layout.overlap import Overlap

from reports.published_runs import other_runs_data, train_setup

SOURCE = "nemo-launcher-2022"

# README.md at 1f1e6be5, 'Training Performance Results': nodes, tokens per second (the whole job);
# then the yaml's TP, PP, heads, hidden, layers and recomputation
TABLE = {
    "gpt3-5b 8xa100-80gb": (1, 40345, 1, 1, 32, 4096, 24, "none"),
    "gpt3-5b 256xa100-80gb": (32, 1159288, 1, 1, 32, 4096, 24, "none"),
    "gpt3-175b 64xa100-80gb": (8, 7500, 8, 8, 96, 12288, 96, "selective"),
    "gpt3-175b 1024xa100-80gb": (128, 109684, 8, 8, 96, 12288, 96, "selective"),
}


def test_the_rows_are_each_tables_smallest_and_largest_scale():
    data = other_runs_data()
    assert {r["id"].split(" ", 1)[1] for r in data["runs"] if r["id"].split()[0] == SOURCE} == set(TABLE)


@pytest.mark.parametrize("key", sorted(TABLE))
def test_each_row_is_its_table_and_config(key):
    """Tokens/s per GPU as the table's job rate over 8 GPUs a node; GBS 2,048 of MBS 2 with DP the
    rest of the GPUs (5B: 128 and 4 micro-batches; 175B: 1,024 and 64); Apex's distributed Adam as
    ZeRO-1 reducing fp32 gradients; SP with TP 8; the GPT-2 tokenizer padded to 128 x TP; Megatron's
    attention of 2022 (no flash) on the a100-80gb preset."""
    nodes, tokens, tp, pp, heads, hidden, layers, recompute = TABLE[key]
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == f"{SOURCE} {key}")
    gpus = 8 * nodes
    assert run["gpus"] == gpus and run["published_tokens_per_s_per_gpu"] == round(tokens / gpus, 3)
    estimate, hardware, options = train_setup(run, data["sources"][SOURCE])
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    dp = gpus // (tp * pp)
    assert (layout.tp, layout.pp, layout.dp, layout.sp, layout.virtual_stages) == (tp, pp, dp, tp > 1, 1)
    assert (workload.batch, layout.microbatches, workload.seq_len) == (2, 2048 // (2 * dp), 2048)
    assert layout.microbatches == {1: 128, 32: 4, 8: 1024, 128: 64}[nodes]
    assert (cfg.n_heads, cfg.d_model, cfg.n_layers, cfg.d_ff, workload.recompute) == (heads, hidden, layers, 4 * hidden, recompute)
    assert (layout.framework, layout.zero, layout.grad_reduce_dtype, layout.schedule) == ("megatron", 1, None, "1f1b")
    assert estimate.collective_dtype("dp", "reduce_scatter") == "fp32"
    assert (cfg.vocab_size, workload.dtype, workload.attention, cfg.dropout) == (50257, "bf16", "eager", 0.1)
    # Apex's overlap_grad_sync, which NeMo v1.11.0 turned off with PP > 1 or SP (megatron_gpt_model.py
    # lines 644-647): the 5B's reduce under the backward (Overlap's own 2/3), the 175B's after it
    assert hardware.name == "a100-80gb" and options.pop("overlap", Overlap()).dp == (0.0 if pp > 1 else 2 / 3)
    assert options == {"autocast": False}


def test_the_vocabulary_pads_to_128_times_tp():
    """make_vocab_size_divisible_by 128: Megatron pads 50,257 tokens to 50,304 rows at TP 1 and to
    6,400 a rank (51,200) at TP 8. The 5B's rank holds all of its bf16 weights, 24 layers of 12 h^2
    + 13 h, the padded embedding and the positions, (V + s) h, and the final LayerNorm, 2 h:
    2 x 5,047,558,144 bytes."""
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.layout.split import local_vocabulary

    assert local_vocabulary("pad128").subs({S.V: 50257, S.tp: 1}) == 50304
    assert local_vocabulary("pad128").subs({S.V: 50257, S.tp: 8}) == sp.Integer(51200) / 8
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == f"{SOURCE} gpt3-5b 8xa100-80gb")
    estimate, _, _ = train_setup(run, data["sources"][SOURCE])
    layers, hidden = 24, 4096
    params = 12 * layers * hidden**2 + 13 * layers * hidden + (50304 + 2048) * hidden + 2 * hidden
    assert params == 5_047_558_144
    assert estimate.to_dict()["per_rank"]["weights"] == 2 * params
