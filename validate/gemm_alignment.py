"""GEMM dimensions that are not multiples of 8 (session 33, validate/FINDINGS.md "GEMM dimensions
not multiples of 8"): the one published A/B of such GEMMs against the same ones padded
(validate/gemm_alignment.json: DeepBench's V100 sheets before and after NVIDIA's padding patch),
grouped by which of cuBLAS's dimensions was off; and the published training rows whose GEMMs have
such a dimension on a rank (the vocabulary rows a rank holds, costmodel/layout/split.py
local_vocabulary; the hidden width; the FFN width over tp; the head width), with the kernel
model's figure over the published one.

    PYTHONPATH=. python validate/gemm_alignment.py

Nothing here enters the model: no published A/B on the rows' A100s and H100s (cuBLAS >= 11) was
found; the only V100 rows with such a dimension (session 42's BERT-large rows of transformers' single-GPU
guide, vocabulary 30,522) ran in 2022 under a cuBLAS not stated, likelier 11 than the A/B's 10.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("gemm_alignment.json")
ALIGN = 8  # fp16/bf16 elements in 16 bytes: NVIDIA's Tensor Core requirement (cuBLAS < 11.0)


def deepbench() -> dict[str, Any]:
    return json.loads(TABLE.read_text())["deepbench_v100_padding"]


def misaligned_operands(m: int, n: int, k: int) -> str:
    """Which of a column-major cuBLAS call's m (C's and the non-transposed A's leading dimension), n
    and k are not multiples of ALIGN: "m or n" where either is, "k only", or "none"."""
    if m % ALIGN or n % ALIGN:
        return "m or n"
    return "k only" if k % ALIGN else "none"


def padding_ratios() -> dict[str, list[float]]:
    """DeepBench's unpadded time over its padded one, by misaligned_operands."""
    groups: dict[str, list[float]] = {}
    for m, n, k, _, before, after in deepbench()["rows"]:
        groups.setdefault(misaligned_operands(m, n, k), []).append(before / after)
    return groups


def rank_widths(run: dict[str, Any], source: dict[str, Any]) -> tuple[dict[str, int], Any]:
    """A training row's GEMM widths on one rank (vocabulary rows, hidden, FFN over tp, head) and its
    hardware, as reports/published_runs.train_setup builds the row."""
    from costmodel import symbols as S
    from costmodel.layout.frameworks import layout_vocabulary
    from costmodel.layout.split import local_vocabulary
    from reports.published_runs import train_setup

    estimate, hardware, _ = train_setup(run, source)
    cfg, layout = estimate.cfg, estimate.layout
    rows = int(local_vocabulary(layout_vocabulary(layout)).subs({S.V: cfg.vocab_size, S.tp: layout.tp}))
    return {"vocabulary": rows, "hidden": cfg.d_model, "ffn": (cfg.d_ff or 0) // layout.tp,
            "head": cfg.d_head or 0}, hardware


def misaligned_rows() -> list[dict[str, Any]]:
    """Each training row (GPU-hours rows and rows the kernel model cannot express apart) with a rank
    width not a multiple of ALIGN: its widths, the misaligned ones, its hardware and the kernel
    model's speed over the published."""
    from costmodel.config import ConfigError
    from reports.published_runs import TRAIN_UNITS, other_runs_data

    data = other_runs_data()
    out = []
    for run in data["runs"]:
        if run["kind"] == "decode" or "published_gpu_hours" in run:
            continue
        source = data["sources"][run["id"].split()[0]]
        try:
            widths, hardware = rank_widths(run, source)
        except ConfigError:
            continue
        off = [name for name, width in widths.items() if width % ALIGN]
        if not off:
            continue
        key = next(k for k in TRAIN_UNITS if k in run)
        try:
            ours = TRAIN_UNITS[key][1](run, source, "kernels")
        except ConfigError:  # a row `published` marks not expressible (e.g. cuDNN attention on an A100) has no ratio
            continue
        out.append({"run": run["id"], "widths": widths, "misaligned": off, "hardware": hardware.name,
                    "unit": TRAIN_UNITS[key][0], "ratio": ours / run[key]})
    return out


def vocabulary_share(run_id: str) -> float:
    """The share of a tokens/s training row's modelled step that its vocabulary costs: 1 - the step
    at an 8-row vocabulary over the step at its own (the logits GEMMs, the loss, the embedding): the
    most a slower logits GEMM can add per unit of its own slowdown."""
    from reports.published_runs import other_runs_data, train_tokens

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    source = data["sources"][run_id.split()[0]]
    if "gpt" in run:  # a GPT of the run's own sizes reads its source's vocabulary (train_setup), no config_changes
        tiny, tiny_source = run, {**source, "vocabulary": 8}
    else:  # a preset's model: published_rows.run_model applies the run's config_changes
        tiny, tiny_source = {**run, "config_changes": {**run.get("config_changes", {}), "vocab_size": 8}}, source
    return 1 - train_tokens(run, source, "kernels") / train_tokens(tiny, tiny_source, "kernels")


def main() -> None:
    print("DeepBench V100 fp16, unpadded (CUDA 10.0) over padded to 8 (CUDA 10.1):")
    for group, ratios in sorted(padding_ratios().items()):
        print(f"  {group:7s} {len(ratios):2d} shapes  median {statistics.median(ratios):.2f}  "
              f"range {min(ratios):.2f}-{max(ratios):.2f}")
    control = deepbench()["control"]
    print(f"  control ({control['shapes']} shapes the patch leaves alone): median {control['median_before_over_after']}")
    print("\nPublished training rows with a rank GEMM width not a multiple of 8 (kernel model / published):")
    for row in sorted(misaligned_rows(), key=lambda r: r["ratio"]):
        share = f"  (vocabulary's share of the step {vocabulary_share(row['run']):.3f})" \
            if row["misaligned"] == ["vocabulary"] and "tokens/s" in row["unit"] else ""
        print(f"  {row['ratio']:.2f}x  {row['hardware']:12s} {','.join(row['misaligned']):10s} {row['widths']}  "
              f"{row['run']}{share}")


if __name__ == "__main__":
    main()
