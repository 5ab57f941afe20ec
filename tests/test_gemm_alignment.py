"""GEMM dimensions not multiples of 8 (validate/gemm_alignment.py): DeepBench's V100 padding A/B as
typed from its sheets, which of cuBLAS's dimensions it penalizes, and the widths the published rows
have at their GEMMs (the vocabulary rows a rank holds as each framework pads them)."""

from __future__ import annotations

import statistics

import pytest

from validate import gemm_alignment as G


def test_deepbench_rows_as_published():
    """Commit 5f5365f's and 30c5115's sheets: 5124 x 9124 x 4096 NN took 13.477 ms unpadded
    (CUDA 10.0) and 3.702 ms padded to 8 (CUDA 10.1); 4096 x 7133 x 4096 NT 7.859 and 2.199."""
    rows = {tuple(r[:4]): tuple(r[4:]) for r in G.deepbench()["rows"]}
    assert len(rows) == 30
    assert rows[(5124, 9124, 4096, "NN")] == (13.477, 3.702)
    assert rows[(4096, 7133, 4096, "NT")] == (7.859, 2.199)
    assert rows[(1024, 48000, 1530, "NN")] == (1.494, 1.496)


def test_misaligned_operands():
    assert G.misaligned_operands(5124, 9124, 1760) == "m or n"  # 5124 = 8 x 640 + 4
    assert G.misaligned_operands(4096, 7133, 4096) == "m or n"
    assert G.misaligned_operands(512, 24000, 1530) == "k only"
    assert G.misaligned_operands(1024, 1024, 1024) == "none"


def test_v100_padding_penalizes_m_and_n_not_k():
    """Under cuBLAS 10 an off m or n cost 3.40x the median (the large shapes at the V100's CUDA-core
    rate, 27-31 TFLOP/s unpadded against 92-109 padded); an off k alone (1530) cost nothing (1.00x)."""
    groups = G.padding_ratios()
    assert sorted(groups) == ["k only", "m or n"]
    assert len(groups["m or n"]) == 22 and round(statistics.median(groups["m or n"]), 2) == 3.40
    assert len(groups["k only"]) == 8 and round(statistics.median(groups["k only"]), 2) == 1.00


def _widths(run_id: str) -> dict[str, int]:
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return G.rank_widths(run, data["sources"][run_id.split()[0]])[0]


def test_logits_widths_as_each_code_pads_the_vocabulary():
    """GPT-2's 50,257 tokens: transformers keeps them (the logits GEMM's N odd); flash-attention's
    training pads to a multiple of 8 (50,264); Megatron to 128 x tp (50,304)."""
    assert _widths("flash-attention-1-hf gpt2-small 1k")["vocabulary"] == 50257
    assert _widths("flash-attention-1-flash gpt2-small 1k")["vocabulary"] == 50264
    assert _widths("flash-attention-1-megatron gpt2-small 1k")["vocabulary"] == 50304


def test_bloom_200b_13824_wide_128_heads_are_108_wide():
    widths = _widths("bloom-prequel-200b h13824 l78 a128 dp8 tp8 pp6 mbs4 gbs2048 384xa100-80gb 02-26")
    assert widths == {"vocabulary": 31360, "hidden": 13824, "ffn": 6912, "head": 108}


@pytest.mark.slow  # times the nine rows with the kernel model (about 2-3 s)
def test_no_misaligned_row_runs_where_the_measured_penalty_applies():
    """The one A/B is a V100 under cuBLAS 10: until session 42 no published training row with a misaligned width
    ran on a V100 (the A100 rows need their own measurement). Session 42's transformers single-GPU guide rows
    (wt42_unseent: BERT-large, vocabulary 30,522, on a V100 in 2022; its CUDA and cuBLAS not stated, cuBLAS 11 by
    then likelier than 10) are the first five; the measured cuBLAS 10 penalty is not applied to them (a V100 A/B
    under cuBLAS 11 would settle it; their fp16 rows are 2.07-2.11x too fast, validate/FINDINGS.md)."""
    rows = G.misaligned_rows()
    v100 = sorted(r["run"] for r in rows if r["hardware"].startswith("v100"))
    assert rows and v100 == sorted(["hf-perf-train-gpu-one bert-large-uncased bs4 1xv100",
                                    "hf-perf-train-gpu-one bert-large-uncased bs1 ga4 1xv100",
                                    "hf-perf-train-gpu-one bert-large-uncased bs1 ga4 gc 1xv100",
                                    "hf-perf-train-gpu-one-fp16 bert-large-uncased bs4 fp16 1xv100",
                                    "hf-perf-train-gpu-one-fp16 bert-large-uncased bs1 ga4 gc fp16 1xv100"])
    assert {tuple(r["misaligned"]) for r in rows if r["hardware"].startswith("v100")} == {("vocabulary",)}
    assert {r["run"] for r in rows} >= {"flash-attention-1-hf gpt2-small 1k", "flash-attention-1-hf gpt2-medium 1k"}


def test_a_gpt_rows_vocabulary_share_changes_its_sources_vocabulary():
    """vocabulary_share prices the step at an 8-row vocabulary. A row of a preset takes it as a config change
    (published_rows.run_model); a row of GPT sizes reads its source's "vocabulary" (train_setup), so a config change
    left it at 50,257 and the share read 0.0 (before session 39). NeMo's 2022 GPT-3 5B on 8 A100s, kernel model."""
    share = G.vocabulary_share("nemo-launcher-2022 gpt3-5b 8xa100-80gb")
    # 0.038 before session 43's Megatron attention rules (its one QKV GEMM and fused softmax shorten the rest of the
    # step: 0.042), 0.041 with session 44's dense-path passes (facts.json megatron_dense_passes)
    # 0.042 since wt46_mgsoftmax: the recomputed forward's launches added to the step
    assert round(share, 3) == 0.042
    assert round(G.vocabulary_share("flash-attention-1-hf gpt2-small 1k"), 3) == 0.118  # a preset's row, as before
