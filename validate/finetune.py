"""LoRA and QLoRA measured on real models: peft 0.21 adapters on a Hugging Face model built from a
ModelConfig (QLoRA: bitsandbytes nf4 with double quantization, loaded from a checkpoint written
here), and the optimizers' state after a real step (torch AdamW and SGD, bitsandbytes AdamW8bit,
transformers' Adafactor), all on the CPU. costmodel/finetune.py predicts each number; the tests
compare them (tests/test_finetune.py).
"""

from __future__ import annotations

import tempfile
from typing import Any

import torch

from costmodel.config import ModelConfig, Workload
from costmodel.lora_adapters import FineTune, targets_of

from .hf_models import build_hf_model, hf_config
from .measure import saved_activation_bytes

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _quantized_base(cfg: ModelConfig, attention: str) -> Any:
    """cfg's model written to a temporary checkpoint and loaded in nf4 with double quantization."""
    import transformers as tr

    from .quantized import quantization_config

    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        build_hf_model(cfg, attention, torch.bfloat16).save_pretrained(folder)
        config = quantization_config("bnb-nf4-double")
        config.bnb_4bit_compute_dtype = torch.bfloat16
        return tr.AutoModelForCausalLM.from_pretrained(folder, quantization_config=config, dtype=torch.bfloat16,
                                                       attn_implementation=attention)


def lora_model(cfg: ModelConfig, workload: Workload, tune: FineTune) -> Any:
    """The peft model a user trains: the base frozen, adapters on the targets, the inputs made to
    require grad (enable_input_require_grads, as prepare_model_for_kbit_training does)."""
    import peft

    if tune.method == "qlora":
        base = _quantized_base(cfg, workload.attention)
    else:
        torch.manual_seed(0)
        base = build_hf_model(cfg, workload.attention, DTYPES[workload.dtype])
    base.enable_input_require_grads()
    if workload.recompute == "full":  # what saved_activation_bytes sees: the checkpoints
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    config = peft.LoraConfig(r=tune.rank, lora_alpha=tune.alpha, target_modules=list(targets_of(cfg, tune)),
                             lora_dropout=0.0)
    model = peft.get_peft_model(base, config, autocast_adapter_dtype=tune.adapter_dtype == "fp32")
    if tune.adapter_dtype not in ("fp32", workload.dtype):
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                parameter.data = parameter.data.to(DTYPES[tune.adapter_dtype])
    return model.train()


def _inputs(cfg: ModelConfig, workload: Workload) -> dict[str, torch.Tensor]:
    ids = torch.arange(workload.batch * workload.seq_len).reshape(workload.batch, workload.seq_len) % cfg.vocab_size
    return {"input_ids": ids, "labels": ids}


def make_optimizer(name: str, parameters: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    if name in ("adamw", "paged_adamw"):
        return torch.optim.AdamW(parameters, lr=1e-4)
    if name in ("adamw8bit", "paged_adamw8bit"):
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(parameters, lr=1e-4)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(parameters)
    if name == "sgd_momentum":
        return torch.optim.SGD(parameters, lr=1e-3, momentum=0.9)
    raise ValueError(f"unknown optimizer {name!r}")


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the unique storages in the optimizer's state."""
    seen, total = set(), 0
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                key = value.untyped_storage()._cdata
                if key not in seen:
                    seen.add(key)
                    total += value.untyped_storage().nbytes()
    return total


def measure(cfg: ModelConfig, workload: Workload, tune: FineTune, optimizers: tuple[str, ...] = ()) -> dict[str, Any]:
    """Parameters and trainable parameters as peft counts them, the base's weight bytes, the
    adapters' bytes, bytes saved for backward, and each optimizer's state after one step."""
    from .quantized import storage_by_part

    model = lora_model(cfg, workload, tune)
    trainable, total = model.get_nb_trainable_parameters()
    adapters = [p for p in model.parameters() if p.requires_grad]
    adapter_bytes = sum(p.untyped_storage().nbytes() for p in adapters)
    buffers = {b.untyped_storage()._cdata: b.untyped_storage().nbytes() for b in model.buffers()}
    base_bytes = sum(storage_by_part(model).values()) - adapter_bytes - sum(buffers.values())
    inputs = _inputs(cfg, workload)
    saved = saved_activation_bytes(model, inputs).total_bytes
    states = {}
    for name in optimizers:
        for p in adapters:
            p.grad = None
        optimizer = make_optimizer(name, adapters)
        loss = model(**inputs).loss
        loss.backward()
        grad_bytes = sum(p.grad.untyped_storage().nbytes() for p in adapters)
        optimizer.step()
        states[name] = optimizer_state_bytes(optimizer)
    return {"params": total, "trainable_params": trainable, "base_weights": base_bytes,
            "adapters": adapter_bytes, "activations": saved, "optimizer": states,
            **({"gradients": grad_bytes} if optimizers else {})}
