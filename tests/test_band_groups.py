"""validate/band_groups.py: published rows off the 0.75-1.33x band grouped by source, framework, GPU and sign
(session 44, wt44_denseout). The rows are real run ids of costmodel/published_runs.json; their ratios are given
(ours / published), so the grouping is checked without computing `published`."""

from __future__ import annotations

import json

import pytest

from validate.band_groups import band, groups, main, markdown

DDP_EAGER = "litgpt-thunder tinyllama-1.1b ddp eager 8xa100-40gb"
DDP_COMPILE = "litgpt-thunder tinyllama-1.1b ddp thunder-torchcompile 8xa100-40gb"
SINGLE = "litgpt-thunder tinyllama-1.1b single eager 1xa100-40gb"
AMD = "amd-pytorch-training-v25.2 llama3.1-8b bf16 bs3 8192 8xmi300x"


def row(run: str, published: float, kernels: float | None, kind: str = "dense training",
        unit: str = "tokens/s per GPU") -> dict:
    return {"run": run, "unit": unit, "published": published, "kernels": kernels, "kind": kind}


# session 44's `published --json` (main at 171c1fae): the two litgpt DDP rows at 1.446x and 1.450x, the 1-GPU
# eager row at 1.144x (inside 0.83-1.2x), AMD's MI300X Llama 3.1 8B BF16 row at 1.244x
ROWS = [row(DDP_EAGER, 14385.6, 20796.902318608893), row(DDP_COMPILE, 19210.2, 27859.92244424168),
        row(SINGLE, 18300.0, 20933.0747518993), row(AMD, 9375.1, 11659.683847641212),
        row(DDP_EAGER, 1.0, 2.0, kind="decoding"),  # another kind: left out
        row(SINGLE, 1.0, None),  # no kernel-model figure: left out
        row(AMD, 100.0, 50.0, unit="GPU-hours")]  # a cost, as summary_by_kind: left out


@pytest.mark.parametrize("ratio, expected", [(1.3301, "over"), (1.33, "high edge"), (1.2, "high edge"),
                                             (1.1999, None), (0.8301, None), (0.83, "low edge"),
                                             (0.75, "low edge"), (0.7499, "under")])
def test_bands_meet_where_ratio_counts_does(ratio, expected):
    assert band(ratio) == expected


def test_groups_by_source_framework_gpu_and_sign():
    found = groups(ROWS)
    assert [(g["band"], g["source"], g["framework"], g["hardware"], g["rows"]) for g in found] == [
        ("over", "litgpt-thunder", "fsdp2", "a100-40gb", 2),
        ("high edge", "amd-pytorch-training-v25.2", "fsdp2", "mi300x", 1)]
    ddp = found[0]
    assert ddp["runs"] == [DDP_EAGER, DDP_COMPILE]
    assert ddp["layouts"] == ["tp1 pp1 dp8 zero 2"]  # the source types torch DDP as fsdp2 --zero 2
    assert round(ddp["lowest"], 4) == 1.4457 and round(ddp["highest"], 4) == 1.4503
    assert found[1]["layouts"] == ["tp1 pp1 dp8 zero 3"]
    assert markdown(found).splitlines()[2] == \
        "| over | litgpt-thunder | fsdp2 | a100-40gb | 2 | 1.45-1.45 | tp1 pp1 dp8 zero 2 |"
    assert markdown(found, rows=True).splitlines()[3:5] == [f"|  | {DDP_EAGER} |  |  |  | 1.446 |  |",
                                                           f"|  | {DDP_COMPILE} |  |  |  | 1.450 |  |"]


def test_other_kinds_group_apart():
    assert groups(ROWS, "decoding")[0]["rows"] == 1 and groups(ROWS, "MoE training") == []


def test_command_reads_published_json_and_refuses_anything_else(tmp_path, capsys):
    good = tmp_path / "published.json"
    good.write_text(json.dumps({"other_runs": ROWS}))
    assert main([str(good)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-4:] == ["over: 2 rows", "high edge: 1 rows", "low edge: 0 rows", "under: 0 rows"]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main([str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
