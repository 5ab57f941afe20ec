"""Run the command line in-process for a test: cli.main with the output captured by pytest's capsys."""

from __future__ import annotations

import cli


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `python cli.py *args`."""
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(args: list[str], capsys) -> dict:
    """The parsed output of `python cli.py *args --json`, which must exit 0 (stderr shown if not)."""
    import json

    code, out, err = run_main([*args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)
