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


def unknown_field(name: Any, known: Any, list_known: bool = True) -> str:
    """A field a file's schema does not hold, said with the one or two it likely misspells or shortens
    ("price_per_hour": price_per_gpu_hour; "memory": memory_bytes; "n_layers": n_decoder_layers or
    n_encoder_layers), else with the known fields (list_known): a hardware file's refusal listed all 38
    fields, a ModelConfig JSON's none."""
    key, known = str(name), list(known)
    words = set(key.split("_"))
    near = ([field for field in known if field.startswith(key + "_")][:1]
            or ([field for field in known if words <= set(field.split("_"))][:2] if len(words) > 1 else [])
            or _nearest(key, known))
    if near:
        return f"unknown field {show(name)} (did you mean {' or '.join(near)}?)"
    return f"unknown field {show(name)}" + (f" (known: {', '.join(known)})" if list_known else "")


def _nearest(key: str, known: list[str]) -> list[str]:
    """The one or two names spelled most like key (difflib's ratio at least 0.8: "fp9", as near fp8 as fp4, gets
    the list of dtypes), a second only as near as the first, within 0.02 ("intra_node_bandwith_bytes_per_s"
    means intra_node_, not inter_node_)."""
    import difflib

    ratios = sorted(((difflib.SequenceMatcher(None, key, name).ratio(), -i, name) for i, name in enumerate(known)),
                    reverse=True)
    best = ratios[0][0] if ratios else 0.0
    return [name for ratio, _, name in ratios[:2] if ratio >= 0.8 and ratio >= best - 0.02]
