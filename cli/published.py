"""`published`: published training runs beside the layout model's figures for them."""

from __future__ import annotations

import json

import click

from .options import json_option


@click.command()
@json_option("The rows as JSON on stdout.")
@click.option("--host-syncs/--no-host-syncs", default=True,
              help="Kernel model: price the host time a Megatron-Core MoE layer's device-to-host sync exposes "
                   "(each sync window the longer of the host's calls and the GPU's work; "
                   "costmodel/layout/host_syncs.py). On by default: Megatron's dropless dispatchers sync "
                   "the host once a MoE layer; --no-host-syncs: the host runs ahead.")
def published(as_json, host_syncs) -> None:
    """Published training runs beside the layout model: Narayanan et al. 2021 Table 1 (parameters,
    TFLOP/s per GPU), Korthikanti et al. 2022 Table 5 (seconds per iteration, MFU, HFU), more published
    runs (costmodel/published_runs.json), DeepSeek-V3 and Llama 3 405B's 131k-context run."""
    from reports.published_runs import published_tables

    from .format import render_published

    tables = published_tables(host_syncs)
    if as_json:
        from costmodel.json_units import JSON_UNITS

        click.echo(json.dumps({**tables, "units": JSON_UNITS["published"]}, indent=2))
        return
    click.echo(render_published(tables))
