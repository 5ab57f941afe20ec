"""xLSTMForCausalLM (transformers 5.24, its native kernels) measured where its cache is not the
others': xLSTMCache holds each layer's mLSTM state (C, n, m) in rnn_state, which a cached step
takes back as `cache`."""

from __future__ import annotations

from typing import Any

from validate.hf_rwkv import build, decode_step_flops_as, prefill_as
from validate.measure.common import storage_key

__all__ = ["build", "decode_step_flops", "prefill", "state_bytes"]  # build: the class as validate/hf_rwkv.py builds it


def prefill(model: Any, batch: int, seq: int) -> tuple[Any, int]:
    """(the cache after a prefill of batch x seq random tokens, its forward matmul FLOPs)."""
    return prefill_as(model, batch, seq, "cache")


def decode_step_flops(model: Any, batch: int, seq: int) -> int:
    """Matmul FLOPs of one cached step after a prefill of `seq` tokens."""
    return decode_step_flops_as(model, batch, seq, "cache")


def state_bytes(cache: Any) -> int:
    """Bytes of the layers' states, each storage once (the cache's one-element position counter aside)."""
    tensors = [t for state in cache.rnn_state.values() for t in state]
    return sum({storage_key(t): t.untyped_storage().nbytes() for t in tensors}.values())
