"""The same MoE model on the same GPU in two frameworks: NeMo AutoModel's row beside Megatron-Bridge's
(published_runs.json), each row's configuration and the kernel model's step term by term.

Every term is in seconds per million tokens a GPU (the step's seconds over its global batch's tokens
a GPU, x 1e6), so two rows of other layouts (GPUs, pipeline stages, micro-batches) compare on one
scale: the published figure's is 1e6 / (published tokens a second a GPU). The compute is the slowest
pipeline stage's, split by kernel kind as KernelStepTime times it (layout/kernel_step.py: each
leaf's kernels at its layout factor, an FP8 leaf's GEMMs on the FP8 timer and its recipe's casts),
recomputation's reruns apart, and the per-block launch overhead; then the step's exposed
communication, bubble, optimizer and overlap contention (StepTime.step). The parts sum to the step
(checked: an AssertionError otherwise).

usage: python validate/moe_pairs.py [--pair NAME ...] [--json | --diff]  (--diff: one line a Megatron-Bridge
row, each term as its row's less AutoModel's)
"""

from __future__ import annotations

import json
import sys
from typing import Any

from costmodel.config import ConfigError
from costmodel.kernel_time import AttentionCall, Gemm, MatmulCompute, kernels_seconds
from costmodel.layout.grouped_quantize import stage_seconds as quantize_seconds
from costmodel.layout.kernel_step import KernelStepTime, cast_kernel, rank_kernels
from costmodel.layout.host_syncs import moe_layers
from costmodel.layout.roofline_parts import leaf_factor, runs_fp8
from reports.published_runs import other_runs_data, train_setup

#: Each pair: a model, AutoModel's row, and the Megatron-Bridge rows on the same GPU (their ids in
#: costmodel/published_runs.json). Nemotron 3 Ultra has no Megatron row on H100 (none on the page).
PAIRS: dict[str, tuple[str, tuple[str, ...]]] = {
    "qwen3-30b-a3b": ("automodel-moe qwen3-30b-a3b ep8 8xh100",
                      ("megatron-bridge-moe 25.09 qwen3-30b-a3b fp8 16xh100",
                       "megatron-bridge-moe 26.02.01 qwen3-30b-a3b fp8 16xh100",
                       "megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100",
                       "megatron-bridge-cards qwen3-30b-a3b perf bf16 16xh100",
                       "megatron-bridge-cards qwen3-30b-a3b pretrain bf16 16xh100")),
    "nemotron-3-nano": ("automodel-moe nemotron-3-nano ep8 8xh100",
                        ("megatron-bridge-moe 26.04.01 nemotron-3-nano fp8 16xh100",)),
    "nemotron-3-super": ("automodel-moe nemotron-3-super ep64 64xh100",
                         ("megatron-bridge-cards nemotron-3-super perf bf16 64xh100",)),
    "gpt-oss-120b": ("automodel-moe gpt-oss-120b ep64 64xh100",
                     ("megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xh100",
                      "megatron-bridge-moe 25.11 gpt-oss-120b bf16 64xh100",
                      "megatron-bridge-cards gpt-oss-120b pretrain bf16 64xh100")),
    "gpt-oss-20b": ("automodel-moe gpt-oss-20b ep8 8xh100",
                    ("megatron-bridge-cards gpt-oss-20b pretrain bf16 16xh100",)),
    "deepseek-v3": ("automodel-moe deepseek-v3 pp4 vp8 ep64 1024xh100",
                    ("megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100",
                     "megatron-bridge-cards deepseek-v3 perf bf16 1024xh100")),
}

#: The kernel kinds of the compute split, in print order.
KINDS = ("attention", "expert GEMMs", "other GEMMs", "expert memory-bound", "other memory-bound", "FP8 casts",
         "recompute", "launches")
#: The step's other parts (StepTime.step's keys), in print order.
PARTS = ("ep", "tp", "cp", "pp", "dp", "bubble", "optimizer", "contention", "accumulation", "autocast",
         "fsdp copies")


def _kind(kernel: Any, experts: bool) -> str:
    if isinstance(kernel, AttentionCall):
        return "attention"
    if isinstance(kernel, (Gemm, MatmulCompute)):
        return "expert GEMMs" if experts else "other GEMMs"
    return "expert memory-bound" if experts else "other memory-bound"


def compute_split(step_time: KernelStepTime, stage: Any) -> dict[str, float]:
    """One micro-batch of `stage` by kernel kind, seconds (KernelStepTime's part_seconds and
    StepTime.compute, kind by kind; the reruns of recomputation in "recompute")."""
    estimate, timer = step_time.estimate, step_time.timer
    out = dict.fromkeys(KINDS, 0.0)
    runs = step_time.part_runs(stage)
    work = estimate.structure["work"]
    for (key, rerun, _, kernels), leaf in zip(rank_kernels(estimate, timer.fused_attention, timer.compiled,
                                                          step_time.autocast), work):
        count = runs.get(key, 0) * leaf_factor(leaf, estimate)
        if not count:
            continue
        fp8 = runs_fp8(leaf, estimate)
        for listed, training in ((kernels, True), (rerun, False)):
            gemm_timer = step_time.fp8_timer if fp8 else timer
            for kernel in listed:
                gemm = isinstance(kernel, (Gemm, MatmulCompute))
                seconds = count * kernels_seconds([kernel], gemm_timer if gemm else timer, training)
                out[_kind(kernel, bool(leaf.get("experts"))) if training else "recompute"] += seconds
            if fp8:
                casts = cast_kernel([k for k in listed if isinstance(k, (Gemm, MatmulCompute))], step_time.casts,
                                    not training)
                out["FP8 casts" if training else "recompute"] += count * kernels_seconds(casts, timer, training)
    # Transformer Engine's GroupedLinear quantizing each expert's split (layout/grouped_quantize.py)
    layers = moe_layers(estimate, stage)
    out["FP8 casts"] += quantize_seconds(estimate, step_time.hardware, layers, step_time.moe_op_fuser)
    active = sum(count * step_time.part_seconds.get(key, (0.0, 0))[1] for key, count in runs.items())
    reruns = sum(count * step_time.part_reruns.get(key, 0) for key, count in runs.items())  # StepTime.compute's
    out["launches"] = (3 * active + reruns) * step_time.overhead_s
    return out


def row_terms(run_id: str) -> dict[str, Any]:
    """One published training row: its configuration, published and our seconds per million tokens a
    GPU, and our step's terms on that scale."""
    data = other_runs_data()
    runs = {run["id"]: run for run in data["runs"]}
    if run_id not in runs:
        raise ConfigError(f"no published row is named {run_id!r} (costmodel/published_runs.json's \"id\").")
    run = runs[run_id]
    estimate, hardware, options = train_setup(run, data["sources"][run_id.split()[0]])
    step_time = KernelStepTime(estimate, hardware, **options)
    step = step_time.step()
    layout, workload = estimate.layout, estimate.workload
    tokens = workload.batch * layout.microbatches * layout.dp * workload.seq_len / layout.gpus  # a GPU a step
    scale = 1e6 / tokens
    stage = estimate.stages[step["slowest_stage"]]
    split = {k: v * layout.microbatches for k, v in compute_split(step_time, stage).items()}
    if abs(sum(split.values()) - step["compute_seconds"]) > 1e-9 * step["seconds"]:
        raise AssertionError(f"{run_id}: the kinds sum to {sum(split.values())}, the step's compute is "
                             f"{step['compute_seconds']}")
    exposed = step["exposed_communication_seconds"]
    parts = {group: exposed.get(group, 0.0) for group in ("ep", "tp", "cp", "pp", "dp")}
    parts.update(bubble=step["bubble_seconds"], optimizer=step["optimizer_seconds"],
                 contention=step["overlap_contention_seconds"], accumulation=step["gradient_accumulation_seconds"],
                 autocast=step["autocast_seconds"])
    parts["fsdp copies"] = step.get("fsdp_copy_seconds", 0.0)  # FSDP2's copies on the compute stream (layout/fsdp_copies.py)
    rest = step["seconds"] - step["compute_seconds"] - sum(parts.values())
    if abs(rest) > 1e-9 * step["seconds"]:
        raise AssertionError(f"{run_id}: the step's parts leave {rest} s")
    overlap = options.get("overlap")
    config = {"gpus": layout.gpus, "tp": layout.tp, "pp": layout.pp, "vp": layout.virtual_stages,
              "dp": layout.dp, "ep": layout.ep, "micro-batch": workload.batch, "micro-batches": layout.microbatches,
              "framework": f"{layout.framework} zero {layout.zero}", "precision": layout.fp8 or workload.dtype,
              "recompute": workload.recompute, "dispatcher": layout.ep_dispatcher,
              "attention": options.get("attention_kernel", "flash"), "mtp": estimate.cfg.mtp_layers,
              "overlap ep/pp": f"{overlap.ep if overlap else 0.0:g}/{overlap.pp if overlap else 0.0:g}",
              "token drop": bool(run.get("moe_token_drop")), "graphs": "+".join(run.get("cuda_graph_scope", [])) or "-"}
    return {"id": run_id, "config": config, "tokens_per_gpu": tokens,
            "published": 1e6 / run["published_tokens_per_s_per_gpu"], "ours": step["seconds"] * scale,
            "ratio": tokens / step["seconds"] / run["published_tokens_per_s_per_gpu"],  # ours / published, speed
            "compute": {k: v * scale for k, v in split.items()}, "parts": {k: v * scale for k, v in parts.items()}}


def pair_table(name: str) -> list[str]:
    """A pair's markdown table: configuration rows, then published, ours and each term (seconds per
    million tokens a GPU)."""
    if name not in PAIRS:
        raise ConfigError(f"no pair is named {name!r}; the pairs: {', '.join(PAIRS)}.")
    automodel, megatron = PAIRS[name]
    rows = [row_terms(run_id) for run_id in (automodel, *megatron)]
    lines = [f"{name}: s per 1M tokens a GPU (published: 1e6 / tokens/s/GPU; ours / published is speed)",
             "| term | " + " | ".join(row["id"] for row in rows) + " |", "|---" * (len(rows) + 1) + "|"]
    for key in rows[0]["config"]:
        lines.append(f"| {key} | " + " | ".join(str(row["config"][key]) for row in rows) + " |")
    lines.append("| published | " + " | ".join(f"{row['published']:.2f}" for row in rows) + " |")
    lines.append("| ours | " + " | ".join(f"{row['ours']:.2f} ({row['ratio']:.2f}x)" for row in rows) + " |")
    lines.append("| published - ours | " + " | ".join(f"{row['published'] - row['ours']:+.2f}" for row in rows) + " |")
    for kind in KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{row['compute'][kind]:.2f}" for row in rows) + " |")
    for part in PARTS:
        if any(row["parts"][part] for row in rows):
            lines.append(f"| {part} | " + " | ".join(f"{row['parts'][part]:.2f}" for row in rows) + " |")
    return lines


def diff_table(names: list[str]) -> list[str]:
    """One line per Megatron-Bridge row: published and ours as Megatron-Bridge's row less AutoModel's
    (seconds per million tokens a GPU: positive, Megatron-Bridge's slower), what the runs contradict
    (published less ours), and each of our terms' difference."""
    terms = [k for k in KINDS] + list(PARTS)
    lines = ["| pair: Megatron-Bridge row | published MB - AM | ours MB - AM | contradiction | "
             + " | ".join(terms) + " |", "|---" * (len(terms) + 4) + "|"]
    for name in names:
        if name not in PAIRS:
            raise ConfigError(f"no pair is named {name!r}; the pairs: {', '.join(PAIRS)}.")
        automodel, megatron = PAIRS[name]
        base = row_terms(automodel)
        for run_id in megatron:
            row = row_terms(run_id)
            published, ours = row["published"] - base["published"], row["ours"] - base["ours"]
            cells = [row["compute"][k] - base["compute"][k] for k in KINDS] + \
                [row["parts"][k] - base["parts"][k] for k in PARTS]
            lines.append(f"| {name}: {run_id.split(' ', 1)[1]} | {published:+.2f} | {ours:+.2f} | "
                         f"{published - ours:+.2f} | " + " | ".join(f"{c:+.2f}" for c in cells) + " |")
    return lines


USAGE = "usage: python validate/moe_pairs.py [--pair NAME ...] [--json | --diff]"


def main(argv: list[str]) -> int:
    names, as_json, diff, args = [], False, False, list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--pair" and args:
            names.append(args.pop(0))
        elif arg == "--json":
            as_json = True
        elif arg == "--diff":
            diff = True
        else:
            print(f"error: {arg!r} is not an option; {USAGE}", file=sys.stderr)
            return 2
    try:
        names = names or list(PAIRS)
        if diff:
            print("\n".join(diff_table(names)))
        elif as_json:
            print(json.dumps({n: [row_terms(r) for r in (PAIRS[n][0], *PAIRS[n][1])] if n in PAIRS else pair_table(n)
                              for n in names}, indent=1))
        else:
            for name in names:
                print("\n".join(pair_table(name)) + "\n")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
