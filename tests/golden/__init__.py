"""Golden files: measurements of real PyTorch code, recorded with the torch and transformers
versions that made them, so that the fast tier can check the formulas without building a model.

Each module here (hf_families, hf_parity) says what its cases are and offers `formula(case)` and
`measure(case)`, which return a record in the same shape. The fast tier asserts formula == the
recorded measurement; the slow tier measures again and asserts measurement == the record, so a
file that no longer matches the code (or the pinned torch and transformers) fails. Record a file
again with `PYTHONPATH=$PWD python -m tests.golden.<module>`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).parent


def fingerprint(description: Any) -> str:
    """Which case a record was measured from: a changed case makes its record stale."""
    return hashlib.sha256(json.dumps(description, sort_keys=True, default=str).encode()).hexdigest()[:16]


def versions() -> dict[str, str]:
    """The versions of the code that measures (torch) and of the code measured (transformers)."""
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__}


def read(name: str) -> dict[str, Any]:
    """A golden file: {"versions": {...}, "cases": {case: record}}."""
    return json.loads((FOLDER / f"{name}.json").read_text())


def write(name: str, cases: dict[str, Any]) -> None:
    (FOLDER / f"{name}.json").write_text(
        json.dumps({"versions": versions(), "cases": cases}, indent=1) + "\n")


def stale(name: str) -> str:
    """The sentence a live test fails with when the measurement and the record differ."""
    recorded = read(name)["versions"]
    return (f"tests/golden/{name}.json was recorded with torch {recorded['torch']} and transformers "
            f"{recorded['transformers']}; this run has torch {versions()['torch']} and transformers "
            f"{versions()['transformers']}. If the code measured changed on purpose, record it again: "
            f"PYTHONPATH=$PWD python -m tests.golden.{name}")
