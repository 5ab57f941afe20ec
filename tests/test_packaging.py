"""Packaging: the `costmodel` console script runs the same commands as `python cli.py`, and an
installed wheel puts nothing at site-packages' top level but `costmodel` (cli.py, cli/, validate/
and reports/ go under costmodel/tools/, costmodel/console.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import cli
from costmodel import console

ROOT = Path(__file__).resolve().parents[1]


def test_console_script_is_the_cli(capsys):
    assert console.main(["models"]) == 0
    through_console = capsys.readouterr().out
    assert cli.main(["models"]) == 0
    assert capsys.readouterr().out == through_console and "llama2-7b" in through_console


def test_console_script_finds_the_checkout_it_runs_from():
    assert console.tools_dir() == ROOT


def test_bad_input_through_the_console_script_exits_2(capsys):
    assert console.main(["estimate", "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_pyproject_installs_one_top_level_package_and_the_script():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    assert {name.split(".")[0] for name in setuptools["packages"]} == {"costmodel"}
    assert "py-modules" not in setuptools
    assert "costmodel.tools.cli" in setuptools["packages"] and setuptools["package-dir"]["costmodel.tools.cli"] == "cli"
    assert project["project"]["scripts"] == {"costmodel": "costmodel.console:main"}
    assert project["project"]["optional-dependencies"]["measure"] == ["torch>=2.6", "transformers>=5"]
    pinned = project["project"]["optional-dependencies"]["test"]
    assert "torch==2.13.0" in pinned and "transformers==5.24.0" in pinned


@pytest.mark.slow
def test_the_wheel_holds_only_costmodel_and_its_script_runs(tmp_path):
    """Build the wheel from a copy of the sources (a build leaves build/ behind; no network: this
    environment's setuptools), unpack it as pip would, and run the console script's code from it,
    away from the checkout."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("costmodel", "cli", "validate", "reports"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("cli.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel")],
                           capture_output=True, text=True, timeout=240)
    if build.returncode:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1:]}")
    wheel = next((tmp_path / "wheel").glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        archive.extractall(tmp_path / "site")
    assert {top for top in tops if not top.endswith(".dist-info")} == {"costmodel"}
    script = "import sys; from costmodel.console import main; sys.exit(main(['models']))"
    installed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
                               timeout=120)
    checkout = subprocess.run([sys.executable, "cli.py", "models"], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout == checkout.stdout
