"""Does it fit? A model and workload against a GPU's memory, and what to change when it does not.

Each option is evaluated exactly with the same estimates `estimate` prints (costmodel.estimation
for one GPU, costmodel.layout for several), and listed in the order of what it costs the user:

  attention    sdpa instead of eager: no n x n matrix kept (free where the code can use it); flash
               where the model's Hugging Face class has no sdpa (Gemma 2) or its sdpa runs torch's
               math path (latent attention's value width: kernels._sdpa), none where it runs
               neither (BLOOM, MPT: facts sdpa_supported, flash_supported)
  recompute    selective reruns the attention core in backward; full reruns each layer's
               forward (one more forward: a third more matmul FLOPs than forward + backward; in a
               fine-tuning step about half, its frozen base running no weight-gradient GEMM)
  ZeRO stage   over the GPUs given: 1 shards the optimizer state, 2 the gradients too, 3 the
               weights too (gathered again every step: about 1.5x the data-parallel traffic)
  more GPUs    when nothing fits on the GPUs given: the fewest (doubling) on which ZeRO 3
               with full recomputation fits
  offload      DeepSpeed's ZeRO-Offload (the optimizer on the host) or ZeRO-Infinity (the
               weights too), alone or, where neither fits alone, beside ZeRO 3 and full
               recomputation: no more GPUs, a slower step (costmodel/offload.py). Each a change to
               the run as given (its recompute kept): plan's offload line answers another question,
               the leanest DeepSpeed layout's (costmodel/layout/offload_fit.py says how they differ)
  more GPUs    inference: the fewest GPUs of one replica that hold it, tensor parallel up to a
               node's GPUs (8 at most), then pipeline stages of that tp
  int8 / int4  quantized weights (inference only: training needs the full-precision copy)
  batch        the largest batch that fits
  sequence     the longest sequence that fits

A fine-tuning workload (costmodel/finetune.py) is checked the same way through its own memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from .config import ConfigError, ModelConfig, Workload
from .defaults import runs_attention, sdpa_runs_math

#: GPU counts tried for "more GPUs": doubling up to this many.
MAX_GPUS = 4096
#: What full recomputation adds to a step's matmul FLOPs (one more forward of the layers): a third of a
#: training step's forward + backward (the backward two forwards: input and weight gradients); about half
#: of a fine-tuning step's, whose frozen base runs no weight-gradient GEMM (finetune's own GEMM FLOPs,
#: Llama 3.1 8B QLoRA at 2,048 tokens: 61.5 -> 90.1 TFLOP, the head not rerun).
RERUN_SHARE = {"training": "a third more matmul FLOPs", "finetune": "about half more matmul FLOPs"}


@dataclass(frozen=True)
class Option:
    """One change, the memory per GPU it leaves, whether that fits and what it costs."""

    change: str  # as an option on the command line: "--recompute full"
    memory: int
    fits: bool
    cost: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _layout(base: Any, **changes: Any) -> Any:
    from .layout import Layout

    return dataclasses.replace(base or Layout(), **changes)


def training_memory(cfg: ModelConfig, workload: Workload, layout: Any = None) -> int:
    """Training memory per GPU: estimate's training total on one GPU, the most loaded rank's
    total under a layout."""
    if layout is None or layout.gpus == 1 and layout.zero == 0:
        from .estimation import Estimate

        return Estimate(cfg, workload).memory_numbers()["training_total"]
    from .layout import ParallelEstimate

    # estimate's training figure beside its inference formats, as the one-GPU tree sizes it (Workload.for_training)
    return ParallelEstimate(cfg, workload.for_training(asked=True), layout).per_rank["total"]


def host_memory_note(cfg: ModelConfig, workload: Workload, layout: Any, **changes: Any) -> str:
    """"; X of host memory a node" for the layout with `changes` (an offload): the host bytes a node
    holds (costmodel/offload.py offloaded, what `estimate` with the layout prints), or "" where it cannot run."""
    from .layout import ParallelEstimate

    try:
        estimate = ParallelEstimate(cfg, workload.for_training(asked=True), _layout(layout, **changes))
        host = estimate.offloaded(estimate.stages[estimate.per_rank["stage"]])["host_bytes_per_node"]
    except ConfigError:
        return ""
    unit, scale = ("TiB", 2**40) if host >= 2**40 else ("GiB", 2**30)
    return f"; {host / scale:.2f} {unit} of host memory a node"


def inference_memory(cfg: ModelConfig, workload: Workload, layout: Any = None) -> int:
    """Inference memory per GPU as a generation holds it (estimate's generate_total: generate's
    prefill keeps the last position's logits, as simulate sizes one GPU and serving_memory a
    layout's rank; the plain forward's inference_total, every position's logits, made one GPU's
    verdict 1.96 GiB above simulate's for Llama 3.1 8B at 8k); with a layout, a serving rank's; a
    model that is not decoder-only is served whole on each GPU: layout.spec.check_inference_model."""
    if layout is None or layout.gpus == 1 or cfg.architecture != "decoder":  # layout.check_inference_model
        from .estimation import Estimate

        return Estimate(cfg, workload).memory_numbers()["generate_total"]
    from .layout import ParallelEstimate
    from .layout.plan import serving_memory

    return serving_memory(ParallelEstimate(cfg, workload, layout, phase="decode"))["total"]


def _largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest k in 1..high with fits(k) (fits nondecreasing as k falls); 0 if none."""
    if not fits(1):
        return 0
    low = 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return high if fits(high) else low


def _try(memory: Callable[..., int], cfg: ModelConfig, workload: Workload, layout: Any = None,
         **changes: Any) -> int | None:
    """memory under layout with `changes` (a suggested --dp, --zero, --offload), None where the
    changed layout cannot run (DeepSpeed's pipeline engine with --zero 2 or 3) or the model refuses it."""
    try:
        return memory(cfg, workload, _layout(layout, **changes) if changes else layout)
    except ConfigError:
        return None


def _deepest_zero(memory: Callable[..., int], cfg: ModelConfig, workload: Workload, layout: Any,
                  **changes: Any) -> tuple[int, int | None]:
    """The deepest ZeRO stage the changed layout runs (3, else 2, else 1: Megatron's distributed
    optimizer and DeepSpeed's pipeline engine stop at 1) and its memory; (3, None) if none runs."""
    for zero in (3, 2, 1):
        needed = _try(memory, cfg, workload, layout, zero=zero, **changes)
        if needed is not None:
            return zero, needed
    return 3, None


def options(cfg: ModelConfig, workload: Workload, layout: Any, capacity: int, gpus: int,
            phase: str, memory: Callable[[ModelConfig, Workload, Any], int],
            extra: tuple[tuple[str, int | None, str], ...] = (), flash: bool = True,
            node_gpus: int = 8) -> list[Option]:
    """The changes that bring memory per GPU under capacity, cheapest first (see the module); flash
    False: the GPU runs no FlashAttention-2 (flash_support.runs_flash), so it is not offered;
    node_gpus: the hardware's GPUs a node, the widest tensor parallelism suggested."""
    out: list[Option] = []

    def add(change: str, needed: int | None, cost: str) -> None:
        if needed is not None:
            out.append(Option(change, needed, needed <= capacity, cost))

    training = phase in ("training", "finetune")
    # torch's CPU sdpa is no fused kernel where the value heads' width differs (kernels._sdpa: math)
    math_sdpa = sdpa_runs_math(cfg, workload, getattr(layout, "device", None))
    fused = [kernel for kernel in ("sdpa", "flash") if runs_attention(workload.impl, cfg.family, kernel)
             and not (kernel == "sdpa" and math_sdpa) and (flash or kernel != "flash")]
    if workload.attention == "eager" and fused:  # the first fused kernel the model's class runs
        add(f"--attention {fused[0]}", _try(memory, cfg, dataclasses.replace(workload, attention=fused[0]), layout),
            "none: a fused kernel keeps no n x n matrix (the code must use it)")
    if training:
        order = ("none", "selective", "full")  # from "deepseek", only full surely keeps less
        start = order.index(workload.recompute) + 1 if workload.recompute in order else len(order) - 1
        for recompute in order[start:]:
            add(f"--recompute {recompute}",
                _try(memory, cfg, dataclasses.replace(workload, recompute=recompute), layout),
                "reruns the attention core in backward" if recompute == "selective" else
                "reruns each layer's forward in backward: " + RERUN_SHARE[phase])
        if workload.attention == "eager" and fused and workload.recompute != "full" and not any(
                option.fits for option in out if option.change in (f"--attention {fused[0]}", "--recompute full")):
            # neither alone fits where both do: Qwen3 8B at 8,192 tokens on one H200 (eager 621.43 GiB,
            # sdpa 186.09, eager with full recomputation over 140.50 at that length, both 130.84) was
            # offered 2 GPUs, which run sdpa and full recomputation themselves, and not the two on one
            add(f"--attention {fused[0]} --recompute full",
                _try(memory, cfg, dataclasses.replace(workload, attention=fused[0], recompute="full"), layout),
                "a fused kernel and each layer's forward rerun in backward: " + RERUN_SHARE[phase])
    if phase == "training":
        current = layout.zero if layout is not None else 0
        dp = layout.dp if layout is not None else gpus  # the data-parallel ranks of the GPUs given
        shards = layout.shard_ranks if layout is not None else gpus  # ZeRO's group: dp x cp
        if shards > 1:
            for zero in range(current + 1, 4):
                add(f"--dp {dp} --zero {zero}", _try(memory, cfg, workload, layout, dp=dp, zero=zero),
                    ("shards the optimizer state", "shards the gradients too",
                     "shards the weights too, gathered every step")[zero - 1])
        lean = dataclasses.replace(workload, recompute="full")
        if shards > 1 and current < 3 and workload.recompute != "full":
            zero, needed = _deepest_zero(memory, cfg, lean, layout, dp=dp)
            if zero > current:
                add(f"--dp {dp} --zero {zero} --recompute full", needed,
                    ("optimizer state sharded", "gradients sharded", "weights gathered every step")[zero - 1]
                    + ", each layer's forward rerun" if zero < 3 else
                    "both: weights gathered every step, each layer's forward rerun")
        fits_here = any(option.fits for option in out)  # on the GPUs given, before offload
        count = max(gpus, 1)
        while count < MAX_GPUS and not any(option.fits for option in out):
            count *= 2
            zero, needed = _deepest_zero(memory, cfg, lean, layout,
                                         dp=count * (layout.dp if layout else 1) // max(gpus, 1))
            if needed is not None and needed <= capacity:
                add(f"--gpus {count} (--dp with --zero {zero} --recompute full)", needed, f"{count} GPUs")
                break
        if layout is None or layout.framework == "deepspeed":
            offload = layout.offload if layout is not None else "none"
            zero = max(current, 2)
            plain = len(out)
            host = lambda run, **changes: host_memory_note(cfg, run, layout, **changes)  # noqa: E731
            if offload == "none":
                add(f"--dp {dp} --zero {zero} --offload optimizer",
                    _try(memory, cfg, workload, layout, dp=dp, zero=zero, offload="optimizer"),
                    "ZeRO-Offload: the optimizer's update on the host CPU, over PCIe every step"
                    + host(workload, dp=dp, zero=zero, offload="optimizer"))
            if offload != "params":
                add(f"--dp {dp} --zero 3 --offload params",
                    _try(memory, cfg, workload, layout, dp=dp, zero=3, offload="params"),
                    "ZeRO-Infinity: the weights streamed from the host for every layer, forward and backward"
                    + host(workload, dp=dp, zero=3, offload="params"))
            if workload.recompute != "full" and not fits_here and not any(o.fits for o in out[plain:]):
                # nothing fits on these GPUs, offload alone neither: offload beside ZeRO 3 and each
                # layer's forward rerun, as ZeRO 3 is offered with it above
                kinds = {"none": ("optimizer", "params"), "optimizer": ("params",)}.get(offload, ())
                for kind in kinds:
                    add(f"--dp {dp} --zero 3 --offload {kind} --recompute full",
                        _try(memory, cfg, lean, layout, dp=dp, zero=3, offload=kind),
                        ("ZeRO-Offload" if kind == "optimizer" else "ZeRO-Infinity")
                        + " with the weights gathered every step and each layer's forward rerun"
                        + host(lean, dp=dp, zero=3, offload=kind))
    for change, needed, cost in extra:
        add(change, needed, cost)
    if phase == "inference" and workload.weight_dtype is None and workload.weight_dtype_source == "option":
        stored = _checkpoint_format(cfg, workload)  # --weight-dtype none on a quantized checkpoint: its own
        # format, as released (no accuracy given up), before more GPUs
        if stored is not None:
            add("drop --weight-dtype none", _try(memory, cfg, stored, layout),
                f"the checkpoint's own {stored.weight_dtype} weights (its quantization_config), as released")
    if phase == "inference" and cfg.n_decoder_layers:
        _more_serving_gpus(cfg, workload, layout, capacity, memory, add, node_gpus)
    if phase == "inference":
        # (a group the checkpoint's format chose is that format's, not the suggestion's)
        group = None if workload.weight_dtype_source == "checkpoint" else workload.weight_group
        for weight_dtype in ("int8", "int4"):
            add(f"--weight-dtype {weight_dtype}",
                _try(memory, cfg, dataclasses.replace(workload, weight_dtype=weight_dtype, weight_group=group,
                                                      weight_dtype_source="option"), layout),
                "quantized weights (LLM.int8 / GPTQ-AWQ style): some accuracy")
    smaller = (("batch", "--batch", "fewer sequences a step (more steps, or gradient accumulation)" if training
                else "fewer sequences at once"), ("seq_len", "--seq-len", "shorter sequences"))
    largest = {}
    for field, option, why in smaller:  # the largest value of the field that fits, if any
        if getattr(workload, field) > 1:
            value = largest[field] = _largest(lambda v: (_try(memory, cfg, dataclasses.replace(
                workload, **{field: v}), layout) or capacity + 1) <= capacity, getattr(workload, field))
            if value:
                add(f"{option} {value}", memory(cfg, dataclasses.replace(workload, **{field: value}), layout), why)
    if training and workload.recompute != "full":  # at batch 1 the sequence is what gives way
        field = "batch" if workload.batch > 1 else "seq_len"
        if getattr(workload, field) > 1:
            _recompute_and_smaller(cfg, workload, layout, capacity, memory, field, largest.get(field, 0), add)
    return [option for option in out if option.fits]


def unquantized(workload: Workload) -> Workload:
    """The workload with its weights in --dtype, as `--weight-dtype none` runs it (the KV cache's format kept)."""
    from . import spec

    return dataclasses.replace(workload, weight_dtype=None, weight_group=None, weight_dtype_source="option",
                               quant_layout=spec.DEFAULT_QUANT_LAYOUT, weight_kept=(), double_quant=True,
                               quantize_head=False, fp8_gemm=spec.DEFAULT_FP8_GEMM)


def _quantized_weights(memory: Callable[..., int], cfg: ModelConfig, workload: Workload, layout: Any,
                       capacity: int) -> dict[str, Any]:
    """An inference verdict in quantized weights: their format, where it came from (the checkpoint's
    quantization_config or --weight-dtype) and what the weights in --dtype would need, so a fit that
    only the format makes (gpt-oss-120b's MXFP4 experts on one 80 GB GPU) says so."""
    whole = _try(memory, cfg, unquantized(workload), layout)
    return {"dtype": workload.weight_dtype, "source": workload.weight_dtype_source, "unquantized_memory": whole,
            "unquantized_fits": None if whole is None else whole <= capacity}


def _checkpoint_format(cfg: ModelConfig, workload: Workload) -> Workload | None:
    """The workload in the checkpoint's own weight format (checkpoint.inference_options, the default of
    --weight-dtype), None where the config has no quantization_config or its format is not modelled."""
    from .checkpoint import inference_options

    if getattr(cfg, "checkpoint_weights", None) is None:
        return None
    try:
        stored = inference_options(cfg, {})
    except ConfigError:
        return None
    return dataclasses.replace(workload, **stored)


#: What _recompute_and_smaller says of each field it shrinks beside full recomputation.
WITH_RECOMPUTE = {"batch": ("--batch", "fewer sequences a step (more steps, or gradient accumulation)"),
                  "seq_len": ("--seq-len", "shorter sequences")}


def _recompute_and_smaller(cfg: ModelConfig, workload: Workload, layout: Any, capacity: int,
                           memory: Callable[..., int], field: str, plain: int,
                           add: Callable[[str, int | None, str], None]) -> None:
    """Where full recomputation alone does not fit, the largest batch (or, at batch 1, the longest
    sequence) that fits with it, when that is more than the largest without it: QLoRA of Llama 3 8B at
    16 x 2,048 on an RTX 4090 was offered --batch 1 and --seq-len 200, not gradient checkpointing at
    batch 9; QLoRA of Llama 3.1 8B at 60,000 tokens there only --seq-len 2925, not --recompute full
    --seq-len 19303."""
    lean = dataclasses.replace(workload, recompute="full")
    if (_try(memory, cfg, lean, layout) or capacity + 1) <= capacity:  # offered alone above
        return
    value = _largest(lambda v: (_try(memory, cfg, dataclasses.replace(lean, **{field: v}), layout) or capacity + 1)
                     <= capacity, getattr(workload, field))
    option, why = WITH_RECOMPUTE[field]
    if value > plain:
        add(f"--recompute full {option} {value}", memory(cfg, dataclasses.replace(lean, **{field: value}), layout),
            f"each layer's forward rerun, {why}")


def _more_serving_gpus(cfg: ModelConfig, workload: Workload, layout: Any, capacity: int,
                       memory: Callable[..., int], add: Callable[[str, int | None, str], None],
                       node_gpus: int = 8) -> None:
    """The fewest GPUs of one replica that hold it: tensor parallelism doubled up to a node's GPUs
    (8 at most: an RTX 4090 node's 2, plan --serve's bound, tensor_sizes), then pipeline stages of that
    tp doubled (a layout the model cannot split is skipped). It offered --tp 8 on 2-GPU nodes."""
    widest = max(1, min(8, node_gpus))
    tp, pp = (layout.tp, layout.pp) if layout is not None else (1, 1)
    while tp * pp < MAX_GPUS:
        tp, pp = (tp * 2, pp) if tp * 2 <= widest else (tp, pp * 2)
        try:
            trial = _layout(layout, tp=tp, pp=pp, dp=1)
            trial.check(cfg, tp * pp, inference=True)
        except ConfigError:
            continue
        needed = _try(memory, cfg, workload, trial)
        if needed is not None and needed <= capacity:
            add(f"--gpus {tp * pp} --tp {tp}" + (f" --pp {pp}" if pp > 1 else ""), needed,
                f"{tp * pp} GPUs: " + ("tensor parallel" if pp == 1 else f"tensor parallel {tp} x {pp} pipeline stages"))
            return


def framework_code(memory: Callable[..., int], cfg: ModelConfig, typed: dict[str, str | None],
                   framework: str | None, flash: bool = True) -> Callable[..., int]:
    """`memory` evaluated with the code a layout's framework implies where the user chose none,
    as the command typed with that layout would run it (defaults.implied: eager without a layout,
    sdpa under DeepSpeed and FSDP2, flash under Megatron). typed: the impl and attention the user
    gave (None where not); framework: the given layout's (None without one). A workload whose
    code a suggestion changed (--attention sdpa) keeps it."""
    from .defaults import implied

    start = implied(framework, typed.get("impl"), typed.get("attention"), cfg.family, flash)

    def coded(model: ModelConfig, workload: Workload, layout: Any = None) -> int:
        if layout is not None and (workload.impl, workload.attention) == (start["impl"], start["attention"]):
            workload = dataclasses.replace(workload, **implied(layout.framework, typed.get("impl"),
                                                                typed.get("attention"), cfg.family, flash))
        return memory(model, workload, layout)

    return coded


#: What a verdict sizes: full training, inference (a generation), a LoRA/QLoRA step (finetune_verdict's memory).
PHASES = ("training", "inference", "finetune")


def hardware_of(capacity: Any) -> Any:
    """The Hardware a capacity names (a preset's name or a Hardware), else None."""
    from .hardware import Hardware, load_hardware
    from .hardware_presets import is_hardware_path, preset_key, refused_hardware_names

    if isinstance(capacity, str):
        try:
            return load_hardware(capacity)
        except ConfigError:
            # a hardware file's own problem, or a name that is no single preset ("a100": 40 or 80 GB), is its line:
            # "capacity: the GPU's bytes ... got 'a100'" hid which to give and what was wrong in the file
            if is_hardware_path(capacity) or preset_key(capacity) in refused_hardware_names():
                raise
            return None  # "80GB": refused as a capacity (api_inputs)
    return capacity if isinstance(capacity, Hardware) else None


def hardware_capacity(capacity: Any, phase: str) -> Any:
    """A hardware (a preset's name or a Hardware) as the bytes its command holds the phase to: training and a LoRA
    step the device's memory less the reserve, inference a serving engine's share (finetune --hardware rtx-4090:
    23.50 GiB; docs/finetuning.md's 24 * 2**30 for the same GPU let a step of 23.8 GiB "fit", the command not);
    anything else as given."""
    hardware = hardware_of(capacity)
    if hardware is None:
        return capacity
    return hardware.serving_memory_bytes if phase == "inference" else hardware.training_memory_bytes


def api_inputs(cfg: Any, capacity: Any, gpus: Any = None, phase: str = "training") -> tuple[ModelConfig, int | float, int | None]:
    """The model, capacity and GPU count a verdict is asked about from Python, as the commands check them:
    what costmodel.load_model takes (a preset's name: it was an AttributeError traceback), numpy's scalars
    as the numbers they hold, and a capacity that is a positive finite number of bytes and a GPU count that
    is a positive whole number, each one ConfigError ("80GB" was a TypeError; -5 "did not fit", with no
    option; gpus=0 ran as one GPU)."""
    import math

    from .api import load_model
    from .errors import show
    from .plain import plain

    cfg, capacity, gpus = load_model(cfg), plain(hardware_capacity(capacity, phase)), plain(gpus)
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or not (capacity > 0 and math.isfinite(capacity)):
        raise ConfigError(f"capacity: the GPU's bytes, a positive number (24 GiB is 24 * 2**30), or a hardware preset's "
                          f"name (\"rtx-4090\": what its command holds a run to), got {show(capacity)}.")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise ConfigError(f"gpus: a positive whole number of GPUs (or None: the layout's, else 1), got {show(gpus)}.")
    return cfg, capacity, gpus


def verdict(cfg: ModelConfig, workload: Workload, layout: Any, capacity: int, gpus: int | None = None,
            phase: str = "training", memory: Callable[..., int] | None = None,
            extra: tuple[tuple[str, int | None, str], ...] = (),
            typed_code: dict[str, str | None] | None = None, flash: bool = True,
            node_gpus: int = 8) -> dict[str, Any]:
    """Whether `phase` ("training", "inference" or "finetune", with its memory function) fits in
    `capacity` bytes a GPU, with what it needs and, when it does not fit, the options that would
    (cheapest first; `extra`: (change, memory, cost) the caller evaluated itself). typed_code: the
    impl and attention the user gave ({"impl": None, "attention": None} where neither): each layout
    the verdict tries (--gpus alone, a suggested --dp) runs its framework's code where none was
    given (framework_code), so typing the suggestion prints its figure; None: the workload's as is.
    flash: whether the GPU runs FlashAttention-2 (flash_support.runs_flash; False: not suggested).
    node_gpus: the hardware's GPUs a node (tensor parallelism suggested within one)."""
    if phase not in PHASES:  # phase="train" was sized as inference: any phase but "training" took its memory
        raise ConfigError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}.")
    cfg, capacity, gpus = api_inputs(cfg, capacity, gpus, phase)
    if layout is not None:  # Layout(dp=8) with gpus=2 answered "2 GPUs" with the 8-rank layout's memory
        layout.check_gpus(gpus)
    if phase == "finetune" and memory is None:  # it too fell to inference's memory
        raise ConfigError("phase 'finetune' needs its memory function: use costmodel.finetune_verdict.finetune_verdict.")
    if phase == "inference" and layout is not None:
        from .layout.context import check_inference

        check_inference(layout.cp)  # as simulate: the training layout's cp would put the whole KV cache on each rank
    memory = memory or (training_memory if phase == "training" else inference_memory)
    if typed_code is not None:
        memory = framework_code(memory, cfg, typed_code, layout.framework if layout is not None else None, flash)
    gpus = gpus or (layout.gpus if layout is not None else 1)
    split = None  # how --gpus alone splits the work, said beside the verdict
    if layout is None and gpus > 1:
        from .layout import Layout

        layout = Layout(dp=gpus) if phase == "training" else Layout(tp=gpus)
        split = ("data parallel" if phase == "training" else "tensor parallel" if cfg.architecture == "decoder"
                 else "a whole copy on each")
        if phase == "training" and typed_code is not None:  # the code the ranks run, not the model's eager above
            from .defaults import implied

            code = implied(layout.framework, typed_code.get("impl"), typed_code.get("attention"), cfg.family, flash)
            split += f", {layout.framework}: attention {code['attention']}"
        if split == "tensor parallel":
            try:
                layout.check(cfg, gpus, inference=True)
            except ConfigError as error:  # e.g. tp 3 over 32 heads: each GPU serves a whole copy
                layout = Layout(dp=gpus)
                split = f"a whole copy on each; {str(error).removeprefix('layout: ').rstrip('.')}"
    elif phase == "inference" and gpus > 1 and cfg.architecture != "decoder":
        split = "a whole copy on each"  # inference_memory: no layout's ranks for it
    needed = memory(cfg, workload, layout)
    result = {"phase": phase, "memory": needed, "capacity": capacity, "gpus": gpus, "fits": needed <= capacity}
    if split is not None:
        result["split"] = split
    if phase == "inference" and workload.weight_dtype is not None:
        result["weights"] = _quantized_weights(memory, cfg, workload, layout, capacity)
    if not result["fits"]:
        result["options"] = [o.to_dict() for o in options(cfg, workload, layout, capacity, gpus, phase, memory,
                                                           extra, flash, node_gpus)]
        if layout is None and typed_code is not None:
            _say_layout_code(result["options"], cfg, workload, typed_code, flash, phase)
    return result


def _say_layout_code(found: list[dict[str, Any]], cfg: ModelConfig, workload: Workload,
                     typed_code: dict[str, str | None], flash: bool, phase: str = "training") -> None:
    """A suggested layout (--dp, --gpus, --tp) is sized under its framework's code where none was typed
    (framework_code: sdpa under DeepSpeed), which the verdict of no layout does not run (eager): its
    cost says so. llama3.1-8b at 8,192 tokens on one H100 was offered "--dp 1 --zero 2 --offload
    optimizer 68.16 GiB" as if ZeRO-Offload alone took 559.83 GiB there: the 387 GiB were sdpa's."""
    from .defaults import implied
    from .layout import Layout

    framework = Layout().framework  # a suggestion's layout names none: the default's
    code = implied(framework, typed_code.get("impl"), typed_code.get("attention"), cfg.family, flash)
    if code["attention"] == workload.attention:
        return
    for option in found:
        if option["change"].startswith(("--dp ", "--gpus ")) and "--attention" not in option["change"]:
            whose = f"{framework}'s" if phase == "training" else "an inference layout's"  # (it names no framework)
            option["cost"] += f" (sized under {whose} attention {code['attention']}, not {workload.attention})"
