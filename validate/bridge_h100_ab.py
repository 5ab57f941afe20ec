"""Megatron-Bridge's own A/B runs of Qwen3 30B-A3B on 16 H100 at micro-batch 1 beside the kernel
model (session 25, validate/FINDINGS.md "The MoE rows' host time: the sources searched again").

Megatron-Bridge's skill cards publish eager and TE-graphed steps of one layout with the all-to-all
dispatcher, and HybridEP steps with and without the EP overlap (validate/bridge_h100_ab.json, with
the source and what it leaves open). The pairs hold the GPU work fixed and change one thing: CUDA
graphs of the static scopes (host time), the dispatcher, the overlap. This prints each run's
published step, the kernel model's step (reports.published_runs.train_tokens, as
`python cli.py published` computes a Megatron-Bridge MoE row) and ours over published as a speed.

    PYTHONPATH=. python validate/bridge_h100_ab.py

Nothing here enters the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from reports.published_runs import other_runs_data, train_tokens

TABLE = Path(__file__).with_name("bridge_h100_ab.json")
SOURCE = "megatron-bridge-moe"


def runs() -> list[dict]:
    data = json.loads(TABLE.read_text())
    return [{**data["base"], **{k: v for k, v in run.items() if k != "published_step_s"},
             "published_step_s": run["published_step_s"]} for run in data["runs"]]


def model_step_s(run: dict) -> float:
    """The kernel model's step: the global batch's tokens over its tokens a second."""
    tokens_per_gpu = train_tokens(run, other_runs_data()["sources"][SOURCE], "kernels")
    return run["global_batch"] * run["seq_len"] / run["gpus"] / tokens_per_gpu


def main() -> int:
    print("| run | published step s | model step s | ours / published (speed) |")
    print("|---|---|---|---|")
    for run in runs():
        ours = model_step_s(run)
        print(f"| {run['id']} | {run['published_step_s']:.3f} | {ours:.3f} | {run['published_step_s'] / ours:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
