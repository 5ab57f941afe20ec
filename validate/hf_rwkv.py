"""RwkvForCausalLM (transformers 5.24) measured where its cache is not the others': its forward
returns `state`, five (b, hidden_size, num_hidden_layers) tensors (each block's last tokens for
the two mixes, in the model's dtype, and the time mix's WKV num, den and max in fp32), which a
cached step takes back as `state`."""

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


def prefill_as(model: Any, batch: int, seq: int, key: str) -> tuple[Any, int]:
    """(the output's `key` (RWKV's state, xLSTM's cache) after a prefill of batch x seq random tokens,
    its forward matmul FLOPs)."""
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    flops = matmul_flops(model, {"input_ids": ids, "use_cache": True}).forward
    with torch.no_grad():
        state = getattr(model(ids, use_cache=True), key)
    return state, flops


def decode_step_flops_as(model: Any, batch: int, seq: int, key: str) -> int:
    """Matmul FLOPs of one cached step after a prefill of `seq` tokens, the prefill's `key` passed back."""
    state, _ = prefill_as(model, batch, seq, key)
    return matmul_flops(model, {"input_ids": torch.ones(batch, 1, dtype=torch.long), key: state,
                                "use_cache": True}).forward


def prefill(model: Any, batch: int, seq: int) -> tuple[list[torch.Tensor], int]:
    """(the state after a prefill of batch x seq random tokens, its forward matmul FLOPs)."""
    return prefill_as(model, batch, seq, "state")


def decode_step_flops(model: Any, batch: int, seq: int) -> int:
    """Matmul FLOPs of one cached step after a prefill of `seq` tokens."""
    return decode_step_flops_as(model, batch, seq, "state")


def state_bytes(state: list[torch.Tensor]) -> int:
    """Bytes the state holds, each storage once."""
    return sum({storage_key(t): t.untyped_storage().nbytes() for t in state}.values())
