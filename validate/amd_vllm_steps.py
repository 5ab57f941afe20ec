"""Where the kernel model's time goes in AMD's vLLM throughput rows on 8 MI300X (session 34, wt34_amdserve;
benchmarks/published_amd_vllm_throughput.py, docs/serving.md "AMD's vLLM throughput table"): one rank's decode
step at a row's max_num_seqs and a context, split into the weight GEMMs (FP8 W8A8 at AMD's measured MAF), the
all-reduces (RCCL's curve), the attention's cache reads (with the bandwidth they imply), and the rest (pointwise
kernels, launches); and one prefill step of the page's 131,072-token budget the same way. Diagnostics of where a
missing cost would have to sit, never a figure the model reads; nothing here is fitted.

    PYTHONPATH=. python validate/amd_vllm_steps.py                     # the four shapes' steps, both models
    PYTHONPATH=. python validate/amd_vllm_steps.py llama3.1-70b 1500 3072
"""

from __future__ import annotations

import sys
from typing import Any

#: (model, sequences, context) of a decode step at each row's batch and mid-generation context, and the
#: latency table's batch 32 and 128 at 128 + 1,024 keys (docs/serving.md, the page's latency rows).
STEPS = (("llama3.1-70b", 1500, 3072), ("llama3.1-70b", 3200, 1152), ("llama3.1-70b", 128, 1152),
         ("llama3.1-70b", 32, 1152), ("llama3.1-405b", 500, 3072), ("llama3.1-405b", 1500, 1152),
         ("llama3.1-405b", 128, 1152), ("llama3.1-405b", 32, 1152))


def rank_step(model: str, sequences: int) -> Any:
    """The KernelStepTime of one replica of the page's engine (amd_vllm_options) at `sequences` seqs."""
    import costmodel
    from benchmarks.published_amd_vllm_throughput import amd_vllm_options
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    _, step, setup = build_replica(costmodel.load_model(model), load_hardware("mi300x"), **amd_vllm_options(sequences))
    return step, setup


def step_split(model: str, sequences: int, context: int, query: int = 1) -> dict[str, Any]:
    """Milliseconds of one step of `sequences` sequences of `query` tokens against `context` keys each, by part."""
    import numpy as np

    step, setup = rank_step(model, sequences)
    q = np.full(sequences, query, dtype=np.int64)
    c = np.full(sequences, context, dtype=np.int64)
    plan = step.graphs.plan(q, c)
    tokens = int(q.sum())
    total = step.seconds(q, c)
    gemms = sum(step.gemm_seconds_by_leaf(tokens).values())
    comm = step.communication_seconds(tokens)
    attention = step.context_seconds(q, c)
    cost = getattr(step, "cost", None)  # the engine's sampler after the LM head (costmodel/serving/sampler.py)
    sampler = cost.seconds(sequences) if cost is not None else 0.0
    kv_bytes = sequences * context * setup["kv_cache"]["kv_bytes_per_token"]  # the replica's cache sizing, one rank
    return {"model": model, "sequences": sequences, "context": context, "query": query,
            "graphed": plan is not None, "ms": 1e3 * total, "gemm_ms": 1e3 * gemms, "allreduce_ms": 1e3 * comm,
            "attention_ms": 1e3 * attention, "sampler_ms": 1e3 * sampler,
            "rest_ms": 1e3 * (total - gemms - comm - attention - sampler),
            "kv_gb": kv_bytes / 1e9, "kv_tb_per_s": kv_bytes / attention / 1e12 if query == 1 else None}


def show(split: dict[str, Any]) -> str:
    """One line of a split."""
    bandwidth = f", cache read at {split['kv_tb_per_s']:.2f} TB/s" if split["kv_tb_per_s"] else ""
    return (f"{split['model']} {split['sequences']:,} x ({split['query']} query, {split['context']:,} keys)"
            f"{' graphed' if split['graphed'] else ' eager'}: {split['ms']:.2f} ms = GEMMs {split['gemm_ms']:.2f}"
            f" + all-reduces {split['allreduce_ms']:.2f} + attention {split['attention_ms']:.2f}"
            f" ({split['kv_gb']:.1f} GB of cache{bandwidth}) + sampler {split['sampler_ms']:.2f} + rest {split['rest_ms']:.2f}")


def main(argv: list[str]) -> int:
    """Print the splits asked for (MODEL SEQUENCES CONTEXT), else STEPS and a 64-prompt prefill step."""
    usage = "usage: python validate/amd_vllm_steps.py [MODEL SEQUENCES CONTEXT] (SEQUENCES, CONTEXT whole numbers >= 1)"
    if argv and (len(argv) != 3 or not all(a.isdigit() and int(a) >= 1 for a in argv[1:])):
        print(usage, file=sys.stderr)
        return 2
    if argv:
        import costmodel
        from costmodel.errors import ConfigError

        try:
            costmodel.load_model(argv[0])
        except ConfigError:
            print(f"unknown model {argv[0]!r} (python cli.py models lists them)", file=sys.stderr)
            return 2
    steps = [(argv[0], int(argv[1]), int(argv[2]))] if argv else STEPS
    for model, sequences, context in steps:
        print(show(step_split(model, sequences, context)))
    if not argv:
        for model in ("llama3.1-70b", "llama3.1-405b"):  # 64 whole 2,048-token prompts: the 131,072-token budget
            print("prefill " + show(step_split(model, 64, 2048, query=2048)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
