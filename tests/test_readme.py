"""The README stands on its own: every file it names is in the repository.

A reader of a fresh clone has only the repository; a README that sends them to a file kept
elsewhere (a design note of the team's) is a dead end.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FOLDERS = ("costmodel", "validate", "reports", "tests", "benchmarks")


def test_every_repository_path_in_the_readme_exists():
    paths = set(re.findall(rf"(?<![\w/.~-])(?:{'|'.join(FOLDERS)})/[\w./*-]*\w", README))
    assert "validate/FINDINGS.md" in paths and "costmodel/blocks.py" in paths  # the scan works
    missing = [p for p in sorted(paths) if not list(ROOT.glob(p))]
    assert not missing, missing


def test_every_document_the_readme_names_is_in_the_repository():
    documents = set(re.findall(r"\b[A-Z][A-Z_]+\.md\b", README))
    assert "FINDINGS.md" in documents  # the scan works
    missing = [d for d in sorted(documents) if not list(ROOT.rglob(d))]
    assert not missing, f"the README names {missing}, which the repository does not hold"


def test_published_counts_are_cited_to_a_file_in_the_repository():
    line = next(line for line in README.splitlines() if "published counts" in line)
    assert "tests/published.py" in line
