"""Named models as data: one JSON file per preset, read only when asked for.

A file with a "model_type" key is a Hugging Face config.json (read by costmodel.hf); any other file
holds ModelConfig's own fields. load_config_file() reads a user's file the same way.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from ..config import ConfigError, ModelConfig, show
from ..hf import from_hf_config

PRESET_DIR = Path(__file__).resolve().parent


def preset_names() -> list[str]:
    """The presets, sorted by name."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def parse_config(text: str, source: str, name: str) -> ModelConfig:
    """A config from JSON text: a Hugging Face config.json or ModelConfig's own fields."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{source}: not valid JSON ({error.msg} at line {error.lineno}).") from None
    return config_from_dict(data, source, name)


def config_from_dict(data: Any, source: str, name: str) -> ModelConfig:
    """A config from a parsed JSON object: a Hugging Face config.json or ModelConfig's fields."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}.")
    if "model_type" in data:
        return from_hf_config(data, name=name, source=source)
    data = dict(data)
    data.setdefault("name", name)
    return ModelConfig.from_dict(data, source=source)


def load_preset(name: str) -> ModelConfig:
    """The named preset's ModelConfig; an unknown name suggests the closest ones."""
    path = PRESET_DIR / f"{name}.json"
    if not isinstance(name, str) or "/" in name or not path.is_file():
        names = preset_names()
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else f" Known: {', '.join(names)}."
        raise ConfigError(f"unknown model {show(name)}.{hint}")
    return parse_config(path.read_text(), source=f"preset {name}", name=name)


def load_config_file(path: str | Path) -> ModelConfig:
    """A user's config file: a Hugging Face config.json or ModelConfig fields, as JSON only."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file.") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file.") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror}).") from None
    name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    return parse_config(text, source=str(path), name=name or "config")
