"""How an engine pages the KV cache of a model whose layers do not all attend to every key:
sliding-window layers (Mistral, Gemma 2/3, gpt-oss, Cohere 2) and chunked-attention layers
(Llama 4). A Paging says which block tables a sequence holds (one per group of layers), how many
layers one pool block holds, and how many pool blocks a sequence holds at each point.

vLLM v1 (the hybrid KV cache manager; read at vllm-project/vllm commits 129ab7c6 and 001cabc1):
- kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size: with two kinds of layers, a group
  holds group_size layers (the smaller count, or the larger one when it is under 1.5 times the
  smaller), so a kind of n layers makes ceil(n / group_size) groups; get_kv_cache_config_from_groups
  shares one pool of num_blocks = memory // (page_size * group_size) blocks among all groups (a
  block: block_size tokens of group_size layers). Layers of one kind only: one group of all.
- single_type_kv_cache_manager.py: each group keeps a block table of ceil(t / block_size)
  entries for t allocated tokens; SlidingWindowManager and ChunkedLocalAttentionManager replace
  the blocks before the window by the null block and free them (remove_skipped_blocks, with
  get_num_skipped_tokens: computed - window + 1 for a window, computed // chunk * chunk for a
  chunk). kv_cache_manager.py allocate_slots frees them for the computed tokens before it
  counts the new blocks, so a sequence computing up to `upto` tokens from `computed` holds
  ceil(upto / bs) - floor(skipped(computed) / bs) blocks per windowed group: all of a prompt's
  blocks while the prompt's chunk runs, the window's after.

transformers 5.24 (generation/continuous_batching/cache.py, group_layers_by_attn_type and
PagedAttentionCache; cache_allocators/sliding_attention.py): one allocator per attention type
(full_attention, sliding_attention; any other type is a ValueError, so Llama 4's chunked layers
are refused), all layers sliding when the config has a sliding_window and no layer_types. The
sliding allocator's blocks are a ring buffer of ceil(min(t, window) / page_size) blocks, kept
until the request ends. Allocators take sectors of lcm(their block bytes, 128) bytes from one
pool; the simulator models the case where every allocator's block is one sector (the same number
of layers of each type, or one type), where a sector is a block.

Prefix caching on a model paged this way is not modelled (kv_paging's pools share no prefix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError

FULL, SLIDING, CHUNKED = "full", "sliding", "chunked"
PAGED_SCHEDULERS = {"vllm": "vllm", "hf-fifo": "transformers", "hf-prefill-first": "transformers"}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Paging:
    """engine: "vllm" or "transformers"; tables: one (kind, span) per block table a sequence
    holds (span: the window or chunk in tokens; None for full); layers_per_block: the layers one
    pool block holds a page of; layer_counts: (full layers, windowed layers)."""

    engine: str
    block_size: int
    tables: tuple[tuple[str, int | None], ...]
    layers_per_block: int
    layer_counts: tuple[int, int]

    def _skipped_tokens(self, kind: str, span: int | None, computed: int) -> int:
        """vLLM's get_num_skipped_tokens: the tokens before the window (or the current chunk) that
        a table holding `computed` tokens no longer keeps; none for a full table or transformers."""
        if self.engine != "vllm" or kind == FULL:
            return 0
        return max(0, computed - span + 1) if kind == SLIDING else computed // span * span

    def _skipped_blocks(self, kind: str, span: int | None, computed: int) -> int:
        return self._skipped_tokens(kind, span, computed) // self.block_size

    def _next_skip(self, kind: str, span: int, computed: int) -> int:
        """The computed tokens at which a vLLM windowed table next frees a block, _skipped_tokens
        inverted: a sliding window skips one token per token, so the next whole block skipped is
        reached span - 1 tokens after its end; a chunk skips a whole span at the next boundary."""
        skipped = self._skipped_tokens(kind, span, computed)
        if kind == SLIDING:
            return (skipped // self.block_size + 1) * self.block_size + span - 1
        return skipped + span

    def by_table(self, computed: int, upto: int) -> list[int]:
        """Blocks held in each table by a sequence that computed `computed` tokens and has
        blocks allocated for `upto` tokens."""
        held = []
        for kind, span in self.tables:
            if self.engine == "transformers" and kind == SLIDING:
                held.append(_cdiv(min(upto, span), self.block_size))
                continue
            count = _cdiv(upto, self.block_size)
            held.append(count - min(count, self._skipped_blocks(kind, span, computed)))
        return held

    def held(self, computed: int, upto: int) -> int:
        """Pool blocks such a sequence holds, over all its tables."""
        return sum(self.by_table(computed, upto))

    def room(self, computed: int, allocated: int, blocks: int) -> int:
        """Decode steps (one token each, from `computed`) that change none of the sequence's
        blocks: no new block and no block leaving a window. 0 when its blocks are not yet what an
        allocation at `computed` leaves (the engine must call allocate first)."""
        if self.held(computed, allocated) != blocks:
            return 0
        grows = any(kind != SLIDING or self.engine == "vllm" or allocated < span for kind, span in self.tables)
        steps = _cdiv(allocated, self.block_size) * self.block_size - computed if grows else 1 << 30
        for kind, span in self.tables:
            if self.engine == "vllm" and kind != FULL:
                steps = min(steps, self._next_skip(kind, span, computed) - computed)
        return steps

    @property
    def read_limit(self) -> int | None:
        """transformers' read_cache_limit: the window, when every layer slides; else None."""
        if self.engine == "transformers" and all(kind == SLIDING for kind, _ in self.tables):
            return self.tables[0][1]
        return None

    def block_bytes(self, cfg: Any, per_token: int, window_per_token: int, shards: int) -> int:
        """Bytes per GPU of one pool block, from a tensor-parallel GPU's bytes per token of all layers
        and of the windowed ones (kvcache.rank_kv_per_token; each layer's share must be equal: a
        uniform page size, as both engines need), over the `shards` pipeline stages."""
        full_layers, window_layers = self.layer_counts
        parts = [(share, layers) for share, layers in ((per_token - window_per_token, full_layers),
                                                        (window_per_token, window_layers)) if layers]
        if any(share * parts[0][1] != parts[0][0] * layers for share, layers in parts) or parts[0][0] % parts[0][1]:
            raise ConfigError(f"{cfg.name}: its full and windowed layers keep {[s for s, _ in parts]} KV bytes per "
                              f"token over {[n for _, n in parts]} layers, not the same per layer; paging them in "
                              "one pool (one page size, as both engines need) is not modelled.")
        per_layer = parts[0][0] // parts[0][1]
        return _cdiv(self.layers_per_block * per_layer * self.block_size, shards)

    def describe(self) -> str:
        kinds = {}
        for kind, span in self.tables:
            kinds[(kind, span)] = kinds.get((kind, span), 0) + 1
        listed = ", ".join(f"{count} {kind}{f' {span}' if span else ''}" for (kind, span), count in kinds.items())
        return f"{self.engine} layer groups: {listed}; a block holds {self.layers_per_block} layers"


def layer_kinds(cfg: Any) -> tuple[int, str | None, int | None, int]:
    """(full layers, windowed kind, its span, windowed layers) of the decoder."""
    windowed = cfg.n_window_layers
    if not windowed:
        return cfg.n_decoder_layers, None, None, 0
    kind = CHUNKED if getattr(cfg, "chunked_window", False) else SLIDING
    return cfg.n_decoder_layers - windowed, kind, cfg.sliding_window, windowed


def kv_paging(cfg: Any, scheduler: str, block_size: int) -> Paging | None:
    """The paging of `scheduler`'s engine for cfg, or None where every layer is paged as full
    attention (no windowed layers, or a scheduler whose engine here pages windows as full:
    sarathi, orca, static, vllm-v0)."""
    full, kind, span, windowed = layer_kinds(cfg)
    engine = PAGED_SCHEDULERS.get(scheduler)
    if kind is None or engine is None:
        return None
    counts = (full, windowed)
    if engine == "transformers":
        if kind == CHUNKED:
            raise ConfigError(f"{cfg.name}: transformers' continuous batching has no allocator for chunked "
                              "attention layers (cache.py ATTN_TYPE_TO_ALLOCATOR: full_attention and "
                              f"sliding_attention only; a ValueError there); use --scheduler vllm.")
        if full and full != windowed:
            raise ConfigError(f"{cfg.name}: transformers' paged cache gives its {windowed} sliding and {full} full "
                              "layers sectors of several blocks each; the simulator models its sectors only when "
                              "both kinds have the same number of layers (a sector is then one block).")
        tables = ((SLIDING, span),) + (((FULL, None),) if full else ())
        return Paging(engine, block_size, tables, windowed, counts)
    if not full:
        return Paging(engine, block_size, ((kind, span),), windowed, counts)
    group = min(full, windowed)
    if max(full, windowed) < 1.5 * group:
        group = max(full, windowed)
    tables = ((FULL, None),) * _cdiv(full, group) + ((kind, span),) * _cdiv(windowed, group)
    return Paging(engine, block_size, tables, group, counts)
