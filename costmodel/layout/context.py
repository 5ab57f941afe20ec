"""Context parallelism (--cp): every sequence cut into cp pieces, one a rank, with attention
over the whole sequence by exchanging keys and values, as torch 2.13's context_parallel runs it
(torch/distributed/tensor/experimental/_context_parallel/_attention.py, measured on gloo:
validate/distributed/context.py).

Per rank: n / cp tokens of every sequence, so every token-proportional quantity (activations,
the linear layers' FLOPs, the boundary a pipeline sends) is the tree's at n / cp; the attention
core sees n / cp queries against all n keys, cp times the tree's work at n / cp. Causal load
balance: torch's default cuts the sequence into 2 cp chunks and gives rank r chunks r and
2cp - 1 - r, so every rank does the same causal work (n must be a multiple of 2 cp).

The exchange, per attention layer and micro-batch, with kv = 2 b h_kv (n / cp) d_h e, the rank's
keys and values (torch sends them as attention receives them: a model that repeats its KV heads
before sdpa, as Hugging Face's and torchtitan's Llama do, sends h heads; this counts h_kv, as
Megatron's Transformer Engine does):
  allgather (torch's default rotate method)
      forward   one all-gather of the keys and values: payload cp kv
      backward  one all-gather of them again (cp kv), and cp sends of the key and value
                gradients around the ring, accumulated in fp32 (kv x 4 / e each)
  ring (set_rotate_method("alltoall"))
      forward   cp - 1 sends of kv to the next rank
      backward  cp - 1 sends of kv, and cp sends of the fp32 gradients
A ring step's send overlaps the attention computing on the previous block; the all-gather runs
before it and is exposed (costmodel/layout/time.py). Parameters are replicated over cp and their
gradients reduced over dp x cp (Layout.shard_ranks).
"""

from __future__ import annotations

from typing import Any

from ..config import ConfigError, ModelConfig, Workload


def check_context_parallel(cfg: ModelConfig, layout: Any) -> None:
    """Raise ConfigError (one sentence) where context parallelism is not modelled."""
    if cfg.architecture != "decoder":
        raise ConfigError("layout: context parallelism of an encoder is not modelled (decoder-only models only).")
    if cfg.sliding_window is not None:
        raise ConfigError(f"layout: context parallelism with a sliding window ({cfg.sliding_window} tokens) "
                          "is not modelled.")
    if cfg.mla:
        raise ConfigError("layout: context parallelism with latent attention is not modelled.")
    if layout.ep > 1:
        raise ConfigError("layout: context parallelism with expert parallelism is not modelled.")
    if layout.sp:
        raise ConfigError("layout: context parallelism with sequence parallelism is not modelled.")


def check_workload(workload: Workload, cp: int) -> None:
    if workload.attention == "eager":
        raise ConfigError("layout: context parallelism runs fused attention (sdpa or flash), not eager.")
    if workload.seq_len % (2 * cp):
        raise ConfigError(f"layout: --cp {cp} cuts each sequence into 2 cp = {2 * cp} chunks; "
                          f"{workload.seq_len} tokens do not divide.")


def exchange(cfg: ModelConfig, workload: Workload, cp: int, rotate: str, attention_layers: int) -> dict[str, int]:
    """Payload bytes one rank moves for one micro-batch over `attention_layers` layers."""
    e = workload.bytes_per_element
    elements = 2 * workload.batch * cfg.n_kv_heads * (workload.seq_len // cp) * cfg.d_head
    kv, gradients = e * elements, 4 * elements
    if rotate == "allgather":
        per_layer = {"all_gather": 2 * cp * kv, "send": cp * gradients}
    else:
        per_layer = {"send": 2 * (cp - 1) * kv + cp * gradients}
    return {kind: attention_layers * value for kind, value in per_layer.items()}
