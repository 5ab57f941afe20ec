"""Session 39's unseen training rows (wt39_unseent; costmodel/published_runs.json sources "modalities-leonardo",
"modalities-mn5" and "smollm2-70m-card", typed before any was computed: eab5c5d6 and 1733176c): each row's figure and
layout as its source prints them, the assumed model shapes checked against the publication's own MFU formula, and the
kernel model's ratios as first computed (our speed over the published one), the figures validate/FINDINGS.md quotes
("Unseen training rows, session 39"). Nothing in the model was changed for them."""

from __future__ import annotations

import json

import pytest

import costmodel
from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, source_of, summary, train_setup_of

SOURCES = ("modalities-leonardo", "modalities-mn5", "smollm2-70m-card")

# Modalities' docs/scaling_experiments tables: (row number in the file) -> Samples/s, as printed
LEONARDO = {2: 18.63, 27: 303.17, 3: 18.43, 26: 495.44, 4: 19.94, 28: 506.08, 31: 9.28, 45: 225.24, 46: 2.64,
            51: 65.19, 52: 17.28}
MN5 = {2: 15.06, 48: 1365.31, 3: 15.14, 53: 3618.0, 52: 1105.99, 111: 2.9, 123: 297.0, 58: 15.26, 92: 1406.32,
       54: 5.58, 93: 1204.4, 95: 6.26, 109: 474.42, 94: 3.21, 110: 241.79}


def _by_table_row(name: str) -> dict[int, dict]:
    return {int(r["id"].split("(table row ")[1].rstrip(")")): r for r in runs_of(name)}


def test_the_modalities_rows_are_the_tables_rows():
    """Samples/s as each table prints it; tokens/s a GPU = Samples/s x sequence / GPUs; GradAccm 1 (the global batch
    is MBS x GPUs); HYBRID_SHARD as shards of one 4-GPU node; AC True as full recomputation."""
    for name, table in (("modalities-leonardo", LEONARDO), ("modalities-mn5", MN5)):
        rows = _by_table_row(name)
        assert {i: r["published_samples_per_s"] for i, r in rows.items()} == table
        for r in rows.values():
            assert r["published_tokens_per_s_per_gpu"] == round(r["published_samples_per_s"] * r["seq_len"] / r["gpus"], 3)
            assert r["global_batch"] == r["micro_batch"] * r["gpus"] == r["micro_batch"] * r["dp"]
            assert r.get("dp_shard") == (4 if " hsdp " in r["id"] else None)
            assert r["recompute"] == ("full" if " ac " in r["id"] else "none")
    leo, mn5 = _by_table_row("modalities-leonardo"), _by_table_row("modalities-mn5")
    assert (leo[27]["gpus"], leo[27]["published_tokens_per_s_per_gpu"], leo[27]["published_mfu_percent"]) == (256, 4850.72, 29.74)
    assert (mn5[110]["gpus"], mn5[110]["seq_len"], mn5[110]["published_tokens_per_s_per_gpu"]) == (2048, 8192, 967.16)


def test_the_assumed_shapes_give_the_tables_sizes_and_their_mfu_pairs():
    """The sizes' counts (Modalities' SwiGLU width rule, tied embeddings, 50,304 tokens) read as the tables name them;
    and the publication's MFU formula, tokens/s x (6 N + 12 L T H) / (GPUs x peak), makes each size's 8,192-token row
    cost 12 L x 4,096 x H more FLOPs a token than its 4,096-token row: the layers x hidden typed match within 2%."""
    counts = {}
    for run in runs_of("modalities-leonardo") + runs_of("modalities-mn5"):
        estimate, _, _ = train_setup_of(run)
        counts[run["model"]] = costmodel.estimate(estimate.cfg).to_dict()["params"]["total"]
    assert counts == {"modalities-2.7b": 2_666_498_560, "modalities-6.7b": 6_682_316_800,
                      "modalities-13b": 12_945_740_800, "modalities-28b": 28_157_389_312}

    def flops_per_token(table: str, row: dict) -> float:  # MFU x peak / tokens a second a GPU
        peak = 312e12 if table == "leonardo" else 989e12
        return row["mfu"] * peak / (row["sps"] * row["seq"] / row["gpus"])

    # (size, its 4,096-token row, its 8,192-token row): MareNostrum 5 rows 2/7, 58/55, 95/94, 115/114 as printed
    pairs = {"2.7": ({"sps": 15.06, "seq": 4096, "gpus": 4, "mfu": 0.2983}, {"sps": 14.11, "seq": 8192, "gpus": 8, "mfu": 0.3382}),
             "6.7": ({"sps": 15.26, "seq": 4096, "gpus": 8, "mfu": 0.3562}, {"sps": 7.02, "seq": 8192, "gpus": 8, "mfu": 0.3746}),
             "13": ({"sps": 6.26, "seq": 4096, "gpus": 8, "mfu": 0.2773}, {"sps": 3.21, "seq": 8192, "gpus": 8, "mfu": 0.3174}),
             "28": ({"sps": 36.79, "seq": 4096, "gpus": 128, "mfu": 0.2177}, {"sps": 22.95, "seq": 8192, "gpus": 128, "mfu": 0.2968})}
    shapes = {}
    for run in runs_of("modalities-mn5"):
        estimate, _, _ = train_setup_of(run)
        shapes[run["model"].split("-")[1][:-1]] = estimate.cfg.n_layers * estimate.cfg.d_model
    for size, (short, long) in pairs.items():
        implied = (flops_per_token("mn5", long) - flops_per_token("mn5", short)) / (12 * 4096)
        assert implied == pytest.approx(shapes[size], rel=0.02), size


def test_the_mfu_formulas_n_is_our_count_less_the_tied_embedding():
    """wt39_review: the same pairs' 6 N, at the typed layers x hidden (flops a token less 12 L T H, over 6), is not our
    parameter count: 2.519B / 6.440B / 12.606B / 27.653B, 1.8-5.6% under it (0.944, 0.964, 0.972, 0.982), the gap
    growing with the 50,304 x hidden embedding; our count less that tied embedding matches within 0.8% (0.992-0.995),
    and 12 L d^2 (no embedding, the FFN int(8 d / 3) unrounded) within 0.2%. At 2029c649 Modalities'
    get_total_number_of_trainable_parameters sums every trainable parameter and its SwiGLU rounds the width up to 256,
    so what the tables' N counted is not found: recorded, the shapes kept (the FLOPs we time count the head's matmul
    whatever N the tables divide by)."""
    short = {"2.7": (15.06, 4, 0.2983), "6.7": (15.26, 8, 0.3562), "13": (6.26, 8, 0.2773), "28": (36.79, 128, 0.2177)}
    ratios_n, ratios_less = {}, {}
    for run in runs_of("modalities-mn5"):
        estimate, _, _ = train_setup_of(run)
        cfg, size = estimate.cfg, run["model"].split("-")[1][:-1]
        samples, gpus, mfu = short[size]
        n = (mfu * 989e12 / (samples * 4096 / gpus) - 12 * cfg.n_layers * 4096 * cfg.d_model) / 6
        total = costmodel.estimate(cfg).to_dict()["params"]["total"]
        ratios_n[size] = round(n / total, 3)
        ratios_less[size] = round(n / (total - cfg.vocab_size * cfg.d_model), 3)
        layers, d = cfg.n_layers, cfg.d_model  # no embedding and the FFN unrounded: 12 L d^2 and the norms
        assert n == pytest.approx(layers * (4 * d * d + 3 * d * int(8 * d / 3) + 2 * d) + d, rel=0.002), size
    assert ratios_n == {"2.7": 0.944, "6.7": 0.964, "13": 0.972, "28": 0.982}
    assert ratios_less == {"2.7": 0.992, "6.7": 0.995, "13": 0.992, "28": 0.994}


def test_the_hardware_is_the_centres_nodes():
    """Four GPUs a node of 64 GiB on both machines; across nodes Leonardo's 400 Gb/s a node (CINECA's page), MareNostrum
    5's 4 x NDR200 (assumed); FSDP1 in bf16 with bf16 reductions and torch's foreach AdamW."""
    leo, _, _ = train_setup_of(runs_of("modalities-leonardo")[0])
    mn5_run = runs_of("modalities-mn5")[3]
    mn5, hardware, _ = train_setup_of(mn5_run)
    _, leo_hardware, _ = train_setup_of(runs_of("modalities-leonardo")[0])
    assert (leo_hardware.name, leo_hardware.memory_bytes, leo_hardware.gpus_per_node,
            leo_hardware.inter_node_bandwidth_bytes_per_s) == ("a100-64gb", 64 * 2**30, 4, 12.5e9)
    assert (hardware.name, hardware.memory_bytes, hardware.inter_node_bandwidth_bytes_per_s) == \
        ("h100-64gb", 64 * 2**30, 25e9)  # wt39_hpcgpus: the parts the tables name, their own files
    assert (mn5.layout.framework, mn5.layout.zero, mn5.layout.dp_shard, mn5.layout.grad_reduce_dtype,
            mn5.layout.optimizer_step, leo.layout.dp_shard) == ("fsdp2", 3, 4, "bf16", "torch-foreach", None)
    from costmodel.hardware import HARDWARE_DIR  # wt39_hpcgpus: the node now in a100-64gb.json
    assert "HDR100 per node" in json.loads((HARDWARE_DIR / "a100-64gb.json").read_text())["interconnect"]["source"]


def test_the_smollm2_70m_row_is_the_cards_run():
    """One L40S, 4 x 8,192 tokens a micro-batch, 8 a step, compiled; ~110K tokens/s; the shape its 69.2M needs."""
    (run,) = runs_of("smollm2-70m-card")
    estimate, hardware, options = train_setup_of(run)
    assert (run["published_tokens_per_s_per_gpu"], estimate.workload.batch, estimate.layout.microbatches,
            estimate.workload.seq_len, hardware.name, options["compiled"]) == (110000, 4, 8, 8192, "l40s", True)
    assert costmodel.estimate(estimate.cfg).to_dict()["params"]["total"] == run["params"] == 69_230_976
    assert round(sum(run["published_epoch_hours"]), 2) == 77.76


FIRST = {"modalities-leonardo 2.7b fsdp mbs2 4096 8xa100-64gb (table row 2)": 0.893,
         "modalities-leonardo 2.7b fsdp mbs2 4096 256xa100-64gb (table row 27)": 1.680,
         "modalities-leonardo 2.7b hsdp mbs2 4096 256xa100-64gb (table row 26)": 1.042,
         "modalities-leonardo 13b fsdp mbs1 4096 8xa100-64gb (table row 46)": 1.455,
         "modalities-mn5 2.7b fsdp mbs2 4096 4xh100-64gb (table row 2)": 1.168,
         "modalities-mn5 6.7b fsdp mbs2 4096 8xh100-64gb (table row 58)": 1.137,
         "modalities-mn5 13b fsdp mbs1 8192 ac 2048xh100-64gb (table row 110)": 3.383,
         "smollm2-70m-card smollm2-70m 8192 compile 1xl40s": 1.158}


# wt39_hpcgpus: the rows on the parts their sources name (a100-64gb, h100-64gb: 64 GB's four HBM stacks, the files'
# own networks, not the 8-GPU DGX curves the a100-80gb / h100-sxm names carried), each source's "amended"
MOVED = {"modalities-leonardo 2.7b fsdp mbs2 4096 8xa100-64gb (table row 2)": 0.843,
         "modalities-leonardo 2.7b fsdp mbs2 4096 256xa100-64gb (table row 27)": 1.571,
         "modalities-leonardo 2.7b hsdp mbs2 4096 256xa100-64gb (table row 26)": 0.981,
         "modalities-leonardo 13b fsdp mbs1 4096 8xa100-64gb (table row 46)": 1.385,
         "modalities-mn5 2.7b fsdp mbs2 4096 4xh100-64gb (table row 2)": 1.075,
         "modalities-mn5 6.7b fsdp mbs2 4096 8xh100-64gb (table row 58)": 1.064,
         "modalities-mn5 13b fsdp mbs1 8192 ac 2048xh100-64gb (table row 110)": 2.539}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


# as first computed: all 27 (16.8% median, 18 within 0.75-1.33x, 0.851-3.383), Leonardo (11.5%, 8, 0.851-1.68),
# MareNostrum 5 (19.8%, 9, 1.084-3.383); wt39_hpcgpus put the rows on a100-64gb / h100-64gb (MOVED above):
FIRST_STATS = {"training rates": ((27, 15.0, 23, 12, 6), (0.811, 2.539)),
               "modalities-leonardo": ((11, 16.4, 9, 3, 3), (0.811, 1.571)),
               "modalities-mn5": ((15, 8.1, 13, 9, 3), (0.901, 2.539)),
               "smollm2-70m-card": ((1, 15.8, 1, 0, 0), (1.158, 1.158))}


@pytest.mark.slow  # every row of the three sources computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    groups = {"training rates": list(every), **{s: [k for k in every if k.split()[0] == s] for s in SOURCES}}
    assert_summaries(every, groups, FIRST_STATS)
    # the A100 rows of one or two nodes too slow (0.81-0.85; 0.85-0.90 on a100-80gb's 2,039 GB/s), the H100 rows
    # 0.90-2.54 (every one above 1.08 on h100-sxm's 3.35 TB/s and its DGX curves; wt39_hpcgpus)
    leo, mn5 = _by_table_row("modalities-leonardo"), _by_table_row("modalities-mn5")
    small_a100 = [every[leo[i]["id"]] for i in (2, 3, 4, 31)]
    assert max(small_a100) < 0.86 and min(every[r["id"]] for r in mn5.values()) > 0.9
    # FULL_SHARD over 256 A100s far off where HYBRID_SHARD at the same count is not (1.68 and 1.042 before)
    assert every[leo[27]["id"]] > 1.5 > 1.1 > every[leo[26]["id"]]
    assert summary([every[leo[i]["id"]] for i in (27, 26)]) == ((2, 29.5, 1, 1, 1), (0.981, 1.571))
