"""Fine-tuning memory: LoRA and QLoRA adapters on a frozen base, and the optimizers people use for
them (AdamW, 8-bit and paged AdamW, Adafactor, SGD with momentum), with the optimizer state
optionally offloaded to the host (ZeRO-Offload).

What a step holds, as peft 0.21 and bitsandbytes 0.50 build it (validate/finetune.py measures each
on a real model; tests/test_finetune.py asserts equality):

  base weights   frozen: every parameter in --dtype (LoRA), or the linear layers in nf4 with
                 double quantization and the rest in --dtype (QLoRA: costmodel/quantization.py)
  adapters       per target linear (d_in -> d_out) and layer: A (r x d_in) and B (d_out x r), in
                 the adapter dtype (fp32: peft's default autocast_adapter_dtype; or --dtype)
  gradients      the adapters' only (the base has none)
  optimizer      per adapter tensor (OPTIMIZER_STATE): AdamW two moments in the adapter dtype and
                 a 4-byte step; 8-bit AdamW (bitsandbytes) one byte per moment and an fp32 absmax
                 per 256 values for a tensor of 4,096 values or more, fp32 moments below, and the
                 two 256-entry quantile maps once; Adafactor (transformers', in fp32) a row and a
                 column of second moments for a matrix and its RMS (no first moment); SGD with
                 momentum one buffer
  activations    the tree's full-training activations (costmodel/memory.py, the same attention and
                 recomputation), less what frozen weights no longer need: each linear layer's input
                 (kept only where an adapter reads it; o_proj's is a view of a fused attention
                 kernel's saved output, so it stays), each RMSNorm's scaled output (its weight
                 is frozen), the embedding's token ids; plus, per adapter, the input it keeps (one
                 copy per group of adapters sharing an input in --dtype; one copy each when peft
                 casts it to fp32 adapters) and A's output (b n r). As with peft's
                 enable_input_require_grads (what prepare_model_for_kbit_training and gradient
                 checkpointing set up), the first layer keeps what the others keep.

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
from dataclasses import dataclass, field
from typing import Any

from .config import ConfigError, ModelConfig, Workload
# The LoRA targets (Llama's and GPT-NeoX's linear layers, peft's default) and the choices of a
# fine-tune, defined in spec.py.
from .spec import ADAPTER_DTYPES, DEFAULT_LORA_TARGETS as DEFAULT_TARGETS, NEOX_LORA_TARGETS as NEOX_TARGETS
from .spec import LORA_TARGETS as TARGETS, PHI3_LORA_TARGETS
from .spec import FINETUNE_METHODS as METHODS
from .spec import FINETUNE_OPTIMIZERS as OPTIMIZERS

ALL_TARGETS = TARGETS + NEOX_TARGETS + tuple(t for t in PHI3_LORA_TARGETS if t not in TARGETS)
#: bitsandbytes 8-bit optimizers: tensors of at least this many values get 8-bit state
#: (min_8bit_size), quantized in blocks of this many values (one fp32 absmax each).
BNB_MIN_8BIT_SIZE = 4096
BNB_BLOCK = 256
BNB_QMAP_BYTES = 2 * 256 * 4  # the signed and unsigned dynamic maps, 256 fp32 each, shared
FP32 = 4


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


_LLAMA = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True)
#: Mixtures of experts with Llama's attention: transformers 5.24 fuses each layer's routed experts
#: into 3-D parameters (gate_up_proj, down_proj), not nn.Linear, so LoRA targets the attention
#: projections and the MLP linears of the shared expert and of dense layers, where the model has
#: them (linear_shapes; peft's target_parameters on the experts is not modelled); the frozen
#: router, experts and shared expert stop keeping their inputs (_experts_removed).
_MOE = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True, mlp_targets=False, moe=True)
_MOE_SHARED = Family(_llama_shapes, TARGETS, DEFAULT_TARGETS, rms_norm=True, moe=True)  # Qwen2-MoE: measured
FAMILIES = {"llama": _LLAMA, "mistral": _LLAMA, "qwen2": _LLAMA, "qwen3": _LLAMA,
            "gpt_neox": Family(_neox_shapes, NEOX_TARGETS, ("query_key_value",), rms_norm=False,
                               attentions=("eager",)),
            "gemma": _LLAMA, "smollm3": _LLAMA, "granite": _LLAMA, "gemma2": _LLAMA, "gemma3_text": _LLAMA,
            "olmo2": _LLAMA, "phi3": Family(_phi3_shapes, PHI3_LORA_TARGETS, ("qkv_proj",), rms_norm=True,
                           output_view=False),
            "mixtral": _MOE, "qwen2_moe": _MOE_SHARED, "qwen3_moe": _MOE, "olmoe": _MOE, "granitemoe": _MOE}
LORA_FAMILIES = tuple(FAMILIES)


def family_of(cfg: ModelConfig) -> str:
    """The family's key in FAMILIES, or one sentence saying which families are modelled."""
    if cfg.family not in FAMILIES or cfg.moe != FAMILIES[cfg.family].moe or cfg.architecture != "decoder":
        raise ConfigError(f"fine-tuning memory covers the Llama layout ({', '.join(LORA_FAMILIES[:4])}, "
                          f"{', '.join(LORA_FAMILIES[5:])}) and gpt_neox; model {cfg.name!r} is {cfg.family}.")
    return cfg.family


def targets_of(cfg: ModelConfig, tune: "FineTune") -> tuple[str, ...]:
    """The tune's targets for this model's family: its default, all its linear layers, or the
    names given (each a linear layer of this family)."""
    family = FAMILIES[family_of(cfg)]
    present = {name for _, moe in layer_kinds(cfg) for name, (group, _, _) in linear_shapes(cfg, moe).items()
               if family.mlp_targets or group.startswith("attention")}
    linears = tuple(t for t in family.targets if t in present)
    if tune.targets is None:
        return family.defaults
    if tune.targets == ("all-linear",):
        return linears
    foreign = [t for t in tune.targets if t not in linears]
    if foreign:
        raise ConfigError(f"--lora-targets: {foreign[0]!r} is not a linear layer of {cfg.family} "
                          f"({', '.join(linears)}, or all-linear)"
                          + ("; its routed experts are fused 3-D parameters, not linear layers, which peft "
                             "adapts as parameters (target_parameters; the experts' down_proj too): not modelled."
                             if cfg.moe else "."))
    return tuple(t for t in linears if t in tune.targets)


@dataclass(frozen=True)
class FineTune:
    """A fine-tuning setup: method, adapter rank, scaling, targets, adapter dtype, optimizer and
    where its state lives."""

    method: str = "lora"
    rank: int = 16
    alpha: float = 32.0  # scales B A x by alpha / rank: no memory of its own
    targets: tuple[str, ...] | None = None  # None: peft's default for the family; ("all-linear",)
    adapter_dtype: str = "fp32"
    optimizer: str = "adamw"
    offload_optimizer: bool = False  # ZeRO-Offload: optimizer state (and its update) on the host
    offload_device: str = "cpu"  # where the offloaded state lives: cpu, or nvme (ZeRO-Infinity)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}.")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ConfigError(f"--lora-rank must be a positive whole number, got {self.rank!r}.")
        if not (self.alpha > 0 and math.isfinite(self.alpha)):  # inf scales the adapters' output by inf
            raise ConfigError(f"--lora-alpha must be positive and finite, got {self.alpha!r}.")
        if self.targets is not None:
            targets = ("all-linear",) if self.targets in (("all-linear",), "all-linear") else tuple(self.targets)
            unknown = [t for t in targets if t not in ALL_TARGETS + ("all-linear",)]
            if unknown or not targets:
                raise ConfigError(f"--lora-targets: {unknown[0] if unknown else 'none given'!r} is not one of "
                                  f"{', '.join(ALL_TARGETS)} (or all-linear).")
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
    method_name, stored_dtype, group = stored
    form = f"{stored_dtype}{f' g{group}' if group else ''}, " if stored_dtype else ""
    base = f"in {dtype} (--dtype)" if method == "lora" else "in bitsandbytes' nf4, quantized from unquantized weights"
    return (f"the checkpoint's quantization_config ({form}quant_method {method_name}) is not read: the frozen "
            f"base is counted {base}; a LoRA on the stored format is not modelled.")


def model_adapter_tensors(cfg: ModelConfig, tune: FineTune) -> list[tuple[int, int]]:
    """Every adapter tensor's shape in the model, layer kind by layer kind (layer_kinds)."""
    return [shape for count, moe in layer_kinds(cfg) for shape in adapter_tensors(cfg, tune, moe) * count]


def optimizer_state_bytes(shapes: list[tuple[int, int]], optimizer: str, dtype_bytes: int) -> int:
    """Bytes of optimizer state for these parameter tensors (OPTIMIZER_STATE in the module text)."""
    total = 0
    eight_bit = False
    for rows, cols in shapes:
        values = rows * cols
        if optimizer in ("adamw", "paged_adamw"):
            total += 2 * values * dtype_bytes + FP32  # exp_avg, exp_avg_sq; the step as an fp32 tensor
        elif optimizer in ("adamw8bit", "paged_adamw8bit"):
            if values >= BNB_MIN_8BIT_SIZE:
                eight_bit = True
                total += 2 * values + 2 * FP32 * math.ceil(values / BNB_BLOCK)
            else:
                total += 2 * values * FP32
        elif optimizer == "adafactor":
            # transformers' Adafactor works in fp32 whatever the dtype: a factored second moment
            # (a row and a column, fp32) and the parameter's RMS as an fp32 scalar tensor.
            total += (rows + cols) * FP32 + FP32
        elif optimizer == "sgd_momentum":
            total += values * dtype_bytes
    return total + (BNB_QMAP_BYTES if eight_bit else 0)


def _removed_per_layer(cfg: ModelConfig, workload: Workload) -> int:
    """What a layer no longer keeps once its weights are frozen, in the activation dtype: each
    linear group's input (o_proj's only where it is not a view of the attention kernel's output)
    and, for RMSNorm families, the norms' normalised inputs (the two sublayers' and, with Qwen3's
    q/k norms, one per query and key head)."""
    dims = workload.dimensions(cfg)
    tokens, e = dims["b"] * dims["n"], dims["e"]
    inputs = {}
    for group, d_in, _ in linear_shapes(cfg).values():
        inputs[group] = d_in
    if _output_shared(cfg, workload):
        inputs.pop("attention_output")
    norms = 0
    if FAMILIES[family_of(cfg)].rms_norm:
        sublayer_norms = 2 * (int(cfg.input_norms) + int(cfg.post_sublayer_norm))  # Gemma 2's four, OLMo 2's two
        norms = _x_hat_bytes(cfg, e) * (sublayer_norms * cfg.d_model + ((cfg.n_heads + cfg.n_kv_heads) * cfg.d_head
                                                                         if cfg.qk_norm else 0))
    return tokens * (e * sum(inputs.values()) + norms)


def _x_hat_bytes(cfg: ModelConfig, e: int) -> int:
    """Bytes per value of the normalised tensor an RMSNorm keeps for its weight's gradient (fp32
    in Gemma's, costmodel/blocks/norms.py's rmsnorm_x_hat)."""
    from . import symbols as S
    from .blocks.norms import rmsnorm_x_hat
    from .facts import facts_for

    return int(rmsnorm_x_hat(1, facts_for("hf", cfg.family)).subs(S.e, e))


def _experts_removed(cfg: ModelConfig, workload: Workload) -> int:
    """What each MoE layer's frozen feed-forward no longer keeps, beyond a dense layer's gate/up
    input (d) and down input (d_ff): the top_k gathered rows of d into the routed experts'
    grouped matmul and of d_expert into their down projection, the shared expert's down input
    (d_shared) in place of the dense d_ff; the router and shared expert read the norm's output, the
    dense layer's d (measured: tests/test_finetune_families.py)."""
    if not cfg.moe:
        return 0
    dims = workload.dimensions(cfg)
    tokens, e = dims["b"] * dims["n"], dims["e"]
    per_token = cfg.top_k * (cfg.d_model + cfg.d_expert) + cfg.d_shared - cfg.d_ff
    return cfg.n_moe_layers * tokens * e * per_token


def _output_shared(cfg: ModelConfig, workload: Workload) -> bool:
    """Whether o_proj's input is a view of what the attention kernel keeps anyway: a fused
    kernel (sdpa, flash) saves its output, whose (b, n, h, d_h) layout the reshape only views;
    eager's output is transposed into a new tensor (and Phi-3's, Family.output_view)."""
    return workload.attention != "eager" and FAMILIES[family_of(cfg)].output_view


def _added_per_layer(cfg: ModelConfig, workload: Workload, tune: FineTune, moe_layer: bool = False) -> int:
    """What a layer's adapters keep: their inputs and A's outputs."""
    dims = workload.dimensions(cfg)
    tokens, e = dims["b"] * dims["n"], dims["e"]
    shapes = linear_shapes(cfg, moe_layer)
    cast = tune.adapter_bytes != e
    added, groups = 0, set()
    for target in (t for t in targets_of(cfg, tune) if t in shapes):
        group, d_in, _ = shapes[target]
        if cast:
            added += tokens * d_in * tune.adapter_bytes  # peft casts x to the adapter dtype, per adapter
        elif group not in groups and not (group == "attention_output" and _output_shared(cfg, workload)):
            added += tokens * d_in * e
        groups.add(group)
        added += tokens * tune.rank * tune.adapter_bytes
    return added


def _outside_removed(cfg: ModelConfig, workload: Workload) -> int:
    """Outside the layers: the head's input, the final RMSNorm's normalised input (LayerNorm
    keeps the same either way), the token ids (int64)."""
    dims = workload.dimensions(cfg)
    tokens, e = dims["b"] * dims["n"], dims["e"]
    norm = _x_hat_bytes(cfg, e) if FAMILIES[family_of(cfg)].rms_norm else 0
    return tokens * ((e + norm) * cfg.d_model + 8)


def _gate_in_nf4(cfg: ModelConfig, nf4: Workload) -> int:
    """Bytes bitsandbytes adds by quantizing Qwen2-MoE's shared-expert gate, an nn.Linear(d, 1)
    that the tree's nf4 keeps in the activation dtype (as vLLM does): its one matrix per MoE layer
    in nf4 (blocks.base.quantized_bytes) in place of its d values. Measured in
    tests/test_finetune_families.py (1,025 bytes a layer at d 48)."""
    from .blocks.base import quantized_bytes

    if not cfg.shared_expert_gate:
        return 0
    stored = sum(quantized_bytes(((1, cfg.d_model, cfg.n_moe_layers),), nf4.weight_format).values())
    return int(stored) - cfg.n_moe_layers * cfg.d_model * nf4.dimensions(cfg)["e"]


@dataclass(frozen=True)
class FineTuneMemory:
    """Bytes of one fine-tuning step on one GPU (and on the host, with the optimizer offloaded)."""

    params: int
    trainable_params: int
    base_weights: int
    adapters: int
    gradients: int
    optimizer: int
    activations: int
    host: int = 0
    pcie_bytes_per_step: int = 0
    nvme: int = 0  # the optimizer state on NVMe (--offload-device nvme)
    nvme_bytes_per_step: int = 0  # that state read and written back each step
    notes: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return self.base_weights + self.adapters + self.gradients + self.optimizer + self.activations

    def to_dict(self) -> dict[str, Any]:
        return {"params": self.params, "trainable_params": self.trainable_params,
                "base_weights": self.base_weights, "adapters": self.adapters, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations, "total": self.total,
                "host": self.host, "pcie_bytes_per_step": self.pcie_bytes_per_step, "nvme": self.nvme,
                "nvme_bytes_per_step": self.nvme_bytes_per_step, "notes": list(self.notes)}


def attention_gap(cfg: ModelConfig, workload: Workload) -> str | None:
    """Why a step's memory is not modelled under workload.attention (a clause naming what is), or
    None where it is: a family measured under eager only (GPT-NeoX), or a sliding window shorter
    than the sequence, which peft's run matches under eager only. Eager is modelled for both."""
    family = FAMILIES[family_of(cfg)]
    if workload.attention not in family.attentions:
        return (f"fine-tuning memory for {cfg.family} is measured under --attention {' or '.join(family.attentions)} "
                f"only (its {workload.attention} activations are not modelled exactly yet)")
    if cfg.n_window_layers and workload.attention != "eager" and workload.seq_len > cfg.sliding_window:
        return (f"fine-tuning memory with a sliding window ({cfg.sliding_window:,}) shorter than the sequence "
                f"matches peft under --attention eager only ({workload.attention} keeps more, not modelled)")
    return None


def default_attention(cfg: ModelConfig, workload: Workload) -> tuple[str, str | None]:
    """The attention a step is sized under when --attention is not given, and a note when it is not
    transformers' own choice (workload.attention, defaults.class_attention): that choice where its
    memory is modelled, else eager (attention_gap), as estimate falls back to a modelled kernel."""
    gap = attention_gap(cfg, workload)
    if gap is None:
        return workload.attention, None
    return "eager", (f"attention eager, not transformers' default {workload.attention}: {gap}; "
                     f"--attention {workload.attention} is refused")


def check(cfg: ModelConfig, workload: Workload) -> None:
    gap = attention_gap(cfg, workload)
    if gap is not None:
        window = workload.attention in FAMILIES[cfg.family].attentions  # the family's kernel, past the window
        raise ConfigError(f"{gap}{'; use --attention eager or --seq-len <= the window' if window else ''}.")
    if workload.impl != "hf":
        raise ConfigError("fine-tuning memory models Hugging Face's code with peft: use --impl hf.")
    if workload.gen_tokens:
        raise ConfigError("fine-tuning trains on sequences: leave out --gen-tokens.")
    if cfg.moe and workload.recompute == "full":
        raise ConfigError("fine-tuning memory of a mixture of experts is not measured under --recompute full "
                          "(which layer's rebuild is the largest depends on its experts).")
    from .module_recompute import MODULE_NEEDS

    if workload.recompute in MODULE_NEEDS:  # as check_recompute_framework refuses them beside DeepSpeed and FSDP2
        raise ConfigError(f"recompute {workload.recompute!r} is Megatron-Core's recompute_modules, which Hugging "
                          "Face's code with peft does not run; use none, selective or full.")
    if workload.recompute == "deepseek":  # it freed every norm's output (23.54 GiB for a 26.59 GiB step)
        raise ConfigError("recompute 'deepseek' is DeepSeek-V3's recipe (every norm and latent attention's "
                          "up-projections rerun in backward), which Hugging Face's code with peft does not run "
                          "(its gradient checkpointing reruns whole layers); use none, selective or full.")
    if workload.recompute == "torchtitan-op":
        raise ConfigError("fine-tuning memory does not model --recompute torchtitan-op: the adapters' "
                          "matmuls would join the policy's count of a layer's matmuls.")


def finetune_memory(cfg: ModelConfig, workload: Workload, tune: FineTune) -> FineTuneMemory:
    """The memory of one LoRA or QLoRA step (see the module text)."""
    import dataclasses

    from .estimation import Estimate

    check(cfg, workload)
    full = Estimate(cfg, workload)
    base_params = full.total("params")
    if tune.method == "qlora":
        nf4 = dataclasses.replace(workload, weight_dtype="nf4", double_quant=True)
        base_weights = Estimate(cfg, nf4).quantized_weights()["total"] + _gate_in_nf4(cfg, nf4)
    else:
        base_weights = full.memory_numbers()["weights"]
    shapes = model_adapter_tensors(cfg, tune)
    trainable = sum(r * c for r, c in shapes)
    adapters = trainable * tune.adapter_bytes
    optimizer = optimizer_state_bytes(shapes, tune.optimizer, tune.adapter_bytes)
    # full recomputation: one layer rebuilt (refused for a mixture of experts, check())
    kinds = [(1, False)] if workload.recompute == "full" else layer_kinds(cfg)
    layers = sum(count * (_removed_per_layer(cfg, workload) - _added_per_layer(cfg, workload, tune, moe))
                 for count, moe in kinds)
    activations = (full.memory_numbers()["activations"] - _outside_removed(cfg, workload) - layers
                   - _experts_removed(cfg, workload))
    notes = []
    if tune.method == "qlora" and cfg.moe:
        notes.append(f"bitsandbytes quantizes nn.Linear layers only: the routed experts (fused 3-D parameters in "
                     f"transformers 5.24) and the router stay in {workload.dtype}")
    host = pcie = nvme = nvme_traffic = 0
    if tune.optimizer.startswith("paged"):
        notes.append("paged optimizer: its state lives in unified memory and moves to the host when the "
                     "GPU runs short, so a spike need not fail (the bytes are the unpaged optimizer's)")
    if tune.offload_optimizer:
        host, optimizer = optimizer, 0
        pcie = 2 * adapters  # the gradients down to the host, the updated adapters back
        notes.append("ZeRO-Offload: the optimizer state and its update on the host; each step sends the "
                     "adapters' gradients down and the updated adapters back over PCIe")
        if tune.offload_device == "nvme":
            host, nvme, nvme_traffic = 0, host, 2 * host  # read and written back each step
            notes.append("ZeRO-Infinity: the optimizer state on NVMe (DeepSpeed: ZeRO 3), read and "
                         "written back each step")
    return FineTuneMemory(base_params + trainable, trainable, base_weights, adapters, adapters, optimizer,
                          activations, host, pcie, nvme, nvme_traffic, tuple(notes))


def finetune_verdict(cfg: ModelConfig, workload: Workload, tune: FineTune, capacity: int,
                     flash: bool = True) -> dict[str, Any]:
    """Whether a fine-tuning step fits in `capacity` bytes, and what would make it fit: fused
    attention, recomputation, then (cheapest first) an 8-bit optimizer, the optimizer on the host,
    QLoRA's nf4 base, a smaller batch or a shorter sequence (costmodel/verdict.py); flash False: the
    GPU runs no FlashAttention-2, which is then not offered."""
    import dataclasses

    from .verdict import verdict

    def memory_with(change: dict[str, Any]) -> int | None:
        try:
            return finetune_memory(cfg, workload, dataclasses.replace(tune, **change)).total
        except ConfigError:
            return None

    extra = []
    if tune.optimizer in ("adamw", "paged_adamw"):
        extra.append(("--optimizer adamw8bit", memory_with({"optimizer": "adamw8bit"}),
                      "8-bit moments (bitsandbytes): about the same loss curve"))
    if not tune.offload_optimizer:
        extra.append(("--offload-optimizer", memory_with({"offload_optimizer": True}),
                      "the update runs on the host: PCIe traffic each step"))
    if tune.method == "lora":
        extra.append(("--method qlora", memory_with({"method": "qlora"}),
                      "nf4 base weights: dequantized each matmul, slower, slightly less exact"))
    result = verdict(cfg, workload, None, capacity, 1, "finetune",
                     lambda c, w, _layout: finetune_memory(c, w, tune).total, tuple(extra), flash=flash)
    if not result["fits"] and not any(not o["change"].startswith(SHRINKS) for o in result["options"]):
        # no change that keeps the workload fits (a shorter sequence or batch trains something else):
        # QLoRA's own recipe first, on a T4 Llama 3.1 8B at 2,048 tokens, not only --seq-len 78
        result["options"] = _combined_options(cfg, workload, tune, capacity) + result["options"]
    return result


#: The verdict's options that shrink what a step trains (verdict.options' last resort), not how.
SHRINKS = ("--batch ", "--seq-len ")


def _combined_options(cfg: ModelConfig, workload: Workload, tune: FineTune, capacity: int) -> list[dict[str, Any]]:
    """Where no single change fits: QLoRA's recipe, the nf4 base with full recomputation, together
    (the attention kernel as asked: sdpa alone was tried, and a window shorter than the sequence
    refuses it); if that is still too much, with the longest sequence that fits. Each figure is
    finetune_memory's. Empty when neither fits, or when only one of the two is a change. Offered
    where no change but a smaller batch or a shorter sequence fits alone."""
    import dataclasses

    from .verdict import Option

    if tune.method != "lora" or workload.recompute == "full":  # one change or none: tried already
        return []
    change = "--method qlora --recompute full"
    lean_tune = dataclasses.replace(tune, method="qlora")
    lean = dataclasses.replace(workload, recompute="full")

    def needed(seq_len: int) -> int:
        try:
            return finetune_memory(cfg, dataclasses.replace(lean, seq_len=seq_len), lean_tune).total
        except ConfigError:  # a setup the model refuses at this length: it does not fit
            return capacity + 1

    cost = "together: nf4 base weights, each layer's forward rerun in backward"
    if needed(workload.seq_len) <= capacity:
        return [Option(change, needed(workload.seq_len), True, cost).to_dict()]
    low, high = 1, workload.seq_len  # the longest sequence that fits with them, if any
    if needed(low) > capacity:
        return []
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if needed(middle) <= capacity else (low, middle)
    return [Option(f"{change} --seq-len {low}", needed(low), True, cost + ", shorter sequences").to_dict()]
