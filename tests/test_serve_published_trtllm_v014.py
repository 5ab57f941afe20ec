"""benchmarks/published_trtllm_v014.py: TensorRT-LLM 0.14's trtllm-bench throughput rows of LLaMA v3.1 8B (TP 1) and 70B
(TP 4) on A100-PCIE-80GB (FP16) and L40S (FP8) as typed, the engine settings they run under, and the first figures ours
computed (session 43, wt43_unseens, right after commit 2592f1ec typed the rows): kept whatever their error (the 70B on
the A100 PCIe 1.47-1.91x: validate/FINDINGS.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.serving_first import assert_docs_row, assert_figures_now, first_summary  # noqa: E402
from benchmarks import published_trtllm_v014 as script  # noqa: E402

# (row, metric, published, ours) as `python benchmarks/serve_published.py trtllm-v014` first fed them (ours to 4 decimals)
FIRST = [
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 128/128', 'tok/s', 5338.0166, 6885.0291),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 128/2048', 'tok/s', 4250.6391, 5261.5612),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 128/4096', 'tok/s', 2568.5398, 3463.5704),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 500/2000', 'tok/s', 3374.7133, 4119.1444),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 1000/1000', 'tok/s', 3165.3542, 3670.9578),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 2048/128', 'tok/s', 611.8446, 791.5926),
    ('llama3.1-8b A100-PCIE-80GB TP1 (FP16) 2048/2048', 'tok/s', 2011.1215, 2357.5349),
    ('llama3.1-8b L40S TP1 (FP8) 128/128', 'tok/s', 8639.7933, 8520.1141),
    ('llama3.1-8b L40S TP1 (FP8) 128/2048', 'tok/s', 5101.6652, 5166.0748),
    ('llama3.1-8b L40S TP1 (FP8) 128/4096', 'tok/s', 2774.5363, 3093.6761),
    ('llama3.1-8b L40S TP1 (FP8) 500/2000', 'tok/s', 4065.3921, 4306.7419),
    ('llama3.1-8b L40S TP1 (FP8) 1000/1000', 'tok/s', 3726.7552, 3812.9195),
    ('llama3.1-8b L40S TP1 (FP8) 2048/128', 'tok/s', 986.9134, 1000.4852),
    ('llama3.1-8b L40S TP1 (FP8) 2048/2048', 'tok/s', 2018.303, 2220.7658),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/128', 'tok/s', 1272.6755, 2190.0439),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/2048', 'tok/s', 1435.236, 2744.68),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/4096', 'tok/s', 1212.5416, 1782.3416),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 500/2000', 'tok/s', 1176.418, 2165.8451),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 1000/1000', 'tok/s', 989.4082, 1556.9001),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 2048/128', 'tok/s', 150.6795, 258.0997),
    ('llama3.1-70b A100-PCIE-80GB TP4 (FP16) 2048/2048', 'tok/s', 823.4777, 1230.5244),
    ('llama3.1-70b L40S TP4 (FP8) 128/128', 'tok/s', 1438.0446, 1806.0683),
    ('llama3.1-70b L40S TP4 (FP8) 128/2048', 'tok/s', 1763.522, 2349.0339),
    ('llama3.1-70b L40S TP4 (FP8) 128/4096', 'tok/s', 1280.3778, 1757.7936),
    ('llama3.1-70b L40S TP4 (FP8) 500/2000', 'tok/s', 1470.0826, 1815.3322),
    ('llama3.1-70b L40S TP4 (FP8) 1000/1000', 'tok/s', 1161.4814, 1478.1235),
    ('llama3.1-70b L40S TP4 (FP8) 2048/128', 'tok/s', 169.0386, 212.5806),
    ('llama3.1-70b L40S TP4 (FP8) 2048/2048', 'tok/s', 876.2254, 1143.5877),
]


def test_the_rows_are_the_pages():
    """The 0.14.0 page's A100-PCIE-80GB (FP16) and L40S (FP8) columns of LLaMA v3.1 8B at TP 1 and 70B at TP 4, the
    seven shapes trtllm-v017 keeps, at the page's $num_requests."""
    assert [(t["model"], t["hardware"], t["tp"], t["bytes"], len(t["rows"])) for t in script.TRTLLM_V014] == [
        ("llama3.1-8b", "a100-pcie", 1, 2, 7), ("llama3.1-8b", "l40s", 1, 1, 7),
        ("llama3.1-70b", "a100-pcie", 4, 2, 7), ("llama3.1-70b", "l40s", 4, 1, 7)]
    assert script.TRTLLM_V014[0]["rows"][0] == (128, 128, 5338.0166)
    assert script.TRTLLM_V014[2]["rows"][4] == (1000, 1000, 989.4082)
    assert script.TRTLLM_V014[3]["rows"][-1] == (2048, 2048, 876.2254)
    assert script.TRTLLM_V014_REQUESTS == {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (500, 2000): 3000,
                                           (1000, 1000): 3000, (2048, 128): 3000, (2048, 2048): 1500}


def test_the_engine_settings_by_trtllm_bench_heuristic():
    """trtllm-bench's heuristic (published_trtllm_bench.trtllm_bench_settings) at 0.95 of memory: the 8B in FP16 on the
    A100 PCIe max_batch_size 2,048 / max_num_tokens 4,096 at 128 / 128 and 128 / 2,176 at 2048 / 2048 (raised to
    prompt + batch); the 70B in FP8 at TP 4 on L40S 3,072 / 6,144 at 128 / 128 and 512 / 2,048 at 1000 / 1000."""
    from benchmarks.published_trtllm_bench import trtllm_v017_options

    a100_8b, l40s_70b = script.TRTLLM_V014[0], script.TRTLLM_V014[3]
    settings = [(o["max_num_seqs"], o["max_batched_tokens"]) for o in (
        trtllm_v017_options(a100_8b, 128, 128), trtllm_v017_options(a100_8b, 2048, 2048),
        trtllm_v017_options(l40s_70b, 128, 128), trtllm_v017_options(l40s_70b, 1000, 1000))]
    assert settings == [(2048, 4096), (128, 2176), (3072, 6144), (512, 2048)]
    fp16, fp8 = trtllm_v017_options(a100_8b, 128, 128), trtllm_v017_options(l40s_70b, 128, 128)
    assert (fp16["scheduler"], fp16["dtype"], "weight_dtype" in fp16, fp16["gpu_memory_utilization"]) == \
        ("trtllm", "fp16", False, 0.95)
    assert (fp8["dtype"], fp8["weight_dtype"], fp8["kv_dtype"], fp8["tp"]) == ("fp16", "fp8", "fp8", 4)


def test_the_first_summary():
    """28 comparisons, median 26.5%, 18 within 0.75-1.33x, 0.99-1.91: every row but one over; the 8B on L40S 0.99-1.12,
    on the A100 PCIe 1.16-1.35; the 70B at TP 4 on L40S 1.24-1.37 and on the A100 PCIe 1.47-1.91."""
    fed, summary = first_summary("trtllm-v014", FIRST)
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (28, 18)
    assert summary["median_error"] == pytest.approx(0.265, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.99, 1.91)
    ranges = {"llama3.1-8b L40S": (0.98, 1.12), "llama3.1-8b A100": (1.15, 1.35), "llama3.1-70b L40S": (1.23, 1.38),
              "llama3.1-70b A100": (1.46, 1.92)}
    for key, (low, high) in ranges.items():
        ratios = [c.ratio for c in fed if c.row.startswith(key)]
        assert len(ratios) == 7 and all(low < r < high for r in ratios), key




# Restated (wt44_denseout, session 44): the 70B at TP 4 on the A100 PCIe after a100-pcie.json's gpus_per_host 4 (NCCL's
# one ring through the host's bridged pairs, the whole ring payload at the PCIe link, where two "nodes" of a pair had
# put a third of its bytes on PCIe): 1.47-1.91x -> 1.22-1.55x; the other 21 rows as first computed
NOW = {'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/128': 1588.136, 'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/2048': 2219.586,
       'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 128/4096': 1529.3258, 'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 500/2000': 1743.7304,
       'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 1000/1000': 1202.8345, 'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 2048/128': 187.3191,
       'llama3.1-70b A100-PCIE-80GB TP4 (FP16) 2048/2048': 1015.795}


@pytest.mark.slow
def test_the_figures_now():
    """The table run as the command runs it (~1 min): every figure as first computed, to 0.05%, but NOW's."""
    assert_figures_now("trtllm-v014", [row[:3] + (NOW.get(row[0], row[3]),) for row in FIRST], abs_tol=1e-4)


def test_the_summary_now():
    """28 comparisons, median 24.1% (26.5% first), 23 within 0.75-1.33x (18 first), 0.99-1.55 (1.91 first)."""
    fed, summary = first_summary("trtllm-v014", [row[:3] + (NOW.get(row[0], row[3]),) for row in FIRST])
    assert (summary["comparisons"], summary["within_0.75_1.33"]) == (28, 23)
    assert summary["median_error"] == pytest.approx(0.2405, abs=5e-4)
    assert (round(summary["lowest"], 2), round(summary["highest"], 2)) == (0.99, 1.55)


def test_docs_record_the_summary_now():
    """docs/serving.md's row is the table as it runs now (its first figures stay in test_the_first_summary)."""
    assert_docs_row("trtllm-v014", first_summary("trtllm-v014", [row[:3] + (NOW.get(row[0], row[3]),) for row in FIRST])[1])
