"""A digest of serve()'s per-request and per-step results over many settings: run it before and
after a change to the event loop (engine.py, the schedulers) and compare the lines, which must be
equal (the simulator's schedules are exact, so a speed-up must not move one float bit).

    python benchmarks/serve_digest.py > before.txt   # then after the change: diff
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SETTINGS = [  # (label, serve keyword arguments)
    ("vllm", dict(rate=20.0, requests=120, prompt="uniform:64:700", output="uniform:1:200", scheduler="vllm")),
    ("vllm 1024 inf", dict(rate=float("inf"), requests=300, prompt="512", output="128", scheduler="vllm")),
    ("vllm no-chunk", dict(rate=15.0, requests=80, prompt="uniform:64:700", output="uniform:1:90", scheduler="vllm",
                           max_batched_tokens=1024)),
    ("vllm small cache", dict(rate=40.0, requests=120, prompt="uniform:200:900", output="uniform:20:300", scheduler="vllm",
                              num_blocks=220, max_batched_tokens=512)),
    ("vllm prefix", dict(rate=30.0, requests=100, prompt="uniform:300:600", output="uniform:5:80", scheduler="vllm",
                         prefix_caching=True)),
    ("sarathi", dict(rate=25.0, requests=120, prompt="uniform:64:700", output="uniform:1:200", scheduler="sarathi")),
    ("sarathi small cache", dict(rate=40.0, requests=100, prompt="uniform:200:900", output="uniform:20:300", scheduler="sarathi",
                                 num_blocks=220)),
    ("orca", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", scheduler="orca")),
    ("static", dict(rate=20.0, requests=60, prompt="uniform:64:700", output="uniform:1:100", scheduler="static")),
    ("hf-fifo", dict(rate=20.0, requests=60, prompt="uniform:64:400", output="uniform:1:100", scheduler="hf-fifo",
                     num_blocks=120, max_batched_tokens=256)),
    ("hf-prefill-first", dict(rate=20.0, requests=60, prompt="uniform:64:400", output="uniform:1:100",
                              scheduler="hf-prefill-first", num_blocks=120, max_batched_tokens=256)),
    ("vllm-v0 multi-step", dict(rate=20.0, requests=80, prompt="uniform:64:700", output="uniform:1:100", scheduler="vllm-v0",
                                num_scheduler_steps=8)),
    ("concurrency", dict(requests=150, concurrency=32, prompt="uniform:64:700", output="uniform:1:200", scheduler="vllm")),
    ("concurrency 2 replicas", dict(requests=150, concurrency=40, prompt="uniform:64:700", output="uniform:1:200",
                                    scheduler="vllm", replicas=2)),
    ("2 replicas least", dict(rate=30.0, requests=150, prompt="uniform:64:700", output="uniform:1:200", replicas=2,
                              router="least-outstanding")),
    ("disaggregate", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", disaggregate=(1, 2))),
    ("tp 2", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", tp=2, model="llama3-70b")),
    ("pp 2", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", tp=2, pp=2, model="llama3-70b")),
    ("mixtral", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", tp=2,
                     model="mixtral-8x7b")),
    ("mistral int4", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200",
                          weight_dtype="int4", model="mistral-7b")),
    ("kv fp8 sdpa", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", kv_dtype="fp8",
                         attention="sdpa")),
    ("mla (deepseek-v2-lite)", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200",
                                    model="deepseek-v2-lite")),
    ("roofline", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200",
                      time_model="roofline")),
    ("graphs off", dict(rate=20.0, requests=100, prompt="uniform:64:700", output="uniform:1:200", cuda_graphs="off")),
    ("vllm-v0 long", dict(rate=5.0, requests=40, prompt="uniform:6000:8100", output="uniform:50:300",
                          scheduler="vllm-v0", max_batched_tokens=16384, model="llama3.1-8b")),
    ("vllm full seqs small cache", dict(rate=50.0, requests=200, prompt="uniform:64:700", output="uniform:1:300",
                                        max_num_seqs=16, num_blocks=300)),
    ("sarathi full seqs small cache", dict(rate=50.0, requests=200, prompt="uniform:64:700",
                                           output="uniform:1:300", scheduler="sarathi", max_num_seqs=16,
                                           num_blocks=300)),
    ("vllm prefix trace", dict(trace="prefixes", prefix_caching=True)),
    ("vllm prefix trace full seqs", dict(trace="prefixes", prefix_caching=True, max_num_seqs=8)),
    ("vllm prefix trace small cache", dict(trace="prefixes", prefix_caching=True, num_blocks=200,
                                           max_batched_tokens=512)),
    ("vllm full seqs", dict(rate=50.0, requests=200, prompt="uniform:64:700", output="uniform:1:200",
                            max_num_seqs=16)),
    ("sarathi full seqs", dict(rate=50.0, requests=200, prompt="uniform:64:700", output="uniform:1:200",
                               scheduler="sarathi", max_num_seqs=16)),
    ("orca full seqs", dict(rate=50.0, requests=200, prompt="uniform:64:700", output="uniform:1:200",
                            scheduler="orca", max_num_seqs=16)),
    ("sliding (gemma2)", dict(rate=10.0, requests=60, prompt="uniform:64:5000", output="uniform:1:100", model="gemma2-9b")),
]


def prefix_trace() -> str:
    """A trace of requests in 3 prefix groups (the prompt's first 256-448 tokens shared), written
    to a temporary file: Poisson requests share no prefix."""
    import json
    import random
    import tempfile

    rng, lines, clock = random.Random(5), [], 0.0
    for i in range(150):
        clock += rng.expovariate(40.0)
        group = i % 3
        lines.append(json.dumps({"arrival": clock, "prompt_tokens": rng.randint(460, 900),
                                 "output_tokens": rng.randint(5, 160), "prefix": f"p{group}",
                                 "prefix_tokens": 256 + 96 * group}))
    handle = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    handle.write("\n".join(lines))
    handle.close()
    return handle.name


def digest(label: str, options: dict) -> str:
    import costmodel.serving

    options = dict(options)
    if options.get("trace") == "prefixes":
        options["trace"] = prefix_trace()
    model = options.pop("model", "llama3-8b")
    run = costmodel.serving.serve(model, "h100-sxm", seed=3, **options)
    text = run.requests.to_csv(float_format="%r") + run.steps.to_csv(float_format="%r") + repr(list(run.itl))
    preempted = int(run.requests["preemptions"].sum()) if "preemptions" in run.requests else -1
    return f"{label}: {len(run.requests)} requests, {len(run.steps)} steps, {preempted} preemptions, " \
           f"{hashlib.sha256(text.encode()).hexdigest()[:20]}"


def plan_digest() -> str:
    """A small plan --serve search in one process (its simulations keep no step records)."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.capacity import Target, plan_capacity

    result = plan_capacity(costmodel.load_model("llama3-70b"), [load_hardware("h100-sxm"), load_hardware("a100-80gb")],
                           Target(10.0, 2.0, 0.06, requests=120, output="uniform:1:200", prompt="uniform:64:900"),
                           tps=[2, 4], max_num_seqs=[32, 256], max_batched_tokens=[256, 2048], processes=1)
    return f"plan: {len(result['feasible'])} feasible, {hashlib.sha256(repr(result).encode()).hexdigest()[:20]}"


if __name__ == "__main__":
    print(plan_digest(), flush=True)
    for label, options in SETTINGS:
        try:
            print(digest(label, options), flush=True)
        except Exception as error:  # a setting this build rejects is a line too
            print(f"{label}: error {type(error).__name__}: {error}", flush=True)
