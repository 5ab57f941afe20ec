"""The host's time a Megatron-Core MoE layer's device-to-host sync exposes: the kernel model's default
for a Megatron training step with routed experts (KernelStepTime; `published --no-host-syncs` leaves it
out).

A dropless MoE layer forward waits on the host for its token counts: the sync is Megatron-Core's
default, what a recipe gets unless it pads to capacity or graphs the whole iteration. Read at
NVIDIA/Megatron-LM core_v0.15.0 (the same at core_v0.14.0 and d98e8a64dd),
megatron/core/transformer/moe/token_dispatcher.py: MoEAlltoAllTokenDispatcher.preprocess sets
`cuda_sync_point` to "before_ep_alltoall" where ep or tp > 1 (the all-to-all's splits on the CPU;
v0.15.0 line 524, d98e8a64dd 596) and to "before_finish" otherwise (the experts' counts, TE
GroupedLinear's m_splits); _maybe_dtoh_and_synchronize copies the counts on a side stream and calls
d2h_event.synchronize() there (v0.15.0 line 859, d98e8a64dd 958) unless
moe_pad_expert_input_to_capacity (drop_and_pad: every count known on the CPU). The flex dispatchers
sync too (_HybridEPManager.dispatch without num_permuted_tokens: "CPU sync in dispatch";
_DeepepManager: `tokens_per_expert.sum().item()`); core_r0.8.0 synchronized the current stream
before its all-to-all. The host cannot issue past that point before the GPU has reached it. So a
step's forward is a chain of sync windows, one per MoE layer, and each window costs the longer of
the host's calls in it and the GPU's work in it. The backward syncs nowhere (the all-to-all keeps
the forward's splits), so it is one window per micro-batch. Where nothing syncs (no routed experts,
drop-and-pad, a whole-iteration graph) the host runs ahead and costs nothing. Priced where the
hardware file states host_module_call_s (else the step says it is not: KernelStepTime.step's
"host_syncs_note").

Per micro-batch of a pipeline rank, with the windows of a stage taken as alike (each MoE layer's
window holds its share of the stage's calls and of its GPU time):
    extra = max(0, H_f - G_f) + max(0, H_b - G_b)
H: the calls the stage's layers issue (kernel_facts.json "megatron_host_calls", counted from
Megatron-Core's code) x the hardware's host_module_call_s (a module call's CPU time, TransformerEngine
issue #2053); a scope a CUDA graph captures is one call. G: the stage's GPU time of one micro-batch
(its compute and exposed communication), a third forward and two thirds backward, the split
StepTime.compute charges.
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError
from ..kernel_rates import kernel_facts
from ..spec import CUDA_GRAPH_SCOPES
from .permute_fusion import applies as permute_applies
from .permute_fusion import extra_calls as permute_calls
from .sequential_mlp import applies as sequential_applies
from .sequential_mlp import extra_calls as sequential_calls
from .router_fusion import applies as router_applies
from .router_fusion import extra_calls

#: The layer kinds (ModelConfig.layer_kind_at) whose layers are one block, not attention + MLP.
_ONE_BLOCK = {"mamba": ("mamba",), "moe": ("moe",), "attention": ("attention",), "dense": ("attention", "dense_mlp")}
#: CUDA graph scopes (Megatron-Core cuda_graph_scope) this count knows; full_iteration syncs nowhere.
GRAPH_SCOPES = CUDA_GRAPH_SCOPES


def host_facts() -> dict[str, Any]:
    return kernel_facts()["megatron_host_calls"]


def layer_blocks(kind: str | None) -> tuple[str, ...]:
    """The counted blocks of one layer of this kind: a hybrid's mamba, moe and attention layers are
    one block each; a dense layer (DeepSeek's first layers) attention and an MLP; any other layer
    (a MoE transformer layer: None, full, sliding, ...) attention and the MoE block."""
    return _ONE_BLOCK.get(kind, ("attention", "moe"))


def block_calls(block: str, local_experts: int, qk_norm: bool, biased_experts: bool,
                scopes: tuple[str, ...] = (), router_calls: tuple[int, int] = (0, 0),
                permute_calls: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """(forward, backward) host calls of one block; a captured scope's calls are one graph replay.
    router_calls: what an unfused router adds to a MoE block (router_fusion.extra_calls), which a
    moe_router graph captures with the rest of the router; permute_calls: what the dispatcher's unfused
    permutations add (permute_fusion.extra_calls), outside every graph scope."""
    facts = host_facts()
    forward = len(facts["forward"][block])
    backward = len(facts["backward"][block])
    if block == "moe" and "moe_router" not in scopes:
        forward, backward = forward + router_calls[0], backward + router_calls[1]
    if block == "moe":
        forward, backward = forward + permute_calls[0], backward + permute_calls[1]
    if block == "attention" and not qk_norm:  # q_layernorm and k_layernorm are the QK norm's
        forward, backward = forward - 2, backward - 2
    if block == "moe" and biased_experts:  # GPT-OSS: TEGroupedMLP._apply_bias's loop
        bias = facts["biased_experts"]
        forward += bias["forward"] + bias["forward_per_local_expert"] * local_experts
    for scope in scopes:  # a captured scope's calls: one forward replay, one backward replay
        captured = facts["graph_scopes"].get(scope, {}).get(block, {})
        if captured.get("forward", 0) == len(facts["forward"][block]):  # the whole block (attn, mamba)
            return 1, 1
        forward -= max(captured.get("forward", 0) - 1, 0)
        backward -= max(captured.get("backward", 0) - 1, 0)
    return forward, backward


def syncs(cfg: Any, layout: Any, scopes: tuple[str, ...] = ()) -> bool:
    """Whether a MoE layer forward waits on the host: routed experts, not padded to capacity (a capacity
    factor alone still syncs: the all-to-all dispatcher's output size is then dynamic, "before_permutation_1",
    token_dispatcher.py lines 544-550 at d98e8a64dd), and no whole-iteration graph (which needs a sync-free layer)."""
    return bool(cfg.n_experts) and not layout.pad_to_capacity and "full_iteration" not in scopes


def applies(estimate: Any, scopes: tuple[str, ...] = ()) -> bool:
    """Whether a step's MoE layers sync as counted: a training step of Megatron-Core (the code the
    calls were counted in; Megatron-Bridge, NeMo and Primus run it) whose MoE layers sync (syncs)."""
    return (estimate.phase == "train" and estimate.layout.framework == "megatron"
            and syncs(estimate.cfg, estimate.layout, scopes))


def moe_layers(estimate: Any, stage: Any) -> int:
    """The MoE blocks one micro-batch runs on this pipeline rank's layers."""
    kinds = {key: kind for key, (_, kind) in estimate.structure["layers"].items()}
    return sum(count for key, count in estimate.layer_runs(stage).items() if "moe" in layer_blocks(kinds[key]))


def stage_calls(estimate: Any, stage: Any, scopes: tuple[str, ...] = ()) -> tuple[int, int]:
    """(forward, backward) host calls of one micro-batch on this pipeline rank's layers."""
    cfg, layout = estimate.cfg, estimate.layout
    local = cfg.n_experts // layout.ep if cfg.n_experts else 0
    kinds = {key: kind for key, (_, kind) in estimate.structure["layers"].items()}
    router = extra_calls(estimate) if router_applies(estimate) else (0, 0)
    permute = permute_calls() if permute_applies(estimate) else (0, 0)
    if sequential_applies(estimate):  # SequentialMLP's loop, beside the grouped path's calls (sequential_mlp.py)
        loop = sequential_calls(local)
        permute = (permute[0] + loop[0], permute[1] + loop[1])
    forward = backward = 0
    for key, count in estimate.layer_runs(stage).items():
        for block in layer_blocks(kinds[key]):
            f, b = block_calls(block, local, bool(cfg.qk_norm), bool(cfg.expert_bias), scopes, router, permute)
            forward, backward = forward + count * f, backward + count * b
    return forward, backward


def exposed_seconds(host_forward: float, host_backward: float, gpu: float) -> float:
    """What one micro-batch's sync windows add to its GPU time: the forward's windows are bound by
    the slower of host and GPU, and so is the backward's one window (a third and two thirds of the
    GPU's time, StepTime.compute's split)."""
    return max(0.0, host_forward - gpu / 3) + max(0.0, host_backward - 2 * gpu / 3)


def stage_host_seconds(estimate: Any, hardware: Any, stage: Any, gpu: float,
                       scopes: tuple[str, ...] = ()) -> float:
    """The seconds the host adds to one micro-batch of this rank (0 where no MoE layer syncs)."""
    if not applies(estimate, scopes):
        return 0.0
    if hardware.host_module_call_s is None:
        raise ConfigError(f"host syncs: the hardware file {hardware.name} states no host_module_call_s "
                          "(the host's time of one module call).")
    unknown = [scope for scope in scopes if scope not in GRAPH_SCOPES]
    if unknown:
        raise ConfigError(f"host syncs: unknown CUDA graph scope {unknown[0]!r}; known: {', '.join(GRAPH_SCOPES)}.")
    forward, backward = stage_calls(estimate, stage, scopes)
    per_call = hardware.host_module_call_s
    return exposed_seconds(forward * per_call, backward * per_call, gpu)
