"""Schedulers: which sequences run in the next step and how many tokens each. One class per
engine's policy, each stating its source; they share the sequence state and the block pool
(scheduler_state.py, which says what a sequence knows and how prefix caching shares blocks).
"""

from __future__ import annotations

from typing import Callable

from .budgets import NO_TOKEN_BUDGET
from .kvcache import BlockPool
from .scheduler_state import DECODING, FINISHED, PREFILLING, WAITING, Scheduler, SchedulingError, Sequence
from .sglang import SGLangScheduler
from .vllm_v0 import VLLMV0Scheduler
from .workload import Request




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
        paged = self.pool.paging  # with layer groups every step allocates (and frees what left the window)
        running, add = self.running, batch.append  # (a loop over every running sequence of every step: kept lean)
        while index < len(running) and budget > 0:
            sequence = running[index]
            computed = sequence.computed
            tokens = sequence.known - computed
            if tokens > budget:
                tokens = budget
            if paged is None and computed + tokens <= sequence.blocks * capacity:  # its blocks hold it
                add((sequence, tokens))
                budget -= tokens
                index += 1
                continue
            count = len(running)
            allocated = self._allocate_or_preempt(sequence, computed + tokens, batch)
            preempted = preempted or len(running) < count
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


class TRTLLMScheduler(OrcaScheduler):
    """TensorRT-LLM's in-flight batching as its PyTorch backend runs it by default: the capacity
    scheduler GUARANTEED_NO_EVICT (a request joins only if the cache can hold its prompt and its
    whole output, so nothing is evicted) and, with chunked context off (trtllm-bench's default,
    tensorrt_llm/bench/benchmark/utils/general.py get_settings: enable_chunked_prefill False),
    generation requests first, then whole prompts while max_num_tokens allows (the tuning guide,
    docs/source/performance/performance-tuning-guide/tuning-max-batch-size-and-max-num-tokens.md:
    "TRT-LLM prioritizes scheduling requests in generation phase first"). The schedule is Orca's;
    the engine differs in its CUDA graphs (graphs.py, trtllm_graphs)."""

    name = "trtllm"
    source = ("TensorRT-LLM PyTorch backend: GUARANTEED_NO_EVICT, generation first, whole contexts within "
              "max_num_tokens (chunked context off)")


class StaticScheduler(Scheduler):
    """Static batching, as Hugging Face `generate` runs a batch (transformers GenerationMixin):
    up to max_num_seqs waiting requests start together; the prompts are padded to the longest and
    prefilled in one step, then every sequence decodes in lockstep until the longest output is
    done (finished rows keep being computed, as padding); the next batch starts after. Memory is
    reserved for the whole batch at its longest prompt and output."""

    name = "static"
    source = "Hugging Face transformers generate(): one padded batch at a time"
    no_disaggregation = ("generate() prefills and decodes each batch in one process, with no way to hand a "
                         "prompt's KV cache to another")

    def __init__(self, pool: BlockPool, max_num_seqs: int = 8, max_batched_tokens: int = NO_TOKEN_BUDGET):
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
    no_disaggregation = ("transformers 5.24's continuous batching (generation/continuous_batching) runs every "
                         "request's prefill and decode on one cache, with no way to hand it to another engine")
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
        limit = self.pool.paging.read_limit if self.pool.paging is not None else None
        request_budget = self.max_num_seqs
        in_margin = self.pool.free / self.pool.num_blocks >= self.safety_margin
        batch: list[tuple[Sequence, int]] = []
        failed = False
        self.starved = []
        for sequence in self._candidates():
            if not in_margin and batch and sequence.status != DECODING:
                break
            tokens = min(sequence.remaining, token_budget)
            read = sequence.computed if limit is None else min(sequence.computed, limit)
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
        paging = self.pool.paging
        if paging is not None and len(paging.tables) > 1:
            return self._offload_tables(starved, paging)
        needs = [self.pool.needed(s.blocks, s.computed + q) for s, q in starved]

        def storable() -> int:  # how many of the starved, oldest first, the free blocks hold
            free, count = self.pool.free, 0
            for need in needs:
                if need > free:
                    break
                free -= need
                count += 1
            return count
        return self._offload_until(starved, needs, storable)

    def _offload_tables(self, starved: list[tuple[Sequence, int]], paging) -> bool:
        """_offload with several allocators (transformers' count_storable_requests): a soft reset's
        blocks go back to its allocators' free lists, each serving only its own allocator until
        the next batch frees whole sectors (try_to_free_sectors); needs are per allocator."""
        needs = [[max(0, after - before) for after, before in
                  zip(paging.by_table(0, s.computed + q), paging.by_table(0, s.allocated))] for s, q in starved]
        pending = [0] * len(paging.tables)

        def storable() -> int:  # as _offload's, each need drawn from its allocator's pending blocks first
            sectors, free, count = self.pool.free - sum(pending), list(pending), 0
            for need in needs:
                for table, blocks in enumerate(need):
                    missing = blocks - free[table]
                    if missing > 0:
                        sectors -= missing
                        free[table] += missing
                    free[table] -= blocks
                if sectors < 0:
                    break
                count += 1
            return count

        def offloading(sequence: Sequence) -> None:  # its blocks serve its allocators until the next batch
            pending[:] = [p + held for p, held in zip(pending, paging.by_table(0, sequence.allocated))]
        return self._offload_until(starved, needs, storable, offloading)

    def _offload_until(self, starved: list[tuple[Sequence, int]], needs: list, storable: Callable[[], int],
                       offloading: Callable[[Sequence], None] | None = None) -> bool:
        """Offload the newest starved sequence (its need popped with it) until storable() holds every
        starved one left, or one active sequence is left; `offloading` sees each before its release."""
        active = len(self.order)
        offloaded: list[Sequence] = []
        while starved and active - len(offloaded) > 1:
            if storable() == len(starved):
                break
            sequence, _ = starved.pop()
            needs.pop()
            offloaded.append(sequence)
            if offloading is not None:
                offloading(sequence)
            self.release(sequence)
        return self._requeue(offloaded)

    def _requeue(self, offloaded: list[Sequence]) -> bool:
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


SCHEDULERS = {cls.name: cls for cls in (VLLMScheduler, SarathiScheduler, OrcaScheduler, TRTLLMScheduler,
                                        StaticScheduler,
                                        TransformersScheduler, PrefillFirstScheduler, VLLMV0Scheduler,
                                        SGLangScheduler)}
