"""Published engine measurements beside the serving simulator's figures for the same setup.

TensorRT-LLM's static-batch tables (benchmarks/published_trtllm_static.py): its A100 FP16 figures of v0.6.1
and its H200 launch note's FP8 ones. Printed as Markdown tables (docs/serving.md holds a copy).

Last tables: MLPerf Inference Llama-2-70B (closed division), Offline and Server scenarios, from
the LoadGen summaries: v4.0 Azure NC80adis_H100_v5 (2 x H100 NVL 94 GB over an NVLink bridge,
TensorRT 9.3.0) and v4.1 NVIDIA DGX H100 (8 x H100 SXM, four engines of tp 2); since session 25 also NVIDIA's
v4.1 GH200 x 1, v4.1 and v4.0 H200 x 8 and v4.1 H200 CTS x 8 (eight engines of tp 1), each with its 'assumed'; since
session 26 AMD's v4.1 8 x MI300X (eight vLLM engines of tp 1, its Offline ones eager; its own 'assumed'). The harness
settings (tensor parallelism 2, or 1 on the H200 and GH200 systems, FP8, in-flight batching up to the config's gpu_batch_size, 90%
of free memory for the KV cache) are NVIDIA's config classes of each round (Azure's README says
it ran NVIDIA's). Ours: `serve` with vLLM's continuous-batching scheduler on the h100-nvl,
h100-sxm, h200 or gh200-144gb preset, the config's tp, as many replicas as engines, FP8 weights and KV cache, the projections'
GEMMs W8A8 at the FP8 peak (the attention core in bf16), the same sequence cap and memory fraction, and
(v4.0) the engine's token budget: max_num_tokens 16,384, the default of NVIDIA's v4.0 LLAMA2EngineBuilderOp
(closed/NVIDIA/code/llama2-70b/tensorrt/builder.py, commit 9201484; the config classes set none); v4.1's
builder is not stored here, so that system keeps vLLM's 8,192. Output lengths: the reference's 294 tokens
per sample (fixed; "Tokens per sample: 294.45"; Azure's run: 3,900.33 / 13.3588 = 292). Input lengths: the
24,576 samples' own prompt lengths (mlperf_llama2_70b_lengths.json beside this script: a histogram of the
dataset's tok_input_length column as openshift-psap/performance-dashboard extracted it from MLCommons'
pickle, mean 222.33, median 152, 48-1,021 tokens): Offline runs every sample once (in a seeded shuffled
order), Server draws each request's prompt from the histogram. A row at the mean rounded to a token (222,
fixed; another histogram's own mean when one is named) shows what the spread changes.

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
(benchmarks/published_amd_vllm_throughput.py): each source's rows, setup and runner in a module of its own; and
TensorRT-LLM 0.17's perf overview (A100 FP16 Llama 3.1 8B and Mixtral 8x7B, H100 FP8 Mixtral; rows and choices in
benchmarks/published_trtllm_v017.py, run by trtllm_v017_options below with the v1.0 rows' heuristic), and the same
page's online-serving table of 0.14 (benchmarks/published_trtllm_online.py); since session 27 Krai's MLPerf v5.0 /
v5.1 open-division vLLM runs on H200, H100 and MI300X (benchmarks/published_mlperf_vllm.py, selector mlperf-vllm);
since session 28 Lambda's vLLM v0.5.4 / v0.6.0 ShareGPT runs on H100 (benchmarks/published_lambda_vllm.py, lambda-vllm);
since session 29 Qwen2.5's vLLM 0.6.3 speed benchmark on A100, one request at a time (benchmarks/published_qwen_vllm.py,
qwen-vllm).

TensorRT-LLM's performance overview (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md at commit
00f37686, the v1.0 page: trtllm-bench throughput on the PyTorch backend, every request at once, "Total Output
Throughput (tokens/sec)"): the FP8 columns of Llama 3.1 8B (H100 TP1, H200 TP1), Llama 3.3 70B (H100 TP2, H200
TP1) and Llama 3.1 405B (H200 TP8, H100 TP8), ten fixed lengths each, the page's $num_requests. Ours: `--scheduler trtllm` (Orca's schedule as
GUARANTEED_NO_EVICT with chunked context off; decode-only steps from CUDA graphs at the page's capture sizes) with
trtllm-bench's own engine settings (tensorrt_llm/bench/build/tuning.py, reimplemented in trtllm_bench_settings),
FP8 weights and KV cache, 0.95 of memory (the page's --kv_cache_free_gpu_mem_fraction).

vLLM v0.6.0 under SGLang's benchmark (sgl-project/sglang benchmark/benchmark_vllm_060/README.md at commit 120affb):
Llama 3.1 8B on one A100 80G and 70B on four H100 80G, ShareGPT through sglang.bench_serving: offline (5,000 at
once) throughputs and online (4 and 8 req/s) medians. Ours: vllm_options with max_model_len 4,096's budget, the
first 5,000 pairs of vLLM's ShareGPT sample (sharegpt_vllm_lengths_5000.json beside this script), Poisson arrivals.

    python benchmarks/serve_published.py [trtllm-static | sarathi | nim | trtllm-bench | sglang-vllm [SHAREGPT.json] | vllm [SHAREGPT.json]
                                          | mlperf [LENGTHS.json] | torchao-vllm | lmdeploy
                                          | amd-vllm | trtllm-v017
                                          | trtllm-online | mlperf-vllm [LENGTHS.json]
                                          | lambda-vllm [SHAREGPT.json] | qwen-vllm
                                          | summary [TABLE ...]]

`summary` runs the named tables (every one if none) with their tables discarded and prints what they fed
reports/serving_published.py: per source the comparisons, the median of |ours / published - 1|, how many within
0.75-1.33x and the range, then over all of them, and the ten furthest from 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.config import ConfigError  # noqa: E402
from costmodel.serving.api import build_replica  # noqa: E402
from costmodel.serving.host_time import host_time_for_release  # noqa: E402
from costmodel.serving.workload import Lengths, Request  # noqa: E402
from benchmarks.published_lengths import (  # noqa: E402
    MLPERF_LENGTHS, VLLM_SHAREGPT, mlperf_input_lengths, sharegpt_lengths)
from benchmarks.published_amd_vllm_throughput import print_amd_vllm  # noqa: E402
from benchmarks.published_lambda_vllm import print_lambda_vllm  # noqa: E402
from benchmarks.published_lmdeploy import print_lmdeploy  # noqa: E402
from benchmarks.published_mlperf_vllm import loadgen_server_figures, print_mlperf_vllm, server_rows  # noqa: E402
from benchmarks.published_nim import print_nim  # noqa: E402
from benchmarks.published_qwen_vllm import print_qwen_vllm  # noqa: E402
from benchmarks.published_sarathi import print_sarathi  # noqa: E402
from benchmarks.published_torchao_vllm import print_torchao_vllm  # noqa: E402
from benchmarks.published_trtllm_online import print_trtllm_online  # noqa: E402
from benchmarks.published_trtllm_static import print_static  # noqa: E402
from benchmarks.published_trtllm_v017 import (  # noqa: E402
    TRTLLM_V017, TRTLLM_V017_REQUESTS, TRTLLM_V017_SOURCE)
from reports.serving_published import collect, record, render, summarise, worst  # noqa: E402

# MLPerf Inference, Llama-2-70B (closed), from the LoadGen summaries. Shared by every system: the model and the
# output tokens per sample (language/llama2-70b/README.md of mlcommons/inference: "Tokens per sample: 294.45").
MLPERF_MODEL, MLPERF_OUTPUT = "llama2-70b", 294
MLPERF_SHUFFLE_SEED = 0  # the order in which Offline's samples are issued (LoadGen shuffles them with its own seed)
# One entry per system (benchmarks/published_mlperf.json: each summary's figures, the config class's settings,
# the engine's token budget where its builder is stored, and what each later row assumed).
MLPERF = json.loads(Path(__file__).with_name("published_mlperf.json").read_text())["systems"]


def mlperf_prompts(lengths: Lengths, samples: int | None = None) -> list[int]:
    """Offline's prompts: every sample of the histogram once, in a seeded shuffled order (the first
    `samples` of it for a shorter run)."""
    import numpy as np

    every = np.repeat(np.asarray(lengths.values), np.asarray(lengths.weights, dtype=np.int64))
    order = np.random.default_rng(MLPERF_SHUFFLE_SEED).permutation(len(every))
    return [int(n) for n in every[order][:samples]]


def mlperf_mean(lengths: Lengths) -> float:
    """The histogram's mean prompt length (tokens)."""
    return sum(v * w for v, w in zip(lengths.values, lengths.weights)) / sum(lengths.weights)


def mlperf_mean_prompt(lengths: Lengths) -> int:
    """Beside the dataset's own prompts: every prompt at the loaded histogram's mean rounded to a
    token (what a run without the spread gives; 222 for MLPERF_LENGTHS)."""
    return round(mlperf_mean(lengths))


def mlperf_options(system: dict, max_num_seqs: int, cuda_graphs: str = "auto") -> dict:
    """The replica options of our MLPerf runs: vLLM's scheduler, FP8 weights and KV cache, bf16
    activations (the projections W8A8 at the FP8 peak, as --fp8-gemm auto runs them on an H100),
    the engine's token budget where its source gives it, and its graphs (a scenario's "cuda_graphs":
    AMD's Offline engines ran --enforce-eager)."""
    return {"scheduler": "vllm", "tp": system["tp"], "max_num_seqs": max_num_seqs, "dtype": "bf16",
            "weight_dtype": "fp8", "kv_dtype": "fp8", "gpu_memory_utilization": 0.90,
            "max_batched_tokens": system["max_batched_tokens"], "cuda_graphs": cuda_graphs}


def mlperf_offline(system: dict, prompt: int | Lengths, samples: int | None = None) -> float:
    """Our Offline output tokens per second: every sample arrives at 0 (round-robin over the system's
    engines) and the run ends at the last token. prompt: a fixed length, or the dataset's histogram
    (each of its samples once)."""
    samples = samples or system["offline"]["samples"]
    prompts = mlperf_prompts(prompt, samples) if isinstance(prompt, Lengths) else [prompt] * samples
    if len(prompts) < samples:
        raise ConfigError(f"the length histogram holds {len(prompts)} samples, fewer than the {samples} asked for.")
    requests = [Request(i, 0.0, n, MLPERF_OUTPUT) for i, n in enumerate(prompts)]
    span = span_at_once(MLPERF_MODEL, system["hardware"], requests, system["replicas"],
                        **mlperf_options(system, system["offline"]["max_num_seqs"],
                                         system["offline"].get("cuda_graphs", "auto")))
    return samples * MLPERF_OUTPUT / span


def span_at_once(model: str, hardware: str, requests: list[Request], replicas: int = 1, **options) -> float:
    """Seconds from 0 to the last token of `requests` (all arriving at 0, their own lengths) on
    `replicas` replicas of the model built with `options` (build_replica's) on the hardware preset:
    the span of MLPerf's Offline run and of the vLLM post's ShareGPT requests."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas

    cfg = costmodel.load_model(model)
    replica, step, _ = build_replica(cfg, load_hardware(hardware), **options)
    rows, _, _ = run_replicas(requests, replica, step, replicas, cfg.max_positions, record=False)
    return max(r["finish_s"] for r in rows)


def mlperf_server(system: dict, prompt: int | Lengths, requests: int | None = None) -> dict:
    """Our Server figures at the published rate: completed output tokens/s, p99 TTFT and p99 TPOT, as
    LoadGen reports them (published_mlperf_vllm.loadgen_server_figures). prompt: a fixed length, or the dataset's histogram (each request's drawn from it, seed 0)."""
    from costmodel.serving.api import serve

    run = serve(MLPERF_MODEL, system["hardware"], rate=system["server"]["rate"],
                requests=requests or system["server"]["requests"],
                prompt=prompt if isinstance(prompt, Lengths) else str(prompt), output=str(MLPERF_OUTPUT),
                seed=0, replicas=system["replicas"],
                **mlperf_options(system, system["server"]["max_num_seqs"], system["server"].get("cuda_graphs", "auto")))
    return loadgen_server_figures(run)


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


TRTLLM_BENCH_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (commit 00f37686), 'Throughput "
                       "Measurements': trtllm-bench throughput, PyTorch backend, 'Total Output Throughput (tokens/sec)'")
# The page's $num_requests per (input, output) length (every request at those lengths: --input-stdev=0 --output-stdev=0).
TRTLLM_BENCH_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (500, 2000): 3000, (1000, 1000): 3000,
                         (1000, 2000): 1500, (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500,
                         (20000, 2000): 1000}
# The page's "In many cases, we also use a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95"
# (the command's default is 0.90): ours takes 0.95 for the heuristic's fraction and for the replica's memory.
TRTLLM_BENCH_KV_FRACTION = 0.95
# One table per (model, GPU column) of the page: the FP8 columns of the three dense Llama models with a preset.
# ModelOpt's FP8 checkpoints (nvidia/Llama-3.1-8B-Instruct-FP8, -3.3-70B-, -3.1-405B-Instruct-FP8): FP8 weights and
# activations in the projections and an FP8 KV cache. Rows: (input, output, published total output tokens/s).
TRTLLM_BENCH = [
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B", "hardware": "h100-sxm", "gpu": "H100 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 28312), (128, 2048, 22714), (128, 4096, 14325), (500, 2000, 17660), (1000, 1000, 15220),
              (1000, 2000, 13899), (2048, 128, 3450), (2048, 2048, 9305), (5000, 500, 3459), (20000, 2000, 1351)]},
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B", "hardware": "h200", "gpu": "H200 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 27911), (128, 2048, 26221), (128, 4096, 18027), (500, 2000, 20770), (1000, 1000, 17744),
              (1000, 2000, 16828), (2048, 128, 3538), (2048, 2048, 12194), (5000, 500, 3902), (20000, 2000, 1804)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h100-sxm", "gpu": "H100 TP2 (FP8)",
     "tp": 2,
     "rows": [(128, 128, 6378), (128, 2048, 6651), (128, 4096, 4199), (500, 2000, 5222), (1000, 1000, 4205),
              (1000, 2000, 4146), (2048, 128, 762), (2048, 2048, 3082), (5000, 500, 898), (20000, 2000, 437)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.3 70B", "hardware": "h200", "gpu": "H200 TP1 (FP8)", "tp": 1,
     "rows": [(128, 128, 3803), (128, 2048, 4336), (128, 4096, 2872), (500, 2000, 3666), (1000, 1000, 2909),
              (1000, 2000, 2994), (2048, 128, 442), (2048, 2048, 2003), (5000, 500, 566), (20000, 2000, 283)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B", "hardware": "h200", "gpu": "H200 TP8 (FP8)",
     "tp": 8,
     "rows": [(128, 128, 3814), (128, 2048, 5348), (128, 4096, 4741), (500, 2000, 4724), (1000, 1000, 3330),
              (1000, 2000, 3722), (2048, 128, 456), (2048, 2048, 2948), (5000, 500, 650), (20000, 2000, 505)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B", "hardware": "h100-sxm", "gpu": "H100 TP8 (FP8)",
     "tp": 8,
     "rows": [(128, 128, 3627), (128, 2048, 4340), (128, 4096, 3116), (500, 2000, 3994), (1000, 1000, 2919),
              (1000, 2000, 2895), (2048, 128, 453), (2048, 2048, 2296), (5000, 500, 610), (20000, 2000, 345)]},
]


def trtllm_bench_settings(cfg, hardware, tp: int, prompt: int, output: int,
                          fraction: float = TRTLLM_BENCH_KV_FRACTION, value_bytes: int = 1) -> tuple[int, int]:
    """trtllm-bench's engine settings when none are given: (max_batch_size, max_num_tokens).
    tensorrt_llm/bench/build/tuning.py calc_engine_setting and finetune_setting (a weight and a KV value
    of value_bytes each: FP8 1, unquantized FP16 2, its BYTES_PER_ELEM; the GPU's whole memory, pynvml's total, here the hardware file's;
    parameters: the checkpoint's count, here our tree's), then
    tensorrt_llm/bench/benchmark/utils/general.py get_settings: chunked prefill is off by default,
    so max_num_tokens is raised to the longest prompt plus max_batch_size."""
    import math

    from costmodel.api import estimate

    gib = 2**30
    kv_bytes_per_token = 2 * cfg.n_decoder_layers * max(tp, cfg.n_kv_heads) * cfg.d_head * value_bytes / gib
    available = hardware.memory_bytes / gib * tp - estimate(cfg).params()["total"] * value_bytes / gib
    requests = available * fraction / (kv_bytes_per_token * (prompt + output))
    raw_bs = min(requests, 4096)
    raw_tokens = min(raw_bs * (1 + prompt / output), 32768)
    if raw_bs < 256:
        batch = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        batch = 128 * math.ceil(raw_bs / 128)
    else:
        batch = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    return batch, max(tokens, prompt + batch)


def trtllm_bench_options(table: dict, prompt: int, output: int) -> dict:
    """Our replica for a trtllm-bench row: the trtllm scheduler (in-flight batching, whole prompts
    within max_num_tokens, a request's full length reserved when it joins: TensorRT-LLM's default
    GUARANTEED_NO_EVICT capacity scheduler, chunked context off; generation-only steps from CUDA
    graphs padded to the captured batch sizes), trtllm-bench's settings, FP8
    weights (W8A8) and KV cache, bf16 activations, 0.95 of memory."""
    import costmodel
    from costmodel.hardware import load_hardware

    batch, tokens = trtllm_bench_settings(costmodel.load_model(table["model"]), load_hardware(table["hardware"]),
                                          table["tp"], prompt, output)
    return {"scheduler": "trtllm", "tp": table["tp"], "max_num_seqs": batch, "max_batched_tokens": tokens,
            "dtype": "bf16", "weight_dtype": "fp8", "kv_dtype": "fp8",
            "gpu_memory_utilization": TRTLLM_BENCH_KV_FRACTION}


def output_rate_at_once(table: dict, prompt: int, output: int, requests: int, options: dict) -> float:
    """Output tokens per second of `requests` requests of one shape all arriving at 0 on the table's model and
    hardware (trtllm-bench's figure): output tokens over the span to the last one."""
    span = span_at_once(table["model"], table["hardware"], [Request(i, 0.0, prompt, output) for i in range(requests)],
                        **options)
    return requests * output / span


def trtllm_bench_throughput(table: dict, prompt: int, output: int, requests: int | None = None) -> float:
    """Our total output tokens per second: the row's requests all at 0, output tokens over the span."""
    return output_rate_at_once(table, prompt, output, requests or TRTLLM_BENCH_REQUESTS[(prompt, output)],
                               trtllm_bench_options(table, prompt, output))


def print_trtllm_bench() -> None:
    print(f"\nTensorRT-LLM trtllm-bench, all requests at once. Source: {TRTLLM_BENCH_SOURCE}\n")
    print("| model (ours) | GPU | in / out | requests | max_batch_size / max_num_tokens | published out tok/s "
          "| ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for table in TRTLLM_BENCH:
        for prompt, output, published in table["rows"]:
            options = trtllm_bench_options(table, prompt, output)
            ours = trtllm_bench_throughput(table, prompt, output)
            record("trtllm-bench", f"{table['model']} {table['gpu']} {prompt}/{output}", "out tok/s", published, ours)
            print(f"| {table['published_model']} ({table['model']}) | {table['gpu']} | {prompt} / {output} "
                  f"| {TRTLLM_BENCH_REQUESTS[(prompt, output)]:,} | {options['max_num_seqs']:,} / "
                  f"{options['max_batched_tokens']:,} | {published:,} | {ours:,.0f} | {ours / published:.2f} |")


def trtllm_v017_options(table: dict, prompt: int, output: int) -> dict:
    """Our replica for a v0.17 row (benchmarks/published_trtllm_v017.py): trtllm_bench_options' schedule with
    the table's value bytes: FP16 (2) as fp16 weights and cache, FP8 (1) as W8A8 weights and an FP8 cache, the
    activations in fp16 either way (the page's example engine: "Dtype: float16", "Quantization: FP8")."""
    import costmodel
    from costmodel.hardware import load_hardware

    batch, tokens = trtllm_bench_settings(costmodel.load_model(table["model"]), load_hardware(table["hardware"]),
                                          table["tp"], prompt, output, value_bytes=table["bytes"])
    formats = {"dtype": "fp16"} if table["bytes"] == 2 else {"dtype": "fp16", "weight_dtype": "fp8", "kv_dtype": "fp8"}
    return {"scheduler": "trtllm", "tp": table["tp"], "max_num_seqs": batch, "max_batched_tokens": tokens,
            "gpu_memory_utilization": TRTLLM_BENCH_KV_FRACTION, **formats}


def trtllm_v017_throughput(table: dict, prompt: int, output: int, requests: int | None = None) -> float:
    """Our output tokens per second for a v0.17 row: the page's requests (or `requests`) all at 0, output
    tokens over the span."""
    return output_rate_at_once(table, prompt, output, requests or TRTLLM_V017_REQUESTS[(prompt, output)],
                               trtllm_v017_options(table, prompt, output))


def print_trtllm_v017() -> None:
    print(f"\nTensorRT-LLM 0.17 trtllm-bench, all requests at once. Source: {TRTLLM_V017_SOURCE}\n")
    print("| model (ours) | GPU | in / out | requests | max_batch_size / max_num_tokens | published tok/s | ours "
          "| ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for table in TRTLLM_V017:
        for prompt, output, published in table["rows"]:
            options, requests = trtllm_v017_options(table, prompt, output), TRTLLM_V017_REQUESTS[(prompt, output)]
            ours = trtllm_v017_throughput(table, prompt, output)
            record("trtllm-v017", f"{table['model']} {table['gpu']} {prompt}/{output}", "tok/s", published, ours)
            print(f"| {table['published_model']} ({table['model']}) | {table['gpu']} | {prompt} / {output} "
                  f"| {requests:,} | {options['max_num_seqs']:,} / {options['max_batched_tokens']:,} | {published:,} "
                  f"| {ours:,.0f} | {ours / published:.2f} |")


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


def sglang_vllm_run(table: dict, rate: float, requests: int, pairs: list[tuple[int, int]]) -> list[dict]:
    """Our requests of one row: the first `requests` ShareGPT pairs, Poisson arrivals at `rate`
    (math.inf: all at 0), on the table's replica; the finished requests' rows."""
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
    replica, step, _ = build_replica(cfg, load_hardware(table["hardware"]), **sglang_vllm_options(table))
    rows, _, _ = run_replicas(chosen, replica, step, 1, SGLANG_VLLM_MAX_MODEL_LEN, record=False)
    return rows


def sglang_vllm_offline(table: dict, pairs: list[tuple[int, int]]) -> dict:
    """Our offline figures: requests and output tokens over the span from 0 to the last token."""
    rows = sglang_vllm_run(table, float("inf"), table["offline"]["requests"], pairs)
    span = max(row["finish_s"] for row in rows)
    return {"requests_per_s": len(rows) / span, "output_tokens_per_s": sum(row["output_tokens"] for row in rows) / span}


def sglang_vllm_online(table: dict, rate: float, requests: int, pairs: list[tuple[int, int]]) -> dict:
    """Our online medians (ms) of E2E latency, TTFT and TPOT (requests of one output token have none)."""
    import numpy as np

    rows = sglang_vllm_run(table, rate, requests, pairs)
    tpots = [row["tpot_s"] for row in rows if row["output_tokens"] > 1]
    return {"e2e_ms": 1e3 * float(np.median([row["e2e_s"] for row in rows])),
            "ttft_ms": 1e3 * float(np.median([row["ttft_s"] for row in rows])), "tpot_ms": 1e3 * float(np.median(tpots))}


def print_sglang_vllm(path: str | Path = SGLANG_VLLM_LENGTHS) -> None:
    pairs = sharegpt_lengths(Path(path), at_least=max(table["offline"]["requests"] for table in SGLANG_VLLM))
    print(f"\nvLLM v0.6.0 under SGLang's ShareGPT benchmark. Source: {SGLANG_VLLM_SOURCE}\n")
    print("| model (ours) | GPUs | load | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|")
    for table in SGLANG_VLLM:
        head = f"| {table['published_model']} ({table['model']}) | {table['gpus']} (tp {table['tp']})"
        ours, offline = sglang_vllm_offline(table, pairs), table["offline"]
        for metric, name in (("requests_per_s", "request throughput (req/s)"),
                             ("output_tokens_per_s", "output token throughput (tok/s)")):
            record("sglang-vllm", f"{table['model']} offline", name, offline[metric], ours[metric])
            print(f"{head} | {offline['requests']:,} prompts at once | {name} | {offline[metric]:,.2f} "
                  f"| {ours[metric]:,.2f} | {ours[metric] / offline[metric]:.2f} |")
        for rate, requests, e2e, ttft, tpot, _itl in table["online"]:
            ours = sglang_vllm_online(table, rate, requests, pairs)
            for published, metric, name in ((e2e, "e2e_ms", "median E2E latency (ms)"),
                                            (ttft, "ttft_ms", "median TTFT (ms)"), (tpot, "tpot_ms", "median TPOT (ms)")):
                record("sglang-vllm", f"{table['model']} {rate} req/s", name, published, ours[metric])
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
        raise ConfigError(f"summary: unknown table {unknown!r}; the tables are {', '.join(TABLES)}.")
    comparisons = collect([SELECTORS[name][0] for name in names or TABLES])
    print("Published serving runs beside ours (reports/serving_published.py; ratio: ours / published, as each "
          "table prints it)\n")
    print(render(summarise(comparisons)))
    print("\nFurthest from 1:\n\n| source | row | metric | published | ours | ours / published |\n|---|---|---|---|---|---|")
    for c in worst(comparisons):
        print(f"| {c.source} | {c.row} | {c.metric} | {c.published:,.2f} | {c.ours:,.2f} | {c.ratio:.2f} |")


def print_mlperf(path: str | Path = MLPERF_LENGTHS) -> None:
    lengths = mlperf_input_lengths(Path(path), at_least=max(system["offline"]["samples"] for system in MLPERF))
    mean_prompt = mlperf_mean_prompt(lengths)
    prompts = ((f"dataset's (mean {mlperf_mean(lengths):.2f})", lengths), (f"{mean_prompt}, fixed", mean_prompt))
    for system in MLPERF:
        print(f"\nMLPerf Inference Llama-2-70B, {system['system']}. Source: {system['source']}\n")
        print("| scenario | prompt tokens (ours) | metric | published | ours | ours / published |")
        print("|---|---|---|---|---|---|")
        for label, prompt in prompts:
            ours, published = mlperf_offline(system, prompt), system["offline"]["tokens_per_s"]
            if prompt is lengths:  # fed with the dataset's prompts (the fixed mean prompt stays in the table)
                record("mlperf", f"{system['system']} Offline", "output tok/s", published, ours)
            print(f"| Offline | {label} | output tok/s | {published:,.0f} | {ours:,.0f} | {ours / published:.2f} |")
        for label, prompt in prompts:
            print("\n".join(server_rows(f"| Server, {system['server']['rate']} req/s | {label}", system["server"],
                                         mlperf_server(system, prompt),
                                         ("mlperf", f"{system['system']} Server") if prompt is lengths else None)))


# The selectors: each table alone (vllm and mlperf from another length file if one is named), with the
# most arguments each takes after its name; no selector runs every table.
SELECTORS = {"trtllm-static": (print_static, 0), "sarathi": (print_sarathi, 0), "nim": (print_nim, 0), "trtllm-bench": (print_trtllm_bench, 0), "sglang-vllm": (print_sglang_vllm, 1),
             "vllm": (print_vllm, 1), "mlperf": (print_mlperf, 1), "torchao-vllm": (print_torchao_vllm, 0),
             "lmdeploy": (print_lmdeploy, 0), "amd-vllm": (print_amd_vllm, 0),
             "trtllm-v017": (print_trtllm_v017, 0),
             "trtllm-online": (print_trtllm_online, 0), "mlperf-vllm": (print_mlperf_vllm, 1),
             "lambda-vllm": (print_lambda_vllm, 1), "qwen-vllm": (print_qwen_vllm, 0)}
# Every table, in the order `main` prints them (the summary's sources: trtllm-static feeds trtllm-h200 too).
TABLES = ("trtllm-static", "sarathi", "vllm", "nim", "trtllm-bench", "sglang-vllm", "torchao-vllm", "lmdeploy",
          "amd-vllm", "trtllm-v017", "trtllm-online", "mlperf", "mlperf-vllm", "lambda-vllm", "qwen-vllm")
SELECTORS["summary"] = (print_summary, len(TABLES))
USAGE = ("trtllm-static, sarathi, nim, trtllm-bench, sglang-vllm [SHAREGPT.json], vllm [SHAREGPT.json], mlperf [LENGTHS.json], torchao-vllm, "
         "lmdeploy, amd-vllm, trtllm-v017, trtllm-online, mlperf-vllm [LENGTHS.json], lambda-vllm [SHAREGPT.json] or "
         "qwen-vllm "
         "(none: every table); summary [TABLE ...] (the comparisons of those tables, or of every one, summarised)")


def command(argv: list[str]):
    """The table printer and its arguments that argv (the script's arguments) names; an unknown
    selector or an argument past what it takes is one ConfigError line."""
    if not argv:
        return main, []
    if argv[0] not in SELECTORS:
        raise ConfigError(f"unknown selector {argv[0]!r}; the selectors are {USAGE}.")
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
