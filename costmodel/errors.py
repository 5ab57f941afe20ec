"""The error every invalid input raises (a model config, a workload, a layout, a hardware file),
and the checks of one value that raise it with a sentence naming the field.

It lives apart from config.py so that modules config.py reads (quantization.py, workload.py) can
raise it without importing config.py back (no import cycle). costmodel.config re-exports it.
"""

from __future__ import annotations

from typing import Any

#: Largest accepted value of any size: beyond it a value is a typo, not a model (10^9 tokens,
#: widths or vocabulary entries; layers and heads stay far below it in any real model).
MAX_SIZE = 10**9
#: Layers a config may list one by one (a per-layer pattern is a tuple of this length; the deepest
#: published models have a few hundred).
MAX_LAYERS = 100_000


class ConfigError(ValueError):
    """An invalid model config or workload; the message is one sentence for the user."""


def show(value: Any, limit: int = 60) -> str:
    """A value as it reads in an error message: its repr, cut to one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(owner: str, name: str, value: Any, minimum: int = 1, maximum: int = MAX_SIZE) -> None:
    """An integer from minimum to maximum (MAX_SIZE unless told), else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{owner}: {name} must be an integer, got {show(value)}.")
    if value < minimum:
        raise ConfigError(f"{owner}: {name} must be at least {minimum}, got {value}.")
    if value > maximum:
        raise ConfigError(f"{owner}: {name} = {value} is beyond {maximum:,}; is it a typo?")


def check_number(owner: str, name: str, value: Any, zero: bool = False) -> None:
    """Null, or a finite number above 0 (at least 0 with zero), else ConfigError."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            (0 <= value if zero else 0 < value) and value < float("inf")):
        kind = "a number >= 0" if zero else "a positive number"
        raise ConfigError(f"{owner}: {name} must be {kind} or null, got {show(value)}.")


def check_choice(owner: str, name: str, value: Any, choices: tuple[str, ...]) -> None:
    """One of choices, else ConfigError listing them."""
    if value not in choices:
        raise ConfigError(f"{owner}: {name} must be one of {', '.join(choices)}; got {show(value)}.")


def check_bool(owner: str, name: str, value: Any) -> None:
    """True or False, else ConfigError."""
    if not isinstance(value, bool):
        raise ConfigError(f"{owner}: {name} must be true or false, got {show(value)}.")


def graphs_replayed(name: str, value: Any) -> bool:
    """A decode step replayed from a CUDA graph (simulate's and plan's cuda_graphs): True or False, or the
    command's words, `on` (replayed) or `off` and `auto` (eager, as Hugging Face generate decodes); anything
    else one line. (The string "off" was truthy: it replayed graphs.)"""
    if isinstance(value, bool):
        return value
    if value in ("on", "off", "auto"):
        return value == "on"
    raise ConfigError(f"{name} must be true, false, 'on', 'off' or 'auto', got {show(value)}.")


def require_decoder(cfg: Any) -> None:
    """Generation needs a decoder: an encoder-only model is refused in one sentence."""
    if not cfg.n_decoder_layers:
        raise ConfigError(f"model {show(cfg.name)} has no decoder; it does not generate.")
