"""The report's figures (matplotlib, Agg): each function takes numbers from series.py,
generation.py, claims.py or measured.py and returns a Figure. No cost formula lives here.

matplotlib is imported inside the functions (pyplot()), never when this module is imported.
"""

from __future__ import annotations

from typing import Any, Sequence

from costmodel.config import ModelConfig

from .text import binary_bytes, count, si

GiB = 2**30
#: One colour per FLOP group (FLOP_GROUPS order): attention core in warm colours, linear in cool.
GROUP_COLOURS = ("#4c72b0", "#8fb0d9", "#dd8452", "#f2b880", "#55a868", "#8172b3", "#b0b0b0")
MODEL_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
                 "#17becf")


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend with the report's style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
        "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
        "grid.alpha": 0.3, "figure.dpi": 110, "savefig.bbox": "tight",
        "svg.hashsalt": "costmodel-reports",
    })
    return plt


def _tokens_axis(ax: Any, label: str = "sequence length n (tokens)") -> None:
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _short(x)))
    ax.set_xlabel(label)


def _short(x: float) -> str:
    """8 -> '8', 4096 -> '4K', 131072 -> '128K', 1048576 -> '1M' (powers of two)."""
    if x >= 2**20 and x % 2**20 == 0:
        return f"{int(x) // 2**20}M"
    if x >= 1024 and x % 1024 == 0:
        return f"{int(x) // 1024}K"
    return f"{x:g}"


# ---------------------------------------------------------------------------------------------
# 1. Where the FLOPs go


def flop_shares(panels: Sequence[dict[str, Any]]) -> Any:
    """Stacked shares of forward FLOPs per block group vs n, one panel per model.

    Each panel: {"cfg", "ns", "shares" (label -> array), "crossover" (float), "context" (int)}.
    """
    plt = pyplot()
    columns = min(len(panels), 2)
    rows = (len(panels) + columns - 1) // columns
    width = 10 if len(panels) == 1 else 6.2 * columns
    fig, axes = plt.subplots(rows, columns, figsize=(width, 4.6 * rows + (0 if len(panels) == 1 else 0.9)),
                             squeeze=False, sharey=True)
    for ax, panel in zip(axes.flat, panels):
        cfg, ns, shares = panel["cfg"], panel["ns"], panel["shares"]
        labels = list(shares)
        ax.stackplot(ns, [100 * shares[label] for label in labels],
                     labels=[label.replace("QK^T", "$QK^T$") for label in labels],
                     colors=GROUP_COLOURS[: len(labels)], alpha=0.95, linewidth=0)
        _tokens_axis(ax)
        ax.set_xlim(ns[0], ns[-1])
        ax.set_ylim(0, 100)
        ax.set_ylabel("share of forward FLOPs (%)")
        ax.set_title(f"{cfg.name}: where the forward FLOPs go (b = 1)")
        ax.grid(False)
        crossover = panel["crossover"]
        ax.axvline(crossover, color="black", linewidth=1.4)
        ax.annotate(f"n* = {crossover:,.0f}\nattention = projections + FFN", (crossover, 96),
                    xytext=(5, 0), textcoords="offset points", ha="left", va="top", fontsize=8.5,
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
        context = panel["context"]
        ax.axvline(context, color="black", linewidth=1, linestyle=":")
        ax.annotate(f"usual context\n{context:,}", (context, 4), xytext=(-4, 0),
                    textcoords="offset points", ha="right", va="bottom", fontsize=8.5,
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
        if cfg.position == "learned" and cfg.max_positions < ns[-1]:
            ax.axvspan(cfg.max_positions, ns[-1], facecolor="none", edgecolor="white",
                       hatch="//", linewidth=0)
            ax.text(cfg.max_positions * 1.15, 50, "beyond its learned\nposition table",
                    fontsize=8.5, va="center",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if len(panels) == 1:  # the legend beside the panel, in stacking order (top first)
        axes.flat[0].legend(handles[::-1], labels[::-1], loc="center left", bbox_to_anchor=(1.02, 0.5),
                            frameon=False, title="block group (top to bottom)")
        fig.tight_layout()
    else:
        fig.legend(handles[::-1], labels[::-1], loc="lower center", ncol=4, frameon=False,
                   bbox_to_anchor=(0.5, 0.0))
        fig.tight_layout(rect=(0, 0.09 if rows == 1 else 0.05, 1, 1))
    return fig


# ---------------------------------------------------------------------------------------------
# 2. The regime map


def regime_map(plane: Any, reference: ModelConfig, crossover_text: str, presets: Sequence[dict],
               highlight: Sequence[str], examples: Sequence[dict]) -> Any:
    """The (n, d) plane shaded by the attention share of the layers' matmul FLOPs.

    plane: f(n, d) -> share for the reference config's shape; presets: {"name", "n", "d"};
    examples: the seeds' examples {"label", "n", "d", "beyond"}.
    """
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10.5, 7))
    ns = np.geomspace(4, 2**20, 300)
    ds = np.geomspace(32, 32768, 240)
    grid_n, grid_d = np.meshgrid(ns, ds)
    share = np.broadcast_to(plane(grid_n, grid_d), grid_n.shape)  # a constant 0 without attention
    mesh = ax.pcolormesh(grid_n, grid_d, 100 * share, cmap="RdBu_r", shading="auto",
                         norm=TwoSlopeNorm(50, 0, 100), rasterized=True)
    ax.contour(grid_n, grid_d, share, levels=[0.5], colors="black", linewidths=1.6)
    bar = fig.colorbar(mesh, ax=ax, pad=0.02)
    bar.set_label("attention ($n^2 d$) share of the layers' matmul FLOPs (%)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _short(x)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: _short(x)))
    ax.set_xlabel("sequence length n (tokens)")
    ax.set_ylabel("model width d")
    ax.set_title(f"Which term dominates the layers' FLOPs: {reference.name}'s shape scaled in width\n"
                 f"(d_ff/d and head width kept); black line: the crossover n* = {crossover_text}")
    ax.grid(False)
    box = {"boxstyle": "round,pad=0.3", "fc": "white", "ec": "none", "alpha": 0.85}
    ax.text(0.02, 0.97, "projections + FFN dominate\n(the $n\\,d^2$ regime, $n < n^*$)", fontsize=10,
            color="#08306b", va="top", transform=ax.transAxes, bbox=box)
    ax.text(0.98, 0.03, "attention dominates\n(the $n^2 d$ regime, $n > n^*$)", fontsize=10,
            color="#67000d", ha="right", va="bottom", transform=ax.transAxes, bbox=box)
    ax.set_xlim(ns[0], ns[-1])
    ax.set_ylim(ds[0], ds[-1])
    fig.tight_layout()
    for example in examples:
        ax.plot(example["n"], example["d"], "*", markersize=15, color="#ffdd00",
                markeredgecolor="black", zorder=6)
        ax.annotate(example["label"], (example["n"], example["d"]), xytext=(0, -16),
                    textcoords="offset points", ha="center", va="top", fontsize=8.5, zorder=6,
                    bbox={"boxstyle": "round,pad=0.2", "fc": "#fff7c0", "ec": "black", "lw": 0.5})
        if example.get("beyond"):
            ax.annotate("", xy=(example["n"] * 16, example["d"]), xytext=(example["n"] * 1.3, example["d"]),
                        arrowprops={"arrowstyle": "->", "lw": 1.5}, zorder=6)
    _place_presets(ax, presets, highlight)
    return fig


def _place_presets(ax: Any, presets: Sequence[dict], highlight: Sequence[str]) -> None:
    """A marker per (n, d) point and one label per point (names at the same point joined), each
    label put where it overlaps no label placed before it and stays inside the axes (tried right,
    then left, up, down); a point with no room keeps its marker unlabelled (the table lists every
    preset), unless it is in this report (highlight), whose label goes on its first place."""
    points: dict[tuple[int, int], list[str]] = {}
    for preset in presets:
        points.setdefault((preset["n"], preset["d"]), []).append(preset["name"])
    placed: list[tuple[float, float, float, float]] = []
    offsets = [(7, 0), (-7, 0), (14, 12), (14, -12), (-14, 12), (-14, -12), (18, 24), (18, -24),
               (-18, 24), (-18, -24), (22, 36), (-22, 36)]
    dpi_scale = ax.figure.dpi / 72
    frame = ax.get_window_extent()
    for n, d in points:  # labels must not cover any marker
        x, y = ax.transData.transform((n, d))
        placed.append((x - 5 * dpi_scale, y - 5 * dpi_scale, x + 5 * dpi_scale, y + 5 * dpi_scale))
    for (n, d), names in sorted(points.items(), key=lambda item: (-item[0][1], item[0][0])):
        bold = any(name in highlight for name in names)
        ax.plot(n, d, "o", markersize=8 if bold else 5.5, color="black",
                markerfacecolor="gold" if bold else "white", zorder=4)
        text = ", ".join(sorted(names))
        x, y = ax.transData.transform((n, d))
        width, height = (5.2 * len(text) + 4) * dpi_scale, 12 * dpi_scale
        for dx, dy in offsets:
            left = x + dx * dpi_scale if dx > 0 else x + dx * dpi_scale - width
            bottom = y + dy * dpi_scale - height / 2
            box = (left, bottom, left + width, bottom + height)
            inside = frame.x0 <= box[0] and box[2] <= frame.x1 and frame.y0 <= box[1] and box[3] <= frame.y1
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                                  for b in placed):
                break
        else:  # no room anywhere
            if not bold:
                continue
            dx, dy = offsets[0]
            left = x + dx * dpi_scale
            box = (left, y - height / 2, left + width, y + height / 2)
        placed.append(box)
        leader = {"arrowstyle": "-", "lw": 0.7, "color": "black", "shrinkA": 0, "shrinkB": 3}
        ax.annotate(text, (n, d), xytext=(dx, dy), textcoords="offset points",
                    ha="left" if dx > 0 else "right", va="center", fontsize=8.5,
                    fontweight="bold" if bold else "normal", zorder=5,
                    arrowprops=leader if dy else None,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})


# ---------------------------------------------------------------------------------------------
# 3. Memory vs n


def memory(curves: Any, cfg: ModelConfig, gpus: Sequence[dict]) -> Any:
    """Training activations (three profiles) and the inference KV cache vs n, against GPUs."""
    import numpy as np

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6), sharey=True)
    ns = curves.ns
    styles = ("-", "--", "-.")
    for (label, values), style, colour in zip(curves.activations.items(), styles, MODEL_COLOURS):
        left.plot(ns, values / GiB, style, color=colour, linewidth=2, label=f"activations, {label}")
    left.axhline(curves.states / GiB, color="#555555", linewidth=1.5, linestyle=(0, (6, 2)),
                 label=f"weights + gradients + AdamW ({binary_bytes(curves.states)})")
    # The model's name once, over both panels: the panels narrow as the GPU labels right of them
    # grow (a capacity shared by four GPUs), and a panel title holding it too outgrew its panel.
    fig.suptitle(cfg.name, fontsize=12)
    left.set_title(f"training: activations (b = {curves.batch}, {curves.dtype})")
    has_cache = bool(np.any(curves.kv_cache > 0))
    if has_cache:
        right.plot(ns, curves.kv_cache / GiB, color="#9467bd", linewidth=2, label="KV cache")
        right.plot(ns, (curves.kv_cache + curves.weights) / GiB, color="#9467bd", linewidth=1,
                   linestyle=":", label="weights + KV cache")
    else:
        right.text(0.5, 0.5, f"{cfg.name} is an {cfg.architecture}:\nit keeps no KV cache",
                   transform=right.transAxes, ha="center", va="center", fontsize=11)
    right.axhline(curves.weights / GiB, color="#555555", linewidth=1.5, linestyle=(0, (6, 2)),
                  label=f"weights ({binary_bytes(curves.weights)})")
    right.set_title(f"inference: KV cache (b = {curves.batch}, {curves.dtype})")
    values = [v for v in [*curves.activations.values(), curves.kv_cache] if np.any(v > 0)]
    low = min(float(np.min(v[v > 0])) for v in values) / GiB
    high = max(float(np.max(v)) for v in values) / GiB
    for ax in (left, right):
        _tokens_axis(ax)
        ax.set_yscale("log")
        ax.set_xlim(ns[0], ns[-1])
        for gpu in gpus:
            capacity = gpu["memory_bytes"] / GiB
            ax.axhline(capacity, color="#2ca02c", linewidth=0.8, alpha=0.7)
        ax.legend(loc="upper left", frameon=True, framealpha=0.9)
    left.set_ylabel("memory (GiB, log scale)")
    left.set_ylim(low / 2, max(high, gpus[0]["memory_bytes"] / GiB) * 3)
    labels = gpu_labels(gpus)
    width, height = _text_size(fig, labels.values(), GPU_LABEL_SIZE)
    # The labels sit right of the right panel, inside the figure: keep their width free.
    fig.tight_layout(rect=(0, 0, 1 - (width + GPU_LABEL_OFFSET / 72 * fig.dpi + 6) / fig.bbox.width, 1))
    _place_gpu_labels(right, labels, ns[-1], height)
    return fig


GPU_LABEL_SIZE = 8  # points
GPU_LABEL_OFFSET = 4  # points right of the panel


def gpu_labels(gpus: Sequence[dict]) -> dict[int, str]:
    """One label per capacity, smallest first: '80 GiB: A100 PCIe, A100 SXM, H100 PCIe, H100 SXM5' (the
    capacity once, not again inside each name)."""
    import re

    by_capacity: dict[int, list[str]] = {}
    for gpu in gpus:
        by_capacity.setdefault(gpu["memory_bytes"], []).append(gpu["name"])
    labels = {}
    for capacity in sorted(by_capacity):
        gib = f"{capacity / GiB:g}"
        names = sorted(re.sub(rf"\s*\b{re.escape(gib)}\s?GB\b", "", name) for name in by_capacity[capacity])
        labels[capacity] = f"{gib} GiB: {', '.join(names)}"
    return labels


def _text_size(fig: Any, texts: Any, fontsize: float) -> tuple[float, float]:
    """The widest and the tallest of these one-line texts, in pixels, as the renderer draws them."""
    renderer = fig.canvas.get_renderer()
    width = height = 0.0
    for text in texts:
        artist = fig.text(0, 0, text, fontsize=fontsize)
        extent = artist.get_window_extent(renderer)
        artist.remove()
        width, height = max(width, extent.width), max(height, extent.height)
    return width, height


def _place_gpu_labels(ax: Any, labels: dict[int, str], x: float, height: float) -> None:
    """The labels right of the panel at their capacity's height, the lowest first, each pushed up
    just enough to clear the one below it (height: a label's height in pixels)."""
    scale = ax.figure.dpi / 72
    gap = height + 2  # pixels between label centres
    previous = -1e9
    for capacity, text in labels.items():
        y = ax.transData.transform((x, capacity / GiB))[1]
        shown = max(y, previous + gap)
        previous = shown
        ax.annotate(text, (x, capacity / GiB), xytext=(GPU_LABEL_OFFSET, (shown - y) / scale),
                    textcoords="offset points", va="center", fontsize=GPU_LABEL_SIZE,
                    color="#1a7a1a", annotation_clip=False)


# ---------------------------------------------------------------------------------------------
# 4. Generation cost


def growth_exponent(tokens: Any, values: Any) -> float:
    """How a cumulative curve grows over the plotted range: the log-log slope from the middle
    token count to the last (about 3 for T^3, 2 for T^2; lower where linear terms still lead)."""
    import math

    middle = len(tokens) // 2
    return math.log(values[-1] / values[middle]) / math.log(tokens[-1] / tokens[middle])


def generation(full: Any, cfg: ModelConfig, small: Any, small_cfg: ModelConfig,
               measured: dict[str, list[int]] | None) -> Any:
    """Cumulative FLOPs of generating T tokens with and without a KV cache: the model at full
    size (left) and a tiny member of its family with FlopCounterMode points overlaid (right)."""
    import numpy as np

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    for ax, curves, name in ((left, full, cfg.name), (right, small, small_cfg.name)):
        ax.plot(curves.tokens, curves.without_cache, color="#d62728", linewidth=2,
                label="no cache: each step re-runs the decoder over the prefix, here "
                f"$\\propto T^{{{growth_exponent(curves.tokens, curves.without_cache):.1f}}}$")
        ax.plot(curves.tokens, curves.with_cache, color="#1f77b4", linewidth=2,
                label="KV cache: one new token per step, here "
                f"$\\propto T^{{{growth_exponent(curves.tokens, curves.with_cache):.1f}}}$")
        _tokens_axis(ax, "tokens generated T")
        ax.set_yscale("log")
        ax.set_ylabel("cumulative forward matmul FLOPs")
        ax.set_xlim(1, curves.tokens[-1] * 1.08)
        source = f", source s = {curves.source_len}" if curves.source_len else ""
        ax.set_title(f"{name}: generating T tokens (b = 1{source})")
    last = full.tokens[-1]
    ratio = full.without_cache[-1] / full.with_cache[-1]
    left.text(0.98, 0.04, f"T = {last:,}: {si(full.without_cache[-1], 'FLOP')} without a cache,\n"
              f"{si(full.with_cache[-1], 'FLOP')} with one ({ratio:,.0f}x fewer)",
              transform=left.transAxes, ha="right", va="bottom", fontsize=8.5,
              bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#999999"})
    if measured:
        tokens = np.arange(1, len(measured["without_cache"]) + 1)
        right.plot(tokens, np.cumsum(measured["without_cache"]), "o", color="#d62728",
                   markerfacecolor="none", markersize=7, label="measured, no cache (FlopCounterMode)")
        right.plot(tokens, np.cumsum(measured["with_cache"]), "s", color="#1f77b4",
                   markerfacecolor="none", markersize=7, label="measured, KV cache (FlopCounterMode)")
        right.text(0.98, 0.04, "points: the reference model on CPU tensors", transform=right.transAxes,
                   ha="right", fontsize=8.5, color="#444444")
    left.legend(loc="upper left", fontsize=8.2, framealpha=0.9)
    right.legend(loc="upper left", fontsize=8.2, framealpha=0.9)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# 5. Parameters


def parameters(rows: Sequence[dict], highlight: Sequence[str]) -> Any:
    """Per-block shares of every preset's parameters (left) and the seeds' rule
    12 L d^2 + embeddings against the exact count (right). A mixture of experts also shows its
    active parameters per token: a black bar from 0 to their share, and the count in its label.

    rows: {"name", "groups" (label -> count), "total", "rule", "active" (None: dense)}, any
    order (sorted by total here).
    """
    import numpy as np

    plt = pyplot()
    rows = sorted(rows, key=lambda r: (r["total"], r["name"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 0.42 * len(rows) + 1.8),
                                      gridspec_kw={"width_ratios": (1.7, 1)}, sharey=True)
    y = np.arange(len(rows))
    labels = list(rows[0]["groups"])
    colours = ("#c44e52", "#4c72b0", "#55a868", "#b0b0b0", "#8172b3")
    start = np.zeros(len(rows))
    for label, colour in zip(labels, colours):
        share = np.array([100 * r["groups"][label] / r["total"] for r in rows])
        left.barh(y, share, left=start, color=colour, label=label, height=0.7)
        start += share
    moe = [(yi, r) for yi, r in zip(y, rows) if r.get("active")]
    if moe:
        left.barh([yi for yi, _ in moe], [100 * r["active"] / r["total"] for _, r in moe],
                  color="black", height=0.18, label="active per token (MoE)")
    left.set_xlim(0, 100)
    left.set_ylim(-0.6, len(rows) - 0.4)  # no empty band of rows above the largest (5% of 66 rows)
    left.set_xlabel("share of parameters (%)")
    left.set_yticks(y, [f"{r['name']}  ({count(r['total'])}"
                        + (f", {count(r['active'])} active)" if r.get("active") else ")")
                        for r in rows])
    for tick, row in zip(left.get_yticklabels(), rows):
        if row["name"] in highlight:
            tick.set_fontweight("bold")
    # the legend sits on the panel's top edge and the title a fixed 36 points above it, so neither
    # moves with the panel's height (an offset in axes fraction grows with the presets)
    left.set_title("Where the parameters are (exact counts from the cost tree)", pad=36)
    left.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    left.grid(False)
    ratio = np.array([r["rule"] / r["total"] for r in rows])
    right.barh(y, 100 * (ratio - 1), color=["#dd8452" if v < 1 else "#4c72b0" for v in ratio],
               height=0.6)
    right.axvline(0, color="black", linewidth=1)
    for yi, value in zip(y, ratio):
        right.annotate(f"{100 * (value - 1):+.1f}%", (100 * (value - 1), yi),
                       xytext=(4 if value >= 1 else -4, 0), textcoords="offset points",
                       ha="left" if value >= 1 else "right", va="center", fontsize=8)
    errors = 100 * (ratio - 1)
    right.set_xlim(min(-5.0, float(np.min(errors)) * 1.4), max(5.0, float(np.max(errors)) * 1.4))
    right.set_xlabel("seeds' rule $12\\,L\\,d^2$ + $V d$ per table, vs exact (%)")
    right.set_title("The seeds' rule of thumb\nagainst the exact count")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# 5b. KV cache per token


def kv_cache(rows: Sequence[dict], highlight: Sequence[str]) -> Any:
    """Bytes the KV cache holds per token, across presets (log scale): with every token cached
    (a context inside every window) and, lighter, averaged over a long context once decoding
    runs (sliding-window layers then keep only their window).

    rows: {"name", "kind" (MHA, GQA 8, MQA, MLA, + windows), "short", "long", "long_tokens"}.
    """
    import numpy as np

    plt = pyplot()
    rows = sorted(rows, key=lambda r: (r["short"], r["name"]))
    fig, ax = plt.subplots(figsize=(10.5, 0.38 * len(rows) + 1.9))
    y = np.arange(len(rows))
    ax.barh(y + 0.18, [r["short"] for r in rows], height=0.36, color="#4c72b0",
            label="every token cached (short context)")
    long_tokens = rows[0]["long_tokens"]
    ax.barh(y - 0.18, [r["long"] for r in rows], height=0.36, color="#9fb7dd",
            label=f"average over {long_tokens:,} tokens, decoding (windows capped)")
    ax.set_xscale("log")
    ax.set_yticks(y, [f"{r['name']}  ({r['kind']})" for r in rows])
    for tick, row in zip(ax.get_yticklabels(), rows):
        if row["name"] in highlight:
            tick.set_fontweight("bold")
    for yi, row in zip(y, rows):
        ax.annotate(binary_bytes(row["short"]), (row["short"], yi + 0.18), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.set_xlim(min(r["long"] for r in rows) / 2, max(r["short"] for r in rows) * 6)
    ax.set_xlabel("KV-cache bytes per token, all layers, bf16 (log scale)")
    ax.set_title("KV cache per token: MHA, GQA, MQA, MLA and sliding windows")
    ax.legend(loc="lower right", frameon=True, fontsize=8)  # the short bars are at the bottom
    ax.grid(axis="y", visible=False)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# 6. Formula vs measurement


QUANTITY_STYLE = {  # quantity -> (marker, legend label, short axis label)
    "params": ("o", "parameters", "parameters"),
    "forward_flops": ("s", "forward matmul FLOPs", "forward\nFLOPs"),
    "training_flops": ("D", "training matmul FLOPs (fwd + bwd)", "training\nFLOPs"),
    "activation_bytes": ("^", "bytes saved for backward", "saved\nbytes"),
    "kv_cache_bytes": ("v", "KV-cache bytes", "KV-cache\nbytes"),
}


def validation(points: Sequence[Any]) -> Any:
    """Every measured point against the cost tree's value (log-log, y = x), and the relative
    error per quantity."""
    import numpy as np

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 5.4),
                                      gridspec_kw={"width_ratios": (1.25, 1)})
    quantities = [q for q in QUANTITY_STYLE if any(p.quantity == q for p in points)]
    families = sorted({p.model.removesuffix("-tiny") for p in points})
    colour = {name: MODEL_COLOURS[i % len(MODEL_COLOURS)] for i, name in enumerate(families)}
    values = [v for p in points for v in (p.formula, p.measured) if v > 0]
    low, high = min(values) / 3, max(values) * 3
    from matplotlib.lines import Line2D

    left.plot([low, high], [low, high], color="black", linewidth=1)
    handles = [Line2D([], [], color="black", linewidth=1, label="y = x")]
    for quantity in quantities:
        marker, label, _ = QUANTITY_STYLE[quantity]
        chosen = [p for p in points if p.quantity == quantity]
        left.scatter([p.formula for p in chosen], [p.measured for p in chosen], marker=marker,
                     facecolors="none", edgecolors=[colour[p.model.removesuffix("-tiny")] for p in chosen],
                     s=42, linewidths=1.3)
        handles.append(Line2D([], [], marker=marker, linestyle="", markerfacecolor="none",
                              markeredgecolor="#333333", label=label))
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlim(low, high)
    left.set_ylim(low, high)
    left.set_xlabel("cost tree (count, FLOPs or bytes)")
    left.set_ylabel("measured (same unit)")
    left.set_title("Formula vs measurement (marker: quantity, colour: model)")
    legend = left.legend(handles=handles, loc="upper left", fontsize=8.2, framealpha=0.9)
    left.add_artist(legend)
    left.legend([Line2D([], [], marker="o", linestyle="", color=colour[f]) for f in families],
                families, loc="lower right", fontsize=8.2, framealpha=0.9, title="model (and its tiny member)",
                title_fontsize=8.2)
    for index, quantity in enumerate(quantities):
        chosen = [p for p in points if p.quantity == quantity]
        offsets = np.linspace(-0.25, 0.25, len(chosen)) if len(chosen) > 1 else np.zeros(1)
        errors = np.array([100 * p.relative_error for p in chosen])
        right.scatter(index + offsets, errors, marker=QUANTITY_STYLE[quantity][0], facecolors="none",
                      edgecolors=[colour[p.model.removesuffix("-tiny")] for p in chosen], s=42,
                      linewidths=1.3)
        exact_count = int(np.sum(errors == 0))
        right.annotate(f"{exact_count}/{len(chosen)}\nexact", (index, 0), xytext=(0, 12),
                       textcoords="offset points", ha="center", fontsize=8)
    right.axhline(0, color="black", linewidth=1)
    right.set_xticks(range(len(quantities)), [QUANTITY_STYLE[q][2] for q in quantities])
    largest = max([abs(100 * p.relative_error) for p in points] + [1.0])
    right.set_ylim(-largest * 1.5, largest * 1.5)
    right.set_ylabel("(measured - tree) / tree (%)")
    right.set_title("Relative error per quantity")
    fig.tight_layout()
    return fig
