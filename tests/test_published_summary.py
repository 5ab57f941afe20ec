"""`published`'s last tables: the kernel model's comparisons by kind (reports/published_runs.py
summary_by_kind), each comparison in exactly one kind, the kinds read from the runs' models."""

from __future__ import annotations

import pytest

from reports.published_runs import KINDS, other_runs_data, run_kind, summary, summary_by_kind


def test_each_run_has_the_kind_its_model_says():
    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"]}

    def kind(run_id: str, source: dict | None = None) -> str:
        return run_kind(runs[run_id], data["sources"][run_id.split()[0]] if source is None else source)

    assert kind("gpt-fast llama2-7b bf16") == "decoding"
    assert kind("gpt-fast-mixtral mixtral-8x7b tp2") == "decoding"  # MoE, but decoding
    assert kind("megatron-core-r0.8.0 gpt-1.7b 48xh100") == "dense training"  # GPT sizes
    assert kind("megatron-bridge 25.11 llama3-8b fp8-cs 8xgb300") == "dense training"
    assert kind("nemo-25.02 mixtral-8x22b 256xb200") == "MoE training"  # the Mixtral preset's 8 experts
    assert kind("nemo-24.07 nemotron-340b 128xh100") == "dense training"
    assert kind("nemo-25.04 llama3-70b fsdp 64xgb200") == "dense training"
    assert kind("nemo-25.04 mixtral-8x7b 64xgb200") == "MoE training"
    assert kind("automodel-moe kimi-k2 pp8 vp4 ep32 256xh100") == "MoE training"  # the Kimi K2 preset's experts
    assert kind("nemo-long-h100 llama2-7b 1024k 1024xh100") == "dense training"
    assert kind("dgxc-25.02 llama3.1-405b fp8 2304xh100") == "dense training"
    assert kind("megatron-bridge-cards qwen3-8b pretrain bf16 16xh100") == "dense training"  # the cards' source says no "moe"
    qwen = "megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100"
    assert kind(qwen) == kind(qwen, source={}) == "MoE training"  # the source says so; the preset too
    nemotron = next(r for r in runs if r.startswith("megatron-bridge-moe") and "nemotron-3.5-lightning" in r)
    assert kind(nemotron) == kind(nemotron, source={}) == "MoE training"  # the source says so; the preset too
    moe15 = "ms-swift-megatron qwen1.5-moe-a2.7b pp2 ep4 full 8xa800"  # a dense preset given 60 experts by its config_changes
    assert kind(moe15) == "MoE training" and kind("ms-swift-megatron qwen2.5-14b tp4 sp selective 8xa800") == "dense training"
    unknown = {"kind": "train", "model": "no-such-model"}
    assert run_kind(unknown, {}) == "dense training" and run_kind(unknown, {"moe": True}) == "MoE training"
    kinds = [run_kind(r, data["sources"][r["id"].split()[0]]) for r in data["runs"]]
    assert set(kinds) == set(KINDS) and kinds.count("MoE training") == 189  # Megatron-Bridge's 103 MoE rows, the model zoo's 12,
    # NeMo 25.02's and 25.04's 2 Mixtrals each, the model verification cards' 31 (their 32nd, Qwen3 8B, is dense), the
    # DeepSeek-V3 GB200 guide's 13, NeMo AutoModel's 9, AMD Primus's 2 Mixtral 8x22B rows
    # and Megatron-Core's MoE README's 2 Mixtral 8x7B rows; DeepSeek-V2's and V3's GPU-hours (session 28); FlagPerf's
    # 2 Qwen1.5-MoE rows (session 29); Megatron-Bridge's CUDA-graph guide's 2 Qwen3 30B-A3B rows (session 30); the Llama 4 card's
    # Scout and Maverick GPU-hours (session 32); ms-swift's Qwen1.5-MoE-A2.7B (3) and Qwen3-30B-A3B (2) rows (session 36)


def _tables():
    """Two paper rows (1.10 and 1.00 as speeds), Korthikanti's two cells (0.90, 1.25), and other runs:
    a dense rate at 1.20x, two MoE rates at 2.0x and 0.8x, a decoding rate at 1.02x, one not
    expressible, and a GPU-hours row (a cost, apart)."""
    return {"narayanan_2021_table_1": [{"tflops_kernels": 110.0, "tflops_published": 100.0, "tflops_ours": 90.0}],
            "korthikanti_2022_table_5": [{"full_published": 9.0, "full_kernels": 10.0, "full_ours": 10.0,
                                          "present_published": 5.0, "present_kernels": 4.0, "present_ours": 4.0}],
            "other_runs": [
                {"kind": "dense training", "unit": "tokens/s per GPU", "published": 100.0, "kernels": 120.0, "roofline": None},
                {"kind": "MoE training", "unit": "tokens/s per GPU", "published": 100.0, "kernels": 200.0, "roofline": None},
                {"kind": "MoE training", "unit": "tokens/s per GPU", "published": 100.0, "kernels": 80.0, "roofline": None},
                {"kind": "decoding", "unit": "tokens/s", "published": 50.0, "kernels": 51.0, "roofline": None},
                {"kind": "decoding", "unit": "tokens/s", "published": 50.0, "kernels": None, "roofline": None},
                {"kind": "dense training", "unit": "GPU-hours", "published": 10.0, "kernels": 20.0, "roofline": None}]}


def test_the_kinds_split_the_kernel_models_comparisons():
    tables = _tables()
    by_kind, total = summary_by_kind(tables), summary(tables)["kernels"]
    assert sum(s["comparisons"] for s in by_kind.values()) == total["comparisons"] == 7
    papers = by_kind["Narayanan's and Korthikanti's tables"]
    assert papers["comparisons"] == 3 and papers["median_error"] == pytest.approx(0.10)  # 1.10, 0.90, 1.25
    assert (papers["lowest"], papers["highest"]) == (pytest.approx(0.9), pytest.approx(1.25))
    moe = by_kind["MoE training"]
    assert (moe["comparisons"], moe["within_0.75_1.33"], moe["median_error"]) == (2, 1, pytest.approx(0.6))
    assert by_kind["decoding"]["comparisons"] == 1 and by_kind["decoding"]["within_5%"] == 1
    assert by_kind["dense training"]["highest"] == pytest.approx(1.2)  # the GPU-hours row is not a rate


@pytest.mark.slow
def test_the_docs_print_the_counts_and_rows_published_prints():
    """README, docs/time.md and docs/checked.md quote `published`'s counts (by time model and by
    kind) and docs/checked.md every expressible run's kernel-model cell: each as the command
    computes it now, so a change that moves a figure cannot leave the docs behind."""
    from pathlib import Path

    from reports.published_runs import korthikanti, narayanan, other_runs

    root = Path(__file__).resolve().parent.parent
    readme, time_md, checked = ((root / p).read_text() for p in ("README.md", "docs/time.md", "docs/checked.md"))
    tables = {"narayanan_2021_table_1": narayanan(), "korthikanti_2022_table_5": korthikanti(),
              "other_runs": other_runs()}

    def cells(s: dict) -> str:
        return (f"| {s['comparisons']} | {100 * s['median_error']:.1f}% | {s['lowest']:.2f}-{s['highest']:.2f} | "
                f"{s['within_0.75_1.33']} | {s['within_5%']} |")

    for kind, s in summary_by_kind(tables).items():
        name = "decoding (gpt-fast" if kind == "decoding" else kind
        assert any(line.startswith(f"| {name}") and cells(s) in line for line in readme.splitlines()), kind
        for doc in (time_md, checked):
            assert f"| {kind} {cells(s)} {s['within_10%']} |" in doc, kind
    total = summary(tables)
    k = total["kernels"]
    assert f"| all {cells(k)}" in readme
    # README's GPU-hours sentence (session 38: it had kept session 24's "12 GPU-hours rows ... 0.34-4.47x")
    g = total["kernels, GPU-hours"]
    assert (f"The {g['comparisons']} GPU-hours rows" in readme and f"kernel model {100 * g['median_error']:.1f}% median "
            f"error, {g['lowest']:.2f}-{g['highest']:.2f}x as speeds, {g['within_0.75_1.33']} within" in " ".join(readme.split()))
    # and its MoE sentence (it had kept "43 of 103" from before session 37's moves)
    bridge = [r["kernels"] / r["published"] for r in tables["other_runs"]
              if r["run"].startswith("megatron-bridge-moe ") and r["kernels"] is not None]
    outside = [x for x in bridge if not 0.75 <= x <= 1.33]
    assert all(x > 1.33 for x in outside) and (f"{len(outside)} of Megatron-Bridge's {len(bridge)} MoE rows fall outside "
                                                f"the band, all too fast ({min(outside):.2f}-{max(outside):.2f}x)"
                                                in " ".join(readme.split()))
    for name, doc in (("kernel model", time_md), ("kernel model (default)", checked)):
        for model, label in (("kernels", name), ("roofline", "roofline")):
            s = total[model]
            assert (f"| {label} | {100 * s['median_error']:.1f}% | {s['lowest']:.2f}-{s['highest']:.2f} | "
                    f"{s['within_0.75_1.33']} of {s['comparisons']} | {s['within_5%']} | {s['within_10%']} |") in doc
    for r in tables["other_runs"]:
        if r["kernels"] is not None and r["unit"] not in ("GPU-hours",):
            assert f"{r['kernels']:,.1f} ({r['kernels'] / r['published']:.2f}x)" in checked, r["run"]
