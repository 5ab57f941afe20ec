"""The `costmodel` console script: the same commands as `python cli.py`.

An installed wheel keeps the project's top-level folders out of site-packages' top level, where
generic names (cli, validate, reports) could collide with other distributions: it installs them
under costmodel/tools/ (pyproject.toml maps cli.py, cli/, validate/ and reports/ there), and this entry
puts that folder on sys.path before it imports cli. From a source checkout (`pip install -e .`,
or no install at all) the checkout's root holds them and goes on sys.path instead, so
`python cli.py` and `costmodel` run the same code.
"""

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


def main(argv: list[str] | None = None) -> int:
    folder = str(tools_dir())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    from cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
