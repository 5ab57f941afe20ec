"""Vidur's published per-operation profiles (validate/vidur_profiles.py): the H100's GEMV rate is
the one-row streaming rate fitted from them, and the same fit reproduces the A100's BabelStream
figure; the tables compute from the extracted data."""

import pytest

from costmodel.hardware import load_hardware
from validate import vidur_profiles as vidur


@pytest.fixture(scope="module")
def data():
    return vidur.load()


def test_the_h100_gemv_rate_is_vidurs_fitted_streaming_rate(data):
    a, b, n = vidur.gemv_fit(data, "h100")
    assert n == 33 and 0 < a < 10e-6
    assert load_hardware("h100-sxm").gemv_bandwidth_bytes_per_s == round(b / 1e6) * 1e6 == 3016544e6
    # the H800 borrows it: the same GH100 die and 80 GB of HBM3 at 3.35 TB/s
    assert load_hardware("h800").gemv_bandwidth_bytes_per_s == load_hardware("h100-sxm").gemv_bandwidth_bytes_per_s
    assert "vidur" in load_hardware("h100-sxm").source.lower()


def test_the_same_fit_reproduces_the_a100_babelstream_rate(data):
    _, b, n = vidur.gemv_fit(data, "a100")
    babelstream = load_hardware("a100-80gb").gemv_bandwidth_bytes_per_s
    assert n == 33 and abs(b / babelstream - 1) < 0.035  # 1,637.5 against 1,586.9 GB/s: +3.2%


def test_the_extract_holds_every_gpu_model_and_point(data):
    assert set(data["compute"]) == set(vidur.GPUS) and "7d47513" in data["source"]
    for models in data["compute"].values():
        assert set(models) == set(vidur.MODELS)
        for entry in models.values():
            points = {(p["num_tokens"], p["tp"]) for p in entry["points"]}
            assert points == {(t, tp) for t in vidur.TOKENS for tp in (1, 2, 4, 8)}
    for rows in data["all_reduce"].values():
        assert {r["ranks"] for r in rows} >= {2, 4, 8} and max(r["bytes"] for r in rows) <= vidur.MAX_ALL_REDUCE_BYTES


def test_the_projections_are_sharded_as_vidurs_model_shards_them(data):
    shape = data["compute"]["h100"]["meta-llama/Llama-2-70b-hf"]["shape"]
    g = vidur.gemms(shape, 1, 8)
    assert (g["attn_pre_proj"].n, g["attn_pre_proj"].k) == ((64 + 16) * 128 // 8, 8192)
    assert (g["mlp_up_proj"].n, g["mlp_down_proj"].k) == (2 * 28672 // 8, 28672 // 8)


def test_the_large_projections_agree_within_a_quarter(data):
    """A prefill-sized projection (4,096 tokens) is the tile model at the large-GEMM rate; a decode
    row of a large weight is the GEMV rate: both within 25% of Vidur's kernel time."""
    rows = [r for r in vidur.op_ratios(data) if r["op"].endswith("proj") and r["tp"] == 1
            and r["model"] == "meta-llama/Llama-2-70b-hf" and r["num_tokens"] in (1, 4096)]
    assert len(rows) == 16
    assert all(0.75 < r["ours_s"] / r["vidur_s"] < 1.25 for r in rows)


def test_the_report_and_bad_input(capsys, tmp_path):
    assert vidur.main([]) == 0
    out = capsys.readouterr().out
    assert "h100  mlp_up_proj" in out and "h100_dgx" in out
    assert vidur.main(["--extract", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a git directory" in err
