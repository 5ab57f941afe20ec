"""Published per-component splits of dense training steps beside the kernel model's split of the
same run (issue 18, session 35: which component of a dense training step is short). The
published figures are data (validate/published_breakdowns.json, typed from their sources first);
this module only computes ours and prints both.

    PYTHONPATH=. python validate/published_breakdowns.py

Korthikanti et al. Table 4 (one 22B layer's forward and backward on A100, five recompute and
sequence-parallel settings, TP 8): ours per layer = the layer's kernels (forward; backward with the
recomputed forward), its launches (the backward's two passes and the recomputed forward's, as StepTime.compute
counts them), and its
tensor-parallel collectives at the model's per-call seconds, the forward's (2 all-reduces, or 2
all-gathers and 2 reduce-scatters under sequence parallelism) apart from the backward's and the
recomputed forward's. The rest of the iteration (embedding, head, loss, optimizer) is the step
less the layers. Lumos Figure 1 (GPT-3 175B, TP 8 PP 4 DP 8, H100) states no batch or precision:
only the share of the step that is not compute is compared, under the stated guess below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_time import kernels_seconds
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
from costmodel.layout.overlap import Overlap
from costmodel.layout.roofline_parts import leaf_factor

DATA = Path(__file__).with_name("published_breakdowns.json")
LAYER = "decoder.layer"  # the tree's path of a transformer layer's leaves


def published() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def korthikanti_22b(recompute: str, sp: bool) -> tuple[ParallelEstimate, KernelStepTime]:
    """Table 3's 22B layout (TP 8, one micro-batch of 4 sequences of 2,048) as Table 5's rows are built."""
    from reports.published_runs import SEQUENCE, gpt

    cfg = gpt("22B", 64, 6144, 48)
    workload = Workload(seq_len=SEQUENCE, batch=4, dtype="bf16", impl="megatron", recompute=recompute)
    layout = Layout(tp=8, pp=1, dp=1, microbatches=1, framework="megatron", sp=sp)
    estimate = ParallelEstimate(cfg, workload, layout)
    return estimate, KernelStepTime(estimate, load_hardware("a100-80gb"))


def layer_split(estimate: ParallelEstimate, step_time: KernelStepTime) -> dict[str, float]:
    """One layer's forward and backward (ms) under the kernel model, each as kernels, launches and
    tensor-parallel collectives; and the step's seconds and its rest beyond the layers."""
    timer, stage = step_time.timer, estimate.stages[0]
    layers = step_time.part_runs(stage)["layer.decoder"]  # the layers this rank runs a micro-batch
    forward = backward = 0.0
    entries = rank_kernels(estimate, timer.fused_attention, timer.compiled)
    for (_, rerun, _, kernels), leaf in zip(entries, estimate.structure["work"]):
        if not leaf["path"].startswith(LAYER):
            continue
        factor = leaf_factor(leaf, estimate)
        once = kernels_seconds(kernels, timer)
        forward += factor * once
        backward += factor * (kernels_seconds(kernels, timer, training=True) - once + kernels_seconds(rerun, timer))
    active = step_time.part_seconds["layer.decoder"][1]
    launch = active * step_time.overhead_s  # a pass's; the backward counts two (StepTime.compute)
    rerun = step_time.part_reruns.get("layer.decoder", 0) * step_time.overhead_s  # and the recomputed forward's
    calls: dict[str, int] = {}
    payloads: dict[str, float] = {}
    for kind, count, payload in (estimate.tensor_parallel_collectives(stage) + estimate.recomputed_collectives(stage)):
        if kind in ("all_reduce", "all_gather", "reduce_scatter"):
            calls[kind] = calls.get(kind, 0) + count
            payloads[kind] = payload
    one = {kind: step_time.collective("tp", kind, payloads[kind]) for kind in calls}
    forward_kinds = ("all_gather", "reduce_scatter") if estimate.layout.sp else ("all_reduce",)
    tp_forward = sum(2 * one[kind] for kind in forward_kinds)
    tp_layer = sum((calls[kind] // layers) * one[kind] for kind in calls)  # the embedding's and head's apart
    step = step_time.step()
    out = {"forward_kernels_ms": 1e3 * forward, "backward_kernels_ms": 1e3 * backward,  # one layer's leaves
           "forward_launch_ms": 1e3 * launch, "backward_launch_ms": 1e3 * (2 * launch + rerun),
           "forward_tp_ms": 1e3 * tp_forward, "backward_tp_ms": 1e3 * (tp_layer - tp_forward), "step_s": step["seconds"]}
    out["forward_ms"] = out["forward_kernels_ms"] + out["forward_launch_ms"] + out["forward_tp_ms"]
    out["backward_ms"] = out["backward_kernels_ms"] + out["backward_launch_ms"] + out["backward_tp_ms"]
    out["rest_s"] = step["seconds"] - layers * (out["forward_ms"] + out["backward_ms"]) / 1e3
    out["optimizer_s"] = step["optimizer_seconds"]
    return out


def korthikanti_table() -> list[dict[str, Any]]:
    """Table 4's rows, published and ours, with the iteration's rest where Table 5 gives it."""
    table = published()["korthikanti_table_4"]
    rows = []
    for row in table["rows"]:
        ours = layer_split(*korthikanti_22b(row["recompute"], row["sp"]))
        iteration = table["iteration_s"].get(row["experiment"])
        rest = None if iteration is None else iteration - 48 * (row["forward_ms"] + row["backward_ms"]) / 1e3
        rows.append({**row, "ours": ours, "published_iteration_s": iteration, "published_rest_s": rest})
    return rows


# What-if, not the model's default: Korthikanti's Table 5 rows under the two mechanisms Table 4 points
# at, both read in Megatron-LM's code of the paper's time. (1) The column-parallel linears' backward
# collectives run under its GEMMs: megatron/mpu/layers.py at NVIDIA/Megatron-LM 02bb1f5c,
# ColumnParallelLinearWithAsyncAllreduce.backward (the input gradient's all-reduce async under the
# weight-gradient GEMM) and ColumnParallelLinearWithSequenceParallelism.backward (the input's
# all-gather under the input-gradient GEMM, the input gradient's reduce-scatter under the
# weight-gradient GEMM): 2 all-reduces a layer, or 2 all-gathers + 2 reduce-scatters, of the
# micro-batch's collectives, as Overlap.tp's share. (2) Megatron-LM's passes over its fp32 gradient
# buffer once a step that Layout.optimizer_step "fused" leaves out: zero_grad_buffer's zero_ (write 4),
# DistributedDataParallel.allreduce_gradients' `buffer_.data /= dp` even at dp 1 (read 4, write 4;
# megatron/model/distributed.py at 01d65bde) and clip_grad_norm's multi_tensor_l2norm (read 4), as
# layout/megatron_step.py prices them for Megatron-Core (no NaN-check norm before Megatron-Core).
MEGATRON_2022_STEP_BYTES = 4 + 8 + 4


def korthikanti_what_if() -> list[dict[str, Any]]:
    """Table 5's rows: published seconds, ours, ours with (1), ours with (1) and (2)."""
    from reports.published_runs import korthikanti_runs

    hardware = load_hardware("a100-80gb")
    rows = []
    for row, key, cfg, workload, layout in korthikanti_runs():
        estimate = ParallelEstimate(cfg, workload, layout)
        plain = KernelStepTime(estimate, hardware)
        stage = estimate.stages[0]
        calls = {kind: count for kind, count, _ in estimate.tensor_parallel_collectives(stage)}
        payloads = {kind: payload for kind, _, payload in estimate.tensor_parallel_collectives(stage)}
        hidden_kinds = ("all_gather", "reduce_scatter") if layout.sp else ("all_reduce",)
        layers = plain.part_runs(stage)["layer.decoder"]
        hidden = 2 * layers * sum(plain.collective("tp", kind, payloads[kind]) for kind in hidden_kinds if kind in calls)
        share = hidden / plain.tensor_parallel(stage)[0]
        overlapped = KernelStepTime(estimate, hardware, overlap=Overlap(tp=share))
        step = overlapped.step()
        slowest = estimate.stages[step["slowest_stage"]]
        passes = MEGATRON_2022_STEP_BYTES * overlapped.rank_params(slowest) / overlapped.bytes_per_s
        rows.append({"model": row[0], "key": key, "published_s": row[9] if key == "full" else row[10],
                     "ours_s": plain.step()["seconds"], "overlap_share": share, "overlapped_s": step["seconds"],
                     "both_s": step["seconds"] + passes})
    return rows


# Lumos Figure 1 states no batch and no precision: the guess compared (not a published row) is one
# sequence a micro-batch and TP x PP = 32 micro-batches (its Figure 4 caption's assumption), bf16,
# sequence parallelism and the distributed optimizer (NVIDIA's MLPerf GPT-3 configs), the TP
# collectives exposed or hidden (ub_tp_comm_overlap unknown at its 'defaults').
LUMOS_MICROBATCHES = 32


def lumos_gpt3_share(tp_hidden: float) -> dict[str, float]:
    """Ours for Lumos's GPT-3 175B at TP 8 PP 4 DP 8 on H100 SXM: the step and its share that is
    not compute (exposed communication, bubble), against Lumos's exposed communication + idle."""
    from reports.published_runs import SEQUENCE, gpt

    cfg = gpt("175B", 96, 12288, 96)
    workload = Workload(seq_len=SEQUENCE, batch=1, dtype="bf16", impl="megatron", recompute="none")
    layout = Layout(tp=8, pp=4, dp=8, microbatches=LUMOS_MICROBATCHES, framework="megatron", sp=True, zero=1)
    estimate = ParallelEstimate(cfg, workload, layout)
    step = KernelStepTime(estimate, load_hardware("h100-sxm"), overlap=Overlap(tp=tp_hidden)).step()
    exposed = sum(step["exposed_communication_seconds"].values())
    idle = exposed + step["bubble_seconds"]
    return {"step_s": step["seconds"], "compute_s": step["seconds"] - idle, "exposed_s": exposed,
            "bubble_s": step["bubble_seconds"], "not_compute_share": idle / step["seconds"]}


def main() -> None:
    print("Korthikanti et al. Table 4: one 22B layer (TP 8, micro-batch 4, A100), ms, published / ours "
          "(ours = kernels + launches + TP collectives)")
    for row in korthikanti_table():
        o = row["ours"]
        print(f"  {row['experiment']:<24} forward {row['forward_ms']:5.1f} / {o['forward_ms']:5.2f} "
              f"({o['forward_kernels_ms']:.2f} + {o['forward_launch_ms']:.2f} + {o['forward_tp_ms']:.2f})   "
              f"backward {row['backward_ms']:5.1f} / {o['backward_ms']:5.2f} ({o['backward_kernels_ms']:.2f} + "
              f"{o['backward_launch_ms']:.2f} + {o['backward_tp_ms']:.2f})")
        if row["published_iteration_s"] is not None:
            print(f"  {'':<24} iteration {row['published_iteration_s']:.2f} / {o['step_s']:.3f} s; beyond the 48 "
                  f"layers {row['published_rest_s']:.3f} / {o['rest_s']:.3f} s (ours: optimizer {o['optimizer_s']:.3f})")
    print("Korthikanti et al. Table 5 what-if (not the model's default): speed ratios published / ours, ours with "
          "the backward's overlapped TP collectives (share of the TP time), and with Megatron-LM's gradient-buffer passes too")
    for r in korthikanti_what_if():
        print(f"  {r['model']:>4} {r['key']:<7} published {r['published_s']:6.2f} s: ours {r['published_s'] / r['ours_s']:.3f}, "
              f"overlap ({r['overlap_share']:.2f}) {r['published_s'] / r['overlapped_s']:.3f}, "
              f"both {r['published_s'] / r['both_s']:.3f}")
    actual = published()["lumos_figure_1"]["actual_ms"]
    total = sum(actual.values())
    share = (actual["exposed_communication"] + actual["other_idle"]) / total
    print(f"Lumos Figure 1, GPT-3 175B TP 8 PP 4 DP 8 on 256 H100: {total} ms, not compute {share:.1%} "
          f"(exposed communication {actual['exposed_communication']} + idle {actual['other_idle']} ms); ours, "
          f"guessing {LUMOS_MICROBATCHES} micro-batches of one sequence, bf16:")
    for hidden in (0.0, 1.0):
        ours = lumos_gpt3_share(hidden)
        print(f"  TP collectives {'hidden' if hidden else 'exposed'}: step {ours['step_s']:.2f} s, not compute "
              f"{ours['not_compute_share']:.1%} (exposed communication {ours['exposed_s']:.2f} s, bubble "
              f"{ours['bubble_s']:.2f} s)")


if __name__ == "__main__":
    main()
