"""`published`'s last tables: the kernel model's comparisons by kind (reports/published_runs.py
summary_by_kind), each comparison in exactly one kind, the kinds read from the runs' models; and
the docs' cells as `published` computes them."""

from __future__ import annotations

import re

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
    assert set(kinds) == set(KINDS) and kinds.count("MoE training") == 217  # 208 before session 46, 189 before 41
    # (wt41_unseent: torchao's 2 Llama 4 Scout rows and OLMoE's GPU-hours; wt41_unseent2: DGX Cloud's 8 Grok-1 and
    # 8 Llama 4 Maverick rows, all expressible since wt41_etp, counted by kind all the same); Megatron-Bridge's 103 MoE rows, the model zoo's 12,
    # NeMo 25.02's and 25.04's 2 Mixtrals each, the model verification cards' 31 (their 32nd, Qwen3 8B, is dense), the
    # DeepSeek-V3 GB200 guide's 13, NeMo AutoModel's 9, AMD Primus's 2 Mixtral 8x22B rows
    # and Megatron-Core's MoE README's 2 Mixtral 8x7B rows; DeepSeek-V2's and V3's GPU-hours (session 28); FlagPerf's
    # 2 Qwen1.5-MoE rows (session 29); Megatron-Bridge's CUDA-graph guide's 2 Qwen3 30B-A3B rows (session 30); the Llama 4 card's
    # Scout and Maverick GPU-hours (session 32); ms-swift's Qwen1.5-MoE-A2.7B (3) and Qwen3-30B-A3B (2) rows (session 36);
    # torchao's MXFP8 MoE README's 2 Llama 4 Scout rows and OLMoE's GPU-hours (session 41: 189 -> 192)
    # (wt46_unseent: the Megatron-Core MoE report's 9 DeepSeek-V3 and Qwen3-235B rows, 208 -> 217)


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
def test_the_docs_print_the_counts_and_rows_published_prints(published_tables):
    """README, docs/time.md and docs/checked.md quote `published`'s counts (by time model and by
    kind) and docs/checked.md every expressible run's kernel-model cell: each as the command
    computes it now, so a change that moves a figure cannot leave the docs behind."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme, time_md, checked = ((root / p).read_text() for p in ("README.md", "docs/time.md", "docs/checked.md"))
    tables = published_tables  # `published`'s, computed once a test process (tests/conftest.py)

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
    # Every run a row of its own in checked.md's per-run tables, with its unit, its published figure and (a
    # speed row's) kernel cell in their columns; it had checked the kernel cell anywhere in the page, so rows
    # whose published column a merge dropped (session 38's VectorLM and universal-llm-trainer rows, session
    # 39's two) kept passing.
    unmatched_runs, unmatched_rows = unmatched(tables["other_runs"], checked)
    assert not unmatched_runs, unmatched_runs
    assert not unmatched_rows, unmatched_rows


UNITS = ("tokens/s per GPU", "tokens/s", "TFLOP/s per GPU", "GPU-hours")  # other_runs' units, longest first


def _unit(cell: str) -> str | None:
    """The unit a row's unit cell names ("tokens/s per GPU (60.1 s a step)": tokens/s per GPU)."""
    return next((unit for unit in UNITS if cell == unit or cell.startswith(unit + " (")), None)


def _shows(cell: str, value: float) -> bool:
    """A published cell is the figure as typed, or rounded to the decimals it shows (16.87 for 16.8699)."""
    if not re.fullmatch(r"[\d,]+(\.\d+)?", cell):
        return False
    decimals = len(cell.split(".")[1]) if "." in cell else 0
    return float(cell.replace(",", "")) == round(value, decimals)


def unmatched(runs: list[dict], checked: str) -> tuple[list[str], list[tuple[int, str]]]:
    """The runs with no row of their own in checked.md's per-run tables (run | unit | published | roofline |
    kernel model), and the rows no run claims (line number, line). A row is a run's when its unit cell names
    the run's unit, its published cell shows the run's figure, and, for a speed, its kernel cell is
    `published`'s (`{kernels:,.1f} ({ratio:.2f}x)` or "not expressible"); a GPU-hours row's kernel cell is
    not read (those cells round to whole hours, as no other row does)."""
    free: dict[str, list[tuple[int, str, list[str]]]] = {unit: [] for unit in UNITS}
    for number, line in enumerate(checked.splitlines(), 1):
        cells = [cell.strip() for cell in line[2:-2].split(" | ")] if line.startswith("| ") and line.endswith(" |") else []
        if len(cells) == 5 and _unit(cells[1]):
            free[_unit(cells[1])].append((number, line, cells))
    missing = []
    for r in runs:
        kernel = None if r["unit"] == "GPU-hours" else (
            f"{r['kernels']:,.1f} ({r['kernels'] / r['published']:.2f}x)" if r["kernels"] is not None else "not expressible")
        rows = free[r["unit"]]
        hit = next((i for i, (_, _, cells) in enumerate(rows)
                    if _shows(cells[2], r["published"]) and kernel in (None, cells[4])), None)
        if hit is None:
            missing.append(r["run"])
        else:
            rows.pop(hit)
    return missing, [(number, line) for rows in free.values() for number, line, _ in rows]


SESSION_39 = [  # the two rows a conflicted merge left without their published figure (11bde38b mended them)
    ({"run": "torchao-h100 llama3.1-8b float8dq-tensor", "unit": "tokens/s", "published": 116.4, "roofline": None,
      "kernels": 185.4},
     "| torchao-h100 llama3.1-8b float8dq-tensor | tokens/s | 116.4 | not expressible | 185.4 (1.59x) |",
     "| torchao-h100 llama3.1-8b float8dq-tensor | tokens/s | not expressible | 185.4 (1.59x) | 211.1 (1.81x) |"),
    ({"run": "gemlite-sglang llama3.1-8b fp8 per-row tp1 batch 1", "unit": "tokens/s", "published": 166.0,
      "roofline": None, "kernels": 242.3},
     "| PyTorch GemLite/TorchAO/SGLang blog: llama3.1-8b fp8 per-row | tokens/s | 166.0 | not expressible | 242.3 (1.46x) |",
     "| PyTorch GemLite/TorchAO/SGLang blog: llama3.1-8b fp8 per-row | tokens/s | not expressible | 242.3 (1.46x) | "
     "267.6 (1.61x) |"),
]


def test_a_row_whose_published_column_a_merge_dropped_fails_the_docs_check():
    """Session 39's two rows as the merge left them: each run unmatched and its row claimed by none; as mended,
    both match. The kernel cell alone (the old check) was in both pages."""
    runs = [run for run, _, _ in SESSION_39]
    mended = "\n".join(good for _, good, _ in SESSION_39)
    merged = "\n".join(bad for _, _, bad in SESSION_39)
    assert unmatched(runs, mended) == ([], [])
    assert all(f"{r['kernels']:,.1f} ({r['kernels'] / r['published']:.2f}x)" in merged for r in runs)
    missing, rows = unmatched(runs, merged)
    assert missing == [r["run"] for r in runs] and [number for number, _ in rows] == [1, 2]


def test_the_docs_check_reads_each_column():
    """A row with another unit, another published figure or another kernel cell is not the run's; a unit cell
    may say more in brackets, a published cell may round to the decimals it shows; a GPU-hours row's kernel
    cell is not read."""
    run = {"run": "r", "unit": "tokens/s per GPU", "published": 3550.48, "roofline": 3143.96, "kernels": 3363.85}
    row = "| VectorLM 1 A100 | {} | {} | 3,144.0 (0.89x) | {} |"
    assert unmatched([run], row.format("tokens/s per GPU (4.6 s a step)", "3,550.48", "3,363.8 (0.95x)")) == ([], [])
    assert unmatched([run], row.format("tokens/s per GPU", "3,550.5", "3,363.8 (0.95x)"))[0] == []
    for cells in (("tokens/s", "3,550.48", "3,363.8 (0.95x)"), ("tokens/s per GPU", "3,550.4", "3,363.8 (0.95x)"),
                  ("tokens/s per GPU", "3,550.48", "3,363.9 (0.95x)"), ("tokens/s per GPU", "3,550.48", "not expressible"),
                  ("tokens/s per GPU", "3,144.0 (0.89x)", "3,363.8 (0.95x)")):
        assert unmatched([run], row.format(*cells))[0] == ["r"], cells
    hours = {"run": "h", "unit": "GPU-hours", "published": 184320, "roofline": 176560.7, "kernels": 144431.3}
    assert unmatched([hours], "| StableLM | GPU-hours (ours / published) | 184,320 | 1 (0.00x) | 2 (0.00x) |") == ([], [])
    assert unmatched([hours, hours], "| StableLM | GPU-hours (ours / published) | 184,320 | 1 (0.00x) | 2 (0.00x) |")[0] == ["h"]
