"""reports/: the report command's files, their determinism, its errors, the plot command, atomic
writes, help texts and a light import of the commands.

The seeds' claims are in tests/test_reports_claims.py, the sweep in tests/test_reports_sweep.py, the
figures and the page in a browser in tests/test_reports_figures.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cli
from reports.commands import COMMANDS
from tests.cli_run import run_main

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# The report


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "gpt2"
    code = cli.main(["report", "--model", "gpt2", "--out", str(out), "--no-measure"])
    assert code == 0
    return out


def test_report_files(report_dir):
    names = {p.relative_to(report_dir).as_posix() for p in report_dir.rglob("*") if p.is_file()}
    for stem in ("flops", "regimes", "memory-gpt2", "generation-gpt2", "params", "kv-cache"):
        assert {f"figures/{stem}.png", f"figures/{stem}.svg", f"tables/{stem}.csv"} <= names
    assert {"index.html", "report.md", "claims.json", "tables/summary.csv", "tables/claims.csv",
            "tables/table1.csv"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    page = (report_dir / "index.html").read_text()
    assert page.count('<img src="data:image/png;base64,') == 6  # issue 14 added the KV cache
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    markdown = (report_dir / "report.md").read_text()
    for line in markdown.splitlines():
        if line.startswith("!["):
            assert (report_dir / line.split("](")[1].rstrip(")")).is_file()
    summary = (report_dir / "tables" / "summary.csv").read_text().splitlines()
    assert summary[1].split(",")[:4] == ["gpt2", "decoder", "124439808", "1024"]
    assert "11 of 11 hold" in markdown
    png = (report_dir / "figures" / "flops.png").read_bytes()
    assert png.startswith(b"\x89PNG") and b"Software" not in png
    assert b"<dc:date>" not in (report_dir / "figures" / "flops.svg").read_bytes()


def test_report_is_deterministic(report_dir, tmp_path):
    again = tmp_path / "again"
    assert cli.main(["report", "--model", "gpt2", "--out", str(again), "--no-measure"]) == 0
    for path in sorted(report_dir.rglob("*")):
        if path.suffix in (".csv", ".json", ".png", ".svg", ".md"):
            other = again / path.relative_to(report_dir)
            assert path.read_bytes() == other.read_bytes(), path.name


def test_report_errors_exit_2(tmp_path, capsys):
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    for args in (
        ["report", "--model", "gpt2", "--out", str(afile), "--no-measure"],
        ["report", "--out", str(tmp_path / "x")],
        ["report", "--models", "gpt2,,bert-base-uncased", "--out", str(tmp_path / "x")],
        ["report", "--model", "gpt2", "--models", "gpt2", "--out", str(tmp_path / "x")],
        ["plot", "regimes", "--model", "gpt2", "--out", str(tmp_path / "r.jpg")],
        ["plot", "generation", "--model", "bert-base-uncased", "--out", str(tmp_path / "g.png")],
        ["plot", "memory", "--models", "gpt2,llama2-7b", "--out", str(tmp_path / "m.png")],
        # the layout figures' options without a layout were accepted and did nothing (any name, n = 0)
        ["report", "--model", "gpt2", "--out", str(tmp_path / "x"), "--no-measure", "--hardware", "no-such-gpu"],
        ["report", "--model", "gpt2", "--out", str(tmp_path / "x"), "--no-measure", "--seq-len", "512"],
        ["report", "--model", "gpt2", "--out", str(tmp_path / "x"), "--no-measure", "--tp", "2", "--seq-len", "0"],
        ["report", "--model", "gpt2", "--out", str(tmp_path / "x"), "--no-measure", "--tp", "2", "--hardware", "nope"],
    ):
        code, _, err = run_main(args, capsys)
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert afile.read_text() == "x"
    assert not (tmp_path / "x").exists()


def test_plot_with_a_bad_csv_path_writes_no_figure(tmp_path, capsys):
    """`plot flops --out f.png --csv missing/f.csv` wrote f.png, then failed on the CSV's folder
    (exit 2 with a figure left behind); both destinations are now checked before the work."""
    figure = tmp_path / "f.png"
    for command in ("flops", "memory", "params"):
        code, stdout, err = run_main(["plot", command, "--model", "gpt2", "--out", str(figure), "--csv",
                                      str(tmp_path / "missing" / "f.csv")], capsys)
        assert code == 2 and stdout == "" and err == f"error: {tmp_path / 'missing'}: no such directory.\n", err
    code, _, err = run_main(["plot", "flops", "--model", "gpt2", "--out", str(figure), "--csv", str(tmp_path)], capsys)
    assert code == 2 and err == f"error: {tmp_path}: is a directory; give a file name.\n", err
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_plot_writes_one_figure(tmp_path, capsys):
    out, table = tmp_path / "regimes.svg", tmp_path / "regimes.csv"
    code, stdout, _ = run_main(["plot", "regimes", "--model", "gpt2", "--out", str(out), "--csv",
                                str(table)], capsys)
    assert code == 0 and stdout.strip() == str(out)
    assert out.read_text().lstrip().startswith("<?xml")
    rows = {r.split(",")[0]: r.split(",") for r in table.read_text().splitlines()[1:]}
    assert rows["llama2-7b"][1:3] == ["4096", "4096"] and rows["llama2-7b"][4] == "projections and FFN"


def test_a_validation_figure_with_nothing_to_measure_is_one_line(tmp_path, capsys):
    """Mixtral has routed experts, which the reference model does not build: no point to plot, so
    `plot validation` says so in one line (exit 2, no file) and `report` notes it, where both
    stopped on min() of nothing."""
    pytest.importorskip("torch")
    from reports.report import make_validation

    out = tmp_path / "validation.svg"
    code, _, err = run_main(["plot", "validation", "--model", "mixtral-8x7b", "--out", str(out)], capsys)
    error = err.strip().splitlines()[-1]  # after the progress line saying it is skipped
    assert code == 2 and error.startswith("error: ") and "reference model builds none of mixtral-8x7b" in error
    assert not out.exists()
    from costmodel import load_model
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError, match="validate --target hf"):
        make_validation([load_model("mixtral-8x7b")], lambda message: None)


def test_writes_are_atomic(tmp_path, monkeypatch):
    from reports import output

    target = tmp_path / "table.csv"
    target.write_text("old")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(output.os, "replace", broken)
    with pytest.raises(output.ReportInputError, match="disk full"):  # one line, exit status 2
        output.write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_written_files_take_the_umask_or_keep_their_mode(tmp_path, monkeypatch):
    """A new file gets 0o666 less the umask, as open() gives; a replaced file keeps its mode; a
    folder that cannot be written is one line before any work."""
    import os
    import stat

    from reports import output

    old = os.umask(0o077)
    try:
        output.write_text(tmp_path / "new.csv", "a")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o600
    kept = tmp_path / "kept.csv"
    kept.write_text("old")
    kept.chmod(0o640)
    output.write_text(kept, "new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "new"
    monkeypatch.setattr(output.os, "access", lambda path, mode: False)  # as for a non-root user's 0o500 folder
    with pytest.raises(output.ReportInputError, match="cannot be written .permission denied"):
        output.check_destination(tmp_path / "x.csv")


def test_every_command_has_help():
    for command in COMMANDS:
        assert command.help and command.help.strip()
        for sub in getattr(command, "commands", {}).values():
            assert sub.help and sub.help.strip(), sub.name


def test_importing_the_commands_is_light():
    code = ("import sys, cli, reports.commands; "
            "print(sorted(m for m in ('matplotlib', 'pandas', 'torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
