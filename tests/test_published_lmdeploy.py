"""benchmarks/published_lmdeploy.py and published_amd_vllm_throughput.py: the tables typed as their pages print
them, the engines' settings as their scripts and commands state them, each figure computed as its benchmark
script computes it, and the computed figures the docs quote pinned."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_amd_vllm_throughput as amd  # noqa: E402
from benchmarks import published_lmdeploy as lmd  # noqa: E402


def test_lmdeploy_rows_are_the_pages_tables():
    # InternLM/lmdeploy docs/en/benchmark/a100_fp16.md at ebe90bc94: 20 rows a model, concurrency 1/16/32/64 by
    # the five shapes of profile_generation.py's defaults (--prompt-tokens 1 128 128 2048 2048, --completion-tokens
    # 128 128 2048 128 2048)
    shapes = [(1, 128), (128, 128), (128, 2048), (2048, 128), (2048, 2048)]
    for table in lmd.LMDEPLOY:
        assert [(c, p, o) for c, p, o, _ in table["rows"]] == [(c, p, o) for c in (1, 16, 32, 64) for p, o in shapes]
    by_row = {(t["model"], c, p, o): f for t in lmd.LMDEPLOY for c, p, o, f in t["rows"]}
    assert by_row[("llama2-7b", 1, 128, 128)] == 102.21 and by_row[("llama2-7b", 64, 1, 128)] == 4154.81
    assert by_row[("llama2-13b", 64, 2048, 2048)] == 387.86 and by_row[("llama2-70b", 64, 2048, 2048)] == 930.46
    # benchmark/benchmark_{7b,13b,70b}.sh at ebe90bc94: tp, max_batch_size, cache_max_entry_count (blocks)
    assert [(t["tp"], t["max_batch_size"], t["blocks"]) for t in lmd.LMDEPLOY] == [(1, 128, 1000), (1, 128, 500),
                                                                                   (4, 256, 4000)]


def test_lmdeploy_engine_settings():
    # max_context_token_num 4 <= max_batch_size, so LlamaTritonModel.cc multiplies it by session_len (Llama2: 4,096)
    options = lmd.lmdeploy_options(lmd.LMDEPLOY[2])
    assert options == {"scheduler": "vllm-v0", "tp": 4, "max_num_seqs": 256, "max_batched_tokens": 16384,
                       "block_size": 128, "num_blocks": 4000, "dtype": "fp16", "cuda_graphs": "off",
                       "sampling": None,  # TurboMind's sampler is not vLLM's: none priced
                       "all_reduce": "nccl"}  # nor its all-reduce vLLM's custom one (wt40_customar)
    assert lmd.LMDEPLOY_ROUNDS == 6  # profile_generation.py --test-round's default


def test_lmdeploy_figure_is_a_closed_loop_of_output_tokens_over_the_span(monkeypatch):
    import costmodel.serving.api as api

    seen = {}
    real = api.run_replicas

    def run(requests, replica, step, replicas, *args, **kwargs):
        seen["shapes"] = {(r.prompt_tokens, r.output_tokens) for r in requests}
        seen["count"], seen["concurrency"] = len(requests), kwargs.get("concurrency")
        rows, steps, itl = real(requests, replica, step, replicas, *args, **kwargs)
        seen["span"] = max(r["finish_s"] for r in rows)
        return rows, steps, itl

    monkeypatch.setattr(api, "run_replicas", run)
    ours = lmd.lmdeploy_tokens_per_s(lmd.LMDEPLOY[0], 3, 128, 16, rounds=2)
    assert seen["shapes"] == {(128, 16)} and (seen["count"], seen["concurrency"]) == (6, 3)
    assert ours == pytest.approx(6 * 16 / seen["span"])


def test_lmdeploy_figures_the_docs_quote():
    # docs/serving.md's LMDeploy table: Llama 2 7B at concurrency 1, 128 / 128 (0.83 of 102.21) and 70B at 64,
    # 2,048 / 2,048 (1.05 of 930.46)
    assert lmd.lmdeploy_tokens_per_s(lmd.LMDEPLOY[0], 1, 128, 128) == pytest.approx(84.592, abs=0.001)
    assert lmd.lmdeploy_tokens_per_s(lmd.LMDEPLOY[2], 64, 2048, 2048) == pytest.approx(973.336, abs=0.001)


def test_amd_throughput_rows_and_command():
    # ROCm/vllm docs/dev-docker/README.md at 040de12d, "Throughput Measurements"
    assert [r[:4] for t in amd.AMD_VLLM_THROUGHPUT for r in t["rows"]] == [
        (128, 2048, 3200, 3200), (128, 4096, 1500, 1500), (500, 2000, 2000, 2000), (2048, 2048, 1500, 1500),
        (128, 2048, 1500, 1500), (128, 4096, 1500, 1500), (500, 2000, 2000, 2000), (2048, 2048, 500, 500)]
    assert [r[4] for t in amd.AMD_VLLM_THROUGHPUT for r in t["rows"]] == [
        13383.3, 11203.6, 10963.3, 7560.9, 3867.7, 3043.3, 2905.6, 2174.1]
    assert amd.amd_vllm_options(500) == {"scheduler": "vllm", "tp": 8, "max_num_seqs": 500,
                                         "max_batched_tokens": 131072, "dtype": "fp16", "weight_dtype": "fp8",
                                         "fp8_gemm": "w8a8", "kv_dtype": "fp8", "gpu_memory_utilization": 0.90}
    assert amd.AMD_VLLM_MAX_MODEL_LEN == 8192


def test_the_mi300x_fp8_gemms_run_at_amds_measured_maf():
    """ROCm Blogs, 'Measuring Max-Achievable FLOPs - Part 2', Table 1: MI300X FP8 1,273 TFLOP/s, MI325X 1,519, of
    the datasheets' dense 2,614.9."""
    from costmodel.hardware import load_hardware

    assert load_hardware("mi300x").matmul_efficiency["fp8"] == round(1273 / 2614.9, 3) == 0.487
    assert load_hardware("mi325x").matmul_efficiency["fp8"] == round(1519 / 2614.9, 3) == 0.581


def test_amd_throughput_figure_the_docs_quote():
    # docs/serving.md's AMD table: Llama 3.1 405B, 500 prompts of 2,048 + 2,048, total tokens/s (2.52 of 2,174.1, its
    # "before" column; 5,504.754 and 2.53 before vLLM V1's sampler, session 34), and output tokens/s as the table
    # reads it since session 37 (2,736.86, 1.26)
    assert amd.amd_vllm_tokens_per_s("llama3.1-405b", 2048, 2048, 500, 500) == pytest.approx(5473.717, abs=0.001)
    assert amd.amd_vllm_tokens_per_s("llama3.1-405b", 2048, 2048, 500, 500, tokens="output") == pytest.approx(
        2736.859, abs=0.001)


def test_trtllm_v017_rows_and_engine_settings():
    """TensorRT-LLM 0.17's perf overview (258c7540): the kept columns as the page prints them, and trtllm-bench's
    build heuristic with FP16's 2 bytes a weight and a KV value (BYTES_PER_ELEM[NO_QUANT])."""
    import costmodel
    from benchmarks import published_trtllm_v017 as v017
    from benchmarks import published_trtllm_bench as sp
    from costmodel.hardware import load_hardware

    llama_a100, mixtral_a100, mixtral_h100, llama70_a100, mixtral22_a100, mixtral22_h100 = v017.TRTLLM_V017
    assert [r[2] for r in llama_a100["rows"]] == [6627.27, 5255.99, 3453.79, 4276.58, 3786.83, 799.61, 2424.16]
    assert [r[2] for r in mixtral_a100["rows"]] == [5541.47, 4169.78, 2608.05, 3446.37, 3154.52, 649, 2056.58]
    assert [r[2] for r in mixtral_h100["rows"]] == [27451.13, 22830.08, 14237.01, 17036.04, 15770.89, 3333.68,
                                                    10685.85]
    assert [r[2] for r in llama70_a100["rows"]] == [2733.48, 2811.27, 1976.49, 2275.79, 1921.77, 325.15, 1393.64]
    assert [r[2] for r in mixtral22_a100["rows"]] == [6381.95, 6685.99, 4789.13, 5648.46, 4549.46, 761.56, 3521.98]
    assert [r[2] for r in mixtral22_h100["rows"]] == [21876.08, 25150.03, 18387.4, 21421.86, 16573.24, 2794.97,
                                                      12244.93]
    assert [(t["tp"], t["bytes"]) for t in v017.TRTLLM_V017] == [(1, 2), (2, 2), (2, 1), (4, 2), (8, 2), (8, 1)]
    assert all(v017.TRTLLM_V017_REQUESTS[r[:2]] for t in v017.TRTLLM_V017 for r in t["rows"])
    # Llama 3.1 8B on one A100 80GB at 2,048 + 2,048: (80 GiB - 8,030,261,248 x 2 B) x 0.95 over 2 x 32 x 8 x 128
    # x 2 B a token x 4,096 tokens = 123.58 requests -> 128 (32 x ceil(123.58 / 32)); tokens 2 x 123.58 -> 2,048,
    # raised to 2,048 + 128. In one byte: 275.58 requests -> 384 (128 x ceil(275.58 / 128)), 2,048 + 384
    cfg, a100 = costmodel.load_model("llama3.1-8b"), load_hardware("a100-80gb")
    assert sp.trtllm_bench_settings(cfg, a100, 1, 2048, 2048, value_bytes=2) == (128, 2176)
    assert sp.trtllm_bench_settings(cfg, a100, 1, 2048, 2048, value_bytes=1) == (384, 2432)
    options = sp.trtllm_v017_options(mixtral_h100, 2048, 2048)
    assert (options["dtype"], options["weight_dtype"], options["kv_dtype"], options["tp"]) == ("fp16", "fp8", "fp8", 2)
    assert sp.trtllm_v017_options(llama_a100, 128, 128)["dtype"] == "fp16"


def test_trtllm_v017_figure_the_docs_quote():
    # docs/serving.md's v0.17 table: Llama 3.1 8B, A100 FP16, 1,500 requests of 2,048 + 2,048 (1.02 of 2,424.16;
    # 2,454.342 before TensorRT-LLM's one QKV GEMM reached serve's steps, session 32)
    from benchmarks import published_trtllm_v017 as v017
    from benchmarks import published_trtllm_bench as sp

    assert sp.trtllm_v017_throughput(v017.TRTLLM_V017[0], 2048, 2048) == pytest.approx(2475.000, abs=0.001)


def test_trtllm_online_rows_and_figures():
    """TensorRT-LLM 0.14's online-serving table (perf-overview.md at 258c7540): the rows as printed, each one's
    output tokens/s its req/s x output length to the page's rounding, and a figure the docs quote."""
    import math

    from benchmarks import published_trtllm_online as online

    llama8, llama70 = online.TRTLLM_ONLINE
    assert [(t["model"], t["tp"], len(t["rows"])) for t in online.TRTLLM_ONLINE] == [("llama3.1-8b", 1, 18),
                                                                                  ("llama3.1-70b", 4, 18)]
    assert llama8["rows"][5] == (467, 256, math.inf, 37, 3335, 39, 26614, 9420)
    assert llama70["rows"][10] == (467, 16, 32, 28, 1197, 482, 13655, 452)
    # the page's output tokens/s is its total tokens/s x output / (input + output), within 1.1% (both rounded to a
    # whole token/s: the 70B's 28 at 2 QPS, 467 / 16, is 844 x 16 / 483 = 27.96)
    for table in online.TRTLLM_ONLINE:
        for prompt, output, _qps, _rps, _ttft, _itl, total, out in table["rows"]:
            assert total * output / (prompt + output) == pytest.approx(out, rel=0.011), (table["model"], prompt, total)
    assert online.trtllm_online_options(llama70) == {"scheduler": "trtllm", "tp": 4, "dtype": "bf16",
                                                     "gpu_memory_utilization": 0.90}
    # docs/serving.md's online table: 70B, 467 / 256 at 2 QPS: mean TTFT 60.2 ms (0.97 of 62), ITL 20.5 (0.98 of 21)
    # (60.9 and 21.1 before TensorRT-LLM's one QKV GEMM reached serve's steps, session 32)
    ours = online.trtllm_online_run(llama70, 467, 256, 2)
    assert (round(ours["ttft_ms"], 1), round(ours["itl_ms"], 1)) == (60.2, 20.5)
