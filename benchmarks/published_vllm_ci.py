"""vLLM's continuous performance benchmark, its "Throughput tests" (Buildkite pipeline vllm/performance-benchmark,
as the pages search index stores two builds), not used before session 39 (wt39_unseens; published's decoding rows
took build 9515's latency tests, vllm-perf-bench-9515, and left these out for want of a stated batch):

- build 9515 (https://buildkite.com/vllm/performance-benchmark/builds/9515): H200; linked from vllm-project/vllm
  pull request #9768 "[perf bench] H200 development" (simon-mo, opened 2024-10-28: "Working benchmark here").
- build 9523 (https://buildkite.com/vllm/performance-benchmark/builds/9523, "restore other changes"): A100-SXM4-80GB.

Both pages: "Input length: randomly sample 200 prompts from ShareGPT dataset (with fixed random seed). Output
length: the corresponding output length of these 200 prompts. Batch size: dynamically determined by vllm to
achieve maximum throughput. Models: llama-3.1 8B, llama-3 70B, mixtral 8x7B. Evaluation metrics: throughput."
(Test name | GPU | Tput (req/s)). The suite's throughput-tests.json (.buildkite/nightly-benchmarks/tests, as
stored at 9ddbe88): benchmarks/benchmark_throughput.py with tensor_parallel_size 1 / 4 / 2, load_format dummy,
the ShareGPT file, num_prompts 200, backend vllm: vLLM's offline LLM engine, every request at once, requests over
the elapsed time.

The engine: vLLM's V0 engine of late October 2024 (PR #9768's branch; v0.6.3 was released on 2024-10-14, V1 came
as an opt-in in 2025). Its EngineArgs.create_engine_config (vllm/engine/arg_utils.py of that era) turns chunked
prefill on by itself for a model whose max_model_len is over 32,768 on a GPU without a sliding window: Llama 3.1
8B (131,072) runs chunked, Llama 3 70B (8,192) and Mixtral 8x7B (32,768, not over) run without it, their token
budget max(max_model_len, 2048) (SchedulerConfig without chunked prefill).

Ours: every request at 0 with its own lengths, the span to the last token, requests over it; every choice the
pages leave open in VLLM_CI_ASSUMED, written and committed before any figure was computed.

    python benchmarks/serve_published.py vllm-ci
"""

from __future__ import annotations

VLLM_CI_SOURCE = ("vLLM's continuous performance benchmark (Buildkite vllm/performance-benchmark builds 9515, H200, "
                  "and 9523, A100-SXM4-80GB, as stored in the pages index), 'Throughput tests': benchmark_throughput.py, "
                  "200 ShareGPT prompts, Tput (req/s)")
VLLM_CI_PROMPTS = 200  # "randomly sample 200 prompts from ShareGPT dataset"
VLLM_CI_RELEASE = "0.6.3"  # the V0 engine of late October 2024 (PR #9768's branch): the host-time rule's release
VLLM_CI_CHUNKED_BUDGET = 512  # V0 SchedulerConfig: max_num_batched_tokens 512 when chunked prefill is on
# The builds' rows as the pages type them: (build, GPU as typed, hardware preset, test name, preset, tp, req/s).
VLLM_CI = [
    (9515, "H200", "h200", "throughput_llama70B_tp4", "llama3-70b", 4, 9.83905),
    (9515, "H200", "h200", "throughput_llama8B_tp1", "llama3.1-8b", 1, 22.5674),
    (9515, "H200", "h200", "throughput_mixtral8x7B_tp2", "mixtral-8x7b", 2, 8.06251),
    (9523, "A100-SXM4-80GB", "a100-80gb", "throughput_llama70B_tp4", "llama3-70b", 4, 4.78859),
    (9523, "A100-SXM4-80GB", "a100-80gb", "throughput_llama8B_tp1", "llama3.1-8b", 1, 11.0567),
    (9523, "A100-SXM4-80GB", "a100-80gb", "throughput_mixtral8x7B_tp2", "mixtral-8x7b", 2, 5.2096),
]
VLLM_CI_ASSUMED = (
    "decided and committed before any figure was computed: the models as the suite's description names them "
    "(llama-3.1 8B, llama-3 70B, mixtral 8x7B: the llama3.1-8b, llama3-70b and mixtral-8x7b presets; the stored "
    "throughput-tests.json at 9ddbe88 names Meta-Llama-3-8B, an older version of the file), bf16 (the "
    "checkpoints' dtype; load_format dummy: random weights of the same shapes), the H200 as the h200 preset and "
    "the A100-SXM4-80GB as a100-80gb, NVLink; vLLM's V0 engine at its defaults: gpu_memory_utilization 0.9, "
    "max_num_seqs 256, block 16, no prefix caching (V0's default), one scheduler step a decision; Llama 3.1 8B "
    "with chunked prefill (its 131,072 context) as serve's vllm scheduler (running sequences first, then waiting "
    "prompts in chunks) at 512 tokens a step with V0's sampler and eager steps (V0 graphs only decode-only "
    "batches; with 200 requests queued most steps carry a prefill chunk; the tail's decode-only steps eager too, "
    "as lambda-vllm's v0.5.4 rows), the other two as serve's vllm-v0 scheduler (prefills first, whole prompts) at "
    "max(max_model_len, 2048) = 8,192 (Llama 3 70B) and 32,768 (Mixtral) tokens a step with decode graphs as "
    "graphs.py has V0's; vLLM V0's host time a step by the release rule for 0.6.3 (host_time.json: vllm-v0.6.0); "
    "the sampler at benchmark_throughput's SamplingParams (temperature 1.0: random); the all-reduce NCCL's "
    "(vLLM's custom all-reduce not modelled); Mixtral's experts split by tensor parallelism (no expert "
    "parallelism), a balanced load; the requests: the first 200 pairs of sharegpt_vllm_lengths.json (vLLM's "
    "sample_sharegpt_requests with the Llama 3.1 tokenizer, the filter benchmark_throughput applies too; its "
    "seed's draw is not reproduced, and Mixtral's tokenizer counts other lengths: not modelled), all at 0, each "
    "generating its completion's length (ignore_eos); the figure 200 / the span from 0 to the last token")


def vllm_ci_options(model: str, tp: int) -> dict:
    """build_replica's options for one test, as VLLM_CI_ASSUMED states them."""
    import costmodel
    from costmodel.serving.host_time import host_time_for_release

    common = {"tp": tp, "dtype": "bf16", "max_num_seqs": 256, "gpu_memory_utilization": 0.9, "sampling": "random",
              "host_time": host_time_for_release("v0", VLLM_CI_RELEASE)}
    context = costmodel.load_model(model).max_positions
    if context > 32768:  # EngineArgs.create_engine_config: chunked prefill on by itself past a 32K context
        return {**common, "scheduler": "vllm", "sampler": "vllm-v0", "max_batched_tokens": VLLM_CI_CHUNKED_BUDGET,
                "prefix_caching": False, "cuda_graphs": "off"}
    return {**common, "scheduler": "vllm-v0", "max_batched_tokens": max(context, 2048)}


def vllm_ci_throughput(model: str, hardware: str, tp: int) -> float:
    """Our requests per second for one test: the first 200 ShareGPT pairs at 0, 200 over the span."""
    from benchmarks.published_lengths import VLLM_SHAREGPT, sharegpt_lengths
    from benchmarks.published_mlperf import span_at_once
    from costmodel.serving.workload import Request

    pairs = sharegpt_lengths(VLLM_SHAREGPT, at_least=VLLM_CI_PROMPTS)[:VLLM_CI_PROMPTS]
    chosen = [Request(i, 0.0, prompt, output) for i, (prompt, output) in enumerate(pairs)]
    return VLLM_CI_PROMPTS / span_at_once(model, hardware, chosen, **vllm_ci_options(model, tp))


def print_vllm_ci() -> None:
    from reports.serving_published import record

    print(f"\nvLLM's CI throughput tests, 200 ShareGPT prompts at once. Source: {VLLM_CI_SOURCE}\n")
    print("| build | GPU | test | model (ours) | tp | published req/s | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for build, gpu, hardware, test, model, tp, published in VLLM_CI:
        ours = vllm_ci_throughput(model, hardware, tp)
        record("vllm-ci", f"{build} {gpu} {test}", "req/s", published, ours)
        print(f"| {build} | {gpu} | {test} | {model} | {tp} | {published:,.3f} | {ours:,.3f} | {ours / published:.2f} |")
