"""Schedulers: which sequences run in the next step and how many tokens each. One class per
engine's policy, each stating its source; they share the sequence state and the block pool.

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
always run, to produce the first token (vLLM's max_cache_hit_length = num_tokens - 1). A prefix's
blocks go back to the pool when its last holder frees them (vLLM keeps them, evictable, until
the blocks are needed: not modelled, so a prefix whose requests do not overlap in time is
recomputed).
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
                 "first_scheduled_s", "token_times", "shared", "cached_tokens")

    def __init__(self, request: Request):
        self.request = request
        self.output = request.output_tokens
        self.generated = 0
        self.known = request.prompt_tokens  # prompt + generated tokens
        self.computed = 0  # tokens whose keys and values are in the cache
        self.blocks = 0  # blocks it holds, the shared prefix's included
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


class Scheduler:
    """The shared state and the moves every policy makes: admit, allocate, free, preempt."""

    name = "base"
    source = ""
    # With no request waiting and every running one decoding, the next steps run them all, one
    # token each, until one finishes, needs a block or a request arrives: the event loop may then
    # advance several steps at once (engine.py). True for the policies whose steps are that.
    steady_decode = False
    # Steps the batch schedule() returned runs before the next decision (multi-step scheduling;
    # engine.py runs them as one window). 1 for every policy but vllm-v0 with num_scheduler_steps.
    window = 1

    def __init__(self, pool: BlockPool, max_num_seqs: int, max_batched_tokens: int):
        if max_num_seqs < 1:
            raise ConfigError(f"--max-num-seqs must be at least 1, got {max_num_seqs}.")
        if max_batched_tokens < 1:
            raise ConfigError(f"--max-batched-tokens must be at least 1, got {max_batched_tokens}.")
        self.pool = pool
        self.max_num_seqs = max_num_seqs
        self.max_batched_tokens = max_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preempted_total = 0
        self.prefix_caching = False
        self.prefixes: dict[str, list[int]] = {}  # prefix id -> [full blocks cached, holders]
        self.unregistered: list[Sequence] = []  # admitted with a prefix of full blocks not cached

    def add(self, sequence: Sequence) -> None:
        self.waiting.append(sequence)

    def idle(self) -> bool:
        return not self.waiting and not self.running

    def allocate(self, sequence: Sequence, tokens: int) -> bool:
        """Give the sequence blocks for `tokens` cached tokens, if the pool has them."""
        needed = self.pool.needed(sequence.blocks, tokens)
        if needed > self.pool.free:
            return False
        self.pool.take(needed)
        sequence.blocks += needed
        return True

    def release(self, sequence: Sequence) -> None:
        self.pool.give_back(sequence.blocks - sequence.shared)
        if sequence.shared:
            entry = self.prefixes[sequence.request.prefix_id]
            entry[1] -= 1
            if entry[1] == 0:  # its last holder: the prefix's blocks go back
                self.pool.give_back(entry[0])
                del self.prefixes[sequence.request.prefix_id]
        sequence.blocks = sequence.shared = 0

    def register_prefixes(self) -> None:
        """Admitted sequences that have computed their prefix's full blocks cache them, if no
        other sequence of that id has (its own blocks become the shared ones)."""
        size, left = self.pool.block_size, []
        for sequence in self.unregistered:
            request = sequence.request
            full = request.prefix_tokens // size
            if sequence.status in (WAITING, FINISHED) or request.prefix_id in self.prefixes:
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
        entry = self.prefixes.get(request.prefix_id) if request.prefix_id is not None else None
        if entry is None or sequence.computed:
            return
        hit = min(entry[0], request.prefix_tokens // self.pool.block_size,
                  (sequence.known - 1) // self.pool.block_size)
        if hit:  # (a sequence that finds its prefix cached never registers it)
            entry[1] += 1
            sequence.blocks = sequence.shared = hit
            sequence.computed = hit * self.pool.block_size
            if not sequence.preemptions:
                sequence.cached_tokens = sequence.computed

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
        if self.pool.needed(0, total - 1) > self.pool.num_blocks:
            raise SchedulingError(
                f"request {request.id} needs {self.pool.needed(0, total - 1)} KV blocks of "
                f"{self.pool.block_size} tokens; the cache holds {self.pool.num_blocks} (raise "
                f"--gpu-memory-utilization or --num-blocks).")

    def schedule(self) -> list[tuple[Sequence, int]]:
        raise NotImplementedError


class VLLMScheduler(Scheduler):
    """vLLM v1's scheduler (vllm/v1/core/sched/scheduler.py, Scheduler.schedule, v0.8+; the
    policy the vLLM V1 blog of Jan 2025 describes). A token budget per step
    (max_num_batched_tokens) with chunked prefill: running sequences first, in order, each taking
    min(remaining, budget) tokens; when blocks run out, the last running sequence is preempted by
    recompute (back to the front of the queue) until the allocation fits or the sequence itself
    was preempted. Then, only if nothing was preempted, waiting sequences in order while the budget
    and max_num_seqs allow; the first that does not get its blocks stops admission. Without
    chunked prefill a prompt that does not fit the budget left waits for the next step."""

    name = "vllm"
    steady_decode = True
    source = "vLLM v1 scheduler (vllm/v1/core/sched/scheduler.py), chunked prefill, recompute preemption"

    def __init__(self, pool: BlockPool, max_num_seqs: int = 256, max_batched_tokens: int = 8192,
                 chunked_prefill: bool = True, prefix_caching: bool = False):
        super().__init__(pool, max_num_seqs, max_batched_tokens)
        self.chunked_prefill = chunked_prefill
        self.prefix_caching = prefix_caching

    def check_request(self, request: Request, max_model_len: int) -> None:
        super().check_request(request, max_model_len)
        if not self.chunked_prefill and request.prompt_tokens + request.output_tokens - 1 > self.max_batched_tokens:
            raise SchedulingError(
                f"request {request.id}: a prompt of {request.prompt_tokens} tokens (and its recompute) "
                f"does not fit --max-batched-tokens {self.max_batched_tokens} without chunked prefill.")

    def schedule(self) -> list[tuple[Sequence, int]]:
        budget = self.max_batched_tokens
        batch: list[tuple[Sequence, int]] = []
        preempted = False
        index = 0
        capacity = self.pool.block_size
        while index < len(self.running) and budget > 0:
            sequence = self.running[index]
            tokens = sequence.known - sequence.computed
            if tokens > budget:
                tokens = budget
            if sequence.computed + tokens <= sequence.blocks * capacity:  # its blocks hold it
                batch.append((sequence, tokens))
                budget -= tokens
                index += 1
                continue
            running = len(self.running)
            allocated = self._allocate_or_preempt(sequence, sequence.computed + tokens, batch)
            preempted = preempted or len(self.running) < running
            if not allocated:
                break
            batch.append((sequence, tokens))
            budget -= tokens
            index += 1
        if self.unregistered:
            self.register_prefixes()
        while not preempted and self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            sequence = self.waiting[0]
            if self.prefix_caching:
                self.reuse_prefix(sequence)
            tokens = sequence.remaining
            if tokens > budget:
                if not self.chunked_prefill:
                    self.unuse_prefix(sequence)
                    break
                tokens = budget
            if not self.allocate(sequence, sequence.computed + tokens):
                self.unuse_prefix(sequence)
                break
            self.waiting.popleft()
            self.running.append(sequence)
            sequence.status = PREFILLING
            if (self.prefix_caching and not sequence.shared
                    and sequence.request.prefix_tokens >= self.pool.block_size):
                self.unregistered.append(sequence)
            batch.append((sequence, tokens))
            budget -= tokens
        return batch


class SarathiScheduler(Scheduler):
    """Sarathi-Serve (Agrawal et al., OSDI 2024, "Taming Throughput-Latency Tradeoff in LLM
    Inference with Sarathi-Serve", Algorithm 1; as Vidur's SarathiReplicaScheduler implements it):
    stall-free batching. Every step first takes one token of each decoding sequence, then the
    ongoing prefills' next chunks, then new requests, within a token budget (the chunk size).
    A new request is admitted only when blocks for its whole prompt are free (allocated as it
    prefills); a decode that finds no block preempts the newest running sequence by recompute."""

    name = "sarathi"
    steady_decode = True
    source = "Sarathi-Serve, OSDI 2024, Algorithm 1 (stall-free chunked prefills; Vidur's sarathi scheduler)"

    def __init__(self, pool: BlockPool, max_num_seqs: int = 256, max_batched_tokens: int = 512):
        super().__init__(pool, max_num_seqs, max_batched_tokens)

    def schedule(self) -> list[tuple[Sequence, int]]:
        budget = self.max_batched_tokens
        batch: list[tuple[Sequence, int]] = []
        decoding = [s for s in self.running if s.generated and s.known - s.computed == 1]
        prefilling = [s for s in self.running if not (s.generated and s.known - s.computed == 1)]
        for sequence in decoding:
            if sequence not in self.running or budget == 0:
                continue
            if self._allocate_or_preempt(sequence, sequence.computed + 1, batch):
                batch.append((sequence, 1))
                budget -= 1
        for sequence in prefilling:
            if sequence not in self.running or budget == 0:
                continue
            tokens = min(sequence.remaining, budget)
            if self.allocate(sequence, sequence.computed + tokens):
                batch.append((sequence, tokens))
                budget -= tokens
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            sequence = self.waiting[0]
            if self.pool.needed(0, sequence.known) > self.pool.free:
                break
            tokens = min(sequence.remaining, budget)
            self.allocate(sequence, tokens)
            self.waiting.popleft()
            self.running.append(sequence)
            sequence.status = PREFILLING
            batch.append((sequence, tokens))
            budget -= tokens
        return batch


class OrcaScheduler(Scheduler):
    """Orca (Yu et al., OSDI 2022, "Orca: A Distributed Serving System for Transformer-Based
    Generative Models", section 4.2's scheduling algorithm): iteration-level batching without
    chunking. A request joins between iterations with its whole prompt, up to max_num_seqs
    running; memory for its prompt and its maximum output is reserved when it joins, so nothing is
    ever preempted. The prompts a step admits share its token budget (one always runs)."""

    name = "orca"
    steady_decode = True
    source = "Orca, OSDI 2022, section 4.2 (iteration-level scheduling, max-token reservation)"

    def schedule(self) -> list[tuple[Sequence, int]]:
        batch = [(s, 1) for s in self.running]
        budget = self.max_batched_tokens - len(batch)
        while self.waiting and len(self.running) < self.max_num_seqs:
            sequence = self.waiting[0]
            if batch and sequence.remaining > budget:
                break
            if not self.allocate(sequence, sequence.request.prompt_tokens + sequence.request.output_tokens - 1):
                break
            self.waiting.popleft()
            self.running.append(sequence)
            sequence.status = PREFILLING
            batch.append((sequence, sequence.remaining))
            budget -= sequence.remaining
        return batch


class StaticScheduler(Scheduler):
    """Static batching, as Hugging Face `generate` runs a batch (transformers GenerationMixin):
    up to max_num_seqs waiting requests start together; the prompts are padded to the longest and
    prefilled in one step, then every sequence decodes in lockstep until the longest output is
    done (finished rows keep being computed, as padding); the next batch starts after. Memory is
    reserved for the whole batch at its longest prompt and output."""

    name = "static"
    source = "Hugging Face transformers generate(): one padded batch at a time"

    def __init__(self, pool: BlockPool, max_num_seqs: int = 8, max_batched_tokens: int = 1 << 62):
        super().__init__(pool, max_num_seqs, max_batched_tokens)
        self.group: list[Sequence] = []
        self.padded_prompt = 0
        self.padded_steps = 0
        self.step_index = 0

    def idle(self) -> bool:
        return not self.waiting and not self.group

    def finished(self, sequence: Sequence) -> None:
        sequence.status = FINISHED

    def schedule(self) -> list[tuple[Sequence, int]]:
        if self.group and all(s.done for s in self.group):
            for sequence in self.group:
                self.release(sequence)
            self.group, self.running = [], []
        if not self.group:
            if not self.waiting:
                return []
            group: list[Sequence] = []
            while self.waiting and len(group) < self.max_num_seqs:
                candidate = self.waiting[0]
                trial = group + [candidate]
                length = max(s.request.prompt_tokens for s in trial) + max(s.request.output_tokens for s in trial) - 1
                if self.pool.needed(0, length) * len(trial) > self.pool.free:
                    break
                group.append(self.waiting.popleft())
            if not group:
                return []
            self.padded_prompt = max(s.request.prompt_tokens for s in group)
            self.padded_steps = max(s.request.output_tokens for s in group)
            length = self.padded_prompt + self.padded_steps - 1
            for sequence in group:
                self.allocate(sequence, length)
                sequence.status = PREFILLING
            self.group, self.running, self.step_index = group, list(group), 0
        self.step_index += 1
        return [(s, s.remaining if not s.done else 0) for s in self.group]

    def padded(self, batch: list[tuple[Sequence, int]]) -> tuple[list[int], list[int]]:
        """The query tokens and keys of each row as the padded batch runs them."""
        if self.step_index == 1:
            return [self.padded_prompt] * len(batch), [self.padded_prompt] * len(batch)
        context = self.padded_prompt + self.step_index - 1
        return [1] * len(batch), [context] * len(batch)


class TransformersScheduler(Scheduler):
    """transformers 5.24's continuous batching (generation/continuous_batching: scheduler.py's
    FIFOScheduler and PrefillFirstScheduler, cache.py's PagedAttentionCache, continuous_api.py's
    prepare_next_batch, offloading_manager.py's soft reset), re-expressed on this simulator's
    state; validate/serving_engine.py records the real engine and the tests compare, step by step.

    Candidates in order: FIFO takes the decoding sequences, then the split prefills, then the
    waiting queue (unless new requests are blocked); prefill-first takes the split prefills first.
    Each gets min(remaining, token budget) tokens if its blocks can be allocated (a sequence
    that cannot is skipped; an active one is 'starved'); a read budget of num_blocks x block_size
    cached tokens bounds the keys read. Below the safety margin of free blocks (FIFO 0.15,
    prefill-first 0.0) only decoding sequences join a non-empty batch. After scheduling, starved
    sequences are soft reset, newest first, until the rest fit (keeping one active); they rejoin
    the queue's end with their generated tokens as prompt, and new requests wait until one
    finishes. If nothing could be scheduled the same reset runs first."""

    name = "hf-fifo"
    source = "transformers 5.24 generation/continuous_batching FIFOScheduler"
    prefill_first = False
    default_margin = 0.15

    def __init__(self, pool: BlockPool, max_num_seqs: int = 32, max_batched_tokens: int = 256,
                 safety_margin: float | None = None):
        super().__init__(pool, max_num_seqs, max_batched_tokens)
        self.safety_margin = self.default_margin if safety_margin is None else safety_margin
        self.block_new = False
        self.starved: list[tuple[Sequence, int]] = []
        self.order: dict[int, Sequence] = {}  # active requests in admission order (a dict, as theirs)

    def finished(self, sequence: Sequence) -> None:
        sequence.status = FINISHED
        self.release(sequence)
        self.order.pop(sequence.request.id, None)
        self.running = list(self.order.values())
        self.block_new = False

    def idle(self) -> bool:
        return not self.waiting and not self.order

    def _candidates(self) -> list[Sequence]:
        active = list(self.order.values())
        first, second = (PREFILLING, DECODING) if self.prefill_first else (DECODING, PREFILLING)
        ordered = [s for s in active if s.status == first] + [s for s in active if s.status == second]
        return ordered + ([] if self.block_new else list(self.waiting))

    def _try(self) -> tuple[list[tuple[Sequence, int]], bool]:
        token_budget = self.max_batched_tokens
        read_budget = self.pool.num_blocks * self.pool.block_size
        request_budget = self.max_num_seqs
        in_margin = self.pool.free / self.pool.num_blocks >= self.safety_margin
        batch: list[tuple[Sequence, int]] = []
        failed = False
        self.starved = []
        for sequence in self._candidates():
            if not in_margin and batch and sequence.status != DECODING:
                break
            tokens = min(sequence.remaining, token_budget)
            read = sequence.computed
            if read_budget < read:
                continue
            if self.pool.needed(sequence.blocks, sequence.computed + tokens) > self.pool.free:
                failed = True
                if sequence.request.id in self.order:
                    self.starved.append((sequence, tokens))
                continue
            self.allocate(sequence, sequence.computed + tokens)
            if sequence.status == WAITING:
                self.order[sequence.request.id] = sequence
                self.waiting.remove(sequence)
            sequence.status = DECODING if tokens == sequence.remaining else PREFILLING
            batch.append((sequence, tokens))
            token_budget -= tokens
            read_budget -= read
            request_budget -= 1
            if token_budget == 0 or read_budget <= 0 or request_budget <= 0:
                break
        self.running = list(self.order.values())
        return batch, failed

    def _offload(self) -> bool:
        """Soft reset starved sequences, newest first, until the others can all be stored."""
        starved = self.starved
        if not starved:
            return False
        needs = [self.pool.needed(s.blocks, s.computed + q) for s, q in starved]
        active = len(self.order)
        offloaded: list[Sequence] = []
        while starved and active - len(offloaded) > 1:
            free, storable = self.pool.free, 0
            for need in needs:
                if need > free:
                    break
                free -= need
                storable += 1
            if storable == len(starved):
                break
            sequence, _ = starved.pop()
            needs.pop()
            offloaded.append(sequence)
            self.release(sequence)
        if not offloaded:
            return False
        for sequence in reversed(offloaded):
            self.reset(sequence)
            self.order.pop(sequence.request.id)
            self.waiting.append(sequence)
        self.running = list(self.order.values())
        self.block_new = True
        return True

    def schedule(self) -> list[tuple[Sequence, int]]:
        batch, failed = self._try()
        while not batch and failed:
            if not self._offload():
                raise SchedulingError("no request can be scheduled and none can be offloaded: the "
                                      "token or block budget is too small for one request.")
            batch, failed = self._try()
        if batch and self.starved:
            self._offload()
        return batch


class PrefillFirstScheduler(TransformersScheduler):
    """transformers 5.24's PrefillFirstScheduler: split prefills before decoding sequences, and a
    safety margin of 0 by default (see TransformersScheduler)."""

    name = "hf-prefill-first"
    source = "transformers 5.24 generation/continuous_batching PrefillFirstScheduler"
    prefill_first = True
    default_margin = 0.0


from .vllm_v0 import VLLMV0Scheduler  # noqa: E402  (its own module; it builds on the classes above)

SCHEDULERS = {cls.name: cls for cls in (VLLMScheduler, SarathiScheduler, OrcaScheduler, StaticScheduler,
                                        TransformersScheduler, PrefillFirstScheduler, VLLMV0Scheduler)}
