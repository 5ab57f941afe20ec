"""plan: every layout of a model on N GPUs of one kind, those that do not fit set aside with a
one-word reason, the rest ranked by step time (training) or time per output token (serving).

Enumerated (any of them can be fixed by the caller): the framework; tp, a divisor of the GPUs a
node holds that divides the heads, KV heads (serving: or is a multiple of them, each head
replicated) and FFN width; pp, a divisor of the GPUs per tp group no larger than the layers;
dp = GPUs / (tp pp); sequence parallelism when tp > 1; the framework's ZeRO stages; the
micro-batch (1, 2, 4, 8) and so the micro-batches per step; the 1F1B schedule, and the
interleaved one with two stages a rank where it divides; recomputation (none, selective, full).
Serving enumerates tp and pp; dp is replicas, each serving batch / dp sequences.
Each candidate is a ParallelEstimate (its expressions compiled once per structure) and a StepTime
of the time model asked for (the kernel model's leaf kernels cached across candidates).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any, Iterator

from ..config import ConfigError, ModelConfig, Workload, require_decoder, show
from ..defaults import implied
from ..flash_support import runs_flash
from ..spec import DEFAULT_DECODE_CODE, DEFAULT_SERVE_ATTENTION, OP_POLICIES, RECOMPUTES

#: The recomputations plan tries unless --recompute names one: "deepseek" (spec.RECOMPUTED_PARTS) is
#: DeepSeek-V3's stated choice for latent attention around a fused kernel, "torchtitan-op" torchtitan's
#: op policy (costmodel/op_checkpoint.py, dense layers only), the JAX policies (jax_remat.py), "layernorm-moe-act" Megatron-Core's module
#: list as GPT-OSS's recipes name it, "layernorm-moe" the model zoo's long-context Qwen3 command's,
#: "layernorm-moe-core-attn" Nemotron 3 Super's card's, "mla-up-proj" DeepSeek-V3's, each asked for by name.
PLANNED_RECOMPUTES = tuple(r for r in RECOMPUTES if r not in (
    "deepseek", *OP_POLICIES, "layernorm-moe-act", "layernorm-moe", "layernorm-moe-core-attn", "mla-up-proj"))
from ..hardware import Efficiency, Hardware, time_model_for
from .experts import check_expert_tensor_parallel
from .frameworks import FRAMEWORKS
from .overlap import Overlap, framework_overlap
from .rank import ParallelEstimate, check_grad_reduce_dtype, check_pure_precision
from .serving_memory import serving_memory
from .spec import Layout, check_hybrid_framework, check_inference_model, tensor_split_error
from .step_parts import step_split
from .timing import generation_decode_seconds, step_time

MICRO_BATCHES = (1, 2, 4, 8)
CP_MIN_TOKENS = 4096  # plan tries context parallelism only where each rank keeps this many tokens


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def tensor_sizes(cfg: ModelConfig, hardware: Hardware, gpus: int, inference: bool = False) -> list[int]:
    """The tensor-parallel sizes to try: divisors of a node's GPUs that split the model
    (tensor_split.tensor_split_error; inference may replicate key/value heads)."""
    return [t for t in _divisors(min(hardware.gpus_per_node, gpus)) if gpus % t == 0
            and tensor_split_error(cfg, t, inference) is None]


#: The sizes whose product is the GPUs (Layout.gpus): tp x pp x cp x dp.
GRID = ("tp", "pp", "dp", "cp")


#: Settings plan holds fixed in every candidate (True, or grad_reduce_dtype's dtype, when asked for):
#: Megatron-Core's FP8 parameters and TP-only amax group, the gradient reduce dtype and pure precision
#: (FSDP2's bf16 model trained so, Layout.pure_precision) (Layout fields: a
#: candidate the layout refuses, another framework or ZeRO stage, is not one), and gradient reduces not
#: aligned in the interleaved schedule (Overlap.align_grad False on megatron's interleaved layouts, the
#: only ones with chunks to align; the others run as they would), and the gradient reduction under the
#: backward (overlap_grad_reduce: megatron's --overlap-grad-reduce, off by default; the others' already).
SETTINGS = ("fp8_param_gather", "tp_only_amax_red", "no_align_grad_reduce", "grad_reduce_dtype", "overlap_grad_reduce",
            "pure_precision")
#: The settings that are Layout fields, as each candidate is built with them.
LAYOUT_SETTINGS = ("fp8_param_gather", "tp_only_amax_red", "grad_reduce_dtype", "pure_precision")


def _layout_settings(fixed: dict[str, Any]) -> dict[str, Any]:
    return {"fp8_param_gather": bool(fixed.get("fp8_param_gather")),
            "tp_only_amax_red": bool(fixed.get("tp_only_amax_red")), "grad_reduce_dtype": fixed.get("grad_reduce_dtype"),
            "pure_precision": bool(fixed.get("pure_precision"))}


def check_settings(fixed: dict[str, Any], dtype: str) -> None:
    """Refuse, in one line before the search, a setting no candidate could take: the layout's own check
    on a layout with the fixed framework (megatron unless fixed), ZeRO stage (megatron's 1, the others'
    default, unless fixed) and recipe; a gradient reduce dtype outside bf16 training and pure precision
    in fp32 (rank.py's checks)."""
    check_grad_reduce_dtype(fixed.get("grad_reduce_dtype"), dtype)
    check_pure_precision(bool(fixed.get("pure_precision")), dtype)
    if not any(fixed.get(name) for name in LAYOUT_SETTINGS):
        return
    framework = fixed.get("framework") or "megatron"
    zero = fixed["zero"] if fixed.get("zero") is not None else 1 if framework == "megatron" else \
        FRAMEWORKS[framework].default_zero
    Layout(framework=framework, zero=zero, fp8=fixed.get("fp8"), **_layout_settings(fixed))  # (it checks them)


def plan_overlap(layout: Layout, fixed: dict[str, Any]) -> Overlap:
    """The overlap a candidate is timed under: the framework's (framework_overlap: Megatron's
    interleaved schedule hides its pipeline sends, and reduces its gradients after the backward
    unless overlap_grad_reduce is fixed), gradient reduces not aligned on an interleaved megatron
    layout when no_align_grad_reduce is fixed."""
    grad = True if fixed.get("overlap_grad_reduce") else None
    if fixed.get("no_align_grad_reduce") and layout.framework == "megatron" and layout.schedule == "interleaved":
        return framework_overlap(layout, {"align_grad": False}, grad)
    return framework_overlap(layout, overlap_grad_reduce=grad)


def check_fixed(fixed: dict[str, Any], gpus: int) -> None:
    """The dimensions a user fixed must fit the GPUs: their product divides them, and equals them
    when all four (tp, pp, cp, dp) are fixed, or tp, pp and dp are (context parallelism is not
    chosen for the user). Each fixed value of the right kind first (`costmodel.plan(framework="jax")` died in a
    KeyError, sp="yes" ran as SP and tp=True as tp 1): the command's types, for the Python API."""
    for name in (*GRID, "ep", "etp", "dp_shard"):
        value = fixed.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"plan: {name} must be a positive integer, got {show(value)}.")
    if fixed.get("zero") is not None and (isinstance(fixed["zero"], bool) or fixed["zero"] not in (0, 1, 2, 3)):
        raise ConfigError(f"plan: zero must be a ZeRO stage, 0 to 3, got {show(fixed['zero'])}.")
    if fixed.get("framework") is not None and fixed["framework"] not in FRAMEWORKS:
        raise ConfigError(f"plan: framework must be one of {', '.join(FRAMEWORKS)}, got {show(fixed['framework'])}.")
    if fixed.get("etp") and fixed.get("framework") not in (None, "megatron"):  # it planned etp-less layouts instead
        raise ConfigError(f"plan: etp {fixed['etp']} is Megatron-Core's expert tensor parallelism (its expert grid); "
                          f"{fixed['framework']} has none: plan --framework megatron, or leave --etp out.")
    for name in ("sp", *(setting for setting in SETTINGS if setting != "grad_reduce_dtype")):
        if fixed.get(name) is not None and not isinstance(fixed[name], bool):
            raise ConfigError(f"plan: {name} must be true or false, got {show(fixed[name])}.")
    given = {k: fixed[k] for k in GRID if fixed.get(k)}
    product = 1
    for size in given.values():
        product *= size
    named = " x ".join(f"{k} {v}" for k, v in given.items())
    if gpus % product:
        raise ConfigError(f"{named} does not divide the {gpus} GPUs of --gpus (tp x pp x cp x dp must "
                          f"equal them).")
    if len(given) == len(GRID) and product != gpus:
        raise ConfigError(f"{named} is {product} GPUs, not the {gpus} of --gpus.")
    if set(given) == {"tp", "pp", "dp"} and product != gpus:  # cp left to fill them: a choice to state
        raise ConfigError(f"{named} is {product} GPUs, not the {gpus} of --gpus; give --cp {gpus // product} "
                          f"to fill them with context parallelism.")


def expert_sizes(cfg: ModelConfig, framework: str, tp: int, dp: int, zero: int,
                 fixed: dict[str, Any], sp: bool = False, cp: int = 1) -> list[int]:
    """The expert-parallel sizes to try: the one fixed, else 1 and every divisor of dp that
    divides the experts where expert parallelism is modelled (costmodel/layout/experts.py); with
    tp > 1, Megatron-Core's parallel folding (expert_layout: --etp 1), its EP group drawn from
    tp x cp x dp, where folding is modelled (megatron with SP); with context parallelism,
    Megatron-Core's alone, the EP group drawn from cp x dp (tp x cp x dp folded)."""
    if fixed.get("ep"):
        return [fixed["ep"]]
    if not cfg.moe or (zero >= 3 and framework == "deepspeed"):
        return [1]
    if cp > 1 and framework != "megatron":
        return [1]
    if tp > 1:
        if framework != "megatron" or not sp:
            return [1]
        return [e for e in _divisors(tp * cp * dp) if cfg.n_experts % e == 0]
    return [e for e in _divisors(cp * dp) if cfg.n_experts % e == 0]


#: The experts' own tensor-parallel sizes plan tries beside parallel folding's 1 (and tp, Megatron-Core's
#: default): the powers of two within a node of 8 GPUs, where the gather and reduce-scatter of the tokens
#: stay on NVLink (layout/experts.py, "Expert tensor parallelism").
EXPERT_TENSOR_SIZES = (2, 4, 8)


def expert_layouts(cfg: ModelConfig, framework: str, tp: int, ranks: int, ep: int, zero: int,
                   fixed: dict[str, Any]) -> list[int | None]:
    """--etp values to try for a layout of tp x (ranks = cp x dp) with ep: the one fixed (none at ep 1, which has
    no etp: plan --etp keeps only layouts of that etp, as simulate refuses --etp without --ep); none without
    expert parallelism; where tensor and expert parallelism meet, 1 (parallel folding); and each of
    EXPERT_TENSOR_SIZES and tp above 1 that costmodel/layout/experts.py's check_expert_tensor_parallel accepts
    (Megatron-Core's expert grid; its refusals stated there once). Sequence parallelism is left to
    Layout.check, which refuses the layouts without it beside folding's as well."""
    if fixed.get("etp"):
        return [fixed["etp"]] if ep > 1 else []
    if ep == 1:
        return [None]
    base: list[int | None] = [1 if tp > 1 else None]
    return base + [etp for etp in sorted({*EXPERT_TENSOR_SIZES, tp} - {1})
                   if _expert_grid_runs(cfg, framework, tp, etp, ep, ranks, zero)]


def _expert_grid_runs(cfg: ModelConfig, framework: str, tp: int, etp: int, ep: int, ranks: int, zero: int) -> bool:
    try:
        check_expert_tensor_parallel(cfg, tp, etp, ep, ranks, zero, framework, sp=True)
    except ConfigError:
        return False
    return True


def context_sizes(cfg: ModelConfig, ranks: int, seq_len: int | None, fixed: dict[str, Any]) -> list[int]:
    """The context-parallel sizes to try: the one fixed, else 1 and each divisor of the ranks
    left that keeps at least CP_MIN_TOKENS tokens a rank (context parallelism is for long
    sequences), divides the sequence into 2 cp chunks, on a model it is modelled for."""
    if fixed.get("cp"):
        return [fixed["cp"]] if ranks % fixed["cp"] == 0 else []
    if fixed.get("cp_rotate"):  # a rotation typed: only layouts with context parallelism (it ran cp 1 ones too)
        return [c for c in _context_sizes(cfg, ranks, seq_len, fixed) if c > 1]
    return _context_sizes(cfg, ranks, seq_len, fixed)


def _context_sizes(cfg: ModelConfig, ranks: int, seq_len: int | None, fixed: dict[str, Any]) -> list[int]:
    if seq_len is None or cfg.architecture != "decoder" or cfg.sliding_window is not None or cfg.mla \
            or fixed.get("attention") == "eager":
        return [1]
    return [c for c in _divisors(ranks) if c == 1 or (seq_len % (2 * c) == 0 and seq_len // c >= CP_MIN_TOKENS)]


def pipeline_schedules(pp: int, m: int, layers: int, fixed: dict[str, Any],
                       framework: str | None = None) -> list[tuple[str, int]]:
    """1F1B and, where it divides and the framework's engine runs it (Framework.pipeline_schedules),
    interleaving with two stages a rank; or the schedule fixed."""
    if fixed.get("schedule"):
        return [(fixed["schedule"], 2 if fixed["schedule"] in ("interleaved", "zbv", "dualpipev") else 1)]
    schedules = [("1f1b", 1)]
    runs = FRAMEWORKS[framework].pipeline_schedules if framework else None
    if pp > 1 and m % pp == 0 and layers % (2 * pp) == 0 and (runs is None or "interleaved" in runs):
        schedules.append(("interleaved", 2))
    return schedules


def training_layouts(cfg: ModelConfig, hardware: Hardware, gpus: int, global_batch: int,
                     fixed: dict[str, Any], seq_len: int | None = None
                     ) -> Iterator[tuple[Layout | None, int, str, str | None]]:
    """(layout, micro-batch, recompute, None) for each candidate, or (None, ..., reason) for a
    combination that cannot run."""
    frameworks = [fixed["framework"]] if fixed.get("framework") else list(FRAMEWORKS)
    if fixed.get("etp"):  # expert tensor parallelism is Megatron-Core's alone (check_fixed refuses another)
        frameworks = ["megatron"]
    if fixed.get("dp_shard"):
        check_hybrid_framework(fixed.get("framework") or "fsdp2", fixed.get("zero"))
        # hybrid sharding is FSDP2's HSDP (Layout.dp_shard), or Megatron-FSDP's HFSDP when asked for
        frameworks = [fixed["framework"]] if fixed.get("framework") == "megatron" else ["fsdp2"]
    tps = [fixed["tp"]] if fixed.get("tp") else tensor_sizes(cfg, hardware, gpus)
    layers = cfg.pipeline_layers
    for framework in frameworks:
        zeros = [fixed["zero"]] if fixed.get("zero") is not None else list(
            FRAMEWORKS[framework].planned_zero_stages or FRAMEWORKS[framework].zero_stages)
        for tp in tps:
            cp_fixed = fixed.get("cp") or 1  # the ranks a fixed cp takes before pp divides the rest
            pps = [fixed["pp"]] if fixed.get("pp") else [p for p in _divisors(gpus // (tp * cp_fixed)) if p <= layers]
            for pp in pps:
                if gpus % (tp * pp):
                    continue
                for cp in context_sizes(cfg, gpus // (tp * pp), seq_len, fixed):
                    dp = gpus // (tp * pp * cp)
                    if fixed.get("dp") and fixed["dp"] != dp:
                        continue
                    for sp in ([fixed["sp"]] if fixed.get("sp") is not None else ([False, True] if tp > 1 else [False])):
                        for b in [fixed["batch"]] if fixed.get("batch") else MICRO_BATCHES:
                            if global_batch % (b * dp):
                                continue
                            m = global_batch // (b * dp)
                            schedules = pipeline_schedules(pp, m, layers, fixed, framework)
                            for schedule, v in schedules:
                                # At dp = 1 every ZeRO stage shards over one rank: the same layout.
                                for zero in zeros if dp > 1 or fixed.get("zero") is not None else zeros[:1]:
                                    for ep, etp in ((ep, etp) for ep in expert_sizes(cfg, framework, tp, dp, zero, fixed, sp, cp)
                                                    for etp in expert_layouts(cfg, framework, tp, cp * dp, ep, zero, fixed)):
                                        # one (frozen) layout, built and checked once, for every recomputation
                                        try:
                                            layout = Layout(dp=dp, tp=tp, pp=pp, sp=sp, zero=zero, microbatches=m,
                                                            schedule=schedule, virtual_stages=v,
                                                            framework=framework, ep=ep, etp=etp, cp=cp,
                                                            **({"cp_rotate": fixed["cp_rotate"]}
                                                               if fixed.get("cp_rotate") else {}),
                                                            fp8=fixed.get("fp8"), dp_shard=fixed.get("dp_shard"),
                                                            **_layout_settings(fixed))
                                            layout.check(cfg, gpus)
                                            layout.check_schedule()
                                            problem = None
                                        except ConfigError as error:
                                            layout, problem = None, str(error)
                                        for recompute in [fixed["recompute"]] if fixed.get("recompute") else PLANNED_RECOMPUTES:
                                            yield layout, b, recompute, problem


@lru_cache(maxsize=1024)
def _chosen_workload(workload: Workload, seq_len: int, batch: int, recompute: str,
                     code: tuple[tuple[str, str], ...]) -> Workload:
    """The workload one layout runs: the plan's at its micro-batch, recomputation and framework's
    implementation and attention (built and validated once for the many layouts that share them)."""
    return replace(workload, seq_len=seq_len, batch=batch, recompute=recompute, **dict(code))


def _entry(layout: Layout, batch: int, recompute: str) -> dict[str, Any]:
    return {"layout": {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "zero": layout.zero,
                       "microbatches": layout.microbatches, "batch": batch, "recompute": recompute,
                       "sp": layout.sp, "schedule": layout.schedule, "virtual_stages": layout.virtual_stages,
                       "framework": layout.framework, "ep": layout.ep, "cp": layout.cp, "fp8": layout.fp8,
                       **({"cp_rotate": layout.cp_rotate} if layout.cp > 1 else {}),
                       **({"etp": layout.etp} if layout.expert_split else {}),
                       **{name: getattr(layout, name) for name in LAYOUT_SETTINGS if getattr(layout, name)},
                       **({"dp_shard": layout.dp_shard} if layout.dp_shard else {})}}


def plan_training(cfg: ModelConfig, hardware: Hardware, gpus: int, seq_len: int, global_batch: int,
                  workload: Workload, fixed: dict[str, Any] | None = None,
                  efficiency: Efficiency | None = None, time_model: str | None = None,
                  nearest: bool = True, flops_convention: str = "dense", compiled: bool = False) -> dict[str, Any]:
    """Every training layout: {"feasible": [...] by step time, "infeasible": [...]}, and where
    none fits (with nearest), "nearest": what would (nearest_fit). Each layout runs its
    framework's activation profile and attention kernel (costmodel/defaults.py) unless fixed
    names an "impl" or "attention"; the workload's own are not used. flops_convention: the model
    FLOPs each MFU divides (dense or causal, costmodel/model_flops.py); compiled: torch.compile's
    fusions (the kernel-level model only), as simulate --train --compile."""
    fixed = fixed or {}
    check_fixed(fixed, gpus)
    if fixed.get("etp") and not cfg.moe:
        raise ConfigError(f"plan: etp {fixed['etp']} splits a mixture of experts' routed experts; model "
                          f"{cfg.name!r} has none: leave --etp out.")
    time_model = time_model_for(hardware, time_model)
    feasible, infeasible, problems = [], [], []
    for layout, batch, recompute, problem in training_layouts(cfg, hardware, gpus, global_batch, fixed, seq_len):
        if layout is None:
            problems.append(problem)
            continue
        code = implied(layout.framework, fixed.get("impl"), fixed.get("attention"), cfg.family, runs_flash(hardware))
        entry = _entry(layout, batch, recompute)
        entry["layout"].update(code)
        chosen = _chosen_workload(workload, seq_len, batch, recompute, tuple(code.items()))
        try:
            estimate = ParallelEstimate(cfg, chosen, layout)
        except ConfigError as error:
            infeasible.append({**entry, "reason": "unsupported", "detail": str(error)})
            continue
        per_rank = estimate.per_rank
        if per_rank["total"] > hardware.training_memory_bytes:
            infeasible.append({**entry, "reason": "memory", "per_rank": per_rank})
            continue
        overlap = plan_overlap(layout, fixed)
        if not overlap.align_grad:
            entry["layout"]["align_grad"] = False
        try:  # what only the step's time refuses (a collective it does not model) sets this layout aside
            step = step_time(estimate, hardware, efficiency, time_model, flops_convention=flops_convention,
                             **({"compiled": True} if compiled else {}),
                             overlap=overlap).step()
        except ConfigError as error:
            infeasible.append({**entry, "reason": "unsupported", "detail": str(error)})
            continue
        feasible.append({**entry, "per_rank": per_rank, "step_time": step["seconds"], "mfu": step["mfu"],
                         "hfu": step["hfu"], "split": step_split(step),  # its parts add up to step_time
                         "tokens_per_second": step["tokens_per_second"], "model_flops": step["model_flops"],
                         # an eager step whose counted host ops the kernel model weighs (layout/kernel_step.py)
                         **({"host": step["host"]} if "host" in step else {})})
    if not feasible and not infeasible:
        raise ConfigError(f"no layout of {cfg.name!r} on {gpus} GPUs can run: {problems[0]}" if problems else
                          f"no layout of {cfg.name!r} on {gpus} GPUs splits the global batch of "
                          f"{global_batch} into micro-batches of {fixed.get('batch') or MICRO_BATCHES} "
                          f"sequences over its data-parallel ranks.")
    feasible.sort(key=lambda e: e["step_time"])
    result = {"feasible": feasible, "infeasible": infeasible, "time_model": time_model}
    if not feasible and nearest:
        # The leanest layouts on more GPUs: ZeRO 3 in every framework that has it (DeepSpeed's and
        # FSDP2's differ by gigabytes a rank), full recomputation, micro-batch 1 (unless fixed),
        # the global batch rounded up to a multiple of the count; a fixed tp and pp kept (the plan
        # the hint names, the same options at that count, keeps them), dp grown with the count.
        lean = {**fixed, "recompute": fixed.get("recompute") or "full", "batch": fixed.get("batch") or 1,
                "dp": None}
        if fixed.get("zero") is None:
            lean["zero"] = 3

        def retry(count: int) -> dict[str, Any] | None:
            batch = -(-global_batch // count) * count
            try:
                return {**plan_training(cfg, hardware, count, seq_len, batch, workload, lean, efficiency,
                                        time_model, nearest=False, flops_convention=flops_convention,
                                        compiled=compiled),
                        "global_batch": batch}
            except ConfigError:
                return None

        result["nearest"] = nearest_fit(gpus, hardware.training_memory_bytes, infeasible, retry)
        from .offload_fit import offload_fit  # what estimate's verdict offers on these GPUs, not timed here

        if offload := offload_fit(cfg, workload, hardware, gpus, seq_len, fixed):
            result["nearest"]["offload"] = offload
        kept = {size: fixed[size] for size in ("tp", "pp") if fixed.get(size)}
        if kept:  # the sizes every count tried kept (the text says so where none fits)
            result["nearest"]["kept"] = kept
    return result


def nearest_fit(gpus: int, capacity: int, infeasible: list[dict[str, Any]],
                retry: Any) -> dict[str, Any]:
    """When nothing fits: the smallest memory per GPU any layout needed (and which), and the first
    GPU count, doubling up to 1,024 times as many, at which retry(count) (a plan, or None where
    that count cannot run) has a feasible layout: its best layout and memory. Where no layout was
    set aside for memory, or some were refused (a collective the hardware file has no bandwidth for),
    "unsupported" holds the distinct reasons the model refused them."""
    out: dict[str, Any] = {"memory_capacity": capacity}
    by_memory = [e for e in infeasible if e["reason"] == "memory"]
    if by_memory:
        least = min(by_memory, key=lambda e: e["per_rank"]["total"])
        out["smallest_memory"] = least["per_rank"]["total"]
        out["smallest_layout"] = least["layout"]
    refused = list(dict.fromkeys(e["detail"] for e in infeasible if e["reason"] == "unsupported"))
    if refused:
        out["unsupported"] = refused
    count = gpus
    for _ in range(10):
        count *= 2
        trial = retry(count)
        if trial and trial["feasible"]:
            best = trial["feasible"][0]
            out.update(gpus=count, layout=best["layout"], per_rank=best["per_rank"]["total"],
                       **({"global_batch": trial["global_batch"]} if "global_batch" in trial else {}))
            break
    return out


def serving_token_times(cfg: ModelConfig, workload: Workload, layout: Layout, hardware: Hardware,
                        efficiency: Efficiency | None, time_model: str, cuda_graphs: bool, compiled: bool,
                        estimate: ParallelEstimate) -> dict[str, Any]:
    """A serving layout's times: the time per output token, the mean of the gen - 1 decode steps
    that `simulate` with this layout times (timing.generation_decode_seconds, each step at its own
    context; roofline.decode_rates), and its rate over the replicas; the last step, at context
    prompt + gen - 1 where the memory is sized (`estimate`), with its tensor-parallel all-reduces
    (those do not grow with the context). With gen < 2 there is no decode step to average: the
    last step stands for it."""
    from ..roofline import decode_rates

    # an eager step's host issues the workload's decode code's counted ops (plan --decode-code; Hugging Face
    # generate's by default, decode_codes.serving_code), its KV cache that code's
    options = {"implementation": workload.decode_code, **({"compiled": True} if compiled else {})}
    last = step_time(estimate, hardware, efficiency, time_model, cuda_graphs=cuda_graphs, **options).token()
    out = {"time_per_output_token": last["seconds_per_token"], "tokens_per_second": last["tokens_per_second"],
           "tp_all_reduce_seconds": last["tp_all_reduce_seconds"], "ep_all_to_all_seconds": last["ep_all_to_all_seconds"],
           "last_step": {"context": workload.seq_len + workload.fed_back_tokens(), "seconds": last["seconds_per_token"]}}
    if last.get("host"):  # an eager step's host ops weighed against its kernels (kernel_step.token)
        out["host"] = last["host"]
    if workload.gen_tokens > 1:
        decode_s = generation_decode_seconds(cfg, workload, layout, hardware, efficiency, time_model,
                                             cuda_graphs, compiled, workload.decode_code)
        rates = decode_rates(workload.batch * layout.dp, workload.gen_tokens, decode_s)
        out.update(time_per_output_token=rates["time_per_output_token"],
                   tokens_per_second=rates["decode_tokens_per_second"])
    return out


def plan_serving(cfg: ModelConfig, hardware: Hardware, gpus: int, batch: int, prompt: int, gen: int,
                 dtype: str, fixed: dict[str, Any] | None = None,
                 efficiency: Efficiency | None = None, kv_cache: str = "dynamic",
                 quantization: dict[str, Any] | None = None,
                 time_model: str | None = None, nearest: bool = True,
                 mla: str = "absorbed", attention: str = DEFAULT_SERVE_ATTENTION,
                 cuda_graphs: bool = False, compiled: bool = False,
                 decode_code: str = DEFAULT_DECODE_CODE) -> dict[str, Any]:
    """Every serving layout for `batch` sequences generating gen tokens after a prompt: the memory
    per rank (weights and the KV cache at the last step, context prompt + gen - 1), ranked by the time
    per output token, the mean of the generation's decode steps (serving_token_times). kv_cache
    and quantization (weight_dtype, weight_group, kv_dtype) are the Workload's; latent attention
    is absorbed unless mla="naive", as engines serve it; attention: the kernel, flash unless given
    (as `serve`'s engines run it, serving/profile.py); cuda_graphs: each decode step replayed
    from a CUDA graph, as simulate --cuda-graphs times a layout's; compiled: torch.compile's fusions;
    decode_code: the code that decodes (costmodel/decode_codes.py: its cache's heads, how it reads a
    quantized cache, its eager host ops), as simulate --decode-code times a layout's."""
    fixed = fixed or {}
    check_fixed(fixed, gpus)
    require_decoder(cfg)
    check_inference_model(cfg)
    from ..decode_codes import check_runs_on

    check_runs_on(decode_code, hardware, f"--decode-code {decode_code}")
    if gen < 1:  # (simulate drops its decode lines; a plan ranks layouts by their decode steps)
        raise ConfigError(f"plan --serve ranks layouts by their time per output token: --gen {gen} generates "
                          "none; use --gen 1 or more.")
    time_model = time_model_for(hardware, time_model)

    def workload_of(sequences: int) -> Workload:
        return Workload(seq_len=prompt, gen_tokens=gen, batch=sequences, dtype=dtype, precision="pure",
                        attention=attention, kv_cache=kv_cache, mla=mla, decode_code=decode_code,
                        **{k: v for k, v in (quantization or {}).items() if v is not None})

    # the model-wide checks (quantization.check_whole_groups: GPTQ groups that split a K) once, in one
    # sentence, not as every layout's "unsupported"; under eager attention, which every model runs, so an
    # attention a model refuses stays each layout's "unsupported" reason
    whole = replace(workload_of(batch), attention="eager")
    from ..tree import CostModel, profile_for  # here: a warm plan without --serve imports no sympy
    CostModel(cfg, profile_for(cfg, whole), phase="decode").leaves
    # the engine's prefill chunk (vLLM v1's max_num_batched_tokens on this GPU): a rank's prefill
    # transient is one chunk's, not the whole batch's (serving_memory)
    from ..serving.budgets import default_budget
    chunk = default_budget("vllm", hardware, cfg.max_positions)[1]
    feasible, infeasible = [], []
    for tp in [fixed["tp"]] if fixed.get("tp") else tensor_sizes(cfg, hardware, gpus, inference=True):
        for pp in [fixed["pp"]] if fixed.get("pp") else [p for p in _divisors(gpus // tp) if p <= cfg.pipeline_layers]:
            if gpus % (tp * pp):
                continue
            dp = gpus // (tp * pp)
            if fixed.get("dp") and fixed["dp"] != dp:  # --dp kept as training's grid keeps it
                continue
            entry = {"layout": {"tp": tp, "pp": pp, "dp": dp, "batch": batch}}
            if batch % dp:
                infeasible.append({**entry, "reason": "batch"})
                continue
            entry["layout"]["batch_per_replica"] = batch // dp  # what `simulate --batch` takes (per replica)
            layout = Layout(dp=dp, tp=tp, pp=pp, framework="deepspeed")
            workload = workload_of(batch // dp)
            try:
                layout.check(cfg, gpus, inference=True)
                estimate = ParallelEstimate(cfg, workload, layout, phase="decode")
            except ConfigError as error:
                infeasible.append({**entry, "reason": "unsupported", "detail": str(error)})
                continue
            per_rank = serving_memory(estimate, chunk)
            if per_rank["total"] > hardware.serving_memory_bytes:
                infeasible.append({**entry, "reason": "memory", "per_rank": per_rank})
                continue
            feasible.append({**entry, "per_rank": per_rank,
                             **serving_token_times(cfg, workload, layout, hardware, efficiency, time_model,
                                                   cuda_graphs, compiled, estimate)})
    # ties (eager steps host-bound at every tp: each rank's host issues every layer's ops) go to the
    # layout that serves the most tokens a second (more replicas)
    feasible.sort(key=lambda e: (e["time_per_output_token"], -e["tokens_per_second"]))
    result = {"feasible": feasible, "infeasible": infeasible, "time_model": time_model, "prefill_chunk": chunk}
    if not feasible and nearest:
        def retry(count: int) -> dict[str, Any] | None:
            try:
                return plan_serving(cfg, hardware, count, batch, prompt, gen, dtype, {}, efficiency, kv_cache,
                                    quantization, time_model, nearest=False, mla=mla, attention=attention,
                                    cuda_graphs=cuda_graphs, compiled=compiled, decode_code=decode_code)
            except ConfigError:
                return None

        result["nearest"] = nearest_fit(gpus, hardware.serving_memory_bytes, infeasible, retry)
    return result
