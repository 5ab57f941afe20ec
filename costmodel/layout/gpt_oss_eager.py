"""The eager kernels Megatron-Core runs around GPT-OSS's fused ones, a training step's kernel-level term
(KernelStepTime.stage), priced as layout/permute_fusion.py prices the unfused permutations:

- the clamp of weighted_bias_quick_geglu_impl (NVIDIA/Megatron-LM 44151194 megatron/core/fusions/
  fused_bias_geglu.py lines 424-433, unchanged since 2e29a5e1e3): where the routed experts run GPT-OSS's
  clamped gated activation (ModelConfig.swiglu_limit and swiglu_alpha: Megatron-Core's quick-GEGLU with
  activation_func_clamp_value 7.0), the fc1 output is chunked, each half clamped and the halves
  concatenated in eager torch before the compiled weighted quick-GEGLU that the tree's expert leaf prices
  (facts.json fused_swiglu). TEGroupedMLP takes that path
  (experts.py lines 660-670) wherever Transformer Engine's op fuser is off (KernelStepTime's moe_op_fuser,
  Megatron-Core's use_transformer_engine_op_fuser: its default, and forced off by Megatron-Bridge's
  performance overrides, scripts/performance/utils/overrides.py lines 64-65 at 21d102f5e, perf_recipes/
  _common.py lines 67-68 at 067f987df; its MXFP8 full-iteration GPT-OSS recipes turn it on, which runs
  Transformer Engine's ScaledClampedQGeGLU instead: experts.py lines 404-425). Per MoE layer and
  micro-batch, once more in the forward where the recomputation reruns the experts' activation (moe_act,
  moe_layer, full);
- the unfused rotary embedding of the query and the key (rope_utils.py lines 73-126), per attention layer
  and micro-batch, where facts.json's rotary_unfused says Megatron-Core runs it (GPT-OSS's YaRN: its mscale
  1.347 != 1 takes apply_rotary_pos_emb's unfused path whatever apply_rope_fusion says, lines 279-284, and
  Megatron-Bridge turns the fusion off for a position type other than 'rope'); the tree prices one rotary
  pass a tensor (blocks/attention.py RotaryEmbedding); once more under full recomputation.

The counts are kernel_facts.json "megatron_gpt_oss_eager" (measured from the code: validate/
gpt_oss_megatron_ops.py). The term is the difference from what the tree already prices:
    GPU  (K_eager - K_fused) x launch + (B_eager - B_fused) / bandwidth
with launch and bandwidth layout/unfused.py's. Megatron-Core training steps only (framework megatron).
"""

from __future__ import annotations

from typing import Any

from ..facts import facts_for
from ..kernel_rates import kernel_facts
from ..spec import DTYPE_BYTES, RECOMPUTED_PARTS
from .host_syncs import layer_blocks
from .router_fusion import router_tokens
from .unfused import eager_seconds


def facts() -> dict[str, Any]:
    return kernel_facts()["megatron_gpt_oss_eager"]


def _megatron_training(estimate: Any) -> bool:
    return estimate.phase == "train" and estimate.layout.framework == "megatron"


def clamp_applies(estimate: Any, op_fuser: bool) -> bool:
    """Routed experts with GPT-OSS's clamped gated activation (swiglu_limit and swiglu_alpha: Megatron-Core's
    quick-GEGLU with activation_func_clamp_value), trained by Megatron-Core without the op fuser."""
    cfg = estimate.cfg
    clamped = cfg.swiglu_limit is not None and cfg.swiglu_alpha is not None
    return _megatron_training(estimate) and bool(cfg.n_experts) and clamped and not op_fuser


def rope_applies(estimate: Any) -> bool:
    """A Megatron-Core training step whose rotary embedding runs unfused (facts.json rotary_unfused)."""
    return (_megatron_training(estimate) and estimate.cfg.position == "rope"
            and facts_for(estimate.workload.impl, estimate.cfg.family).rotary_unfused)


def forward_runs(estimate: Any, parts: set[str]) -> float:
    """How many times a layer's forward runs the ops: once, and again where the recomputation reruns them
    (`parts` of spec.RECOMPUTED_PARTS, or full recomputation: of recompute_layers of the layers where set)."""
    workload = estimate.workload
    if workload.recompute == "full":
        layers = estimate.cfg.n_layers
        return 1 + (min(workload.recompute_layers, layers) / layers if workload.recompute_layers else 1)
    return 1 + bool(parts & RECOMPUTED_PARTS.get(workload.recompute, frozenset()))


def _kernels_and_bytes(entry: dict[str, Any], terms: tuple[int, ...], forwards: float) -> tuple[float, float]:
    """(kernels, bytes) beyond the fused path's of `forwards` forward passes and one backward."""
    kernels = forwards * entry["forward_kernels"] + entry["backward_kernels"]
    moved = sum(c * t for c, t in zip(entry["forward_bytes"], terms)) * forwards
    moved += sum(c * t for c, t in zip(entry["backward_bytes"], terms))
    fused = sum(c * t for c, t in zip(entry["fused_forward_bytes"], terms)) * forwards
    fused += sum(c * t for c, t in zip(entry["fused_backward_bytes"], terms))
    return kernels - forwards * entry["fused_forward_kernels"] - entry["fused_backward_kernels"], moved - fused


def clamp_layer(estimate: Any) -> tuple[float, float]:
    """(kernels, bytes) the eager clamp adds to one MoE layer's micro-batch on a rank: terms [e N, N], N the
    rank's slots x its share of the expert width (S = T k slots, d_x / etp)."""
    cfg, layout = estimate.cfg, estimate.layout
    element = DTYPE_BYTES[estimate.workload.dtype]
    n = router_tokens(estimate) * cfg.top_k * (cfg.d_expert // (layout.etp or 1))
    return _kernels_and_bytes(facts()["clamp"], (element * n, n), forward_runs(estimate, {"moe_act", "moe_layer"}))


def rope_layer(estimate: Any) -> tuple[float, float]:
    """(kernels, bytes) the unfused rotary embedding adds to one attention layer's micro-batch on a rank:
    per call (the query, the key) terms [e R, s d_h, e s d_h], R the rotated elements, s the rank's positions."""
    cfg, layout, workload = estimate.cfg, estimate.layout, estimate.workload
    element = DTYPE_BYTES[workload.dtype]
    positions = workload.seq_len // layout.cp
    table = positions * cfg.d_head
    forwards = forward_runs(estimate, set())
    kernels = moved = 0.0
    for heads in (cfg.n_heads // layout.tp, max(cfg.n_kv_heads // layout.tp, 1)):
        rotated = workload.batch * positions * heads * cfg.d_head
        k, b = _kernels_and_bytes(facts()["rope"], (element * rotated, table, element * table), forwards)
        kernels, moved = kernels + k, moved + b
    return kernels, moved


def stage_seconds(estimate: Any, hardware: Any, stage: Any, bandwidth: float, op_fuser: bool = False) -> float:
    """What the eager clamp and rotary embedding add to one micro-batch of this pipeline rank's layers."""
    clamp, rope = clamp_applies(estimate, op_fuser), rope_applies(estimate)
    if not (clamp or rope):
        return 0.0
    kinds = {key: kind for key, (_, kind) in estimate.structure["layers"].items()}
    seconds = 0.0
    for key, count in estimate.layer_runs(stage).items():
        blocks = layer_blocks(kinds[key])
        for applies, block, layer in ((clamp, "moe", clamp_layer), (rope, "attention", rope_layer)):
            if applies and block in blocks:
                kernels, moved = layer(estimate)
                seconds += count * eager_seconds(kernels, moved, hardware, bandwidth)
    return seconds
