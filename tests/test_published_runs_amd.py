"""The AMD runs of published_runs.json (issue 18): gpt-fast's Llama-2-7B rows on one GCD of an
MI250X, as its README states them, and the measured kernel-level rates the AMD hardware files
time them with (costmodel/hardware/mi250x.json, mi300x.json: their sources)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from reports.published_runs import decode_run, decode_setup, other_runs_data


def _amd_runs() -> tuple[dict, dict]:
    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("gpt-fast-amd ")}
    return runs, data["sources"]["gpt-fast-amd"]


def test_gpt_fasts_amd_bandwidth_column_is_the_models_weight_bytes():
    """The README's Memory Bandwidth column is the model's bytes x its tokens/s: Llama-2-7B's bf16
    weights (6,738,415,616 parameters x 2 bytes) x 76.33 = 1,028.69 GB/s, published 1,028.70 (the
    tokens/s rounded to 0.01: +-0.07 GB/s). The rows' settings: tests/test_published_decode.py."""
    from costmodel.roofline import simulate_inference

    runs, source = _amd_runs()
    cfg, hardware, settings, _ = decode_setup(runs["gpt-fast-amd llama2-7b bf16"], source)
    weights = simulate_inference(cfg, hardware, prompt=settings["prompt"], gen=settings["gen"], batch=1,
                                 dtype="bf16", kv_cache="static", cuda_graphs=True,
                                 implementation="gpt-fast")["memory"]["weights"]
    assert weights == 13_476_831_232
    assert weights * runs["gpt-fast-amd llama2-7b bf16"]["published_tokens_per_s"] / 1e9 == \
        pytest.approx(1028.70, abs=0.07)


def test_the_mi250x_gcd_decodes_at_its_measured_stream_rate_and_graph_gap():
    """The kernel model's bf16 token on one MI250X GCD: the roofline's weight bytes at 0.8 x 1.6 TB/s
    moved instead at gpu-benches' MI210 read rate (1,366 GB/s, the same gfx90a die), plus the HIP
    graph's 2.048 us a kernel (mi210_graph.txt) for each of the token's 32 x 14 + 3 kernels; no DRAM
    startup (none resolved by that run)."""
    runs, source = _amd_runs()
    run = runs["gpt-fast-amd llama2-7b bf16"]
    gcd = load_hardware("mi250x")
    assert (gcd.gemv_bandwidth_bytes_per_s, gcd.graph_kernel_s, gcd.dram_kernel_startup_s) == (1366e9, 2.048e-6, 0.0)
    roofline, kernels = decode_run(run, source, "roofline"), decode_run(run, source, "kernels")
    per_token = 1 / roofline * (0.8 * 1600) / 1366 + 451 * 2.048e-6
    assert 1 / kernels == pytest.approx(per_token, rel=0.002)


def test_the_mi300x_moves_a_gemvs_bytes_at_its_babelstream_dot_rate():
    """AMD's MI300X acceptance guide's BabelStream Dot, 3,878,410.495 MB/s, in place of 0.8 x 5.3 TB/s:
    a bf16 Llama-2-7B token (no graph gap is known for this GPU) takes the roofline's time x 4,240 / 3,878."""
    runs, source = _amd_runs()
    on_mi300x = dict(source, hardware="mi300x")
    run = runs["gpt-fast-amd llama2-7b bf16"]
    roofline, kernels = decode_run(run, on_mi300x, "roofline"), decode_run(run, on_mi300x, "kernels")
    assert load_hardware("mi300x").gemv_bandwidth_bytes_per_s == 3_878_410_495_000
    assert 1 / kernels == pytest.approx(1 / roofline * (0.8 * 5300) / 3878.410495, rel=0.002)
