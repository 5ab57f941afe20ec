"""The Ultra-Scale Playbook's nanotron benchmark among the published runs (costmodel/published_runs.json
source "nanotron-playbook", session 27): the best configuration nanotron found for each model size
(1.34B-80B Llama shapes) on 1-64 nodes of 8 H100s, its MFU, as huggingface/nanotron
docs/benchmark_summary.svg prints them, the models from scripts/scaling_benchmarks.py."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data, train_setup

# (layers, hidden_size, heads, intermediate_size): scripts/scaling_benchmarks.py at e24d2483
SIZES = {"1.34b": (16, 2048, 32, 8192), "3.57b": (28, 3072, 32, 8192), "8.86b": (32, 4096, 32, 14336),
         "80b": (80, 8192, 64, 28672)}
VOCAB, SEQUENCE, SEQUENCES = 131072, 4096, 256

# docs/benchmark_summary.svg at c2528430, each cell's labels (the file keeps matplotlib's text):
# nodes, size, DP, TP, PP, GAS, MBS, ZeRO stage, MFU (%)
CELLS = [
    (64, "1.34b", 128, 2, 2, 1, 2, 1, 5.25), (64, "3.57b", 128, 4, 1, 1, 2, 1, 10.49),
    (64, "8.86b", 128, 4, 1, 1, 2, 0, 18.69), (64, "80b", 32, 16, 1, 4, 2, 1, 17.79),
    (32, "1.34b", 64, 4, 1, 1, 4, 0, 23.20), (32, "3.57b", 64, 4, 1, 1, 4, 0, 26.77),
    (32, "8.86b", 32, 8, 1, 1, 8, 0, 32.71), (32, "80b", 4, 4, 16, 64, 1, 1, 30.75),
    (16, "1.34b", 64, 2, 1, 1, 4, 0, 29.46), (16, "3.57b", 32, 4, 1, 1, 8, 0, 34.59),
    (16, "8.86b", 16, 8, 1, 2, 8, 0, 36.33), (16, "80b", 1, 4, 32, 256, 1, 0, 34.29),
    (8, "1.34b", 32, 1, 2, 8, 1, 1, 32.47), (8, "3.57b", 32, 1, 2, 8, 1, 1, 35.53),
    (8, "8.86b", 32, 1, 2, 8, 1, 1, 39.50), (8, "80b", 1, 4, 16, 256, 1, 0, 30.65),
    (4, "1.34b", 16, 1, 2, 16, 1, 1, 38.38), (4, "3.57b", 16, 1, 2, 8, 2, 1, 40.39),
    (4, "8.86b", 16, 1, 2, 16, 1, 1, 43.31), (4, "80b", 1, 8, 4, 256, 1, 0, 14.76),
    (2, "1.34b", 8, 1, 2, 32, 1, 1, 41.59), (2, "3.57b", 8, 1, 2, 16, 2, 1, 43.77),
    (2, "8.86b", 4, 4, 1, 16, 4, 1, 43.94),
    (1, "1.34b", 4, 1, 2, 16, 4, 1, 44.32), (1, "3.57b", 4, 1, 2, 32, 2, 1, 46.68),
    (1, "8.86b", 2, 1, 4, 128, 1, 1, 45.22),
]


def run_id(cell: tuple) -> str:
    nodes, size, dp, tp, pp, gas, mbs, zero, _ = cell
    return f"nanotron-playbook llama-{size} dp{dp} tp{tp} pp{pp} gas{gas} mbs{mbs} zero{zero} {8 * nodes}xh100"


def nanotron_split(layers: int, hidden: int, ffn: int, pp: int) -> list[int]:
    """nanotron's build_model (src/nanotron/models/base.py at c2528430): the pipeline blocks in order
    (embedding, the decoder layers, final norm, lm_head, cast, loss) with llama.py's
    get_block_compute_costs (4 h^2 + 3 h ffn a layer with as many KV heads as heads, V h the head, 0
    the rest); each block to the current rank, which advances after the block whose cumulative cost
    passes (r + 1) / pp of the total. The layers each rank holds."""
    costs = [0] + [4 * hidden * hidden + 3 * ffn * hidden] * layers + [0, VOCAB * hidden, 0, 0]
    total, cumulative, rank, ranks = sum(costs), 0, 0, []
    for cost in costs:
        cumulative += cost
        ranks.append(rank)
        if cumulative * pp > total * (rank + 1):
            rank += 1
    assert ranks[layers + 2] == pp - 1  # the lm_head on the last rank
    return [ranks[1:layers + 1].count(r) for r in range(pp)]


def nanotron_flops(layers: int, hidden: int, heads: int, ffn: int) -> int:
    """models/llama.py get_flops at c2528430 (KV heads = heads): 3 x the forward's QKV, QK^T and PV over
    every (query, key) pair, output projection, the three FFN matrices and the lm_head, a step."""
    b, s, d = SEQUENCES, SEQUENCE, hidden // heads
    forward = layers * (2 * b * s * hidden * heads * d + 2 * b * s * hidden * 2 * heads * d
                        + 2 * b * heads * s * d * s + 2 * b * heads * s * s * d + 2 * b * heads * s * d * hidden
                        + 4 * b * s * hidden * ffn + 2 * b * s * ffn * hidden)
    return 3 * (forward + 2 * b * s * hidden * VOCAB)


def test_every_cell_is_a_row():
    ids = [r["id"] for r in other_runs_data()["runs"] if r["id"].startswith("nanotron-playbook ")]
    assert sorted(ids) == sorted(run_id(c) for c in CELLS) and len(ids) == 26


def test_the_figure_s_sizes_are_the_script_s_parameter_counts():
    """scripts/scaling_benchmarks.py estimate_num_params (2 V h untied, V h tied under intermediate
    10,000; per layer 3 h ffn + 4 h^2: no norms) is the model's count less its RMSNorm weights (2 h a
    layer and the final h), and rounds to the figure's axis: 1.34, 3.57, 8.86, 80.0 billion."""
    from costmodel.estimation import Estimate

    data = other_runs_data()
    seen = {}
    for run in data["runs"]:
        size = run["id"].split()[1][len("llama-"):]
        if not run["id"].startswith("nanotron-playbook ") or size in seen:
            continue
        layers, hidden, heads, ffn = SIZES[size]
        estimate, _, _ = train_setup(run, data["sources"]["nanotron-playbook"])
        script = (1 if ffn < 10_000 else 2) * VOCAB * hidden + layers * (3 * hidden * ffn + 4 * hidden * hidden)
        assert Estimate(estimate.cfg, estimate.workload).params()["total"] == script + (2 * layers + 1) * hidden
        seen[size] = script
    assert seen == {"1.34b": 1_342_177_280, "3.57b": 3_573_547_008, "8.86b": 8_858_370_048, "80b": 79_993_765_888}


@pytest.mark.parametrize("cell", CELLS, ids=run_id)
def test_each_row_is_its_cell(cell):
    """The cell's MFU as TFLOP/s over 989.4; DP x GAS x MBS = 256 sequences of 4,096 tokens; its TP
    (with sequence parallelism: tp_mode REDUCE_SCATTER), PP, ZeRO stage, GAS as micro-batches, MBS;
    the pipeline split as nanotron's build_model makes it; fp32 gradient reduction; the step's
    dense model FLOPs exactly nanotron's get_flops."""
    from costmodel.layout.overlap import Overlap
    from costmodel.layout.timing import step_time

    nodes, size, dp, tp, pp, gas, mbs, zero, mfu = cell
    layers, hidden, heads, ffn = SIZES[size]
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id(cell))
    assert (run["published_mfu_percent"], run["published_tflops_per_gpu"]) == (mfu, round(mfu * 9.894, 2))
    estimate, hardware, options = train_setup(run, data["sources"]["nanotron-playbook"])
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.dp, layout.tp, layout.pp, layout.gpus, layout.zero, layout.sp) == (dp, tp, pp, 8 * nodes, zero, tp > 1)
    assert (layout.microbatches, workload.batch, workload.seq_len, workload.recompute) == (gas, mbs, SEQUENCE, "none")
    assert dp * gas * mbs == SEQUENCES and layout.grad_reduce_dtype == "fp32" and layout.schedule == "1f1b"
    assert layout.stage_layers == (tuple(nanotron_split(layers, hidden, ffn, pp)) if pp > 1 else None)
    assert (cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, cfg.n_layers, cfg.vocab_size) == (hidden, heads, heads, ffn, layers, VOCAB)
    # ZeRO-1 with fp32 accumulation builds no DDP (trainer.py init_model's make_ddp): the gradients are
    # all-reduced after the backward, exposed; ZeRO-0's DDP hook reduces each bucket during it (session 28)
    exposed = {"overlap": Overlap(dp=0.0)} if zero == 1 else {}
    assert cfg.tie_embeddings == (ffn < 10_000) and hardware.name == "h100-sxm" and options == {"autocast": False, **exposed}
    assert hardware.cluster == "hf-h100-efa"  # the book's measured cluster (tests/test_cluster_busbw.py)
    step = step_time(estimate, hardware, time_model="kernels", flops_convention="dense", **options).step()
    assert step["model_flops"] == nanotron_flops(layers, hidden, heads, ffn)


def test_the_splits_of_the_pipelined_cells():
    """The splits nanotron's cost balance gives (the head, about one 80B layer and four 1.34B ones,
    weighs on the last rank)."""
    assert nanotron_split(16, 2048, 8192, 2) == [11, 5]
    assert nanotron_split(28, 3072, 8192, 2) == [16, 12]
    assert nanotron_split(32, 4096, 14336, 2) == [18, 14]
    assert nanotron_split(32, 4096, 14336, 4) == [9, 9, 8, 6]
    assert nanotron_split(80, 8192, 28672, 4) == [21, 20, 20, 19]
    assert nanotron_split(80, 8192, 28672, 16) == [6] + [5] * 13 + [6, 3]


def test_the_zero1_cells_reduce_their_gradients_after_the_backward():
    """nanotron at c2528430 builds no DDP where accumulate_grad_in_fp32 and ZeRO-1 (trainer.py
    init_model's make_ddp), so the fp32 gradients are reduced after train_batch_iter returns: the ZeRO-1
    rows state overlap dp 0, the ZeRO-0 rows (DDP's bucket hooks) state overlap_grad_reduce true (2/3;
    Megatron's default, which the source's framework would give, is after the backward since session 29). 3.57B DP 128
    TP 4 on 64 nodes, its fp32 gradient all-reduced whole (zero_optimizer nanotron, session 30): the reduction's
    70.9 ms hidden under the backward with DDP's 2/3, all exposed as the row states (136.3 ms with the parameters'
    gather), a step of 0.3318 -> 0.3915 s with the gather's copy loop (0.1148 s: tests/test_zero_optimizer.py;
    session 28, a reduce-scatter and no loop: 0.1768 -> 0.2224 s). Since session 31 its loss runs Megatron's
    passes over the fp32 logits (sharded_cross_entropy, Layout.unfused_loss: 5.2 ms): 0.3341 -> 0.3967 s, the
    longer backward hiding 74.4 ms with DDP's 2/3; since session 33 the embedding's zeroed dense gradient
    (costmodel/embedding_grad.py: 131,072 x 3,072 / 4 in bf16, 0.075 ms a micro-batch) makes DDP's step 0.3342 s."""
    from costmodel.layout.timing import step_time

    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    rows = [r for r in data["runs"] if r["id"].startswith("nanotron-playbook")]
    assert [r["id"] for r in rows if r.get("overlap") == {"dp": 0.0}] == [r["id"] for r in rows if r["zero"] == 1]
    assert [r["id"] for r in rows if r.get("overlap_grad_reduce")] == [r["id"] for r in rows if r["zero"] == 0]
    assert [r["id"] for r in rows if r.get("zero_optimizer") == "nanotron"] == [r["id"] for r in rows if r["zero"] == 1]
    run = next(r for r in rows if r["id"] == "nanotron-playbook llama-3.57b dp128 tp4 pp1 gas1 mbs2 zero1 512xh100")
    steps = []
    for row in (run, dict({k: v for k, v in run.items() if k != "overlap"}, overlap_grad_reduce=True)):
        estimate, hardware, options = train_setup(row, source)
        step = step_time(estimate, hardware, time_model="kernels", **options).step()
        steps.append((round(step["seconds"], 4), round(step["exposed_communication_seconds"]["dp"], 4),
                      round(step["hidden_communication_seconds"], 4)))
    # [(0.3967, 0.1363, 0.0), (0.3342, 0.0619, 0.0744)] before session 43's one QKV GEMM (impl megatron: fused_qkv)
    assert steps == [(0.3951, 0.1363, 0.0), (0.3334, 0.063, 0.0733)]
