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
    ("sliding (gemma2)", dict(rate=10.0, requests=60, prompt="uniform:64:5000", output="uniform:1:100", model="gemma2-9b")),
]


def digest(label: str, options: dict) -> str:
    import costmodel.serving

    options = dict(options)
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
