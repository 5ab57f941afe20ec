"""validate/decode_gap.py, the cross-source split of the decoding rows' gap (wt43_decodegap): a row's ratio is
`published`'s (reports/published_decode.decode_run), its parts add to the generation's mean step, a host-bound
row's implied op time is the op time scaled by the ratio, and the grouping counts what it is given."""

import math

import pytest

from reports.published_decode import decode_generation, decode_run
from reports.published_runs import other_runs_data
from validate.decode_gap import PARTS, _bucket, decode_row, group_table, implied_host_table, main


def _row(run_id):
    data = other_runs_data()
    run = next(run for run in data["runs"] if run["id"] == run_id)
    return run, data["sources"][run_id.split()[0]]


def test_buckets_are_closed_above():
    assert [_bucket(v, (1, 8, 64)) for v in (1, 2, 8, 9, 64, 65)] == ["1", "2-8", "2-8", "9-64", "9-64", ">64"]


def test_a_host_bound_rows_parts_and_implied_op_time():
    # bitsandbytes' benchmarking README (0.45), Llama-3.1-8B bf16 at batch 1 on an H100 under transformers 4.46:
    # 2,488 ops a step (kernel_facts.json eager_step_ops) x the borrowed H200 host's 6.545 us = 16.2846 ms
    run, source = _row("bnb-benchmarking-0.45 llama3.1-8b bf16 batch 1 64/64 h100")
    row = decode_row(run, source)
    assert row["ratio"] == pytest.approx(decode_run(run, source, "kernels") / run["published_tokens_per_s"], rel=1e-12)
    assert row["ratio"] == pytest.approx(1.4984, abs=1e-4)
    assert row["host"] == "eager, host ops counted" and row["regime"] == "host"
    assert row["step_ms"] == pytest.approx(2488 * 6.545241752576789e-3, rel=1e-9)
    assert row["parts_ms"]["launches"] == 0.0  # a host-bound step's launches are the host's term
    # the published rate's 'decode' seconds: the gap a step is (ratio - 1) x the step, and the op time it implies
    assert row["gap_ms"] == pytest.approx((row["ratio"] - 1) * row["step_ms"], rel=1e-9)
    assert row["implied_op_us"] == pytest.approx(6.545241752576789 * row["ratio"], rel=1e-9)


def test_a_kernel_bound_counted_steps_launches_are_dropped_as_the_rule_drops_them():
    """eager_ops.eager_step_seconds, max(kernels - launches, host): wherever the host is counted the per-block
    launches are the host's term, host-bound or not. TinyChat's Llama 3 8B INT4 on the A6000 (712 host calls,
    4.66 ms, under its 8.16 ms of kernels): the split printed the dropped 2.91 ms of launches, its parts summing to
    11.07 ms a step against the generation's 8.79 ms mean step (wt44_eagerblock's note)."""
    run, source = _row("tinychat-b76fab6 tinychat llama3-8b int4 a6000")
    row = decode_row(run, source)
    assert row["host"] == "eager, host ops counted" and row["parts_ms"]["host"] == 0.0  # kernel-bound
    assert row["parts_ms"]["launches"] == 0.0
    generation, _ = decode_generation(run, source, "kernels")
    mean = generation["decode_seconds"] / generation["decode_steps"] * 1e3
    assert row["step_ms"] == pytest.approx(mean, rel=1e-9)


def test_parts_add_to_the_generations_mean_step():
    for run_id in ("gpt-fast llama2-7b bf16", "torchao-kv-long llama3.1-8b cache 32768",
                   "hf-blog-llama2-sagemaker llama2-7b fp16 tp4 concurrency 1 g5.12xlarge"):
        run, source = _row(run_id)
        row = decode_row(run, source)
        generation, _ = decode_generation(run, source, "kernels")
        mean = generation["decode_seconds"] / generation["decode_steps"] * 1e3
        assert math.fsum(row["parts_ms"][part] for part in PARTS) == pytest.approx(max(mean, row["step_ms"]), rel=1e-9)
    # a static cache of 32,768 keys: simulate's copies of the whole cache are beyond the split ('other')
    assert decode_row(*_row("torchao-kv-long llama3.1-8b cache 32768"))["parts_ms"]["other"] > 5.0


def test_group_table_counts_the_too_fast_rows_and_their_largest_part():
    def row(source, ratio, weights, host):
        parts = dict.fromkeys(PARTS, 0.0) | {"weights": weights, "host": host}
        return {"source": source, "ratio": ratio, "step_ms": weights + host, "gap_ms": (ratio - 1) * (weights + host),
                "context": "1-512", "parts_ms": parts, "gpu and host": "a100-80gb, x", "gpu": "a100-80gb", "decode code": "x eager", "implied_op_us": None}
    rows = [row("a", 1.5, 1.0, 3.0), row("a", 1.7, 1.0, 3.0), row("a", 1.4, 1.0, 3.0), row("a", 1.0, 1.0, 3.0),
            row("b", 1.6, 4.0, 0.0)]
    (value, n, fast, median, median_fast, top, shares, needed), = group_table(rows, "source")
    assert (value, n, fast, median, median_fast) == ("a", 4, 3, 1.45, 1.5)
    assert top == ["host", "weights"] and shares == [0.75, 0.25]
    assert needed == pytest.approx(1 + 0.5 * 4 / 3)  # the median row's gap, 2 ms, over its host's 3 ms
    assert implied_host_table(rows) == []  # none carries an implied op time


def test_an_unknown_argument_is_one_line_and_status_2(capsys):
    assert main(["--bogus"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_json_path_that_cannot_be_written_is_one_line_before_the_rows(tmp_path, monkeypatch, capsys):
    """wt43_review2: the path was opened after every decoding row was computed (minutes), then a traceback."""
    import validate.decode_gap as gap

    monkeypatch.setattr(gap, "decode_rows", lambda: pytest.fail("the rows were computed before the path was checked"))
    assert main(["--json", str(tmp_path / "no such folder" / "rows.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rows.json" in err and "Traceback" not in err
