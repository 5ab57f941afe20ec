"""The shared structure of the unseen-row tests (tests/test_session32_unseen_*.py, tests/test_session33_unseen_*.py):
a session types published rows before computing them, pins each row's figure as its source prints it, pins a few
rows' kernel-model ratios as first computed with the figures a later sourced change moved them to beside them,
and pins the summary counts of every source's rows (now). This module holds the lines those files repeated:
finding a source's rows and setup, the ratio pin and the summary pins. Every figure stays in the test file.

A ratio is ours / published (a GPU-hours row's published hours over ours: tests/rows_summary.ratios); a summary
is ((rows, median error %, within 0.75-1.33x, within 10%, within 5%), (lowest, highest)), as `published` counts
them (tests/rows_summary.stats), the lowest and highest ratio to 3 decimals.

Use, for a new session's file (tests/test_sessionNN_unseen_decode.py or _train.py). A file written in the old
style moves onto it in three steps: its `_rows`/`_source`/`_setup` helpers become runs_of, source_of and
decode_setup_of / train_setup_of; its first-computed ratio test becomes assert_first_computed(SOURCES, FIRST,
MOVED or AMENDED); its summary loop becomes assert_summaries with decode_groups or train_groups. Its figures
(FIRST, MOVED, the stats dicts) and its own extra checks stay in the file as they were:

    import pytest
    from tests.unseen_rows import assert_first_computed, assert_summaries, decode_groups, decode_setup_of, ratios, runs_of

    SOURCES = ("source-a", "source-b")           # costmodel/published_runs.json sources: a row id's first word

    def test_the_source_a_rows_are_its_table():
        run = runs_of("source-a")[0]              # the runs whose id's first word is "source-a", in file order
        cfg, hardware, settings, quantization = decode_setup_of(run)   # train_setup_of(run) for a training row
        ...

    FIRST = {"source-a model fp16 tp1 batch 1": 1.234}   # id -> ratio as first computed (kept when it moves)
    MOVED = {}                                           # id -> the ratio now, where a sourced change moved it

    def test_first_computed_ratios_of_a_few_rows(published_tables):   # slow: `published`'s shared table
        assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)

    FIRST_STATS = {"all": ((12, 8.1, 11, 7, 3), (0.912, 1.402)), "source-a": (...), "source-b": (...)}
    NOW_STATS = {**FIRST_STATS}                          # the groups a sourced change moved, restated

    @pytest.mark.slow  # every row of the sources computed
    def test_the_rows_as_first_computed(published_tables):
        every = ratios(SOURCES, tables=published_tables)
        assert_summaries(every, decode_groups(every, SOURCES), NOW_STATS)
        # the file's own checks on `every` (which rows are too fast, an order between two rows) follow here

Training files group by train_groups(every, named): "training rates" (every row not of a gpu-hours-* source),
one group per source in `named`, and "GPU-hours" (the gpu-hours-* sources' rows).
"""

from __future__ import annotations

from reports.published_decode import decode_setup
from reports.published_runs import other_runs_data, train_setup
from tests.rows_summary import ratios, stats

__all__ = ["assert_first_computed", "assert_summaries", "decode_groups", "decode_setup_of", "ratios", "runs_of",
           "source_of", "stats", "summary", "train_groups", "train_setup_of"]


def runs_of(name: str) -> list[dict]:
    """The runs of source `name` (a run id's first word), in costmodel/published_runs.json's order."""
    return [r for r in other_runs_data()["runs"] if r["id"].split()[0] == name]


def source_of(name: str) -> dict:
    """Source `name`'s entry (its URL, hardware, framework and the defaults its runs share)."""
    return other_runs_data()["sources"][name]


def decode_setup_of(run: dict) -> tuple:
    """(cfg, hardware, settings, quantization) of a decode run, as `published` builds it."""
    return decode_setup(run, source_of(run["id"].split()[0]))


def assert_ttft_tables(source: str, tables: dict[tuple[str, str, str], list[tuple]]) -> list[dict]:
    """A TensorRT-LLM 'Low Latency' source's rows are its tables: (id tag, preset, weights) -> [(model, tp, prompt,
    first-token ms)], each row one output token at batch 1 (1000 / ms tokens a second, the prefill's end-to-end
    rate), fp16 with FP8 weights, GEMMs and cache where the table is FP8, TensorRT-LLM's code under CUDA graphs;
    returns the rows checked, every row of the source (sessions 41 and 42's first-token sources)."""
    rows = {r["id"]: r for r in runs_of(source)}
    seen = []
    for (tag, preset, weights), table in tables.items():
        for model, tp, prompt, ms in table:
            run = rows[f"{source} {model} {weights} tp{tp} batch 1 {prompt}/1 {tag}"]
            assert (run["published_first_token_ms"], run["published_tokens_per_s"]) == (ms, round(1000 / ms, 4))
            cfg, hw, settings, quantization = decode_setup_of(run)
            assert (cfg.name, hw.name, run["tp"], settings["prompt"], settings["gen"], settings["batch"],
                    settings["dtype"], settings["cuda_graphs"], settings["implementation"]) == \
                (model, preset, tp, prompt, 1, 1, "fp16", True, "tensorrt-llm")
            fp8 = {"weight_dtype": "fp8", "fp8_gemm": "w8a8", "kv_dtype": "fp8"}
            assert quantization == (fp8 if weights == "fp8" else {})
            seen.append(run)
    assert len(seen) == len(rows) and source_of(source)["rate"] == "end_to_end"
    return seen


def train_setup_of(run: dict) -> tuple:
    """(estimate, hardware, options) of a training run, as `published` builds it."""
    return train_setup(run, source_of(run["id"].split()[0]))


def assert_first_computed(sources: tuple[str, ...], first: dict[str, float], moved: dict[str, float],
                          refused: tuple[str, ...] = (), tables: dict | None = None) -> dict[str, float]:
    """Each row of `first` at its ratio to 3 decimals: the first-computed figure, or the one in `moved` where a
    sourced change has moved it since. The rows the model refuses (rows_summary.ratios' `refused`, as `published`
    marks them not expressible) are exactly `refused`: a row that starts being refused fails here rather than
    leave the ratios unnoticed. Returns every expressible row's ratio. With `tables` (the published_tables
    fixture) the rows are read from `published`'s table, computed once in the run, rather than computed again:
    every session file's first-computed test passes it (before wt46_suitetime each computed its sources' rows
    again in the fast tier, the rows the slow summary test then read from the table)."""
    why: dict[str, str] = {}
    every = ratios(sources, refused=why, tables=tables)
    assert sorted(why) == sorted(refused), why
    assert {k: round(every[k], 3) for k in first} == {**first, **moved}
    return every


def summary(values: list[float]) -> tuple:
    """((rows, median error %, within 0.75-1.33x, within 10%, within 5%), (lowest, highest))."""
    return stats(values), (round(min(values), 3), round(max(values), 3))


def decode_groups(every: dict[str, float], sources: tuple[str, ...]) -> dict[str, list[str]]:
    """"all" the rows, then each source's rows."""
    return {"all": list(every), **{s: [k for k in every if k.split()[0] == s] for s in sources}}


def train_groups(every: dict[str, float], named: tuple[str, ...]) -> dict[str, list[str]]:
    """"training rates" (the rows of no gpu-hours-* source), each source of `named`, "GPU-hours"."""
    return {"training rates": [k for k in every if not k.startswith("gpu-hours")],
            **{s: [k for k in every if k.split()[0] == s] for s in named},
            "GPU-hours": [k for k in every if k.startswith("gpu-hours")]}


def assert_summaries(every: dict[str, float], groups: dict[str, list[str]], expected: dict[str, tuple]) -> None:
    """Each group's summary (summary()) as `expected` states it; every group stated, none left over."""
    assert set(groups) == set(expected), sorted(set(groups) ^ set(expected))
    for name, keys in groups.items():
        assert summary([every[k] for k in keys]) == expected[name], name
