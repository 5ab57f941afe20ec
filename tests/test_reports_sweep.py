"""reports/sweep.py and the sweep command: values parsed, the grid evaluated at once, its CSV, JSON
and npz files, byte for byte, and errors.

Every number asserted here is written out with where it comes from, so a wrong formula or a wrong
grouping fails a test.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main


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


def test_a_sweep_with_one_bad_destination_writes_nothing(tmp_path, capsys):
    """`sweep --csv ok.csv --json-out missing/x.json` wrote ok.csv, then printed its progress line
    and failed on the JSON's folder: every destination is now checked before the work (one line,
    exit 2, no file)."""
    code, out, err = run_main(["sweep", "--model", "gpt2", "--seq-len", "64", "--csv", str(tmp_path / "ok.csv"),
                               "--json-out", str(tmp_path / "missing" / "x.json")], capsys)
    assert (code, out) == (2, "") and err == f"error: {tmp_path / 'missing'}: no such directory.\n", err
    assert list(tmp_path.iterdir()) == []


def test_sweep_errors_exit_2(capsys):
    for args in (
        ["sweep", "--model", "gpt2", "--seq-len", "128:4096:x2"],  # beyond 1024 learned positions
        ["sweep", "--model", "gpt2", "--seq-len", "12a"],
        ["sweep", "--model", "no-such-model"],
        ["sweep"],
        ["sweep", "--model", "gpt2", "--batch", "0"],
        ["sweep", "--model", "gpt2", "--weight-dtype", "int3"],  # not a format
        ["sweep", "--model", "gpt-oss-20b", "--weight-dtype", "none", "--weight-group", "64"],
        ["sweep", "--model", "llama2-7b", "--seq-len", "64", "--weight-dtype", "mxfp4"],  # no experts
        ["sweep", "--model", "llama2-7b", "--seq-len", "64", "--weight-dtype", "int4", "--weight-group", "0"],
    ):
        code, out, err = run_main(args, capsys)
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1, err


def _json_grid(tmp_path, capsys, model: str, seq_lens: str, *extra: str):
    """`sweep --json-out` of `model` at the batches 1 and 8: the file's data, stderr, and each row by
    (n, b) as {column: value}."""
    path = tmp_path / "grid.json"
    code, _, err = run_main(["sweep", "--model", model, "--seq-len", seq_lens, "--batch", "1,8",
                             "--json-out", str(path), *extra], capsys)
    assert code == 0, err
    data = json.loads(path.read_text())
    return data, err, {(row[0], row[1]): dict(zip(data["columns"], row)) for row in data["rows"]}


@pytest.mark.filterwarnings("ignore:model 'gpt-oss-20b' attends within a sliding window")
def test_sweep_inference_weights_default_to_the_checkpoint_as_estimate(tmp_path, capsys):
    """gpt-oss-20b's config.json stores its experts in MXFP4: sweep's inference bytes hold them so,
    exactly as estimate's inference_total (14,685,601,152 B at n = 2048, b = 1, of which the weights
    are 13,761,264,768 B, estimate's memory.quantized_weights.total); its weights and
    training bytes stay unquantized (41,829,514,368 B of bf16 weights), as estimate's do.
    --weight-dtype none gives the unquantized inference bytes (42,753,850,752 B, 39.8 GiB, what
    sweep printed before it had the option)."""
    import costmodel

    def grid(*extra):
        return _json_grid(tmp_path, capsys, "gpt-oss-20b", "512,2048", *extra)

    data, err, rows = grid()
    assert "note: inference weights: mxfp4 (the checkpoint's quantization_config" in err
    assert data["workload"]["weight_dtype"] == "mxfp4" and data["workload"]["weight_dtype_source"] == "checkpoint"
    none_data, none_err, unquantized = grid("--weight-dtype", "none")
    assert "weight_dtype" not in none_data["workload"] and none_data["workload"]["weight_dtype_source"] == "option"
    assert "note: inference weights: unquantized, in --dtype (--weight-dtype none)" in none_err
    assert rows[2048, 1]["inference_bytes"] == 14_935_686_528  # session 26: + the largest no-grad transient (memory.forward_transient)
    assert unquantized[2048, 1]["inference_bytes"] == 43_003_936_128
    for (n, b), row in rows.items():
        memory = costmodel.estimate("gpt-oss-20b", seq_len=n, batch=b).to_dict()["memory"]
        bf16 = costmodel.estimate("gpt-oss-20b", seq_len=n, batch=b, weight_dtype="none").to_dict()["memory"]
        assert row["inference_bytes"] == memory["inference_total"] < bf16["inference_total"]
        assert unquantized[n, b]["inference_bytes"] == bf16["inference_total"]
        for sweep_name, estimate_name in (("weights_bytes", "weights"), ("training_bytes", "training_total"),
                                          ("kv_cache_bytes", "kv_cache")):
            assert row[sweep_name] == unquantized[n, b][sweep_name] == memory[estimate_name], sweep_name
        assert row["weights_bytes"] == 41_829_514_368
    frame = costmodel.sweep("gpt-oss-20b", 2048, [1, 8])  # the Python API resolves the format alike
    assert frame["inference_bytes"].tolist() == [rows[2048, 1]["inference_bytes"], rows[2048, 8]["inference_bytes"]]
    frame = costmodel.sweep("gpt-oss-20b", 2048, 1, weight_dtype="none")
    assert frame["inference_bytes"].tolist() == [43_003_936_128]


def test_sweep_kv_dtype_sets_the_kv_cache_bytes_as_estimate(tmp_path, capsys):
    """sweep --kv-dtype (the option estimate and simulate share): Llama-2-7B's KV cache in bf16 is
    2 (K, V) x 32 layers x 4,096 x n x b x 2 bytes (536,870,912 B at n = 1,024, b = 1); fp8 and int8
    store one byte per element and two fp32 scales per layer (vLLM's k_scale, v_scale): exactly half,
    plus 32 x 2 x 4 = 256 bytes, at every point. The inference bytes move by the same difference, the
    weights, activations and training bytes not at all; estimate's exact integers agree."""
    import costmodel

    def grid(*extra):
        return _json_grid(tmp_path, capsys, "llama2-7b", "1024,4096", *extra)

    plain_data, _, bf16 = grid()
    fp8_data, _, fp8 = grid("--kv-dtype", "fp8")
    _, _, int8 = grid("--kv-dtype", "int8")
    assert "kv_dtype" not in plain_data["workload"] and fp8_data["workload"]["kv_dtype"] == "fp8"
    assert bf16[1024, 1]["kv_cache_bytes"] == 536_870_912 and fp8[1024, 1]["kv_cache_bytes"] == 268_435_712
    for (n, b), row in bf16.items():
        assert row["kv_cache_bytes"] == 2 * 32 * 4096 * n * b * 2
        assert fp8[n, b]["kv_cache_bytes"] == row["kv_cache_bytes"] // 2 + 32 * 2 * 4 == int8[n, b]["kv_cache_bytes"]
        saved = row["kv_cache_bytes"] - fp8[n, b]["kv_cache_bytes"]
        assert row["inference_bytes"] - fp8[n, b]["inference_bytes"] == saved
        for same in ("weights_bytes", "activation_bytes", "training_bytes", "forward_flops"):
            assert fp8[n, b][same] == row[same], same
        exact = costmodel.estimate("llama2-7b", seq_len=n, batch=b, kv_dtype="fp8").to_dict()["memory"]
        assert fp8[n, b]["kv_cache_bytes"] == exact["kv_cache"]
    code, _, err = run_main(["sweep", "--model", "llama2-7b", "--seq-len", "64", "--kv-dtype", "fp4"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--kv-dtype" in err
