"""The local Hugging Face cache's layout, as huggingface_hub writes it: a repository's folder
`models--<org>--<name>` holds `refs/main` (the commit main points at) and `snapshots/<commit>/`
(the files). hub.py reads a Hub id's config.json through it; a `--config` path into the cache (the
repository's folder, or a snapshot's) is read and named through it too, so the model is called
org/name, not by its commit hash."""

from __future__ import annotations

import re
from pathlib import Path

#: What a Hub model id looks like: org/name, letters, digits, '-', '_', '.' (here, not in hub.py, so that
#: presets/ reads it without importing hub.py, which imports presets).
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")

REPO_PREFIX = "models--"


def snapshot_config(repo: Path) -> Path | None:
    """The config.json of the snapshot refs/main names in a cached repository's folder, or None."""
    try:
        commit = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):  # a refs/main of other bytes names no snapshot (was a traceback)
        return None
    path = repo / "snapshots" / commit / "config.json"
    return path if commit and path.is_file() else None


def repo_id(config: Path) -> str | None:
    """org/name for a config.json inside a cached snapshot (models--org--name/snapshots/<commit>/),
    else None."""
    snapshot = config.parent
    repo = snapshot.parent.parent
    if snapshot.parent.name != "snapshots" or not repo.name.startswith(REPO_PREFIX):
        return None
    org, _, name = repo.name[len(REPO_PREFIX):].partition("--")
    return f"{org}/{name}" if org and name else None
