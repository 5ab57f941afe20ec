"""validate/bridge_h100_ab.py: Megatron-Bridge's Qwen3 30B-A3B 16 x H100 A/B runs beside the kernel
model (session 25; validate/FINDINGS.md "The MoE rows' host time: the sources searched again")."""

from __future__ import annotations

import pytest

from validate.bridge_h100_ab import model_step_s, runs


def test_the_runs_are_the_cards_five():
    got = {run["id"]: run["published_step_s"] for run in runs()}
    assert list(got.values()) == [41.36, 42.00, 24.7138, 20.992, 20.14729]
    for run in runs():  # the layout every card states: 16 H100, EP 16, MBS 1, GBS 1,024, 4,096 tokens
        assert (run["gpus"], run["ep"], run["tp"], run["pp"], run["micro_batch"], run["global_batch"],
                run["seq_len"]) == (16, 16, 1, 1, 1, 1024, 4096)


def test_the_models_steps():
    steps = [round(model_step_s(run), 3) for run in runs()]
    # the graphed run has the eager run's GPU work: the model (no host term) gives both one step
    # (session 30: Transformer Engine's grouped GEMMs on Hopper at their measured share, kernel_facts.json
    # grouped_gemm_efficiency; before it 40.266, 40.266, 24.769, 17.795, 17.795; session 31's loss traffic,
    # blocks/head.py fused_loss_bytes: 40.998, 40.998, 25.502, 18.528, 18.528 before it; session 33's embedding
    # dense gradient, costmodel/embedding_grad.py: 41.085, 41.085, 25.588, 18.614, 18.614 before it; session 41's
    # HybridEP at its README's measured H100 rates across nodes, layout/hybridep_rates.py: 41.144, 41.144, 25.648,
    # 18.674, 18.674 before it; Megatron's one QKV GEMM and its dense passes, wt43_review and wt44_review: 41.144,
    # 41.144, 23.924, 18.236, 18.236 before them)
    assert steps == [41.073, 41.073, 23.853, 18.164, 18.164]
    alltoall, _, hybridep, overlap, _ = (model_step_s(run) for run in runs())
    published = [run["published_step_s"] for run in runs()]
    # the dispatcher's change: published 41.36 / 24.7138 = 1.674, the model 1.722 (1.720 before wt44_review;
    # 1.604 before session 41's
    # measured HybridEP rates; 1.606 before session 33's
    # embedding dense gradient; 1.608 before session 31's loss
    # traffic; 1.626 before session 30's
    # grouped-GEMM share; 1.680 before the in-node all-to-all took nccl-tests' alltoall busbw, 320 GB/s:
    # nccl_facts.json all_to_all_peak_busbw)
    assert alltoall / hybridep == pytest.approx(1.722, abs=5e-4)
    assert published[0] / published[2] == pytest.approx(1.674, abs=5e-4)
    # the overlap's saving: published 24.7138 - 20.992 = 3.72 s, the model 5.69 s (6.97 s before session 41's
    # measured HybridEP rates; 6.04 s before the in-node
    # all-to-all's 320 GB/s; 6.71 s before its paired layers ran on the 100 of 132 SMs HybridEP's 32 leave:
    # costmodel/layout/combined_1f1b.py)
    assert hybridep - overlap == pytest.approx(5.6885, abs=5e-4)
    assert published[2] - published[3] == pytest.approx(3.7218, abs=5e-5)


def test_checked_md_quotes_the_models_steps():
    """docs/checked.md's sentence on these runs quotes the model's eager, HybridEP and EP-overlap steps as the
    script prints them (session 41's review: it still read 39.51, 23.52 and 16.81 s from session 25)."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "checked.md").read_text().split())
    eager, _, hybridep, overlap, _ = (model_step_s(run) for run in runs())
    quoted = re.search(r"TE-graphed 42\.00 s, the model ([\d.]+) s; HybridEP 24\.71 s, the model ([\d.]+) s; "
                       r"with the EP overlap 20\.99 s, the model ([\d.]+) s\)", text)
    assert quoted and [float(x) for x in quoted.groups()] == [round(eager, 2), round(hybridep, 2), round(overlap, 2)]
