"""What the combined 1F1B's paired steps hide of a rank's expert all-to-all (StepTime.ep_paired_hidden
and ep_paired_shares read it): the paired layers phase by phase, and the shares of a step they cover.

The schedule itself (which passes pair, and the phases of a paired layer) is layout/combined_1f1b.py;
this module applies it to a layout.time.StepTime's parts (passed as `step`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..collectives import nccl_facts
from ..config import ConfigError
from .combined_1f1b import alone_passes, paired_layers_seconds, paired_share

if TYPE_CHECKING:
    from .rank import Stage


def paired_hidden(step: Any, stage: Stage, all_to_all: float) -> tuple[float, float]:
    """The seconds of this rank's micro-batch all-to-all that one paired step of the combined
    1F1B hides: its MoE layers run as paired layers (combined_1f1b.paired_layers_seconds), each layer's compute split
    into the routed experts' (the mlp phases) and the rest (pre_dispatch: attention, router, norms), a third forward and two
    thirds backward (a backward's dgrad and wgrad, each a forward's work; the experts' wgrad is
    mlp_bwd_dw), and the all-to-all into four equal exchanges a layer (dispatch and combine, each
    way); and the compute that ran beside an exchange (what other collectives cannot hide
    under again). Beside an exchange a compute phase runs on the SMs the dispatcher leaves
    (nccl_facts.json ep_dispatcher_sms; the all-to-all dispatcher's NCCL kernels at
    overlap_compute_slowdown's 1 / (1 + slowdown), as on a hardware file with no sm_count; refused
    where the GPU has no SMs beyond the dispatcher's). Hidden: the layers' compute and exchanges
    one after another, less the paired layers' time (net of the slowed compute)."""
    estimate = step.estimate
    moe = {key: count for key, count in step.part_runs(stage).items() if estimate.part(key, "routed_slots")}
    layers = sum(moe.values())
    if not layers or not all_to_all:
        return 0.0, 0.0
    compute = sum(count * step.part_seconds.get(key, (0.0, 0))[0] for key, count in moe.items()) / layers
    experts = sum(count * step.expert_seconds.get(key, 0.0) for key, count in moe.items()) / layers
    rest = compute - experts
    dispatcher, sm_count = estimate.layout.ep_dispatcher, step.hardware.sm_count
    if dispatcher == "alltoall" or not sm_count:  # NCCL's kernels, or a hardware file with no SM count
        rate = 1 / (1 + step.overlap.slowdown)
    else:
        sms = nccl_facts()["ep_dispatcher_sms"][dispatcher]
        if sm_count <= sms:
            raise ConfigError(f"--ep-overlap with the {dispatcher} dispatcher: its kernels hold {sms} SMs "
                              f"(nccl_facts.json ep_dispatcher_sms) and hardware {step.hardware.name} has "
                              f"{sm_count}, none left for the compute beside them.")
        rate = (sm_count - sms) / sm_count
    exchange = all_to_all / (4 * layers)
    phases = {"pre_dispatch_fwd": rest / 3, "pre_dispatch_bwd": 2 * rest / 3, "mlp_fwd": experts / 3,
              "mlp_bwd": experts / 3, "mlp_bwd_dw": experts / 3, "combine_bwd": exchange,
              "dispatch_fwd": exchange, "dispatch_bwd": exchange, "combine_fwd": exchange}
    seconds, beside = paired_layers_seconds(layers, phases, rate)
    return layers * compute + all_to_all - seconds, beside

def paired_shares(step: Any, stage: Stage) -> tuple[float, float]:
    """Under Overlap.ep, the shares of this rank's expert all-to-all and of its compute that run
    in the combined 1F1B's paired steps (layout/combined_1f1b.py): each model chunk's passes
    weighted by its routed slots (the all-to-all's tokens; a multi-token prediction module's
    on the last stage's last chunk) and by its parts' seconds (the compute)."""
    estimate, layout = step.estimate, step.estimate.layout
    chunks = len(stage.kinds) or 1
    alone = alone_passes(layout.pp, chunks, layout.microbatches, stage.rank)
    slots, seconds = [], []
    for index, kinds in enumerate(stage.kinds or ((),)):
        ends = (["embedding"] if stage.first and index == 0 else []) \
            + (["tail", "head"] if stage.last and index == chunks - 1 else [])
        slots.append(sum(count * estimate.part(key, "routed_slots") for key, count in kinds)
                     + sum(estimate.part(key, "routed_slots") for key in ends))
        seconds.append(sum(count * step.part_seconds.get(key, (0.0, 0))[0] for key, count in kinds)
                       + sum(step.part_seconds.get(key, (0.0, 0))[0] for key in ["shared", *ends]))
    return paired_share(alone, slots, layout.microbatches), paired_share(alone, seconds, layout.microbatches)
