"""`estimate`: parameters, FLOPs, memory and the regime of a model for a workload; with a layout,
each rank's memory and communication; with --hardware, whether it fits."""

from __future__ import annotations

import json

import click

from costmodel.config import ConfigError
from costmodel.defaults import fallback_note, has_attention, implied, layout_precision, unfused_note
from costmodel.flash_support import require_attention, runs_flash
from reports.output import finite

from .inputs import InputError, hardware_and_dtype, load_model, make_layout, make_workload, with_mtp
from .options import (LAYOUT_OPTIONS, OFFLOAD_OPTIONS, hardware_option, json_option, layout_options, model_options,
                      mtp_option, offload_options, refuse_typed, workload_options)


@click.command()
@model_options
@workload_options
@layout_options
@offload_options
@hardware_option(None, "A GPU (see `hardware`): say whether training and inference fit in its memory, and what to "
                 "change if not.")
@mtp_option
@click.option("--price", type=float, default=None, hidden=True,
              help="Refused: estimate has no time; it names the commands that price a run.")
@json_option("Exact integers as JSON on stdout.")
def estimate(model, config, seq_len, hardware_name, mtp, as_json, price, **options) -> None:
    """Parameters, FLOPs, memory and the regime of a model for a workload; with a layout, the
    memory and communication of each rank; with --hardware (and --gpus), whether it fits."""
    from costmodel.estimation import Estimate

    if price is not None:  # click's "No such option" named no place that prices
        raise InputError("--price: estimate has no time to price; a training run's dollars are `simulate --train "
                         "--tokens N --price P` or `plan --tokens N --price P`, a generation's `simulate --price P`, serving's "
                         "`serve --price P` or "
                         "`plan --serve --rate R --price P`.")

    refuse_typed(click.get_current_context(), {"moe_router_fusion": "--[no-]moe-router-fusion",
                                                "moe_router_load_balancing_type": "--moe-router-load-balancing-type",
                                                "moe_permute_fusion": "--[no-]moe-permute-fusion"},
                 "the MoE router's and permutations' unfused kernels and host calls are modelled as `simulate --train`'s "
                 "time only; estimate counts memory and FLOPs.")
    # the same for the layout's other settings that only a step's time reads (its memory and bytes are the same)
    refuse_typed(click.get_current_context(), {"moe_grouped_gemm": "--[no-]moe-grouped-gemm",
                                                "all_reduce": "--all-reduce", "tp_only_amax_red": "--tp-only-amax-red"},
                 "read only by a training or decode step's time (`simulate --train`, `simulate`, `plan`): the "
                 "kernels and group that run it, not what a rank holds or sends; estimate counts memory, FLOPs and "
                 "bytes.")
    layout_given = {k: options.pop(k) for k in list(options)
                    if k in LAYOUT_OPTIONS or k in OFFLOAD_OPTIONS or k == "layout_device"}
    cfg = with_mtp(load_model(model, config), mtp)
    gpus = layout_given.get("gpus")
    if hardware_name is not None and all(v is None for k, v in layout_given.items() if k != "gpus"):
        layout_given["gpus"] = None  # --gpus alone with --hardware: data parallel over them
    layout = make_layout(cfg, layout_given)
    framework = layout.framework if layout else None
    typed_code = {"impl": options["impl"], "attention": options["attention"]}  # None: the layout's framework's
    hardware, options["dtype"] = hardware_and_dtype(hardware_name, options["dtype"])
    flash = hardware is None or runs_flash(hardware)  # without a GPU: the framework's kernel as it is
    for note in (fallback_note(framework, options["impl"], options["attention"], cfg.family, has_attention(cfg)),
                 unfused_note(framework, options["attention"], flash, has_attention(cfg))):
        if note:
            click.echo(f"note: {note}", err=True)
    options.update(implied(framework, options["impl"], options["attention"], cfg.family, flash))
    try:
        options["precision"] = layout_precision(layout, options["dtype"], options["precision"])
    except ConfigError as error:
        raise InputError(str(error)) from None
    workload = make_workload(cfg, seq_len, inference=True, **options)
    try:
        result = Estimate(cfg, workload, layout)
        data = result.to_dict()
        if hardware is not None:
            from costmodel.verdict import verdict

            hardware.require_fp8(layout.fp8 if layout else None)  # a fit verdict for a layout it runs
            require_attention(hardware, typed_code["attention"])  # a typed flash on a T4: one line
            if layout is not None and layout.ep_dispatcher != "alltoall":
                from costmodel.layout.experts import check_dispatcher_peers

                check_dispatcher_peers(layout, hardware)

            data["fit"] = {"hardware": hardware.name, "training": verdict(
                cfg, workload, layout, hardware.training_memory_bytes, gpus, "training", typed_code=typed_code,
                flash=runs_flash(hardware))}
            try:
                data["fit"]["inference"] = verdict(cfg, workload, layout, hardware.serving_memory_bytes, gpus,
                                                   "inference", typed_code=typed_code, flash=runs_flash(hardware),
                                                   node_gpus=hardware.gpus_per_node)
            except ConfigError as error:  # --cp: the layout trains; serving it is refused as simulate refuses it
                data["fit"]["inference"] = {"phase": "inference", "gpus": layout.gpus, "refused": str(error)}
    except ConfigError as error:
        raise InputError(str(error)) from None
    if as_json:
        click.echo(json.dumps(finite(data), indent=2, sort_keys=False))  # a pure Mamba-2 stack's n*: null
        return
    from reports.text import render_estimate, render_fit

    click.echo(render_estimate(data, result.held_rows))
    if "fit" in data:
        click.echo("")
        click.echo(render_fit(data["fit"]))
