"""xLSTMForCausalLM (transformers 5.24, its native kernels) measured where its cache is not the
others': xLSTMCache holds each layer's mLSTM state (C, n, m) in rnn_state, which a cached step
takes back as `cache`."""

from __future__ import annotations

from typing import Any

import torch

from validate.measure import matmul_flops
from validate.measure.common import storage_key

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def build(fields: dict[str, Any], dtype: str = "fp32") -> Any:
    """The class from a config dict, in eval mode."""
    import transformers

    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**fields),
                                                         dtype=DTYPES[dtype]).eval()


def prefill(model: Any, batch: int, seq: int) -> tuple[Any, int]:
    """(the cache after a prefill of batch x seq random tokens, its forward matmul FLOPs)."""
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    flops = matmul_flops(model, {"input_ids": ids, "use_cache": True}).forward
    with torch.no_grad():
        cache = model(ids, use_cache=True).cache
    return cache, flops


def decode_step_flops(model: Any, batch: int, seq: int) -> int:
    """Matmul FLOPs of one cached step after a prefill of `seq` tokens."""
    cache, _ = prefill(model, batch, seq)
    return matmul_flops(model, {"input_ids": torch.ones(batch, 1, dtype=torch.long), "cache": cache,
                                "use_cache": True}).forward


def state_bytes(cache: Any) -> int:
    """Bytes of the layers' states, each storage once (the cache's one-element position counter aside)."""
    tensors = [t for state in cache.rnn_state.values() for t in state]
    return sum({storage_key(t): t.untyped_storage().nbytes() for t in tensors}.values())
