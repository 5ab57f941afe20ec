"""MLPerf Inference Llama-2-70B (closed division), Offline and Server: the LoadGen summaries' figures
(benchmarks/published_mlperf.json) beside our runs, printed by `python benchmarks/serve_published.py mlperf`
(and with every table). Also span_at_once, the span of requests all arriving at 0, which the vLLM post's,
trtllm-bench's and Krai's MLPerf rows use too.

The tables: MLPerf Inference Llama-2-70B (closed division), Offline and Server scenarios, from
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
"""

from __future__ import annotations

import json
from pathlib import Path

from costmodel.config import ConfigError
from costmodel.serving.replica import build_replica
from costmodel.serving.workload import Lengths, Request
from benchmarks.published_lengths import MLPERF_LENGTHS, mlperf_input_lengths
from benchmarks.published_mlperf_vllm import loadgen_server_figures, server_rows
from reports.serving_published import record

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
            "max_batched_tokens": system["max_batched_tokens"], "cuda_graphs": cuda_graphs,
            "all_reduce": "nccl"}  # TensorRT-LLM's own custom all-reduce is not modelled (nccl_facts.json custom_all_reduce)


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
