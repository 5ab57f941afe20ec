"""The report's pages: report.md and a self-contained index.html (its CSS and script), rendered from a Report.

Rendering only: what the tables and figures hold is computed in reports/report.py and kept in a
Report (reports/made.py); here it is laid out as Markdown and HTML.
"""

from __future__ import annotations

import base64
import html
from typing import Sequence

from .made import SUMMARY_ATTENTION, Report
from .text import binary_bytes, count, si


def summary_display(rows: list[list]) -> tuple[list[str], list[list[str]]]:
    """The summary table as the pages show it: counts, FLOPs and bytes in readable units."""
    headers = ["model", "architecture", "parameters", "n", "forward FLOPs / token",
               "training FLOPs (batch)", "weights", "training memory", "KV cache", "n*",
               "attention share", "dominant", "attention"]
    shown = [[r[0], r[1], count(r[2]), f"{r[3]:,}", si(r[6], "FLOP"), si(r[7], "FLOP"),
              binary_bytes(r[8]), binary_bytes(r[9]), binary_bytes(r[10]) if r[10] else "none",
              f"{r[11]:,.0f}", f"{100 * r[12]:.1f}%", r[13], r[14]] for r in rows]
    return headers, shown


def _title(report: Report) -> str:
    return "Cost report: " + ", ".join(c.name for c in report.cfgs)


def _intro(report: Report) -> str:
    return (f"Every number below comes from the cost tree (costmodel/): sympy expressions owned by "
            f"one block each, evaluated exactly or over arrays. Workload of the summary and the "
            f"memory figures: batch {report.batch}, {report.dtype}, each model at its usual "
            f"context length; the summary's training memory with a fused attention kernel "
            f"({SUMMARY_ATTENTION}, or flash where the model's Hugging Face class has no {SUMMARY_ATTENTION} path; no "
            f"n x n matrix kept; eager, which keeps it, where the class has neither: the attention column). "
            f"FLOPs are matrix products only, 2·m·n·k each as torch's FlopCounterMode counts them, with every "
            f"score of the n x n attention matrix (the causal mask saves none) and the head at every position; "
            f"training FLOPs are the forward and the backward (twice the forward), 6·N·D's convention plus the "
            f"attention. Measured points come from validate/'s reference model.")


def _claims_rows(report: Report) -> list[list[str]]:
    return [[c.mark, c.statement, c.tree, c.measured or "-", c.note] for c in report.claims]


def _table1_rows(report: Report) -> list[list[str]]:
    return [[r.layer.strip(), r.complexity, si(r.flops_translation, "FLOP"), si(r.flops_long, "FLOP"),
             r.sequential, r.path_length, r.from_tree] for r in report.table1]


TABLE1_HEADERS = ["layer", "complexity per layer", "FLOPs at n = 50", "FLOPs at n = 4096",
                  "sequential operations", "maximum path length", "from"]
CLAIM_HEADERS = ["", "claim", "cost tree", "measured", "note"]


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    escape = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(escape(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(report: Report) -> str:
    holding = sum(c.holds for c in report.claims)
    parts = [f"# {_title(report)}", "", _intro(report), ""]
    if report.command:
        parts += [f"Made with `{report.command}`.", ""]
    parts += ["## Summary", "", _md_table(*summary_display(report.summary[1])), ""]
    for made in report.made:
        parts += [f"## {made.title}", "", f"![{made.title}](figures/{made.name}.png)", "",
                  made.caption, "", f"Numbers: [tables/{made.name}.csv](tables/{made.name}.csv); "
                  f"vector figure: [figures/{made.name}.svg](figures/{made.name}.svg).", ""]
    parts += [f"## The introductory articles' claims, checked ({holding} of {len(report.claims)} hold)", "",
              _md_table(CLAIM_HEADERS, _claims_rows(report)), "",
              "### Vaswani et al. 2017, Table 1, at d = 512", "",
              _md_table(TABLE1_HEADERS, _table1_rows(report)), "",
              "Recurrent and convolutional rows use the papers' comparison formulas "
              "(reports/claims.py), not the cost model.", ""]
    if report.notes:
        parts += ["## Notes", "", *(f"- {note}" for note in report.notes), ""]
    return "\n".join(parts)


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1180px; padding: 24px 32px 64px; color: #1d1d1f;
       background: #ffffff; line-height: 1.45; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 40px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
figure { margin: 16px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #444; font-size: 14px; margin-top: 6px; }
table { border-collapse: collapse; font-size: 13px; margin: 12px 0; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 5px 9px; text-align: left; vertical-align: top; }
th { background: #f5f5f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #1a7f37; font-size: 18px; } td.bad { color: #c62828; font-size: 18px; }
nav a { margin-right: 14px; } .muted { color: #666; font-size: 13px; }
"""

IMAGE_CHECK = """
<script>
window.addEventListener("load", function () {
  var images = document.images, loaded = 0;
  for (var i = 0; i < images.length; i++) {
    if (images[i].complete && images[i].naturalWidth > 0) { loaded++; }
  }
  var check = document.getElementById("image-check");
  check.setAttribute("data-loaded", String(loaded));
  check.setAttribute("data-total", String(images.length));
  check.textContent = loaded + " of " + images.length + " figures loaded.";
});
</script>
"""


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], marks: bool = False) -> str:
    e = html.escape
    head = "".join(f"<th>{e(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ""
            if marks and i == 0:
                cls = ' class="ok"' if cell == "\u2713" else ' class="bad"'
            cells.append(f"<td{cls}>{e(str(cell))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def html_page(report: Report) -> str:
    """A self-contained page: figures embedded as base64 PNG, no network."""
    e = html.escape
    holding = sum(c.holds for c in report.claims)
    nav = " ".join(f'<a href="#{m.name}">{e(m.title)}</a>' for m in report.made)
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(_title(report))}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
        f"<h1>{e(_title(report))}</h1>", f"<p>{e(_intro(report))}</p>",
    ]
    if report.command:
        parts.append(f'<p class="muted">Made with <code>{e(report.command)}</code>.</p>')
    parts += [f"<nav>{nav} <a href=\"#claims\">Claims</a></nav>", "<h2 id=\"summary\">Summary</h2>",
              _html_table(*summary_display(report.summary[1]))]
    for made in report.made:
        data = base64.b64encode(made.images["png"]).decode("ascii")
        parts += [
            f'<h2 id="{made.name}">{e(made.title)}</h2>', "<figure>",
            f'<img src="data:image/png;base64,{data}" alt="{e(made.title)}">',
            f"<figcaption>{e(made.caption)} Numbers: <a href=\"tables/{made.name}.csv\">"
            f"tables/{made.name}.csv</a>; vector: <a href=\"figures/{made.name}.svg\">"
            f"figures/{made.name}.svg</a>.</figcaption>", "</figure>",
        ]
    parts += [
        f'<h2 id="claims">The introductory articles\' claims, checked ({holding} of {len(report.claims)} hold)</h2>',
        _html_table(CLAIM_HEADERS, _claims_rows(report), marks=True),
        "<h3>Vaswani et al. 2017, Table 1, at d = 512</h3>",
        _html_table(TABLE1_HEADERS, _table1_rows(report)),
        '<p class="muted">Recurrent and convolutional rows use the papers\' comparison formulas '
        "(reports/claims.py), not the cost model.</p>",
    ]
    if report.notes:
        parts += ["<h2>Notes</h2>", "<ul>", *(f"<li>{e(n)}</li>" for n in report.notes), "</ul>"]
    parts += ['<p id="image-check" class="muted" data-loaded="" data-total=""></p>', IMAGE_CHECK,
              "</body>", "</html>", ""]
    return "\n".join(parts)
