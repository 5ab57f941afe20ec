"""validate/megatron_interleaved.py (Megatron-LM's pipeline schedules at 02bb1f5c, replayed) and
validate/pipeline_breakdown.py (Korthikanti Table 5's pipelined steps taken apart), session 35 wt35_pipe."""

from __future__ import annotations

import pytest

from validate.megatron_interleaved import ChunkTimes, rank_program, rank_program_1f1b, step_seconds
from validate.pipeline_breakdown import korthikanti_rows


@pytest.mark.parametrize("p, v, m, seconds", [
    (8, 3, 64, 199.0),  # Korthikanti 175B: (64 + 7/3) x 3
    (35, 3, 280, 874.0),  # 530B: (280 + 34/3) x 3
    (4, 2, 8, 28.5),
    (4, 2, 4, 16.5),  # m = p: the code runs every forward first ("all_warmup_microbatches")
    (8, 1, 64, 213.0),  # the non-interleaved schedule: (64 + 7) x 3
    (2, 1, 3, 12.0),
])
def test_replay_without_communication_is_narayanans_bubble(p, v, m, seconds):
    """Free exchanges, equal stages: the code's order gives (m + (p - 1)/v)(f + b), Layout.bubble()'s
    closed form (Narayanan et al. 2021), here with f + b = 3 a micro-batch split over v chunks."""
    assert step_seconds(p, v, m, ChunkTimes(1 / v, 2 / v)) == pytest.approx(seconds, rel=1e-12)


def test_blocking_exchanges_by_hand():
    """p 2, m 2, f 1, b 2, an exchange 0.5: rank 0 F to 1, send to 1.5 (rank 1 waits in recv_forward);
    rank 1 F B to 4.5, send_backward_recv_forward with rank 0's send_forward_recv_backward to 5;
    rank 1 F B to 8, send_backward to 8.5 (rank 0's B ran 5-7, then waits in recv_backward); rank 0 B to 10.5."""
    assert step_seconds(2, 1, 2, ChunkTimes(1.0, 2.0, exchange_s=0.5)) == pytest.approx(10.5, rel=1e-12)


def test_last_stage_head_by_hand_is_below_the_slowest_stage_bound():
    """p 2, m 2, f 1, b 2, the head 1 + 1 on rank 1: rank 1 runs F B F B back to back from 1 (2 + 3 twice,
    to 11), rank 0's last backward waits for it: 13. The model's (m + p - 1) x the slowest stage's 5 is 15."""
    assert step_seconds(2, 1, 2, ChunkTimes(1.0, 2.0, head_s=(1.0, 1.0))) == pytest.approx(13.0, rel=1e-12)


def test_interleaved_programs_send_what_each_virtual_stage_sends():
    """175B's layout (p 8, v 3, m 64): rank 0 sends each of its 3 x 64 chunk outputs forward and the
    input gradients of its chunks 1 and 2 back (2 x 64); the last rank sends no output of its last
    chunk (2 x 64 forward) and every chunk's input gradient (3 x 64)."""
    def sends(ops, link_kind):
        return sum(1 for op in ops if op[0] == "X" for (kind, _), direction in op[1]
                   if kind == link_kind and direction == "send")

    first, last = rank_program(0, 8, 3, 64), rank_program(7, 8, 3, 64)
    assert (sends(first, "f"), sends(first, "b")) == (192, 128)
    assert (sends(last, "f"), sends(last, "b")) == (128, 192)
    assert sum(1 for op in first if op[0] == "C") == 2 * 192
    middle = rank_program_1f1b(3, 8, 64)
    assert (sends(middle, "f"), sends(middle, "b")) == (64, 64)


def test_korthikanti_replay_against_the_model_as_first_computed():
    """The model's forward-backward against the replayed schedule with the model's own chunks (session
    35, first computed): within 1.0% on every Table 5 row, the replay the longer on the interleaved
    rows (the first stage's embedding and the last stage's head add in different steps of the lock-step
    exchanges); the step itself unchanged (published / ours 1.048 for 175B present since session 43; 1.008 before)."""
    rows = {(r["model"], r["key"]): r for r in korthikanti_rows()}
    ratios = {key: r["replayed_fb_s"] / r["model_fb_s"] for key, r in rows.items()}
    assert ratios[("175B", "present")] == pytest.approx(1.0030, abs=5e-4)
    assert ratios[("530B", "full")] == pytest.approx(1.0100, abs=5e-4)
    assert ratios[("1T", "present")] == pytest.approx(0.9983, abs=5e-4)
    assert all(0.998 <= ratio <= 1.0105 for ratio in ratios.values())
    present = rows[("175B", "present")]
    # 1.008 before session 43's Megatron attention bytes (facts.json fused_scale_mask_softmax: the scale and mask
    # no passes of their own, the dropout's charged) and one QKV GEMM (fused_qkv), wt43_review
    # 1.0483 before session 44's Megatron dense-path passes (facts.json megatron_dense_passes); 1.0436 before the
    # score GEMMs' writes at the A100's Copy rate (session 45); 1.0446 before the causal softmax's loads to the
    # diagonal and the recomputed forward's launches (wt46_mgsoftmax)
    assert present["published_s"] / present["step_s"] == pytest.approx(1.0505, abs=5e-4)
    assert present["stages"][-1]["crossings"] == 5 and present["slowest_stage"] == 7
