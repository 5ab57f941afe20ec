"""benchmarks/published_mlperf_vllm.py: Krai's MLPerf Inference v5.0 / v5.1 open-division vLLM runs typed as their
LoadGen summaries and measurement READMEs state them, each scenario's engine arguments passed as stated, the
Offline figure as every sample once over the engines, the Server figure at the scheduled rate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_mlperf_vllm as krai  # noqa: E402
from benchmarks.published_lengths import MLPERF_LENGTHS, mlperf_input_lengths  # noqa: E402

BY_NAME = {system["system"]: system for system in krai.KRAI_SYSTEMS}


def test_the_systems_are_the_submissions():
    # open/Krai/results/<system>/.../mlperf_log_summary.txt of inference_results_v5.0 (cf354115) and v5.1 (a634ab77)
    assert list(BY_NAME) == ["xd670_h200_x8_vllm_064", "xd670_h200_x8_vllm_064_flashinfer", "xd670_h200_x8_vllm_073",
                             "xe9680_mi300x_x8_vllm_064", "xe9680_mi300x_x8_vllm_073", "xd670_h200_x8_vllm_092",
                             "xe9680_h100_x8_vllm_092", "xe9680_mi300x_x8_vllm_091", "xe9680_mi300x_x8_vllm_065"]
    assert [s["offline"]["tokens_per_s"] for s in krai.KRAI_SYSTEMS] == [
        15906.1, 21372.3, 16229.0, 18561.4, 17128.9, 30893.1, 22819.6, 18558.9, 27185.5]
    assert krai.KRAI_SYSTEMS[-1]["server"] is None  # an Offline-only submission
    servers = [s for s in krai.KRAI_SYSTEMS if s["server"]]
    assert [s["server"]["tokens_per_s"] for s in servers] == [
        13716.75, 19618.09, 14426.38, 13916.25, 12989.02, 26903.40, 21433.25, 15863.67]
    assert [s["server"]["rate"] for s in servers] == [48.02, 70.04, 50.03, 48.02, 45.02, 93.45, 75.48, 55.35]
    # the summaries' 99.00 percentile first-token latency and time to output token, in ns
    assert [round(s["server"]["p99_ttft_s"] * 1e9) for s in servers] == [
        709786558, 1384060585, 1860893791, 943870960, 792110466, 534348754, 522673060, 806522953]
    assert [round(s["server"]["p99_tpot_s"] * 1e9) for s in servers] == [
        138964966, 197063553, 143059840, 181515102, 182182442, 135300614, 133753662, 187457837]
    # Offline tokens over samples: each run's output tokens a sample, 293.7-301.1 (the assumed 294's check)
    assert [round(s["offline"]["tokens_per_s"] / s["offline"]["samples_per_s"], 1) for s in krai.KRAI_SYSTEMS] == [
        296.5, 296.7, 296.5, 301.1, 297.4, 296.0, 293.7, 296.3, 297.9]


def test_the_engine_arguments_are_the_readmes():
    # the Performance commands of open/Krai/measurements/<system>/<model>/{offline,server}/README.md
    stated = {name: tuple((s[k]["max_num_seqs"], s[k]["max_batched_tokens"], s[k]["gpu_memory_utilization"])
                          for k in ("offline", "server") if s[k]) for name, s in BY_NAME.items()}
    assert stated == {
        "xd670_h200_x8_vllm_064": ((1024, 8192, 0.95), (256, 16384, 0.95)),
        "xd670_h200_x8_vllm_064_flashinfer": ((1024, 8192, 0.95), (1024, 8192, 0.95)),
        "xd670_h200_x8_vllm_073": ((1024, 8192, 0.95), (256, 16384, 0.95)),
        "xe9680_mi300x_x8_vllm_064": ((2048, 65536, 0.95), (512, 65536, 0.99)),
        "xe9680_mi300x_x8_vllm_073": ((2048, 65536, 0.97), (512, 65536, 0.99)),
        "xd670_h200_x8_vllm_092": ((1232, 8121, 0.95), (858, 36498, 0.95)),
        "xe9680_h100_x8_vllm_092": ((3264, 14768, 0.90), (2476, 12140, 0.90)),
        "xe9680_mi300x_x8_vllm_091": ((1866, 17338, 0.96), (1866, 17338, 0.99)),
        "xe9680_mi300x_x8_vllm_065": ((1275, 38890, 0.96),)}
    assert [(s["tp"], s["replicas"], s["engine"]) for s in krai.KRAI_SYSTEMS] == [
        (1, 8, "vllm-v0")] * 5 + [(1, 8, "vllm"), (2, 4, "vllm"), (1, 8, "vllm"), (1, 8, "vllm-v0")]
    # AMD's v5.0 image on its Quark checkpoint: an FP8 cache (assumed) and the command's 12 scheduler steps
    quark = krai.krai_options(BY_NAME["xe9680_mi300x_x8_vllm_065"], "offline")
    assert (quark["kv_dtype"], quark["num_scheduler_steps"], quark["block_size"]) == ("fp8", 12, 32)
    assert krai.krai_options(BY_NAME["xe9680_mi300x_x8_vllm_091"], "offline") == {
        "scheduler": "vllm", "tp": 1, "max_num_seqs": 1866, "max_batched_tokens": 17338,
        "gpu_memory_utilization": 0.96, "block_size": 32, "dtype": "bf16", "weight_dtype": "fp8", "fp8_gemm": "w8a8",
        "kv_dtype": None, "host_time": "none"}
    assert krai.krai_options(BY_NAME["xe9680_mi300x_x8_vllm_091"], "server")["block_size"] == 16


def test_the_host_time_is_the_named_releases():
    # host_time.json's release rules: V0 from 0.6.0 runs the multi-step / asynchronous-output loop (vllm-v0.6.0);
    # V1 takes none. Every system names its release: 0.6.4, 0.6.5 and 0.7.3 on V0; 0.9.1 and 0.9.2 on V1.
    assert {name: krai.krai_options(system, scenario)["host_time"] for name, system in BY_NAME.items()
            for scenario in ("offline",)} == {
        "xd670_h200_x8_vllm_064": "vllm-v0.6.0", "xd670_h200_x8_vllm_064_flashinfer": "vllm-v0.6.0",
        "xd670_h200_x8_vllm_073": "vllm-v0.6.0", "xe9680_mi300x_x8_vllm_064": "vllm-v0.6.0",
        "xe9680_mi300x_x8_vllm_073": "vllm-v0.6.0", "xd670_h200_x8_vllm_092": "none",
        "xe9680_h100_x8_vllm_092": "none", "xe9680_mi300x_x8_vllm_091": "none",
        "xe9680_mi300x_x8_vllm_065": "vllm-v0.6.0"}
    assert set(krai.KRAI_RELEASES) == set(BY_NAME)


def test_the_attention_backend_is_the_versions_selectors():
    # vLLM's CUDA selector keeps FLASH_ATTN with a 16-bit cache (no kv_cache_dtype stated), block 16, head 128;
    # FlashAttention-2 before vLLM 0.7.0, FlashAttention-3 on Hopper from 0.7.0 (vllm-project/vllm pull request
    # 12093): 0.6.4 FA2, 0.7.3 and 0.9.2 FA3. The FlashInfer and ROCm systems pass none (serve's default).
    assert {name: krai.krai_options(system, "offline").get("attention_backend") for name, system in BY_NAME.items()} == {
        "xd670_h200_x8_vllm_064": "flash-attn2", "xd670_h200_x8_vllm_064_flashinfer": None,
        "xd670_h200_x8_vllm_073": "flash-attn3", "xe9680_mi300x_x8_vllm_064": None, "xe9680_mi300x_x8_vllm_073": None,
        "xd670_h200_x8_vllm_092": "flash-attn3", "xe9680_h100_x8_vllm_092": "flash-attn3",
        "xe9680_mi300x_x8_vllm_091": None, "xe9680_mi300x_x8_vllm_065": None}
    assert krai.krai_options(BY_NAME["xd670_h200_x8_vllm_073"], "server")["attention_backend"] == "flash-attn3"


def test_offline_is_every_sample_once_over_the_engines(monkeypatch):
    import costmodel.serving.api as api

    seen = {}
    real = api.run_replicas

    def run(requests, replica, step, replicas, *args, **kwargs):
        seen["count"], seen["replicas"] = len(requests), replicas
        seen["outputs"] = {r.output_tokens for r in requests}
        seen["arrivals"] = {r.arrival_s for r in requests}
        rows, steps, itl = real(requests, replica, step, replicas, *args, **kwargs)
        seen["span"] = max(r["finish_s"] for r in rows)
        return rows, steps, itl

    monkeypatch.setattr(api, "run_replicas", run)
    lengths = mlperf_input_lengths(MLPERF_LENGTHS, at_least=krai.KRAI_SAMPLES)
    ours = krai.krai_offline(BY_NAME["xe9680_h100_x8_vllm_092"], lengths, samples=400)
    assert (seen["count"], seen["replicas"], seen["outputs"], seen["arrivals"]) == (400, 4, {294}, {0.0})
    assert ours == pytest.approx(400 * 294 / seen["span"])


def test_server_passes_the_scheduled_rate(monkeypatch):
    import pandas as pd

    import costmodel.serving.api as api

    seen = {}

    class Run:
        requests = pd.DataFrame({"ttft_s": [2.0], "tpot_s": [3.0]})

        def summary(self):
            return {"throughput": {"output_tokens_per_s": 1.0}}

    def serve(model, hardware, **kwargs):
        seen.update(kwargs, model=model, hardware=hardware)
        return Run()

    monkeypatch.setattr(api, "serve", serve)
    assert krai.krai_server(BY_NAME["xd670_h200_x8_vllm_073"], "LENGTHS") == {
        "tokens_per_s": 1.0, "p99_ttft_s": 2.0, "p99_tpot_s": 3.0}
    assert (seen["model"], seen["hardware"], seen["rate"], seen["requests"], seen["replicas"]) == (
        "llama2-70b", "h200", 50.03, 9000, 8)
    assert (seen["prompt"], seen["output"], seen["seed"], seen["scheduler"], seen["max_num_seqs"]) == (
        "LENGTHS", "294", 0, "vllm-v0", 256)


def test_a_shortened_offline_figure_is_pinned():
    # The first 800 of the dataset's shuffled samples (the full 24,576 are what docs/serving.md quotes: MI300X vLLM
    # 0.9.1 24,766 tok/s, 1.33 of 18,558.9; H200 vLLM 0.9.2 25,999, 0.84 of 30,893.1): the same engines at a tenth of
    # the run's time, so a change to the options, the prompts or the step model shows here.
    lengths = mlperf_input_lengths(MLPERF_LENGTHS, at_least=krai.KRAI_SAMPLES)
    assert krai.krai_offline(BY_NAME["xe9680_mi300x_x8_vllm_091"], lengths, samples=800) == pytest.approx(
        22996.408, abs=0.001)  # 23,087.383 before vLLM V1's sampler (session 34)
    # (FlashAttention-3's figures, the version's Hopper kernel: 21,612.676 under FlashAttention-2's)
    assert krai.krai_offline(BY_NAME["xd670_h200_x8_vllm_092"], lengths, samples=800) == pytest.approx(
        21574.630, abs=0.001)  # 21,668.477 before vLLM V1's sampler (session 34); 21,580.576 before wt39_machete's W8A8
    # GEMM at 1-16 rows at vLLM's cutlass_scaled_mm's measured rate (kernel_facts.json w8a8_small_rows)


def test_a_server_run_prints_its_three_metric_rows():
    """server_rows (shared by the mlperf and mlperf-vllm tables): completed tokens/s, p99 TTFT and p99
    TPOT in ms, published beside ours, ours / published to two places; the v5.0 H200 v0.6.4 run's
    published figures beside round figures of ours."""
    server = BY_NAME["xd670_h200_x8_vllm_064"]["server"]
    ours = {"tokens_per_s": 12000.0, "p99_ttft_s": 0.5, "p99_tpot_s": 0.15}
    assert krai.server_rows("| x", server, ours) == [
        "| x | completed output tok/s | 13,717 | 12,000 | 0.87 |",  # 12,000 / 13,716.75 = 0.875 (0.8748)
        "| x | p99 TTFT (ms) | 710 | 500 | 0.70 |",  # 0.5 / 0.709786558 = 0.704
        "| x | p99 TPOT (ms) | 139.0 | 150.0 | 1.08 |"]  # 0.15 / 0.138964966 = 1.079
