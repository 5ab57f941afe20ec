"""The report's parallel-layout figures (matplotlib, Agg): a plan's top layouts' memory per rank and
their step time by part (report.py draws them from plan_training's rows). No cost formula lives here.
"""

from __future__ import annotations

from typing import Any, Sequence

from .figures import GiB, pyplot
from .text import binary_bytes

LAYOUT_PARTS = (("weights", "#1f77b4"), ("gradients", "#ff7f0e"), ("optimizer", "#2ca02c"),
                ("activations", "#d62728"), ("buffers", "#9467bd"))
STEP_PARTS = (("compute", "#1f77b4"), ("communication", "#ff7f0e"), ("bubble", "#7f7f7f"),
              ("optimizer", "#2ca02c"), ("gradient_accumulation", "#9467bd"), ("autocast", "#8c564b"),
              ("overlap_contention", "#d62728"), ("host", "#e377c2"), ("fsdp_copies", "#bcbd22"),
              ("dtensor_copies", "#17becf"))


def _stacked_bars(ax: Any, labels: Sequence[str], parts: Sequence[tuple[str, str]],
                  values: dict[str, Sequence[float]]) -> None:
    """Horizontal bars, one per label, stacked from the parts' values."""
    import numpy as np

    left = np.zeros(len(labels))
    positions = np.arange(len(labels))
    for name, colour in parts:
        ax.barh(positions, values[name], left=left, color=colour, label=name.replace("_", " "), height=0.6)
        left = left + np.asarray(values[name])
    ax.set_yticks(positions, labels)
    ax.invert_yaxis()


def layout_memory(rows: Sequence[dict], capacity_bytes: float, title: str) -> Any:
    """Per-rank memory of several layouts (the most loaded rank of each), stacked by kind,
    against capacity_bytes, what a training run can use of the GPU (Hardware.training_memory_bytes)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(rows) + 2))
    labels = [row["label"] for row in rows]
    values = {name: [row[name] / GiB for row in rows] for name, _ in LAYOUT_PARTS}
    _stacked_bars(ax, labels, LAYOUT_PARTS, values)
    ax.axvline(capacity_bytes / GiB, color="black", linestyle="--", linewidth=1,
               label=f"usable for training ({binary_bytes(capacity_bytes)})")
    ax.set_xlim(0, max(capacity_bytes, *(row["total"] for row in rows)) / GiB * 1.05)
    ax.set_xlabel("memory of the most loaded rank (GiB)")
    ax.set_title(title)
    _legend_below(fig, ax, columns=3)
    return fig


def step_split(rows: Sequence[dict], title: str) -> Any:
    """Step time of a plan's top layouts, split into compute, exposed communication, pipeline
    bubble, the optimizer step, gradient accumulation, autocast's casts, overlap contention, the
    host's wait and FSDP2's copies: the parts of layout/step_parts.py's split, which add up to it."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(rows) + 2))
    labels = [row["label"] for row in rows]
    values = {name: [row[name] for row in rows] for name, _ in STEP_PARTS}
    _stacked_bars(ax, labels, STEP_PARTS, values)
    for i, row in enumerate(rows):
        ax.text(row["step"], i, f" MFU {100 * row['mfu']:.1f}%", va="center", fontsize=8)
    ax.set_xlim(0, max(row["step"] for row in rows) * 1.18)
    ax.set_xlabel("seconds per training step")
    ax.set_title(title)
    _legend_below(fig, ax, columns=4)
    return fig


def _legend_below(fig: Any, ax: Any, columns: int) -> None:
    """The axes' legend in a band of its own under the plot (bars fill the panel's width)."""
    handles, labels = ax.get_legend_handles_labels()
    rows = -(-len(labels) // columns)
    band = (0.15 + 0.25 * rows) / fig.get_size_inches()[1]
    fig.legend(handles, labels, loc="lower center", ncol=columns, frameon=False)
    fig.tight_layout(rect=(0, band, 1, 1))
