"""The paged KV cache: a pool of blocks of `block_size` tokens, handed to sequences as their
context grows (vLLM's PagedAttention, Kwon et al. 2023; transformers' PagedAttentionCache), and
how many blocks a GPU holds, from the cost tree's bytes per cached token.

A sequence holding t tokens owns ceil(t / block_size) blocks. Blocks are counted, not named:
which physical block a sequence gets never changes a schedule.

Models with sliding-window or chunked layers are paged per layer group where the engine does so
(kv_paging.py: vLLM v1's hybrid KV cache manager, transformers' sliding-window allocator): a
BlockPool with a Paging then counts a sequence's blocks over its groups' block tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import sympy as sp

from .. import symbols as S
from ..config import ConfigError
from ..hardware import serving_memory
from .state_slots import check_state_engine, state_blocks, state_bytes

PROFILE_RUN_FILE = Path(__file__).resolve().parent / "profile_run.json"


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


def check_block_size(block_size: int) -> None:
    """A block holds at least one token (the pool's rule; build_replica asks it before sizing the cache)."""
    if block_size < 1:
        raise ConfigError(f"--block-size must be a positive number of tokens, got {block_size}.")


class BlockPool:
    """num_blocks blocks of block_size tokens; a sequence's blocks grow with its tokens."""

    def __init__(self, num_blocks: int, block_size: int, paging: Any = None):
        check_block_size(block_size)
        if num_blocks < 1:
            raise ConfigError(f"the KV cache holds no block of {block_size} tokens.")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.free = num_blocks  # free blocks, a cached prefix's evictable ones included (vLLM's count)
        self.paging = paging  # kv_paging.Paging, or None: every layer paged as full attention
        self.state_blocks = 0  # blocks a running request's recurrent states hold besides its KV (state_slots.py)
        # Cached prefixes no sequence holds: prefix id -> [blocks, their place in the free queue].
        # Their blocks count as free. vLLM v1's free queue (vllm/v1/core/block_pool.py,
        # FreeKVCacheBlockQueue): every freed block joins its tail, an allocation takes from its
        # head and drops the hash of a cached block it takes. So a freed prefix lives until the
        # allocations have used the free blocks ahead of it, whatever was freed after it. The
        # queue is counted, not listed: `head` blocks taken from it so far, `tail` places given;
        # a prefix freed at place p is evicted (whole: vLLM drops it block by block) once head > p.
        self.evictable: dict[str, list[int]] = {}
        self.evictable_blocks = 0
        self.head, self.tail = 0, num_blocks

    def needed(self, held_blocks: int, tokens: int) -> int:
        """New blocks a sequence holding `held_blocks` needs to hold `tokens` tokens (with a
        paging: from nothing computed, as a fresh sequence or transformers' allocators count). A
        sequence holding no block holds no state yet: its state blocks are added."""
        if self.paging is not None:
            return max(0, self.paging.held(0, tokens) - held_blocks)
        state = self.state_blocks if held_blocks == 0 and tokens > 0 else 0
        return max(0, blocks_for(tokens, self.block_size) - held_blocks) + state

    def take(self, count: int) -> None:
        if count > self.free:
            raise RuntimeError("KV blocks over-allocated (a scheduler bug).")
        self.free -= count
        self.head += count
        while self.evictable:  # cached prefixes whose first block the queue's head reached
            prefix = next(iter(self.evictable))
            blocks, place = self.evictable[prefix]
            if place >= self.head:
                break
            del self.evictable[prefix]
            self.evictable_blocks -= blocks

    def give_back(self, count: int) -> None:
        self.free += count
        self.tail += count

    def keep_cached(self, prefix: str, count: int) -> None:
        """A prefix's blocks its last holder freed: free, at the queue's tail, and still cached
        until the allocations reach them."""
        self.evictable[prefix] = [count, self.tail]
        self.evictable_blocks += count
        self.give_back(count)

    def revive(self, prefix: str, hit: int) -> bool:
        """A freed prefix held again, if its blocks were not taken since (False: evicted): its
        first `hit` blocks leave the free queue (vLLM's touch), the places behind them move up.
        The rest, beyond what this request's prompt can use, stay free but are no longer
        counted as cached (vLLM keeps their hashes: a longer prompt could still hit them)."""
        entry = self.evictable.pop(prefix, None)
        if entry is None:
            return False
        blocks, place = entry
        self.evictable_blocks -= blocks
        self.free -= hit
        self.tail -= hit
        for later in self.evictable.values():
            if later[1] > place:
                later[1] -= hit
        return True

    @property
    def used(self) -> int:
        return self.num_blocks - self.free


def sglang_pool_bytes(free_bytes: int, weight_bytes: int, mem_fraction_static: float) -> int:
    """SGLang's KV pool (model_runner.py `profile_max_num_token`, v0.3 and v0.4): rest_memory = the free memory
    after the weights - total_gpu_memory x (1 - mem_fraction_static), total_gpu_memory the free memory measured
    before the weights (after the CUDA context and NCCL: free_bytes, the device's memory less the hardware's
    reserve), both in GiB as get_available_gpu_memory returns them; no activation peak is held back. The pool is
    int(rest_memory x 2^30 // cell_size) tokens, cell_size a token's KV bytes on one GPU: the bytes returned here
    are rest_memory x 2^30, floored."""
    total = free_bytes / (1 << 30)
    available = (free_bytes - weight_bytes) / (1 << 30)
    return int((available - total * (1 - mem_fraction_static)) * (1 << 30))


@dataclass(frozen=True)
class CacheSizing:
    """Where a replica's KV blocks come from: the memory a serving engine fills (hardware.py
    serving_memory: the GPU memory times the utilisation, less the hardware's reserve), less the
    weights and the activation peak of the largest step, divided by a block's bytes."""

    memory_bytes: int
    utilization: float
    reserve_bytes: int
    weight_bytes: int
    activation_bytes: int
    kv_bytes_per_token: int
    block_size: int
    # With a Paging: the bytes per GPU of one pool block (block_size tokens of the paging's
    # layers_per_block layers); None: block_size tokens of every layer (kv_bytes_per_token).
    paged_block_bytes: int | None = None
    window_bytes_per_token: int = 0  # of kv_bytes_per_token, the windowed (sliding/chunked) layers'
    state_bytes: int = 0  # a running request's Mamba-2 / Gated DeltaNet states per GPU (state_slots.py)
    rule: str = "vllm"  # "sglang": SGLang's pool (sglang_pool_bytes), no activation peak

    @property
    def kv_budget_bytes(self) -> int:
        if self.rule == "sglang":
            return sglang_pool_bytes(self.memory_bytes - self.reserve_bytes, self.weight_bytes, self.utilization)
        return (serving_memory(self.memory_bytes, self.utilization, self.reserve_bytes)
                - self.weight_bytes - self.activation_bytes)

    @property
    def block_bytes(self) -> int:
        return self.kv_bytes_per_token * self.block_size if self.paged_block_bytes is None else self.paged_block_bytes

    @property
    def num_blocks(self) -> int:
        return max(0, self.kv_budget_bytes // self.block_bytes)

    @property
    def most_blocks(self) -> int:
        """The blocks the whole memory holds (utilisation 1) less the reserve, the weights and the
        activations: the most a given --num-blocks may ask for (vLLM's --num-gpu-blocks-override
        allocates the count it is told, and runs out of memory past this)."""
        return max(0, (serving_memory(self.memory_bytes, 1.0, self.reserve_bytes) - self.weight_bytes
                       - self.activation_bytes) // self.block_bytes)

    @property
    def state_blocks(self) -> int:
        """Pool blocks each running request's states hold (vLLM v1: a block per request per Mamba group)."""
        return state_blocks(self.state_bytes, self.block_bytes)

    def state_slots(self, blocks: int) -> int:
        """The most requests a pool of `blocks` blocks lets run at once: each holds its state blocks and a KV block."""
        return blocks // (self.state_blocks + 1)

    def to_dict(self, blocks: int | None = None) -> dict[str, Any]:
        """The sizing's figures; its state slots from `blocks` (the replica's pool: --num-blocks where
        given), or from the pool memory sizes."""
        paged = {} if self.paged_block_bytes is None else {
            "window_bytes_per_token": self.window_bytes_per_token, "paged_block_bytes": self.paged_block_bytes}
        states = {} if not self.state_bytes else {
            "state_bytes_per_request": self.state_bytes, "state_blocks_per_request": self.state_blocks,
            "state_slots": self.state_slots(self.num_blocks if blocks is None else blocks)}
        return {"memory_bytes": self.memory_bytes, "gpu_memory_utilization": self.utilization,
                "memory_reserve_bytes": self.reserve_bytes,
                "weight_bytes": self.weight_bytes, "activation_bytes": self.activation_bytes,
                "kv_bytes_per_token": self.kv_bytes_per_token, "block_size": self.block_size, **paged,
                "kv_budget_bytes": self.kv_budget_bytes, "num_blocks": self.num_blocks, **states,
                **({"rule": self.rule} if self.rule != "vllm" else {})}


def check_engine_cache(cfg: Any, engine: str | None = "vllm") -> None:
    """Raise ConfigError (one sentence) for a model whose cache the engine cannot hold
    (state_slots.py: Mamba-2 and Gated DeltaNet states under transformers' continuous batching,
    or with no attention layer; Mamba-1 states under any engine)."""
    for mixer, kind in (("mamba1", "Mamba-1"), ("shortconv", "short-convolution"),
                         ("lightning", "lightning-attention"), ("kda", "Kimi Delta Attention"),
                         ("rglru", "RG-LRU"), ("rwkv_time", "RWKV"), ("mlstm", "mLSTM")):
        if cfg.n_mixer_layers(mixer):
            raise ConfigError(f"model {cfg.name!r} keeps {kind} states per sequence, whatever its length; "
                              "an engine's cache for them (vLLM's per-request state slots) is not modelled.")
    if cfg.n_mixer_layers("shared"):
        raise ConfigError(f"model {cfg.name!r} runs Zamba's shared attention-and-MLP blocks; an engine's cache and "
                          "batching of them (vLLM's Zamba2) are not modelled.")
    check_state_engine(cfg, engine)


def cache_sizing(cfg: Any, profile: Any, dtype_bytes: int, memory_bytes: int, utilization: float,
                 reserve_bytes: int, block_size: int, max_batched_tokens: int, tp: int = 1, pp: int = 1,
                 paging: Any = None, engine: str | None = "vllm", layer_states: dict | None = None,
                 profile_run: str | None = None, max_num_seqs: int | None = None, rule: str = "vllm") -> CacheSizing:
    """A replica's KV blocks from the tree: the memory the engine fills (memory_bytes x
    utilization less reserve_bytes, hardware.py serving_memory, as simulate's and plan's fits) less
    the weights and the activation peak. Per GPU: its weights as the layout model splits them
    (rank_weight_bytes: the tree's weight bytes, quantized where the profile says so, each leaf's
    at its tensor-parallel share, replicated norms, routers and key/value heads whole) and its share of the KV bytes
    per token (the decode tree's kv_cache_bytes per sequence per key: GQA's KV heads, MLA's
    latent, the KV dtype; the tree's min(c, window) terms are its windowed layers'). Without a
    paging every layer is paged like a full one; with one (kv_paging.py) a pool block holds
    block_size tokens of paging.layers_per_block layers, each layer's bytes per token the tree's
    (equal on every layer, or the paging is refused). The activation peak: the prefill tree's
    inference bytes for one sequence of max_batched_tokens tokens, less its weights and its KV
    cache (ids, logits, the transient buffers), over tp GPUs. With profile_run (an engine of
    profile_run.json: vLLM's schedulers) the engine's own profile run instead: max_num_seqs dummy
    sequences sharing the tokens, so the logits of min(max_num_seqs, tokens) sampled rows (the
    tree's, with the sampler's working set per logit), the forward's final hidden states held
    beside them, the ids and buffers; whole on every GPU (the gathered logits; vLLM takes the
    fewest blocks over its workers). A hybrid model's Mamba-2 / Gated DeltaNet states
    per request (state_slots.py) take state_blocks of the pool while the request runs: in the
    decode tree's (transformers') layout, or with layer_states (state_slots.vllm_layer_states) vLLM's.

    Pipeline parallelism (pp stages): each GPU holds 1/pp of the weights and of the KV bytes per
    token (layers split evenly; the embedding and the head counted as spread too, a stated
    approximation), and the whole activation peak / tp (the last stage's logits; conservative; a
    replicated key/value head's activations are not added)."""
    from ..tree import model_values

    if not 0 < utilization <= 1:
        raise ConfigError(f"--gpu-memory-utilization must be in (0, 1], got {utilization}.")
    check_engine_cache(cfg, engine)
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    tokens = sp.Integer(max_batched_tokens)
    subs = {**fixed, S.b: sp.Integer(1), S.n: tokens, S.T: sp.Integer(0), S.s: tokens, S.c: tokens,
            S.e: sp.Integer(dtype_bytes)}
    decode = _tree(cfg, profile, "decode")
    kv_symbolic = decode.total("kv_cache_bytes")
    # a GPU's share: the decode tree's KV bytes with the heads split as layout/split.py splits them
    values = frozenset(subs.items())  # (the sizings of one search share these: _sized keeps each figure once)
    per_token, window_per_token = _sized(rank_kv_per_token, kv_symbolic, values, tp, _as_full)
    prefill = _tree(cfg, profile, "prefill")
    if rule == "sglang":  # SGLang's pool (sglang_pool_bytes) holds no activation peak back
        activations = 0
    elif profile_run is None:
        activations = -(-_sized(held_besides_weights, cfg, prefill, values) // tp)
    else:
        activations = _sized(profile_run_bytes, cfg, profile, values, profile_run, max_num_seqs or max_batched_tokens)
    block_bytes = None if paging is None else paging.block_bytes(cfg, per_token, window_per_token, pp)
    return CacheSizing(memory_bytes, utilization, reserve_bytes, -(-_sized(rank_weight_bytes, prefill, values, tp) // pp),
                       activations, -(-per_token // pp), block_size, block_bytes,
                       -(-window_per_token // pp), state_bytes(decode, subs, tp, pp, layer_states), rule)


@lru_cache(maxsize=1024)  # (a long process sizing many models: keep the memo small)
def _sized(figure: Any, *args: Any) -> Any:
    """figure(*args), the symbol values (a frozenset of subs' items) given back as a dict, kept by
    its arguments (a tree by identity: _tree builds each once): a pure function of them, so `plan
    --serve --rate`'s 72 sizings (one per configuration) compute each figure once per distinct
    tree, values and tensor-parallel size."""
    return figure(*(dict(arg) if isinstance(arg, frozenset) else arg for arg in args))


def _as_full(expr: Any) -> Any:
    """Every layer's KV as a full layer's: a windowed layer's min(c, window) read as c."""
    return sp.expand(expr.replace(sp.Min, lambda *args: S.c if S.c in args else sp.Min(*args)))


@lru_cache(maxsize=32)
def _tree(cfg: Any, profile: Any, phase: str) -> Any:
    """The cost tree of (cfg, profile, phase), built once a process: `plan --serve --rate` sizes
    each of its configurations (72 in docs/commands.md's example) with the same few trees, whatever
    the tensor-parallel size and budgets (each sizing substitutes its own values)."""
    from ..tree import CostModel

    return CostModel(cfg, profile, phase=phase)


def held_besides_weights(cfg: Any, prefill: Any, subs: dict) -> int:
    """The prefill tree's inference bytes less its weights and its KV cache: the ids, the logits it
    returns and the buffers (memory.inference_phases). The forward's largest no-grad transient
    (memory.forward_transient, which inference_phases takes where it outweighs the logits) is left
    out, as before session 26: an engine's profile run sized with it was not settled in time
    (validate/FINDINGS.md, wt26_infpeak2)."""
    from ..memory import forward_transient, inference_phases

    total = int(inference_phases(cfg, prefill.profile)["prefill"].xreplace(subs))
    cache = int(prefill.total("kv_cache_bytes").xreplace(subs))
    logits = int(prefill.total("result_bytes").xreplace(subs))
    excess = max(0, int(forward_transient(prefill).xreplace(subs)) - logits)  # what the transient added
    return max(0, total - int(prefill.total("weight_bytes").xreplace(subs)) - cache - excess)


@lru_cache(maxsize=None)
def profile_run_facts() -> dict[str, Any]:
    """profile_run.json's engines: what each engine's memory profile run holds besides its weights."""
    return json.loads(PROFILE_RUN_FILE.read_text(encoding="utf-8"))["engines"]


def profile_run_bytes(cfg: Any, profile: Any, subs: dict, engine: str, max_num_seqs: int) -> int:
    """The activation peak of an engine's profile run (profile_run.json): the prefill tree of the
    token budget with the logits of its sampled rows only (one a dummy sequence), their sampler's
    working set, and the final hidden states the forward leaves held."""
    import dataclasses

    tokens = int(subs[S.n])
    rows = min(max_num_seqs, tokens)
    sampled = _tree(cfg, dataclasses.replace(profile, logits_to_keep=rows), "prefill")
    logits = rows * int(subs[S.V]) * profile_run_facts()[engine]["sampler_bytes_per_logit"]
    hidden = tokens * int(subs[S.d]) * int(subs[S.e])
    return held_besides_weights(cfg, sampled, subs) + logits + hidden


def rank_weight_bytes(tree: Any, subs: dict, tp: int) -> int:
    """The weight bytes one of tp tensor-parallel GPUs holds: each leaf's weights as the layout
    model splits them (layout/split.py substitution, the one rule `simulate --tp` and `plan
    --serve` read: heads, key/value heads replicated where tp exceeds them, FFN widths and
    vocabulary rows divided; norms, routers and latent attention's down-projections whole on every
    GPU, as vLLM builds them: RMSNorm and ReplicatedLinear)."""
    from ..layout import Layout
    from ..layout.frameworks import layout_vocabulary
    from ..layout.split import local, substitution

    if tp == 1:
        return int(tree.total("weight_bytes").xreplace(subs))
    vocabulary = layout_vocabulary(Layout(tp=tp))  # an inference layout's (plan_serving's, simulate's)
    rank = sp.Add(*(local(leaf.total("weight_bytes"), substitution(leaf.block, sp_on=False, vocabulary=vocabulary,
                                                                  loss_parallel=False, encoder=False))
                    for leaf in tree.leaves))
    return int(sp.ceiling(rank.xreplace({**subs, S.tp: sp.Integer(tp)})))


def rank_kv_per_token(kv: Any, subs: dict, tp: int, as_full: Any) -> tuple[int, int]:
    """One of tp GPUs' KV bytes per token of context, of all layers and of the windowed ones: the
    decode tree's KV bytes with the attention's heads split as layout/split.py splits them (h / tp;
    h_kv / tp, or one head replicated where tp is a multiple of h_kv: split.kv_heads_per_rank; the
    full layers' own h_kvg likewise, Gemma 4's, so that the windowed and the full layers may split
    differently: at tp 4, 4 sliding heads one a GPU and 2 full-layer heads each on two). GQA's cache
    is per KV head; latent attention's (DeepSeek) is one latent per token whatever the heads: every
    rank keeps all of it (vLLM's ModelConfig.get_num_kv_heads returns 1 under MLA, 'When using MLA
    during decode it becomes MQA'; the layout model's per-rank KV, what `simulate --tp` prints, is
    the same split tree)."""
    from ..layout.split import heads_split

    rank = kv.xreplace(heads_split(tp)) if tp > 1 else kv
    rank = sp.expand(rank.xreplace({k: v for k, v in subs.items() if k != S.c}))
    window_terms = sp.Add(*(term for term in sp.Add.make_args(rank) if term.has(sp.Min)))
    return int(as_full(rank).coeff(S.c, 1)), int(as_full(window_terms).coeff(S.c, 1))
