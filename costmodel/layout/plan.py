"""plan: every layout of a model on N GPUs of one kind, those that do not fit set aside with a
one-word reason, the rest ranked by step time (training) or time per output token (serving).

Enumerated (any of them can be fixed by the caller): the framework; tp, a divisor of the GPUs a
node holds that divides the heads, KV heads and FFN width; pp, a divisor of the GPUs per tp group
no larger than the layers; dp = GPUs / (tp pp); sequence parallelism when tp > 1; the framework's
ZeRO stages; the micro-batch (1, 2, 4, 8) and so the micro-batches per step; the 1F1B schedule,
and the interleaved one with two stages a rank where it divides; recomputation (none, selective,
full). Serving enumerates tp and pp; dp is replicas, each serving batch / dp sequences.
Each candidate is a ParallelEstimate (its expressions compiled once per structure) and a StepTime
of the time model asked for (the kernel model's leaf kernels cached across candidates).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from ..config import ConfigError, ModelConfig, Workload, require_decoder
from ..hardware import Efficiency, Hardware, time_model_for
from .frameworks import FRAMEWORKS
from .rank import ParallelEstimate
from .spec import Layout, tensor_split_sizes
from .time import step_time

MICRO_BATCHES = (1, 2, 4, 8)
RECOMPUTES = ("none", "selective", "full")


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def tensor_sizes(cfg: ModelConfig, hardware: Hardware, gpus: int) -> list[int]:
    return [t for t in _divisors(min(hardware.gpus_per_node, gpus)) if gpus % t == 0
            and all(size % t == 0 for _, size in tensor_split_sizes(cfg))]


def check_fixed(fixed: dict[str, Any], gpus: int) -> None:
    """The dimensions a user fixed must fit the GPUs: their product divides them (equals them when
    all three are fixed)."""
    given = {k: fixed[k] for k in ("tp", "pp", "dp") if fixed.get(k)}
    product = 1
    for size in given.values():
        product *= size
    named = " x ".join(f"{k} {v}" for k, v in given.items())
    if gpus % product:
        raise ConfigError(f"{named} does not divide the {gpus} GPUs of --gpus (tp x pp x dp must "
                          f"equal them).")
    if len(given) == 3 and product != gpus:
        raise ConfigError(f"{named} is {product} GPUs, not the {gpus} of --gpus.")


def training_layouts(cfg: ModelConfig, hardware: Hardware, gpus: int, global_batch: int,
                     fixed: dict[str, Any]) -> Iterator[tuple[Layout | None, int, str, str | None]]:
    """(layout, micro-batch, recompute, None) for each candidate, or (None, ..., reason) for a
    combination that cannot run."""
    frameworks = [fixed["framework"]] if fixed.get("framework") else list(FRAMEWORKS)
    tps = [fixed["tp"]] if fixed.get("tp") else tensor_sizes(cfg, hardware, gpus)
    layers = cfg.n_layers
    for framework in frameworks:
        zeros = [fixed["zero"]] if fixed.get("zero") is not None else list(FRAMEWORKS[framework].zero_stages)
        for tp in tps:
            pps = [fixed["pp"]] if fixed.get("pp") else [p for p in _divisors(gpus // tp) if p <= layers]
            for pp in pps:
                if gpus % (tp * pp):
                    continue
                dp = gpus // (tp * pp)
                if fixed.get("dp") and fixed["dp"] != dp:
                    continue
                for sp in ([fixed["sp"]] if fixed.get("sp") is not None else ([False, True] if tp > 1 else [False])):
                    for b in [fixed["batch"]] if fixed.get("batch") else MICRO_BATCHES:
                        if global_batch % (b * dp):
                            continue
                        m = global_batch // (b * dp)
                        schedules = [("1f1b", 1)]
                        if pp > 1 and m % pp == 0 and layers % (2 * pp) == 0:
                            schedules.append(("interleaved", 2))
                        for schedule, v in schedules:
                            for zero in zeros:
                                for recompute in [fixed["recompute"]] if fixed.get("recompute") else RECOMPUTES:
                                    try:
                                        layout = Layout(dp=dp, tp=tp, pp=pp, sp=sp, zero=zero, microbatches=m,
                                                        schedule=schedule, virtual_stages=v, framework=framework)
                                        layout.check(cfg, gpus)
                                    except ConfigError as error:
                                        yield None, b, recompute, str(error)
                                        continue
                                    yield layout, b, recompute, None


def _entry(layout: Layout, batch: int, recompute: str) -> dict[str, Any]:
    return {"layout": {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "zero": layout.zero,
                       "microbatches": layout.microbatches, "batch": batch, "recompute": recompute,
                       "sp": layout.sp, "schedule": layout.schedule, "virtual_stages": layout.virtual_stages,
                       "framework": layout.framework}}


def plan_training(cfg: ModelConfig, hardware: Hardware, gpus: int, seq_len: int, global_batch: int,
                  workload: Workload, fixed: dict[str, Any] | None = None,
                  efficiency: Efficiency | None = None, time_model: str | None = None) -> dict[str, Any]:
    """Every training layout: {"feasible": [...] by step time, "infeasible": [...]}."""
    fixed = fixed or {}
    check_fixed(fixed, gpus)
    time_model = time_model_for(hardware, time_model)
    feasible, infeasible, problems = [], [], []
    for layout, batch, recompute, problem in training_layouts(cfg, hardware, gpus, global_batch, fixed):
        if layout is None:
            problems.append(problem)
            continue
        entry = _entry(layout, batch, recompute)
        chosen = replace(workload, seq_len=seq_len, batch=batch, recompute=recompute)
        try:
            estimate = ParallelEstimate(cfg, chosen, layout)
        except ConfigError as error:
            infeasible.append({**entry, "reason": "unsupported", "detail": str(error)})
            continue
        per_rank = estimate.per_rank
        if per_rank["total"] > hardware.training_memory_bytes:
            infeasible.append({**entry, "reason": "memory", "per_rank": per_rank})
            continue
        step = step_time(estimate, hardware, efficiency, time_model).step()
        feasible.append({**entry, "per_rank": per_rank, "step_time": step["seconds"], "mfu": step["mfu"],
                         "hfu": step["hfu"], "split": {
                             "compute": step["compute_seconds"],
                             "communication": sum(step["exposed_communication_seconds"].values()),
                             "bubble": step["bubble_seconds"], "optimizer": step["optimizer_seconds"]},
                         "tokens_per_second": step["tokens_per_second"]})
    if not feasible and not infeasible:
        raise ConfigError(f"no layout of {cfg.name!r} on {gpus} GPUs can run: {problems[0]}" if problems else
                          f"no layout of {cfg.name!r} on {gpus} GPUs splits the global batch of "
                          f"{global_batch} into micro-batches of {fixed.get('batch') or MICRO_BATCHES} "
                          f"sequences over its data-parallel ranks.")
    feasible.sort(key=lambda e: e["step_time"])
    return {"feasible": feasible, "infeasible": infeasible, "time_model": time_model}


def plan_serving(cfg: ModelConfig, hardware: Hardware, gpus: int, batch: int, prompt: int, gen: int,
                 dtype: str, fixed: dict[str, Any] | None = None,
                 efficiency: Efficiency | None = None, kv_cache: str = "dynamic",
                 quantization: dict[str, Any] | None = None,
                 time_model: str | None = None) -> dict[str, Any]:
    """Every serving layout for `batch` sequences at a context of prompt + gen: the memory per
    rank (weights and the KV cache at the last step), ranked by time per output token. kv_cache
    and quantization (weight_dtype, weight_group, kv_dtype) are the Workload's."""
    fixed = fixed or {}
    check_fixed(fixed, gpus)
    require_decoder(cfg)
    time_model = time_model_for(hardware, time_model)
    feasible, infeasible = [], []
    for tp in [fixed["tp"]] if fixed.get("tp") else tensor_sizes(cfg, hardware, gpus):
        for pp in [fixed["pp"]] if fixed.get("pp") else [p for p in _divisors(gpus // tp) if p <= cfg.n_layers]:
            if gpus % (tp * pp):
                continue
            dp = gpus // (tp * pp)
            entry = {"layout": {"tp": tp, "pp": pp, "dp": dp, "batch": batch}}
            if batch % dp:
                infeasible.append({**entry, "reason": "batch"})
                continue
            layout = Layout(dp=dp, tp=tp, pp=pp, framework="deepspeed")
            workload = Workload(seq_len=prompt, gen_tokens=gen, batch=batch // dp, dtype=dtype,
                                precision="pure", attention="sdpa", kv_cache=kv_cache,
                                **{k: v for k, v in (quantization or {}).items() if v is not None})
            try:
                layout.check(cfg, gpus)
                estimate = ParallelEstimate(cfg, workload, layout, phase="decode")
            except ConfigError as error:
                infeasible.append({**entry, "reason": "unsupported", "detail": str(error)})
                continue
            per_rank = serving_memory(estimate)
            if per_rank["total"] > hardware.serving_memory_bytes:
                infeasible.append({**entry, "reason": "memory", "per_rank": per_rank})
                continue
            token = step_time(estimate, hardware, efficiency, time_model).token()
            feasible.append({**entry, "per_rank": per_rank, "time_per_output_token": token["seconds_per_token"],
                             "tp_all_reduce_seconds": token["tp_all_reduce_seconds"],
                             "tokens_per_second": token["tokens_per_second"]})
    feasible.sort(key=lambda e: e["time_per_output_token"])
    return {"feasible": feasible, "infeasible": infeasible, "time_model": time_model}


def serving_memory(estimate: ParallelEstimate) -> dict[str, int]:
    """The most loaded rank while serving: its weights (the dtype's bytes per parameter), its
    share of the KV cache at the last step and the modules' buffers."""
    worst = None
    for stage in estimate.stages:
        weights = estimate.numbers["bytes.weights"] * (estimate._placed(stage, "params") + estimate._tied_copy(stage))
        kv = estimate._placed(stage, "kv_cache")
        buffers = estimate._placed(stage, "buffers", per_stage=True)
        row = {"stage": stage.rank, "weights": weights, "kv_cache": kv, "buffers": buffers,
               "total": weights + kv + buffers}
        if worst is None or row["total"] > worst["total"]:
            worst = row
    return worst
