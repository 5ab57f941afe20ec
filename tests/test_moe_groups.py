"""validate/moe_groups.py: the MoE training rows of `published` grouped by source, framework, GPU,
dispatcher, EP size and model, and each Blackwell row's speed-up over its release's H100 row (session 44)."""

import pytest

from reports.published_runs import other_runs_data
from validate.moe_groups import blackwell_pairs, group_table, main, moe_rows, pairs_by_model, parse

NANO_GB200 = "megatron-bridge-moe 26.04.01 nemotron-3-nano mxfp8 8xgb200"
NANO_H100 = "megatron-bridge-moe 26.04.01 nemotron-3-nano fp8 16xh100"
QWEN_AUTOMODEL = "automodel-moe qwen3-30b-a3b ep8 8xh100"
SUPER_CARD_H100 = "megatron-bridge-cards nemotron-3-super perf bf16 64xh100"
SUPER_CARD_GB200 = "megatron-bridge-cards nemotron-3-super perf bf16 64xgb200"


def _row(run, published, ours, kind="MoE training", unit="tokens/s per GPU"):
    """One row of `published --json`'s other_runs as reports/published_runs.other_runs writes it."""
    return {"run": run, "unit": unit, "published": published, "roofline": None, "kernels": ours,
            "not_expressible": None, "source": "", "kind": kind}


def test_each_rows_attributes_are_its_own_else_its_sources():
    tables = {"other_runs": [_row(NANO_GB200, 32_768, 47_076), _row(QWEN_AUTOMODEL, 12_040, 10_950),
                             _row("gpu-hours-llama2 7b 2.0T tokens", 184_320, 200_000, "dense training", "GPU-hours"),
                             _row(NANO_H100, 14_336, None)]}  # not expressible: left out
    rows = moe_rows(tables, other_runs_data())
    assert [row["id"] for row in rows] == [NANO_GB200, QWEN_AUTOMODEL]
    nano, automodel = rows
    # the row states gb200, hybridep and EP 8; the framework is Megatron's by default
    assert {k: nano[k] for k in ("source", "framework", "hardware", "dispatcher", "ep", "model", "fp8")} == {
        "source": "megatron-bridge-moe", "framework": "megatron", "hardware": "gb200", "dispatcher": "hybridep",
        "ep": 8, "model": "nemotron-3-nano", "fp8": "mxfp8"}
    assert nano["ratio"] == 47_076 / 32_768
    # NeMo AutoModel's source states FSDP2, the H100 and DeepEP for all its rows
    assert (automodel["framework"], automodel["hardware"], automodel["dispatcher"]) == ("fsdp2", "h100-sxm", "deepep")


def test_a_groups_median_range_within_and_signs():
    rows = [{"a": "x", "b": 1, "ratio": r} for r in (0.7, 0.9, 1.2, 1.4)] + [{"a": "y", "b": 1, "ratio": 1.5}]
    x, y = group_table(rows, ("a",))
    assert x == {"group": ("x",), "rows": 4, "median": pytest.approx(1.05), "lowest": 0.7, "highest": 1.4,
                 "within": 2, "fast": 2, "slow": 2}
    assert (y["group"], y["rows"], y["median"], y["within"], y["fast"], y["slow"]) == (("y",), 1, 1.5, 0, 1, 0)
    assert [line["group"] for line in group_table(rows, ("b", "a"))] == [(1, "x"), (1, "y")]


def test_the_blackwell_row_over_its_releases_h100_row():
    tables = {"other_runs": [_row(NANO_GB200, 32_768, 47_076), _row(NANO_H100, 14_336, 16_680),
                             _row(SUPER_CARD_GB200, 6_602.2, 9_881.1), _row(SUPER_CARD_H100, 2_969.3, 3_328.2),
                             _row(QWEN_AUTOMODEL, 12_040, 10_950)]}
    pairs = blackwell_pairs(moe_rows(tables, other_runs_data()))
    # one pair a release (or card) and model; AutoModel's rows are no release's
    assert [(p["blackwell"], p["h100"]) for p in pairs] == [(SUPER_CARD_GB200, SUPER_CARD_H100),
                                                            (NANO_GB200, NANO_H100)]
    card, nano = pairs
    assert nano["published"] == 32_768 / 14_336 and nano["ours"] == 47_076 / 16_680
    assert round(nano["over"], 3) == 1.235  # 2.822 over 2.286: the model's GB200 speed-up 1.23x the published one
    assert round(card["over"], 3) == 1.335  # (9,881.1 / 3,328.2) / (6,602.2 / 2,969.3) = 2.969 / 2.223
    assert [(m["model"], m["pairs"]) for m in pairs_by_model(pairs)] == [("nemotron-3-super", 1), ("nemotron-3-nano", 1)]


@pytest.mark.parametrize("argv", [["--by", "gpu"], ["--by"], ["--bogus", "x"], ["--json", "/nonexistent/published.json"]])
def test_bad_arguments_one_line_and_status_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("moe_groups.py: ") and err.count("\n") == 1


def test_a_saved_table_is_read_and_grouped(capsys):
    tables = {"other_runs": [_row(NANO_GB200, 32_768, 47_076), _row(NANO_H100, 14_336, 16_680)]}
    assert parse(["--by", "model,hardware"]) == (None, (("model", "hardware"),))
    main(["--by", "model,hardware"], tables=lambda path: tables)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 MoE training rates (ratio: our speed over the published one)"
    assert out[3].split() == ["nemotron-3-nano", "/", "gb200", "1", "1.44", "1.44-1.44", "0", "1/0"]
    assert out[4].split() == ["nemotron-3-nano", "/", "h100-sxm", "1", "1.16", "1.16-1.16", "1", "1/0"]
