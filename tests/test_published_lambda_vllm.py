"""benchmarks/published_lambda_vllm.py: Lambda's vLLM v0.5.4 / v0.6.0 tables typed as benchmark_v0.md prints
them, the engine flags its benchmark.py passes, and the three figures computed as vLLM's benchmark_serving.py
computes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_lambda_vllm as lv  # noqa: E402
from benchmarks.published_lengths import sharegpt_lengths  # noqa: E402


def test_tables_are_the_reports():
    # LambdaLabsML/vllm-benchmark benchmark_v0.md at 0e8fc5d0, "vLLM v0.5.4 v.s. v0.6.0": per table the rows
    # v0.5.4 / v0.6.0 step 1 / v0.6.0 step 10, each (output tok/s, median TPOT ms, median ITL ms)
    assert [(t["model"], t["tp"], t["prompts"]) for t in lv.LAMBDA_VLLM] == [
        ("llama3.1-8b", 1, 5000), ("llama3.1-70b", 4, 5000), ("llama3.1-405b", 8, 1280)]
    assert [t["rows"] for t in lv.LAMBDA_VLLM] == [
        [(3032.04, 64.06, 48.28), (3958.40, 196.24, 179.17), (8088.35, 25.57, 243.76)],
        [(1491.93, 125.78, 74.22), (2291.0, 102.99, 63.54), (3542.88, 61.10, 574.07)],
        [(1220.26, 182.72, 144.06), (1331.25, 163.52, 114.42), (1714.07, 112.20, 1036.33)]]
    assert lv.LAMBDA_VLLM_ENGINES == (("v0.5.4", True, None), ("v0.6.0", False, 1), ("v0.6.0", False, 10))
    assert sum(3 * len(t["rows"]) for t in lv.LAMBDA_VLLM) == 27


def test_options_are_the_scripts_flags():
    # benchmark.py at 680cc0a3: --max-model-len 2048 --gpu-memory-utilization 0.95 --max-num-seqs 256; at steps > 0
    # --num-scheduler-steps N --enable-chunked-prefill False (v0: budget max(2048, 2048)); v0.5.4 chunked: 512
    eight, _, big = lv.LAMBDA_VLLM
    step10 = lv.lambda_vllm_options(eight, lv.LAMBDA_VLLM_ENGINES[2])
    assert step10 == {"scheduler": "vllm-v0", "max_batched_tokens": 2048, "num_scheduler_steps": 10, "tp": 1,
                      "max_num_seqs": 256, "gpu_memory_utilization": 0.95, "dtype": "bf16",
                      "host_time": "vllm-v0.6.0", "sampling": "greedy"}  # benchmark_serving's temperature 0
    chunked = lv.lambda_vllm_options(big, lv.LAMBDA_VLLM_ENGINES[0])
    assert chunked == {"scheduler": "vllm", "sampler": "vllm-v0", "max_batched_tokens": 512, "prefix_caching": False, "cuda_graphs": "off",
                       "tp": 8, "max_num_seqs": 256, "gpu_memory_utilization": 0.95, "dtype": "bf16",
                       "weight_dtype": "fp8", "fp8_gemm": "w8a8", "host_time": "vllm-v0.5.4", "sampling": "greedy"}


def test_chunk_gaps_merge_a_windows_tokens():
    # a prefill's token at 0, a 3-step window's at 0.3, another's at 0.6: two streamed gaps of 0.3 s
    assert lv.chunk_gaps([0.0, 0.3, 0.3, 0.3, 0.6, 0.6, 0.6]) == pytest.approx([0.3, 0.3])
    assert lv.chunk_gaps([1.0]) == []


def test_figures_match_the_request_rows():
    # the output rate and median TPOT from the engine's timeline equal what run_replicas' request rows give
    import numpy as np

    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas
    from costmodel.serving.replica import build_replica
    from costmodel.serving.workload import Request

    pairs = sharegpt_lengths(lv.LAMBDA_VLLM_LENGTHS, at_least=5000)
    table, engine = lv.LAMBDA_VLLM[0], lv.LAMBDA_VLLM_ENGINES[1]
    ours = lv.lambda_vllm_figures(table, engine, pairs, prompts=120)
    replica, step, _ = build_replica(costmodel.load_model("llama3.1-8b"), load_hardware("h100-sxm"),
                                     **lv.lambda_vllm_options(table, engine))
    rows, _, _ = run_replicas([Request(i, 0.0, p, o) for i, (p, o) in enumerate(pairs[:120])], replica, step, 1,
                              2048, record=False)
    assert ours["output_tokens_per_s"] == pytest.approx(sum(r["output_tokens"] for r in rows)
                                                        / max(r["finish_s"] for r in rows))
    assert ours["tpot_ms"] == pytest.approx(1e3 * np.median([r["tpot_s"] for r in rows if r["output_tokens"] > 1]))


def test_shortened_figures_pinned():
    # the first 300 ShareGPT pairs at once on one H100 (the 8B's three engines): the same steps at 1 and 10 scheduler
    # steps run the same tokens, and 10 steps stream a window's 10 tokens as one chunk (ITL ~ 10 x TPOT)
    pairs = sharegpt_lengths(lv.LAMBDA_VLLM_LENGTHS, at_least=5000)
    figures = [lv.lambda_vllm_figures(lv.LAMBDA_VLLM[0], engine, pairs, prompts=300)
               for engine in lv.LAMBDA_VLLM_ENGINES]
    # (with each version's host time a step, host_time.json: before it, (6743.1823, 13.791, 11.2217), (8282.0694,
    # 13.9453, 9.084), (8282.528, 14.0504, 91.1924); with the line at every batch, before issue 6913's batch-1 point,
    # (3734.9009, 24.5622, 22.4206), (5065.3897, 23.0814, 16.7451), (7268.4034, 16.1588, 106.1194): the run's steps
    # of fewer than 128 sequences now take less host time; before V0's greedy sampler, session 34, (4317.2953, 23.7577,
    # 22.1337), (5779.4236, 22.4636, 16.7451), (7614.2099, 15.7345, 106.1194))
    expected = [(4277.7133, 24.0433, 22.4070), (5708.8784, 22.8237, 17.0566), (7489.8787, 16.1726, 109.1942)]
    for ours, (rate, tpot, itl) in zip(figures, expected):
        assert (ours["output_tokens_per_s"], ours["tpot_ms"], ours["itl_ms"]) == pytest.approx((rate, tpot, itl),
                                                                                                rel=1e-5)


def test_ten_step_rows_as_docs_quote_them():
    # docs/serving.md's Lambda table, v0.6.0 at 10 scheduler steps with its host time: the 8B's 5,000 prompts (1.36
    # of 8,088.35 tok/s, TPOT 0.83 of 25.57 ms, ITL 0.83 of 243.76 ms; without host time 1.50, 0.74, 0.75) and the
    # 405B's 1,280 (1.08, 0.98, 0.94; without 1.10, 0.96, 0.92)
    pairs = sharegpt_lengths(lv.LAMBDA_VLLM_LENGTHS, at_least=5000)
    engine = lv.LAMBDA_VLLM_ENGINES[2]
    # (issue 6913's batch-1 point moved them from (10577.3341, 21.8572, 210.2581) and (1831.5951, 110.736, 983.7513);
    # V0's greedy sampler, session 34, from (10995.8007, 21.1594, 202.8712) and (1848.6989, 110.013, 976.3144): the
    # ratios from 1.36, 0.83, 0.83 and 1.08, 0.98, 0.94; the 405B FP8 from (1838.8005, 110.7272, 983.3109), 1.07, before
    # wt39_machete's W8A8 GEMM at 1-16 rows at vLLM's cutlass_scaled_mm's measured rate, kernel_facts.json w8a8_small_rows;
    # the 405B's tp-8 all-reduces from (1815.5090, 110.7297, 983.3109), 1.06, 0.99, 0.95, before wt40_customar's vLLM
    # custom all-reduce: 9-12 us a decode call instead of NCCL's ~40 us)
    for table, expected in ((lv.LAMBDA_VLLM[0], (10745.9925, 21.7033, 208.1609)),
                            (lv.LAMBDA_VLLM[2], (1977.0365, 105.4682, 928.4670))):
        ours = lv.lambda_vllm_figures(table, engine, pairs)
        assert (ours["output_tokens_per_s"], ours["tpot_ms"], ours["itl_ms"]) == pytest.approx(expected, rel=1e-5)
        ratios = [round(ours[metric] / published, 2) for (metric, _), published in zip(lv.LAMBDA_VLLM_METRICS,
                                                                                        table["rows"][2])]
        assert ratios == ([1.33, 0.85, 0.85] if table["tp"] == 1 else [1.15, 0.94, 0.9])
