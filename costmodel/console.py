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

from .tools_path import tools_dir


def main(argv: list[str] | None = None) -> int:
    folder = str(tools_dir())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    from cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
