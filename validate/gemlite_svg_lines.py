"""Read the points of gemlite's matmul speed-up figures (mobiusml/gemlite images/4bit_gs=128_{D}x{D}_{GPU}.svg) from
their SVG path coordinates: the source of kernel_facts.json "weight_only_by_rows" tinygemm entries (the red line,
'TorchAO (A16W4)' / 'TorchAO (A16)', hqq's tinygemm call). A Google Sheets chart: horizontal gridlines at equal value
steps (the axis from 0; a step of 0.5 where there are six lines, to 2.5, else 1: check the rendered legend), each line a
path of points at batch 1, 2, 4, ..., 1,024. Usage (a gemlite checkout, git available):

    python validate/gemlite_svg_lines.py PATH_TO_GEMLITE 33016fd A100 4096
"""

from __future__ import annotations

import re
import subprocess
import sys


def svg_lines(repo: str, commit: str, path: str) -> tuple[list[float], dict[str, list[float]]]:
    """(the horizontal gridlines' y, {stroke colour: the line's y at each point}) of one SVG at a commit."""
    text = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=repo,
                          check=True).stdout
    grid = sorted({float(a) for a, b in re.findall(
        r'stroke="#(?:333333|cccccc)"[^>]*d="M[\d.]+ ([\d.]+)L[\d.]+ ([\d.]+)"', text) if a == b})
    lines = {colour: [float(p.split()[1]) for p in re.findall(r"[ML]([\d.]+ [\d.]+)", d)]
             for colour, d in re.findall(r'<path stroke="(#[0-9a-f]{6})" stroke-width="2.0"[^>]*d="([^"]+)"', text)}
    return grid, lines


def values(grid: list[float], ys: list[float], step: float) -> list[float]:
    """A line's values: (the axis zero - y) / pixels a gridline step x the step's value."""
    zero, pixels = max(grid), (max(grid) - min(grid)) / (len(grid) - 1)
    return [round((zero - y) / pixels * step, 3) for y in ys]


if __name__ == "__main__":
    repo, commit, gpu, size = sys.argv[1:5]
    grid, lines = svg_lines(repo, commit, f"images/4bit_gs=128_{size}x{size}_{gpu}.svg")
    step = 0.5 if len(grid) == 6 else 1.0
    for colour, ys in lines.items():
        print(colour, values(grid, ys, step))
