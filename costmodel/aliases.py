"""A names file read the one way: each preset's other names, from a JSON object keyed by preset name
(costmodel/presets/aliases.json for the models, costmodel/hardware_aliases.json for the hardware).
Keys that start with "_" hold the file's other data; any other key must name a preset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from .errors import ConfigError, show


def read_aliases(path: Path, names: Iterable[str], what: str) -> dict[str, tuple[str, ...]]:
    """Each of `names` -> its other names in the file's order, () for one the file does not list; a key
    that is no name (nor starts with "_"): ConfigError "<file>: '<key>' is not a <what>."."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = list(names)
    unknown = [key for key in data if not key.startswith("_") and key not in names]
    if unknown:
        raise ConfigError(f"{path.name}: {show(unknown[0])} is not a {what}.")
    return {name: tuple(data.get(name, ())) for name in names}
