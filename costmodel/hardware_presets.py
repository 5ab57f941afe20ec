"""Finding a hardware by name: the bundled presets (costmodel/hardware/*.json), their aliases and the
names refused as no single preset (hardware_aliases.json), any spelling of them (preset_key), a GPU
count typed into a name (refuse_a_count: "8xh100"), and where this machine's `local` calibration is cached.

Names only, no Hardware: costmodel/hardware.py reads the files these names point to (load_hardware)
and re-exports every name here, where callers have always imported them.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

from .aliases import read_aliases
from .errors import ConfigError, show

HARDWARE_DIR = Path(__file__).resolve().parent / "hardware"


def local_cache_path() -> Path:
    """Where the `local` calibration is cached (XDG cache directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "transformer-costmodel" / "local.json"


def hardware_names() -> list[str]:
    return [*preset_names(), "local"]


@lru_cache(maxsize=None)
def preset_names() -> tuple[str, ...]:
    """The bundled presets' names (hardware/*.json), read once: every Hardware checks network_of against them."""
    return tuple(sorted(p.stem for p in HARDWARE_DIR.glob("*.json")))


HARDWARE_ALIASES_FILE = Path(__file__).resolve().parent / "hardware_aliases.json"


@lru_cache(maxsize=None)
def hardware_aliases() -> dict[str, tuple[str, ...]]:
    """Each preset's other names (hardware_aliases.json: short and driver's names), in order; () if none."""
    return read_aliases(HARDWARE_ALIASES_FILE, hardware_names(), "hardware preset")


@lru_cache(maxsize=None)
def refused_hardware_names() -> dict[str, str]:
    """Names that are no single preset (hardware_aliases.json "_refused", normalized: 'v100', 'gh200',
    'mi250x-package'), each with what to give instead; one that is a preset or an alias: a data error."""
    data = json.loads(HARDWARE_ALIASES_FILE.read_text(encoding="utf-8")).get("_refused", {})
    refused = {normalized_name(name): message for name, message in data.items()}
    clash = [name for name in refused if name in hardware_names() or name in _preset_by_alias()]
    if clash:
        raise ConfigError(f"{HARDWARE_ALIASES_FILE.name}: {show(clash[0])} is refused and also a hardware name.")
    return refused


@lru_cache(maxsize=None)
def _preset_by_alias() -> dict[str, str]:
    """Every alias, normalized -> its preset; one naming two presets or shadowing one: a data error."""
    found: dict[str, str] = {}
    for name, aliases in hardware_aliases().items():
        for alias in aliases:
            key = normalized_name(alias)
            if key in hardware_names() or found.get(key, name) != name:
                raise ConfigError(f"{HARDWARE_ALIASES_FILE.name}: {show(alias)} names two hardware presets.")
            found[key] = name
    return found


def normalized_name(name: str) -> str:
    """A preset's name as typed any way: case, spaces and underscores do not matter."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def preset_key(name: str) -> str:
    """The preset a name means as --hardware reads it (any case; less its vendor words, hardware_aliases.json
    "_vendor_words", where only that is known; an alias), else the name normalized."""
    key, known = normalized_name(name), {*hardware_names(), *_preset_by_alias(), *refused_hardware_names()}
    words = [normalized_name(w) + "-" for w in json.loads(HARDWARE_ALIASES_FILE.read_text(encoding="utf-8"))["_vendor_words"]]
    key = key if key in known else next((key[len(w):] for w in words if key.startswith(w) and key[len(w):] in known), key)
    return _preset_by_alias().get(key, key)


def is_hardware_path(name: str) -> bool:
    return name.lower().endswith(".json") or os.sep in name or "/" in name


def names_hardware(name: str) -> str | None:
    """The preset (or the refused family name: 'v100', 'a100') a name means as --hardware reads it, else None:
    what `--model h100` says it is (it read "unknown model 'h100'. Known: ..." and the 106 models' names)."""
    if not isinstance(name, str) or not name.strip() or is_hardware_path(name):
        return None
    key = preset_key(name)
    return key if key in preset_names() or key in refused_hardware_names() else None


def close_presets(key: str) -> list[str]:
    """Up to three presets a mistyped name may mean: first those whose every word the name holds
    ("h200-sxm-141gb" holds h200), then difflib's nearest preset names, then aliases."""
    import difflib

    words = set(key.split("-"))
    held = [name for name in hardware_names() if set(name.split("-")) <= words]
    near = difflib.get_close_matches(key, hardware_names(), n=3, cutoff=0.5)
    aliases = _preset_by_alias()
    near += [aliases[match] for match in difflib.get_close_matches(key, list(aliases), n=3, cutoff=0.5)]
    return list(dict.fromkeys(held + near))[:3]


#: A GPU count typed into the GPU's name: 8xh100, 8 x H100, h100x8, h100:8, 8*a100-80gb (normalized_name's form).
COUNTED = re.compile(r"^(?:(?P<before>\d+)-?[x*×]-?(?P<after>.+)|(?P<gpu>.+?)-?[x*×:]-?(?P<count>\d+))$")


def refuse_a_count(name: str, key: str) -> None:
    """A name that is a preset with a count beside it ("8xh100") said "Did you mean h800, h200, h100-sxm?":
    the count was read as part of a name. One line now says where the count goes."""
    match = COUNTED.match(key)
    if match is None:
        return
    gpu, count = (match["after"], match["before"]) if match["before"] else (match["gpu"], match["count"])
    preset = preset_key(gpu)
    if preset in hardware_names() and int(count) > 0:
        raise ConfigError(f"--hardware {show(name)}: --hardware names one GPU ({preset}); give the count apart: "
                          f"--hardware {preset} --gpus {int(count)} (estimate, simulate, plan), or serve's --tp and "
                          "--replicas; finetune sizes one GPU.")
