"""The measured side: PyTorch code built from a ModelConfig, and the measurements of it.

Everything under validate/ needs the `measure` extra (torch 2.13.0 and transformers 5.24.0, the
versions validate/FINDINGS.md was measured on); costmodel/ never imports it. This file imports
nothing heavy, so a command can ask whether the extra is there before it imports the rest.
"""

from __future__ import annotations

import importlib.util

from costmodel.config import reference_unsupported  # noqa: F401 (the core keeps the list)

MEASURE_PACKAGES = ("torch", "transformers")
INSTALL_HINT = "pip install -e '.[measure]' (torch>=2.6 and transformers>=5; measured with 2.13.0 and 5.24.0)"


def missing_packages() -> list[str]:
    """The measurement extra's packages that are not installed."""
    return [name for name in MEASURE_PACKAGES if importlib.util.find_spec(name) is None]


def needs_measure_extra(what: str) -> str | None:
    """None when the measurement extra is installed, else one line saying what needs it."""
    missing = missing_packages()
    if not missing:
        return None
    return f"{what} needs the measure extra ({', '.join(missing)} not installed): {INSTALL_HINT}."

