"""Where the project's tool folders live (cli.py, cli/, validate/, reports/) and how the Python API
loads one of their modules: shared by the console script (costmodel/console.py) and the API's text and
JSON (estimation, planning, simulate_api), without importing cli (the console script's own import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent


def tools_dir() -> Path:
    """The folder that holds cli.py, cli/, validate/ and reports/: the checkout's root when this
    package runs from one, else the installed costmodel/tools/."""
    checkout = PACKAGE_DIR.parent
    return checkout if (checkout / "cli.py").is_file() else PACKAGE_DIR / "tools"


def tool(name: str) -> Any:
    """A module of the tools' folder (reports.text, reports.plan_text...) for the Python API's text
    and JSON: a notebook outside the checkout (`pip install -e .`, or a wheel) has neither the
    checkout's root nor costmodel/tools/ on sys.path, so `costmodel.simulate(...).to_dict()` failed
    with "No module named 'reports'". The folder goes last on sys.path: the user's modules keep
    their names."""
    import importlib

    folder = str(tools_dir())
    if folder not in sys.path:
        sys.path.append(folder)
    return importlib.import_module(name)
