"""The README and docs/ stand on their own: every file they name is in the repository, and the
README reads as a user's manual.

A reader of a fresh clone has only the repository; a document that sends them to a file kept
elsewhere (a design note of the team's) is a dead end, and so is a docstring that does.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {path.name: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}
EVERYTHING = "\n".join([README, *DOCS.values()])
FOLDERS = ("costmodel", "validate", "reports", "tests", "benchmarks", "docs")


def test_every_repository_path_in_the_readme_and_docs_exists():
    paths = set(re.findall(rf"(?<![\w/.~-])(?:{'|'.join(FOLDERS)})/[\w./*-]*\w", EVERYTHING))
    assert "validate/FINDINGS.md" in paths and "costmodel/blocks/base.py" in paths  # the scan works
    missing = [p for p in sorted(paths) if not list(ROOT.glob(p))]
    assert not missing, missing


def test_every_document_the_readme_and_docs_name_is_in_the_repository():
    documents = set(re.findall(r"\b[A-Z][A-Z_]+\.md\b", EVERYTHING))
    assert "FINDINGS.md" in documents  # the scan works
    missing = [d for d in sorted(documents) if not list(ROOT.rglob(d))]
    assert not missing, f"the documents name {missing}, which the repository does not hold"


def test_the_readme_links_the_docs_and_keeps_the_setup_commands():
    for name in ("commands.md", "checked.md", "design.md"):
        assert f"(docs/{name})" in README and name in DOCS
    assert "pip install -e . && costmodel estimate --model llama2-7b" in README
    # the full run keeps each test file and each heavy fixture's tests on one worker (tests/conftest.py,
    # Workers), and prints its 25 slowest tests
    assert "pip install -q -e '.[test]' && python -m pytest -q -n 2 --dist loadgroup --durations=25\n" in README
    assert 'python -m pytest -q -m "not slow"' in README


def test_the_readme_uses_no_words_from_inside_the_project():
    internal = re.findall(r"the seeds\b|seeds'|\bissue \d+|FINDINGS \d|section \d+\.\d", README)
    assert internal == []


def test_published_counts_are_cited_to_a_file_in_the_repository():
    line = next(line for line in DOCS["checked.md"].splitlines() if "published counts" in line)
    assert "tests/published.py" in line


def test_the_preset_counts_in_checked_md_are_the_presets_there_are():
    from costmodel.presets import preset_names
    from tests.published import FLAGSHIPS

    text = " ".join(DOCS["checked.md"].split())  # the sentence wraps
    assert re.search(r"all (\d+) presets", text).group(1) == str(len(preset_names()))
    assert re.search(r"the classes of (\d+) more\s+models", text).group(1) == str(len(FLAGSHIPS))


def test_no_docstring_or_comment_points_to_a_design_note_outside_the_repository():
    sources = [path for folder in ("costmodel", "cli", "validate", "reports", "tests", "benchmarks")
               for path in (ROOT / folder).rglob("*.py")] + [ROOT / "cli.py"]
    pattern = re.compile("(?<!docs/)" + "DESIGN" + r"\.md|" + "shared" + "/DESIGN")  # split: not a hit here
    outside = [str(path.relative_to(ROOT)) for path in sources if pattern.search(path.read_text(encoding="utf-8"))]
    assert outside == []


def test_ci_runs_the_readmes_full_run_and_returns_its_status():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in README.splitlines() if "python -m pytest -q" in line and "pip install" in line)
    assert command in ci.splitlines()
    assert 'exit "$status"' in ci and "status=$?" in ci and "set -e" not in ci


def test_the_readme_counts_the_model_types_the_reader_takes():
    """The README's "any config.json of the N Hugging Face model types" is costmodel.hf's list (136 after
    session 27's zamba and zamba2); each is in commands.md's table."""
    from costmodel.hf import SUPPORTED_MODEL_TYPES

    text = " ".join(README.split())
    assert re.search(r"config\.json` of the (\d+) Hugging Face model types", text).group(1) == \
        str(len(SUPPORTED_MODEL_TYPES)) == "136"
    table = [line for line in DOCS["commands.md"].splitlines() if line.startswith("| ")]
    assert [t for t in SUPPORTED_MODEL_TYPES if not any(t in line for line in table)] == []
