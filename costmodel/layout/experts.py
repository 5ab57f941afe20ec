"""Expert parallelism (--ep): the routed experts of a mixture-of-experts layer sharded over an
expert-parallel group, tokens sent to their experts by all-to-all and back.

The group. EP ranks are drawn from the data-parallel ranks (Megatron-LM's expert_model_parallel
and torchtitan's ep both carve the EP group out of the data-parallel dimension): ep divides dp and
the experts E, each rank holds E / ep whole experts, and the expert-data-parallel group, the
ranks that hold the same experts, is dp / ep ranks. Expert gradients are reduced (and their ZeRO
state sharded) over that group; everything else (attention, the router, shared experts, dense
layers, embeddings) stays on the data-parallel path over dp ranks.

The tokens (torchtitan's pattern, validate/distributed/experts.py, measured): each rank routes its
S = b n k slots, exchanges the tokens-per-expert counts (one all_to_all_single of E int64), sends
each slot's token to the rank of its expert (dispatch), runs its experts on what it receives,
and sends the results back (combine). Backward runs both exchanges again the other way. With
payload = a call's input (validate/distributed/comm.py), per layer and micro-batch:

  forward   dispatch  S_sent d e      combine  S_received d e     counts 8 E
  backward  combine'  S_sent d e      dispatch' S_received d e

S_sent = S x kept (the slots not dropped); S_received = S x f, where f, the load factor, is ep
times the share of all slots that the rank's E / ep experts receive (1 when balanced). Wire bytes
are payload x (ep - 1)/ep: a rank's own share does not leave it.

The load (--expert-load, relative shares per expert, balanced by default) and a capacity factor c
(--capacity-factor; None: dropless, as torchtitan and DeepSeek-V3 run): with c each expert takes at
most c / E of the slots (GShard and Switch Transformer's capacity, Megatron-LM's
moe_expert_capacity_factor), the rest are dropped. The most loaded rank (the group of experts with
the largest capped share) sets the per-rank expert activations and FLOPs: f times the balanced ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..config import ConfigError, ModelConfig


@dataclass(frozen=True)
class ExpertLoad:
    """The most loaded EP rank's slots against the balanced share, and the slots kept."""

    factor: Fraction  # slots the most loaded rank receives / the balanced S
    kept: Fraction  # fraction of slots not dropped by the capacity
    rank: int  # which EP rank is the most loaded (the first of equals)


@lru_cache(maxsize=256)
def expert_load(n_experts: int, ep: int, shares: tuple[float, ...] | None,
                capacity_factor: float | None) -> ExpertLoad:
    """The load factor of the most loaded of ep ranks holding E / ep consecutive experts (a plan
    asks for the same few thousands of times)."""
    if shares is None and capacity_factor is None:
        return ExpertLoad(factor=Fraction(1), kept=Fraction(1), rank=0)
    raw = [Fraction(x) for x in (shares or (1,) * n_experts)]
    total = sum(raw)
    share = [x / total for x in raw]
    if capacity_factor is not None:
        cap = Fraction(capacity_factor) / n_experts
        share = [min(x, cap) for x in share]
    per_rank = n_experts // ep
    groups = [sum(share[g * per_rank:(g + 1) * per_rank]) for g in range(ep)]
    hottest = max(range(ep), key=lambda g: (groups[g], -g))
    return ExpertLoad(factor=ep * groups[hottest], kept=sum(share), rank=hottest)


def check_expert_parallel(cfg: ModelConfig, ep: int, tp: int, dp: int, zero: int, framework: str,
                          capacity_factor: float | None) -> None:
    """Raise ConfigError (one sentence) where expert parallelism cannot run or is not modelled."""
    if capacity_factor is not None and not (isinstance(capacity_factor, (int, float)) and capacity_factor > 0):
        raise ConfigError(f"layout: the capacity factor must be a positive number, got {capacity_factor!r}.")
    if capacity_factor is not None and not cfg.moe:
        raise ConfigError(f"layout: a capacity factor needs a mixture of experts; model {cfg.name!r} has none.")
    if ep == 1:
        return
    if not cfg.moe:
        raise ConfigError(f"layout: expert parallelism (--ep {ep}) needs a mixture of experts; "
                          f"model {cfg.name!r} has none.")
    if cfg.n_experts % ep:
        raise ConfigError(f"layout: ep = {ep} does not divide the {cfg.n_experts} experts of model {cfg.name!r}.")
    if dp % ep:
        raise ConfigError(f"layout: ep = {ep} must divide dp = {dp} (the expert-parallel ranks are "
                          "data-parallel ranks).")
    if tp > 1:
        raise ConfigError("layout: expert parallelism with tensor parallelism is not modelled (use --tp 1).")
    if framework == "fsdp2":
        raise ConfigError("layout: expert parallelism is modelled for megatron and deepspeed, not fsdp2.")
    if zero >= 3:
        raise ConfigError("layout: expert parallelism with ZeRO-3 is not modelled (--zero 0, 1 or 2).")
