"""What a report holds: each figure with its caption and table (Made), and the whole report (Report).

reports/report.py computes them (the numbers, from the cost tree or a measurement) and writes the
files; reports/pages.py renders the pages, report.md and index.html, from a Report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from costmodel.config import ModelConfig

from . import output

Progress = Callable[[str], None]
FORMATS = ("png", "svg")
SUMMARY_ATTENTION = "sdpa"  # the summary table's attention kernel (reports/report.py summary_rows)


def summary_attention(family: str) -> str:
    """The summary's kernel for a family: SUMMARY_ATTENTION where its Hugging Face class runs it,
    else flash where it runs that (fused too: Gemma 2), else eager (DeepSeek-V4, gpt-oss' sinks:
    the n x n scores kept), the facts' sdpa_supported and flash_supported (costmodel/defaults.py)."""
    from costmodel.defaults import runs_attention

    return next((kernel for kernel in (SUMMARY_ATTENTION, "flash") if runs_attention("hf", family, kernel)), "eager")


@dataclass
class Made:
    """One figure with its caption and the table of the numbers it draws."""

    name: str  # file stem: figures/<name>.png, tables/<name>.csv
    title: str
    caption: str
    figure: Any
    headers: Sequence[str] = ()
    rows: list[Sequence[Any]] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)  # format -> bytes, once rendered

    def __post_init__(self) -> None:
        # a Hub model is named org/name: its files are org--name, as the Hub cache names its folder
        self.name = self.name.replace("/", "--").replace("\\", "--")

    def render(self, formats: Sequence[str] = FORMATS) -> None:
        """Render to bytes and close the matplotlib figure."""
        from .figures import pyplot

        for fmt in formats:
            self.images[fmt] = output.figure_bytes(self.figure, fmt)
        pyplot().close(self.figure)


@dataclass
class Report:
    """Everything a report shows: its figures (Made), the summary table's headers and rows, the
    claims, Vaswani et al.'s Table 1, notes, and the command and workload it was made with."""

    cfgs: list[ModelConfig]
    made: list[Made]
    summary: tuple[list[str], list[list]]
    claims: list[Any]
    table1: list[Any]
    notes: list[str]
    command: str
    batch: int
    dtype: str
