"""Lambda's vLLM benchmark report, "vLLM v0.5.4 v.s. v0.6.0" (LambdaLabsML/vllm-benchmark benchmark_v0.md at commit
0e8fc5d0f9865a326666cb82aeb2d8dc74c82c5e, "LLMs inference benchmarks, using vLLM, on Lambda Cloud", Sept. 2024):
three tables, Llama 3.1 8B at tp 1, Llama 3.1 70B at tp 4 (5,000 prompts each) and Llama 3.1 405B FP8 at tp 8
(1,280 prompts), "rps=inf", "max-num-seq=256", "max-seq-len=2048", each with three engines: vLLM v0.5.4 ("Chuncked
Prefill True", no scheduler steps), v0.6.0 without chunked prefill at --num-scheduler-steps 1 and at 10; the
figures "Output Throughput (tokens/sec)", "Median TPOT (ms)" and "Median ITL (ms)". Not used before session 28.

The runs' commands (the same repository at commit 680cc0a3f925fbf1700b8ba928c7ceebe0015986, where benchmark.sh
gained NUM_SCHEDULER_STEPS and MAX_NUM_SEQ): benchmark.sh runs the vllm/vllm-openai:$vLLM_BUILD image with
GPU_NAME "H100-80GB-SXM" by default; benchmark.py starts

    python3 -m vllm.entrypoints.openai.api_server --model M --max-model-len L --gpu-memory-utilization 0.95
        --max-num-seqs 256 --disable-log-requests [--num-scheduler-steps N --enable-chunked-prefill False]
        [--tensor-parallel-size TP]

(the bracketed flags when N > 0, and when TP > 1), then `benchmark_serving.py --backend vllm --dataset-name sharegpt
--dataset-path ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts P --endpoint /v1/completions --request-rate
inf`. cache_model.py at that commit caches meta-llama/Meta-Llama-3.1-8B-Instruct and -70B-Instruct; the 405B is
all_tasks.yaml's NousResearch/Hermes-3-Llama-3.1-405B-FP8.

Ours: every request at time 0 (the rate inf) with the ShareGPT sample's own lengths (benchmarks/
sharegpt_vllm_lengths_5000.json: vLLM's sampler at seed 0, the first P pairs), on one replica on the h100-sxm
preset; v0.6.0 as serve's vllm-v0 scheduler with its multi-step windows, v0.5.4 as a chunked-prefill scheduler
(see LAMBDA_VLLM_ASSUMED, written before any figure was computed).

    python benchmarks/serve_published.py lambda-vllm
"""

from __future__ import annotations

from pathlib import Path

LAMBDA_VLLM_SOURCE = ("LambdaLabsML/vllm-benchmark benchmark_v0.md (commit 0e8fc5d0), 'vLLM v0.5.4 v.s. v0.6.0': "
                      "rps=inf, max-num-seq=256, max-seq-len=2048, ShareGPT; benchmark.py / benchmark.sh at 680cc0a3")
LAMBDA_VLLM_LENGTHS = Path(__file__).resolve().parent / "sharegpt_vllm_lengths_5000.json"
LAMBDA_VLLM_MAX_MODEL_LEN = 2048  # "max-seq-len=2048" (--max-model-len)
LAMBDA_VLLM_MAX_NUM_SEQS = 256  # "max-num-seq=256" (--max-num-seqs)
LAMBDA_VLLM_MEMORY = 0.95  # benchmark.py's --gpu-memory-utilization default at 680cc0a3
# The engines of each table: (vLLM version, chunked prefill as the table states, scheduler steps; None: "N/A").
LAMBDA_VLLM_ENGINES = (("v0.5.4", True, None), ("v0.6.0", False, 1), ("v0.6.0", False, 10))
# One entry per table: the model, tp, prompts and, per engine in LAMBDA_VLLM_ENGINES' order, (output throughput
# tokens/s, median TPOT ms, median ITL ms) as the page types them.
LAMBDA_VLLM = [
    {"model": "llama3.1-8b", "published_model": "Llama 3.1 8B (meta-llama/Meta-Llama-3.1-8B-Instruct)", "tp": 1,
     "prompts": 5000, "weight_dtype": None,
     "rows": [(3032.04, 64.06, 48.28), (3958.40, 196.24, 179.17), (8088.35, 25.57, 243.76)]},
    {"model": "llama3.1-70b", "published_model": "Llama 3.1 70B (meta-llama/Meta-Llama-3.1-70B-Instruct)", "tp": 4,
     "prompts": 5000, "weight_dtype": None,
     "rows": [(1491.93, 125.78, 74.22), (2291.0, 102.99, 63.54), (3542.88, 61.10, 574.07)]},
    {"model": "llama3.1-405b", "published_model": "Llama 3.1 405B FP8 (NousResearch/Hermes-3-Llama-3.1-405B-FP8)",
     "tp": 8, "prompts": 1280, "weight_dtype": "fp8",
     "rows": [(1220.26, 182.72, 144.06), (1331.25, 163.52, 114.42), (1714.07, 112.20, 1036.33)]},
]
LAMBDA_VLLM_METRICS = (("output_tokens_per_s", "output throughput (tok/s)"), ("tpot_ms", "median TPOT (ms)"),
                       ("itl_ms", "median ITL (ms)"))
# The engine's host time a step by its version (costmodel/serving/host_time.json; added in session 28, after the
# figures above were first computed without it: a model term selected by the version the table names).
# host_time.json's release rules pick it: v0.5.4 -> vllm-v0.5.4, v0.6.0 -> vllm-v0.6.0 (both V0 engines).
LAMBDA_VLLM_V054_BUDGET = 512  # vLLM v0.5.4 SchedulerConfig: max_num_batched_tokens 512 when chunked prefill is on
LAMBDA_VLLM_ASSUMED = (
    "decided before any figure was computed: the GPU as the h100-sxm preset (the section names none; the report "
    "benchmarks 'NVIDIA H100-80GB-SXM and NVIDIA A100-80GB-SXM', and benchmark.sh's GPU_NAME default is "
    "H100-80GB-SXM; the v0.6.0 gains it reports are the vLLM post's H100 ones); Llama 3.1 8B and 70B as the bf16 "
    "Instruct checkpoints cache_model.py lists at 680cc0a3 (presets llama3.1-8b and llama3.1-70b, bf16 weights, "
    "activations and KV cache: --dtype and --kv-cache-dtype left at auto); the 405B as Hermes-3-Llama-3.1-405B-FP8 "
    "(all_tasks.yaml) on the llama3.1-405b preset (Hermes 3 is a Llama 3.1 405B fine-tune), its FP8 weights run "
    "W8A8 at the FP8 peak (vLLM's FP8 checkpoints on an H100: FP8 weights, activations quantized at run time), "
    "activations and KV cache bf16; the engine flags as benchmark.py passes them: max_model_len 2,048, "
    "gpu_memory_utilization 0.95, max_num_seqs 256, the table's tp on one replica; v0.6.0 (chunked prefill off "
    "by the script's flag) as serve's vllm-v0 scheduler (prefill-first, whole prompts) with its token budget "
    "max(max_model_len, 2048) = 2,048 (SchedulerConfig without chunked prefill) and num_scheduler_steps 1 or 10, "
    "its decode graphs as graphs.py has vLLM v0's; v0.5.4 with chunked prefill on as the table states (the script "
    "passes no --enable-chunked-prefill at steps 0 and v0.5.4 turns it on by itself only past a 32K context, so "
    "the table's 'True' is taken as the source's word) at v0.5.4's chunked budget of 512 tokens, as serve's vllm "
    "scheduler (running sequences first, then waiting prompts in chunks within the budget: v0.5.4's "
    "_schedule_chunked_prefill order) with prefix caching off (v0.5.4's default) and eager steps (v0.5.4 graphs "
    "only decode-only batches; with 5,000 requests queued nearly every step carries a prefill chunk; the tail's "
    "decode-only steps eager too, not modelled apart); the requests: the first 5,000 (8B, 70B) or 1,280 (405B) "
    "pairs of sharegpt_vllm_lengths_5000.json (vLLM's sample_sharegpt_requests at benchmark_serving.py's default "
    "seed 0, the Llama 3.1 tokenizer, which Hermes 3 shares), all arriving at 0 (--request-rate inf), each "
    "generating its completion's length (the dataset's, sent as max_tokens; generations that stop at their end-of-"
    "sequence token are shorter: not modelled); the figures as benchmark_serving.py computes them: output "
    "throughput = output tokens over the span from 0 to the last token; median TPOT = the median over requests "
    "of more than one output token of (e2e - TTFT) / (output - 1); median ITL = the median over every streamed "
    "chunk's gap to the previous chunk of its request, where a chunk is the tokens a request gets at one time "
    "(under multi-step scheduling the engine returns a window's tokens together, so a gap spans the window; "
    "ours: the gaps between a request's distinct token times); vLLM's host time (scheduling, sampling, the API "
    "server's streaming; the report puts v0.5.4's GPU power at ~60% against ~95% for v0.6.0 with 10 steps) not "
    "modelled")


def lambda_vllm_options(table: dict, engine: tuple) -> dict:
    """build_replica's options for one engine of one table (LAMBDA_VLLM_ENGINES' entry)."""
    from costmodel.serving.host_time import host_time_for_release

    version, chunked, steps = engine
    formats = {"dtype": "bf16", "host_time": host_time_for_release("v0", version), "sampling": "greedy"}  # benchmark_serving
    if table["weight_dtype"]:
        formats.update(weight_dtype=table["weight_dtype"], fp8_gemm="w8a8")
    common = {"tp": table["tp"], "max_num_seqs": LAMBDA_VLLM_MAX_NUM_SEQS,
              "gpu_memory_utilization": LAMBDA_VLLM_MEMORY, **formats}
    if chunked:
        return {"scheduler": "vllm", "sampler": "vllm-v0", "max_batched_tokens": LAMBDA_VLLM_V054_BUDGET, "prefix_caching": False,
                "cuda_graphs": "off", **common}
    return {"scheduler": "vllm-v0", "max_batched_tokens": max(LAMBDA_VLLM_MAX_MODEL_LEN, 2048),
            "num_scheduler_steps": steps, **common}


def chunk_gaps(token_times: list[float]) -> list[float]:
    """The gaps between a request's streamed chunks: its distinct token times, each gap to the previous one
    (tokens emitted at one time, a multi-step window's, are one chunk)."""
    times = sorted(set(token_times))
    return [b - a for a, b in zip(times, times[1:])]


def lambda_vllm_figures(table: dict, engine: tuple, pairs: list[tuple[int, int]],
                        prompts: int | None = None) -> dict:
    """Our output tokens/s, median TPOT (ms) and median ITL (ms) for one engine of one table: `prompts`
    (the table's if None) requests of the sample at 0."""
    import numpy as np

    import costmodel
    from costmodel.config import ConfigError
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica
    from costmodel.serving.engine import simulate_replicas
    from costmodel.serving.kvcache import BlockPool
    from costmodel.serving.workload import Request

    count = prompts or table["prompts"]
    if len(pairs) < count:
        raise ConfigError(f"the length file holds {len(pairs)} requests, fewer than the {count} asked for.")
    cfg = costmodel.load_model(table["model"])
    (cls, blocks, block_size, seqs, tokens), step, _ = build_replica(cfg, load_hardware("h100-sxm"),
                                                                     **lambda_vllm_options(table, engine))
    requests = [Request(i, 0.0, prompt, output) for i, (prompt, output) in enumerate(pairs[:count])]
    timeline, = simulate_replicas(requests, [cls(BlockPool(blocks, block_size), seqs, tokens)], step.seconds,
                                  LAMBDA_VLLM_MAX_MODEL_LEN, record=False, decode_run=step.decode_run,
                                  host=step.host_time)
    times = [s.token_times for s in timeline.sequences]
    span = max(t[-1] for t in times)
    tpots = [(t[-1] - t[0]) / (len(t) - 1) for t in times if len(t) > 1]
    gaps = [gap for t in times for gap in chunk_gaps(t)]
    return {"output_tokens_per_s": sum(len(t) for t in times) / span, "tpot_ms": 1e3 * float(np.median(tpots)),
            "itl_ms": 1e3 * float(np.median(gaps))}


def print_lambda_vllm(path: str | Path = LAMBDA_VLLM_LENGTHS) -> None:
    from benchmarks.published_lengths import sharegpt_lengths

    from reports.serving_published import record

    pairs = sharegpt_lengths(Path(path), at_least=max(table["prompts"] for table in LAMBDA_VLLM))
    print(f"\nLambda's vLLM v0.5.4 / v0.6.0 runs on H100, every ShareGPT prompt at once. Source: {LAMBDA_VLLM_SOURCE}\n")
    print("| model (ours) | tp | prompts | engine | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for table in LAMBDA_VLLM:
        for engine, published in zip(LAMBDA_VLLM_ENGINES, table["rows"]):
            version, chunked, steps = engine
            label = f"{version}, " + ("chunked prefill" if chunked else f"{steps} scheduler step" + "s" * (steps > 1))
            ours = lambda_vllm_figures(table, engine, pairs)
            for (metric, name), figure in zip(LAMBDA_VLLM_METRICS, published):
                record("lambda-vllm", f"{table['model']} tp {table['tp']} {label}", name, figure, ours[metric])
                print(f"| {table['published_model']} ({table['model']}) | {table['tp']} | {table['prompts']:,} "
                      f"| {label} | {name} | {figure:,.2f} | {ours[metric]:,.2f} | {ours[metric] / figure:.2f} |")
