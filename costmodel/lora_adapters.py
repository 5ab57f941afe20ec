"""Where LoRA attaches, family by family: each family's linear layers and their shapes (FAMILIES,
linear_shapes), the targets a fine-tune adapts, its setup (FineTune), the adapter tensors it adds,
and the notes a setup earns (a rank above a target's width, a quantized checkpoint's base).
costmodel/finetune.py counts the memory a step holds from these.

Families (FAMILIES): the Llama layout (llama, mistral, qwen2, and qwen3 with its RMSNorm over each
query and key head): pre-norm RMSNorm, q/k/v/o projections, a gated MLP (gate/up/down); and
GPT-NeoX: LayerNorm, a fused query_key_value, dense, and the MLP's dense_h_to_4h/dense_4h_to_h,
under eager attention (its sdpa activations are not exact in the tree yet, FINDINGS 13); Gemma
(whose RMSNorm keeps an fp32 normalised tensor), SmolLM3 and Granite by Llama's names; and the
mixtures of experts mixtral, qwen2_moe, qwen3_moe, olmoe and granitemoe, LoRA on their attention
projections (_MOE), and Qwen2-MoE's shared expert and dense layers' MLP linears too (_MOE_SHARED).
Others raise ConfigError rather than give a number nobody measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, ModelConfig
# The LoRA targets (Llama's and GPT-NeoX's linear layers, peft's default) and the choices of a
# fine-tune, defined in spec.py.
from .spec import ADAPTER_DTYPES, DEFAULT_LORA_TARGETS as DEFAULT_TARGETS, NEOX_LORA_TARGETS as NEOX_TARGETS
from .spec import LORA_TARGETS as TARGETS, PHI3_LORA_TARGETS
from .spec import FINETUNE_METHODS as METHODS
from .spec import FULL_FINETUNE
from .spec import FINETUNE_OPTIMIZERS as OPTIMIZERS, spell_fields

ALL_TARGETS = TARGETS + NEOX_TARGETS + tuple(t for t in PHI3_LORA_TARGETS if t not in TARGETS)


def linear_shapes(cfg: ModelConfig, moe_layer: bool = False) -> dict[str, tuple[str, int, int]]:
    """Each target's input group, d_in and d_out for this config (the input group: adapters of one
    group read the same tensor); in a mixture of experts' MoE layer (moe_layer) the MLP's linear
    layers are the shared expert's (d_shared wide), or none: the routed experts are 3-D parameters."""
    shapes = FAMILIES[family_of(cfg)].shapes(cfg)
    if not moe_layer:
        return shapes
    shapes = {name: shape for name, shape in shapes.items() if not shape[0].startswith("mlp")}
    if cfg.d_shared:
        d, f = cfg.d_model, cfg.d_shared
        shapes |= {"gate_proj": ("mlp_input", d, f), "up_proj": ("mlp_input", d, f), "down_proj": ("mlp_inner", f, d)}
    return shapes


def layer_kinds(cfg: ModelConfig) -> list[tuple[int, bool]]:
    """(how many, whether MoE) for the decoder's dense layers and its MoE layers, those present."""
    kinds = [(cfg.n_decoder_layers - cfg.n_moe_layers, False), (cfg.n_moe_layers, True)]
    return [(count, moe) for count, moe in kinds if count]


def _llama_shapes(cfg: ModelConfig) -> dict[str, tuple[str, int, int]]:
    d, f = cfg.d_model, cfg.d_ff
    q, kv = cfg.n_heads * cfg.d_head, cfg.n_kv_heads * cfg.d_head
    return {"q_proj": ("attention_input", d, q), "k_proj": ("attention_input", d, kv),
            "v_proj": ("attention_input", d, kv), "o_proj": ("attention_output", q, d),
            "gate_proj": ("mlp_input", d, f), "up_proj": ("mlp_input", d, f),
            "down_proj": ("mlp_inner", f, d)}


def _neox_shapes(cfg: ModelConfig) -> dict[str, tuple[str, int, int]]:
    d, f, q = cfg.d_model, cfg.d_ff, cfg.n_heads * cfg.d_head
    return {"query_key_value": ("attention_input", d, 3 * q), "dense": ("attention_output", q, d),
            "dense_h_to_4h": ("mlp_input", d, f), "dense_4h_to_h": ("mlp_inner", f, d)}


def _phi3_shapes(cfg: ModelConfig) -> dict[str, tuple[str, int, int]]:
    d, f = cfg.d_model, cfg.d_ff
    q, kv = cfg.n_heads * cfg.d_head, cfg.n_kv_heads * cfg.d_head
    return {"qkv_proj": ("attention_input", d, q + 2 * kv), "o_proj": ("attention_output", q, d),
            "gate_up_proj": ("mlp_input", d, 2 * f), "down_proj": ("mlp_inner", f, d)}


@dataclass(frozen=True)
class Family:
    """Where LoRA attaches in one family's decoder layer, and what its frozen norms stop keeping.

    rms_norm: the norms are RMSNorm written as x * rsqrt(...) * weight, whose product keeps the
    normalised x only for the weight's gradient (so a frozen weight frees it); LayerNorm's one
    kernel keeps the same either way. attentions: where the tree's full-training activations are
    measured exact for the family (FINDINGS 13: GPT-NeoX under sdpa is not)."""

    shapes: Any
    targets: tuple[str, ...]
    defaults: tuple[str, ...]  # peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
    rms_norm: bool
    attentions: tuple[str, ...] = ("eager", "sdpa", "flash")
    # o_proj's input is a view of what a fused attention kernel keeps (_output_shared); Phi-3's
    # o_proj keeps a copy of its own under sdpa (measured: its query and key are slices of the
    # fused qkv output, and the kernel's output is laid out so that the reshape copies)
    output_view: bool = True
    # the MLP's linear layers may be targeted (False: a mixture of experts whose dense layers' MLP
    # names peft 0.21 maps onto the fused experts instead: Qwen3-MoE's down_proj became a
    # ParamWrapper on experts.down_proj, measured, not modelled)
    mlp_targets: bool = True
    moe: bool = False  # a mixture of experts (its MoE layers: linear_shapes, _experts_removed)
    # peft 0.21.2's all-linear adapts the router and the routed experts too, as target_parameters
    # (gate.weight, gate_up_proj, down_proj: utils/transformers_weight_conversion.py,
    # _resolve_string_target_modules, for the model types it maps onto Mixtral's v4 names; measured
    # on Mixtral, Qwen3-MoE and OLMoE, not on Qwen2-MoE or GraniteMoE): not modelled, so refused
    all_linear_experts: bool = False


_LLAMA = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True)
#: Mixtures of experts with Llama's attention: transformers 5.24 fuses each layer's routed experts
#: into 3-D parameters (gate_up_proj, down_proj), not nn.Linear, so LoRA targets the attention
#: projections and the MLP linears of the shared expert and of dense layers, where the model has
#: them (linear_shapes; peft's target_parameters on the experts is not modelled); the frozen
#: router, experts and shared expert stop keeping their inputs (_experts_removed).
_MOE = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True, mlp_targets=False, moe=True)
_MOE_ALL_LINEAR_EXPERTS = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True, mlp_targets=False, moe=True,
                                 all_linear_experts=True)
_MOE_SHARED = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True, moe=True)  # Qwen2-MoE: measured
FAMILIES = {"llama": _LLAMA, "mistral": _LLAMA, "qwen2": _LLAMA, "qwen3": _LLAMA,
            "gpt_neox": Family(_neox_shapes, NEOX_TARGETS, ("query_key_value",), rms_norm=False,
                               attentions=("eager",)),
            "gemma": _LLAMA, "smollm3": _LLAMA, "granite": _LLAMA, "gemma2": _LLAMA, "gemma3_text": _LLAMA,
            "olmo2": _LLAMA, "phi3": Family(_phi3_shapes, PHI3_LORA_TARGETS, ("qkv_proj",), rms_norm=True,
                           output_view=False),
            "mixtral": _MOE_ALL_LINEAR_EXPERTS, "qwen2_moe": _MOE_SHARED, "qwen3_moe": _MOE_ALL_LINEAR_EXPERTS,
            "olmoe": _MOE_ALL_LINEAR_EXPERTS, "granitemoe": _MOE}
LORA_FAMILIES = tuple(FAMILIES)


def family_of(cfg: ModelConfig) -> str:
    """The family's key in FAMILIES, or one sentence saying which families are modelled."""
    if cfg.family not in FAMILIES or cfg.moe != FAMILIES[cfg.family].moe or cfg.architecture != "decoder":
        raise ConfigError(f"fine-tuning memory covers the Llama layout ({', '.join(LORA_FAMILIES[:4])}, "
                          f"{', '.join(LORA_FAMILIES[5:])}) and gpt_neox; model {cfg.name!r} is {cfg.family}, whose "
                          "LoRA is not sized (not measured against peft); `estimate --hardware GPU` sizes its full "
                          "fine-tuning, every weight trained.")
    return cfg.family


def targets_of(cfg: ModelConfig, tune: "FineTune") -> tuple[str, ...]:
    """The tune's targets for this model's family: its default, all its linear layers, or the
    names given (each a linear layer of this family)."""
    family = FAMILIES[family_of(cfg)]
    linears = family_linears(cfg)
    if tune.targets is None:
        return family.defaults
    if tune.targets == ("all-linear",) and family.all_linear_experts:  # it sized the attention alone, silently
        raise ConfigError(f"--lora-targets all-linear on {cfg.family}: peft 0.21 adapts its router and routed experts "
                          "too (target_parameters gate.weight, gate_up_proj, down_proj: fused 3-D parameters, not "
                          "linear layers), which is not modelled; name the linear layers it has: --lora-targets "
                          f"{','.join(linears)}.")
    if tune.targets == ("all-linear",):
        return linears
    check_model_targets(cfg, tune.targets)
    return tuple(t for t in linears if t in tune.targets)


def family_linears(cfg: ModelConfig) -> tuple[str, ...]:
    """The linear layers of this model that LoRA may adapt (its family's, those the model has)."""
    family = FAMILIES[family_of(cfg)]
    present = {name for _, moe in layer_kinds(cfg) for name, (group, _, _) in linear_shapes(cfg, moe).items()
               if family.mlp_targets or group.startswith("attention")}
    return tuple(t for t in family.targets if t in present)


def check_model_targets(cfg: ModelConfig, targets: Any) -> None:
    """Each name (a tuple, or the command's comma-separated text, any case) a linear layer of this model, else one
    ConfigError naming the model's: `finetune --model llama3.1-8b --lora-targets q_proj,foo` listed every family's
    names (query_key_value, dense, qkv_proj...), of which llama has none."""
    names = [t.strip().lower() for t in targets.split(",")] if isinstance(targets, str) else list(targets or ())
    linears = family_linears(cfg)
    foreign = [t for t in names if t not in linears and t != "all-linear"]
    if foreign:
        raise ConfigError(f"--lora-targets: {foreign[0]!r} is not a linear layer of {cfg.family} "
                          f"({', '.join(linears)}, or all-linear)"
                          + ("; its routed experts are fused 3-D parameters, not linear layers, which peft "
                             "adapts as parameters (target_parameters; the experts' down_proj too): not modelled."
                             if cfg.moe else "."))


@dataclass(frozen=True)
class FineTune:
    """A fine-tuning setup: method, adapter rank, scaling, targets, adapter dtype, optimizer and
    where its state lives."""

    method: str = "lora"
    rank: int = 16
    alpha: float = 32.0  # scales B A x by alpha / rank: no memory of its own
    targets: tuple[str, ...] | str | None = None  # None: peft's default; ("all-linear",); a str: comma-separated
    adapter_dtype: str = "fp32"
    optimizer: str = "adamw"
    offload_optimizer: bool = False  # ZeRO-Offload: optimizer state (and its update) on the host
    offload_device: str = "cpu"  # where the offloaded state lives: cpu, or nvme (ZeRO-Infinity)

    def __post_init__(self) -> None:
        spell_fields(self)  # method "QLoRA", optimizer "AdamW" as the command takes them
        if self.method == "full":
            raise ConfigError(FULL_FINETUNE)
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(m for m in METHODS if m != 'full')}, got {self.method!r}.")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ConfigError(f"--lora-rank must be a positive whole number, got {self.rank!r}.")
        if not (self.alpha > 0 and math.isfinite(self.alpha)):  # inf scales the adapters' output by inf
            raise ConfigError(f"--lora-alpha must be positive and finite, got {self.alpha!r}.")
        if self.targets is not None:
            named = self.targets.split(",") if isinstance(self.targets, str) else self.targets  # "q_proj,v_proj", as
            if not isinstance(named, (list, tuple, set, frozenset)):  # targets=5 was a TypeError, b"q_proj" its bytes' numbers
                raise ConfigError(f"--lora-targets: a module name or names (a str or a list of them), "
                                  f"got {type(self.targets).__name__}.")
            # --lora-targets (was: q, _, p...); any case, as every name the commands take (Q_PROJ was refused)
            targets = tuple(t.strip().lower() if isinstance(t, str) else t for t in named)
            unknown = [t for t in targets if t not in ALL_TARGETS + ("all-linear",)]
            if unknown or not targets:
                raise ConfigError(f"--lora-targets: {unknown[0] if unknown else 'none given'!r} is not one of "
                                  f"{', '.join(ALL_TARGETS)} (or all-linear).")
            targets = ("all-linear",) if set(targets) == {"all-linear"} else targets
            if "all-linear" in targets and targets != ("all-linear",):  # it was dropped: q_proj alone was costed
                raise ConfigError("--lora-targets: all-linear names every linear already; give it alone, not "
                                  f"beside {', '.join(t for t in targets if t != 'all-linear')}.")
            object.__setattr__(self, "targets", targets if targets == ("all-linear",)
                               else tuple(t for t in ALL_TARGETS if t in targets))
        if self.adapter_dtype not in ADAPTER_DTYPES:
            raise ConfigError(f"--adapter-dtype must be one of {', '.join(ADAPTER_DTYPES)}, got {self.adapter_dtype!r}.")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}.")
        if self.offload_device not in ("cpu", "nvme"):
            raise ConfigError(f"--offload-device must be cpu or nvme, got {self.offload_device!r}.")
        if self.offload_device == "nvme" and not self.offload_optimizer:
            raise ConfigError("--offload-device nvme needs --offload-optimizer.")

    @property
    def adapter_bytes(self) -> int:
        return 4 if self.adapter_dtype == "fp32" else 2


def adapter_tensors(cfg: ModelConfig, tune: FineTune, moe_layer: bool = False) -> list[tuple[int, int]]:
    """The shapes of one layer's adapter tensors, A (r, d_in) then B (d_out, r) per target (that
    the layer has: a MoE layer's MLP targets are its shared expert's)."""
    shapes = linear_shapes(cfg, moe_layer)
    out = []
    for target in targets_of(cfg, tune):
        if target in shapes:
            _, d_in, d_out = shapes[target]
            out += [(tune.rank, d_in), (d_out, tune.rank)]
    return out


def rank_warning(cfg: ModelConfig, tune: FineTune) -> str | None:
    """A sentence where the rank is above min(d_in, d_out) of a target: B A (d_out x r times r x d_in)
    then has rank at most min(d_in, d_out), so the extra rank adds parameters, memory and FLOPs but
    no capacity. peft 0.21 builds it anyway (LoraLayer.update_layer refuses only r <= 0), so it is a
    warning and the memory counts what peft builds; None where every target is at least r wide."""
    narrow: dict[str, int] = {}
    for _, moe in layer_kinds(cfg):
        shapes = linear_shapes(cfg, moe)
        for target in targets_of(cfg, tune):
            if target in shapes and tune.rank > min(shapes[target][1:]):
                narrow[target] = min(narrow.get(target, tune.rank), *shapes[target][1:])
    if not narrow:
        return None
    where = ", ".join(f"{target} ({width:,})" for target, width in narrow.items())
    return (f"--lora-rank {tune.rank:,} is above the smaller side min(in, out) of {where}: an adapter's B A has "
            "rank at most that, so the extra rank adds parameters and memory but nothing it can learn (peft builds "
            "it anyway: its LoraLayer refuses only r <= 0); counted as peft builds it.")


def checkpoint_note(cfg: ModelConfig, method: str, dtype: str) -> str | None:
    """What a config's quantization_config changes here: nothing (a LoRA base is counted in --dtype,
    a QLoRA base in bitsandbytes' nf4, each made from unquantized weights), which the user of an
    AWQ, GPTQ or FP8 checkpoint is told; None for a config without one, and for QLoRA on a
    bitsandbytes nf4 checkpoint (unsloth's -bnb-4bit), which is the base QLoRA counts."""
    stored = cfg.checkpoint_weights
    if stored is None or (method == "qlora" and stored[1] == "nf4"):  # a bitsandbytes nf4 checkpoint: QLoRA's own base
        return None
    method_name, stored_dtype, group = stored[:3]
    form = f"{stored_dtype}{f' g{group}' if group else ''}, " if stored_dtype else ""
    base = f"in {dtype} (--dtype)" if method == "lora" else "in bitsandbytes' nf4, quantized from unquantized weights"
    stored_as = ("--method qlora counts it as stored (a LoRA on a bitsandbytes nf4 base is QLoRA)"
                 if stored_dtype == "nf4" else "a LoRA on the stored format is not modelled")
    return (f"the checkpoint's quantization_config ({form}quant_method {method_name}) is not read: the frozen "
            f"base is counted {base}; {stored_as}.")


def model_adapter_tensors(cfg: ModelConfig, tune: FineTune) -> list[tuple[int, int]]:
    """Every adapter tensor's shape in the model, layer kind by layer kind (layer_kinds)."""
    return [shape for count, moe in layer_kinds(cfg) for shape in adapter_tensors(cfg, tune, moe) * count]
