"""One figure of how the serving simulator meets published engine runs: every comparison the tables of
benchmarks/serve_published.py and benchmarks/published_*.py print, fed here by the printer as it prints
it (record), summarised per source and over all of them (summarise: comparisons, the median of
|ours / published - 1|, how many fall within 0.75-1.33x, the range; reports/published_runs.ratio_counts,
the statistic of the training summary). `python benchmarks/serve_published.py summary [SELECTOR ...]`
prints the summary (render).

The ratio is the one each table prints, ours over the published figure, whatever the metric: a
throughput's ratio over 1 is ours faster, a latency's (TTFT, ITL, TPOT, a step's milliseconds) ours
slower. Where a table prints two of ours beside one published figure, the comparison fed is the one
its setup states (the other stays in the table only): TensorRT-LLM v0.6.1's static rows per GPU with
its masked MHA (the flash-decode column and the whole-run total are not fed), the vLLM post's ShareGPT
bars with the sampled requests' own lengths (not the means, fixed), MLPerf's runs with the dataset's
prompts (not the mean prompt, fixed); Sarathi-Serve's projection ("linear") milliseconds are a part of a
step, not fed; rows a script cannot express (torchao's nvfp4) have no ratio and are not fed.
"""

from __future__ import annotations

import contextlib
import io
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from reports.published_runs import ratio_counts


@dataclass(frozen=True)
class Comparison:
    """One published figure beside ours: its source (the selector of serve_published.py that prints
    it), the row and metric as the table names them, the published figure and ours."""

    source: str
    row: str
    metric: str
    published: float
    ours: float

    @property
    def ratio(self) -> float:
        return self.ours / self.published


_FED: ContextVar[list[Comparison] | None] = ContextVar("serving_published_fed", default=None)


def record(source: str, row: str, metric: str, published: float, ours: float) -> None:
    """A printer's comparison, kept while a summary collects (collecting); nothing otherwise."""
    fed = _FED.get()
    if fed is not None:
        fed.append(Comparison(source, row, metric, float(published), float(ours)))


@contextlib.contextmanager
def collecting() -> Iterator[list[Comparison]]:
    """The comparisons the printers record inside the block, in their order."""
    fed: list[Comparison] = []
    token = _FED.set(fed)
    try:
        yield fed
    finally:
        _FED.reset(token)


def collect(printers: Iterable[Callable[[], Any]]) -> list[Comparison]:
    """Run each table printer with its tables discarded, and return what they recorded."""
    with collecting() as fed, contextlib.redirect_stdout(io.StringIO()):
        for printer in printers:
            printer()
    return fed


def summarise(comparisons: list[Comparison]) -> dict[str, dict[str, Any]]:
    """Per source, in the order first fed, then "overall": ratio_counts of its ratios."""
    sources: dict[str, list[float]] = {}
    for comparison in comparisons:
        sources.setdefault(comparison.source, []).append(comparison.ratio)
    out = {source: ratio_counts(ratios) for source, ratios in sources.items()}
    if comparisons:
        out["overall"] = ratio_counts([c.ratio for c in comparisons])
    return out


def render(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as a Markdown table: one row a source, the overall last."""
    lines = ["| source | comparisons | median abs(ours / published - 1) | within 0.75-1.33x | lowest | highest |",
             "|---|---|---|---|---|---|"]
    for source, counts in summary.items():
        name = f"**{source}**" if source == "overall" else source
        lines.append(f"| {name} | {counts['comparisons']} | {counts['median_error']:.1%} "
                     f"| {counts['within_0.75_1.33']} | {counts['lowest']:.2f} | {counts['highest']:.2f} |")
    return "\n".join(lines)


def worst(comparisons: list[Comparison], count: int = 10) -> list[Comparison]:
    """The comparisons furthest from 1 (by the larger of ratio and its inverse), worst first."""
    return sorted(comparisons, key=lambda c: max(c.ratio, 1 / c.ratio), reverse=True)[:count]
