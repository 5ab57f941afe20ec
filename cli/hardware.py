"""`hardware`: the hardware presets; --measure benchmarks this machine as `local`, --out writes a
hardware file of a device, --show prints one."""

from __future__ import annotations

import json

import click

from costmodel import spec
from costmodel.config import ConfigError, Workload
from reports.output import DtypeChoice

from .inputs import InputError, require_measure_extra
from .options import json_option, refuse_typed


def measure_hardware_file(out: str, device: str, like: str | None, dtypes: tuple[str, ...], quick: bool) -> None:
    """`hardware --measure --out FILE`: measure a device and write its hardware file."""
    from pathlib import Path

    from costmodel.hardware import load_hardware

    from reports import output

    output.check_destination(out)  # before the minutes of measuring: a bad folder failed only at the write
    require_measure_extra("hardware --measure --out")
    import torch

    from validate.hardware_file import measure_file, write_hardware_file

    if device == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device {device}: no such device here (cpu, or cuda where a GPU is present).")
    try:
        reference = load_hardware(like) if like else None
        wanted = tuple(dict.fromkeys(Workload(dtype=d).dtype for d in dtypes)) or (("fp32",) if device == "cpu" else ("bf16",))
        path = Path(out)
        data = measure_file(path.stem, device, wanted, reference, "quick" if quick else "full")
        write_hardware_file(path, data)
    except ConfigError as error:
        raise InputError(str(error)) from None
    click.echo(str(path))


def hardware_rows() -> list[dict]:
    """Each hardware that loads (`local` only once measured), as the table and --json show it."""
    from costmodel.hardware import hardware_aliases, hardware_names, load_hardware

    rows = []
    for name in hardware_names():
        try:
            hw = load_hardware(name)
        except ConfigError:
            continue  # `local` before it is measured
        rows.append(hardware_row(hw, hardware_aliases().get(name, ())))
    return rows


def hardware_row(hw, aliases=()) -> dict:
    """One hardware as the table and --json show it."""
    return {"name": hw.name, "description": hw.description, "flops_per_s": hw.flops_per_s,
            "vector_flops_per_s": hw.vector_flops_per_s,
            "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
            "memory_bytes": hw.memory_bytes, "serving_memory_bytes": hw.serving_memory_bytes,
            "sm_count": hw.sm_count, "efficiency": hw.efficiency, "source": hw.source,
            "aliases": list(aliases)}


def _one_hardware(name: str) -> bool:
    from costmodel.hardware import load_hardware

    try:
        load_hardware(name)
    except ConfigError:
        return False
    return True


def show_named(typed: str, names: list[str], as_json: bool, options: dict[str, object]) -> None:
    """`hardware NAME [NAME...]`: each one's row and source (`hardware h100 a100-80gb` was click's "Got unexpected
    extra argument", `hardware h100,a100-80gb` "--hardware ...: one GPU here; several ... by plan --serve --rate")."""
    from costmodel.hardware import hardware_aliases, load_hardware
    from costmodel.hardware_presets import is_hardware_path

    given = [option for option, value in options.items() if value]
    if given:
        raise InputError(f"hardware {typed}: a NAME shows that hardware, which {given[0]} does not take; "
                         "leave out one of them.")
    if not names:
        raise InputError(f"hardware {typed!r}: no hardware named; `hardware` lists them all.")
    try:
        chosen = [(name, load_hardware(name)) for name in names]
    except ConfigError as error:
        raise InputError(str(error)) from None
    # a file named like a preset (`hardware --show h100-sxm > f.json`, edited) is not that preset: no aliases
    rows = [hardware_row(hw, () if is_hardware_path(name) else hardware_aliases().get(hw.name, ())) for name, hw in chosen]
    if as_json:
        click.echo(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2))
        return
    from .format import render_hardware

    click.echo(render_hardware(rows, note_local=False))
    for _, hw in chosen:
        click.echo(f"source{f' ({hw.name})' if len(chosen) > 1 else ''}: {hw.source or 'none stated (the file has no source field)'}")


@click.command()
@click.argument("names", nargs=-1)
@click.option("--measure", is_flag=True, help="Benchmark this machine (matmul and vector FLOP/s, bandwidth, overhead) and cache it as `local`.")
@click.option("--dtype", "dtypes", type=DtypeChoice(spec.DTYPES), multiple=True,
              help="With --measure: the matmul dtypes to measure (repeatable; default fp32, the first is "
              "local's default dtype; bf16 takes about a minute on this kind of CPU).")
@click.option("--show", "shown", default=None,
              help="Print one hardware (a preset's name, any case, or a path to a hardware file) as a "
              "hardware file, after checking it (docs/time.md gives the schema).")
@click.option("--out", "out", default=None,
              help="With --measure: write a hardware file here instead of caching `local` (a GEMM grid, "
              "attention, bandwidth, the Dot's read-and-reduce rate, a CUDA graph's kernel gap, the CUDA context's "
              "memory; validate/hardware_file.py).")
@click.option("--device", type=click.Choice(spec.DEVICES), default="cuda", show_default=True,
              help=f"With --out: the device to measure ({spec.DEVICES.listed()}; any case, as every choice).")
@click.option("--like", default=None, help="With --out: a preset whose datasheet peaks, interconnect and clocks to "
              "keep; the measurements become its efficiencies.")
@click.option("--quick", is_flag=True, help="With --out: a small grid (seconds; for a test).")
@json_option("As JSON on stdout.")
def hardware(names, measure, dtypes, shown, out, device, like, quick, as_json) -> None:
    """The hardware presets; NAME (a preset, in any spelling --hardware takes, or a hardware file):
    that one's row and source, several (h100 a100-80gb, or comma-separated) side by side; --measure
    benchmarks this machine as `local` (or, with --out, writes a hardware file of a device); --show
    prints one as a hardware file."""
    if names:
        whole = " ".join(names)  # `hardware NVIDIA H100 80GB HBM3` unquoted: one driver name, not four
        show_named(whole, [whole] if len(names) > 1 and _one_hardware(whole) else
                   [name.strip() for given in names for name in given.split(",") if name.strip()],
                   as_json, {"--measure": measure, "--show": shown, "--out": out, "--like": like, "--quick": quick,
                             "--dtype": dtypes})
        return

    from costmodel.hardware import load_hardware

    # each option is read in one mode: --measure --quick ran the full 15 s calibration, `hardware --like h100`
    # listed the presets, `--show h200 --out F` measured; a typed option is read or refused, never dropped
    context = click.get_current_context()
    if shown is not None:
        refuse_typed(context, {"measure": "--measure", "out": "--out", "device": "--device", "like": "--like",
                               "quick": "--quick", "dtypes": "--dtype"},
                     "--show prints a hardware as a file; it measures nothing: leave one of them out.")
    if out is None:
        refuse_typed(context, {"device": "--device", "like": "--like", "quick": "--quick"},
                     "read only with --out FILE (a hardware file measured on a device); `hardware --measure` "
                     "alone calibrates `local` on this CPU.")
        if not measure:
            refuse_typed(context, {"dtypes": "--dtype"}, "the dtypes --measure (or --out FILE) measures: add it.")
    if out is not None:
        measure_hardware_file(out, device, like, dtypes, quick)
        return
    if shown is not None:
        try:
            click.echo(json.dumps(load_hardware(shown).to_dict(), indent=2))
        except ConfigError as error:
            raise InputError(str(error)) from None
        return
    if measure:
        require_measure_extra("hardware --measure")
        from validate.calibrate import calibrate

        click.echo("measuring matmul and vector FLOP/s, memory bandwidth and per-block overhead "
                   "(about 15 seconds)...", err=True)
        calibrate(dtypes=tuple(dict.fromkeys(Workload(dtype=d).dtype for d in dtypes)) or ("fp32",))
        from costmodel.hardware import load_hardware

        try:  # the list below leaves out a `local` that does not load, and said "not measured yet"
            load_hardware("local")
        except ConfigError as error:
            raise InputError(f"hardware --measure: measured and cached, but the file is refused: {error}") from None
    rows = hardware_rows()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from .format import render_hardware

    click.echo(render_hardware(rows))
