"""RecurrentGemmaForCausalLM (transformers 5.24) measured where its cache is not the others': its
forward returns no cache, and each recurrent block holds its own states (conv1d_state,
rg_lru.recurrent_states) beside the DynamicCache the attention layers fill. So a caller passes a
DynamicCache built from the config, and the states held are the cache's keys and values (each
storage once, validate/measure/common.storage_key) plus every recurrent block's two states.
"""

from __future__ import annotations

from typing import Any

import torch

from validate.measure import matmul_flops
from validate.measure.common import storage_key

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def build(fields: dict[str, Any], dtype: str = "fp32") -> Any:
    """The class from a config dict, eager attention, in eval mode."""
    import transformers

    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype]).eval()


def prefill(model: Any, batch: int, seq: int) -> tuple[Any, int]:
    """(the DynamicCache after a prefill of batch x seq random tokens, its forward matmul FLOPs)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    flops = matmul_flops(model, {"input_ids": ids, "cache": cache, "use_cache": True}).forward
    return cache, flops


def decode_step_flops(model: Any, batch: int, seq: int, generated: int) -> int:
    """Matmul FLOPs of one cached step after a prefill of `seq` tokens and `generated` steps."""
    cache, _ = prefill(model, batch, seq)
    step = {"input_ids": torch.ones(batch, 1, dtype=torch.long), "cache": cache, "use_cache": True}
    with torch.no_grad():
        for _ in range(generated):
            model(**step)
    return matmul_flops(model, step).forward


def state_bytes(model: Any, cache: Any) -> int:
    """Bytes held after a forward with `cache`: its keys and values, each storage once, and each
    recurrent block's conv and recurrence states."""
    tensors = [getattr(layer, key, None) for layer in cache.layers for key in ("keys", "values")]
    for layer in model.model.layers:
        block = layer.temporal_block
        if hasattr(block, "rg_lru"):
            tensors += [block.conv1d_state, block.rg_lru.recurrent_states]
    held = {storage_key(t): t.untyped_storage().nbytes() for t in tensors if isinstance(t, torch.Tensor)}
    return sum(held.values())
