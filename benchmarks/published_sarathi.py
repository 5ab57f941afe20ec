"""Sarathi-Serve's Table 2 (Agrawal et al., OSDI 2024; microsoft/sarathi-serve, branch
osdi-sarathi-serve, commit 02d2567, osdi-experiments/table-2/): Yi-34B-200K in fp16, tp 2 on two
A100 80GB PCIe joined by an NVLink bridge (Azure NC96ads A100 v4). runs.sh starts 8 requests at
once (1,024 prompt tokens, 16 output tokens, max_model_len 1,040, 4 sequences at most) under two
schedulers: its vLLM baseline (vLLM v0's, a token budget of 1,040) and Sarathi's (chunks of 1,024,
rolling prefills), each run twice (once with per-operation timers). The notebook keeps three
kinds of batch (a 1,024-token prefill alone; 4 decodes; 1,021 prefill tokens with 3 decodes) and
takes, over every run, the median of each kind's batch_execution_time: one engine iteration,
scheduling, the workers' Ray calls, the forward and sampling (sarathi/engine/base_llm_engine.py
step). Its op-level run also times the four projections ("linear": mlp_up_proj, mlp_down_proj,
attn_pre_proj, attn_post_proj) and the attention kernel. Ours: the same 8 requests through the
simulator with the vllm-v0 and sarathi schedulers, the same budgets, tp 2, fp16, on yi-34b-200k
and a100-pcie; each kind's median step over both runs, and the GEMM seconds of the projection
leaves at that batch's token count (KernelStepTime.gemm_seconds_by_leaf).

Printed by `python benchmarks/serve_published.py` (every table) as a Markdown table.
"""

from __future__ import annotations

from costmodel.serving.replica import build_replica
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.workload import Request


SARATHI_SOURCE = ("microsoft/sarathi-serve, branch osdi-sarathi-serve (commit 02d2567), osdi-experiments/table-2/"
                  "results.csv (the medians), runs.sh (the setup), decode_maximal_vs_naive_batching.ipynb (_filter_df)")
# runs.sh: 01-ai/Yi-34B-200K, tp 2, 8 requests at once of 1,024 + 16 tokens, max_model_len 1,040, max_batch_size 4;
# benchmark_runner.py: dtype float16; default.yml: gpu_memory_utilization 0.85. Runs: (scheduler, token budget).
SARATHI = {"model": "yi-34b-200k", "hardware": "a100-pcie", "tp": 2, "dtype": "fp16", "requests": 8, "prompt": 1024,
           "output": 16, "max_model_len": 1040, "max_num_seqs": 4, "gpu_memory_utilization": 0.85,
           "runs": (("vllm-v0", 1040), ("sarathi", 1024))}
# The engine's host time a step (costmodel/serving/host_time.json "sarathi-serve": Vidur's CPU-overhead profile of
# Sarathi-Serve's engine on A100s, CodeLlama-34B at tp 2; both runs are that engine's step, serial with the GPU).
SARATHI_HOST_TIME = "sarathi-serve"
# results.csv, per kind of batch (prefill tokens, decode tokens, sequences): milliseconds of the median
# batch_execution_time, of the four projections ("linear") and of the attention kernel.
SARATHI_BATCHES = {
    (1024, 0, 1): (217.2359591349959, 160.9267194569111, 13.67039993405342),
    (0, 4, 4): (68.12209542840715, 25.50041586626321, 2.9952000081539154),
    (1021, 3, 4): (217.6498775370419, 158.9964799284935, 3.9936000108718868),
}
PROJECTIONS = ("decoder.layer.self_attention.qkv", "decoder.layer.self_attention.out", "decoder.layer.ffn.mlp")


def batch_kinds(timeline, prompt: int) -> list[tuple[tuple[int, int, int], float]]:
    """Each step of a run as Sarathi-Serve's batch metrics count it: (prefill tokens, decode
    tokens, sequences) and its seconds. A token is a prefill token while its sequence has not
    computed its prompt (no step may preempt: a recomputed prompt would count as decode here)."""
    computed: dict[int, int] = {}
    kinds = []
    for step in timeline.steps:
        if step.preempted:
            raise RuntimeError("a step preempted a sequence; its batch cannot be classified as Sarathi-Serve's")
        prefill = decode = 0
        for request, tokens in step.entries:
            done = computed.get(request, 0)
            prefill += min(tokens, max(0, prompt - done))
            decode += tokens - min(tokens, max(0, prompt - done))
            computed[request] = done + tokens
        kinds.append(((prefill, decode, len(step.entries)), step.seconds))
    return kinds


def sarathi_run(scheduler: str, budget: int):
    """Our run of Table 2's setup under one of its schedulers: its steps' kinds and the step model.
    Both run on Sarathi-Serve's engine (its vLLM baseline is its own vllm_scheduler.py), which has
    no CUDA graphs (costmodel/serving/graphs.py): eager, whatever vLLM v0 itself does."""
    import costmodel
    from costmodel.hardware import load_hardware

    cfg = costmodel.load_model(SARATHI["model"])
    replica, step, _ = build_replica(cfg, load_hardware(SARATHI["hardware"]), scheduler=scheduler,
                                     max_num_seqs=SARATHI["max_num_seqs"], max_batched_tokens=budget, tp=SARATHI["tp"],
                                     dtype=SARATHI["dtype"], gpu_memory_utilization=SARATHI["gpu_memory_utilization"],
                                     cuda_graphs="off", all_reduce="nccl",  # assumed: Sarathi-Serve forks a 2023 vLLM, before
                                     host_time=SARATHI_HOST_TIME)  # its custom all-reduce (v0.3.0): NCCL's
    # all-reduces (collectives.engine_all_reduce); its engine's host parts a step, Vidur's profile of it (host_time.json)
    cls, blocks, block_size, seqs, tokens = replica
    requests = [Request(i, 0.0, SARATHI["prompt"], SARATHI["output"]) for i in range(SARATHI["requests"])]
    timeline = simulate(requests, cls(BlockPool(blocks, block_size), seqs, tokens), step.seconds,
                        SARATHI["max_model_len"], host=step.host_time)  # the engine's host parts on each step
    return batch_kinds(timeline, SARATHI["prompt"]), step


def sarathi_rows() -> list[dict]:
    """Per published kind of batch: how many of our steps are of that kind (both runs), our median
    step in ms, and our projections' GEMMs at its token count in ms, beside the published figures."""
    import statistics

    kinds, step = [], None
    for scheduler, budget in SARATHI["runs"]:
        run, step = sarathi_run(scheduler, budget)
        kinds += run
    rows = []
    for kind, (published, linear, attention) in SARATHI_BATCHES.items():
        ours = [seconds for k, seconds in kinds if k == kind]
        gemms = step.gemm_seconds_by_leaf(kind[0] + kind[1])
        rows.append({"kind": kind, "steps": len(ours), "published_ms": published,
                     "ours_ms": 1e3 * statistics.median(ours) if ours else float("nan"),
                     "published_linear_ms": linear, "ours_linear_ms": 1e3 * sum(gemms[p] for p in PROJECTIONS),
                     "published_attention_ms": attention})
    return rows


def print_sarathi() -> None:
    from reports.serving_published import record

    print(f"\nSarathi-Serve Table 2, Yi-34B-200K fp16, tp 2 on 2 x A100 80GB PCIe. Source: {SARATHI_SOURCE}\n")
    print("| batch: prefill + decode tokens (sequences) | our steps of that kind | published (ms) | ours (ms) "
          "| ours / published | published linear (ms) | ours linear (ms) | ours / published | published attention (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in sarathi_rows():
        prefill, decode, sequences = row["kind"]
        record("sarathi", f"{prefill} + {decode} ({sequences})", "median step ms", row["published_ms"], row["ours_ms"])
        print(f"| {prefill} + {decode} ({sequences}) | {row['steps']} | {row['published_ms']:.1f} | {row['ours_ms']:.1f} "
              f"| {row['ours_ms'] / row['published_ms']:.2f} | {row['published_linear_ms']:.1f} "
              f"| {row['ours_linear_ms']:.1f} | {row['ours_linear_ms'] / row['published_linear_ms']:.2f} "
              f"| {row['published_attention_ms']:.1f} |")
