"""Recurrent states of a hybrid model's linear mixers (Mamba-2: Nemotron-H, Granite 4, Bamba; Gated
DeltaNet: Qwen3-Next) in a serving engine: one state per running request, whatever its length.

The bytes: a request's states are, in transformers' layout, the kv_cache_bytes of the decode
tree's Mamba-2 and Gated DeltaNet mixer leaves (in vLLM's, the same formulas at vLLM's conv columns
and dtypes: "The state layout" below) (blocks/mamba.py mamba_state_bytes, blocks/deltanet.py deltanet_state_bytes,
the formulas the family tests hold to the byte against transformers' cache after a prefill; nothing
else: an fp8 KV cache's per-layer scales do not grow with the context either, but are no state),
at b = 1; on one of tp GPUs its Mamba-2 heads and groups split as
layout/split.py's mamba_split (vLLM's MambaMixer2 splits them so too), and 1/pp of the layers.

The slots: vLLM v1 (the hybrid KV cache manager; vllm/v1/kv_cache_interface.py MambaSpec,
v1/core/single_type_kv_cache_manager.py MambaManager) keeps the states in the same pool of pages as
the attention's keys and values: a Mamba group's block table holds one block per request (the
request's state, updated in place), taken when the request is scheduled and freed when it finishes
or is preempted. So the simulator's BlockPool gives each running request `state_blocks` pool blocks
besides its keys' and values': the state's bytes over a block's (a block of block_size tokens of
every attention layer), rounded up to whole blocks. Concurrency is then bounded by the slots
(num_blocks // (state_blocks + 1): each running request holds at least one KV block too) as well as
by --max-num-seqs; where states are large beside a block of keys and values, the slots bind first.
The other schedulers (sarathi, orca, static, vllm-v0) hold states by the same rule (vLLM v0's
MambaCacheManager instead allocated state tensors for max_num_seqs requests up front: not modelled).
The step's time: StepTime times the tree's chunk phase with the step's tokens as one sequence at
b = 1, whose mixers read one set of chunk states per chunk_size tokens, not one per request. A
running request's states are read and written once per step (mamba.scan_bytes and
deltanet.rule_bytes at decode: 2 x its state bytes), so StateTraffic adds, per sequence in the step,
2 x its state bytes (per GPU, over the pp stages a step runs through) at the bandwidth times the
memory efficiency, as a memory-bound kernel. The chunk states the tree's chunk phase counts for the
step's tokens stay (at most ceil(tokens / chunk_size) sets of recurrent states: a stated overcount
in a decode step, 1/chunk_size of a request's).

What vLLM does that is not modelled here:
- HybridAttentionMambaModelConfig.verify_and_update_config (vllm/model_executor/models/config.py)
  raises the attention block_size until an attention page (block_size tokens of one layer) is at
  least a Mamba layer's state, and pads the Mamba page to it; pages then hold group_size layers
  (kv_cache_utils.py). The simulator keeps the given --block-size and rounds the whole request's
  states up to whole blocks, so its blocks are finer and its padding smaller than vLLM's.
- Prefix caching of states (mamba_cache_mode "align"/"all": a state kept per cached block) is
  not modelled: the simulator turns prefix caching off for these models, as vLLM v1 did before it.
- The speculative-decoding extra state blocks, and disaggregated transfer of states.

The state layout: under the vllm and vllm-v0 schedulers a request's states are vLLM's
(vllm/model_executor/layers/mamba/mamba_utils.py at commit 02d71083: MambaStateShapeCalculator's
mamba2_state_shape and gated_delta_net_state_shape keep K - 1 conv columns; MambaStateDtypeCalculator's
_mamba_state_dtype, for both, the conv state in the model dtype under mamba_cache_dtype "auto" and
the SSM / recurrent state in the conv state's dtype, or in fp32 with --mamba-ssm-cache-dtype
float32): the blocks' own mamba_state_bytes / deltanet_state_bytes at those columns and bytes, one
formula a layer (vllm_layer_states). The other schedulers (sarathi, orca, static) keep
transformers' layout, the decode tree's (K conv columns, fp32 SSM state). Not modelled: a
--mamba-cache-dtype other than auto (vLLM's fp8 conv state), the speculative-decoding columns
(num_spec), the ReplaySSM rings, and vLLM v0's (pre-v1) state dtypes, taken as v1's.

transformers 5.24's continuous batching does not serve these models: cache.py
group_layers_by_attn_type raises ValueError("Invalid layer type: linear_attention") for any layer
type other than full_attention and sliding_attention, which Nemotron-H's, Granite 4's and
Qwen3-Next's configs give (their `layer_types`).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from .. import symbols as S
from ..config import ConfigError
from ..spec import MAMBA_SSM_CACHE_DTYPES

TRANSFORMERS_ENGINE_NOTE = ("transformers 5.24's continuous batching refuses a linear_attention layer "
                            "(cache.py group_layers_by_attn_type: ValueError 'Invalid layer type')")
#: The schedulers whose engine is vLLM's, so whose states are in vLLM's layout
VLLM_STATE_SCHEDULERS = ("vllm", "vllm-v0")
STATE_PREFIX_NOTE = ("prefix caching of Mamba/DeltaNet states (vLLM's mamba_cache_mode) is not modelled: "
                     "the simulator runs these models without prefix caching")


#: The tree's leaf kinds of the mixers whose per-request states the pool holds
STATE_MIXERS = ("mamba", "deltanet")


def has_states(cfg: Any) -> bool:
    return bool(cfg.n_mixer_layers("mamba") or cfg.n_mixer_layers("deltanet"))


def check_ssm_cache_dtype(cfg: Any, ssm_cache_dtype: str) -> None:
    """Raise ConfigError where --mamba-ssm-cache-dtype is typed (other than auto) for a model with no
    state to store: it changed nothing, and the capacity search set every configuration aside."""
    if ssm_cache_dtype != "auto" and not has_states(cfg):
        raise ConfigError(f"--mamba-ssm-cache-dtype {ssm_cache_dtype}: model {cfg.name!r} has no Mamba-2 or Gated "
                          "DeltaNet layer, so no SSM state to store; the option is for hybrids (Nemotron-H, "
                          "Granite 4.0-H, Falcon-H1, Qwen3-Next).")


def check_state_engine(cfg: Any, engine: str | None) -> None:
    """Raise ConfigError (one sentence) where the engine cannot hold the model's states: transformers'
    continuous batching (engine "transformers"), or a model with no attention layer (no block of
    keys and values to size a slot by; vLLM pages such a model by its states alone, not modelled)."""
    if not has_states(cfg):
        return
    kind = "Gated DeltaNet" if cfg.n_mixer_layers("deltanet") else "Mamba-2"
    if engine == "transformers":
        raise ConfigError(f"model {cfg.name!r} has {kind} layers; {TRANSFORMERS_ENGINE_NOTE}: use --scheduler vllm.")
    if not cfg.n_mixer_layers("attention"):
        raise ConfigError(f"model {cfg.name!r} has no attention layer, so no KV block to size its {kind} "
                          "state slots by; serving a model of states alone is not modelled.")


def vllm_layer_states(scheduler: str, ssm_cache_dtype: str = "auto") -> dict[type, Any] | None:
    """Bytes of one request's state in one mixer of each class (Mamba2Mixer, GatedDeltaNetMixer) as vLLM lays them out
    (the module docstring: K - 1 conv columns in the model dtype e, the SSM state in e under "auto",
    4 bytes under "float32"), or None where the scheduler's engine is not vLLM's (transformers'
    layout, the decode tree's). A ConfigError for an unknown dtype, or float32 outside vLLM."""
    from ..blocks.deltanet import GatedDeltaNetMixer, deltanet_state_bytes
    from ..blocks.mamba import Mamba2Mixer, mamba_state_bytes
    from ..terms import FP32

    if ssm_cache_dtype not in MAMBA_SSM_CACHE_DTYPES:
        raise ConfigError(f"--mamba-ssm-cache-dtype must be one of {', '.join(MAMBA_SSM_CACHE_DTYPES)}, "
                          f"got {ssm_cache_dtype!r}.")
    if scheduler not in VLLM_STATE_SCHEDULERS:
        if ssm_cache_dtype != "auto":
            raise ConfigError(f"--mamba-ssm-cache-dtype is vLLM's option (the vllm and vllm-v0 schedulers); "
                              f"{scheduler} keeps transformers' fp32 SSM state.")
        return None
    one, columns, ssm = sp.Integer(1), S.K_m - 1, (S.e if ssm_cache_dtype == "auto" else FP32)
    return {Mamba2Mixer: mamba_state_bytes(one, columns, ssm), GatedDeltaNetMixer: deltanet_state_bytes(one, columns, ssm)}


def state_bytes(decode: Any, subs: dict, tp: int, pp: int, layer_states: dict[type, Any] | None = None) -> int:
    """Bytes of one request's states on one GPU: the kv_cache_bytes of the decode tree's (decode, a
    CostModel) Mamba-2 and Gated DeltaNet mixer leaves alone (0 without them: a KV dtype's per-layer
    scales are not states), or with layer_states (vllm_layer_states) each mixer leaf's class's bytes
    instead (the layers' other leaves hold no state); at b = 1 (subs), its Mamba-2 heads and groups split over tp GPUs (mamba_split) and its
    layers over pp stages (ceil)."""
    from ..layout.split import mamba_split

    if not has_states(decode.cfg):
        return 0
    leaves = decode.select(kind=STATE_MIXERS)
    states = (decode.total("kv_cache_bytes", leaves) if layer_states is None
              else sp.Add(*(leaf.count * layer_states[type(leaf.block)] for leaf in leaves
                            if type(leaf.block) in layer_states)))
    rank = states.xreplace(mamba_split(sp.Integer(tp))) if tp > 1 else states
    per_request = sp.expand(rank.xreplace(subs))
    if not per_request.is_integer:
        raise ConfigError(f"tp {tp} splits the Mamba-2 states into {per_request} bytes a GPU, not whole bytes.")
    return -(-int(per_request) // pp)


def state_blocks(state: int, block_bytes: int) -> int:
    """Pool blocks one request's states take: whole blocks of block_bytes (0 without states)."""
    return -(-state // block_bytes) if state else 0


class StateTraffic:
    """A StepTime whose steps also read and write each of their sequences' states:
    seconds_per_sequence = 2 x the state bytes a request holds on a GPU x pp / the memory-bound
    bandwidth. Everything else is the wrapped StepTime's."""

    def __init__(self, step: Any, seconds_per_sequence: float):
        self.step, self.seconds_per_sequence = step, seconds_per_sequence

    def __getattr__(self, name: str) -> Any:
        if name == "step":  # (unpickling: before __init__'s attributes exist)
            raise AttributeError(name)
        return getattr(self.step, name)

    def with_graphs(self, graphs: Any) -> "StateTraffic":
        return StateTraffic(self.step.with_graphs(graphs), self.seconds_per_sequence)

    def seconds(self, query: Any, context: Any, emitting: int | None = None) -> float:
        return self.step.seconds(query, context, emitting) + len(query) * self.seconds_per_sequence

    def decode_run(self, keys: Any, steps: int) -> Any:
        return self.step.decode_run(keys, steps) + len(keys) * self.seconds_per_sequence


def with_state_traffic(step: Any, state: int, hardware: Any, efficiency: Any, pp: int) -> Any:
    """The step model with each sequence's state traffic (none without states)."""
    from ..hardware import Efficiency

    if not state or isinstance(step, StateTraffic):
        return step
    memory = (efficiency or Efficiency(**hardware.efficiency)).memory
    return StateTraffic(step, 2 * state * pp / (hardware.bandwidth_bytes_per_s * memory))
