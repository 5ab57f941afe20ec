"""vLLM v0's scheduler (prefill-first, no chunking) and its multi-step scheduling (vLLM v0.6's
--num-scheduler-steps): one policy of schedulers.py's (which registers it in SCHEDULERS), in its own
module."""

from __future__ import annotations

from ..config import ConfigError
from .kvcache import BlockPool
from .scheduler_state import PREFILLING, Scheduler, SchedulingError, Sequence
from .workload import Request


class VLLMV0Scheduler(Scheduler):
    """vLLM v0's scheduler as Sarathi-Serve runs it for its vLLM baseline (microsoft/sarathi-serve,
    sarathi/core/scheduler/vllm_scheduler.py, VLLMScheduler._schedule; vLLM before v1 had the same
    policy): prefills first and alone. While requests wait, a step admits whole prompts from the
    queue's front, in order, while each fits the token budget left, max_num_seqs and the free
    blocks (the first that does not stops admission); a step that admits any runs only those
    prompts. Otherwise every running sequence decodes one token; when no block is free for one,
    the newest running sequence is preempted by recompute (to the queue's front), the sequence
    itself if it is the last.

    Multi-step scheduling (vLLM v0.6's --num-scheduler-steps N; docs/serving.md cites the source):
    a prefill batch runs one step (a prefill gets no lookahead slots, so init_multi_step gives it
    num_lookahead_slots 0 + 1 steps); a decode batch runs N steps before the scheduler decides
    again (the engine reuses its cached schedule while steps remain), each of its sequences given
    blocks for N tokens ahead when it is scheduled (num_lookahead_slots = N - 1 beyond the one
    token; a sequence that cannot get them preempts, as a decode that cannot get its block). So a
    request that arrives during a window waits for its end, and a sequence that finishes inside a
    window is still computed, and keeps its slot and blocks, until the window ends, when its
    outputs are processed (engine.py). Chunked prefill is off: v0.6.0 refused it with multi-step."""

    name = "vllm-v0"
    steady_decode = True
    source = ("vLLM v0 (prefill-first, no chunking), as sarathi-serve's sarathi/core/scheduler/vllm_scheduler.py "
              "runs it")

    def __init__(self, pool: BlockPool, max_num_seqs: int, max_batched_tokens: int, num_scheduler_steps: int = 1):
        super().__init__(pool, max_num_seqs, max_batched_tokens)
        if num_scheduler_steps < 1:
            raise ConfigError(f"--num-scheduler-steps must be at least 1, got {num_scheduler_steps}.")
        self.num_scheduler_steps = num_scheduler_steps
        self.steady_decode = num_scheduler_steps == 1  # windows are run whole instead (engine.py)

    def check_request(self, request: Request, max_model_len: int) -> None:
        super().check_request(request, max_model_len)
        if request.prompt_tokens + request.output_tokens - 1 > self.max_batched_tokens:
            raise SchedulingError(
                f"request {request.id}: a prompt of {request.prompt_tokens} tokens (and its recompute) "
                f"does not fit --max-batched-tokens {self.max_batched_tokens}: vllm-v0 does not chunk.")
        ahead = request.prompt_tokens + request.output_tokens - 2 + self.num_scheduler_steps  # its last window's
        if self.num_scheduler_steps > 1 and self.pool.needed(0, ahead) > self.pool.num_blocks:
            raise SchedulingError(
                f"request {request.id} needs {self.pool.needed(0, ahead)} KV blocks of {self.pool.block_size} "
                f"tokens with {self.num_scheduler_steps - 1} lookahead slots; the cache holds "
                f"{self.pool.num_blocks} (lower --num-scheduler-steps or raise --num-blocks).")

    def schedule(self) -> list[tuple[Sequence, int]]:
        batch: list[tuple[Sequence, int]] = []
        budget = self.max_batched_tokens
        while self.waiting and len(self.running) < self.max_num_seqs:
            sequence = self.waiting[0]
            tokens = sequence.remaining
            if tokens > budget or not self.allocate(sequence, sequence.computed + tokens):
                break
            self.waiting.popleft()
            self.running.append(sequence)
            sequence.status = PREFILLING
            batch.append((sequence, tokens))
            budget -= tokens
        if batch:
            self.window = 1
            return batch
        ahead = self.num_scheduler_steps  # the token and its lookahead slots
        for sequence in list(self.running):
            if sequence not in self.running:
                continue
            if self._allocate_or_preempt(sequence, sequence.computed + ahead, batch):
                batch.append((sequence, 1))
        self.window = ahead
        return batch
