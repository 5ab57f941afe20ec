"""Build the report's data: figures, CSV tables, the summary and the claims; then write them with the pages.

Each make_* function computes one figure's numbers (series.py, generation.py, measured.py: all from
the cost tree or a measurement) and returns a Made (reports/made.py): the figure, its caption and
its table. build gathers them in a Report; write writes each figure as PNG and SVG, each table as
CSV, and the pages that show them all (rendered by reports/pages.py). Files are written only once
everything is computed, each one atomically.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.presets import load_preset, preset_names

from . import output, series
from .made import SUMMARY_ATTENTION, Made, Progress, Report, summary_attention
from .pages import html_page, markdown

#: What other modules import from here besides the make_* functions, build and write.
__all__ = ["Made", "Progress", "Report", "SUMMARY_ATTENTION", "summary_rows"]


def _power_of_two_above(x: float) -> int:
    return 2 ** math.ceil(math.log2(max(x, 2)))


# ---------------------------------------------------------------------------------------------
# 1. Where the FLOPs go


def make_flops(cfgs: Sequence[ModelConfig]) -> Made:
    from . import figures

    panels, rows = [], []
    for cfg in cfgs:
        _, crossover = series.crossover(cfg)
        context = series.usual_context(cfg)
        top = min(_power_of_two_above(max(8 * min(crossover, 2**21), 4 * context)), 2**21)
        ns = series.geometric(8, top, 160)
        shares = series.flop_shares(cfg, ns)
        panels.append({"cfg": cfg, "ns": ns, "shares": shares, "crossover": crossover,
                       "context": context})
        for i, n in enumerate(ns):
            rows.append([cfg.name, int(n), *(float(shares[label][i]) for label in shares)])
    labels = [label for label, _ in series.FLOP_GROUPS]
    names = ", ".join(c.name for c in cfgs)
    return Made(
        "flops", f"Where the FLOPs go ({names})",
        "Share of each block group in the forward FLOPs (matrix products and the other ops, b = 1) "
        "as the sequence grows. Blue: the projections and the FFN, whose cost grows as n d^2; "
        "orange: the attention scores and the weighted sum, which grow as n^2 d. The black line is "
        "the crossover n* where attention equals the projections plus the FFN, solved "
        "symbolically from the cost tree (CostModel.crossover); the dotted line is the model's "
        "usual context.",
        figures.flop_shares(panels),
        ["model", "seq_len", *labels], rows,
    )


# ---------------------------------------------------------------------------------------------
# 2. The regime map


SEEDS_EXAMPLES = (
    {"label": "translation\nn = 50, d = 512", "n": 50, "d": 512, "beyond": False},
    {"label": "long context\nn = 4096 and beyond", "n": 4096, "d": 512, "beyond": True},
)


def make_regimes(cfgs: Sequence[ModelConfig]) -> Made:
    from . import figures

    reference = cfgs[0]
    presets = []
    for name in preset_names():
        cfg = load_preset(name)
        presets.append({"name": name, "n": series.usual_context(cfg), "d": cfg.d_model})
    for cfg in cfgs:
        if cfg.name not in preset_names():
            presets.append({"name": cfg.name, "n": series.usual_context(cfg), "d": cfg.d_model})
    crossover = series.multiple_of_d(series.crossover_in_width(reference))
    plane = series.attention_share_plane(reference)
    rows = []
    for preset in presets:
        share = float(plane(preset["n"], preset["d"]))
        rows.append([preset["name"], preset["n"], preset["d"], share,
                     "attention" if share > 0.5 else "projections and FFN"])
    return Made(
        "regimes", "The regime map",
        f"The (n, d) plane shaded by the share of the layers' matrix-product FLOPs spent in "
        f"attention (n^2 d) rather than in the projections and FFN (n d^2), for "
        f"{reference.name}'s shape scaled in width (d_ff/d and the head width kept). Red: attention "
        f"dominates; blue: the projections and FFN do; the black line is n* = {crossover}. Every "
        f"preset sits at its usual context length (bold: in this report; a dot without a label "
        f"had no room for one: the table lists every preset); stars mark the "
        f"examples of the introductory articles whose claims this report checks. The shading uses the reference shape's share at each preset's (n, d).",
        figures.regime_map(plane, reference, crossover, presets, [c.name for c in cfgs],
                           SEEDS_EXAMPLES),
        ["model", "usual_seq_len", "d_model", "attention_share", "dominant"], rows,
    )


# ---------------------------------------------------------------------------------------------
# 3. Memory


def make_memory(cfg: ModelConfig, batch: int, dtype: str) -> Made:
    from . import figures

    top = max(2**17, _power_of_two_above(2 * series.usual_context(cfg)))
    ns = series.geometric(64, top, 120)
    curves = series.memory_curves(cfg, ns, batch=batch, dtype=dtype)
    labels = list(curves.activations)
    rows = [[cfg.name, int(n), *(float(curves.activations[label][i]) for label in labels),
             float(curves.kv_cache[i]), curves.states, curves.weights] for i, n in enumerate(ns)]
    kv_note = ("" if cfg.has_kv_cache else
               f" {cfg.name} is an encoder: it keeps no KV cache.")
    return Made(
        f"memory-{cfg.name}", f"Memory vs n: {cfg.name}",
        f"Left: bytes kept for backward by a training forward (b = {batch}, {dtype}, Hugging Face's "
        "code) with eager attention (it keeps the n x n probabilities), with a fused/flash kernel "
        "(no n x n term) and with full recomputation (each layer keeps only its input), beside the "
        "weights, gradients and AdamW states. Right: the KV cache after n tokens and the weights. "
        f"Green lines: the memory of common GPUs (reports/gpus.json).{kv_note}",
        figures.memory(curves, cfg, series.gpus()),
        ["model", "seq_len", *(f"activation_bytes ({label})" for label in labels),
         "kv_cache_bytes", "weights_gradients_optimizer_bytes", "weights_bytes"], rows,
    )


# ---------------------------------------------------------------------------------------------
# 4. Generation


GENERATION_MEASURED_TOKENS = 24
GENERATION_TINY_SOURCE = 8  # source tokens of a tiny encoder-decoder


def make_generation(cfg: ModelConfig, measure: bool, progress: Progress) -> Made | None:
    """None for a model that does not generate (no decoder, or no LM head)."""
    from . import figures
    from .generation import generation_curves, leading_terms
    from .measured import measure_generation, tiny

    if not cfg.n_decoder_layers or cfg.head != "lm":
        return None
    encoder_decoder = cfg.architecture == "encoder-decoder"
    small_cfg = tiny(cfg)
    context = series.usual_context(cfg)
    small_source = GENERATION_TINY_SOURCE if encoder_decoder else 1
    full = generation_curves(cfg, context, source_len=context)
    small = generation_curves(small_cfg, GENERATION_MEASURED_TOKENS, source_len=small_source)
    from validate import reference_unsupported

    measured = None
    measure = measure and not reference_unsupported(cfg)  # the reference model cannot run it
    if measure:
        progress(f"[generation] {small_cfg.name}: FlopCounterMode over {GENERATION_MEASURED_TOKENS} "
                 "steps with and without a KV cache")
        measured = measure_generation(small_cfg, GENERATION_MEASURED_TOKENS, small_source)
    lead = leading_terms(cfg)
    rows = [[cfg.name, full.source_len, int(t), float(full.without_cache[i]),
             float(full.with_cache[i]), "", ""] for i, t in enumerate(full.tokens)]
    for i, t in enumerate(small.tokens):
        got = ["", ""]
        if measured:
            got = [sum(measured["without_cache"][: i + 1]), sum(measured["with_cache"][: i + 1])]
        rows.append([small_cfg.name, small.source_len, int(t), float(small.without_cache[i]),
                     float(small.with_cache[i]), *got])
    prompt = (f"the encoder over s source tokens (s = {context} here, {small_source} for the tiny "
              "model) and the decoder's start token" if encoder_decoder else "a one-token prompt")
    return Made(
        f"generation-{cfg.name}", f"Generation cost: {cfg.name}",
        f"Cumulative forward matrix-product FLOPs of generating T tokens (b = 1). Step 1 reads "
        f"{prompt}. Without a cache, each later step re-runs the decoder over every token so far "
        f"(the cost tree's forward at n = t): in all {lead['without_cache']['leading']} T^3 + ..., "
        f"which over this range grows about as T^{figures.growth_exponent(full.tokens, full.without_cache):.1f} "
        "(the T^3 term leads only once T is large against d). With a KV cache, each step feeds one "
        f"token against t keys (the tree's decode step): {lead['with_cache']['leading']} T^2 + ..., "
        f"here about T^{figures.growth_exponent(full.tokens, full.with_cache):.1f}. Right: a tiny member of the "
        "family (d = 64, 2 layers) with the reference model's FLOPs measured by FlopCounterMode "
        "on CPU tensors (circles, squares)" + ("." if measure else " (not measured in this run)."),
        figures.generation(full, cfg, small, small_cfg, measured),
        ["model", "source_len", "tokens", "tree_without_cache", "tree_with_cache",
         "measured_without_cache", "measured_with_cache"], rows,
    )


# ---------------------------------------------------------------------------------------------
# 5. Parameters


def make_params(cfgs: Sequence[ModelConfig]) -> Made:
    from . import figures
    from .claims import seeds_rule

    configs = {name: load_preset(name) for name in preset_names()}
    configs.update({cfg.name: cfg for cfg in cfgs})
    rows, table = [], []
    for name, cfg in configs.items():
        groups = series.param_groups(cfg)
        total = series.total_params(cfg)
        active = series.active_params(cfg)
        rule = seeds_rule(cfg)
        rows.append({"name": name, "groups": groups, "total": total, "rule": rule, "active": active})
        table.append([name, *groups.values(), total, rule, (rule - total) / total,
                      "" if active is None else active])
    labels = [label for label, _ in series.PARAM_GROUPS]
    return Made(
        "params", "Parameters across presets",
        "Left: every preset's parameters split by block (exact counts from the cost tree; tied "
        "output projections are counted once, with the embeddings); for a mixture of experts the "
        "black bar and the label give the parameters one token uses (the routed experts it is "
        "not sent to left out). Right: the introductory articles' rule of thumb 12 L d^2 plus V d per embedding "
        "table, against the exact count: it is close for GPT-style models, and misses gated "
        "FFNs, cross-attention, experts and large vocabularies.",
        figures.parameters(rows, [c.name for c in cfgs]),
        ["model", *labels, "total", "seeds_rule", "rule_relative_error", "active_per_token"], table,
    )


# ---------------------------------------------------------------------------------------------
# 5b. The KV cache per token

LONG_CONTEXT = 32768  # the long context of the KV-cache figure


def make_kv_cache(cfgs: Sequence[ModelConfig]) -> Made:
    """KV-cache bytes per token across the decoder presets (and the report's models)."""
    from . import figures

    configs = {name: load_preset(name) for name in preset_names()}
    configs.update({cfg.name: cfg for cfg in cfgs})
    rows, table = [], []
    for name, cfg in configs.items():
        if cfg.architecture != "decoder":
            continue
        short, long, tokens = series.kv_cache_per_token(cfg, LONG_CONTEXT)
        kind = series.attention_kind(cfg)
        rows.append({"name": name, "kind": kind, "short": short, "long": long,
                     "long_tokens": LONG_CONTEXT})
        table.append([name, kind, short, tokens, long])
    return Made(
        "kv-cache", "The KV cache per token",
        "Bytes the KV cache holds per token over all layers, in bf16, from the cost tree: dark, "
        "every token cached (a short context); light, averaged over a long context once decoding "
        f"has begun (up to {LONG_CONTEXT:,} tokens, or the model's context): sliding-window layers "
        "then hold only their window (Hugging Face's cache holds the whole prompt until the "
        "first decode step). Multi-query and grouped-query attention cache fewer heads than "
        "MHA; MLA caches one compressed latent and a RoPE key per token per layer. Falcon's new "
        "layout caches every query head although it computes fewer.",
        figures.kv_cache(rows, [c.name for c in cfgs]),
        ["model", "attention", "bytes_per_token", "long_context_tokens",
         "bytes_per_token_long_context"], table,
    )


# ---------------------------------------------------------------------------------------------
# 6. Formula vs measurement


def make_validation(cfgs: Sequence[ModelConfig], progress: Progress, full_size: bool = True) -> Made:
    from . import figures
    from .measured import validation_points

    points = validation_points(list(cfgs), progress, full_size=full_size)
    if not points:  # every model has a part the reference model does not build (MoE, windows...)
        raise ConfigError(f"no formula-vs-measurement points: the reference model builds none of "
                          f"{', '.join(c.name for c in cfgs)}; `validate --target hf` measures each "
                          f"against transformers' class.")
    exact_points = sum(p.measured == p.formula for p in points)
    return Made(
        "validation", "Formula vs measurement",
        f"Every measured quantity against the cost tree's value for the same model and workload: "
        f"{exact_points} of {len(points)} points equal exactly. Parameters: the full-size "
        "reference model on the meta device; forward FLOPs: FlopCounterMode, full size under "
        "FakeTensorMode and a tiny member of each family on CPU tensors; training FLOPs, bytes "
        "saved for backward (fp32, the reference implementation profile) and KV-cache bytes: the "
        "tiny member. Right: the relative error of each point.",
        figures.validation(points),
        ["quantity", "model", "seq_len", "batch", "tree", "measured", "relative_error", "how"],
        [[p.quantity, p.model, p.seq_len, p.batch, p.formula, p.measured, p.relative_error, p.how]
         for p in points],
    )


# ---------------------------------------------------------------------------------------------
# The summary table


def summary_rows(cfgs: Sequence[ModelConfig], batch: int, dtype: str) -> tuple[list[str], list[list]]:
    """One row per model from costmodel.estimation.Estimate at its usual context length."""
    from costmodel.estimation import Estimate

    headers = ["model", "architecture", "params", "seq_len", "batch", "dtype",
               "forward_flops_per_token", "training_flops", "weights_bytes",
               "training_total_bytes", "kv_cache_bytes", "crossover_seq_len", "attention_share",
               "dominant", "attention"]
    rows = []
    for cfg in cfgs:
        # A fused attention kernel (sdpa): at a usual context of 128k tokens, eager attention's
        # n x n probabilities alone would be tens of TiB, a setting nobody trains in.
        workload = Workload(seq_len=min(series.usual_context(cfg), cfg.max_positions), batch=batch,
                            dtype=dtype, attention=summary_attention(cfg.family))
        estimate = Estimate(cfg, workload)
        flops, memory, regime = estimate.flops(), estimate.memory_numbers(), estimate.regime()
        rows.append([cfg.name, cfg.architecture, estimate.total("params"), workload.seq_len, batch,
                     dtype, flops["forward_per_token"], flops["training"], memory["weights"],
                     memory["training_total"], memory["kv_cache"], regime["crossover_seq_len"],
                     regime["attention_share"], regime["dominant"], workload.attention])
    return headers, rows



# ---------------------------------------------------------------------------------------------
# 7. Parallel layouts (when the report is given one)


def _layout_label(lay: dict) -> str:
    schedule = f", {lay['schedule']} x{lay['virtual_stages']}" if lay.get("virtual_stages", 1) > 1 else ""
    from .plan_text import other_sizes  # cp, ep, etp, dp_shard: "tp 8 x pp 1 x dp 1" hid the cp 2 of 16 GPUs

    return (f"tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']}{other_sizes(lay)}, {lay['framework']} ZeRO {lay['zero']}"
            + (" SP" if lay["sp"] else "") + f", b {lay['batch']} x {lay['microbatches']}, "
            f"{lay['recompute']}{schedule}")


def make_layouts(cfg: ModelConfig, workload: Workload, layout: Any, hardware_name: str,
                 top: int = 8) -> list[Made]:
    """Per-rank memory of the layout asked for beside the plan's best ones (stacked by kind,
    against what a training run can use of the GPU), and the step time of the plan's best layouts
    split into compute, exposed communication, bubble and optimizer. Each layout, the asked one too,
    runs its framework's code (costmodel/defaults.py implied: Megatron's layers under flash, DeepSpeed's
    and FSDP2's Hugging Face model under sdpa), as plan and simulate run it; the workload's own impl
    and attention are not used."""
    import dataclasses

    from costmodel.defaults import implied
    from costmodel.flash_support import runs_flash
    from costmodel.hardware import load_hardware
    from costmodel.layout import ParallelEstimate
    from costmodel.layout.plan import plan_training

    from . import layout_figures

    hardware = load_hardware(hardware_name)
    if layout.gpus > 1:  # a file without the link: plan's and simulate's one line (the figure showed no plan layout)
        hardware.link(layout.gpus)
    global_batch = workload.batch * layout.microbatches * layout.dp
    plan = plan_training(cfg, hardware, layout.gpus, workload.seq_len, global_batch, workload)
    code = implied(layout.framework, None, None, cfg.family, runs_flash(hardware))
    asked = ParallelEstimate(cfg, dataclasses.replace(workload, **code), layout).per_rank
    asked_layout = {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "framework": layout.framework,
                    "zero": layout.zero, "sp": layout.sp, "batch": workload.batch,
                    "microbatches": layout.microbatches, "recompute": workload.recompute,
                    "schedule": layout.schedule, "virtual_stages": layout.virtual_stages}
    memory_rows = [{"label": "asked: " + _layout_label(asked_layout), **asked}]
    memory_rows += [{"label": _layout_label(e["layout"]), **e["per_rank"]} for e in plan["feasible"][:top - 1]]
    kinds = [name for name, _ in layout_figures.LAYOUT_PARTS]
    memory = Made(
        f"layout-memory-{cfg.name}", f"Memory per rank by layout: {cfg.name} on {layout.gpus} x {hardware.name}",
        "The most loaded rank's memory (data-parallel rank 0 of the heaviest pipeline stage), stacked: "
        "weights, gradients, optimizer state (as the framework shards them), activations (micro-batches in "
        "flight x the stage's saved bytes) and buffers (modules' and communication buffers), for the layout "
        f"asked for and the fastest layouts `plan` finds for the same {layout.gpus} GPUs"
        + ("" if plan["feasible"] else " (none of its layouts fits)") + f", n = {workload.seq_len}, "
        f"global batch {global_batch}; the dashed line is what a training run can use of the GPU's memory "
        "(less the hardware file's reserve, as plan and simulate count it).",
        layout_figures.layout_memory(memory_rows, hardware.training_memory_bytes,
                              f"{cfg.name}: memory of the most loaded rank ({layout.gpus} x {hardware.name})"),
        ["layout", *(f"{k}_bytes" for k in kinds), "total_bytes"],
        [[row["label"], *(row[k] for k in kinds), row["total"]] for row in memory_rows],
    )
    step_rows = [{"label": _layout_label(e["layout"]), **e["split"], "step": e["step_time"], "mfu": e["mfu"]}
                 for e in plan["feasible"][:top]]
    parts = [name for name, _ in layout_figures.STEP_PARTS]
    if not step_rows:
        return [memory]
    step = Made(
        f"layout-step-{cfg.name}", f"Step time of the best layouts: {cfg.name}",
        f"The {len(step_rows)} fastest layouts that fit ({len(plan['feasible'])} of "
        f"{len(plan['feasible']) + len(plan['infeasible'])} do), their step time split into the slowest "
        "stage's compute, the communication that cannot overlap, the pipeline bubble, the optimizer "
        "step, gradient accumulation, autocast's casts, the slowdown of compute under hidden communication "
        "(overlap contention), the host's wait past the kernels, FSDP2's copies and DTensor's, which add up to the step (costmodel/layout/time.py states the overlap model), "
        "with MFU.",
        layout_figures.step_split(step_rows, f"{cfg.name} on {layout.gpus} x {hardware.name}: step time by layout"),
        ["layout", *(f"{p}_seconds" for p in parts), "step_seconds", "mfu"],
        [[row["label"], *(row[p] for p in parts), row["step"], row["mfu"]] for row in step_rows],
    )
    return [memory, step]


def build(cfgs: Sequence[ModelConfig], batch: int = 1, dtype: str = "bf16", measure: bool = True,
          full_size: bool = True, progress: Progress = output.progress, command: str = "",
          layout: Any = None, hardware: str = "h100-sxm", seq_len: int | None = None) -> Report:
    """Compute every figure, table and claim of a report (nothing written yet). With a layout
    (costmodel.layout.Layout): also its per-rank memory and the plan's best step times, on
    `hardware`, at seq_len (default 2048 or the model's context)."""
    from .claims import check_claims, table1

    cfgs = list(cfgs)
    notes = []
    steps = 6 + 2 * len(cfgs) + (1 if measure else 0) + (len(cfgs) if layout is not None else 0)
    step = iter(range(1, steps + 1))
    say = lambda what: progress(f"[{next(step)}/{steps}] {what}")  # noqa: E731
    made = []
    say("where the FLOPs go")
    made.append(make_flops(cfgs))
    say("the regime map")
    made.append(make_regimes(cfgs))
    for cfg in cfgs:
        say(f"memory vs n: {cfg.name}")
        made.append(make_memory(cfg, batch, dtype))
    for cfg in cfgs:
        say(f"generation cost: {cfg.name}")
        figure = make_generation(cfg, measure, progress)
        if figure is None:
            notes.append(f"No generation figure for {cfg.name}: an {cfg.architecture} without an "
                         "LM head does not generate.")
        else:
            made.append(figure)
    say("parameters across presets")
    made.append(make_params(cfgs))
    say("the KV cache per token")
    made.append(make_kv_cache(cfgs))
    if layout is not None:
        for cfg in cfgs:
            say(f"parallel layouts: {cfg.name}")
            length = seq_len or min(2048, cfg.max_positions)
            made += make_layouts(cfg, Workload(seq_len=length, batch=batch, dtype=dtype),
                                 layout, hardware)
    if measure:
        say("formula vs measurement")
        try:
            made.append(make_validation(cfgs, progress, full_size=full_size))
        except ConfigError as unmeasured:
            notes.append(f"No formula-vs-measurement figure: {unmeasured}")
    else:
        notes.append("Measurements were skipped (--no-measure): no formula-vs-measurement figure, "
                     "and the claims show the cost tree's values only.")
    say("the articles' claims" + (" (measuring)" if measure else ""))
    claims = check_claims(measure=measure, progress=progress)
    say("rendering figures")
    for figure in made:
        figure.render()
    return Report(cfgs, made, summary_rows(cfgs, batch, dtype), claims, table1(), notes, command,
                  batch, dtype)


def write(report: Report, out: str | Path) -> list[Path]:
    """Write figures/, tables/, claims.json, report.md and index.html under out."""
    out = output.ensure_directory(out)
    figures_dir = output.ensure_directory(out / "figures")
    tables_dir = output.ensure_directory(out / "tables")
    # A rerun into the same folder: the figures and tables of an earlier run go first, so that
    # none of another model's files is left beside this run's (only the kinds this writes).
    for folder, suffixes in ((figures_dir, (".png", ".svg")), (tables_dir, (".csv",))):
        for stale in folder.iterdir():
            if stale.is_file() and stale.suffix in suffixes:
                stale.unlink()
    written = []
    for made in report.made:
        for fmt, data in made.images.items():
            written.append(output.write_bytes(figures_dir / f"{made.name}.{fmt}", data))
        written.append(output.write_text(tables_dir / f"{made.name}.csv",
                                         output.csv_text(made.headers, made.rows)))
    headers, rows = report.summary
    written.append(output.write_text(tables_dir / "summary.csv", output.csv_text(headers, rows)))
    written.append(output.write_text(tables_dir / "claims.csv", output.csv_text(
        ["claim", "holds", "statement", "tree", "measured", "note"],
        [[c.key, c.holds, c.statement, c.tree, c.measured, c.note] for c in report.claims])))
    written.append(output.write_text(tables_dir / "table1.csv", output.csv_text(
        ["layer", "complexity", "flops_n50_d512", "flops_n4096_d512", "sequential", "path_length",
         "from"],
        [[r.layer.strip(), r.complexity, r.flops_translation, r.flops_long, r.sequential,
          r.path_length, r.from_tree] for r in report.table1])))
    written.append(output.write_json(out / "claims.json", [c.to_dict() for c in report.claims]))
    written.append(output.write_text(out / "report.md", markdown(report)))
    written.append(output.write_text(out / "index.html", html_page(report)))
    return written
