"""Where the kernel-level time model spends each published run's time (issue 18, second round):
per run, the kernels that dominate, so a ratio in `python cli.py published` can be traced to
one assumption. Batch-1 decoding on one GPU: one decode step split into weight GEMMs, attention
calls, memory-bound kernels and launches, with the weights' effective bandwidth; decoding with
tensor parallelism: compute against all-reduce; training: compute, exposed communication, bubble
and optimizer of the step.

    PYTHONPATH=. python validate/time_breakdown.py
    PYTHONPATH=. python validate/time_breakdown.py --training   # training steps, kernel by kernel, and
                                                                # every pipelined published row's split
    PYTHONPATH=. python validate/time_breakdown.py --row "megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xgb200"
                                                                # one published training row (repeatable),
                                                                # its published step beside ours (a decoding
                                                                # row: its step's split)
    PYTHONPATH=. python validate/time_breakdown.py --leaves --row "megatron-bridge-moe 26.04.01 nemotron-3-nano mxfp8 8xgb200"
                                                                # the same, and its kernels by leaf (a Mamba-2
                                                                # mixer's SSD kernels by name)

No GPU needed; nothing here is fitted (docs/time.md, validate/FINDINGS.md "Issue 18").
"""

from __future__ import annotations

import difflib
from collections import defaultdict

from costmodel.config import ConfigError, Workload
from costmodel.eager_ops import decode_step_ops, step_ops
from costmodel.kernel_time import layer_windows_seconds
from costmodel.kernel_facts_file import fuses_qkv
from costmodel.kernel_time import (AttentionCall, Gemm, KernelTimer, MatmulCompute, inference_subs, kernels_seconds,
                                   launches_of, leaf_kernels)
from costmodel.attention_kernels import DEFAULT_KERNEL
from costmodel.layout import Layout
from costmodel.roofline import Roofline
from reports.published_decode import decode_layout_run, decode_setup, vllm_host_time
from reports.published_runs import (kernel_options, other_runs_data, stated, train_gpu_hours, train_run, train_setup,
                                     train_tokens)


def decode_step_split(run: dict, source: dict, context: int) -> dict[str, float]:
    """Seconds of one batch-1 decode step at `context` keys by kernel kind (one GPU)."""
    cfg, hardware, settings, quantization = decode_setup(run, source)
    dtype, attention, graphs = settings["dtype"], settings["attention"], settings["cuda_graphs"]
    roof = Roofline(cfg, hardware, dtype, None, attention, settings["kv_cache"], graphs, quantization)
    # a compiled row (simulate --compile): torch.compile's fused kernels, and no eager host term
    timer = KernelTimer(hardware, dtype, attention, cuda_graphs=graphs, compiled=settings["compiled"],
                        fused_qkv=fuses_qkv(settings["implementation"]))
    subs = inference_subs(cfg, dtype, settings["batch"], 1, context=context)
    split: dict[str, float] = defaultdict(float)
    weight_bytes = 0.0
    for leaf in roof.decoder_tree().leaves:
        count = int(float(leaf.count.xreplace(subs))) if hasattr(leaf.count, "xreplace") else int(leaf.count)
        kernels = leaf_kernels(leaf, subs, timer.fused_attention, compiled=timer.compiled, fused_qkv=timer.fused_qkv)
        for kernel in kernels:
            kind = ("weight GEMMs" if isinstance(kernel, (Gemm, MatmulCompute)) else
                    "attention" if isinstance(kernel, AttentionCall) else "memory-bound")
            # a GEMM's or attention call's fixed start from DRAM (hardware.dram_kernel_startup_s), apart
            startup = timer.dram_startup_s if isinstance(kernel, (Gemm, AttentionCall)) else 0.0
            split[kind] += count * (kernels_seconds([kernel], timer) - startup)
            split["DRAM startups"] += count * startup
            if isinstance(kernel, Gemm):
                weight_bytes += count * (kernel.weight_bytes if kernel.weight_bytes is not None
                                         else timer.element_bytes * kernel.k * kernel.n)
        split["launches"] += count * timer.launch_seconds(launches_of(leaf, len(kernels), timer.compiled))
    split["weights GB/s"] = weight_bytes / split["weight GEMMs"] / 1e9
    ops = step_ops(cfg, settings["implementation"], roof.dtype, attention, settings["kv_cache"], quantization)
    host = timer.host_seconds(ops)
    counted = decode_step_ops(cfg, settings["implementation"], roof.dtype, attention, settings["kv_cache"],
                              quantization, settings["sampling"])
    if host is not None and counted is not None and counted.syncs_per_layer:
        # every layer reads the GPU (lit-gpt d16f924d): the host's issue time runs alongside a layer's kernels only,
        # and the step is one window a layer and one for the rest (the rule simulate takes, KernelSteps.decode_curve)
        layers = cfg.n_layers
        serial = counted.windows.serial if counted.windows else None
        split["host (eager ops, a window a layer)"] = host
        split["step (its windows)"] = layer_windows_seconds(roof.decoder_tree().leaves, subs, timer, layers,
                                                            counted.layers // layers, ops, serial, 0.0)
    elif host is not None:
        # an eager step on a GPU: the host's issue time, which runs alongside the rest (the step
        # takes the longer: kernel_time.host_bound_seconds; its launches are not charged then)
        split["host (eager ops, alongside)"] = host
    return dict(split)


def train_step_kernels(estimate, hardware, overlap=None, autocast=False, compiled=False, attention_kernel=DEFAULT_KERNEL,
                       moe_op_fuser=False, host_syncs=(), by_leaf: dict | None = None
                       ) -> tuple[dict, list[tuple[str, float, float | None]]]:
    """A training step under the kernel model (issue 18, fourth round): the step's parts
    (KernelStepTime.step()) and, for the first pipeline stage, each kernel's seconds per step
    (forward, backward and recomputed forward, all micro-batches), GEMMs by shape with the
    fraction of the peak they run at. Layouts without context or expert parallelism (their
    per-leaf factors are left out here). `by_leaf`, where given, gathers the same seconds by the
    leaf's path, a one-pass kernel (a Mamba-2 mixer's SSD kernels) under its path and name."""
    from costmodel.kernel_shapes import PassKernel
    from costmodel.kernel_time import Pointwise, kernels_seconds
    from costmodel.layout.kernel_step import KernelStepTime, cast_kernel, rank_kernels
    from costmodel.layout.roofline_parts import runs_fp8

    step_time = KernelStepTime(estimate, hardware, overlap=overlap, autocast=autocast, compiled=compiled,
                               attention_kernel=attention_kernel, moe_op_fuser=moe_op_fuser, host_syncs=host_syncs)
    step, timer = step_time.step(), step_time.timer
    runs = step_time.part_runs(estimate.stages[0])
    microbatches = estimate.layout.microbatches
    seconds: dict[str, float] = defaultdict(float)
    flops: dict[str, float] = defaultdict(float)
    work = estimate.structure["work"]
    for (key, rerun, _, kernels), leaf in zip(rank_kernels(estimate, timer.fused_attention, timer.compiled), work):
        times = runs.get(key, 0) * microbatches
        if runs_fp8(leaf, estimate):  # the FP8 recipe's casts beside the leaf's GEMMs (layout/fp8.py)
            for listed, training in ((kernels, True), (rerun, False)):
                casts = cast_kernel([k for k in listed if isinstance(k, Gemm)], step_time.casts, not training)
                seconds["FP8 casts"] += times * kernels_seconds(casts, timer, training=training)
        # each kernel's forward and backward, then the forwards recomputation reruns
        for kernel, training in [*((k, True) for k in kernels), *((k, False) for k in rerun)]:
            if isinstance(kernel, Gemm):
                label = f"GEMM {kernel.m}x{kernel.n}x{kernel.k}" + (f" x{kernel.count}" if kernel.count > 1 else "")
                # the forward and, in training, the backward's two products of its size
                flops[label] += times * kernel.flops * (3 if training else 1)
            elif isinstance(kernel, AttentionCall):
                label = "fused attention"
            else:
                label = "memory-bound kernels" if isinstance(kernel, Pointwise) else "other products"
            spent = times * kernels_seconds([kernel], timer, training=training)
            seconds[label] += spent
            if by_leaf is not None:
                path = leaf["path"] + (f" {kernel.name}" if isinstance(kernel, PassKernel) else "")
                by_leaf[path] = by_leaf.get(path, 0.0) + spent
    rows = [(label, s, flops[label] / s / timer.peak if label in flops else None)
            for label, s in sorted(seconds.items(), key=lambda item: -item[1]) if s > 0]  # a part the stage runs
    return step, rows


def step_split(step: dict) -> str:
    """A training step's seconds and their split (StepTime.step())."""
    exposed = step["exposed_communication_seconds"]
    return (f"step {step['seconds']:.3f} s = compute {step['compute_seconds']:.3f} + "
            + "".join(f"{group} {exposed[group]:.3f} + " for group in ("tp", "ep", "cp", "pp") if group in exposed)
            + f"dp {exposed['dp']:.3f} + bubble {step['bubble_seconds']:.3f} + optimizer "
            f"{step['optimizer_seconds']:.3f} + gradient accumulation {step['gradient_accumulation_seconds']:.3f}"
            + (f" + autocast casts {step['autocast_seconds']:.3f}" if step["autocast_seconds"] else "")
            + (f" + DTensor copies {step['dtensor_copy_seconds']:.3f}" if step.get("dtensor_copy_seconds") else ""))


def pipeline_split(estimate, step_time) -> str:
    """The slowest stage's pipeline exchange per step: the sends (over the network) and the
    scatter/gather all-gathers (over the tensor-parallel group), and the tied-embedding all-reduce."""
    stage = estimate.stages[step_time.step()["slowest_stage"]]
    m = estimate.layout.microbatches
    crossings, sent, _ = estimate.pipeline_exchange(stage)  # (for the message)
    sends, gathers = (m * seconds for seconds in step_time.pipeline_parts(stage))
    tied = max(step_time.tied_embedding(s) for s in (estimate.stages[0], estimate.stages[-1]))
    return (f"pp = sends {sends:.3f} ({crossings} a micro-batch, {sent / 1e6:.1f} MB each) + gathers {gathers:.3f} "
            f"+ tied-embedding all-reduce {tied:.3f}")


def pipelined_splits() -> None:
    """Every pipelined row of Narayanan et al.'s Table 1 and Korthikanti et al.'s Table 5 under
    the kernel model: the step's split and the pipeline exchange's (issue 18, pipelined runs)."""
    from costmodel.hardware import load_hardware
    from costmodel.layout import ParallelEstimate
    from costmodel.layout.kernel_step import KernelStepTime
    from reports.published_runs import korthikanti_runs, narayanan_runs

    hardware = load_hardware("a100-80gb")
    for row, cfg, workload, layout, overlap in narayanan_runs():
        if layout.pp == 1:
            continue
        estimate = ParallelEstimate(cfg, workload, layout)
        step_time = KernelStepTime(estimate, hardware, overlap=overlap)
        step = step_time.step()
        print(f"Narayanan {row[0]}B (tp {layout.tp} pp {layout.pp} v {layout.virtual_stages} dp {layout.dp}, "
              f"m {layout.microbatches}): ours / published {step['tflops_per_gpu'] / row[8]:.3f}; {step_split(step)}")
        print(f"  {pipeline_split(estimate, step_time)}")
    for row, key, cfg, workload, layout in korthikanti_runs():
        if layout.pp == 1:
            continue
        estimate = ParallelEstimate(cfg, workload, layout)
        step_time = KernelStepTime(estimate, hardware)
        step = step_time.step()
        published = row[9] if key == "full" else row[10]
        print(f"Korthikanti {row[0]} {key} (pp {layout.pp} v {layout.virtual_stages}, m {layout.microbatches}): "
              f"published {published} s, ours / published (speed) {published / step['seconds']:.3f}; {step_split(step)}")
        print(f"  {pipeline_split(estimate, step_time)}")


def print_train_breakdown(name: str, published: float, estimate, hardware, overlap=None, autocast=False,
                          compiled=False, unit: str = "TFLOP/s", attention_kernel: str = DEFAULT_KERNEL,
                          moe_op_fuser: bool = False, host_syncs=(), leaves: bool = False) -> None:
    """One training step's split and its first stage's kernels; `published` in `unit` (TFLOP/s
    per GPU, or tokens/s per GPU beside ours from the step's seconds); `leaves`: the same kernels'
    seconds by leaf after them."""
    by_leaf: dict[str, float] | None = {} if leaves else None
    step, rows = train_step_kernels(estimate, hardware, overlap, autocast, compiled, attention_kernel, moe_op_fuser,
                                    host_syncs, by_leaf)
    if unit == "TFLOP/s":
        ours = f"{step['tflops_per_gpu']:.1f} (hardware FLOPs)"
    else:
        rate = step["tokens_per_second"] / estimate.layout.gpus  # the step's tokens (an encoder-decoder's: its decoder's)
        ours = f"{rate:,.0f} ({rate / published:.2f}x)"
    print(f"{name}: published {published:,} {unit}, ours {ours}; {step_split(step)}")
    kernels = sum(s for _, s, _ in rows)
    rest = step["compute_seconds"] - kernels
    if estimate.layout.pp == 1 and estimate.layout.fp8 is None:
        print(f"  kernels {kernels:.3f} s, launches {rest:.3f} s")
    else:  # the list is the first stage's, at the activation dtype's rates
        print(f"  kernels {kernels:.3f} s (the first stage's, every GEMM at the {estimate.workload.dtype} rate), "
              f"compute less these {rest:.3f} s (launches"
              + (", the slowest stage's extra layers" if estimate.layout.pp > 1 else "")
              + (", the FP8 GEMMs' saving" if estimate.layout.fp8 else "") + ")")
    for label, s, efficiency in rows:
        print(f"  {s:8.3f} s  {label}" + (f"  at {efficiency:.3f} of peak" if efficiency else ""))
    if by_leaf:
        print("  by leaf (the kernels above, the FP8 casts apart):")
        for path, s in sorted(by_leaf.items(), key=lambda item: -item[1]):
            if s > 0:
                print(f"  {s:8.3f} s  {path}")


def training_breakdowns() -> None:
    """Narayanan et al.'s 7.5B row (tp 4, dp 32) and every training run of published_runs.json but
    Llama 3's (pipelined_splits has those), kernel by kernel."""
    from costmodel.hardware import load_hardware
    from costmodel.layout import ParallelEstimate
    from costmodel.layout.time import Overlap
    from costmodel.published import NARAYANAN_DDP, NARAYANAN_DP_OVERLAP, NARAYANAN_TABLE_1
    from reports.published_runs import gpt

    for billions, heads, hidden, layers, tp, pp, gpus, batch, tflops, _, micro, v in NARAYANAN_TABLE_1:
        if billions != 7.5:
            continue
        dp = gpus // (tp * pp)
        layout = Layout(tp=tp, pp=pp, dp=dp, microbatches=batch // (micro * dp), framework="megatron",
                        schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
        workload = Workload(seq_len=2048, batch=micro, dtype="fp16", impl="megatron", recompute="full")
        print_train_breakdown(f"Narayanan et al. Table 1, {billions}B ({tp} x {pp} x {dp})", tflops,
                              ParallelEstimate(gpt(f"gpt-{billions}b", heads, hidden, layers), workload, layout),
                              load_hardware("a100-80gb"),
                              Overlap(dp=NARAYANAN_DP_OVERLAP[NARAYANAN_DDP[billions]]))
    data = other_runs_data()
    for run in data["runs"]:
        if run["kind"] != "train" or run["id"].startswith("llama3"):  # the llama3 rows: pipelined_splits
            continue
        try:
            estimate, hardware, options = train_setup(run, data["sources"][run["id"].split()[0]])
        except ConfigError as error:  # a layout the model cannot express (other_runs says so too)
            print(f"{run['id']}: not expressible: {error}")
            continue
        if "published_tflops_per_gpu" in run:
            print_train_breakdown(run["id"], run["published_tflops_per_gpu"], estimate, hardware, **options)
        elif "published_gpu_hours" in run:  # the rate a whole run's GPU-hours imply: its tokens a GPU-second
            implied = round(run["tokens"] / (run["published_gpu_hours"] * 3600), 1)
            print_train_breakdown(run["id"], implied, estimate, hardware,
                                  unit="tokens/s per GPU (the published GPU-hours')", **options)
        else:
            print_train_breakdown(run["id"], run["published_tokens_per_s_per_gpu"], estimate, hardware,
                                  unit="tokens/s per GPU", **options)


def published_step_seconds(run: dict, source: dict) -> float | None:
    """The step time a tokens-a-second-a-GPU row publishes: its global batch's tokens a GPU over the
    published rate (None for a row published in another unit). A sequence's tokens as the step counts them:
    an encoder-decoder's decoder length, the run's tgt_len or else its source's, as train_setup reads it
    (stated); a run that left it to its source was priced at seq_len here, 4x a T5 row's 128."""
    if "published_tokens_per_s_per_gpu" not in run or "global_batch" not in run:
        return None
    tokens = stated(run, source, "tgt_len") or run["seq_len"]
    return run["global_batch"] * tokens / run["gpus"] / run["published_tokens_per_s_per_gpu"]


def row_breakdowns(run_ids: list[str], leaves: bool = False) -> None:
    """Each named training row of published_runs.json: its published step (where the rate is in
    tokens a second a GPU) and the kernel model's split of its step, kernel by kernel (and by leaf,
    `leaves`); a decoding row: its one line of the listing (the step's kernels by kind and the host's
    eager ops)."""
    data = other_runs_data()
    runs = {run["id"]: run for run in data["runs"] if run["kind"] in ("train", "decode")}
    for run_id in run_ids:
        if run_id not in runs:
            near = difflib.get_close_matches(run_id, runs, n=3, cutoff=0.8)
            raise ConfigError(f"no published training or decoding row is named {run_id!r}"
                              + (f"; did you mean {' or '.join(map(repr, near))}?" if near else "")
                              + " (the ids are the first column of `python cli.py published`, and "
                              "costmodel/published_runs.json's \"id\").")
        if leaves and runs[run_id]["kind"] == "decode":  # it was ignored: the by-leaf split is a training step's
            raise ConfigError(f"--leaves splits a training row's kernels by leaf; {run_id!r} is a decoding row: drop "
                              f"--leaves for its step's split. {USAGE}")
    for run_id in run_ids:
        run = runs[run_id]
        if run["kind"] == "decode":  # its step split, as the listing without options prints it
            _print_run(run, data["sources"][run_id.split()[0]])
            continue
        source = data["sources"][run_id.split()[0]]
        estimate, hardware, options = train_setup(run, source)
        # as `published` prices the row (wt40_unseent: a recipe's TP overlap as TE's userbuffers ops, which the
        # flat Overlap.tp 1 of train_setup had hidden whole here, 5-8% faster than `published` on MLPerf GPT-3)
        options = kernel_options(run, source, estimate, hardware, options)
        layout = estimate.layout
        seconds = published_step_seconds(run, source)
        print(f"{run_id}: tp {layout.tp} pp {layout.pp} dp {layout.dp} ep {layout.ep}, micro-batch "
              f"{estimate.workload.batch} x {layout.microbatches}, {hardware.name}"
              + (f"; published step {seconds:.3f} s" if seconds is not None else ""))
        if "published_tokens_per_s_per_gpu" in run:
            print_train_breakdown(run_id, run["published_tokens_per_s_per_gpu"], estimate, hardware,
                                  unit="tokens/s per GPU", leaves=leaves, **options)
        elif "published_gpu_hours" in run:  # the run's mean rate: its tokens over its GPU-hours
            print_train_breakdown(run_id, round(run["tokens"] / (run["published_gpu_hours"] * 3600)), estimate,
                                  hardware, unit="tokens/s per GPU (the published GPU-hours' mean)", leaves=leaves,
                                  **options)
        else:
            print_train_breakdown(run_id, run["published_tflops_per_gpu"], estimate, hardware, leaves=leaves,
                                  **options)


def _published(run: dict) -> str:
    """A run's published figure with its unit, as the lines below print it."""
    for key, unit in (("published_tokens_per_s", "tokens/s"), ("published_tflops_per_gpu", "TFLOP/s"),
                      ("published_gpu_hours", "GPU-hours"), ("published_tokens_per_s_per_gpu", "tokens/s a GPU")):
        if key in run:
            return f"{run[key]:,} {unit}"
    return "no figure"


def main() -> None:
    data = other_runs_data()
    for run in data["runs"]:
        try:
            _print_run(run, data["sources"][run["id"].split()[0]])
        except ConfigError as error:  # a run the model cannot express (`published` says so too)
            print(f"{run['id']}: published {_published(run)}; not expressible: {error}")


def _print_run(run: dict, source: dict) -> None:
    """One line: the run's published figure beside the kernel model's split or figure."""
    if run["kind"] == "decode" and run["tp"] == 1:
        _, _, settings, _ = decode_setup(run, source)
        split = decode_step_split(run, source, context=settings["prompt"] + settings["gen"] // 2)
        published_ms = 1e3 / run["published_tokens_per_s"]
        parts = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in split.items() if k != "weights GB/s")
        print(f"{run['id']}: published {published_ms:.2f} ms a token; ours {parts}; "
              f"weights at {split['weights GB/s']:.0f} GB/s" + _vllm_host(run, source))
    elif run["kind"] == "decode":  # a layout (quantized weights: each rank's shards as stored)
        token = decode_layout_run(run, source, "kernels")["token"]
        print(f"{run['id']}: published {1e3 / run['published_tokens_per_s']:.2f} ms a token; ours compute "
              f"{token['compute_seconds'] * 1e3:.2f} ms, all-reduce {token['tp_all_reduce_seconds'] * 1e3:.2f} ms"
              + _vllm_host(run, source))
    if run["kind"] != "train":
        return
    if "published_tflops_per_gpu" in run:
        print(f"{run['id']}: published {run['published_tflops_per_gpu']} TFLOP/s; ours "
              f"{train_run(run, source, 'kernels'):.0f} (kernel model)")
    elif "published_gpu_hours" in run:  # a whole run's hours
        print(f"{run['id']}: published {run['published_gpu_hours']:,} GPU-hours; ours "
              f"{train_gpu_hours(run, source, 'kernels'):,.0f} (kernel model)")
    else:
        print(f"{run['id']}: published {run['published_tokens_per_s_per_gpu']:,} tokens/s a GPU; ours "
              f"{train_tokens(run, source, 'kernels'):,.0f} (kernel model)")


def _vllm_host(run: dict, source: dict) -> str:
    """A vLLM decoding row's host time a step where its release is stated (published_decode.vllm_host_time, what
    `published` adds to each step beside the kernels): H(b) at its batch, the part the GPU waits for and the
    part beside the next step's kernels; "" for any other row."""
    host = vllm_host_time(run, source)
    if host is None:
        return ""
    batch = decode_setup(run, source)[2]["batch"]
    total = host.seconds(batch)
    return (f"; + vLLM {stated(run, source, 'vllm_release')}'s host time a step ({host.version}) at {batch} sequences: "
            f"{total * 1e3:.3f} ms, {total * (host.serial + host.decision) * 1e3:.3f} waited, "
            f"{total * host.overlapped * 1e3:.3f} beside the next step's kernels")


USAGE = ("usage: python validate/time_breakdown.py [--training | --row ID ... [--leaves]]: every published run's "
         "kernels (no option), Narayanan's and FlashAttention-2's training kernels and the pipelined "
         "splits (--training), or one published training row's layout and split, or a decoding row's step "
         "(--row ID, repeatable; --leaves adds a training row's kernels by leaf).")

def parse(argv: list[str]) -> tuple[str, list[str], bool]:
    """What the arguments ask: ("all", [], False), ("training", [], False) or ("rows", IDS, LEAVES);
    anything else, a bare word (an id without --row before it), --training beside --row or --leaves
    without --row included, is one ConfigError line (they were dropped: `--row ID extra` explained ID
    alone, `extra` every run)."""
    ids, training, leaves, rest = [], False, False, list(argv)
    while rest:
        argument = rest.pop(0)
        if argument == "--row":
            if not rest:
                raise ConfigError("--row needs a published training or decoding row's id after it.")
            ids.append(rest.pop(0))
        elif argument == "--training":
            training = True
        elif argument == "--leaves":
            leaves = True
        else:
            raise ConfigError((f"unknown option {argument!r}. " if argument.startswith("-") else
                               f"unexpected argument {argument!r}: an id goes after --row, in quotes where it has "
                               "spaces (--row \"gpt-fast llama2-7b tp2\"). ") + USAGE)
    if training and ids:
        raise ConfigError(f"--training lists every training row; --row names some: give one of them. {USAGE}")
    if leaves and not ids:
        raise ConfigError(f"--leaves splits the rows --row names: name one. {USAGE}")
    return ("rows", ids, leaves) if ids else ("training" if training else "all", [], False)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] in (["--help"], ["-h"]):
        print(USAGE)
        sys.exit(0)
    try:
        mode, named, by_leaf = parse(sys.argv[1:])
        if mode == "rows":
            row_breakdowns(named, by_leaf)
    except ConfigError as error:
        print(error, file=sys.stderr)
        sys.exit(2)
    if mode == "training":
        training_breakdowns()
        pipelined_splits()
    elif mode == "all":
        main()
