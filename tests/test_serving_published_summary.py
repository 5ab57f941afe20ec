"""reports/serving_published.py: the serving tables' comparisons, fed as each printer prints them and summarised
per source and overall; `serve_published.py summary` prints those counts, and docs/serving.md records them.
The fast tables are run here (TensorRT-LLM's static rows, Sarathi-Serve's, the vLLM post's, torchao's, Qwen's:
seconds), and NIM's, sglang-vllm's and lambda-vllm's (tens of seconds); the tables with a test file of their own
check their rows there; the slowest (trtllm-bench, trtllm-v017 and both MLPerf tables: minutes each) and lmdeploy,
amd-vllm and trtllm-online only by the command, their docs rows as it printed them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reports.serving_published import Comparison, collect, collecting, record, render, summarise, worst  # noqa: E402

FAST = ("trtllm-static", "sarathi", "vllm", "torchao-vllm", "qwen-vllm", "qwen3-sglang")


def test_summary_counts_per_source_and_overall():
    fed = [Comparison("a", "r1", "tok/s", 100.0, 120.0), Comparison("a", "r2", "tok/s", 100.0, 200.0),
           Comparison("a", "r3", "ms", 10.0, 7.0), Comparison("b", "r1", "ms", 50.0, 51.0)]
    summary = summarise(fed)
    assert list(summary) == ["a", "b", "overall"]
    a, overall = summary["a"], summary["overall"]
    assert (a["comparisons"], a["within_0.75_1.33"]) == (3, 1)  # 1.2 in; 2.0 and 0.7 out
    assert a["median_error"] == pytest.approx(0.3) and (a["lowest"], a["highest"]) == (0.7, 2.0)
    assert (overall["comparisons"], overall["within_0.75_1.33"]) == (4, 2)
    assert overall["median_error"] == pytest.approx(0.25)  # errors 0.02, 0.2, 0.3, 1.0
    assert [c.row for c in worst(fed, 2)] == ["r2", "r3"]  # 2.0, then 0.7 (1 / 0.7 = 1.43 > 1.2)
    assert "| **overall** | 4 | 25.0% | 2 | 0.70 | 2.00 |" in render(summary)


def test_record_keeps_only_while_collecting():
    record("x", "row", "m", 1.0, 2.0)  # outside: dropped
    with collecting() as fed:
        record("x", "row", "m", 4.0, 2.0)
    assert fed == [Comparison("x", "row", "m", 4.0, 2.0)] and fed[0].ratio == 0.5


@pytest.fixture(scope="module")
def fast():
    import benchmarks.serve_published as script

    return script, collect([script.SELECTORS[name][0] for name in FAST])


@pytest.mark.slow
def test_each_fast_table_feeds_its_rows(fast):
    from benchmarks.published_qwen3_sglang import qwen3_sglang_rows
    from benchmarks.published_qwen_vllm import qwen_vllm_rows
    from benchmarks.published_trtllm_static import FIRST_TOKEN, H200_FP8, THROUGHPUT

    script, fed = fast
    sources = [c.source for c in fed]
    assert sources.count("trtllm-static") == len(THROUGHPUT) + len(FIRST_TOKEN) == 11
    assert sources.count("trtllm-h200") == len(H200_FP8) == 7
    assert sources.count("sarathi") == 3  # its three kinds of batch (the projections' ms not fed)
    assert sources.count("vllm") == len(script.VLLM_CHART) == 6  # ShareGPT's bars once, with the own lengths
    assert sources.count("torchao-vllm") == 10  # 12 figures less nvfp4's two (not expressible)
    assert sources.count("qwen-vllm") == len(qwen_vllm_rows()) == 25
    assert sources.count("qwen3-sglang") == len(qwen3_sglang_rows()) == 44  # session 37: every BF16 SGLang row
    # the H200 launch note's rows run TensorRT-LLM's decode code (the FP8 cache read as stored) and its masked MHA
    h200 = summarise([c for c in fed if c.source == "trtllm-h200"])["trtllm-h200"]
    assert (h200["within_0.75_1.33"], round(h200["highest"], 2)) == (7, 1.21)  # 13B 1024 x 128/128 the highest


@pytest.mark.slow
def test_the_command_prints_the_functions_counts(fast, capsys, monkeypatch):
    """print_summary collects the named tables' comparisons and prints their summary: here it is handed the
    module's one computation of them (the fixture's, ~10 s), having asked for exactly those tables."""
    script, fed = fast
    asked = []
    monkeypatch.setattr(script, "collect", lambda printers: asked.append(printers) or fed)
    script.print_summary(*FAST)
    assert asked == [[script.SELECTORS[name][0] for name in FAST]]
    printed = capsys.readouterr().out
    for source, counts in summarise(fed).items():
        name = f"**{source}**" if source == "overall" else source
        row = re.search(rf"^\| {re.escape(name)} \| (\d+) \| ([\d.]+)% \| (\d+) \|", printed, re.M)
        assert row, source
        assert (int(row[1]), int(row[3])) == (counts["comparisons"], counts["within_0.75_1.33"])
        assert float(row[2]) == pytest.approx(100 * counts["median_error"], abs=0.05)


@pytest.mark.slow
def test_docs_record_the_fast_sources_counts(fast):
    """docs/serving.md's summary table: the fast sources' rows as the function computes them now."""
    _, fed = fast
    from tests.serving_first import assert_docs_row

    for source, counts in summarise(fed).items():
        if source != "overall":
            assert_docs_row(source, counts)


# Tables of tens of seconds each whose docs rows no table test checks (the others with a test file of their own check
# theirs: tests/serving_first.assert_docs_row): sglang-vllm's and lambda-vllm's rows went four sessions stale after
# b3a02852 moved them (session 44, wt44_servingdocs). trtllm-bench, trtllm-v017, mlperf and mlperf-vllm (minutes
# each) are checked only by the command's full run.
MEDIUM = ("nim", "sglang-vllm", "lambda-vllm")


@pytest.mark.slow
def test_docs_record_the_medium_sources_counts():
    """docs/serving.md's summary table: the MEDIUM sources' rows as the function computes them now (~1.5 min)."""
    import benchmarks.serve_published as script
    from tests.serving_first import assert_docs_row

    fed = collect([script.SELECTORS[name][0] for name in MEDIUM])
    summary = summarise(fed)
    assert [source for source in summary if source != "overall"] == list(MEDIUM)
    for source in MEDIUM:
        assert_docs_row(source, summary[source])


def _docs_summary_rows():
    """docs/serving.md's summary table: {source: (comparisons, median %, within, lowest, highest)}, in its order."""
    text = (ROOT / "docs" / "serving.md").read_text()
    start = text.index("| source | comparisons | median abs(ours / published - 1) |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("*")] = (int(cells[1]), float(cells[2].rstrip("%")), int(cells[3]), float(cells[4]),
                                     float(cells[5]))
    return rows


def test_docs_overall_row_is_its_sources_sum():
    """The overall row of docs/serving.md's summary counts every source row beneath it: the comparisons and the
    within-range counts add up, its range spans theirs, and every source the command summarises has a row (the
    overall row went stale for sessions 33-38 while tables were added and moved; session 38 reran it whole). Its
    median needs every comparison, i.e. the whole 16-30 minute run, so only the command checks it."""
    import benchmarks.serve_published as script

    rows = _docs_summary_rows()
    overall = rows.pop("overall")
    fed = {"trtllm-static": ("trtllm-static", "trtllm-h200")}  # summarise's order: trtllm-static feeds trtllm-h200 next
    assert list(rows) == [name for table in script.TABLES for name in fed.get(table, (table,))]
    assert overall[0] == sum(row[0] for row in rows.values())
    assert overall[2] == sum(row[2] for row in rows.values())
    assert overall[3] == min(row[3] for row in rows.values()) and overall[4] == max(row[4] for row in rows.values())
    medians = sorted(row[1] for row in rows.values())
    assert medians[0] <= overall[1] <= medians[-1]


def test_summary_refuses_an_unknown_table():
    import benchmarks.serve_published as script
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError, match="unknown table 'no-such'"):
        script.print_summary("no-such")
