"""Any Hugging Face causal LM built from a config.json-style dict, with no weights downloaded.

validate/hf_models.py builds the six families the cost model covers from a ModelConfig. This module
is the measured side of the families that come next (Llama 3, Qwen2.5/3, Gemma/Gemma 2, Phi-3,
GPT-NeoX, Falcon, OPT, BLOOM, Mixtral, Qwen2-MoE, DeepSeek-V3): it builds the class a user trains
(`AutoModelForCausalLM`'s choice for the dict's `model_type`) straight from the dict, so what is
measured is Hugging Face's own reading of the config, not ours. Full-size models are built inside
validate.hf_models.fake_mode(); the dtype is set as torch's default while building, as there.
"""

from __future__ import annotations

from typing import Any

import torch

from .hf_longcat_flash import counted_routing
from .torch_modes import default_dtype

ATTN_IMPLEMENTATIONS = ("eager", "sdpa")
#: transformers 5.24's experts kernels that run on the CPU ("grouped_mm" is its default).
EXPERTS_IMPLEMENTATIONS = ("grouped_mm", "batched_mm", "eager")


def hf_config_from_dict(config: dict[str, Any], attn_implementation: str = "eager",
                        experts_implementation: str | None = None) -> Any:
    """The transformers config object of a config.json dict (its `model_type` picks the class)."""
    from transformers import AutoConfig

    if "model_type" not in config:
        raise ValueError("the config dict has no 'model_type'; it names the Hugging Face family.")
    if attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise ValueError(f"attn_implementation must be one of {', '.join(ATTN_IMPLEMENTATIONS)}; "
                         f"got {attn_implementation!r}.")
    if experts_implementation not in (None, *EXPERTS_IMPLEMENTATIONS):
        known = ", ".join(EXPERTS_IMPLEMENTATIONS)
        raise ValueError(f"experts_implementation must be one of {known}; "
                         f"got {experts_implementation!r}.")
    fields = {k: v for k, v in config.items() if k != "model_type"}
    hf = AutoConfig.for_model(config["model_type"], **fields)
    hf._attn_implementation = attn_implementation
    if experts_implementation is not None:
        hf._experts_implementation = experts_implementation
    return hf


def build_hf_from_dict(config: dict[str, Any], attn_implementation: str = "eager",
                       dtype: torch.dtype | None = None,
                       experts_implementation: str | None = None) -> torch.nn.Module:
    """The randomly initialised *ForCausalLM of the dict's model_type, in train mode.

    dtype, if given, is torch's default dtype while building (works under fake_mode()).
    experts_implementation (MoE families): None keeps transformers' default, grouped_mm.
    """
    from transformers import AutoModelForCausalLM

    hf = hf_config_from_dict(config, attn_implementation, experts_implementation)
    with default_dtype(dtype):
        model = AutoModelForCausalLM.from_config(hf)
    return counted_routing(model).train()  # LongCat-Flash's routers off their zero experts, as the tree counts


def family_inputs(config: dict[str, Any], batch: int, seq_len: int,
                  labels: bool = False) -> dict[str, torch.Tensor]:
    """Deterministic forward kwargs: input_ids spread over the vocabulary, and labels (a copy).

    No attention_mask: every token is real, so each model builds its own causal mask.
    """
    index = torch.arange(batch * seq_len, dtype=torch.long).reshape(batch, seq_len)
    inputs = {"input_ids": (index * 7919 + 3) % config["vocab_size"]}
    if labels:
        inputs["labels"] = inputs["input_ids"].clone()
    return inputs
