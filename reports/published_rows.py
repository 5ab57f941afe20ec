"""What every published row reads the same way, training or decoding (costmodel/published_runs.json):
the hardware it names with its source's departures from the preset (run_hardware), the model it names
with the row's own changes to its preset (run_model), and a setting the row states for itself, else its
source (stated). reports/published_runs.py (training rows, the
tables) and reports/published_decode.py (decoding rows) both read them."""

from __future__ import annotations

from typing import Any

from costmodel.hardware import load_hardware


def run_hardware(source: dict[str, Any], run: dict[str, Any] | None = None) -> Any:
    """The hardware a run names (its own "hardware", else its source's), with the departures from
    the preset its source states: a power cap (power_limit_watts) and "hardware_overrides" (e.g.
    torchtitan's H100s: 96 GB of HBM2e at 2.4 TB/s, capped at 500 W)."""
    from costmodel.hardware import Hardware

    name = (run or {}).get("hardware", source["hardware"])
    hardware = load_hardware(name)
    changes = dict(source.get("hardware_overrides", {}))
    if "power_limit_watts" in source:
        changes["power_limit_watts"] = source["power_limit_watts"]
    if changes:  # another capacity: the preset's reported total (device_memory_bytes) is not this card's
        data = {k: v for k, v in hardware.to_dict().items() if k != "device_memory_bytes" or "memory_bytes" not in changes}
        return Hardware.from_dict(dict(data, **changes), name)
    return hardware


def stated(run: dict[str, Any], source: dict[str, Any], key: str, default: Any = None) -> Any:
    """A run's own value for `key`, else its source's, else the default."""
    return run.get(key, source.get(key, default))


def run_model(run: dict[str, Any]) -> Any:
    """The model a run names: its "preset" (a source's model that has a preset's sizes under another name:
    Llama 3.1 8B as llama3-8b), else its "model", with the run's "config_changes" where it states some (a
    preset's family at the run's own sizes; a window the run's code keeps: AutoAWQ's fused cache)."""
    from costmodel.presets import load_preset

    cfg = load_preset(run.get("preset", run["model"]))
    if "config_changes" in run:
        cfg = cfg.replace(name=run["model"], **run["config_changes"])
    return cfg
