"""Krai's MLPerf vLLM rows as the commands and LoadGen state them (session 28): each V0 command's
max_seq_len_to_capture passed to the engine (KRAI_CAPTURE_LENS), and the Server figures read the way LoadGen's
summary reads them (mlcommons/inference loadgen/ at b66003e1: results.cc takes a percentile as the sorted samples'
value at index floor(count x percentile); logging.cc's per-sample TPOT is (latency - TTFT) / (tokens - 1))."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_mlperf_vllm as krai  # noqa: E402
from benchmarks.published_lengths import MLPERF_LENGTHS, mlperf_input_lengths  # noqa: E402

BY_NAME = {system["system"]: system for system in krai.KRAI_SYSTEMS}


def test_each_v0_command_passes_its_stated_capture_length():
    # the Performance commands' max_seq_len_to_capture (open/Krai/measurements/<system>/<model>/{offline,server}/
    # README.md): 1,024 on every H200 command, 2,048 on the MI300X Offline commands and the 0.7.3 Server one; the V1
    # systems (0.9.x) state 1,024 but V1's piecewise graphs never go eager on a context (not passed); the MI300X 0.9.1
    # Offline and the Quark commands state none
    passed = {name: tuple(krai.krai_options(system, scenario).get("max_capture_len")
                          for scenario in ("offline", "server") if system[scenario])
              for name, system in BY_NAME.items()}
    assert passed == {
        "xd670_h200_x8_vllm_064": (1024, 1024), "xd670_h200_x8_vllm_064_flashinfer": (1024, 1024),
        "xd670_h200_x8_vllm_073": (1024, 1024), "xe9680_mi300x_x8_vllm_064": (2048, 1024),
        "xe9680_mi300x_x8_vllm_073": (2048, 2048), "xd670_h200_x8_vllm_092": (None, None),
        "xe9680_h100_x8_vllm_092": (None, None), "xe9680_mi300x_x8_vllm_091": (None, None),
        "xe9680_mi300x_x8_vllm_065": (None,)}
    stated_v1 = [key for key in krai.KRAI_CAPTURE_LENS if BY_NAME[key[0]]["engine"] == "vllm"]
    assert len(krai.KRAI_CAPTURE_LENS) == 15 and len(stated_v1) == 5


def test_the_stated_capture_length_slows_the_h200_server_steps(monkeypatch):
    """600 Poisson arrivals on the v5.0 H200 vLLM 0.6.4 engines (48.02 req/s, 256 sequences): with the command's
    1,024, a decode step holding a sequence past 1,024 keys runs eagerly (1.46% of the dataset's prompts get there
    within 294 outputs), so the p99 TPOT rises from 33.205 to 35.653 ms; the default (8,192) graphs every step.
    (Both with vLLM 0.6.4's host time a step, vllm-v0.6.0, since session 29: 30.080 and 32.701 ms without it; 37.646
    and 39.329 with the line's host time below 128 sequences, before issue 6913's batch-1 point.)"""
    lengths = mlperf_input_lengths(MLPERF_LENGTHS, at_least=krai.KRAI_SAMPLES)
    system = BY_NAME["xd670_h200_x8_vllm_064"]
    stated = krai.krai_server(system, lengths, requests=600)
    monkeypatch.setattr(krai, "KRAI_CAPTURE_LENS", {})
    default = krai.krai_server(system, lengths, requests=600)
    # with vLLM's sampler after the LM head since session 34 (35.653 and 33.205 ms before); the stated one 35.693 ms before
    # wt39_machete's W8A8 GEMM at 1-16 rows at vLLM's cutlass_scaled_mm's measured rate (kernel_facts.json w8a8_small_rows)
    assert stated["p99_tpot_s"] == pytest.approx(0.035732368, abs=1e-9)
    assert default["p99_tpot_s"] == pytest.approx(0.033435238, abs=1e-9)  # 33.264 ms before wt39_machete
    assert stated["tokens_per_s"] < default["tokens_per_s"]


def test_loadgens_percentile_is_the_sorted_samples_value_at_floor_count_times_p():
    # 1,000 samples 1..1000 (shuffled): index floor(1000 x 0.99) = 990 holds 991, where numpy's interpolation
    # gives 990.01; 9,000 samples (a Krai Server run here): index 8,910
    values = [(i * 7919) % 1000 + 1 for i in range(1000)]
    assert sorted(values) == list(range(1, 1001))
    assert krai.loadgen_percentile(values) == 991.0
    assert krai.loadgen_percentile(range(9000)) == 8910.0
    assert krai.loadgen_percentile([5.0, 1.0, 3.0], 0.5) == 3.0


def test_the_server_figures_are_read_from_the_request_frame():
    import pandas as pd

    class Run:  # 200 requests: TTFT 1..200 ms, TPOT 0.5..100 ms with one single-token request (no TPOT)
        requests = pd.DataFrame({"ttft_s": [i / 1000 for i in range(200, 0, -1)],
                                 "tpot_s": [i / 2000 for i in range(1, 200)] + [float("nan")]})

        def summary(self):
            return {"throughput": {"output_tokens_per_s": 1234.5}}

    # TTFT: index floor(200 x 0.99) = 198 -> 199 ms; TPOT over the 199 that have one: index 197 -> 198 / 2 ms
    assert krai.loadgen_server_figures(Run()) == {"tokens_per_s": 1234.5, "p99_ttft_s": 0.199, "p99_tpot_s": 0.099}


def test_the_published_runs_held_two_to_five_hundred_sequences_an_engine():
    # Little's law on each Server summary: completed samples/s x mean latency / engines (v5.0 H200 0.6.4:
    # 46.48 x 36.395205952 s / 8 = 211.5); the H100 run's four tp-2 engines held 564 each
    held = [round(krai.published_concurrency(system), 1) for system in krai.KRAI_SYSTEMS if system["server"]]
    assert held == [211.5, 419.7, 231.1, 275.1, 246.4, 366.6, 564.3, 290.6]
    # the summaries' "50.00 percentile time to output token (ns)", in the systems' order
    assert [krai.KRAI_SERVER_LOAD[s["system"]][2] for s in krai.KRAI_SYSTEMS if s["server"]] == [
        125250782, 179609432, 131454414, 162851673, 157890374, 112915517, 108496267, 149221905]


def test_our_step_at_the_published_load():
    """The v5.0 H200 vLLM 0.6.4 engine (FP8 W8A8, 256 sequences, the command's capture length): 211 sequences
    decoding at 222 + 147 keys take 38.114 ms of kernels a step, plus vLLM 0.6.x's host time (vllm-v0.6.0, one
    decision a step): H(211) = 6.321081 + 0.035118243 x 211 = 13.731 ms, of which the serial and decision parts
    (14,789 / 22,396) wait: 9.067 ms, so 47.181 ms; one 222-token prompt a prefill step (one sequence: H(1) =
    0.589 ms, host_time.json's small batch) at 48.02 / 8 req/s keeps the engine 22.8% of its time (25.1% with the
    line's 6.356 ms); so 61.14 ms a token where the run's median TPOT was 125.25 ms (2.05x; 1.99x before). The V1
    H200 engine (0.9.2, no host time) at its 367: 59.60 ms, 38.4%, 96.73 ms against 112.9 (1.17x)."""
    lengths = mlperf_input_lengths(MLPERF_LENGTHS, at_least=krai.KRAI_SAMPLES)
    mean_prompt = sum(v * w for v, w in zip(lengths.values, lengths.weights)) / sum(lengths.weights)
    assert mean_prompt == pytest.approx(222.33, abs=0.005)  # the dataset's stated mean (tok_input_length)
    v0 = krai.step_at_published_load(BY_NAME["xd670_h200_x8_vllm_064"], mean_prompt)
    assert v0["sequences"] == 211
    # + vLLM's sampler since session 34 (before: 0.047181, 0.228359, 0.061144; V1: 0.059603, 0.383805, 0.096727)
    assert (v0["decode_s"], v0["prefill_share"], v0["tpot_s"]) == pytest.approx((0.047293, 0.228422, 0.061294),
                                                                               abs=1e-6)
    v1 = krai.step_at_published_load(BY_NAME["xd670_h200_x8_vllm_092"], mean_prompt)
    assert v1["sequences"] == 367
    assert (v1["decode_s"], v1["prefill_share"], v1["tpot_s"]) == pytest.approx((0.060128, 0.383938, 0.097600),
                                                                               abs=1e-6)
