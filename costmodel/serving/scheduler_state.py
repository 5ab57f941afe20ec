"""The state every scheduler shares: a Sequence (one request in the replica) and the Scheduler
base class's moves (admit, allocate, free, preempt, share a cached prefix). The policies are in
schedulers.py (and vllm_v0.py).

A sequence knows prompt + generated tokens and has `computed` of them in the KV cache; a step
that runs q of its tokens reaches computed + q, and emits a token when that covers every known
token (the last prefill chunk emits the first token; each decode step, of one token, the next).
Preemption by recompute frees a sequence's blocks and sends it back to the queue with computed = 0;
it later prefills its prompt and the tokens it has generated.

Prefix caching (vLLM's automatic prefix caching, vllm/v1/core/kv_cache_manager.py
get_computed_blocks; on by default in vLLM v1): the full blocks of a shared prefix (a request's
prefix id and prefix_tokens) are registered once a sequence has computed them; a sequence of that
id admitted later holds them too (a reference, no new blocks) and starts with them computed, so
their prefill is skipped. At most (prompt - 1) // block_size blocks hit: the last prompt token is
always run, to produce the first token (vLLM's max_cache_hit_length = num_tokens - 1). When its
last holder frees them a prefix's blocks are free again but stay cached, as vLLM keeps them
(evictable, at the free queue's tail), until the allocations have taken the free blocks ahead of
them (BlockPool: vLLM v1's free queue, counted; a prefix evicted whole, where vLLM evicts block by
block). A freed prefix held again keeps the blocks its new holder's prompt hits, no more.

With a Paging (kv_paging.py: a model with sliding-window or chunked layers under vllm or hf-*),
a sequence's blocks are counted over its layer groups' block tables, `allocated` is the tokens
its tables cover, and an allocation first frees the blocks that left the window (vLLM's
remove_skipped_blocks); prefix caching shares nothing there (not modelled).
"""

from __future__ import annotations

from collections import deque

from ..config import ConfigError
from .kvcache import BlockPool
from .workload import Request

WAITING, PREFILLING, DECODING, FINISHED = "waiting", "prefilling", "decoding", "finished"


class Sequence:
    """One request's state in the replica (a slotted class: the event loop touches it often)."""

    __slots__ = ("request", "output", "generated", "known", "computed", "blocks", "status", "preemptions",
                 "first_scheduled_s", "token_times", "shared", "cached_tokens", "allocated")

    def __init__(self, request: Request):
        self.request = request
        self.output = request.output_tokens
        self.generated = 0
        self.known = request.prompt_tokens  # prompt + generated tokens
        self.computed = 0  # tokens whose keys and values are in the cache
        self.blocks = 0  # blocks it holds, the shared prefix's included
        self.allocated = 0  # tokens its block tables cover (used with a Paging)
        self.shared = 0  # of them, a cached prefix's (referenced, not its own)
        self.cached_tokens = 0  # prompt tokens its first admission found cached
        self.status = WAITING
        self.preemptions = 0
        self.first_scheduled_s: float | None = None
        self.token_times: list[float] = []
        if request.prefilled:  # the prompt's keys and values and the first token came with it
            self.generated, self.known, self.computed = 1, request.prompt_tokens + 1, request.prompt_tokens

    @property
    def remaining(self) -> int:
        """Tokens to run before the next token comes out (1 while decoding)."""
        return self.known - self.computed

    @property
    def done(self) -> bool:
        return self.generated >= self.output


class SchedulingError(ConfigError):
    """The budgets cannot run a request at all (an input error, reported as one line)."""


def check_caps(max_num_seqs: int, max_batched_tokens: int) -> None:
    """A scheduler runs at least one sequence and one token a step (its rule; build_replica asks it once the
    engine's defaults are filled in, before sizing the cache)."""
    if max_num_seqs < 1:
        raise ConfigError(f"--max-num-seqs must be at least 1, got {max_num_seqs}.")
    if max_batched_tokens < 1:
        raise ConfigError(f"--max-batched-tokens must be at least 1, got {max_batched_tokens}.")


class Scheduler:
    """The shared state and the moves every policy makes: admit, allocate, free, preempt."""

    name = "base"
    source = ""
    # Why this engine cannot run `--disaggregate` (None: a prefill pool and a decode pool of it are
    # modelled, as DistServe and Splitwise run theirs and vLLM's and TensorRT-LLM's disaggregated
    # serving do).
    no_disaggregation: str | None = None
    # With no request waiting and every running one decoding, the next steps run them all, one
    # token each, until one finishes, needs a block or a request arrives: the event loop may then
    # advance several steps at once (engine.py). True for the policies whose steps are that.
    steady_decode = False
    # Steps the batch schedule() returned runs before the next decision (multi-step scheduling;
    # engine.py runs them as one window). 1 for every policy but vllm-v0 with num_scheduler_steps.
    window = 1

    def __init__(self, pool: BlockPool, max_num_seqs: int, max_batched_tokens: int):
        check_caps(max_num_seqs, max_batched_tokens)
        self.pool = pool
        self.max_num_seqs = max_num_seqs
        self.max_batched_tokens = max_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preempted_total = 0
        self.prefix_caching = False
        self.prefixes: dict[str, list[int]] = {}  # prefix id -> [full blocks cached, holders]
        self.unregistered: list[Sequence] = []  # admitted with a prefix of full blocks not cached
        self.chunk_peaks: dict[int, int] = {}  # cached tokens -> most blocks a chunk holds (paged by groups)

    def add(self, sequence: Sequence) -> None:
        self.waiting.append(sequence)

    def idle(self) -> bool:
        return not self.waiting and not self.running

    def allocate(self, sequence: Sequence, tokens: int) -> bool:
        """Give the sequence blocks for `tokens` cached tokens, if the pool has them."""
        if self.pool.paging is not None:
            return self._allocate_paged(sequence, tokens)
        needed = self.pool.needed(sequence.blocks, tokens)
        if needed > self.pool.free:
            return False
        self.pool.take(needed)
        # a sequence's state blocks (kvcache.BlockPool.state_blocks) are held while it holds any
        # block, and not counted in sequence.blocks (its keys' and values' blocks)
        sequence.blocks += needed - (self.pool.state_blocks if sequence.blocks == 0 and needed else 0)
        return True

    def _allocate_paged(self, sequence: Sequence, tokens: int) -> bool:
        """vLLM's allocate_slots per group: free the blocks before the window for the computed
        tokens (even when the allocation then fails), then take the new ones if all are free."""
        paging = self.pool.paging
        keep = paging.held(sequence.computed, sequence.allocated)
        if keep < sequence.blocks:
            self.pool.give_back(sequence.blocks - keep)
            sequence.blocks = keep
        upto = max(tokens, sequence.allocated)
        target = paging.held(sequence.computed, upto)
        if target - sequence.blocks > self.pool.free:
            return False
        self.pool.take(target - sequence.blocks)
        sequence.blocks, sequence.allocated = target, upto
        return True

    def release(self, sequence: Sequence) -> None:
        self.pool.give_back(sequence.blocks - sequence.shared + (self.pool.state_blocks if sequence.blocks else 0))
        if sequence.shared:
            entry = self.prefixes[sequence.request.prefix_id]
            entry[1] -= 1
            if entry[1] == 0:  # its last holder: the blocks are free, and cached until taken
                self.pool.keep_cached(sequence.request.prefix_id, entry[0])
        sequence.blocks = sequence.shared = sequence.allocated = 0

    def register_prefixes(self) -> None:
        """Admitted sequences that have computed their prefix's full blocks cache them, if no
        other sequence of that id has (its own blocks become the shared ones)."""
        size, left = self.pool.block_size, []
        if self.pool.paging is not None:  # no prefix shared over layer groups (not modelled)
            self.unregistered = []
            return
        for sequence in self.unregistered:
            request = sequence.request
            full = request.prefix_tokens // size
            if sequence.status in (WAITING, FINISHED) or self.cached(request.prefix_id) is not None:
                continue  # preempted (re-listed when admitted again), finished, or cached by another
            if sequence.computed >= full * size:
                self.prefixes[request.prefix_id] = [full, 1]
                sequence.shared = full
            else:
                left.append(sequence)
        self.unregistered = left

    def reuse_prefix(self, sequence: Sequence) -> None:
        """A sequence about to be admitted with nothing computed holds its prefix's cached blocks."""
        request = sequence.request
        entry = self.cached(request.prefix_id) if request.prefix_id is not None else None
        if entry is None or sequence.computed or self.pool.paging is not None:
            return
        hit = min(entry[0], request.prefix_tokens // self.pool.block_size,
                  (sequence.known - 1) // self.pool.block_size)
        if hit:  # (a sequence that finds its prefix cached never registers it)
            if entry[1] == 0:  # freed and still cached: held again, as many blocks as hit
                self.pool.revive(request.prefix_id, hit)
                entry[0] = hit
            entry[1] += 1
            sequence.blocks = sequence.shared = hit
            sequence.computed = hit * self.pool.block_size
            if not sequence.preemptions:
                sequence.cached_tokens = sequence.computed

    def cached(self, prefix: str) -> list[int] | None:
        """A prefix's [full blocks cached, holders], while its blocks are held or still cached
        (freed and not yet taken: BlockPool.evictable); None once evicted."""
        entry = self.prefixes.get(prefix)
        if entry is not None and entry[1] == 0 and prefix not in self.pool.evictable:
            del self.prefixes[prefix]
            return None
        return entry

    def unuse_prefix(self, sequence: Sequence) -> None:
        """Undo reuse_prefix for a sequence that was not admitted after all."""
        if sequence.shared and sequence.blocks == sequence.shared:
            self.release(sequence)
            sequence.computed = 0

    def reset(self, sequence: Sequence) -> None:
        """Preemption by recompute: its blocks freed, its cache to be recomputed."""
        self.release(sequence)
        sequence.computed = 0
        sequence.status = WAITING
        sequence.preemptions += 1
        self.preempted_total += 1

    def _allocate_or_preempt(self, sequence: Sequence, upto: int,
                             batch: list[tuple[Sequence, int]]) -> bool:
        """Give the running sequence blocks for `upto` cached tokens, preempting the newest running
        sequence by recompute (to the queue's front, and out of this step's batch) until they fit;
        False when the sequence itself was preempted."""
        while not self.allocate(sequence, upto):
            victim = self.running.pop()
            self.reset(victim)
            self.waiting.appendleft(victim)
            batch[:] = [(s, q) for s, q in batch if s is not victim]
            if victim is sequence:
                return False
        return True

    def finished(self, sequence: Sequence) -> None:
        """Called by the engine after the step in which the sequence emitted its last token."""
        sequence.status = FINISHED
        self.release(sequence)
        self.running.remove(sequence)

    def check_request(self, request: Request, max_model_len: int) -> None:
        """Reject a request no budget could ever run (one line, the option named)."""
        total = request.prompt_tokens + request.output_tokens
        if total > max_model_len:
            raise ConfigError(f"request {request.id}: prompt {request.prompt_tokens} + output "
                              f"{request.output_tokens} tokens pass the model's context of {max_model_len}.")
        paging = self.pool.paging
        needed = self._most_held_by_a_chunk(total - 1) if paging is not None and paging.engine == "vllm" \
            else self.pool.needed(0, total - 1)
        if needed > self.pool.num_blocks:
            error = SchedulingError(
                f"request {request.id} needs {needed} KV blocks of "
                f"{self.pool.block_size} tokens; the cache holds {self.pool.num_blocks} (raise "
                f"--gpu-memory-utilization, or --num-blocks where it is given).")
            error.blocks_needed = needed  # serving/api.serve: whether any utilization holds them
            error.request_id, error.blocks_held = request.id, self.pool.num_blocks
            raise error

    def _most_held_by_a_chunk(self, cached: int) -> int:
        """The most pool blocks a lone sequence holds while it computes `cached` tokens in chunks of
        the token budget (its prefill, or its recompute after a preemption): chunk [c, c + B) holds
        the blocks the window leaves for c computed tokens and all blocks up to its end, so a middle
        chunk can hold one block more per windowed table than the last. A decode step [k, k + 1)
        holds no more than the chunk it falls in."""
        peaks = self.chunk_peaks
        if cached not in peaks:
            step = self.max_batched_tokens
            peaks[cached] = max(self.pool.paging.held(start, min(start + step, cached))
                                for start in range(0, max(cached, 1), step))
        return peaks[cached]

    def schedule(self) -> list[tuple[Sequence, int]]:
        raise NotImplementedError
