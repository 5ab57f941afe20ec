"""No source file over 600 lines (issue 21): a room too big to find one's way in is split by concern.

Every Python file git tracks in the project's folders (costmodel/, cli/, validate/, reports/,
benchmarks/, tests/) and cli.py; a file that grows past the limit is split, not exempted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("costmodel", "cli", "validate", "reports", "benchmarks", "tests")
LIMIT = 600


def python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    if listed.returncode == 0 and listed.stdout.strip():
        names = listed.stdout.split()
    else:  # not a git checkout (an unpacked archive): every file below the folders
        names = [str(p.relative_to(ROOT)) for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")]
        names.append("cli.py")
    return sorted(ROOT / name for name in names
                  if name == "cli.py" or name.split("/")[0] in FOLDERS)


def test_the_walk_sees_the_project():
    files = {str(p.relative_to(ROOT)) for p in python_files()}
    assert {"cli.py", "costmodel/__init__.py", "tests/test_file_sizes.py"} <= files
    assert len(files) > 100


def test_no_file_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in python_files()
            if p.exists() and (n := len(p.read_text().splitlines())) > LIMIT}
    assert long == {}, f"over {LIMIT} lines (split them by concern): {long}"
