"""Published engine measurements beside the serving simulator's figures for the same setup.

TensorRT-LLM's static-batch tables (benchmarks/published_trtllm_static.py): its A100 FP16 figures of v0.6.1
and its H200 launch note's FP8 ones. Printed as Markdown tables (docs/serving.md holds a copy).

vLLM's v0.6.0 performance post (vllm-project/vllm-project.github.io at commit c3a01c4,
_posts/2024-09-05-perf-update.md, https://blog.vllm.ai/2024/09/05/perf-update.html): vLLM v0.6.0
with --num-scheduler-steps 10 and otherwise default settings, Llama 3 8B on 1 H100 and Llama 3
70B on 4 H100s, 500 prompts sent at once ("QPS inf"), throughput in requests per second, for three
datasets: ShareGPT ("Average input tokens: 202, average output tokens: 179"), decode-heavy
("roughly 462 input tokens and 256 output tokens on average") and prefill-heavy (462 and 16).
The figures are bars without printed values (assets/figures/perf-v060/overall_throughput.png):
each is read off the image as the top pixel row of vLLM's bar against the y axis's gridlines
(a straight-line fit of the gridlines' rows to their labels; one pixel is 0.05-0.22 req/s), the
rows kept below (VLLM_CHART). Ours: `serve` with vLLM v0's scheduler (vllm-v0: v0.6.0 ran
without chunked prefill for a context of 8,192, prefills first), v0.6.0's defaults (256
sequences, max(max_model_len, 2048) = 8,192 batched tokens, 90% of memory, block 16, bf16) on
h100-sxm (the post says "H100"), the 500 requests at time 0 with each dataset's mean lengths,
fixed (the post gives means only); and ShareGPT once more with the 500 sampled requests' own
lengths, prompt and output paired (sharegpt_vllm_lengths.json beside this script: the first 500
rows of JonnyKong/vidur's data/processed_traces/sharegpt_v3_filtered.csv at commit 941a76c, vLLM's
sample_sharegpt_requests run with the Llama 3.1 tokenizer; their prompts average the post's 202, their
outputs 214, the completions' lengths the benchmark passes as max_tokens, against the post's 179 generated). The post's multi-step scheduling (--num-scheduler-steps 10) is ours too: decode
windows of 10 steps per scheduling decision (costmodel/serving/vllm_v0.py, VLLMV0Scheduler);
the CPU time it spreads over the 10 steps is not modelled, nor is any CPU time.

Sarathi-Serve's Table 2 (benchmarks/published_sarathi.py), NVIDIA NIM's benchmarking guide
(benchmarks/published_nim.py) and torchao's vLLM 0.13 throughput runs of Llama 3.1 8B on an H100 and a B200
(benchmarks/published_torchao_vllm.py), and since session 26 LMDeploy's TurboMind static-inference tables on an
A100 (benchmarks/published_lmdeploy.py) and AMD's vLLM throughput table on 8 MI300X
(benchmarks/published_amd_vllm_throughput.py): each source's rows, setup and runner in a module of its own; as are
MLPerf Inference Llama-2-70B's closed-division Offline and Server runs (benchmarks/published_mlperf.py) and
TensorRT-LLM's trtllm-bench throughput tables of its v1.0 performance overview (benchmarks/published_trtllm_bench.py); and
TensorRT-LLM 0.17's perf overview (A100 FP16 Llama 3.1 8B and Mixtral 8x7B, H100 FP8 Mixtral; rows and choices in
benchmarks/published_trtllm_v017.py, run by published_trtllm_bench.trtllm_v017_options with the v1.0 rows' heuristic), and the same
page's online-serving table of 0.14 (benchmarks/published_trtllm_online.py); since session 27 Krai's MLPerf v5.0 /
v5.1 open-division vLLM runs on H200, H100 and MI300X (benchmarks/published_mlperf_vllm.py, selector mlperf-vllm);
since session 28 Lambda's vLLM v0.5.4 / v0.6.0 ShareGPT runs on H100 (benchmarks/published_lambda_vllm.py, lambda-vllm);
since session 29 Qwen2.5's vLLM 0.6.3 speed benchmark on A100, one request at a time (benchmarks/published_qwen_vllm.py,
qwen-vllm); since session 37 Qwen3's SGLang 0.4.6 speed benchmark on H20, one request at a time
(benchmarks/published_qwen3_sglang.py, qwen3-sglang); since session 38 SGLang v0.3.0's own rows of the same
README as sglang-vllm's (benchmarks/published_sglang_v030.py, sglang-v030) and LMDeploy v0.1.0a1's request
throughput table on A100 (benchmarks/published_lmdeploy_rpm.py, lmdeploy-rpm); since session 39 LMDeploy v0.2.0's
request throughput table and the v0.3-era KV-quantization RPS table (benchmarks/published_lmdeploy_v02.py,
lmdeploy-v02) and vLLM's CI throughput tests on H200 and A100 (benchmarks/published_vllm_ci.py, vllm-ci); since
session 40 TensorRT-LLM 0.20's trtllm-bench rows of Llama 3.3 70B FP8 at H200 TP4, H100 TP4 and H100 TP1
(benchmarks/published_trtllm_v020.py, trtllm-v020) and TensorRT-LLM 0.9.0's static-batch H100 FP8 rows of Llama 2 7B
and 70B (benchmarks/published_trtllm_v090.py, trtllm-v090); since session 41 DataCrunch's SGLang v0.4 bench_serving runs of
Llama 3.3 70B (tp 4) and Llama 3.1 405B (tp 8) on H200s (benchmarks/published_sglang_h200.py, sglang-h200); since session 42
TensorRT-LLM 0.9.0's static-batch L40S FP8 rows (Mistral 7B, Llama 2 7B and 70B, Falcon 180B) and A100 FP16 Mixtral 8x7B
rows (benchmarks/published_trtllm_v090_l40s.py, trtllm-v090-l40s); since session 43 TensorRT-LLM 0.14's trtllm-bench
throughput rows of LLaMA v3.1 8B (TP 1) and 70B (TP 4) on A100-PCIE-80GB (FP16) and L40S (FP8)
(benchmarks/published_trtllm_v014.py, trtllm-v014).

vLLM v0.6.0 under SGLang's benchmark (sgl-project/sglang benchmark/benchmark_vllm_060/README.md at commit 120affb):
Llama 3.1 8B on one A100 80G and 70B on four H100 80G, ShareGPT through sglang.bench_serving: offline (5,000 at
once) throughputs and online (4 and 8 req/s) medians. Ours: vllm_options with max_model_len 4,096's budget, the
first 5,000 pairs of vLLM's ShareGPT sample (sharegpt_vllm_lengths_5000.json beside this script), Poisson arrivals.

    python benchmarks/serve_published.py [trtllm-static | sarathi | nim | trtllm-bench | sglang-vllm [SHAREGPT.json] | vllm [SHAREGPT.json]
                                          | mlperf [LENGTHS.json] | torchao-vllm | lmdeploy
                                          | amd-vllm | trtllm-v017
                                          | trtllm-online | mlperf-vllm [LENGTHS.json]
                                          | lambda-vllm [SHAREGPT.json] | qwen-vllm | qwen3-sglang
                                          | sglang-v030 [SHAREGPT.json] | lmdeploy-rpm
                                          | lmdeploy-v02 | vllm-ci | trtllm-v020 | trtllm-v090 | sglang-h200
                                          | trtllm-v090-l40s | trtllm-v014
                                          | summary [TABLE ...]]

`summary` runs the named tables (every one if none) with their tables discarded and prints what they fed
reports/serving_published.py: per source the comparisons, the median of |ours / published - 1|, how many within
0.75-1.33x and the range, then over all of them, and the ten furthest from 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.config import ConfigError  # noqa: E402
from costmodel.serving.replica import build_replica  # noqa: E402
from costmodel.serving.host_time import host_time_for_release  # noqa: E402
from costmodel.serving.workload import Request  # noqa: E402
from benchmarks.published_lengths import VLLM_SHAREGPT, sharegpt_lengths  # noqa: E402
from benchmarks.published_amd_vllm_throughput import print_amd_vllm  # noqa: E402
from benchmarks.published_lambda_vllm import print_lambda_vllm  # noqa: E402
from benchmarks.published_lmdeploy import print_lmdeploy  # noqa: E402
from benchmarks.published_lmdeploy_rpm import print_lmdeploy_rpm  # noqa: E402
from benchmarks.published_lmdeploy_v02 import print_lmdeploy_v02  # noqa: E402
from benchmarks.published_mlperf import print_mlperf, span_at_once  # noqa: E402
from benchmarks.published_mlperf_vllm import print_mlperf_vllm  # noqa: E402
from benchmarks.published_nim import print_nim  # noqa: E402
from benchmarks.published_qwen_vllm import print_qwen_vllm  # noqa: E402
from benchmarks.published_qwen3_sglang import print_qwen3_sglang  # noqa: E402
from benchmarks.published_sarathi import print_sarathi  # noqa: E402
from benchmarks.published_sglang_h200 import print_sglang_h200  # noqa: E402
from benchmarks.published_sglang_v030 import print_sglang_v030  # noqa: E402
from benchmarks.published_torchao_vllm import print_torchao_vllm  # noqa: E402
from benchmarks.published_vllm_ci import print_vllm_ci  # noqa: E402
from benchmarks.published_trtllm_v020 import print_trtllm_v020  # noqa: E402
from benchmarks.published_trtllm_v090 import print_trtllm_v090  # noqa: E402
from benchmarks.published_trtllm_v090_l40s import print_trtllm_v090_l40s  # noqa: E402
from benchmarks.published_trtllm_v014 import print_trtllm_v014  # noqa: E402
from benchmarks.published_trtllm_online import print_trtllm_online  # noqa: E402
from benchmarks.published_trtllm_static import print_static  # noqa: E402
from benchmarks.published_trtllm_bench import print_trtllm_bench, print_trtllm_v017  # noqa: E402
from reports.serving_published import collect, record, render, summarise, worst  # noqa: E402

VLLM_SOURCE = ("vllm-project/vllm-project.github.io (commit c3a01c4), _posts/2024-09-05-perf-update.md; bars read "
               "from assets/figures/perf-v060/overall_throughput.png")
VLLM_REQUESTS = 500  # "500 prompts randomly sampled", all sent at once ("QPS inf")
# (prompt, output) tokens: the post's averages per dataset
VLLM_DATASETS = {"ShareGPT": (202, 179), "decode-heavy": (462, 256), "prefill-heavy": (462, 16)}
VLLM_TP = {"llama3-8b": 1, "llama3-70b": 4}  # "Llama 8B on 1xH100 and 70B on 4xH100"
VLLM_HARDWARE = "h100-sxm"  # the post says "H100"
VLLM_SCHEDULER_STEPS = 10  # "with multistep scheduling via setting `--num-scheduler-steps 10`"
VLLM_HOST_TIME = host_time_for_release("v0", "0.6.0")  # the engine's host time a step (host_time.json's release rules)
# overall_throughput.png (1,783 x 862 pixels): per panel, the y gridlines' pixel rows and labels (the x axis's
# row is 0) and the top pixel row of vLLM's (leftmost, blue) bar.
VLLM_CHART = {
    ("llama3-8b", "ShareGPT"): ({118: 30, 205: 20, 293: 10, 381: 0}, 57),
    ("llama3-8b", "decode-heavy"): ({68: 30, 172: 20, 276: 10, 381: 0}, 57),
    ("llama3-8b", "prefill-heavy"): ({113: 60, 202: 40, 291: 20, 381: 0}, 117),
    ("llama3-70b", "ShareGPT"): ({536: 15, 630: 10, 723: 5, 816: 0}, 493),
    ("llama3-70b", "decode-heavy"): ({501: 15, 606: 10, 711: 5, 816: 0}, 493),
    ("llama3-70b", "prefill-heavy"): ({530: 25, 587: 20, 644: 15, 702: 10, 759: 5, 816: 0}, 527),
}


def chart_reading(gridlines: dict[int, float], top_row: int) -> float:
    """A bar's value read off its chart: the gridlines' labels fitted as a straight line of their
    pixel rows (least squares), evaluated at the bar's top row, to 0.1."""
    import numpy as np

    slope, intercept = np.polyfit(list(gridlines), list(gridlines.values()), 1)
    return round(float(slope * top_row + intercept), 1)


def vllm_options(tp: int) -> dict:
    """vLLM v0.6.0's defaults for Llama 3 (max_model_len 8,192): no chunked prefill (vllm/engine/
    arg_utils.py, EngineArgs.create_engine_config, turned it on only when max_model_len > 32768),
    so v0's prefill-first scheduler with max(max_model_len, 2048) = 8,192 batched tokens
    (vllm/config.py, SchedulerConfig, without chunked prefill), 256 sequences, 90% of memory, bf16
    (the checkpoints' dtype); and the post's `--num-scheduler-steps 10` (multi-step scheduling:
    decode windows of 10 steps per decision; v0.6.0 refused it with chunked prefill); v0.6.0's host time a
    step (host_time.json vllm-v0.6.0: scheduling and input building once a window, output processing beside
    the next step's GPU work, added since session 28); greedy (benchmark_serving's QPS runs ask temperature 0)."""
    return {"scheduler": "vllm-v0", "tp": tp, "max_num_seqs": 256, "max_batched_tokens": 8192, "dtype": "bf16", "sampling": "greedy",
            "gpu_memory_utilization": 0.90, "num_scheduler_steps": VLLM_SCHEDULER_STEPS, "host_time": VLLM_HOST_TIME}


def vllm_throughput(model: str, dataset: str, requests: int = VLLM_REQUESTS,
                    pairs: list[tuple[int, int]] | None = None) -> float:
    """Our requests per second for one of the post's bars: every request at time 0 with the
    dataset's mean lengths, the run's requests over its span. pairs: each request's own (prompt,
    output) lengths instead, the first `requests` of them in their order (ShareGPT's sample)."""
    import math

    from costmodel.serving.api import serve

    if pairs is not None:
        if len(pairs) < requests:
            raise ConfigError(f"the length file holds {len(pairs)} requests, fewer than the {requests} asked for.")
        chosen = [Request(i, 0.0, prompt, output) for i, (prompt, output) in enumerate(pairs[:requests])]
        return requests / span_at_once(model, VLLM_HARDWARE, chosen, **vllm_options(VLLM_TP[model]))
    prompt, output = VLLM_DATASETS[dataset]
    run = serve(model, VLLM_HARDWARE, rate=math.inf, requests=requests, prompt=str(prompt), output=str(output), seed=0,
                **vllm_options(VLLM_TP[model]))
    return run.summary()["throughput"]["requests_per_s"]


def print_vllm(path: str | Path = VLLM_SHAREGPT) -> None:
    pairs = sharegpt_lengths(Path(path), at_least=VLLM_REQUESTS)
    mean_in, mean_out = (sum(column) / len(column) for column in zip(*pairs[:VLLM_REQUESTS]))
    print(f"\nvLLM v0.6.0 on H100, {VLLM_REQUESTS} requests at once. Source: {VLLM_SOURCE}\n")
    print("| model | GPUs (tp) | dataset | in / out tokens | published req/s (read from the chart) | ours "
          "| ours / published |")
    print("|---|---|---|---|---|---|---|")
    for (model, dataset), (gridlines, top_row) in VLLM_CHART.items():
        published, ours = chart_reading(gridlines, top_row), vllm_throughput(model, dataset)
        prompt, output = VLLM_DATASETS[dataset]
        if dataset != "ShareGPT":  # ShareGPT's bar is fed with the sampled requests' own lengths, below
            record("vllm", f"{model} {dataset}", "req/s", published, ours)
        print(f"| {model} | {VLLM_TP[model]} | {dataset} | {prompt} / {output} (means, fixed) | {published:.1f} "
              f"| {ours:.1f} | {ours / published:.2f} |")
        if dataset == "ShareGPT":  # the same bar with the sampled requests' own lengths
            ours = vllm_throughput(model, dataset, pairs=pairs)
            record("vllm", f"{model} {dataset} (own lengths)", "req/s", published, ours)
            print(f"| {model} | {VLLM_TP[model]} | {dataset} | each request's own (means {mean_in:.0f} / "
                  f"{mean_out:.0f}) | {published:.1f} | {ours:.1f} | {ours / published:.2f} |")


SGLANG_VLLM_SOURCE = ("sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb), the vLLM v0.6.0 rows: "
                      "sglang.bench_serving --backend vllm --dataset-name sharegpt")
SGLANG_VLLM_LENGTHS = Path(__file__).resolve().parent / "sharegpt_vllm_lengths_5000.json"
SGLANG_VLLM_SEED = 0  # our Poisson arrivals' seed (bench_serving's own is 1; its draw is not reproduced)
SGLANG_VLLM_MAX_MODEL_LEN = 4096  # the README's vLLM servers: --max_model_len 4096
# One entry per model: the README's server (vLLM v0.6.0, --num-scheduler-steps 10, --max_model_len 4096, otherwise
# defaults; "The gpu_memory_utilization of vLLM is by default 0.9 at both TP 1 and TP 4"), its offline row (5,000
# prompts at an infinite rate: request and output token throughput) and its online rows (rate, prompts, and the
# medians in ms of E2E latency, TTFT, TPOT and ITL).
SGLANG_VLLM = [
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B Instruct", "gpus": "1 x A100 80G", "hardware": "a100-80gb",
     "tp": 1, "offline": {"requests": 5000, "requests_per_s": 21.27, "output_tokens_per_s": 4132.37},
     "online": [(4, 1200, 1691.97, 100.48, 14.14, 129.32), (8, 2400, 2137.16, 120.39, 17.09, 158.63)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.1 70B Instruct", "gpus": "4 x H100 80G", "hardware": "h100-sxm",
     "tp": 4, "offline": {"requests": 5000, "requests_per_s": 19.04, "output_tokens_per_s": 3700.64},
     "online": [(4, 1200, 2915.60, 179.15, 23.58, 231.23), (8, 2400, 3752.38, 207.12, 29.15, 275.32)]},
]


def sglang_vllm_options(table: dict) -> dict:
    """vLLM v0.6.0 as the README starts it: vllm_options (v0's prefill-first scheduler, 256 sequences,
    0.90 of memory, bf16, --num-scheduler-steps 10) with the token budget max(max_model_len, 2048) =
    4,096 that --max_model_len 4096 gives (vllm/config.py SchedulerConfig, no chunked prefill)."""
    return {**vllm_options(table["tp"]), "max_batched_tokens": max(SGLANG_VLLM_MAX_MODEL_LEN, 2048)}


def sglang_vllm_run(table: dict, rate: float, requests: int, pairs: list[tuple[int, int]], options: dict | None = None,
                    max_model_len: int = SGLANG_VLLM_MAX_MODEL_LEN) -> list[dict]:
    """Our requests of one row: the first `requests` ShareGPT pairs, Poisson arrivals at `rate`
    (math.inf: all at 0), on the table's replica (options: serve's; None: sglang_vllm_options, the
    README's vLLM server); the finished requests' rows."""
    import math

    import numpy as np

    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas

    if len(pairs) < requests:
        raise ConfigError(f"the length file holds {len(pairs)} requests, fewer than the {requests} asked for.")
    gaps = np.zeros(requests) if math.isinf(rate) else \
        np.random.default_rng(SGLANG_VLLM_SEED).exponential(1.0 / rate, size=requests)
    arrivals = np.cumsum(gaps)
    chosen = [Request(i, float(arrivals[i]), prompt, output) for i, (prompt, output) in enumerate(pairs[:requests])]
    cfg = costmodel.load_model(table["model"])
    options = sglang_vllm_options(table) if options is None else options
    replica, step, _ = build_replica(cfg, load_hardware(table["hardware"]), **options)
    rows, _, _ = run_replicas(chosen, replica, step, 1, max_model_len, record=False)
    return rows


def sglang_vllm_offline(table: dict, pairs: list[tuple[int, int]], **setup) -> dict:
    """Our offline figures: requests and output tokens over the span from 0 to the last token (setup:
    sglang_vllm_run's options and max_model_len)."""
    rows = sglang_vllm_run(table, float("inf"), table["offline"]["requests"], pairs, **setup)
    span = max(row["finish_s"] for row in rows)
    return {"requests_per_s": len(rows) / span, "output_tokens_per_s": sum(row["output_tokens"] for row in rows) / span}


def sglang_vllm_online(table: dict, rate: float, requests: int, pairs: list[tuple[int, int]], **setup) -> dict:
    """Our online medians (ms) of E2E latency, TTFT and TPOT (requests of one output token have none)."""
    import numpy as np

    rows = sglang_vllm_run(table, rate, requests, pairs, **setup)
    tpots = [row["tpot_s"] for row in rows if row["output_tokens"] > 1]
    return {"e2e_ms": 1e3 * float(np.median([row["e2e_s"] for row in rows])),
            "ttft_ms": 1e3 * float(np.median([row["ttft_s"] for row in rows])), "tpot_ms": 1e3 * float(np.median(tpots))}


def print_sglang_vllm(path: str | Path = SGLANG_VLLM_LENGTHS) -> None:
    print_bench_serving("sglang-vllm", f"vLLM v0.6.0 under SGLang's ShareGPT benchmark. Source: {SGLANG_VLLM_SOURCE}",
                        SGLANG_VLLM, lambda table, kind: sglang_vllm_options(table), SGLANG_VLLM_MAX_MODEL_LEN, path)


def print_bench_serving(source: str, title: str, tables: list[dict], options, max_model_len: int,
                        path: str | Path) -> None:
    """One sglang.bench_serving table (the README's rows of one engine) beside ours, each comparison fed to
    reports/serving_published.py as `source`: per model its offline request and output token throughputs and
    its online medians; options(table, "offline" | "online") gives serve's options for that run."""
    pairs = sharegpt_lengths(Path(path), at_least=max(table["offline"]["requests"] for table in tables))
    print(f"\n{title}\n")
    print("| model (ours) | GPUs | load | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|")
    for table in tables:
        head = f"| {table['published_model']} ({table['model']}) | {table['gpus']} (tp {table['tp']})"
        offline = table["offline"]
        ours = sglang_vllm_offline(table, pairs, options=options(table, "offline"), max_model_len=max_model_len)
        for metric, name in (("requests_per_s", "request throughput (req/s)"),
                             ("output_tokens_per_s", "output token throughput (tok/s)")):
            record(source, f"{table['model']} offline", name, offline[metric], ours[metric])
            print(f"{head} | {offline['requests']:,} prompts at once | {name} | {offline[metric]:,.2f} "
                  f"| {ours[metric]:,.2f} | {ours[metric] / offline[metric]:.2f} |")
        for rate, requests, e2e, ttft, tpot, _itl in table["online"]:
            ours = sglang_vllm_online(table, rate, requests, pairs, options=options(table, "online"),
                                      max_model_len=max_model_len)
            for published, metric, name in ((e2e, "e2e_ms", "median E2E latency (ms)"),
                                            (ttft, "ttft_ms", "median TTFT (ms)"), (tpot, "tpot_ms", "median TPOT (ms)")):
                record(source, f"{table['model']} {rate} req/s", name, published, ours[metric])
                print(f"{head} | {rate} req/s, {requests:,} prompts | {name} | {published:,.2f} | {ours[metric]:,.2f} "
                      f"| {ours[metric] / published:.2f} |")


def main() -> None:
    for name in TABLES:
        SELECTORS[name][0]()


def print_summary(*names: str) -> None:
    """The comparisons of the named tables (every table if none), as reports/serving_published.py summarises
    them: per source and overall, then the ten furthest from 1."""
    unknown = next((name for name in names if name not in TABLES), None)
    if unknown is not None:
        raise ConfigError(f"summary: unknown table {unknown!r}{near(unknown, TABLES)}; the tables are {', '.join(TABLES)}.")
    comparisons = collect([SELECTORS[name][0] for name in names or TABLES])
    print("Published serving runs beside ours (reports/serving_published.py; ratio: ours / published, as each "
          "table prints it)\n")
    print(render(summarise(comparisons)))
    print("\nFurthest from 1:\n\n| source | row | metric | published | ours | ours / published |\n|---|---|---|---|---|---|")
    for c in worst(comparisons):
        print(f"| {c.source} | {c.row} | {c.metric} | {c.published:,.2f} | {c.ours:,.2f} | {c.ratio:.2f} |")


# The selectors: each table alone (vllm and mlperf from another length file if one is named), with the
# most arguments each takes after its name; no selector runs every table.
SELECTORS = {"trtllm-static": (print_static, 0), "sarathi": (print_sarathi, 0), "nim": (print_nim, 0), "trtllm-bench": (print_trtllm_bench, 0), "sglang-vllm": (print_sglang_vllm, 1),
             "vllm": (print_vllm, 1), "mlperf": (print_mlperf, 1), "torchao-vllm": (print_torchao_vllm, 0),
             "lmdeploy": (print_lmdeploy, 0), "amd-vllm": (print_amd_vllm, 0),
             "trtllm-v017": (print_trtllm_v017, 0),
             "trtllm-online": (print_trtllm_online, 0), "mlperf-vllm": (print_mlperf_vllm, 1),
             "lambda-vllm": (print_lambda_vllm, 1), "qwen-vllm": (print_qwen_vllm, 0),
             "qwen3-sglang": (print_qwen3_sglang, 0), "sglang-v030": (print_sglang_v030, 1),
             "lmdeploy-rpm": (print_lmdeploy_rpm, 0), "lmdeploy-v02": (print_lmdeploy_v02, 0),
             "vllm-ci": (print_vllm_ci, 0), "trtllm-v020": (print_trtllm_v020, 0),
             "trtllm-v090": (print_trtllm_v090, 0), "sglang-h200": (print_sglang_h200, 0),
             "trtllm-v090-l40s": (print_trtllm_v090_l40s, 0), "trtllm-v014": (print_trtllm_v014, 0)}
# Every table, in the order `main` prints them (the summary's sources: trtllm-static feeds trtllm-h200 too).
TABLES = ("trtllm-static", "sarathi", "vllm", "nim", "trtllm-bench", "sglang-vllm", "torchao-vllm", "lmdeploy",
          "amd-vllm", "trtllm-v017", "trtllm-online", "mlperf", "mlperf-vllm", "lambda-vllm", "qwen-vllm", "qwen3-sglang",
          "sglang-v030", "lmdeploy-rpm", "lmdeploy-v02", "vllm-ci", "trtllm-v020", "trtllm-v090", "sglang-h200",
          "trtllm-v090-l40s", "trtllm-v014")
SELECTORS["summary"] = (print_summary, len(TABLES))
USAGE = ("trtllm-static, sarathi, nim, trtllm-bench, sglang-vllm [SHAREGPT.json], vllm [SHAREGPT.json], mlperf [LENGTHS.json], torchao-vllm, "
         "lmdeploy, amd-vllm, trtllm-v017, trtllm-online, mlperf-vllm [LENGTHS.json], lambda-vllm [SHAREGPT.json], qwen-vllm, "
         "qwen3-sglang, sglang-v030 [SHAREGPT.json], lmdeploy-rpm, lmdeploy-v02, vllm-ci, trtllm-v020, trtllm-v090, sglang-h200 "
         "trtllm-v090-l40s or trtllm-v014 (none: every table); summary [TABLE ...] (the comparisons of those tables, or of every one, summarised)")


def near(name: str, names) -> str:
    """", did you mean 'x'?" for a mistyped selector or table (qwen-vlm: qwen-vllm), else ""."""
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def print_help() -> None:
    """What the script prints and the selectors it takes (--help, -h)."""
    print(__doc__.split("\n", 1)[0])
    print(f"\nusage: python benchmarks/serve_published.py [SELECTOR [FILE]]; the selectors are {USAGE}.")


def command(argv: list[str]):
    """The table printer and its arguments that argv (the script's arguments) names; an unknown
    selector or an argument past what it takes is one ConfigError line."""
    if not argv:
        return main, []
    if argv[0] in ("-h", "--help"):  # was "unknown selector '--help'" and exit status 2
        return print_help, []
    if argv[0] not in SELECTORS:
        raise ConfigError(f"unknown selector {argv[0]!r}{near(argv[0], SELECTORS)}; the selectors are {USAGE}.")
    printer, most = SELECTORS[argv[0]]
    if len(argv) - 1 > most:
        raise ConfigError(f"unexpected argument {argv[1 + most]!r} after {' '.join(argv[:1 + most])}; "
                          f"the selectors are {USAGE}.")
    return printer, argv[1:]


if __name__ == "__main__":
    try:
        printer, arguments = command(sys.argv[1:])
        printer(*arguments)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
