"""`plan` as a function: every layout of a model on one or several GPU counts, ranked by time or
by cost, with the time, GPU-hours, FLOPs and dollars of a training run; what would fit when
nothing does. The `plan` command and costmodel.plan both call plan() here.

    import costmodel
    result = costmodel.plan("llama2-7b", gpus=[8, 16], tokens=1e12, price=2.5, rank_by="cost")
    result.best                       # the first feasible layout (a dict, as `plan --json` rows)
    result.to_dict()                  # `plan --json`
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, Sequence

from . import spec
from .json_units import JSON_UNITS
from .config import ConfigError, require_decoder
from .defaults import DEFAULT_HARDWARE
from .kernel_facts_file import borrowed_host_note
from .plain import plain_arguments, unknown_keyword
from .spec import CANONICAL_DTYPE, CUDA_GRAPHS_NEED_SERVE, DEFAULT_GEN_TOKENS, RANK_BY
from .workload import check_dtype

DEFAULT_SERVING_BATCH = 32


def _counts(gpus: int | Sequence[int]) -> list[int]:
    # 8.0 (or a bool) read "'float' object is not iterable", a TypeError, from list(gpus); numpy's integers (a
    # sweep's np.int64(8), np.array([8, 16])) are whole numbers too, refused by session 36's isinstance(c, int)
    scalar = isinstance(gpus, (numbers.Number, str, bytes))
    counts = [gpus] if scalar else list(gpus) if isinstance(gpus, Iterable) and not isinstance(gpus, Mapping) else []
    if not counts or any(isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1 for c in counts):
        raise ConfigError(f"--gpus must be positive whole numbers, got {gpus!r}.{_hardware_hint(gpus)}")
    return sorted({int(c) for c in counts})


def _hardware_hint(gpus: Any) -> str:
    """plan(model, "h100") (simulate's and serve's order: model, hardware) read "--gpus must be positive whole
    numbers, got 'h100'": plan's second argument is the count, and nothing said so."""
    from .hardware import load_hardware

    if not isinstance(gpus, str):
        return ""
    counts = gpus.replace(" ", "").split(",")
    if all(count.isdigit() for count in counts):  # plan(m, "8"): "must be positive whole numbers, got '8'" said no more
        listed = ", ".join(str(int(count)) for count in counts)
        return (f" {gpus!r} is text: in Python give the number, gpus={listed}" if len(counts) == 1 else
                f" {gpus!r} is text: in Python give a list of numbers, gpus=[{listed}]") + \
            " (the command line's --gpus reads the text)."
    try:
        load_hardware(gpus)
    except ConfigError:
        return ""
    return (f" {gpus!r} is a GPU: plan's arguments are (model, gpus, hardware), as "
            f"costmodel.plan(model, 8, {gpus!r}) or costmodel.plan(model, gpus=8, hardware={gpus!r}).")


class PlanResult:
    """The layouts of a plan: .feasible (ranked), .infeasible, .nearest (when nothing fits), and
    .inputs; .to_dict() is `plan --json`."""

    def __init__(self, data: dict[str, Any], warnings: list[str], notes: list[str] | None = None):
        self.data = data
        self.warnings = warnings
        self.notes = notes or []  # facts about the code run, not doubts: `note:` as simulate's

    feasible = property(lambda self: self.data["feasible"], doc="The layouts that fit, best first (dicts).")
    infeasible = property(lambda self: self.data["infeasible"], doc="The layouts that do not fit, with why.")
    inputs = property(lambda self: self.data["inputs"], doc="The model, hardware, GPUs and workload searched.")

    @property
    def best(self) -> dict[str, Any] | None:
        """The first feasible layout, or None where none fits."""
        return self.feasible[0] if self.feasible else None

    def to_dict(self) -> dict[str, Any]:
        """Every layout, exactly as `plan --json` prints it."""
        from .plain import finite

        return finite({**self.data, "units": JSON_UNITS["plan"]})  # as `plan --json` prints it: no infinity

    def text(self, top: int = 10) -> str:
        """The `plan` command's table, its `top` best layouts."""
        from .tools_path import tool

        return tool("reports.plan_text").render_plan(self.data, self.inputs["serve"], top, self.inputs["memory_capacity"])

    def __repr__(self) -> str:
        return self.text(top=5)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(self.text())}</pre>"


#: The layout sizes a serving plan can fix (plan_serving's grid).
SERVING_FIXED = ("tp", "pp", "dp")


@plain_arguments
def plan(model: Any, gpus: int | Sequence[int], hardware: str = DEFAULT_HARDWARE, *, serve: bool = False,
         seq_len: int | None = None, global_batch: int | None = None, batch: int | None = None,
         prompt: int | None = None, gen: int = DEFAULT_GEN_TOKENS, dtype: str | None = None, impl: str | None = None,
         attention: str | None = None, kv_cache: str = "dynamic", tokens: float | None = None,
         price: float | None = None, rank_by: str = "time", time_model: str | None = None,
         mla: str = "absorbed", weight_dtype: str | None = None, weight_group: int | None = None,
         quantize_head: bool = False, quant_layout: str | None = None, kv_dtype: str | None = None, fp8_gemm: str | None = None, cuda_graphs: bool = False,
         flops_convention: str = "dense", compiled: bool = False, optimizer: str | None = None,
         decode_code: str | None = None, **fixed: Any) -> PlanResult:
    """Every layout of `model` on each count in `gpus` (training, or serving with serve=True):
    those that fit ranked by time (step time; time per output token when serving) or by cost
    (GPU-seconds per token), those that do not with their reason. fixed: tp, pp, dp, zero, sp,
    framework, recompute, ep, etp, cp, schedule, fp8 keep only the layouts with that value; fp8_param_gather,
    tp_only_amax_red, no_align_grad_reduce, overlap_grad_reduce and pure_precision (True) and grad_reduce_dtype ("fp32" or "bf16") are settings
    of every layout (layout/plan.py SETTINGS)
    (dp_shard: hybrid sharding, FSDP2's HSDP or megatron --zero 3's HFSDP, in every layout); impl and
    attention, when given, replace what each layout's framework implies (costmodel/defaults.py);
    serving runs attention's kernel, flash (as `serve`) unless given, sdpa where FlashAttention-2
    does not run (defaults.serving_attention: Volta, Turing; eager for a class without sdpa; a typed flash there is refused).
    tokens: time to train, GPU-hours, FLOPs; price (dollars per GPU-hour; default the hardware
    file's) adds dollars. time_model: roofline or kernels (docs/time.md; None: kernels where the
    hardware file has what the kernel model needs). mla: latent attention
    served absorbed (as engines run it) or naive (as transformers does). weight_dtype, weight_group,
    kv_dtype and fp8_gemm (serving): quantized weights and KV cache, each tensor-parallel rank
    holding its shards as stored (costmodel/layout/rank.py); quantize_head: the output head in the
    weight format too (gpt-fast's and torchao's; costmodel/quantization.py); quant_layout: how int8
    and int4 weights are stored (spec.QUANT_LAYOUTS; None: gptq's). cuda_graphs (serving): each decode
    step replayed from a CUDA graph (no launch overhead), as simulate --cuda-graphs.
    flops_convention (training): the model FLOPs MFU and the run's FLOPs count, dense or causal.
    compiled: torch.compile's fusions (the kernel-level model), as simulate --compile. optimizer
    (training): the optimizer whose state each rank holds (spec.OPTIMIZERS; None: AdamW). decode_code
    (serving): the code that decodes (decode_codes.serving_code: None, Hugging Face generate's, as simulate's)."""
    from .api import load_model, make_workload
    from .checkpoint import inference_options
    from .cost import check_price_has_tokens, gpus_of, price_of, price_plan
    from .decode_codes import serving_code
    from .defaults import FRAMEWORK_CODE, fallback_note, has_attention, implied, serving_attention, unfused_note
    from .flash_support import require_attention, runs_flash
    from .hardware import load_hardware
    from .errors import graphs_replayed
    from .layout import plan as planner

    cuda_graphs = graphs_replayed("cuda_graphs", cuda_graphs)  # "off" (the command's word) replayed graphs
    cfg = load_model(model)
    counts = _counts(gpus)
    for name, value in (("--global-batch", global_batch), ("--batch", batch)):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}.")
    layout_keys = ["tp", "pp", "dp", "zero", "sp", "framework", "recompute", "ep", "etp", "cp", "cp_rotate", "schedule", "fp8", "dp_shard",
                   *planner.SETTINGS]
    if "rate" in fixed:  # `plan --serve --rate`'s capacity search is the command's (reports/serving.py), not this call's
        raise ConfigError("plan: rate: the capacity search of `plan --serve --rate` is the command's only; in Python, "
                          "costmodel.serve(model, hardware, rate=..., tp=...) runs one deployment under that load.")
    # "plan: unknown option 'seqlen'." named neither seq_len nor what plan takes, as simulate's and serve's do
    unknown_keyword("plan", fixed, [name for name in inspect.signature(plan).parameters if name != "fixed"] + layout_keys)
    fixed = {k: v for k, v in fixed.items() if k not in planner.SETTINGS or v}  # a setting left off: not fixed
    if serve:  # a serving layout is tp x pp x dp: what only training reads is refused, not dropped
        unread = [name for name, value in (*fixed.items(), ("seq_len", seq_len), ("global_batch", global_batch),
                                           ("impl", impl))
                  if name not in SERVING_FIXED and value is not None and value is not False]
        if unread:
            raise ConfigError(f"plan: {', '.join(unread)}: training options, which serve=True ignores; a serving "
                              "plan takes batch, prompt and gen (and tp, pp, dp).")
    fixed = {**fixed, "batch": batch, "impl": impl, "attention": attention}
    chosen = load_hardware(hardware)
    dtype = dtype or chosen.default_dtype  # fp16 on a V100 or T4, as simulate and serve take it
    check_dtype("plan", dtype)  # "bf17" read "h100-sxm has no bf17 peak (Hopper)", as if a dtype the GPU lacks
    if not serve:
        planner.check_settings(fixed, dtype)
    chosen.require_peak(CANONICAL_DTYPE.get(dtype, dtype))
    chosen.require_fp8(fixed.get("fp8"))
    require_attention(chosen, attention)  # a typed flash on a T4: one line
    for count in counts if not serve else ():  # a training layout's ranks all communicate, across nodes past one:
        if count > 1:  # a file without that link is one line, as simulate's (no "no count fits; more memory")
            chosen.link(count)
    quantization = {k: v for k, v in (("weight_dtype", weight_dtype), ("weight_group", weight_group),
                                      ("kv_dtype", kv_dtype), ("fp8_gemm", fp8_gemm),
                                      ("quantize_head", quantize_head or None),
                                      ("quant_layout", quant_layout)) if v is not None}
    if quantization and not serve:
        raise ConfigError("--weight-dtype, --weight-group, --quantize-head, --quant-layout, --kv-dtype and --fp8-gemm plan "
                          "serving (add --serve); "
                          "training on quantized weights (QLoRA) is `finetune`'s.")
    if decode_code is not None and not serve:
        raise ConfigError("--decode-code names the code that decodes a serving plan's layouts; add --serve.")
    if serve and optimizer not in (None, spec.DEFAULT_OPTIMIZER):  # (AdamW: the default, read by no serving plan)
        raise ConfigError("--optimizer names a training step's optimizer; leave it out with --serve.")
    if serve and flops_convention != "dense":
        raise ConfigError("--flops-convention names the model FLOPs of a training step's MFU; leave it out with "
                          "--serve.")
    if cuda_graphs and not serve:
        raise ConfigError(CUDA_GRAPHS_NEED_SERVE)
    if not serve:
        check_price_has_tokens(tokens, price)
    if serve:
        if tokens is not None:
            raise ConfigError("--tokens costs a training run; leave it out with --serve.")
        if price is not None:  # it read "--price cost[s] a training run" while --help offers it to --serve --rate
            raise ConfigError("--price with --serve prices the capacity search's deployments ($/h and $/M out): add "
                              "--rate, --slo-ttft and --slo-tpot, or price one layout's generation with `simulate "
                              "--price` and its --tp/--pp/--dp.")
        require_decoder(cfg)
        batch = DEFAULT_SERVING_BATCH if batch is None else batch
        # the weights' format: the checkpoint's unless weight_dtype says (costmodel/checkpoint.py)
        quantization = inference_options(cfg, quantization)
        source = quantization.pop("weight_dtype_source")
        quantization = {k: v for k, v in quantization.items() if v is not None}
        # the default fused kernel where FlashAttention-2 does not run (Volta, Turing): sdpa, said so
        attention, note = serving_attention(attention, chosen, cfg.family)
        decode_code = serving_code(None, decode_code)  # plan --serve --rate's rule too (its scheduler's engine)
        notes = [note] if note else []
        # under the kernel the layouts run, so that its warnings (a window's scores) name it, not eager
        workload, warnings = make_workload(cfg, prompt, dtype=dtype, gen_tokens=gen, kv_cache=kv_cache,
                                           attention=attention, **quantization)
    else:
        frameworks = tuple([fixed["framework"]] if fixed.get("framework") else list(FRAMEWORK_CODE))
        workload, warnings = training_workload(cfg, seq_len, dtype, optimizer, frameworks,
                                               {fw: implied(fw, impl, attention, cfg.family, runs_flash(chosen))
                                                for fw in frameworks})
        notes = [note for note in (fallback_note(frameworks, impl, attention, cfg.family, has_attention(cfg)),
                                   unfused_note(frameworks, attention, runs_flash(chosen), has_attention(cfg))) if note]
    feasible, infeasible, nearest, batches, ran, chunk = [], [], None, {}, None, None
    for count in counts:
        if serve:
            result = planner.plan_serving(cfg, chosen, count, batch, workload.seq_len, gen, workload.dtype,
                                          fixed, kv_cache=kv_cache, quantization=quantization,
                                          time_model=time_model, mla=mla,
                                          attention=attention, cuda_graphs=cuda_graphs, compiled=compiled,
                                          decode_code=decode_code)
        else:
            batches[count] = 8 * count if global_batch is None else global_batch
            result = planner.plan_training(cfg, chosen, count, workload.seq_len, batches[count], workload,
                                           fixed, time_model=time_model, flops_convention=flops_convention,
                                           compiled=compiled)
        ran = result["time_model"]  # the model that ran (costmodel/hardware.time_model_for)
        feasible += result["feasible"]
        infeasible += result["infeasible"]
        nearest = result.get("nearest", nearest)
        chunk = result.get("prefill_chunk")  # plan --serve's: a rank's prefill transient is one chunk's
    host_bound = serving_host_note(feasible) if serve else host_note(feasible, chosen)
    notes += [host_bound] if host_bound else []
    data: dict[str, Any] = {"feasible": feasible, "infeasible": infeasible}
    if serve:
        key = "time_per_output_token" if rank_by == "time" else None
        if rank_by not in RANK_BY:
            raise ConfigError(f"--rank-by must be one of {', '.join(RANK_BY)}, got {rank_by!r}.")
        feasible.sort(key=(lambda e: e[key]) if key else
                      (lambda e: gpus_of(e) / e["tokens_per_second"]))
    else:
        price_plan(data, tokens, *price_of(price, chosen), rank_by=rank_by)
    if not feasible and nearest is not None:
        data["nearest"] = nearest
    one = len(counts) == 1
    data["inputs"] = {"model": cfg.name, "hardware": chosen.name, "gpus": counts[0] if one else counts,
                      "serve": serve, "time_model": ran, "compiled": compiled, "seq_len": workload.seq_len,
                      "dtype": workload.dtype, **quantization,
                      **({"weight_dtype_source": source} if serve and source else {}),
                      **({"gen": gen, "batch": batch, "attention": attention, "decode_code": decode_code,
                          "prefill_chunk": chunk,
                          "kv_cache": kv_cache, "cuda_graphs": cuda_graphs, "mla": mla if cfg.mla else None} if serve else
                         {"global_batch": batches[counts[0]] if one else batches, "batch": batch,
                          "fp8": fixed.get("fp8"), **{k: fixed[k] for k in planner.SETTINGS if fixed.get(k)},
                          "flops_convention": flops_convention, "mtp": cfg.mtp_layers, "optimizer": workload.optimizer,
                          "tokens": tokens, "price_per_gpu_hour": price_of(price, chosen)[0]}),
                      "rank_by": rank_by,
                      "memory_capacity": chosen.serving_memory_bytes if serve else chosen.training_memory_bytes}
    return PlanResult(data, warnings, notes)


def training_workload(cfg: Any, seq_len: int | None, dtype: str | None, optimizer: str | None,
                      frameworks: tuple[str, ...], codes: dict[str, dict[str, str]]) -> tuple[Any, list[str]]:
    """A training plan's workload (its length, dtype and optimizer; plan_training runs each layout under its
    framework's code, codes[framework]) and the warnings of the code its layouts run: a warning every
    framework's code gives once, one that differs for each code's frameworks, named ("megatron layouts:
    ..."). `plan --model gemma3-4b` warned of eager attention's scores, the code of no framework, where
    Megatron's layouts run flash and DeepSpeed's and FSDP2's sdpa."""
    from .api import make_workload

    optimizer_given = {"optimizer": optimizer} if optimizer else {}
    made = {fw: make_workload(cfg, seq_len, holds_cache=False, dtype=dtype, **optimizer_given, **codes[fw])
            for fw in frameworks}
    workload = made[frameworks[0]][0]
    warnings: list[str] = []
    for fw in frameworks:
        for warning in made[fw][1]:
            which = [other for other in frameworks if warning in made[other][1]]
            line = warning if len(which) == len(frameworks) else f"{' and '.join(which)} layouts: {warning}"
            if line not in warnings:
                warnings.append(line)
    return workload, warnings


def serving_host_note(feasible: list[dict[str, Any]]) -> str | None:
    """Where serving layouts' decode steps are host-bound (Hugging Face generate's eager ops issued on
    each rank's host outlast its kernels: layout/kernel_step.py token), one line saying how many, that
    their times per token are the host's, not the layouts', and how to time the kernels; else None
    (`plan --serve --gpus 8` ranked ten layouts of llama3.1-8b, each 16.3 ms a token, in an order that
    said nothing, and did not say why; llama3-70b's tp 2, 4 and 8 tied at 40.2 ms beside three pp-only
    layouts that were not bound, and, not every layout being bound, nothing was said)."""
    bound = [entry for entry in feasible if entry.get("host", {}).get("bound")]
    if not bound:
        return None
    # a pipeline's rank issues its stage's share (ops_per_rank): "6,136 ops on each rank's host" was pp 2's whole step
    ops = sorted({entry["host"].get("ops_per_rank", entry["host"]["ops_per_step"]) for entry in bound})
    which = ("every layout's decode step is" if len(bound) == len(feasible) else
             f"{len(bound):,} of the {len(feasible):,} layouts' decode steps are")
    return (f"{which} host-bound: Hugging Face generate's eager step issues "
            + (f"{ops[0]:,} to {ops[-1]:,} ops" if ops[0] != ops[-1] else f"{ops[0]:,} ops")
            + " on each rank's host, longer than the rank's kernels, so the times per token rank the hosts, not "
            "the layouts (ties go to the most tokens a second); --cuda-graphs on times each layout's decode "
            "step replayed from a graph, as an engine runs it.")


def host_note(feasible: list[dict[str, Any]], hardware: Any) -> str | None:
    """Where some layouts' eager steps take their counted host ops' time (layout/kernel_step.py:
    Hugging Face code, each rank its stage's share) and others' code is not counted, one line saying so; else None."""
    counted = [entry for entry in feasible if "host" in entry]
    if not counted or len(counted) == len(feasible):
        return None
    ops = sorted({entry["host"]["ops_per_step"] for entry in counted})
    return (f"{len(counted):,} of the {len(feasible):,} layouts run Hugging Face's eager code, whose step issues "
            f"{ops[0]:,.0f} ops or more (kernel_facts.json eager_training_ops) at {hardware.eager_op_s * 1e6:.2f} us "
            "each on the host: each takes the longer of that and its kernels; the others' code issues ops "
            "not counted, so no host time is charged to them."
            + (f" H{borrowed_host_note(hardware.eager_op_s)[1:]}." if hardware.host_op_borrowed else ""))
