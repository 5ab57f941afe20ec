"""validate/moe_pairs.py: AutoModel's and Megatron-Bridge's rows of one MoE model on one GPU,
term by term in seconds per million tokens a GPU."""

import pytest

from reports.published_runs import other_runs_data
from validate.moe_pairs import KINDS, PAIRS, main, row_terms

AUTOMODEL_QWEN = "automodel-moe qwen3-30b-a3b ep8 8xh100"
BRIDGE_QWEN = "megatron-bridge-moe 25.09 qwen3-30b-a3b fp8 16xh100"


def test_every_pair_is_one_model_on_one_gpu():
    runs = {run["id"]: run for run in other_runs_data()["runs"]}
    for automodel, megatron in PAIRS.values():
        rows = [runs[run_id] for run_id in (automodel, *megatron)]
        assert {row["model"] for row in rows} == {rows[0]["model"]}
        assert {row.get("hardware", "h100-sxm") for row in rows} == {"h100-sxm"}
        assert automodel.startswith("automodel-moe ") and all(m.startswith("megatron-bridge-") for m in megatron)


def test_the_qwen3_pair_term_by_term():
    automodel, bridge = row_terms(AUTOMODEL_QWEN), row_terms(BRIDGE_QWEN)
    # tokens a GPU a step: GBS 512 x 4,096 over 8 and over 16 GPUs
    assert (automodel["tokens_per_gpu"], bridge["tokens_per_gpu"]) == (262_144, 131_072)
    assert automodel["published"] == pytest.approx(1e6 / 12_040, rel=1e-12)
    assert bridge["published"] == pytest.approx(1e6 / 10_494, rel=1e-12)
    # the configurations that differ: full recomputation and DeepEP on AutoModel's side, FP8 current
    # scaling, the all-to-all dispatcher and pp 2 x vp 24 on Megatron-Bridge's
    assert (automodel["config"]["recompute"], bridge["config"]["recompute"]) == ("full", "none")
    assert (automodel["config"]["dispatcher"], bridge["config"]["dispatcher"]) == ("deepep", "alltoall")
    assert (bridge["config"]["precision"], bridge["config"]["pp"], bridge["config"]["vp"]) == ("current", 2, 24)
    assert automodel["compute"]["recompute"] > 0 == bridge["compute"]["recompute"]
    assert bridge["compute"]["FP8 casts"] > 0 == automodel["compute"]["FP8 casts"]
    # the all-to-all inside the node at the slide's 320 GB/s: 824,634,507,264 bytes a step a rank
    # (32 micro-batches, 48 / 2 MoE layers, dispatch and combine both ways), 7/8 on the wire
    assert bridge["parts"]["ep"] == pytest.approx(824_634_507_264 * 7 / 8 / 320e9 * 1e6 / 131_072, rel=1e-12)
    # the terms sum to ours (row_terms checks it too) and ours is the published table's ratio
    for row in (automodel, bridge):
        assert sum(row["compute"][k] for k in KINDS) + sum(row["parts"].values()) == pytest.approx(row["ours"],
                                                                                                   rel=1e-12)
        assert row["ratio"] == pytest.approx(row["published"] / row["ours"], rel=1e-12)


def test_the_script(capsys):
    assert main(["--pair", "qwen3-30b-a3b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"| term | {AUTOMODEL_QWEN} | {BRIDGE_QWEN} | " + " | ".join(PAIRS["qwen3-30b-a3b"][1][1:]) + " |"
    # 18.38 before session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv; merged in session 44)
    assert "| recompute | 18.36 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 |" in lines
    assert "| published | 83.06 | 95.29 | 110.40 | 111.61 | 76.86 | 115.55 |" in lines
    assert main(["--pair", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no pair is named 'nope'")
    assert main(["--bogus"]) == 2


def test_the_diff_lines(capsys):
    """--diff: Megatron's row less AutoModel's; on Qwen3 30B's 25.09 FP8 row the runs put Megatron
    12.24 s/1M behind (1e6/10,494 - 1e6/12,040), the model 14.88 ahead (20.16 before session 34's per-expert FP8
    casts of Transformer Engine's GroupedLinear, layout/grouped_quantize.py, the casts +6.87 then; 20.15 before
    session 33's embedding dense gradient, costmodel/embedding_grad.py; 20.48 before session 31's loss traffic on
    AutoModel's side, blocks/head.py fused_loss_bytes; 16.74 before session 30's grouped
    GEMM share on AutoModel's BF16 experts, 16.04 before session 28's FSDP2 copies and exposed edges on
    AutoModel's side): its recompute (AutoModel's, -18.38) and FP8 GEMMs (-10.12) against the casts (+12.14)."""
    from validate.moe_pairs import diff_table

    line = next(l for l in diff_table(["qwen3-30b-a3b"]) if "25.09" in l)
    cells = [c.strip() for c in line.strip("|").split("|")]
    # -14.88 and +27.12 (recompute -18.38) before session 43's one QKV GEMM (facts.json fused_qkv)
    # -14.86 and +27.10 before wt46_mgsoftmax's recomputed forwards' launches (AutoModel's recompute, StepTime.compute)
    assert cells[:4] == ["qwen3-30b-a3b: 25.09 qwen3-30b-a3b fp8 16xh100", "+12.24", "-15.19", "+27.42"]
    assert round(1e6 / 10_494 - 1e6 / 12_040, 2) == 12.24
    assert (cells[4 + KINDS.index("expert GEMMs")], cells[4 + KINDS.index("FP8 casts")],
            cells[4 + KINDS.index("recompute")]) == ("-10.12", "+12.14", "-18.36")
    assert main(["--diff", "--pair", "qwen3-30b-a3b"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2 + 5
