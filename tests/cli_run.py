"""Run the command line in-process for a test: cli.main, or a script as `python SCRIPT ARGS` runs it,
with the output captured by pytest's capsys (no new interpreter: its start and imports cost ~2 s a run)."""

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


def one_error_line(args: list[str], capsys, warnings: bool = False) -> str:
    """The one `error:` line of a refused command: exit status 2, nothing on stdout, no traceback,
    and no other line on stderr (but `warning:` lines where warnings is True)."""
    code, out, err = run_main(args, capsys)
    lines = [line for line in err.strip().splitlines() if not (warnings and line.startswith("warning:"))]
    assert (code, out, len(lines)) == (2, "", 1), (code, out, err)
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


def run_script(script, args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `python SCRIPT *args`: the file run as __main__ (runpy) with
    sys.argv set, its `if __name__ == "__main__":` block included, in this process."""
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", [str(script), *args])
    try:
        runpy.run_path(str(script), run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        if isinstance(stop.code, str):  # sys.exit("...") prints it, as the interpreter does
            print(stop.code, file=sys.stderr)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
