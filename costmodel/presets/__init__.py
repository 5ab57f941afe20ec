"""Named models as data: one JSON file per preset, read only when asked for.

A file with a "model_type" key is a Hugging Face config.json (read by costmodel.hf); any other file
holds ModelConfig's own fields. load_config_file() reads a user's file the same way.
aliases.json lists each preset's other names (its Hugging Face Hub ids: the base checkpoint's, and
its chat or instruct checkpoints' where their config.json has the same architecture and context);
a name or an alias matches whatever its case, a preset's name whatever its hyphens and underscores
too, and a config loaded by any of them is named after its preset.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..aliases import read_aliases
from ..config import ConfigError, ModelConfig, show
from ..hardware_presets import names_hardware
from ..hf import from_hf_config
from ..hub_cache import HUB_ID, repo_id, snapshot_config

PRESET_DIR = Path(__file__).resolve().parent
ALIASES_FILE = PRESET_DIR / "aliases.json"


def preset_names() -> list[str]:
    """The presets, sorted by name."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.json") if p != ALIASES_FILE)


@lru_cache(maxsize=None)
def preset_aliases() -> dict[str, tuple[str, ...]]:
    """Each preset's other names (aliases.json), in the file's order; () for a preset without."""
    return read_aliases(ALIASES_FILE, preset_names(), "preset")


@lru_cache(maxsize=None)
def _names_by_key() -> dict[str, str]:
    """Every preset name and alias, case-folded -> the preset's name. An alias that collides
    with another name or alias is an error in the data file, not a silent choice."""
    found: dict[str, str] = {}
    for name, aliases in preset_aliases().items():
        for spelling in (name, *aliases):
            key = spelling.casefold()
            if found.get(key, name) != name:
                raise ConfigError(f"{ALIASES_FILE.name}: {show(spelling)} names both "
                                  f"{found[key]} and {name}.")
            found[key] = name
    return found


def loose_key(name: str) -> str:
    """A preset's name with case ignored and hyphens, underscores and spaces dropped except
    between two digits, where they count as one hyphen: `Llama-2-7B` and `llama_2_7b` are
    llama2-7b, but `llama-38b` is not llama3-8b. Dots stay (qwen2.5-7b is not a Qwen2 57B)."""
    return re.sub(r"(?<!\d)-|-(?!\d)", "", re.sub(r"[-_\s]+", "-", name.strip().casefold()))


@lru_cache(maxsize=None)
def _names_by_loose_key() -> dict[str, str]:
    """Every preset's own name by loose_key; two names meeting there would be an error in the data."""
    found: dict[str, str] = {}
    for name in preset_names():
        key = loose_key(name)
        if found.get(key, name) != name:
            raise ConfigError(f"presets {found[key]} and {name} differ only in case, hyphens or underscores.")
        found[key] = name
    return found


@lru_cache(maxsize=None)
def _names_by_hub_name() -> dict[str, str]:
    """Each Hub-id alias's name without its organization, by loose_key -> its preset
    (`Llama-3.1-8B-Instruct` for meta-llama/Llama-3.1-8B-Instruct); a name two presets' ids share
    is left out (no silent choice)."""
    found: dict[str, str] = {}
    shared: set[str] = set()
    for name, aliases in preset_aliases().items():
        for alias in aliases:
            if "/" in alias:
                key = loose_key(alias.split("/", 1)[1])
                if found.get(key, name) != name:
                    shared.add(key)
                found[key] = name
    return {key: name for key, name in found.items() if key not in shared}


def resolve_name(name: str) -> str | None:
    """The preset that a name or an alias stands for, whatever its case, a preset's own name
    whatever its hyphens and underscores (loose_key; not a Hub id's), and a Hub id's name typed
    without its organization (Llama-3.1-8B-Instruct); None if none does."""
    if not isinstance(name, str):
        return None
    exact = _names_by_key().get(name.casefold())
    if exact is not None or "/" in name:
        return exact
    key = loose_key(name)
    return _names_by_loose_key().get(key) or _names_by_hub_name().get(key)


def parse_config(text: str, source: str, name: str) -> ModelConfig:
    """A config from JSON text: a Hugging Face config.json or ModelConfig's own fields."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{source}: not valid JSON ({error.msg} at line {error.lineno}).") from None
    return config_from_dict(data, source, name)


#: Fields only a Hugging Face config.json has (ModelConfig's are d_model, n_heads, n_layers...): a dict that
#: has one and not d_model is Hugging Face's even without model_type, whose absence is then the error.
HF_MARKERS = frozenset({"hidden_size", "num_hidden_layers", "num_attention_heads"})


def config_from_dict(data: Any, source: str, name: str) -> ModelConfig:
    """A config from a parsed JSON object: a Hugging Face config.json or ModelConfig's fields."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}.")
    if "model_type" in data or "architectures" in data or ("d_model" not in data and HF_MARKERS & data.keys()):
        return from_hf_config(data, name=name, source=source)  # without model_type: "add model_type", not
        # "unknown field 'hidden_act'" (ModelConfig's reading)
    data = dict(data)
    data.setdefault("name", name)
    return ModelConfig.from_dict(data, source=source)


def close_spellings(name: str, cutoff: float = 0.5) -> list[str]:
    """Up to three preset names or aliases spelled like `name` (difflib's ratio at least cutoff, any case)."""
    spellings = {s.casefold(): s for n, a in preset_aliases().items() for s in (n, *a)}
    return [spellings[c] for c in difflib.get_close_matches(name.casefold(), spellings, n=3, cutoff=cutoff)]


def load_preset(name: str) -> ModelConfig:
    """The ModelConfig of the preset a name or an alias stands for (see resolve_name); an unknown
    name suggests the closest names and aliases."""
    preset = resolve_name(name)
    if preset is None and "," in str(name) and all(resolve_name(part.strip()) for part in str(name).split(",")):
        raise ConfigError(f"--model {show(name)}: one model a run; to set several side by side, `report --models "
                          f"{','.join(part.strip() for part in str(name).split(','))} --out DIR`.")
    if preset is None and (gpu := names_hardware(name)) is not None:
        raise ConfigError(f"unknown model {show(name)}: {show(name)} names a GPU"
                          f"{f' ({gpu})' if gpu != name.casefold() else ''}, not a model; it goes to "
                          "--hardware (hardware= in Python), and --model takes a preset (`models`), a Hub id or a "
                          "config.json.")
    if preset is None:
        close = close_spellings(str(name))
        hint = (f" Did you mean {', '.join(close)}?" if close
                else f" Known: {', '.join(preset_names())} (see `models` for their aliases). Any other model: its "
                     "Hub id (--model org/name) or its config.json (--config path/to/config.json).")
        raise ConfigError(f"unknown model {show(name)}.{hint}")
    path = PRESET_DIR / f"{preset}.json"
    return parse_config(path.read_text(), source=f"preset {preset}", name=preset)


#: The files a checkpoint's weights come in, which a user may point --model at in place of its config.json.
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".ckpt")


def weights_file(path: Path) -> str:
    """The line for a weights file given as the model (it read "not valid JSON" or "unknown model ... Known:"):
    the sizes come from the config.json beside it."""
    beside = path.parent / "config.json"
    folder = str(path.parent) if str(path.parent) != "." else "."
    where = (f"pass its folder (--model {folder}) or --config {beside}" if beside.is_file()
             else "pass the config.json that comes with it (--config path/to/config.json)")
    return f"{path}: a weights file, not a config: the model's sizes are read from its config.json; {where}."


def hub_id_hint(text: str) -> str:
    """What to do with a Hub id given as a file (`--config meta-llama/Llama-3.1-8B` read "no such file." alone)."""
    return (f" A Hub id is read by --model: --model {text}." if HUB_ID.match(text) and not text.lower().endswith(".json")
            else "")


def load_config_file(path: str | Path) -> ModelConfig:
    """A user's config file: a Hugging Face config.json or ModelConfig fields, as JSON only; a
    folder (a model downloaded from the Hub) is read through its config.json, a Hub cache
    repository's folder through the snapshot refs/main names (hub_cache.py), named org/name."""
    typed, path = str(path), Path(path).expanduser()  # "~/models/x" quoted, or from Python, read ~ literally
    if path.suffix.lower() in WEIGHT_SUFFIXES:
        raise ConfigError(weights_file(path))
    if path.is_dir():
        cached = None if (path / "config.json").is_file() else snapshot_config(path)  # a Hub cache repo folder
        if cached is None and not (path / "config.json").is_file():
            raise ConfigError(f"{path}: is a directory with no config.json, not a config file.")
        path = cached or path / "config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file.{hub_id_hint(typed)}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file.") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror}).") from None
    except ValueError:  # a null byte in the name (open() refuses it)
        raise ConfigError(f"{str(path)!r}: not a file name (it holds a null byte).") from None
    name = repo_id(path) or (path.parent.name if path.name == "config.json" and path.parent.name else path.stem)
    return parse_config(text, source=str(path), name=name or "config")
