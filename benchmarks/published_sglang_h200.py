"""SGLang on H200s as DataCrunch measured it (datacrunch-research/h200-benchmarks at commit
c091ef530a525d2e788bc41c39a4450b09c9f2ad, 14 December 2024, "(ADD): sglang blogs benchmarks and CI"): the
bench_serving result lines of sglang/outputs/llama_3_3_70b_online_output.jsonl, llama_3_3_70b_offline_output.jsonl
and llama_405b_online_output.jsonl, each one run of `python3 -m sglang.bench_serving --backend sglang` as
sglang/experiments/llama_3_3_70b_sglang.sh and llama_405b_sglang.sh list them, against servers started (those
scripts' comments and sglang/experiments/docker_dev_commands.txt) from the lmsysorg/sglang:latest image as

    python3 -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct --tp-size 4 --disable-radix-cache --enable-torch-compile
    python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-405B-Instruct --tp-size 8 --disable-radix-cache --enable-torch-compile --mem-frac 0.87

("Llama 3.3 70B on 4 x H200 (bf16)", "LLaMA 405B on 8 X H200 (bf16)"). Each result line holds the run's median
TTFT and ITL (ms), output throughput (tok/s), its totals of input and output tokens and its duration. The random
rows are `--dataset-name random --random-input I --random-output O` with the default --random-range-ratio 0.0
(each length uniform from 1 to I, 0 to O: their totals are exactly numpy's draw after np.random.seed(1),
bench_serving's default seed, as RANDOM_LENGTHS reproduces them); the ShareGPT rows `--dataset-name sharegpt`.
Not used before session 41 (wt41_unseens): no table held an SGLang run on an H200, SGLang's ITL or the 405B.

Kept (chosen before any was computed), 32 figures: Llama 3.3 70B at tp 4 online (random 1024 / 1024 at 1, 2, 4, 8
and 16 req/s; ShareGPT at 4 and 8: median TTFT and median ITL), Llama 3.1 405B at tp 8 online (random at 1, 2, 4
and 8 req/s; ShareGPT at 4 and 8: median TTFT and ITL), and the 70B's six offline runs (every prompt at once:
output token throughput). Left out: the online runs' output throughputs (set by the arrival rate below
saturation), their E2E medians (one request's length decides them; the sharegpt-vllm tables feed E2E), the second
4096 / 1024 offline line (the same command run again: 1,652.86 against 1,654.99), the earlier commit's 70B
online file (65b698b: an earlier run of the same commands), sglang/README.md's ShareGPT table (its E2E column
repeats sgl-project's H100 figures digit for digit), the DeepSeek V3 table of sgl-project's
benchmark/deepseek_v3/README.md (DataCrunch's too, but with --enable-dp-attention, not modelled).

Ours since session 42 (wt42_sglang): serve's SGLang engine at v0.4.0 (`sglang_h200_options`: costmodel/serving/sglang.py,
its admission, retraction, running cap and KV pool), every other choice below as first stated. The FIRST figures
(`sglang_h200_first_options`): serve had no SGLang engine. As benchmarks/published_sglang_v030.py (whose choices these rows share, with
SGLang v0.4's defaults where they differ), serve's vllm-v0 scheduler (prefill batches alone before decodes, within
the 8,192-token chunked_prefill_size), every choice the repository leaves open in SGLANG_H200_ASSUMED, written
and committed before any figure was computed.

    python benchmarks/serve_published.py sglang-h200
"""

from __future__ import annotations

SGLANG_H200_SOURCE = ("datacrunch-research/h200-benchmarks (commit c091ef5, 2024-12-14) sglang/outputs/*.jsonl: "
                      "sglang.bench_serving --backend sglang result lines, Llama 3.3 70B at tp 4 and Llama 3.1 405B at "
                      "tp 8 on H200s, bf16, --disable-radix-cache --enable-torch-compile")
SGLANG_H200_CHUNK = 8192  # SGLang 0.4.0 server_args.py:171-175: 8192 on a GPU of over 25,000 MB (as sglang-v030)
SGLANG_H200_CONTEXT = 131072  # context_length None: Llama 3.1 / 3.3's max_position_embeddings
SGLANG_H200_SEED = 1  # bench_serving's --seed default: np.random.seed(1) before the lengths and the arrivals
# model (ours) -> the page's model, GPUs, tp, mem_fraction_static (70B at tp 4: SGLang's tp >= 4 default 0.85;
# 405B: --mem-frac 0.87 in docker_dev_commands.txt)
SERVERS = {
    "llama3.1-70b": {"published_model": "Llama 3.3 70B Instruct", "gpus": "4 x H200", "tp": 4, "memory": 0.85},
    "llama3.1-405b": {"published_model": "Llama 3.1 405B Instruct", "gpus": "8 x H200", "tp": 8, "memory": 0.87},
}
# Online runs: (model, dataset, input, output, rate req/s, prompts, published median TTFT ms, median ITL ms), the
# result lines' median_ttft_ms and median_itl_ms to two decimals; input and output None for ShareGPT.
ONLINE = [
    ("llama3.1-70b", "random", 1024, 1024, 1, 300, 85.75, 13.64),
    ("llama3.1-70b", "random", 1024, 1024, 2, 600, 87.56, 14.83),
    ("llama3.1-70b", "random", 1024, 1024, 4, 1200, 106.06, 19.42),
    ("llama3.1-70b", "random", 1024, 1024, 8, 2400, 191.41, 70.76),
    ("llama3.1-70b", "random", 1024, 1024, 16, 3200, 614.25, 179.12),
    ("llama3.1-70b", "sharegpt", None, None, 4, 1200, 68.28, 13.84),
    ("llama3.1-70b", "sharegpt", None, None, 8, 2400, 83.17, 17.67),
    ("llama3.1-405b", "random", 1024, 1024, 1, 300, 218.81, 38.78),
    ("llama3.1-405b", "random", 1024, 1024, 2, 600, 244.26, 43.30),
    ("llama3.1-405b", "random", 1024, 1024, 4, 1200, 602.14, 135.23),
    ("llama3.1-405b", "random", 1024, 1024, 8, 2400, 123718.63, 189.75),
    ("llama3.1-405b", "sharegpt", None, None, 4, 1200, 182.46, 42.32),
    ("llama3.1-405b", "sharegpt", None, None, 8, 2400, 294.73, 108.04),
]
# Offline runs of the 70B (request rate inf): (dataset, input, output, prompts, published output tok/s)
OFFLINE = [
    ("random", 1024, 1024, 3000, 4520.70), ("random", 1024, 512, 4000, 3492.29), ("random", 4096, 2048, 800, 2051.29),
    ("random", 4096, 1024, 1500, 1654.99), ("random", 256, 512, 6000, 6648.44), ("sharegpt", None, None, 2000, 3939.93),
]
# (input, output, prompts) -> the result line's total_input_tokens and total_output_tokens: what RANDOM_LENGTHS'
# draw must sum to (a test checks each)
RANDOM_TOTALS = {
    (1024, 1024, 300): (152612, 160347), (1024, 1024, 600): (308748, 308712), (1024, 1024, 1200): (615860, 607936),
    (1024, 1024, 2400): (1222995, 1218922), (1024, 1024, 3200): (1629242, 1642637),
    (1024, 1024, 3000): (1525074, 1544818), (1024, 512, 4000): (2034177, 1029594), (4096, 2048, 800): (1637669, 818620),
    (4096, 1024, 1500): (3097487, 760205), (256, 512, 6000): (777987, 1529561),
}
SGLANG_H200_ASSUMED = (
    "decided and committed before any figure was computed: the lmsysorg/sglang:latest image of 12-14 December 2024 "
    "as SGLang v0.4.0 (the result lines name no version), run as serve's vllm-v0 scheduler (prefill first, a "
    "prefill batch of whole prompts alone within a token budget, as SGLang 0.4 runs one before any decode with "
    "enable_mixed_chunk off; no prompt here passes 4,096 tokens, so none is chunked), the budget the "
    "chunked_prefill_size 8,192; the running cap SGLang's rule min(pool tokens // 2, req_to_token_pool - 1) with "
    "the pool min(max(int(pool tokens / 131,072 x 512), 2048), 4096) (as later model_runner.py copies hold it; "
    "v0.3's upper bound was 5,120; the v0.4.0 tag not read), applied to our KV pool; SGLang's conservative "
    "admission (new_token_ratio reserving future output tokens) not modelled (vllm-v0 admits by the blocks a "
    "prompt needs now and preempts); mem_fraction_static as gpu_memory_utilization (0.85 for the 70B at tp 4, "
    "SGLang's default at tp >= 4; 0.87 for the 405B, docker_dev_commands.txt's --mem-frac); Llama 3.3 70B as the "
    "llama3.1-70b preset (the same architecture), the 405B as llama3.1-405b; bf16 weights, activations and KV "
    "cache; block 16 (SGLang pages one token at a time); prefix caching off (--disable-radix-cache); no host time "
    "between steps (v0.4's overlap scheduler hides the CPU's work behind the GPU's) and no sampler priced; the "
    "attention serve's backend default flash-attn2 (SGLang ran FlashInfer); CUDA graphs the vllm-v0 engine's "
    "default (decode batches up to 256 graphed; SGLang's cuda_graph_max_bs 160, larger decode batches eager), "
    "--enable-torch-compile not priced (the same kernels); the all-reduce serve's default for the vllm engines; "
    "the H200 as the h200 preset, NVLink within the node; the random rows' lengths numpy's draw after "
    "np.random.seed(1): inputs randint(1, I + 1), then outputs randint(0, O + 1) (their sums are the result lines' "
    "totals), an output of 0 sent as 1 token; every run's arrivals np.random.exponential(1 / rate) a request from "
    "the same stream after the lengths (bench_serving's get_request; for ShareGPT, whose sampling draws from "
    "Python's random, right after the seed), the offline runs' all at 0; the ShareGPT rows the first N pairs of "
    "vLLM's ShareGPT sample (sharegpt_vllm_lengths_5000.json, as sglang-v030's: the run's own draw is not "
    "reproduced; its totals, 269,081 / 226,901 tokens for 1,200 prompts, beside the sample's 264,039 / 234,098); "
    "the medians over the finished requests (TTFT) and over every gap between two tokens of a request (ITL, "
    "bench_serving's flattened itls), the output throughput the output tokens over the span from 0 to the last "
    "token (bench_serving's duration less its warm-up)")


def random_lengths(prompt: int, output: int, prompts: int) -> tuple[list[int], list[int], object]:
    """bench_serving's random dataset at --random-range-ratio 0.0 (input randint(1, I + 1), then output
    randint(0, O + 1), numpy's global stream after np.random.seed(1)); the numpy RandomState, for the arrivals."""
    import numpy as np

    state = np.random.RandomState(SGLANG_H200_SEED)
    inputs = state.randint(1, prompt + 1, size=prompts)
    outputs = state.randint(0, output + 1, size=prompts)
    return [int(n) for n in inputs], [int(n) for n in outputs], state


def running_cap(pool_tokens: int) -> int:
    """SGLang's max_running_requests from its token pool (SGLANG_H200_ASSUMED): min(tokens // 2, pool - 1)."""
    pool_requests = min(max(int(pool_tokens / SGLANG_H200_CONTEXT * 512), 2048), 4096)
    return min(pool_tokens // 2, pool_requests - 1)


def sglang_h200_options(model: str) -> dict:
    """serve's options for the row's server since session 42 (wt42_sglang): serve's sglang scheduler at v0.4.0
    (costmodel/serving/sglang.py: its admission, retraction, running cap and KV pool, one token a block), the
    memory fraction the server's; every other choice SGLANG_H200_ASSUMED's."""
    server = SERVERS[model]
    return {"scheduler": "sglang", "engine_release": "v0.4.0", "block_size": 1, "tp": server["tp"],
            "max_batched_tokens": SGLANG_H200_CHUNK, "dtype": "bf16", "sampling": None,
            "gpu_memory_utilization": server["memory"], "prefix_caching": False}


def sglang_h200_first_options(model: str) -> dict:
    """The options the FIRST figures ran (session 41): SGLANG_H200_ASSUMED, the running cap from our own pool."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    server = SERVERS[model]
    options = {"scheduler": "vllm-v0", "tp": server["tp"], "max_batched_tokens": SGLANG_H200_CHUNK, "dtype": "bf16",
               "sampling": None, "gpu_memory_utilization": server["memory"], "prefix_caching": False}
    replica, _, _ = build_replica(costmodel.load_model(model), load_hardware("h200"), **options)
    _, blocks, block_size, _, _ = replica
    return {**options, "max_num_seqs": running_cap(blocks * block_size)}


def requests_of(dataset: str, prompt, output, prompts: int, rate: float) -> list:
    """The run's requests: lengths and arrivals as SGLANG_H200_ASSUMED states them (rate inf: all at 0)."""
    import math

    import numpy as np

    from benchmarks.published_lengths import sharegpt_lengths
    from benchmarks.serve_published import SGLANG_VLLM_LENGTHS
    from costmodel.serving.workload import Request

    if dataset == "random":
        inputs, outputs, state = random_lengths(prompt, output, prompts)
    else:
        pairs = sharegpt_lengths(SGLANG_VLLM_LENGTHS, at_least=prompts)[:prompts]
        inputs, outputs = [p for p, _ in pairs], [o for _, o in pairs]
        state = np.random.RandomState(SGLANG_H200_SEED)
    gaps = [0.0] * prompts if math.isinf(rate) else [float(state.exponential(1.0 / rate)) for _ in range(prompts)]
    arrivals = np.cumsum(gaps)
    return [Request(i, float(arrivals[i]), inputs[i], max(1, outputs[i])) for i in range(prompts)]


def sglang_h200_run(model: str, dataset: str, prompt, output, prompts: int, rate: float) -> dict:
    """Our figures of one run: median TTFT and ITL (ms) and output tokens per second over the span."""
    import numpy as np

    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.api import run_replicas
    from costmodel.serving.replica import build_replica

    replica, step, _ = build_replica(costmodel.load_model(model), load_hardware("h200"), **sglang_h200_options(model))
    rows, _, itl = run_replicas(requests_of(dataset, prompt, output, prompts, rate), replica, step, 1,
                                SGLANG_H200_CONTEXT, record=True)
    span = max(row["finish_s"] for row in rows)
    return {"ttft_ms": 1e3 * float(np.median([row["ttft_s"] for row in rows])),
            "itl_ms": 1e3 * float(np.median(itl[0])),
            "output_tokens_per_s": sum(row["output_tokens"] for row in rows) / span}


def load_name(dataset: str, prompt, output) -> str:
    return "ShareGPT" if dataset == "sharegpt" else f"random {prompt}/{output}"


def print_sglang_h200() -> None:
    """The kept rows beside ours, fed to reports/serving_published.py as "sglang-h200"."""
    from reports.serving_published import record

    print(f"\nSGLang (v0.4.0 docker) on H200s, DataCrunch's bench_serving runs. Source: {SGLANG_H200_SOURCE}\n")
    print(f"Assumed: {SGLANG_H200_ASSUMED}\n")
    print("| model (ours) | GPUs | load | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|")
    for model, dataset, prompt, output, rate, prompts, ttft, itl in ONLINE:
        server, load = SERVERS[model], load_name(dataset, prompt, output)
        ours = sglang_h200_run(model, dataset, prompt, output, prompts, rate)
        for published, metric, name in ((ttft, "ttft_ms", "median TTFT (ms)"), (itl, "itl_ms", "median ITL (ms)")):
            record("sglang-h200", f"{model} {load} {rate} req/s", name, published, ours[metric])
            print(f"| {server['published_model']} ({model}) | {server['gpus']} (tp {server['tp']}) | {load}, {rate} "
                  f"req/s, {prompts:,} prompts | {name} | {published:,.2f} | {ours[metric]:,.2f} "
                  f"| {ours[metric] / published:.2f} |")
    server = SERVERS["llama3.1-70b"]
    for dataset, prompt, output, prompts, published in OFFLINE:
        load = load_name(dataset, prompt, output)
        ours = sglang_h200_run("llama3.1-70b", dataset, prompt, output, prompts, float("inf"))["output_tokens_per_s"]
        record("sglang-h200", f"llama3.1-70b {load} offline", "output token throughput (tok/s)", published, ours)
        print(f"| {server['published_model']} (llama3.1-70b) | {server['gpus']} (tp {server['tp']}) | {load}, "
              f"{prompts:,} prompts at once | output token throughput (tok/s) | {published:,.2f} | {ours:,.2f} "
              f"| {ours / published:.2f} |")
