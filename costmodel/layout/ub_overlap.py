"""Transformer Engine's userbuffers TP communication overlap (Megatron's --tp-comm-overlap, NeMo's tp_comm_overlap;
Overlap.ub), priced op by op as TE runs it, in place of Overlap.tp's flat share: what each overlapped GEMM hides of
its collective and what the overlap costs the GEMMs. Facts: costmodel/ub_overlap_facts.json (TE's code and the
sourced SM figures; each cited there).

TE's ops (initialize_ub's defaults, te_defaults in the facts), found in each leaf by layout/async_tp.py's rule
(the GEMMs reading the gathered normed input; the GEMMs writing the model's width from an unnormed input):
- ring_exchange: the forward's all-gather into QKV and FC1 (qkv_fprop, fc1_fprop) and the backward's all-gather of
  the output gradient into the proj and FC2 dgrad (proj_dgrad, fc2_dgrad): tp chunks, tp - 1 peer copies on copy
  engines (use_ce) beside the chunks' GEMMs: the Async TP ring rule, reused (async_tp.ring_terms), no SM held;
- pipeline: the forward's GEMM + reduce-scatter of proj and FC2 (proj_fprop, fc2_fprop): num_splits chunks of the
  GEMM on sm_count - num_sm SMs (set_sm_margin), each chunk's reduce-scatter on num_sm SMs beside the next chunk,
  the last chunk's after the last GEMM on last_chunk_sms SMs, exposed;
- bulk: the backward's all-gather of a sublayer's input beside its dgrad GEMM (qkv_dgrad, fc1_dgrad: Megatron
  regathers it for the wgrad) and the reduce-scatter of the input gradient beside its wgrad GEMM (qkv_wgrad,
  fc1_wgrad): the collective on num_sm SMs, the GEMM on sm_count - num_sm; exposed only where it outlasts the GEMM.
A collective on n SMs moves min(1, n / saturating SMs) of the fabric's collective bandwidth (the NCCL busbw curve
at its payload, collectives.py): the saturating SMs comm_sms_to_peak states (4 on a multicast NVSwitch domain,
2 CTAs a link without). A GEMM on fewer SMs: the kernel model's tile and wave rule with the SMs it keeps, each at
its full-GPU share (kernel_time.KernelTimer). Where an op takes longer than its GEMM and its collective run one
after the other, the difference is charged to the compute; what it hides is at most its own collective.
Each op's method and SMs: TE's defaults, or the NeMo / Megatron-Bridge per-model config a row's recipe names
(recipe_config; `--tp-comm-overlap <config>`). Not modelled: the external wgrad beside the dgrad ring exchange, atomic GEMMs, the SMs' share of memory bandwidth beside the GEMMs
(no Overlap.slowdown: the split of the SMs is the contention); collectives outside TE's modules (embedding, head,
a MoE layer's experts) stay exposed.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..kernel_shapes import Gemm
from .async_tp import fused_ops, stage_passes, ring_terms


@cache
def ub_facts() -> dict[str, Any]:
    """costmodel/ub_overlap_facts.json."""
    return json.loads((Path(__file__).resolve().parent.parent / "ub_overlap_facts.json").read_text())


def saturating_sms(network: str) -> int:
    """The SMs at which a userbuffers collective reaches the fabric's bandwidth on `network`'s nodes."""
    rule = ub_facts()["comm_sms_to_peak"]
    if network in rule["multicast"]["hardware"]:
        return int(rule["multicast"]["value"])
    links = rule["load_store"]["nvlinks"].get(network)
    if links is None:
        raise ConfigError(f"TE's userbuffers overlap on {network}: no NVLink multicast or NVLink count is stated for it "
                          "(costmodel/ub_overlap_facts.json comm_sms_to_peak).")
    return int(rule["load_store"]["ctas_per_nvlink"]) * links


def comm_share(network: str, sms: int) -> float:
    """The share of the fabric's collective bandwidth a userbuffers collective on `sms` SMs moves."""
    return min(1.0, sms / saturating_sms(network))


def timer_on(timer: Any, sms: int) -> Any:
    """A copy of a KernelTimer whose GEMMs run on `sms` of its SMs, each SM at its full-GPU share."""
    if sms >= timer.sms:
        return timer
    if sms < 1:
        raise ConfigError(f"TE's userbuffers overlap leaves the GEMMs {sms} SMs of {timer.sms}.")
    fewer = copy.copy(timer)
    fewer.peak = timer.peak * sms / timer.sms
    fewer.matmul_rate = fewer.peak * fewer.matmul_efficiency
    fewer.sms, fewer.memo = sms, {}
    return fewer


def op_configs(name: str) -> dict[str, dict[str, Any]]:
    """Each op's config under Overlap.ub `name`: "te" TE's defaults, else a NeMo config's ops over them."""
    facts = ub_facts()
    ops = dict(facts["te_defaults"]["ops"])
    if name != "te":
        if name not in facts["nemo_configs"] or name.startswith("_"):
            raise ConfigError(f"overlap ub {name!r}: 'te' (Transformer Engine's defaults) or a config of "
                              "costmodel/ub_overlap_facts.json nemo_configs.")
        ops.update(facts["nemo_configs"][name])
    return ops


def pipeline_terms(step: Any, gemms: list, gemm_timer: Any, cfg: dict[str, Any]) -> tuple[float, float]:
    """TE's pipelined GEMM + reduce-scatter (split_overlap_rs): (collective seconds hidden, compute seconds added)."""
    from ..kernel_time import kernels_seconds

    x, network = step.estimate.numbers["boundary"], step.hardware.network_name
    splits, sms = int(cfg["num_splits"]), int(cfg["num_sm"])
    whole = kernels_seconds(gemms, gemm_timer)
    chunk = kernels_seconds([Gemm(-(-g.m // splits), g.n, g.k) for g in gemms],
                            timer_on(gemm_timer, gemm_timer.sms - sms) if cfg["set_sm_margin"] else gemm_timer)
    scatter = step.collective("tp", "reduce_scatter", x / splits)
    beside = scatter / comm_share(network, sms)
    last = scatter / comm_share(network, int(ub_facts()["te_defaults"]["last_chunk_sms"]))
    exposed = chunk + (splits - 1) * max(chunk, beside) + last - splits * chunk
    return _settle(step.collective("tp", "reduce_scatter", x), exposed, splits * chunk - whole)


def bulk_terms(step: Any, kind: str, gemms: list, gemm_timer: Any, cfg: dict[str, Any]) -> tuple[float, float]:
    """TE's bulk overlap (bulk_overlap): the collective on num_sm SMs beside the whole GEMM. set_sm_margin: the GEMM
    on the other SMs throughout; else on all of them, num_sm of them held while the collective runs."""
    from ..kernel_time import kernels_seconds

    sms, x = int(cfg["num_sm"]), step.estimate.numbers["boundary"]
    whole = kernels_seconds(gemms, gemm_timer)
    fewer = kernels_seconds(gemms, timer_on(gemm_timer, gemm_timer.sms - sms))
    collective = step.collective("tp", kind, x)
    slow = collective / comm_share(step.hardware.network_name, sms)
    if cfg["set_sm_margin"] or slow >= fewer:
        return _settle(collective, max(0.0, slow - fewer), fewer - whole)
    # the GEMM runs on the SMs left while the collective runs (slow / fewer of its work), then on all of them
    return _settle(collective, 0.0, slow * (1 - whole / fewer))


def _settle(collective: float, exposed: float, added: float) -> tuple[float, float]:
    """(hidden, added): the op's collective less what it leaves exposed; an op exposing more than its own
    collective's NCCL time pays the rest as compute."""
    return max(0.0, collective - exposed), added + max(0.0, exposed - collective)


def stage_terms(step: Any, stage: Any) -> tuple[float, float]:
    """One micro-batch's userbuffers ops on this pipeline rank under a kernel-level StepTime `step`: (the seconds
    of tensor-parallel collectives they hide, the seconds they add to the compute)."""
    if not step.hardware.sm_count:
        raise ConfigError(f"TE's userbuffers overlap splits the SMs: hardware {step.hardware.name} states no sm_count.")
    configs = op_configs(step.overlap.ub)
    regathers = step.estimate.framework.sp_regathers_input
    hidden = added = 0.0
    for runs, kind, (name, gemms), gemm_timer in stage_passes(step, stage, _te_ops(regathers)):
        cfg = configs[name]
        if cfg["method"] == "ring_exchange":
            op = ring_terms(step, kind, gemms, gemm_timer)
        elif cfg["method"] == "pipeline":
            op = pipeline_terms(step, gemms, gemm_timer, cfg)
        else:
            op = bulk_terms(step, kind, gemms, gemm_timer, cfg)
        hidden, added = hidden + runs * op[0], added + runs * op[1]
    return hidden, added


def _te_ops(regathers: bool) -> Any:
    """A leaf's TE ops as (collective, (TE's name for the op, the GEMMs beside it)), for async_tp.stage_passes:
    a leaf whose GEMMs both read the normed input and write the model's width is an MLP (fc1, fc2), else QKV or
    proj."""
    def ops(kernels: list, width: int, forward: bool) -> list[tuple[str, tuple[str, list]]]:
        fused = fused_ops(kernels, width, forward)
        mlp = len({kind for kind, _ in fused_ops(kernels, width)}) == 2
        first, second = ("fc1", "fc2") if mlp else ("qkv", "proj")
        if forward:
            return [(kind, (f"{first if kind == 'all_gather' else second}_fprop", gemms)) for kind, gemms in fused]
        out = [(kind, (f"{second}_dgrad", gemms)) for kind, gemms in fused]
        consumers = next((gemms for kind, gemms in fused_ops(kernels, width) if kind == "all_gather"), [])
        if consumers:
            if regathers:  # the input regathered beside the dgrad GEMMs (qkv_dgrad, fc1_dgrad)
                out.append(("all_gather", (f"{first}_dgrad", [Gemm(g.m, g.k, g.n) for g in consumers])))
            # the input gradient's reduce-scatter beside the wgrad GEMMs (qkv_wgrad, fc1_wgrad)
            out.append(("reduce_scatter", (f"{first}_wgrad", [Gemm(g.k, g.n, g.m) for g in consumers])))
        return out
    return ops


def check(layout: Any, time_model: str) -> None:
    """TE's userbuffers as Megatron runs them: --tp-comm-overlap needs sequence parallelism (Megatron-LM's
    arguments.py: 'Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is
    enabled'); priced from the GEMMs' shapes, so by the kernel-level model only."""
    if layout.framework != "megatron" or layout.tp <= 1 or not layout.sp or time_model != "kernels":
        raise ConfigError("--tp-comm-overlap is Megatron's TP communication overlap (Transformer Engine's userbuffers): "
                          "--framework megatron, --tp > 1 with --sp, and the kernel time model; here --framework "
                          f"{layout.framework}, --tp {layout.tp}, sp {bool(layout.sp)}, time model {time_model}.")


def userbuffers(overlap: Any, layout: Any, config: str | None = None) -> Any:
    """A published row's overlap under the kernel-level model: where its recipe turns on the TP communication
    overlap (Overlap.tp 1: tp_comm_overlap) on Megatron with sequence parallelism, which --tp-comm-overlap needs
    (TE's userbuffers overlap SP's all-gathers and reduce-scatters), TE's ops priced here (Overlap.ub) in place
    of the flat share, under `config` (recipe_config; None: TE's defaults); any other overlap as it is."""
    from dataclasses import replace

    if overlap is None or overlap.tp != 1 or layout.framework != "megatron" or not layout.sp or layout.tp <= 1:
        return overlap
    return replace(overlap, tp=0.0, ub=config or "te")


def recipe_config(source: str, model: str, network: str, fp8: str | None) -> str | None:
    """The NeMo config a row's recipe names (ub_overlap_facts.json recipes: its source, model and GPU), None where
    none is named; fp8: the row's FP8 recipe (None: bf16; mxfp8 the fp8 config where the source's recipes keep the
    overlap on under it, recipes mxfp8_overlap, else none)."""
    recipes = ub_facts()["recipes"]
    gpu = recipes["gpus"].get(network)
    shape = recipes["models"].get(model, {}).get(gpu) if source in recipes["sources"] else None
    if shape is None or (fp8 == "mxfp8" and source not in recipes["mxfp8_overlap"]["sources"]):
        return None
    return f"userbuffers_{'fp8' if fp8 else 'bf16'}_{shape}"
