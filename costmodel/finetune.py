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

Which families are modelled, and where LoRA attaches in each: costmodel/lora_adapters.py. Whether a
step fits, and what would make it fit: costmodel/finetune_verdict.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .config import ConfigError, ModelConfig, Workload
from .spec import DTYPE_BYTES, OP_POLICIES
from .lora_adapters import (FAMILIES, FineTune, family_of, layer_kinds, linear_shapes, model_adapter_tensors,
                            targets_of)

FP32 = DTYPE_BYTES["fp32"]
#: bitsandbytes 8-bit optimizers: tensors of at least this many values get 8-bit state
#: (min_8bit_size), quantized in blocks of this many values (one fp32 absmax each).
BNB_MIN_8BIT_SIZE = 4096
BNB_BLOCK = 256
BNB_QMAP_BYTES = 2 * 256 * FP32  # the signed and unsigned dynamic maps, 256 fp32 each, shared


def dequantized_transient(cfg: ModelConfig, workload: Workload) -> str:
    """What QLoRA's total leaves out, said: bitsandbytes dequantizes a Linear4bit's nf4 weight to the compute dtype
    for each matmul (the dequant lora_time.py times), a transient the size of that matrix. The text printed "total on
    the GPU" with no word of it (session 41 left it out, not said)."""
    d_in, d_out = max(((d_in, d_out) for _, moe in layer_kinds(cfg) for _, d_in, d_out in linear_shapes(cfg, moe).values()),
                      key=lambda shape: shape[0] * shape[1])
    size = d_in * d_out * DTYPE_BYTES[workload.dtype]
    return (f"not counted in the total: bitsandbytes' dequantized copy of the nf4 matrix each matmul uses, a transient "
            f"of up to {size:,} B in {workload.dtype} (the largest base matrix, {d_in:,} x {d_out:,}), and the "
            "allocator's fragmentation")


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
    if not isinstance(workload, Workload):  # make_workload's (workload, warnings) read "'tuple' object has no attribute"
        raise ConfigError(f"workload: a costmodel Workload, got {type(workload).__name__}"
                          f"{' (costmodel.make_workload returns (workload, warnings): unpack it)' if isinstance(workload, tuple) else ''}.")
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
    if workload.recompute in OP_POLICIES:
        raise ConfigError(f"fine-tuning memory does not model --recompute {workload.recompute}: the adapters' "
                          "matmuls would join the policy's count of a layer's matmuls.")


def finetune_memory(cfg: ModelConfig, workload: Workload, tune: FineTune) -> FineTuneMemory:
    """The memory of one LoRA or QLoRA step (see the module text). cfg: a ModelConfig, or what
    costmodel.load_model takes (a preset name, a config's path or dict)."""
    import dataclasses

    from .api import load_model
    from .estimation import Estimate

    cfg = load_model(cfg)  # finetune_memory("llama3-8b", ...) read "'str' object has no attribute 'family'"
    if not isinstance(tune, FineTune):
        raise ConfigError(f"tune: a costmodel.finetune.FineTune, got {type(tune).__name__}.")
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
    notes = [dequantized_transient(cfg, workload)] if tune.method == "qlora" else []
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
