"""What Megatron-LM's per-step extras cost on the megatron-ci-* rows, beside the excess the kernel model leaves.

validate/megatron_step_extras.json lists what one training step of Megatron-LM's GPT functional tests issues
besides the model's layers (read at the commit that recorded the golden values). This prices each collective
with the model's own collective time (costmodel.collectives.collective_seconds, the measured NCCL curves: the
smallest measured call is the floor) and each micro-batch's host time in the sync windows those call sites make
(layout/host_syncs.exposed_seconds at the hardware's host_module_call_s, the calls of a dense layer counted in
kernel_facts.json 'megatron_host_calls'), and prints them beside each row's published step and the model's.
Nothing here changes the model: it measures how much of the excess the counted, sourced items explain.

    PYTHONPATH=. python validate/small_step_floor.py            # every megatron-ci 12 x 512 row
    PYTHONPATH=. python validate/small_step_floor.py --row ID   # one row
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from costmodel.collectives import collective_seconds
from costmodel.hardware import load_hardware
from costmodel.layout.host_syncs import block_calls, exposed_seconds

EXTRAS_FILE = Path(__file__).resolve().parent / "megatron_step_extras.json"
#: the sources whose rows are the CI's 12 x 512 functional tests
SOURCES = ("megatron-ci-unfused", "megatron-ci-cp2", "megatron-ci-fusedce")
#: a broadcast is priced on the all-gather's curve (a ring broadcast pipelines the buffer around the ring:
#: nccl-tests' broadcast busbw is its algbw, the all-gather's busbw moves (n-1)/n of the buffer a rank)
PRICED_AS = {"broadcast": "all_gather", "all_reduce": "all_reduce"}


def extras() -> dict[str, Any]:
    return json.loads(EXTRAS_FILE.read_text(encoding="utf-8"))


def group_ranks(group: str, run: dict[str, Any]) -> tuple[int, int]:
    """(ranks, span) of a process group in Megatron's default order (tp, cp, ep, dp, pp: tp innermost)."""
    tp, pp, cp, dp = run["tp"], run["pp"], run.get("cp", 1), run["dp"]
    return {"tp": (tp, tp), "dp": (dp * cp, tp * cp * dp), "mp": (tp * pp, run["gpus"]),
            "world": (run["gpus"], run["gpus"])}[group]


def broadcast_bytes(call: dict[str, Any], tensors: list[str], run: dict[str, Any]) -> list[float]:
    tokens = run["micro_batch"] * run["seq_len"]
    sizes = []
    for name in tensors:
        if name == "attention_mask":
            sizes.append(run["micro_batch"] * run["seq_len"] ** 2)
        elif name == "count":
            sizes.append(call["count_bytes"])
        else:
            sizes.append(call["bytes_per_token"][name] * tokens)
    return sizes


def stage_tensors(call: dict[str, Any], run: dict[str, Any], stage: str) -> list[str]:
    if run["pp"] == 1:
        return call["tensors_pp1"]
    return call["tensors_first"] if stage == "first" else call["tensors_last"] if stage == "last" else []


def runs(call: dict[str, Any], run: dict[str, Any], stage: str) -> bool:
    when = call["when"]
    return (when == "always" or (when == "tp>1" and run["tp"] > 1)
            or (when == "pp_last" and (run["pp"] == 1 or stage == "last"))
            or (when == "pp_first" and (run["pp"] == 1 or stage == "first")))


def extras_seconds(run: dict[str, Any], stage: str = "last") -> dict[str, float]:
    """The seconds of the counted collectives one rank of `stage` ('first', 'last', 'middle') issues a
    step, and the counts: {'collectives', 'seconds', 'syncs'}."""
    hardware = load_hardware(run["hardware"])
    microbatches = run["global_batch"] // (run["micro_batch"] * run["dp"])
    seconds = 0.0
    collectives = syncs = 0
    for call in extras()["calls"]:
        if not runs(call, run, stage):
            continue
        repeat = (microbatches if call["per"] == "microbatch" else 1) * call.get("calls", 1)
        if call["kind"] == "sync":
            syncs += repeat
            continue
        syncs += repeat if call.get("sync") else 0  # the .item() runs whatever the group's size
        ranks, span = group_ranks(call["group"], run)
        if ranks <= 1:
            continue
        payloads = (broadcast_bytes(call, stage_tensors(call, run, stage), run) if call["kind"] == "broadcast"
                    else [call["bytes"]])
        for payload in payloads:
            seconds += repeat * collective_seconds(hardware, PRICED_AS[call["kind"]], payload, ranks, span)
            collectives += repeat
    return {"collectives": collectives, "seconds": seconds, "syncs": syncs}


def host_window_seconds(run: dict[str, Any], gpu_per_microbatch: float) -> dict[str, float]:
    """One micro-batch's host time (a dense layer's counted calls x the hardware's host_module_call_s, the
    stage's layers) and what of it the per-micro-batch syncs expose past the GPU's time."""
    hardware = load_hardware(run["hardware"])
    layers = run["config_changes"]["n_decoder_layers"] // run["pp"]
    forward = backward = 0
    for block in ("attention", "dense_mlp"):
        f, b = block_calls(block, 0, False, False)
        forward, backward = forward + f * layers, backward + b * layers
    per_call = hardware.host_module_call_s
    if per_call is None:  # the hardware file states no module call's host time
        return {"calls": forward + backward, "host": None, "exposed": None}
    host_f, host_b = forward * per_call, backward * per_call
    return {"calls": forward + backward, "host": host_f + host_b,
            "exposed": exposed_seconds(host_f, host_b, gpu_per_microbatch)}


def ci_rows() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    return [(run, data["sources"][run["id"].split()[0]]) for run in data["runs"]
            if run["id"].split()[0] in SOURCES]


def report(run: dict[str, Any], source: dict[str, Any]) -> str:
    from reports.published_runs import train_step

    step, _ = train_step(run, source, "kernels")
    ours = step["seconds"]
    published = run["published_seconds_per_step"]
    microbatches = run["global_batch"] // (run["micro_batch"] * run["dp"])
    counted = max((extras_seconds(run, stage) for stage in ("first", "last")), key=lambda part: part["seconds"])
    gpu = ours / microbatches  # the model's step over its micro-batches: a micro-batch's GPU time, communication in
    window = host_window_seconds(run, gpu)
    return (f"{run['id']}: published {published * 1e3:.1f} ms, ours {ours * 1e3:.1f}, excess "
            f"{(published - ours) * 1e3:.1f}; counted extras {counted['collectives']} collectives "
            f"{counted['seconds'] * 1e3:.2f} ms, {counted['syncs']} host syncs; " + (
                f"a micro-batch's host {window['calls']} calls {window['host'] * 1e3:.2f} ms against its GPU "
                f"{gpu * 1e3:.2f} ms, exposed {window['exposed'] * microbatches * 1e3:.2f} ms a step"
                if window["host"] is not None else f"{run['hardware']} states no host_module_call_s"))


def main(argv: list[str]) -> int:
    if argv and (argv[0] != "--row" or len(argv) != 2):
        print("usage: small_step_floor.py [--row ID]", file=sys.stderr)
        return 2
    chosen = argv[1] if argv else None
    rows = [(run, source) for run, source in ci_rows() if chosen in (None, run["id"])]
    if not rows:
        print(f"no megatron-ci 12 x 512 row is named {chosen!r}.", file=sys.stderr)
        return 2
    for run, source in rows:
        print(report(run, source))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
