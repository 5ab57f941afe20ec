"""LMDeploy's "Request Throughput Benchmark" on A100 (InternLM/lmdeploy docs/en/benchmark/a100_fp16.md at commit
3e391df4673326f79363eebe030876861a9b7090: "All the following results are tested on (x8) A100-80G CUDA 11.8", "The
tested lmdeploy version is `v0.1.0a1`"): TurboMind serving 3,000 ShareGPT prompts to `batch` client threads in a
closed loop, Llama 2 7B and 13B at tp 1 and 70B at tp 4; the columns PRS (requests per second), PRM, FTL(ave / min /
max) in s, throughput(out tok/s) and throughput(total tok/s). The same page's static tables are the lmdeploy table
(benchmarks/published_lmdeploy.py, whose section left this one out for want of its length sample); not used before
session 38 (wt38_unseens).

The runs (benchmark/benchmark_7b.sh as stored, the same engine settings the lmdeploy table reads: max_batch_size
128 or 256, cache_max_entry_count 1000 / 500 / 4000 blocks, max_context_token_num 4) call

    python3 profile_throughput.py ShareGPT_V3_unfiltered_cleaned_split.json $model --concurrency $batch --num_prompts 3000

three times per batch. profile_throughput.py of that era (the stored copy that prints "PPS (request per second)"):
sample_requests keeps ShareGPT's first two turns, drops prompts or completions under 4 tokens, prompts over 1,024
and pairs over 2,048 (Llama 2's tokenizer), then random.sample(3000) unseeded; `concurrency` threads pull requests
from one queue, each stream_infer(request_output_len = the completion's length, ignore_eos=True, temperature 1.0);
rps = 3000 / the wall time, the out throughput = the generated tokens / the wall time. Its first-token latency is
`timestamps[1] - timestamps[0]` of a list each thread starts at its own start and never clears, so every request of
a thread reports the thread's first request's first token: FTL(ave) is the mean first-token latency of the burst of
`batch` requests sent at time 0.

Ours: `serve` in a closed loop (the row's batch as clients, 3,000 requests) with the lmdeploy table's engine options
(vllm-v0 standing for TurboMind v0.1's loop, the scripts' blocks, block size, batch cap and token budget, fp16, no
CUDA graphs); each request at the row's own mean lengths, fixed (no sample of lmdeploy's draw exists; the page's
columns give the means: out tok/s / PRS generated tokens, (total - out) tok/s / PRS prompt tokens); ours PRS =
3,000 / the span to the last token, and FTL(ave) = the mean TTFT of the requests that arrive at 0. Every choice the
page leaves open is in LMDEPLOY_RPM_ASSUMED, written and committed before any figure was computed.

    python benchmarks/serve_published.py lmdeploy-rpm
"""

from __future__ import annotations

LMDEPLOY_RPM_SOURCE = ("InternLM/lmdeploy docs/en/benchmark/a100_fp16.md (commit 3e391df), 'Request Throughput "
                       "Benchmark', lmdeploy v0.1.0a1 (TurboMind), A100-80G, 3,000 ShareGPT prompts, closed loop")
LMDEPLOY_RPM_PROMPTS = 3000  # "num_prompts 3000"
# One entry per row as the page types it: (model, batch, tp, PRS, PRM, FTL ave s, FTL min s, FTL max s, out tok/s,
# total tok/s). internlm-20b's two rows are left out (no preset here).
LMDEPLOY_RPM = [
    ("llama2-7b", 64, 1, 10.275, 616.477, 0.092, 0.036, 1.145, 2562.435, 5283.547),
    ("llama2-7b", 128, 1, 12.611, 756.677, 0.205, 0.056, 2.241, 3210.281, 6619.357),
    ("llama2-13b", 64, 1, 6.337, 380.244, 0.159, 0.051, 2.048, 1474.786, 3039.398),
    ("llama2-13b", 128, 1, 7.588, 455.273, 0.412, 0.085, 4.445, 1765.788, 3639.128),
    ("llama2-70b", 64, 4, 4.285, 257.08, 0.301, 0.083, 4.689, 1000.376, 2062.7),
    ("llama2-70b", 128, 4, 5.833, 349.996, 0.633, 0.107, 8.431, 1361.939, 2808.216),
    ("llama2-70b", 256, 4, 6.568, 394.108, 1.49, 0.171, 19.52, 1533.592, 3162.15),
]
LMDEPLOY_RPM_ASSUMED = (
    "decided and committed before any figure was computed: the engine as the lmdeploy table's (lmdeploy_options: "
    "serve's vllm-v0 scheduler for TurboMind v0.1's loop, max_batch_size as the sequence cap, 16,384 prompt tokens a "
    "step, blocks of 128 tokens, the scripts' block counts, fp16, no CUDA graphs, no sampler priced) on the "
    "a100-80gb preset (the SXM board); each request at the row's mean lengths, fixed and rounded to whole tokens: "
    "prompt (total - out) / PRS, output out / PRS (ShareGPT's spread of lengths, drawn by lmdeploy unseeded with "
    "Llama 2's tokenizer, is not reproduced: its pairs differ from every stored sample); so ours / published is the "
    "same for PRS and out tok/s, and PRS alone is fed, with FTL(ave); the row as one of the script's three runs "
    "(which one, or a mean, not stated); the closed loop's clients as serve --concurrency (each client's next "
    "request sent when its previous one ends, no think time; the threads' Python streaming and detokenizing not "
    "priced); FTL(ave) as the mean time to the first token of the `batch` requests sent at 0 (the script's "
    "never-cleared timestamps, above); exactly the output length generated (ignore_eos); the 70B's all-reduce "
    "NCCL's curve")


def lmdeploy_rpm_lengths(row: tuple) -> tuple[int, int]:
    """The row's mean (prompt, output) tokens a request from its own columns: (total - out) / PRS, out / PRS."""
    _, _, _, rps, _, _, _, _, out, total = row
    return round((total - out) / rps), round(out / rps)


def lmdeploy_rpm_run(row: tuple) -> dict:
    """Ours for one row: requests per second and the mean TTFT (s) of the requests sent at 0."""
    from benchmarks.published_lmdeploy import LMDEPLOY, lmdeploy_options
    from costmodel.serving.api import serve

    model, batch, tp = row[0], row[1], row[2]
    table = next(t for t in LMDEPLOY if t["model"] == model)
    prompt, output = lmdeploy_rpm_lengths(row)
    # the row's own tp column (the page's), not its model's static table's: the same today (1, 1, 4)
    options = {**lmdeploy_options(table), "tp": tp}
    run = serve(model, "a100-80gb", requests=LMDEPLOY_RPM_PROMPTS, concurrency=batch, prompt=str(prompt),
                output=str(output), seed=0, **options)
    requests = run.requests
    return {"rps": float(len(requests) / requests["finish_s"].max()),
            "ftl_ave_s": float(requests.loc[requests["arrival_s"] == 0.0, "ttft_s"].mean())}


def print_lmdeploy_rpm() -> None:
    from reports.serving_published import record

    print(f"\nLMDeploy's request throughput benchmark, closed loop. Source: {LMDEPLOY_RPM_SOURCE}\n")
    print("| model | tp | batch (clients) | prompt / output (row means) | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for row in LMDEPLOY_RPM:
        model, batch, tp, rps, _, ftl, *_ = row
        prompt, output = lmdeploy_rpm_lengths(row)
        ours = lmdeploy_rpm_run(row)
        for published, key, name in ((rps, "rps", "requests per second (PRS)"), (ftl, "ftl_ave_s", "FTL ave (s)")):
            record("lmdeploy-rpm", f"{model} batch {batch}", name, published, ours[key])
            print(f"| {model} | {tp} | {batch} | {prompt} / {output} | {name} | {published:,.3f} | {ours[key]:,.3f} "
                  f"| {ours[key] / published:.2f} |")
