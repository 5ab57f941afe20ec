"""Published training runs beside the layout model: Narayanan et al. 2021 (Table 1) and
Korthikanti et al. 2022 (Table 5), the data in costmodel/published.py.

Each run is rebuilt as a ModelConfig (GPT: learned positions, LayerNorm, GeLU, tied output layer)
and a Layout with its own sizes (Megatron's conventions, its activation profile, fp16/bf16 on the
a100-80gb preset at its default efficiencies: 0.7 of the matmul peak, 0.8 of the bandwidth), and
the step time, TFLOP/s per GPU, MFU and HFU come from costmodel.layout.time. `python cli.py
published` prints the tables the README quotes. The other published rows (costmodel/published_runs.json) are
listed here too (other_runs): the training ones timed here (train_setup), the decoding ones by
reports/published_decode.py; what both read alike (run_hardware, stated) lives in reports/published_rows.py.
"""

from __future__ import annotations

from typing import Any

from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.schedule import empty_edge_chunks
from costmodel.layout.megatron_step import DEFAULT_RELEASE
from costmodel.layout.overlap import framework_overlap
from costmodel.layout.time import Overlap
from costmodel.published import (KORTHIKANTI_TABLE_5, NARAYANAN_DDP, NARAYANAN_DP_OVERLAP,
                                 NARAYANAN_TABLE_1, narayanan_parameters)

from .published_decode import decode_run
from .published_rows import run_hardware, run_model, stated

VOCABULARY, SEQUENCE = 51200, 2048


def gpt(name: str, heads: int, hidden: int, layers: int) -> ModelConfig:
    return ModelConfig(name=name, family="gpt", vocab_size=VOCABULARY, d_model=hidden, n_heads=heads,
                       d_ff=4 * hidden, n_decoder_layers=layers, max_positions=SEQUENCE,
                       position="learned", norm="layernorm", activation="gelu", dropout=0.1)


def _step(cfg: ModelConfig, workload: Workload, layout: Layout, time_model: str = "roofline",
          overlap: Overlap | None = None) -> dict[str, Any]:
    from costmodel.layout.timing import step_time

    estimate = ParallelEstimate(cfg, workload, layout)
    return step_time(estimate, load_hardware("a100-80gb"), time_model=time_model, overlap=overlap).step()


def narayanan_runs() -> list[tuple[tuple, ModelConfig, Workload, Layout, Overlap]]:
    """Each row of Table 1 as (the row, its model, workload, layout and overlap)."""
    runs = []
    for row in NARAYANAN_TABLE_1:
        billions, heads, hidden, layers, tp, pp, gpus, batch, tflops, peak, micro, v = row
        cfg = gpt(f"gpt-{billions}b", heads, hidden, layers)
        dp = gpus // (tp * pp)
        layout = Layout(tp=tp, pp=pp, dp=dp, microbatches=batch // (micro * dp), framework="megatron",
                        schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
        workload = Workload(seq_len=SEQUENCE, batch=micro, dtype="fp16", impl="megatron", recompute="full")
        # The script's --DDP-impl: torch DDP reduces under the last backward, Megatron's local DDP after it
        overlap = Overlap(dp=NARAYANAN_DP_OVERLAP[NARAYANAN_DDP[billions]])
        runs.append((row, cfg, workload, layout, overlap))
    return runs


def korthikanti_runs() -> list[tuple[tuple, str, ModelConfig, Workload, Layout]]:
    """Each row of Table 5 twice, as (the row, "full" or "present", its model, workload and
    layout): full recomputation, and sequence parallelism with selective recomputation."""
    runs = []
    for row in KORTHIKANTI_TABLE_5:
        name, heads, hidden, layers, pp, gpus, batch, micro, v = row[:9]
        cfg = gpt(name, heads, hidden, layers)
        common = dict(tp=8, pp=pp, dp=1, microbatches=batch // micro, framework="megatron",
                      schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
        for key, recompute, sp in (("full", "full", False), ("present", "selective", True)):
            workload = Workload(seq_len=SEQUENCE, batch=micro, dtype="bf16", impl="megatron", recompute=recompute)
            runs.append((row, key, cfg, workload, Layout(sp=sp, **common)))
    return runs


def narayanan() -> list[dict[str, Any]]:
    """Table 1 (full recomputation, fp16): parameters and TFLOP/s per GPU, published and ours."""
    rows = []
    for (billions, heads, hidden, layers, tp, pp, gpus, batch, tflops, peak, micro, v), cfg, workload, layout, \
            overlap in narayanan_runs():
        dp = layout.dp
        step = _step(cfg, workload, layout, overlap=overlap)
        kernels = _step(cfg, workload, layout, "kernels", overlap=overlap)
        from costmodel.estimation import Estimate

        params = Estimate(cfg, Workload(seq_len=8)).total("params")
        rows.append({"model": f"{billions}B", "params": params,
                     "params_eq2": round(narayanan_parameters(layers, hidden)),
                     "layout": f"{tp} x {pp} x {dp}", "gpus": gpus, "batch": batch,
                     "tflops_published": tflops, "tflops_ours": step["tflops_per_gpu"],
                     "tflops_kernels": kernels["tflops_per_gpu"],
                     "seconds_ours": step["seconds"], "bubble": step["bubble_fraction"]})
    return rows


def korthikanti() -> list[dict[str, Any]]:
    """Table 5: seconds per iteration (full recomputation; sequence parallelism + selective
    recomputation), MFU and HFU of the latter, published and ours."""
    rows = []
    ours: dict[str, dict[str, Any]] = {}
    kernels: dict[str, dict[str, Any]] = {}
    for row, key, cfg, workload, layout in korthikanti_runs():
        ours[key] = _step(cfg, workload, layout)
        kernels[key] = _step(cfg, workload, layout, "kernels")
        if key != "present":
            continue
        name, heads, hidden, layers, pp, gpus, batch, micro, v, full_s, present_s, mfu, hfu = row
        rows.append({"model": name, "gpus": gpus, "full_published": full_s, "full_ours": ours["full"]["seconds"],
                     "present_published": present_s, "present_ours": ours["present"]["seconds"],
                     "full_kernels": kernels["full"]["seconds"], "present_kernels": kernels["present"]["seconds"],
                     "mfu_published": mfu, "mfu_ours": 100 * ours["present"]["mfu"],
                     "hfu_published": hfu, "hfu_ours": 100 * ours["present"]["hfu"],
                     "mfu_kernels": 100 * kernels["present"]["mfu"], "hfu_kernels": 100 * kernels["present"]["hfu"]})
    return rows


# ---------------------------------------------------------------------------------------------
# More published runs (issue 18): costmodel/published_runs.json, under both time models.

def other_runs_data() -> dict[str, Any]:
    import json
    from pathlib import Path

    import costmodel

    return json.loads((Path(costmodel.__file__).parent / "published_runs.json").read_text())


def train_setup(run: dict[str, Any], source: dict[str, Any]) -> tuple[ParallelEstimate, Any, dict[str, Any]]:
    """One training run of published_runs.json as the model sees it: the estimate (model, workload,
    layout), the hardware, and the StepTime options its source states (autocast: fp32 parameters
    cast each micro-batch, as PyTorch Lightning's precision "bf16" runs them; compiled:
    torch.compile, which only the kernel-level model expresses)."""
    if stated(run, source, "optimizer_offload"):  # DeepSpeed's offload_optimizer (the HF blog's Ulysses runs)
        raise ConfigError(f"optimizer offload to {stated(run, source, 'optimizer_offload')}: the model has no host "
                          "optimizer step nor its PCIe gradient and parameter copies.")
    hardware = run_hardware(source, run)
    if "gpt" in run:  # a GPT of the run's own sizes (heads, hidden, layers; its padded vocabulary;
        # its output layer untied where its source says so: Megatron's --untie-embeddings-and-output-weights)
        heads, hidden, layers = run["gpt"]
        cfg = ModelConfig(name=run["model"], family="gpt", vocab_size=source["vocabulary"], d_model=hidden,
                          n_heads=heads, d_ff=4 * hidden, n_decoder_layers=layers, max_positions=run["seq_len"],
                          position="learned", norm="layernorm", activation="gelu",
                          dropout=source.get("dropout", 0.1), tie_embeddings=source.get("tie_embeddings", True))
    else:  # a preset, or a preset's family at the run's own sizes ("preset" and "config_changes")
        cfg = run_model(run)
    if run.get("mtp_layers"):  # the multi-token-prediction depths the run's recipe trains (mtp_num_layers)
        cfg = cfg.replace(mtp_layers=run["mtp_layers"])
    micro = stated(run, source, "micro_batch")
    virtual = stated(run, source, "virtual_stages", 1)
    stages = run["pp"] * virtual
    cp = run.get("cp", 1)
    if "stage_layers" in run:
        stage_layers = tuple(run["stage_layers"])
    elif stated(run, source, "empty_edge_chunks"):
        stage_layers = empty_edge_chunks(cfg.n_layers, stages)
    else:
        stage_layers = None
    layout = Layout(tp=run["tp"], pp=run["pp"], dp=run["dp"], cp=cp, ep=run.get("ep", 1), etp=run.get("etp"),
                    sp=source.get("sp", True) and run["tp"] > 1,
                    cp_rotate=stated(run, source, "cp_rotate", None),
                    cp_kv_heads=stated(run, source, "cp_kv_heads", "kv"),
                    zero=stated(run, source, "zero", 1), framework=stated(run, source, "framework", "megatron"),
                    microbatches=run["global_batch"] // (run["dp"] * micro),
                    schedule=stated(run, source, "schedule", "1f1b"), virtual_stages=virtual,
                    stage_layers=stage_layers, fp8=stated(run, source, "fp8"),
                    ep_dispatcher=stated(run, source, "ep_dispatcher", "alltoall"),  # the recipe's flex backend
                    # the recipe's moe_expert_capacity_factor and moe_pad_expert_input_to_capacity
                    capacity_factor=stated(run, source, "capacity_factor"),
                    pad_to_capacity=stated(run, source, "pad_to_capacity", False),
                    dp_shard=stated(run, source, "dp_shard"),  # hybrid sharding (FSDP2's HSDP)
                    grad_reduce_dtype=stated(run, source, "grad_reduce_dtype"),  # the recipe's grad_reduce_in_fp32
                    pure_precision=stated(run, source, "pure_precision", False),  # a model trained in bf16, no master
                    precision_aware_optimizer=stated(run, source, "precision_aware_optimizer"),
                    fp8_param_gather=stated(run, source, "fp8_param_gather", False),  # FP8 parameters
                    tp_only_amax_red=stated(run, source, "tp_only_amax_red", False),  # delayed scaling's amax group
                    moe_router_fusion=stated(run, source, "moe_router_fusion", True),  # Megatron's --moe-router-fusion
                    moe_router_load_balancing_type=stated(run, source, "moe_router_load_balancing_type", "aux_loss"),
                    moe_permute_fusion=stated(run, source, "moe_permute_fusion", True),  # --moe-permute-fusion
                    moe_grouped_gemm=stated(run, source, "moe_grouped_gemm", True),  # off: SequentialMLP
                    # the script's fp8_autocast scope (delayed scaling off Megatron-Core): its delayed rows only
                    fp8_autocast=stated(run, source, "fp8_autocast") if stated(run, source, "fp8") == "delayed" else None,
                    mixed_precision=stated(run, source, "mixed_precision"),  # a recipe's bf16 layers (layout/fp8_layers.py)
                    unfused_loss=stated(run, source, "unfused_loss", False),  # Megatron's loss, whatever the family
                    loss_parallel=stated(run, source, "loss_parallel", True),  # DTensor's head: logits gathered when off
                    fp32_norm_input=stated(run, source, "fp32_norm_input", False),  # InternLM's norm(x.float())
                    zero_optimizer=stated(run, source, "zero_optimizer", "flat"),  # nanotron's ZeRO-1
                    optimizer_step=stated(run, source, "optimizer_step", "fused"),  # torch's AdamW (torchtitan)
                    megatron_release=stated(run, source, "megatron_release", DEFAULT_RELEASE))  # Megatron-LM's step
    workload = Workload(seq_len=run["seq_len"], batch=micro, dtype=source["dtype"],
                        tgt_len=stated(run, source, "tgt_len"),  # an encoder-decoder's decoder length (estimate --tgt-len)
                        impl=source.get("impl", "megatron"), attention=source["attention"],
                        recompute=stated(run, source, "recompute", "none"),
                        recompute_layers=stated(run, source, "recompute_layers"))
    options: dict[str, Any] = {"autocast": stated(run, source, "autocast", False)}
    if stated(run, source, "compiled", False):
        options["compiled"] = True
    if stated(run, source, "moe_op_fuser", False):  # Megatron-Core's use_transformer_engine_op_fuser
        options["moe_op_fuser"] = True  # (layout/gpt_oss_eager.py: no eager clamp)
    if stated(run, source, "attention_kernel"):  # the fused attention kernel the run calls (KernelTimer)
        options["attention_kernel"] = stated(run, source, "attention_kernel")
    # the overlap a run's recipe states (Overlap's fields; its overlap_grad_reduce, the gradient
    # reduction under the backward or after it), the pipeline sends' and the gradients' share else the framework's
    overlap_stated = stated(run, source, "overlap")
    overlap = framework_overlap(layout, overlap_stated, stated(run, source, "overlap_grad_reduce"))
    estimate = ParallelEstimate(cfg, workload, layout)
    if stated(run, source, "async_tp", False):  # torchtitan's Async TP: its fused ops priced (layout/async_tp.py)
        from dataclasses import replace

        from costmodel.layout import async_tp

        async_tp.check(layout, options.get("compiled", False))
        overlap = replace(overlap, async_tp=True)
    if overlap_stated or overlap != Overlap():
        options["overlap"] = overlap
    return estimate, hardware, options


def train_step(run: dict[str, Any], source: dict[str, Any], time_model: str,
                flops_convention: str = "dense", host_syncs: bool = True,
                setup: tuple | None = None) -> tuple[dict[str, Any], Any]:
    """A published training row's step (StepTime.step()) under `time_model`, as `published` prices it, and its
    hardware (validate/scale_efficiency.py reads each step's split from it). setup: train_setup(run, source)
    where the caller has it already (other_runs builds it once for both time models)."""
    from costmodel.layout.timing import step_time

    estimate, hardware, options = setup or train_setup(run, source)
    if time_model == "kernels":
        options = kernel_options(run, source, estimate, hardware, options, host_syncs)
    return step_time(estimate, hardware, time_model=time_model, flops_convention=flops_convention,
                     **options).step(), hardware


def kernel_options(run: dict[str, Any], source: dict[str, Any], estimate: ParallelEstimate, hardware: Any,
                   options: dict[str, Any], host_syncs: bool = True) -> dict[str, Any]:
    """train_setup's step options as the kernel model prices a published row (what `published` and
    validate/time_breakdown.py --row both time): the MoE layers' host syncs (the kernel model's default,
    layout/host_syncs.py) after the run's graph scopes, none where the run drops and pads (no sync) or
    host_syncs is off; a recipe's tp_comm_overlap as TE's userbuffers ops (layout/ub_overlap.py)."""
    options = dict(options)
    dropped = stated(run, source, "moe_token_drop", False)
    options["host_syncs"] = tuple(stated(run, source, "cuda_graph_scope", ())) if host_syncs and not dropped else None
    if "overlap" in options:
        from costmodel.layout.ub_overlap import recipe_config, userbuffers

        config = recipe_config(run["id"].split()[0], run["model"], hardware.network_name, estimate.layout.fp8)
        options["overlap"] = userbuffers(options["overlap"], estimate.layout, config)
    return options


def train_run(run: dict[str, Any], source: dict[str, Any], time_model: str, host_syncs: bool = True,
              setup: tuple | None = None) -> float:
    """Model TFLOP/s per GPU (MFU x the bf16 peak), the model FLOPs counted in the convention the
    run's source states ("flops_convention": dense, every (query, key) pair, unless it says causal,
    as Megatron-Core's newer num_floating_point_operations count them)."""
    step, hardware = train_step(run, source, time_model, stated(run, source, "flops_convention", "dense"), host_syncs,
                                setup)
    return step["mfu"] * hardware.datasheet_peak(source["dtype"]) / 1e12


def train_tokens(run: dict[str, Any], source: dict[str, Any], time_model: str, host_syncs: bool = True,
                 setup: tuple | None = None) -> float:
    """Tokens a second per GPU: the step's tokens a second (global batch x sequence over its time)
    over the run's GPUs, the figure torchtitan and llm-foundry publish (no FLOP convention in it)."""
    step, _ = train_step(run, source, time_model, host_syncs=host_syncs, setup=setup)
    return step["tokens_per_second"] / run["gpus"]


def train_gpu_hours(run: dict[str, Any], source: dict[str, Any], time_model: str, setup: tuple | None = None) -> float:
    """GPU-hours to train on the run's tokens, computed as `simulate --train --tokens` computes
    them (costmodel/layout/timing.simulate_training, then costmodel/cost.training_cost): the
    tokens over the step's tokens a second, times the GPUs. Step options that command has no
    flag for (autocast, a named attention kernel) make the row not expressible."""
    from costmodel.config import ConfigError
    from costmodel.layout.timing import simulate_training

    estimate, hardware, options = setup or train_setup(run, source)
    unexpressed = [name for name in ("autocast", "attention_kernel") if options.get(name)]
    if unexpressed:
        raise ConfigError(f"{', '.join(unexpressed)}: `simulate --train --tokens` has no option for it.")
    result = simulate_training(estimate.cfg, estimate.workload, estimate.layout, hardware, tokens=run["tokens"],
                               time_model=time_model, overlap=options.get("overlap"),
                               compiled=options.get("compiled", False))
    return result["cost"]["gpu_hours"]


TRAIN_UNITS = {"published_tflops_per_gpu": ("TFLOP/s per GPU", train_run),
               "published_tokens_per_s_per_gpu": ("tokens/s per GPU", train_tokens),
               "published_gpu_hours": ("GPU-hours", train_gpu_hours)}

#: Units of a cost, not a speed: our speed over the published one is published / ours.
COST_UNITS = ("GPU-hours",)


#: The kinds `summary_by_kind` splits the comparisons into (each other run's "kind" in other_runs).
KINDS = ("dense training", "MoE training", "decoding")


def run_kind(run: dict[str, Any], source: dict[str, Any]) -> str:
    """A run's kind: decoding, or training of a dense model or of a mixture of experts (a source
    that says `"moe": true`, for models without a preset too; else a preset with routed experts, or
    a run whose config_changes give its model routed experts; a run of GPT sizes is dense)."""
    from costmodel.config import ConfigError

    if run["kind"] == "decode":
        return "decoding"
    try:  # the run's model as every path reads it (published_rows.run_model: its preset, its config_changes over it)
        experts = source.get("moe", False) or ("gpt" not in run and run_model(run).n_experts > 0)
    except ConfigError:  # a model without a preset, and a source that does not say
        experts = False
    return "MoE training" if experts else "dense training"


def other_runs(host_syncs: bool = True, sources: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Each run of costmodel/published_runs.json: published, and ours under the roofline and
    the kernel-level time model (None, with the reason, where a model cannot express it: the
    roofline has no torch.compile, so a compiled run is the kernel model's alone). host_syncs
    (default): the kernel model's Megatron training steps price the MoE layers' host syncs
    (layout/host_syncs.py); off: the host runs ahead. sources: only the runs of these sources (a
    run id's first word), each row as the whole table computes it (a test that reads a few)."""
    from costmodel.config import ConfigError

    data = other_runs_data()
    rows = []
    for run in data["runs"]:
        if sources is not None and run["id"].split()[0] not in sources:
            continue
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] == "decode":
            key, unit, measure = "published_tokens_per_s", "tokens/s", decode_run
        else:
            key = next(k for k in TRAIN_UNITS if k in run)
            unit, measure = TRAIN_UNITS[key]
        row = {"run": run["id"], "unit": unit, "published": run[key], "roofline": None, "kernels": None,
               "not_expressible": None, "source": source["source"], "kind": run_kind(run, source)}
        if "not_modelled" in source:  # what a published total holds that no step model times
            row["not_modelled"] = source["not_modelled"]
        reasons = []
        extra: dict[str, Any] = {}
        if run["kind"] != "decode":  # built once: both time models price the same estimate, hardware and options
            try:
                extra["setup"] = train_setup(run, source)
            except ConfigError as error:
                reasons.append(str(error))
        for model in ("roofline", "kernels") if not reasons else ():
            try:
                if not host_syncs and measure in (train_run, train_tokens):
                    extra["host_syncs"] = False
                row[model] = measure(run, source, model, **extra)
            except ConfigError as error:
                reasons.append(str(error))
        row["not_expressible"] = " ".join(dict.fromkeys(reasons)) or None
        rows.append(row)
    return rows


def speed_ratios(tables: dict[str, list[dict[str, Any]]], model: str, costs: bool = False) -> list[float]:
    """Our speed over the published one, per comparison, under one time model ("roofline" or
    "kernels"): Narayanan's TFLOP/s, Korthikanti's seconds (both columns, inverted: a speed),
    and every run of published_runs.json this model expresses but its whole-run costs; with
    `costs`, those alone (the GPU-hours rows, COST_UNITS, inverted as Korthikanti's seconds). The
    frontier rows are in neither (each assumes what its paper does not state: docs/layouts.md)."""
    others = [r for r in tables["other_runs"] if r[model] is not None and (r.get("unit") in COST_UNITS) == costs]
    if costs:
        return [r["published"] / r[model] for r in others]
    return paper_ratios(tables, model) + [r[model] / r["published"] for r in others]


def paper_ratios(tables: dict[str, list[dict[str, Any]]], model: str) -> list[float]:
    """Our speed over the published one on Narayanan's rows and Korthikanti's cells (both columns,
    their seconds inverted) under one time model."""
    tflops, full, present = {"roofline": ("tflops_ours", "full_ours", "present_ours"),
                             "kernels": ("tflops_kernels", "full_kernels", "present_kernels")}[model]
    ratios = [r[tflops] / r["tflops_published"] for r in tables["narayanan_2021_table_1"]]
    for r in tables["korthikanti_2022_table_5"]:
        ratios += [r["full_published"] / r[full], r["present_published"] / r[present]]
    return ratios


def ratio_counts(ratios: list[float]) -> dict[str, Any]:
    """How many comparisons, the median of |ratio - 1|, the range, and how many fall within
    0.75-1.33x, 5% and 10%."""
    import statistics

    errors = [abs(r - 1) for r in ratios]
    return {"comparisons": len(ratios), "median_error": statistics.median(errors),
            "lowest": min(ratios), "highest": max(ratios), "within_0.75_1.33": sum(0.75 <= r <= 1.33 for r in ratios),
            "within_5%": sum(e <= 0.05 for e in errors), "within_10%": sum(e <= 0.10 for e in errors)}


def summary_by_kind(tables: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The kernel model's comparisons split by what they time: Narayanan's and Korthikanti's tables,
    then the other runs' rates by kind (KINDS); the GPU-hours rows apart, as in `summary`. Every
    comparison of `summary`'s "kernels" falls in exactly one."""
    out = {"Narayanan's and Korthikanti's tables": ratio_counts(paper_ratios(tables, "kernels"))}
    for kind in KINDS:
        ratios = [r["kernels"] / r["published"] for r in tables["other_runs"]
                  if r["kind"] == kind and r["kernels"] is not None and r.get("unit") not in COST_UNITS]
        if ratios:
            out[kind] = ratio_counts(ratios)
    return out


def summary(tables: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per time model: how many comparisons, the median of |ratio - 1|, the range, and how many
    fall within 0.75-1.33x, 5% and 10% (ratio: our speed over the published one); the runs'
    rates ("roofline", "kernels") apart from the whole runs' GPU-hours ("roofline, GPU-hours",
    "kernels, GPU-hours"), whose gaps hold what a total includes beyond the steps (restarts,
    other stages) and, where no layout is published, the layout assumed."""
    out = {}
    for model, costs in (("roofline", False), ("kernels", False), ("roofline", True), ("kernels", True)):
        ratios = speed_ratios(tables, model, costs)
        if ratios:
            out[f"{model}, GPU-hours" if costs else model] = ratio_counts(ratios)
    return out


def published_tables(host_syncs: bool = True) -> dict[str, Any]:
    """Every table `published` prints, as `published --json` holds them (units aside): Narayanan's and
    Korthikanti's tables, the other runs (other_runs; host_syncs as there), the frontier rows, and
    the summaries over them. The one place they are put together (the command and the tests' shared
    session copy, tests/conftest.py, read it)."""
    from .published_frontier import frontier

    tables = {"narayanan_2021_table_1": narayanan(), "korthikanti_2022_table_5": korthikanti(),
              "other_runs": other_runs(host_syncs), "frontier": frontier()}
    tables["summary"] = summary(tables)
    tables["summary_by_kind"] = summary_by_kind(tables)
    return tables
