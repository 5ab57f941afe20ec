"""The options several commands share, built from costmodel/spec.py: each choice list gives the
values click accepts and the words its help uses, so a help text cannot drift from its list.

A decorator here adds a group of options in the order `-h` lists them (model, workload, layout,
offload); the one-off options of a command stay beside it.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from costmodel import spec

from reports.options import decode_code_option  # noqa: F401 (serve's too: one definition)
from reports.options import GEN_LENGTH, LENGTH, TOKENS, Size  # noqa: F401 (serve's and report's too: one type)
from reports.options import PRICE, RATE, SECONDS_NUMBER  # noqa: F401 (serve's too: one type each)
from reports.output import DtypeChoice

from .inputs import InputError



def nodes_hint(text: str, hardware_name: str | None) -> str | None:
    """--gpus "4 nodes": what it means in GPUs (the hardware file's interconnect.gpus_per_node), where
    click said "'4 nodes' is not a valid integer range" and plan "give a whole number"; None for other text."""
    import re

    from costmodel.config import ConfigError
    from costmodel.hardware import load_hardware

    match = re.fullmatch(r"\s*(\d+)\s*(?:x\s*)?nodes?\s*", str(text), re.IGNORECASE)
    if match is None:
        return None
    try:
        hardware = load_hardware(hardware_name or spec.DEFAULT_HARDWARE)
    except ConfigError:
        return None
    nodes, per_node = int(match[1]), hardware.gpus_per_node
    return (f"--gpus {text!r}: --gpus counts GPUs, not nodes; {nodes} node{'s' * (nodes != 1)} of {hardware.name} "
            f"({per_node} GPUs a node: its hardware file's interconnect.gpus_per_node) {'are' if nodes != 1 else 'is'} "
            f"--gpus {nodes * per_node}.")


class GpuCount(click.IntRange):
    """A GPU count of at least 1, whose "4 nodes" says the count it means (nodes_hint)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        hint = nodes_hint(value, (ctx.params.get("hardware_name") if ctx else None)) if isinstance(value, str) else None
        if hint:
            self.fail(hint.split(": ", 1)[1], param, ctx)
        return super().convert(value, param, ctx)


GPU_COUNT = GpuCount(min=1)


def stack(*options: Callable) -> Callable:
    """One decorator that adds the options in the order given (the first listed first by -h)."""
    def apply(function: Callable) -> Callable:
        for option in reversed(options):
            function = option(function)
        return function
    return apply


IMPL_HELP = (f"Whose code the activation memory models: {spec.IMPLEMENTATIONS.listed(first=spec.DEFAULT_IMPL)} (default: the "
             "framework's, megatron for --framework megatron, else hf; costmodel/defaults.py).")
ATTENTION_HELP = (f"{spec.ATTENTIONS.listed()}; fused kernels keep no n x n matrix (default: the framework's, "
                  "flash for megatron, sdpa for deepspeed and fsdp2; eager without a layout).")
MTP_HELP = ("Training: multi-token prediction as Megatron-Core runs it, this many depths (mtp_num_layers: "
            "norms, a 2d -> d projection, one more layer or a hybrid model's MTP pattern, the shared head "
            "and a loss; docs/layouts.md).")
HARDWARE_HELP = "A hardware preset (see `hardware`; any case) or a path to a hardware file (docs/time.md)."
SEQ_LEN_HELP = "Tokens per sequence (default 2048 or the context)."

model_options = stack(
    click.option("--model", "-m", "model", type=str, help="A preset name or alias, any case (see `models`), a "
                 "Hugging Face Hub id (org/name: its config.json, from the local cache first), or a path to "
                 "a config file or a model's folder (one with a slash that exists, a name ending in .json, or a folder here that no preset is named)."),
    click.option("--config", "config", type=str, help="A Hugging Face config.json, a model's folder holding "
                 "one (as downloaded from the Hub), or a ModelConfig JSON file."),
)


def refuse_typed(ctx: click.Context, options: dict[str, str], why: str) -> None:
    """Bad input, one line, when the user typed any of `options` (parameter name: option) that the
    command's mode would ignore: a typed option is read or refused, never dropped."""
    from click.core import ParameterSource

    typed = [option for name, option in options.items()
             if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]
    if typed:
        raise InputError(f"{', '.join(typed)}: {why}")


def refuse_mla_without_latent(ctx: click.Context, cfg: Any) -> None:
    """--mla typed for a model without latent attention would be silently dropped: one line instead."""
    why = spec.mla_not_applicable(cfg)
    if why is not None:
        refuse_typed(ctx, {"mla": "--mla"}, why)


def json_option(help: str) -> Callable:
    """--json: the command's result as JSON on stdout."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def hardware_option(default: str | None = spec.DEFAULT_HARDWARE, help: str = HARDWARE_HELP) -> Callable:
    """--hardware: a preset or a hardware file."""
    return click.option("--hardware", "hardware_name", default=default, show_default=default is not None, help=help)


def dtype_option(default: str | None = spec.DEFAULT_DTYPE, help: str = "Weights and activations.") -> Callable:
    """--dtype, any spelling of fp32, fp16 or bf16."""
    return click.option("--dtype", type=DtypeChoice(spec.DTYPES), default=default,
                        show_default=default is not None, help=help)




class HintedChoice(click.Choice):
    """A choice whose refusal of a value a user reaches for says where that value is answered
    (hints: the value, in lower case, to the sentence), not only which values the option takes."""

    def __init__(self, choices: Any, hints: dict[str, str]) -> None:
        super().__init__(choices)
        self.hints = hints

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            hint = self.hints.get(str(value).lower())
            if hint:
                self.fail(f"{value!r} is not one of {', '.join(map(repr, self.choices))}: {hint}", param, ctx)
            raise


def choice_option(name: str, choices: spec.Choices, help: str, default: Any = None,
                  hints: dict[str, str] | None = None, **kwargs: Any) -> Callable:
    """An option that takes one of a spec list (show_default when it has a default); hints: what a
    refused value the user may reach for is answered by (HintedChoice)."""
    return click.option(name, type=HintedChoice(choices, hints) if hints else click.Choice(choices), default=default,
                        show_default=default is not None, help=help, **kwargs)


mtp_option = click.option("--mtp", type=click.IntRange(min=0), default=None, help=MTP_HELP)
batch_option = click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences per batch.")
#: --kv-dtype: a quantized KV cache (one byte per element and two fp32 scales per layer), as estimate,
#: simulate and sweep read it.
kv_dtype_option = click.option("--kv-dtype", type=click.Choice(spec.KV_DTYPES), default=None,
                               help=f"A quantized KV cache: {spec.KV_DTYPES.listed()}.")


def _expert_load(ctx: Any, param: Any, value: str | None) -> tuple[float, ...] | None:
    """--expert-load as numbers (Workload checks them)."""
    if value is None:
        return None
    try:
        return tuple(float(x) for x in value.split(","))
    except ValueError:
        raise InputError(f"--expert-load must be comma-separated numbers, got {value!r}.") from None


#: The inference weights' format, which estimate and sweep share; its default is the checkpoint's
#: (costmodel.checkpoint.inference_options resolves it, training figures stay unquantized).
weight_dtype_option = click.option(
    "--weight-dtype", type=click.Choice(spec.WEIGHT_DTYPE_CHOICES), default=None,
    help=f"Quantized inference weights: {spec.WEIGHT_DTYPE_CHOICES.phrase()}; embeddings, head and norms "
    f"stay in --dtype. {spec.WEIGHT_DTYPE_DEFAULT}")
weight_group_option = click.option(
    "--weight-group", type=click.IntRange(min=1), default=None,
    help="Values per scale (and zero): int4 128, nf4 64 by default; int8 per row unless given.")
weight_bits_option = click.option(
    "--weight-bits", type=float, default=None,
    help="--weight-dtype exl2: the file's bits a weight (its converter's -b, 2-8; default 4.125), scales and "
    "groups included.")
quant_layout_option = choice_option(
    "--quant-layout", spec.QUANT_LAYOUTS,
    f"How int8 and int4 weights are stored (scales, zeros, padding): {spec.QUANT_LAYOUTS.phrase()}.",
    spec.DEFAULT_QUANT_LAYOUT)

#: --optimizer: whose state a training step holds and its step updates (estimate, simulate --train, plan).
optimizer_option = choice_option("--optimizer", spec.OPTIMIZERS,
                                 f"The optimizer whose state is counted: {spec.OPTIMIZERS.phrase()}.",
                                 spec.DEFAULT_OPTIMIZER)

#: The workload options shared by estimate and the commands built on it.
workload_options = stack(
    click.option("--seq-len", "-n", type=LENGTH, help="Tokens per sequence (encoder side for encoder-decoders). "
                 "Default 2048 or the model's context."),
    click.option("--tgt-len", type=LENGTH, help="Decoder tokens of an encoder-decoder (default: --seq-len)."),
    batch_option,
    dtype_option(help="Weights and activations (fp16 where --hardware has no bf16 and --dtype is not given: "
                 "V100, T4)."),
    choice_option("--impl", spec.IMPLEMENTATIONS, IMPL_HELP),
    choice_option("--attention", spec.ATTENTIONS, ATTENTION_HELP),
    choice_option("--recompute", spec.RECOMPUTES, f"Activation recomputation: {spec.RECOMPUTES.phrase()}.",
                  spec.DEFAULT_RECOMPUTE),
    click.option("--gen-tokens", "--gen", "-T", "gen_tokens", type=GEN_LENGTH, default=0, show_default=True,
                 help="Tokens generated after the prefill (KV cache); --gen is simulate's and plan's name."),
    optimizer_option,
    choice_option("--precision", spec.PRECISIONS, f"{spec.PRECISIONS.described()}. Default: "
                  f"{spec.DEFAULT_PRECISION}; with a layout its framework's (megatron: megatron, deepspeed: mixed, "
                  "fsdp2: fsdp2), which its ranks keep."),
    weight_dtype_option,
    weight_group_option,
    weight_bits_option,
    quant_layout_option,
    click.option("--no-double-quant", "double_quant", flag_value=False, default=True,
                 help="nf4 without double quantisation of its scales."),
    kv_dtype_option,
    click.option("--expert-load", default=None, callback=_expert_load,
                 help="Mixture of experts: tokens routed to each expert, as relative shares "
                 "(e.g. 3,1,1,1,1,1,1,1); default balanced. Sets per-expert FLOPs, not totals."),
)

#: The parameter names layout_options adds (estimate and simulate pass them to make_layout).
LAYOUT_OPTIONS = ("dp", "tp", "pp", "sp", "zero", "microbatches", "schedule", "virtual_stages",
                  "framework", "stage_layers", "gpus", "device", "ep", "etp", "ep_dispatcher", "capacity_factor", "pad_to_capacity", "fp8",
                  "cp",
                  "cp_rotate", "cp_kv_heads", "all_reduce", "vocab_parallel", "dp_shard", "grad_reduce_dtype", "pure_precision",
                  "precision_aware_optimizer", "fp8_param_gather", "tp_only_amax_red", "fp8_autocast",
                  "moe_router_fusion", "moe_router_load_balancing_type", "moe_permute_fusion", "moe_grouped_gemm",
                  "unfused_loss", "fp32_norm_input", "zero_optimizer", "optimizer_step",
                  "megatron_release")
FP8_HELP = ("FP8 training: the layers' linear products at the FP8 peak, as torchao's tensorwise or rowwise recipe, "
            "Transformer Engine's current or delayed scaling or DeepSeek-V3's blockwise one; mxfp8 (1 x 32 blocks) at the "
            "MXFP8 peak and nvfp4 (FP4) at the fp4 peak, which only Blackwell hardware files carry (docs/layouts.md).")

#: The parallel layout: group sizes, schedule, ZeRO stage, framework (costmodel/layout).
layout_options = stack(
    click.option("--dp", type=int, default=None, help="Data-parallel ranks (--batch is per rank)."),
    click.option("--dp-shard", type=int, default=None, help="Hybrid sharding (FSDP2's HSDP, --framework fsdp2; "
                 "Megatron-FSDP's HFSDP, --framework megatron --zero 3): the ranks each shard group spans (default "
                 "dp); dp / dp-shard replicas all-reduce the shards (HFSDP: the optimizer state over all dp)."),
    click.option("--tp", type=int, default=None, help="Tensor-parallel ranks."),
    click.option("--pp", type=int, default=None, help="Pipeline-parallel ranks (stages)."),
    click.option("--sp", is_flag=True, default=None, help="Sequence parallelism over the tensor-parallel ranks."),
    click.option("--zero", type=click.IntRange(0, 3), default=None,
                 help="ZeRO stage: 1 optimizer state, 2 + gradients, 3 + parameters sharded over dp "
                 "(default 0; 3 under --framework fsdp2, fully_shard's default; under megatron 1 is its "
                 "distributed optimizer, 3 Megatron-FSDP)."),
    click.option("--microbatches", type=int, default=None, help="Micro-batches per step per pipeline (gradient "
                 "accumulation without --pp); global batch = batch x microbatches x dp."),
    choice_option("--schedule", spec.SCHEDULES, "Pipeline schedule (default 1f1b)."),
    click.option("--virtual-stages", type=int, default=None, help="Stages per pipeline rank (interleaved)."),
    choice_option("--framework", spec.FRAMEWORK_NAMES, "Whose conventions set the bytes per parameter, sharding "
                  "and collectives (default deepspeed: 2 + 2 + 12, as estimate prints)."),
    click.option("--stage-layers", type=str, default=None, help="Layers per stage, comma-separated (an uneven split)."),
    # at least 1 here, where every command reads it: estimate --hardware with --gpus alone skipped the
    # layout's check, so --gpus -2 printed "Inference on -2 h100-sxm GPUs" (and 0 sized one GPU)
    click.option("--gpus", type=GPU_COUNT, default=None, help="How many GPUs: without --dp, dp = GPUs / (tp x pp x cp), as Megatron-LM derives it; "
                 "with it, a check that tp x pp x dp x cp is this many."),
    click.option("--device", "layout_device", type=click.Choice(spec.DEVICES), default=None,
                 help="Where the ranks run (torch's AdamW keeps its step counters on the host on CUDA)."),
    click.option("--ep", type=int, default=None,
                 help="Expert-parallel ranks, drawn from dp: each holds E / ep experts (docs/layouts.md)."),
    click.option("--etp", type=int, default=None,
                 help="The experts' own tensor parallelism (Megatron-Core's expert_tensor_parallel_size, with --ep): 1 "
                      "beside --tp > 1 is parallel folding (routed experts whole, the EP group drawn from tp x dp); above "
                      "1 each expert is split etp ways (Megatron-Core's default is the --tp value; type it: --ep beside --tp > 1 "
                      "without --etp is refused), the EP group drawn from "
                      "tp x cp x dp / etp (docs/layouts.md)."),
    choice_option("--ep-dispatcher", spec.EP_DISPATCHERS, "How expert parallelism moves tokens (default "
                  f"{spec.EP_DISPATCHERS[0]}): {spec.EP_DISPATCHERS.described()} (docs/layouts.md)."),
    click.option("--cp", type=int, default=None,
                 help="Context-parallel ranks: each holds seq-len / cp tokens of every sequence (docs/layouts.md)."),
    choice_option("--cp-rotate", spec.CP_ROTATES, "How context parallelism moves keys and values (default: a2a "
                  "under DeepSpeed, the default framework, its only one besides a model's own ring; "
                  f"{spec.CP_ROTATES[0]}, {spec.CP_ROTATES.meanings[spec.CP_ROTATES[0]]}, under another).",
                  hints=spec.CP_ROTATE_HINTS),
    choice_option("--cp-kv-heads", spec.CP_KV_HEADS, "Which heads context parallelism moves (default "
                  f"{spec.CP_KV_HEADS[0]}): {spec.CP_KV_HEADS.described()}."),
    choice_option("--all-reduce", spec.ALL_REDUCES, "Whose code runs an all-reduce inside a node (default "
                  f"{spec.ALL_REDUCES[0]}): {spec.ALL_REDUCES.described()}."),
    click.option("--replicated-vocab", "vocab_parallel", flag_value=False, default=None,
                 help="Decoding: every tensor-parallel rank holds the embedding and head whole and computes "
                 "every logit (gpt-fast's tp.py), no embedding all-reduce or logits all-gather."),
    choice_option("--fp8", spec.FP8_RECIPES, FP8_HELP),
    choice_option("--grad-reduce-dtype", spec.GRAD_REDUCE_DTYPES, "Megatron-Core's gradient reduce dtype, or "
                  "FSDP2's MixedPrecisionPolicy reduce_dtype (--framework megatron or fsdp2, --dtype bf16; default "
                  f"fp32): {spec.GRAD_REDUCE_DTYPES.described()}."),
    click.option("--pure-precision", is_flag=True, default=None,
                 help="Training (--framework fsdp2, --dtype bf16 or fp16): the model built in --dtype and trained so, "
                 "as PyTorch's FSDP with torch's AdamW on a bf16 model: weights, gradients and AdamW's moments in "
                 "--dtype, no fp32 master (2 + 2 + 4 bytes a parameter in bf16), the gradients reduced in it."),
    choice_option("--precision-aware-optimizer", spec.PRECISION_AWARE_OPTIMIZERS, "Megatron-Core's "
                  "use_precision_aware_optimizer under a recipe's dtypes (--framework megatron --zero 1, --dtype "
                  f"bf16, AdamW; default off): {spec.PRECISION_AWARE_OPTIMIZERS.described()}."),
    click.option("--fp8-param-gather", is_flag=True, default=None,
                 help="Megatron-Core's FP8 parameters (--framework megatron --zero 1, --fp8 current or delayed): "
                 "the linear layers' weights held in FP8, one byte each with no bf16 copy, and all-gathered so; "
                 "under --framework fsdp2 --fp8 tensorwise, torchao's FSDP float8 all-gather (torchtitan's "
                 "enable_fsdp_float8_all_gather with precomputed scales): the weights gathered in FP8, no forward cast."),
    click.option("--tp-only-amax-red", is_flag=True, default=None,
                 help="Megatron-Core's --tp-only-amax-red (--framework megatron --fp8 delayed): the amaxes "
                 "all-reduced over TP x CP, not TP x DP x CP (Megatron-Core r0.8.0's only group)."),
    click.option("--moe-router-fusion/--no-moe-router-fusion", "moe_router_fusion", default=None,
                 help="Megatron-Core's --moe-router-fusion (--framework megatron; default on, as Megatron-Bridge's "
                 "recipes set it; off is Megatron-LM's own default): off, the router's top-k, aux-loss scores and aux "
                 "loss run as eager torch ops, each a kernel and a host call (kernel model, training)."),
    click.option("--moe-permute-fusion/--no-moe-permute-fusion", "moe_permute_fusion", default=None,
                 help="Megatron-Core's --moe-permute-fusion (--framework megatron, the all-to-all dispatcher; default "
                 "on, as Megatron-Bridge's recipes set it): off, permute, the chunks' sort and unpermute run as eager "
                 "torch ops (argsort, index_select, cat, zeros + scatter_add), each a kernel and a host call."),
    click.option("--moe-grouped-gemm/--no-moe-grouped-gemm", "moe_grouped_gemm", default=None,
                 help="Megatron-Core's --moe-grouped-gemm (--framework megatron; default on, one grouped GEMM a product "
                 "over the rank's experts): off, Megatron-Core r0.6's SequentialMLP runs the experts one after another, "
                 "each its own GEMMs at its tokens, the loop's copies and launches (kernel model, training; "
                 "Megatron-LM's own default); under --framework deepspeed (impl hf), transformers 4.x's MoE blocks, "
                 "a Python loop over every expert with a host sync each (transformers 5 runs grouped_mm: the default)."),
    click.option("--moe-router-load-balancing-type", "moe_router_load_balancing_type", default=None,
                 type=click.Choice(spec.MOE_LOAD_BALANCING),
                 help="Megatron-Core's --moe-router-load-balancing-type (default aux_loss): none runs no aux-loss "
                 "scores or loss; read with --no-moe-router-fusion (the fused kernels price the same)."),
    choice_option("--fp8-autocast", spec.FP8_AUTOCASTS, "Where the training script opens Transformer Engine's "
                  "fp8_autocast, for --fp8 delayed under --framework fsdp2 (Megatron-Core opens one a model "
                  f"chunk itself): {spec.FP8_AUTOCASTS.described()}."),
    click.option("--capacity-factor", type=float, default=None,
                 help="Mixture of experts: each expert takes at most this times its balanced share of "
                 "the routed tokens, the rest are dropped (default: dropless)."),
    click.option("--pad-to-capacity", is_flag=True, default=None,
                 help="With --capacity-factor: every expert runs exactly its capacity, the empty rows padded "
                 "(Megatron-Core's --moe-pad-expert-input-to-capacity; the all-to-all dispatcher sends the padded rows)."),
    click.option("--unfused-loss", is_flag=True, default=None,
                 help="--framework megatron: the model's code runs Megatron's vocabulary-parallel cross-entropy "
                 "on fp32 logits, unfused, whatever the model family (Megatron-Core's GPTModel before "
                 "cross_entropy_loss_fusion, core_v0.6.0: 38 + 14 bytes a logit)."),
    click.option("--fp32-norm-input", is_flag=True, default=None,
                 help="Each norm reads an fp32 copy of its input inside a checkpointed dropout-and-norm "
                 "function, as InternLM's layer runs it (norm(residual.float()), dropout_selective_checkpoint)."),
    choice_option("--zero-optimizer", spec.ZERO_OPTIMIZERS, "Whose ZeRO-1 optimizer (--zero 1) reduces the gradients "
                  f"and gathers the parameters (default {spec.ZERO_OPTIMIZERS[0]}): {spec.ZERO_OPTIMIZERS.described()}."),
    choice_option("--optimizer-step", spec.OPTIMIZER_STEPS, "Whose code runs the training step's optimizer passes "
                  f"(default {spec.OPTIMIZER_STEPS[0]}): {spec.OPTIMIZER_STEPS.described()}."),
    choice_option("--megatron-release", spec.MEGATRON_RELEASES, "The Megatron-Core release whose step --optimizer-step "
                  f"megatron-lm runs (default {spec.MEGATRON_RELEASES[0]}; costmodel/megatron_releases.json): "
                  "before core_v0.7.0 the gradient buffer is scaled by 1 / dp at dp 1 too."),
)

def refuse_offload(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """--offload typed to a command that times a step (simulate, plan): one line saying why and where it is
    read, not click's "No such option"."""
    from costmodel.offload import UNTIMED

    if value is not None and value != "none":
        raise click.UsageError(f"--offload {value}: {UNTIMED}")


#: --offload where a step is timed: refused in one line (hidden from --help: nothing to read).
untimed_offload_option = click.option("--offload", type=click.Choice(spec.OFFLOADS, case_sensitive=False),
                                      default=None, expose_value=False, hidden=True, callback=refuse_offload)

#: DeepSpeed's ZeRO-Offload and ZeRO-Infinity (costmodel/offload.py), for estimate's layout.
OFFLOAD_OPTIONS = ("offload", "offload_device", "gpus_per_node")
offload_options = stack(
    choice_option("--offload", spec.OFFLOADS, "DeepSpeed offload: optimizer (ZeRO-Offload, --zero 1-3) or params "
                  "too (ZeRO-Infinity, --zero 3)."),
    choice_option("--offload-device", spec.OFFLOAD_DEVICES,
                  "Where the offloaded state lives (nvme needs --zero 3; default cpu)."),
    click.option("--gpus-per-node", type=int, default=None,
                 help="GPUs sharing a host, for host memory per node (default 8)."),
)
