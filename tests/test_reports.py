"""reports/: the seeds' claims, the sweep, the figures' numbers, the report files and their page.

Every number asserted here is written out with where it comes from, so a wrong formula, a wrong
grouping or a lost measurement fails a test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import cli
from reports.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent

for _command in COMMANDS:  # until cli.py registers them itself
    if _command.name not in cli.cli.commands:
        cli.cli.add_command(_command)


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------------------------
# The claims, from the cost tree


@pytest.fixture(scope="module")
def claims():
    from reports.claims import check_claims

    return {c.key: c for c in check_claims(measure=False)}


def test_every_claim_holds_on_the_tree(claims):
    assert len(claims) == 11
    assert [k for k, c in claims.items() if not c.holds] == []


def test_output_projection_claims(claims):
    # 32,000 x 512 multiplications per token (the seeds' 16.4M).
    assert claims["output-projection"].numbers["multiplications_per_token"] == 32_000 * 512 == 16_384_000
    # Six encoder layers at n = 50, per token: QKV + out 4 d^2, FFN 2 d d_ff, attention 2 n d
    # multiplications: 6 * (4*512^2 + 2*512*2048 + 2*50*512) = 19,181,568.
    assert claims["output-projection-vs-layers"].numbers["six_layers_multiplications_per_token"] == (
        6 * (4 * 512**2 + 2 * 512 * 2048 + 2 * 50 * 512)) == 19_181_568


def test_attention_matrices_six_gib(claims):
    # 12 layers x 8 heads x 4096^2 probabilities x 4 bytes = 6.0 GiB.
    assert claims["attention-matrices"].numbers["bytes"] == 12 * 8 * 4096**2 * 4 == 6_442_450_944
    assert 6_442_450_944 == 6 * 2**30


def test_llama_parameter_rule(claims):
    numbers = claims["llama2-7b-params"].numbers
    assert numbers["rule_layers"] == 12 * 32 * 4096**2 == 6_442_450_944
    assert numbers["rule_embeddings"] == 2 * 32000 * 4096 == 262_144_000
    assert numbers["exact"] == 6_738_415_616  # LlamaForCausalLM (docs/design.md)


def test_backward_and_training_ratios(claims):
    numbers = claims["backward-2x"].numbers
    assert numbers["backward"] == 2 * numbers["forward"]
    # GPT-2 at n = 1024: 2 n (L (4 d^2 + 2 d d_ff) + d V) + L 4 n^2 d, b = 1.
    n, L, d, d_ff, V = 1024, 12, 768, 3072, 50257
    assert numbers["forward"] == 2 * n * (L * (4 * d * d + 2 * d * d_ff) + d * V) + L * 4 * n * n * d
    assert claims["training-3x"].numbers["training"] == 3 * numbers["forward"]


def test_attention_vs_rnn_and_table1(claims):
    numbers = claims["attention-vs-rnn"].numbers
    assert numbers["attention_flops"] == 4 * 50**2 * 512 == 5_120_000
    assert numbers["recurrent_flops"] == 4 * 50 * 512**2 == 52_428_800
    assert numbers["breakeven_n"] == 512
    from reports.claims import table1

    rows = {r.layer.strip(): r for r in table1()}
    assert rows["self-attention"].flops_long == 4 * 4096**2 * 512
    assert rows["+ Q, K, V and output projections"].flops_translation == 4 * 50**2 * 512 + 8 * 50 * 512**2
    assert rows["convolutional (k = 3)"].flops_translation == 2 * 50 * 3 * 512**2
    assert rows["recurrent"].sequential == "O(n)"


def test_ffn_and_kv_claims(claims):
    assert claims["ffn-2x-projections"].numbers["ratio"] == "2"
    assert claims["kv-cache-size"].numbers["numbers"] == str(2 * 32 * 4096) + "*n"
    generation = claims["kv-cache-generation"].numbers
    assert generation["without_cache_leading"] == "4*L_dec*d/3"
    assert generation["with_cache_leading"] == "2*L_dec*d"


def test_claims_command_marks_and_exit_status(capsys, monkeypatch):
    code, out, _ = run_main(["claims", "--no-measure"], capsys)
    assert code == 0
    assert out.count("\u2713") == 11 and "\u2717" not in out
    assert "11 of 11 claims hold." in out and "Table 1" in out

    import reports.claims as claims_module

    original = claims_module.check_claims

    def one_fails(measure=True, progress=None):
        checked = original(measure=False)
        broken = claims_module.Claim("broken", "A claim that fails.", "test", "0", "", False)
        return [*checked, broken]

    monkeypatch.setattr(claims_module, "check_claims", one_fails)
    code, out, err = run_main(["claims", "--no-measure"], capsys)
    assert code == 1
    assert "\u2717 12. A claim that fails." in out
    assert err.strip() == "error: 1 of 12 claims fail: broken."


def test_claims_json(capsys):
    code, out, _ = run_main(["claims", "--no-measure", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {c["key"]: c["holds"] for c in data}["attention-matrices"] is True
    assert {c["key"]: c["numbers"] for c in data}["attention-matrices"]["bytes"] == 6_442_450_944


# ---------------------------------------------------------------------------------------------
# Measurements (torch; tiny models on CPU tensors)


@pytest.mark.slow
@pytest.mark.parametrize("name, source", [("llama2-7b", 1), ("transformer-base", 7)])
def test_generation_flops_equal_the_measurement(name, source):
    from reports.generation import generation_curves
    from reports.measured import measure_generation, tiny
    from reports.series import load_model

    small = tiny(load_model(name))
    measured = measure_generation(small, 6, source)
    curves = generation_curves(small, 6, source)
    assert measured["without_cache"] == [int(x) for x in curves.without_cache_step]
    assert measured["with_cache"] == [int(x) for x in curves.with_cache_step]
    assert measured["with_cache"][0] == measured["without_cache"][0]  # the same prefill
    d, L, d_ff, V = 64, 2, small.d_ff, 101
    if name == "llama2-7b":
        # Step 5 with a cache: 2 L (q, k, v, o, 3 d d_ff) + attention 4 L t d + head 2 d V.
        assert measured["with_cache"][4] == 2 * L * (4 * d * d + 3 * d * d_ff) + 4 * L * 5 * d + 2 * d * V
    else:
        # Step 5 with a cache: self-attention q, k, v, o (4 d^2) and cross-attention q, o (2 d^2)
        # for one token, attention over 5 self and 7 cross keys, FFN 2 d d_ff, head 2 d V.
        assert measured["with_cache"][4] == (
            2 * L * (6 * d * d + 2 * d * d_ff) + 4 * L * (5 + 7) * d + 2 * d * V)
        # Without a cache step 5 re-runs the decoder over 5 tokens, cross K, V over 7 source tokens.
        assert measured["without_cache"][4] == (
            2 * 5 * L * (6 * d * d + 2 * d * d_ff) + 2 * 7 * L * 2 * d * d
            + 4 * L * (5 * 5 + 5 * 7) * d + 2 * 5 * d * V)


@pytest.mark.slow
def test_validation_points_are_exact_for_llama():
    from reports.measured import validation_points
    from reports.series import load_model

    points = validation_points([load_model("llama2-7b")], progress=lambda message: None,
                               full_size=False)
    quantities = {p.quantity for p in points}
    assert quantities == {"params", "forward_flops", "training_flops", "activation_bytes",
                          "kv_cache_bytes"}
    assert [p for p in points if p.measured != p.formula] == []
    assert {p.model: p.measured for p in points if p.quantity == "params"}["llama2-7b"] == 6_738_415_616


# ---------------------------------------------------------------------------------------------
# The sweep


def test_parse_values():
    from reports.output import ReportInputError
    from reports.sweep import parse_values

    assert parse_values("128:131072:x2", "--seq-len") == [2**k for k in range(7, 18)]
    assert parse_values("1,8", "--batch") == [1, 8]
    assert parse_values("1:10:+3,2", "--batch") == [1, 2, 4, 7, 10]
    assert parse_values("5:7", "--batch") == [5, 6, 7]
    for bad in ("0", "8:4", "1:8:x1", "a", "1,,2", "1:8:y2"):
        with pytest.raises(ReportInputError):
            parse_values(bad, "--seq-len")


@pytest.mark.slow
def test_sweep_values_and_determinism(tmp_path, capsys):
    paths = []
    for run in ("a", "b"):
        csv_path, json_path = tmp_path / f"{run}.csv", tmp_path / f"{run}.json"
        code, _, err = run_main(["sweep", "--model", "llama2-7b", "--seq-len", "128:131072:x2",
                                 "--batch", "1,8", "--csv", str(csv_path), "--json-out",
                                 str(json_path)], capsys)
        assert code == 0, err
        assert "22 points" in err
        paths.append((csv_path, json_path))
    assert paths[0][0].read_bytes() == paths[1][0].read_bytes()
    assert paths[0][1].read_bytes() == paths[1][1].read_bytes()
    lines = paths[0][0].read_text().splitlines()
    assert len(lines) == 1 + 11 * 2
    header = lines[0].split(",")
    rows = {(int(r.split(",")[1]), int(r.split(",")[2])): r.split(",") for r in lines[1:]}
    forward = rows[(2048, 1)][header.index("forward_flops")]
    assert int(forward) == 29_261_612_187_648  # docs/design.md: measured with FlopCounterMode
    # KV cache at n = 4096, b = 8, bf16: L * 2 * b * n * d * 2 bytes.
    assert int(rows[(4096, 8)][header.index("kv_cache_bytes")]) == 32 * 2 * 8 * 4096 * 4096 * 2
    data = json.loads(paths[0][1].read_text())
    assert data["columns"][:3] == ["seq_len", "batch", "forward_flops"]
    assert data["rows"][0][:3] == [128, 1, int(lines[1].split(",")[3])]


def test_sweep_thousands_of_points_under_a_second():
    from costmodel.config import Workload
    from reports.series import load_model
    from reports.sweep import run

    result = run(load_model("llama2-7b"), Workload(), list(range(64, 4160, 4)), [1, 2, 4, 8])
    assert result.points == 1024 * 4
    assert result.evaluate_seconds < 1.0
    # Training FLOPs are 3x forward at every point of the grid.
    assert (result.columns["training_flops"] == 3 * result.columns["forward_flops"]).all()


def _per_value_csv(result) -> str:
    """The sweep's CSV written value by value (output.csv_text of sweep.plain): the reference
    the vectorised writer must match byte for byte."""
    from reports.output import csv_text
    from reports.sweep import plain

    names = list(result.columns)
    rows = ([result.model, int(n), int(b), *(plain(float(result.columns[k][i])) for k in names)]
            for i, (n, b) in enumerate(zip(result.seq_lens, result.batches)))
    return csv_text(["model", "seq_len", "batch", *names], rows)


@pytest.mark.slow
@pytest.mark.parametrize("name, workload, seq_lens, batches", [
    ("llama2-7b", {}, list(range(128, 131073, 1024)), [1, 3, 8, 1000, 123_456]),
    ("t5-small", {"dtype": "fp32", "attention": "flash", "recompute": "full", "gen_tokens": 7},
     list(range(1, 500, 7)), [1, 2, 1000]),
    ("gpt2", {"impl": "reference", "optimizer": "sgd"}, list(range(1, 1024, 9)), [1, 7, 10**6]),
    ("llama2-70b", {}, [2**k for k in range(21)], [1, 3, 10**6, 10**9]),  # up to 1e30 FLOPs
])
def test_sweep_csv_is_byte_identical_to_the_per_value_writer(name, workload, seq_lens, batches,
                                                            monkeypatch):
    from costmodel.config import Workload
    from reports import sweep
    from reports.series import load_model

    result = sweep.run(load_model(name), Workload(**workload), seq_lens, batches)
    expected = _per_value_csv(result)
    assert sweep.csv_text(result) == expected
    monkeypatch.setattr(sweep, "CHUNK_ROWS", 7)  # chunk edges fall anywhere in the grid
    chunks = list(sweep.csv_chunks(result))
    assert b"".join(chunks).decode() == expected
    assert len(chunks) == 1 + -(-result.points // 7)  # the header, then one piece per chunk


@pytest.mark.slow
def test_csv_numbers_match_python_on_a_million_values():
    """Every float64 the way number_text(plain(v)) writes it: integers below 2**53 exactly, the
    rest as format(v, '.15g'), across every magnitude, sign and the halfway cases."""
    import numpy as np

    from reports.csv_columns import rows_text
    from reports.output import number_text
    from reports.sweep import plain

    rng = np.random.default_rng(15)
    halves = np.arange(1, 20_001) * 0.5  # ties at the last kept digit, scaled below
    values = np.concatenate([
        rng.random(100_000),
        10 ** rng.uniform(-20, 30, 300_000) * rng.choice([-1, 1], 300_000),
        np.floor(10 ** rng.uniform(0, 23, 300_000)),  # integral, across 2**53 and 2**74
        np.floor(rng.uniform(2**53, 2**63, 100_000)) * 2.0 ** rng.integers(0, 12, 100_000),
        halves * 1e14, halves * 1e-1, 123456789012345.5 + np.arange(-50, 50),
        2.0 ** np.arange(-80, 100), 10.0 ** np.arange(-25, 30),
        np.nextafter(10.0 ** np.arange(-25, 30), 0), np.nextafter(10.0 ** np.arange(-25, 30), 1e300),
        [0.0, -0.0, 2**53 - 1, 2**53, 2**53 + 2, 0.1, 1 / 3, 2 / 3, 9.999999999999995e14,
         999999999999999.5, 1e-4, 9.99999999999999e-5, 5e-324, 1.7976931348623157e308,
         float("inf"), float("-inf"), float("nan")],
    ])
    text = rows_text(b"x", [], [values]).decode("ascii")
    written = [line[2:] for line in text.splitlines()]
    expected = [number_text(plain(float(v))) for v in values]
    wrong = [(v, w, e) for v, w, e in zip(values, written, expected) if w != e]
    assert len(written) == len(values) and wrong == []


def test_sweep_csv_streams_to_stdout_and_to_a_file_alike(tmp_path, capsys):
    args = ["sweep", "--model", "gpt2", "--seq-len", "1:1024:+3", "--batch", "1,4,5000"]
    code, stdout, _ = run_main(args, capsys)
    assert code == 0
    code, _, _ = run_main([*args, "--csv", str(tmp_path / "grid.csv")], capsys)
    assert (tmp_path / "grid.csv").read_text() == stdout
    assert len(stdout.splitlines()) == 1 + 342 * 3


def test_sweep_npz_holds_the_evaluated_columns(tmp_path, capsys):
    import numpy as np

    from costmodel.config import Workload
    from reports.series import load_model
    from reports.sweep import QUANTITIES, run

    path = tmp_path / "grid.npz"
    code, _, err = run_main(["sweep", "--model", "llama2-7b", "--seq-len", "128:131072:x2",
                             "--batch", "1,8", "--npz", str(path)], capsys)
    assert code == 0, err
    data = dict(np.load(path))
    assert str(data["model"]) == "llama2-7b"
    assert list(data["columns"]) == ["seq_len", "batch", *(name for name, _ in QUANTITIES)]
    assert dict(zip(data["columns"][2:], data["units"][2:])) == dict(QUANTITIES)
    expected = run(load_model("llama2-7b"), Workload(), [2**k for k in range(7, 18)], [1, 8])
    assert (data["seq_len"] == expected.seq_lens).all() and (data["batch"] == expected.batches).all()
    for name, _ in QUANTITIES:
        assert np.array_equal(data[name], expected.columns[name]), name
    at = {(int(n), int(b)): i for i, (n, b) in enumerate(zip(data["seq_len"], data["batch"]))}
    assert data["forward_flops"][at[2048, 1]] == 29_261_612_187_648  # FlopCounterMode's count


def test_a_sweep_that_fails_while_writing_leaves_no_file(tmp_path, monkeypatch, capsys):
    from reports import csv_columns

    target = tmp_path / "grid.csv"
    target.write_text("old")
    calls = []

    def second_chunk_fails(*args):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(*args)

    original = csv_columns.rows_text
    monkeypatch.setattr(csv_columns, "rows_text", second_chunk_fails)
    monkeypatch.setattr("reports.sweep.CHUNK_ROWS", 100)
    code, _, err = run_main(["sweep", "--model", "gpt2", "--seq-len", "1:1000", "--csv",
                             str(target)], capsys)
    assert code == 2
    assert err.splitlines()[-1] == f"error: {target}: cannot be written (No space left on device)."
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["grid.csv"]


def test_sweep_errors_exit_2(capsys):
    for args in (
        ["sweep", "--model", "gpt2", "--seq-len", "128:4096:x2"],  # beyond 1024 learned positions
        ["sweep", "--model", "gpt2", "--seq-len", "12a"],
        ["sweep", "--model", "no-such-model"],
        ["sweep"],
        ["sweep", "--model", "gpt2", "--batch", "0"],
    ):
        code, out, err = run_main(args, capsys)
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------
# The figures' numbers


@pytest.mark.slow
def test_regime_map_keeps_every_preset_at_its_own_width():
    # The regime map scales a shape in width; at d = d_model it must be the config itself, for
    # every family (MoE experts, latent ranks, windows, heads wider than d/h included), so the
    # crossover and the attention share equal the unscaled model's there.
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.presets import load_preset, preset_names
    from costmodel.tree import CostModel, model_values
    from reports import series

    for name in preset_names():
        cfg = load_preset(name)
        scaled = series.crossover_in_width(cfg)
        assert scaled.free_symbols == {S.d}, name
        assert float(scaled.subs(S.d, cfg.d_model)) == pytest.approx(series.crossover(cfg)[1], rel=1e-12)
        model, n = CostModel(cfg), 1000
        at = {**model_values(cfg), S.b: 1, S.n: n, S.s: n}
        attention, linear = model.attention_flops().xreplace(at), model.projection_ffn_flops().xreplace(at)
        share = series.attention_share_plane(cfg)(n, cfg.d_model)
        assert float(share) == pytest.approx(float(sp.Rational(attention, attention + linear)), rel=1e-12), name
    assert series.multiple_of_d(series.crossover_in_width(load_preset("mixtral-8x7b"))) == (
        "47/4 d + 4 = 11.75 d + 4")  # top-2 of 3.5 d experts; the router's 2 d E per token



def test_figure_numbers_from_the_tree():
    import numpy as np

    from reports import series

    gpt2 = series.load_model("gpt2")
    assert series.crossover(gpt2)[1] == 4608.0  # n* = 6 d for d_ff = 4d, h d_h = d
    assert series.multiple_of_d(series.crossover_in_width(gpt2)) == "6 d"
    shares = series.flop_shares(gpt2, np.array([16, 4608, 65536]))
    total = sum(shares.values())
    assert np.allclose(total, 1.0)
    attention = shares["attention scores QK^T"] + shares["weighted sum of values"]
    assert attention[0] < 0.01 < attention[1] < attention[2]
    llama = series.load_model("llama2-7b")
    curves = series.memory_curves(llama, np.array([4096]), batch=1, dtype="bf16")
    assert curves.kv_cache[0] == 32 * 2 * 4096 * 4096 * 2 == 2 * 2**30
    assert curves.weights == 2 * 6_738_415_616 and curves.states == 16 * 6_738_415_616
    eager, flash, full = curves.activations.values()
    assert full[0] < flash[0] < eager[0]
    groups = series.param_groups(llama)
    assert sum(groups.values()) == 6_738_415_616
    assert groups["output head"] == 32000 * 4096 and groups["embeddings"] == 32000 * 4096


def test_seeds_rule_and_gpus():
    from reports import series
    from reports.claims import seeds_rule

    # GPT-2 (tied): 12 L d^2 + V d.
    assert seeds_rule(series.load_model("gpt2")) == 12 * 12 * 768**2 + 50257 * 768
    # The seed toy: unshared, untied: three V x d tables, 4 layers.
    assert seeds_rule(series.load_model("seed-toy")) == 12 * 4 * 64**2 + 3 * 11 * 64
    capacities = {g["name"]: g["memory_bytes"] for g in series.gpus()}
    assert capacities["H200 141GB SXM"] == 141 * 2**30 and capacities["RTX 4090"] == 24 * 2**30
    assert capacities["A100 80GB SXM"] == 80 * 2**30  # from costmodel/hardware, the one source
    assert all(g["memory_bytes"] == g["memory_gib"] * 2**30 for g in series.gpus())


# ---------------------------------------------------------------------------------------------
# The figures' text, at the report's size


#: Every figure the report draws, for one model and for several (the README's comparison).
FIGURES = {
    "flops-gpt2": lambda b, load: b.make_flops([load("gpt2")]),
    "flops-4-models": lambda b, load: b.make_flops(
        [load(n) for n in ("gpt2", "bert-base-uncased", "llama2-7b", "llama2-70b")]),
    "regimes": lambda b, load: b.make_regimes([load("gpt2")]),
    "memory-gpt2": lambda b, load: b.make_memory(load("gpt2"), 1, "bf16"),
    "memory-llama2-70b": lambda b, load: b.make_memory(load("llama2-70b"), 8, "fp32"),
    "memory-bert-base-uncased": lambda b, load: b.make_memory(load("bert-base-uncased"), 1, "bf16"),
    "generation-gpt2": lambda b, load: b.make_generation(load("gpt2"), False, print),
    "generation-t5-small": lambda b, load: b.make_generation(load("t5-small"), False, print),
    "params": lambda b, load: b.make_params([load("gpt2")]),
    "params-none-highlighted": lambda b, load: b.make_params([]),
    "params-moe": lambda b, load: b.make_params([load("mixtral-8x7b"), load("deepseek-v3")]),
    "kv-cache": lambda b, load: b.make_kv_cache([load("gemma2-9b"), load("deepseek-v3")]),
    "validation": lambda b, load: b.make_validation([load("gpt2")], lambda message: None,
                                                    full_size=False),
    "layout-memory": lambda b, load: layout_figures(b, load)[0],
    "layout-step": lambda b, load: layout_figures(b, load)[1],
}


def layout_figures(build, load) -> list:
    """The two layout figures of a report given llama2-70b on 64 H100s (tp 8 x pp 2 x dp 4)."""
    from costmodel.config import Workload
    from costmodel.layout import Layout

    layout = Layout(tp=8, pp=2, dp=4, microbatches=32, framework="megatron", zero=1)
    return build.make_layouts(load("llama2-70b"), Workload(seq_len=4096, attention="sdpa"), layout, "h100-sxm")


@pytest.fixture(scope="module")
def figures():
    """name -> Made (drawn, not yet rendered to bytes)."""
    from reports import report as build
    from reports.series import load_model

    return {name: make(build, load_model) for name, make in FIGURES.items()}


def drawn_texts(figure) -> list[tuple[Any, Any]]:
    """(Text, its window extent) for every non-empty text the figure draws, with the figure's
    renderer, at the figure's own size and dpi (what savefig writes before any cropping).
    Recorded during a draw: tick labels outside the view and hidden texts are not drawn."""
    from matplotlib.text import Text

    drawn, original = [], Text.draw

    def record(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append((self, Text.get_window_extent(self, renderer)))  # the text alone

    Text.draw = record
    try:
        figure.canvas.draw()
    finally:
        Text.draw = original
    return drawn


def text_problems(figure, margin: float = 2.0) -> list[str]:
    """Texts that leave the canvas, overlap another text, or (a panel's title) run past its
    panel's sides into a neighbour or the edge."""
    texts = drawn_texts(figure)
    width, height = figure.bbox.width, figure.bbox.height
    problems = []
    for text, box in texts:
        if box.x0 < margin or box.y0 < margin or box.x1 > width - margin or box.y1 > height - margin:
            problems.append(f"{text.get_text()!r} leaves the {width:.0f}x{height:.0f} canvas: "
                            f"{[round(v) for v in box.extents]}")
    for i, (first, a) in enumerate(texts):
        for second, b in texts[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5:
                problems.append(f"{first.get_text()!r} overlaps {second.get_text()!r}")
    for ax in figure.axes:
        title, panel = ax.title, ax.get_window_extent()
        if title.get_text() and ax.get_visible():
            box = title.get_window_extent()
            if box.x0 < panel.x0 - margin or box.x1 > panel.x1 + margin:
                problems.append(f"title {title.get_text()!r} is wider than its panel")
    return problems


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_text_leaves_the_canvas_or_overlaps_another(figures, name):
    figure = figures[name].figure
    assert figure.dpi == 110  # the report's PNG resolution
    assert len(drawn_texts(figure)) > 10  # the check sees the figure's text
    assert text_problems(figure) == []


def test_the_text_check_finds_overlaps_and_text_off_the_canvas():
    from reports.figures import pyplot

    figure, ax = pyplot().subplots(figsize=(4, 3))
    ax.set_title("a title far wider than the panel it stands over, into the edge")
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    ax.text(0.51, 0.5, "two", transform=ax.transAxes)
    ax.annotate("outside", (1, 0.5), xytext=(40, 0), xycoords="axes fraction",
                textcoords="offset points", annotation_clip=False)
    problems = text_problems(figure)
    assert any("'one' overlaps 'two'" in p for p in problems)
    assert any("'outside' leaves" in p for p in problems)
    assert any("is wider than its panel" in p for p in problems)
    pyplot().close(figure)


def test_gpu_labels_join_equal_capacities_and_name_the_capacity_once():
    from reports import series
    from reports.figures import gpu_labels

    labels = gpu_labels(series.gpus())
    assert list(labels) == sorted(labels)  # smallest first, as they are stacked
    assert labels[80 * 2**30] == "80 GiB: A100 SXM, H100 PCIe, H100 SXM5"
    assert labels[141 * 2**30] == "141 GiB: H200 SXM" and labels[24 * 2**30] == "24 GiB: RTX 4090"


# ---------------------------------------------------------------------------------------------
# The report


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "gpt2"
    code = cli.main(["report", "--model", "gpt2", "--out", str(out), "--no-measure"])
    assert code == 0
    return out


def test_report_files(report_dir):
    names = {p.relative_to(report_dir).as_posix() for p in report_dir.rglob("*") if p.is_file()}
    for stem in ("flops", "regimes", "memory-gpt2", "generation-gpt2", "params", "kv-cache"):
        assert {f"figures/{stem}.png", f"figures/{stem}.svg", f"tables/{stem}.csv"} <= names
    assert {"index.html", "report.md", "claims.json", "tables/summary.csv", "tables/claims.csv",
            "tables/table1.csv"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    page = (report_dir / "index.html").read_text()
    assert page.count('<img src="data:image/png;base64,') == 6  # issue 14 added the KV cache
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    markdown = (report_dir / "report.md").read_text()
    for line in markdown.splitlines():
        if line.startswith("!["):
            assert (report_dir / line.split("](")[1].rstrip(")")).is_file()
    summary = (report_dir / "tables" / "summary.csv").read_text().splitlines()
    assert summary[1].split(",")[:4] == ["gpt2", "decoder", "124439808", "1024"]
    assert "11 of 11 hold" in markdown
    png = (report_dir / "figures" / "flops.png").read_bytes()
    assert png.startswith(b"\x89PNG") and b"Software" not in png
    assert b"<dc:date>" not in (report_dir / "figures" / "flops.svg").read_bytes()


def test_report_is_deterministic(report_dir, tmp_path):
    again = tmp_path / "again"
    assert cli.main(["report", "--model", "gpt2", "--out", str(again), "--no-measure"]) == 0
    for path in sorted(report_dir.rglob("*")):
        if path.suffix in (".csv", ".json", ".png", ".svg", ".md"):
            other = again / path.relative_to(report_dir)
            assert path.read_bytes() == other.read_bytes(), path.name


def test_report_errors_exit_2(tmp_path, capsys):
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    for args in (
        ["report", "--model", "gpt2", "--out", str(afile), "--no-measure"],
        ["report", "--out", str(tmp_path / "x")],
        ["report", "--models", "gpt2,,bert-base-uncased", "--out", str(tmp_path / "x")],
        ["report", "--model", "gpt2", "--models", "gpt2", "--out", str(tmp_path / "x")],
        ["plot", "regimes", "--model", "gpt2", "--out", str(tmp_path / "r.jpg")],
        ["plot", "generation", "--model", "bert-base-uncased", "--out", str(tmp_path / "g.png")],
        ["plot", "memory", "--models", "gpt2,llama2-7b", "--out", str(tmp_path / "m.png")],
    ):
        code, _, err = run_main(args, capsys)
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1, err
    assert afile.read_text() == "x"
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_plot_writes_one_figure(tmp_path, capsys):
    out, table = tmp_path / "regimes.svg", tmp_path / "regimes.csv"
    code, stdout, _ = run_main(["plot", "regimes", "--model", "gpt2", "--out", str(out), "--csv",
                                str(table)], capsys)
    assert code == 0 and stdout.strip() == str(out)
    assert out.read_text().lstrip().startswith("<?xml")
    rows = {r.split(",")[0]: r.split(",") for r in table.read_text().splitlines()[1:]}
    assert rows["llama2-7b"][1:3] == ["4096", "4096"] and rows["llama2-7b"][4] == "projections and FFN"


def test_writes_are_atomic(tmp_path, monkeypatch):
    from reports import output

    target = tmp_path / "table.csv"
    target.write_text("old")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(output.os, "replace", broken)
    with pytest.raises(output.ReportInputError, match="disk full"):  # one line, exit status 2
        output.write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_every_command_has_help():
    for command in COMMANDS:
        assert command.help and command.help.strip()
        for sub in getattr(command, "commands", {}).values():
            assert sub.help and sub.help.strip(), sub.name


def test_importing_the_commands_is_light():
    code = ("import sys, cli, reports.commands; "
            "print(sorted(m for m in ('matplotlib', 'pandas', 'torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# The page in a browser


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def full_report_dir(tmp_path_factory, figures):
    """A report with every kind of figure: gpt2's without measurements, plus the
    formula-vs-measurement figure of the tiny models (the full-size runs are skipped)."""
    from reports import report as build
    from reports.series import load_model

    made = build.build([load_model("gpt2")], measure=False, progress=lambda message: None)
    validation = figures["validation"]
    if not validation.images:
        validation.render()
    made.made.append(validation)
    out = tmp_path_factory.mktemp("full") / "gpt2"
    build.write(made, out)
    return out


#: Run in the page after it loads: where each figure is drawn and at what size, and the page's
#: height (for a screenshot of the whole page).
LAYOUT_SCRIPT = """<script>
window.addEventListener("load", function () {
  var rows = [];
  for (var i = 0; i < document.images.length; i++) {
    var img = document.images[i], box = img.getBoundingClientRect();
    rows.push([img.closest("figure").previousElementSibling.id, box.left + img.clientLeft,
               box.top + img.clientTop + window.scrollY, img.clientWidth, img.clientHeight,
               img.naturalWidth, img.naturalHeight, img.parentElement.clientWidth].join(" "));
  }
  var out = document.createElement("pre");
  out.id = "layout";
  out.setAttribute("data-height", String(document.documentElement.scrollHeight));
  out.textContent = rows.join(";");
  document.body.appendChild(out);
});
</script>"""


def _run_chromium(args: list[str], page: str, **kwargs) -> subprocess.CompletedProcess:
    common = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
              "--force-device-scale-factor=1"]
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([*common, f"--user-data-dir={profile}", *args, page],
                              capture_output=True, timeout=120, check=True, **kwargs)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_page_renders_in_headless_chromium(full_report_dir, tmp_path):
    """Every figure loads and is painted whole, at the report's width, in a real browser."""
    from PIL import Image, ImageChops, ImageFilter, ImageStat

    html_text = (full_report_dir / "index.html").read_text()
    names = [m.split('"')[0] for m in html_text.split('<h2 id="')[1:] if "<figure>" in m]
    assert sorted(names) == sorted(["flops", "regimes", "memory-gpt2", "generation-gpt2", "params",
                                    "kv-cache", "validation"])
    page_file = full_report_dir / "layout.html"
    page_file.write_text(html_text.replace("</body>", LAYOUT_SCRIPT + "</body>"))
    page = page_file.resolve().as_uri()
    dom = _run_chromium(["--window-size=1280,2000", "--virtual-time-budget=10000", "--dump-dom"],
                        page, text=True).stdout
    check = dom.split('id="image-check"')[1].split(">")[0]
    assert 'data-loaded="7"' in check and 'data-total="7"' in check, check
    layout = dom.split('id="layout"')[1]
    height = int(layout.split('data-height="')[1].split('"')[0])
    rows = [row.split() for row in layout.split(">")[1].split("<")[0].split(";")]
    assert [row[0] for row in rows] == names
    shot = tmp_path / "shot.png"
    _run_chromium([f"--window-size=1280,{height}", f"--screenshot={shot}"], page)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, height)
    assert max(ImageStat.Stat(image).stddev) > 20  # not a blank page
    for name, *numbers in rows:
        left, top, width, height_px, natural_width, natural_height, column = (
            round(float(v)) for v in numbers)
        # At the report's size: the PNG's own width, or shrunk to the text column, never cut.
        assert width == min(natural_width, column), name
        assert abs(height_px / width - natural_height / natural_width) < 0.01, name
        assert left >= 0 and left + width <= 1280 and top + height_px <= image.size[1], name
        # The browser's pixels against the PNG scaled alike, both blurred (the two scalers differ
        # on thin lines): a tenth of the PNG's distance from a blank box on the figures here; a
        # missing, cut or mirrored figure is as far as a blank box or farther.
        blur = ImageFilter.GaussianBlur(3)
        shown = image.crop((left, top, left + width, top + height_px)).filter(blur)
        drawn = Image.open(full_report_dir / "figures" / f"{name}.png").convert("RGB")
        drawn = drawn.resize((width, height_px), Image.Resampling.LANCZOS).filter(blur)
        blank = Image.new("RGB", shown.size, "white")
        difference = sum(ImageStat.Stat(ImageChops.difference(shown, drawn)).mean)
        against_blank = sum(ImageStat.Stat(ImageChops.difference(blank, drawn)).mean)
        assert difference < 0.3 * against_blank, (name, difference, against_blank)
