"""validate/small_step_floor.py: Megatron-LM's per-step extras of its CI functional tests, counted from the code at
5fe3f06658 (validate/megatron_step_extras.json) and priced with the model's collective time (wt46_smallstep)."""

from __future__ import annotations

import pytest

from costmodel.collectives import collective_seconds
from costmodel.hardware import load_hardware
from validate.small_step_floor import ci_rows, extras, extras_seconds, main

TP4 = "megatron-ci-unfused megatron-ci-gpt-12x512 te tp4 pp1 distopt 8xh100-sxm"
TP2_PP2 = "megatron-ci-fusedce megatron-ci-gpt-12x512 te tp2 pp2 fusedce 8xh100-sxm"


def row(run_id: str) -> dict:
    return next(run for run, _ in ci_rows() if run["id"] == run_id)


def test_the_inventory_is_read_at_the_golden_values_commit():
    data = extras()
    assert data["commit"] == "5fe3f06658"
    assert [call["per"] for call in data["calls"]].count("microbatch") == 3
    assert all(call["site"] for call in data["calls"])


def test_tp4_pp1_counts_and_bytes():
    """TP 4, PP 1, DP 2, micro-batch 4 of 1,024 tokens, 4 micro-batches a rank: 6 broadcasts a micro-batch over the TP
    group (tokens, labels and positions int64: 32,768 B; the loss mask fp32: 16,384 B; the 4 x 1,024 x 1,024 bool
    attention mask: 4,194,304 B; the cu_seqlens count: 8 B) and 8 all-reduces a step (the loss over DP 2, the grad
    norm, the zeros, the three agreements, the params norm over TP 4 x PP 1, the barrier over 8)."""
    run = row(TP4)
    h100 = load_hardware("h100-sxm")
    broadcasts = sum(collective_seconds(h100, "all_gather", size, 4, 4)
                     for size in (32768, 32768, 16384, 4194304, 32768, 8))
    expected = (4 * broadcasts + collective_seconds(h100, "all_reduce", 8, 2, 8)
                + 6 * collective_seconds(h100, "all_reduce", 4, 4, 8) + collective_seconds(h100, "all_reduce", 4, 8, 8))
    got = extras_seconds(run, "last")
    assert (got["collectives"], got["syncs"]) == (4 * 6 + 8, 4 + 4 * 2 + 7)  # 32, 19
    assert got["seconds"] == pytest.approx(expected, rel=1e-12)
    assert 0.7e-3 < got["seconds"] < 0.75e-3  # 0.73 ms against the published 328.0 ms step


def test_pipeline_stages_split_the_batch_broadcasts():
    """PP 2: the first stage broadcasts tokens, mask, positions and the count; the last labels, loss mask and mask,
    and it alone averages the loss over DP and checks it for NaN and Inf."""
    run = row(TP2_PP2)
    first, last = extras_seconds(run, "first"), extras_seconds(run, "last")
    assert (first["collectives"], first["syncs"]) == (4 * 4 + 7, 4 + 7)
    assert (last["collectives"], last["syncs"]) == (4 * 3 + 1 + 7, 4 + 4 * 2 + 7)


def test_the_counted_extras_are_a_small_part_of_every_ci_step():
    """The finding: what the step issues besides its layers costs under 1% of each published step (0.08-0.84 ms of
    85-515 ms), so the rows' excess (60-460 ms) is not these collectives."""
    rows = ci_rows()
    assert len(rows) == 21
    for run, _ in rows:
        worst = max(extras_seconds(run, stage)["seconds"] for stage in ("first", "last"))
        assert 0 < worst < 0.01 * run["published_seconds_per_step"], run["id"]


def test_bad_input_is_one_line_and_status_2(capsys):
    assert main(["--row"]) == 2
    assert main(["--row", "no such row"]) == 2
    assert "no megatron-ci 12 x 512 row is named 'no such row'." in capsys.readouterr().err


def test_a_sync_site_counts_where_its_group_has_one_rank():
    """TP 1, PP 1 (none of the 21 rows; the TP 4 row's run at DP 8, one micro-batch of 4 a rank): the model-parallel
    group is one rank, so its six all-reduces cost nothing, but their .item() reads still run (clip_grads' norm and
    zeros, the three agreements, the params norm): 2 NaN/Inf checks + 6 + the log's barrier = 9 syncs; 2 collectives,
    the loss over DP 8 and the barrier (719037b0; it survived a revert untested: wt46_integreview)."""
    run = {**row(TP4), "tp": 1, "dp": 8}
    got = extras_seconds(run, "last")
    assert (got["collectives"], got["syncs"]) == (2, 2 + 6 + 1)
