"""Click commands of reports/: report, plot (a group) and claims; COMMANDS lists them.

cli/__init__.py registers them with cli.add_command; their choices and defaults are costmodel/spec.py's. Importing this module is cheap (click and costmodel's
config only): matplotlib, numpy, sympy evaluation and torch are imported inside the commands.
Bad input raises ReportInputError (one line, exit status 2); `claims` exits 1 when a claim fails.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from costmodel.spec import DEFAULT_DTYPE, DEFAULT_HARDWARE, DTYPES, FRAMEWORK_NAMES

from .options import LENGTH
from .output import DtypeChoice, ReportInputError, dtype_on, ensure_directory


def require_measure_extra(what: str) -> None:
    """One line and exit status 2 when torch/transformers (the `measure` extra) are missing."""
    from validate import needs_measure_extra

    message = needs_measure_extra(what)
    if message:
        raise ReportInputError(message)


class ClaimsFailed(click.ClickException):
    """At least one claim does not hold: exit status 1."""

    exit_code = 1


def _models(model: str | None, models: str | None, config: str | None, *,
            single: bool = False) -> list[Any]:
    """The ModelConfigs named by exactly one of --model, --models or --config."""
    from . import series

    given = [x for x in (model, models, config) if x is not None]
    if len(given) != 1:
        raise ReportInputError("give exactly one of --model NAME, --models A,B,... or --config PATH.")
    if config is not None:
        from costmodel.config import ConfigError
        from costmodel.presets import load_config_file

        try:
            cfgs = [load_config_file(config)]
        except ConfigError as error:
            raise ReportInputError(str(error)) from None
    elif model is not None:
        cfgs = [series.load_model(model)]
    else:
        cfgs = [series.load_model(name) for name in series.model_names(models)]
    if single and len(cfgs) != 1:
        raise ReportInputError("this figure is drawn for one model; give --model NAME.")
    return cfgs


def _command_line() -> str:
    """The command as typed (for the report's 'Made with' line), without the interpreter."""
    return " ".join(shlex.quote(arg) for arg in ["python", "cli.py", *sys.argv[1:]]) \
        if sys.argv and sys.argv[0].endswith("cli.py") else ""


def model_choice(function):
    function = click.option("--config", "config", type=str,
                            help="A Hugging Face config.json or a ModelConfig JSON file.")(function)
    function = click.option("--models", "models", type=str,
                            help="Several presets, comma-separated (e.g. gpt2,llama2-7b).")(function)
    return click.option("--model", "-m", "model", type=str,
                        help="A preset name or alias, any case (see `models`), or a Hugging Face Hub id "
                             "(org/name: its config.json, from the local cache first).")(function)


# ---------------------------------------------------------------------------------------------
# report


@click.command()
@model_choice
@click.option("--out", "-o", required=True, type=str, help="Output directory (created if missing).")
@click.option("--batch", "-b", type=click.IntRange(min=1), default=1, show_default=True,
              help="Sequences per batch for the summary and the memory figures.")
@click.option("--dtype", type=DtypeChoice(DTYPES), default=DEFAULT_DTYPE, show_default=True,
              help="Activation and weight dtype for the summary and the memory figures.")
@click.option("--no-measure", is_flag=True,
              help="Skip every measurement (torch): faster, no formula-vs-measurement figure.")
@click.option("--no-full-size", is_flag=True,
              help="Measure only tiny models on CPU tensors (skip full-size FakeTensorMode runs).")
@click.option("--tp", type=int, default=None, help="A layout: tensor-parallel ranks (adds the layout figures).")
@click.option("--pp", type=int, default=None, help="A layout: pipeline ranks.")
@click.option("--dp", type=int, default=None, help="A layout: data-parallel ranks.")
@click.option("--zero", type=click.IntRange(0, 3), default=None, help="A layout: ZeRO stage.")
@click.option("--sp", is_flag=True, default=None, help="A layout: sequence parallelism.")
@click.option("--microbatches", type=int, default=None, help="A layout: micro-batches per step.")
@click.option("--framework", type=click.Choice(FRAMEWORK_NAMES), default=None,
              help="A layout: whose conventions.")
@click.option("--hardware", "hardware_name", default=DEFAULT_HARDWARE, show_default=True,
              help="The GPU of the layout figures.")
@click.option("--seq-len", "-n", type=LENGTH, default=None,
              help="The layout figures' sequence length.")
def report(model, models, config, out, batch, dtype, no_measure, no_full_size, tp, pp, dp, zero, sp,
           microbatches, framework, hardware_name, seq_len) -> None:
    """A report of one or several models: index.html, report.md, figures (PNG, SVG) and CSV tables.

    Figures: where the FLOPs go vs n, the regime map, memory vs n against GPUs, the generation cost
    with and without a KV cache, parameters across presets and formula vs measurement; with a
    layout (--tp/--pp/--dp...), each rank's memory beside the plan's best layouts and their step
    times; then the introductory articles' claims, checked. Progress goes to stderr; the paths written to stdout.
    """
    from costmodel.config import ConfigError

    from . import report as build
    from .series import make_workload

    given = {k: v for k, v in dict(tp=tp, pp=pp, dp=dp, zero=zero, sp=sp, microbatches=microbatches,
                                   framework=framework).items() if v is not None}
    layout = None
    if not given:  # --hardware and --seq-len shape only the layout figures: typed alone they did nothing
        from click.core import ParameterSource

        context = click.get_current_context()
        typed = [option for name, option in (("hardware_name", "--hardware"), ("seq_len", "--seq-len"))
                 if context.get_parameter_source(name) == ParameterSource.COMMANDLINE]
        if typed:
            raise ReportInputError(f"{' and '.join(typed)}: read only by the layout figures; add a layout (--tp, "
                                   "--pp, --dp, --zero, --sp, --microbatches or --framework).")
    if given:
        from costmodel.hardware import load_hardware
        from costmodel.layout import Layout

        try:
            layout = Layout(**given)
            hardware = load_hardware(hardware_name)
            if layout.gpus > 1:  # a file without the link: one line here, not a traceback after minutes of figures
                hardware.link(layout.gpus)
        except ConfigError as error:
            raise ReportInputError(str(error)) from None
        dtype = dtype_on(hardware, dtype)  # bf16 on a T4: its fp16 by default, one line when typed

    if not no_measure:
        require_measure_extra("report (without --no-measure)")
    cfgs = _models(model, models, config)
    dtype = make_workload(dtype=dtype).dtype
    out_path = Path(out)
    if out_path.exists() and not out_path.is_dir():
        raise ReportInputError(f"{out}: exists and is not a directory.")
    if layout is not None:
        for cfg in cfgs:
            try:
                layout.check(cfg)
            except ConfigError as error:
                raise ReportInputError(str(error)) from None
    ensure_directory(out_path)  # a folder that cannot be made is refused before minutes of figures, not after
    made = build.build(cfgs, batch=batch, dtype=dtype, measure=not no_measure,
                       full_size=not no_full_size, command=_command_line(), layout=layout,
                       hardware=hardware_name, seq_len=seq_len)
    written = build.write(made, out_path)
    index = out_path / "index.html"
    click.echo(f"wrote {len(written)} files under {out_path}/; open {index}", err=True)
    click.echo(str(index))


# ---------------------------------------------------------------------------------------------
# plot


@click.group()
def plot() -> None:
    """One figure to a file (.png, .svg or .pdf): flops, regimes, memory, generation, params, kv-cache, validation."""


def _figure_options(function):
    function = click.option("--csv", "csv_path", type=str, default=None,
                            help="Also write the figure's numbers as CSV.")(function)
    return click.option("--out", "-o", required=True, type=str,
                        help="The figure file: .png, .svg or .pdf.")(function)


def _save(made: Any, out: str, csv_path: str | None) -> None:
    """Render and write the figure (its suffix already checked by _check_out, before the work)."""
    from . import output

    fmt = output.figure_format(out, "--out")
    made.render((fmt,))
    output.write_bytes(out, made.images[fmt])
    if csv_path:
        output.write_text(csv_path, output.csv_text(made.headers, made.rows))
    click.echo(out)


def _check_out(out: str, csv_path: str | None) -> None:
    """The figure's suffix and both destinations, before the work: nothing is written when either
    path is bad (the figure used to be written before a --csv into a missing folder failed)."""
    from .output import check_destination, figure_format

    figure_format(out, "--out")
    for path in (out, csv_path):
        if path:
            check_destination(path)


@plot.command("flops")
@model_choice
@_figure_options
def plot_flops(model, models, config, out, csv_path) -> None:
    """Where the forward FLOPs go vs n, with the crossover n* marked (one panel per model)."""
    from . import report as build

    _check_out(out, csv_path)
    _save(build.make_flops(_models(model, models, config)), out, csv_path)


@plot.command("regimes")
@model_choice
@_figure_options
def plot_regimes(model, models, config, out, csv_path) -> None:
    """The (n, d) plane shaded by the dominant term, every preset at its usual context."""
    from . import report as build

    _check_out(out, csv_path)
    _save(build.make_regimes(_models(model, models, config)), out, csv_path)


@plot.command("memory")
@model_choice
@_figure_options
@click.option("--batch", "-b", type=click.IntRange(min=1), default=1, show_default=True,
              help="Sequences per batch.")
@click.option("--dtype", type=DtypeChoice(DTYPES), default=DEFAULT_DTYPE, show_default=True,
              help="Activation and weight dtype.")
def plot_memory(model, models, config, out, csv_path, batch, dtype) -> None:
    """Activations (eager, flash, recomputation) and the KV cache vs n, against GPU memory."""
    from . import report as build
    from .series import make_workload

    _check_out(out, csv_path)
    (cfg,) = _models(model, models, config, single=True)
    _save(build.make_memory(cfg, batch, make_workload(dtype=dtype).dtype), out, csv_path)


@plot.command("generation")
@model_choice
@_figure_options
@click.option("--no-measure", is_flag=True, help="Skip the FlopCounterMode points.")
def plot_generation(model, models, config, out, csv_path, no_measure) -> None:
    """Cumulative FLOPs of generating T tokens with and without a KV cache."""
    from . import report as build
    from .output import progress

    _check_out(out, csv_path)
    if not no_measure:
        require_measure_extra("plot generation (without --no-measure)")
    (cfg,) = _models(model, models, config, single=True)
    made = build.make_generation(cfg, not no_measure, progress)
    if made is None:
        raise ReportInputError(
            f"model {cfg.name!r} is an {cfg.architecture} without an LM head; it does not generate."
        )
    _save(made, out, csv_path)


def _highlight_options(function):
    """--model/--models/--config as the presets to highlight in a figure across all presets."""
    function = click.option("--config", "config", type=str, help="A config file to add and highlight.")(function)
    function = click.option("--models", "models", type=str, help="Presets to highlight, comma-separated.")(function)
    return click.option("--model", "-m", "model", type=str, help="A preset to highlight.")(function)


def _save_across_presets(make: str, model, models, config, out, csv_path) -> None:
    """A figure across every preset, the models given (if any) highlighted."""
    from . import report as build

    _check_out(out, csv_path)
    cfgs = _models(model, models, config) if (model or models or config) else []
    _save(getattr(build, make)(cfgs), out, csv_path)


@plot.command("params")
@_highlight_options
@_figure_options
def plot_params(model, models, config, out, csv_path) -> None:
    """Parameters per block across presets, and the rule of thumb 12 L d^2 + embeddings vs exact."""
    _save_across_presets("make_params", model, models, config, out, csv_path)


@plot.command("kv-cache")
@_highlight_options
@_figure_options
def plot_kv_cache(model, models, config, out, csv_path) -> None:
    """KV-cache bytes per token across the decoder presets: MHA, GQA, MQA, MLA and windows."""
    _save_across_presets("make_kv_cache", model, models, config, out, csv_path)


@plot.command("validation")
@model_choice
@_figure_options
@click.option("--no-full-size", is_flag=True, help="Measure only the tiny models on CPU tensors.")
def plot_validation(model, models, config, out, csv_path, no_full_size) -> None:
    """Every measured quantity against the cost tree (log-log, y = x)."""
    from . import report as build
    from .output import progress

    _check_out(out, csv_path)
    require_measure_extra("plot validation")
    from costmodel.config import ConfigError

    cfgs = _models(model, models, config)
    try:
        made = build.make_validation(cfgs, progress, full_size=not no_full_size)
    except ConfigError as error:  # no model the reference builds: nothing to plot
        raise ReportInputError(str(error)) from None
    _save(made, out, csv_path)


# ---------------------------------------------------------------------------------------------
# claims


@click.command()
@click.option("--no-measure", is_flag=True, help="Check the cost tree's values only (no torch).")
@click.option("--json", "as_json", is_flag=True, help="The claims as JSON on stdout.")
def claims(no_measure, as_json) -> None:
    """The claims of the introductory articles this tool grew from, each checked against the cost tree and, where possible, a measurement.

    Prints every claim with a check mark or a cross, and Vaswani et al. 2017's Table 1 at
    d = 512; exits with status 1 if any claim fails.
    """
    import json

    from validate import needs_measure_extra

    from .claims import check_claims, render_claims, render_table1, table1
    from .output import progress

    missing = needs_measure_extra("measuring the claims")
    if missing and not no_measure:
        click.echo(f"note: {missing} Checking the cost tree's values only.", err=True)
        no_measure = True
    checked = check_claims(measure=not no_measure, progress=progress)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in checked], indent=2))
    else:
        click.echo(render_claims(checked))
        click.echo("")
        click.echo(render_table1(table1()))
    failed = [c.key for c in checked if not c.holds]
    if failed:
        raise ClaimsFailed(f"{len(failed)} of {len(checked)} claims fail: {', '.join(failed)}.")


COMMANDS = [report, plot, claims]  # sweep: cli/sweep.py (it shares estimate's options)
