"""SGLang's scheduler (serve --scheduler sglang), read from its code at the releases the published SGLang tables ran
(v0.3.0: benchmarks/published_sglang_v030.py; v0.4.0: benchmarks/published_sglang_h200.py), its constants per
release as data (SGLANG_RELEASES), and its running-request cap. Its KV pool rule is kvcache.sglang_pool_tokens.

The code read (sgl-project/sglang, python/sglang/...): first in forks' copies of each era (wt42_sglang), then checked
line by line in the releases' own PyPI wheels, sglang 0.3.0 and 0.4.0 (the tags' python/sglang; wt42_sglangver):
SGLANG_RELEASES' sources give file and line; docs/serving.md and validate/FINDINGS.md say what differed:

- Admission, `PrefillAdder` (srt/managers/policy_scheduler.py, v0.3; schedule_policy.py, v0.4). Free tokens are the
  pool's (`token_to_kv_pool.available_size()`, no radix cache). From them the running requests' future tokens are
  reserved: sum over running r of min(max_new_tokens - len(output_ids), CLIP_MAX_NEW_TOKENS=4096) x
  new_token_ratio (`remove_running_tokens`, v0.3; `__init__`, v0.4). A waiting request, in queue order (lpm is fcfs
  without the radix cache: `SchedulePolicy.__init__`), is admitted if extend_input_len + min(max_new_tokens, 4096)
  < the tokens left (`add_one_req`: `if total_tokens >= self.rem_total_tokens: return NO_TOKEN`), and its input fits
  max_prefill_tokens (unless it is the first); admitting it takes input + max_new_tokens from what is left. A prompt
  longer than the chunk left (chunked_prefill_size) is cut to it and carried as the in-flight request, whose next
  chunk goes first in the next prefill (`add_inflight_req`, no memory check). Admission stops at the first request
  refused, at the running cap, or once tokens, input or chunk are spent (`no_remaining_tokens`, v0.3;
  `budget_state`, v0.4, which also stops when the tokens actually free, `cur_rem_tokens`, are spent).
  v0.4 with ignore_eos (bench_serving's default) and the radix cache off takes `add_one_req_ignore_eos` instead:
  every request's tokens left (max_new_tokens x ratio - generated, ratio 1.0 under ignore_eos: so exactly its
  output left) are sorted, and the request is refused if at any point of the remaining decode the free tokens
  plus what the finished requests released would be spent (the loop over req_states).
- A step (v0.3 `ModelTpServer.forward_step`; v0.4 `Scheduler.get_next_batch_to_run`): a prefill batch if any
  request is admitted, run alone (enable_mixed_chunk off); otherwise one decode step of every running request.
- Decode (`forward_decode_batch`, v0.3; `update_running_batch`, v0.4): if the pool holds fewer free tokens than
  running requests (`check_decode_mem`), requests are retracted (`ScheduleBatch.retract_decode`): sorted by
  (generated tokens, -prompt tokens), the fewest generated (the longest prompt among ties) first, until the free
  tokens reach 20 (retract_decode_steps) per request left, never the last one (v0.4 retracts at least one:
  `first_iter`); their tokens freed and each appended to the queue's end (`waiting_queue.extend`), to be prefilled
  again with its generated tokens; new_token_ratio becomes min(1, (generated + 20 x running) / sum of
  max_new_tokens) over those left. Otherwise new_token_ratio decays by the release's step to its floor.
- Idle (no batch: v0.3 forward_step's else branch, v0.4's event loop): new_token_ratio is reset to the initial.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigError, show
from .kvcache import BlockPool
from .scheduler_state import DECODING, PREFILLING, Scheduler, SchedulingError, Sequence
from .workload import Request

CLIP_MAX_NEW_TOKENS = 4096  # policy_scheduler.py / schedule_policy.py: SGLANG_CLIP_MAX_NEW_TOKENS's default
RETRACT_DECODE_STEPS = 20  # global_config.py: retract_decode_steps = 20 (v0.3 and v0.4)


@dataclass(frozen=True)
class SGLangRelease:
    """One release's scheduler constants, each from its code (the module's docstring says where)."""

    tag: str
    start_ratio: float  # new_token_ratio when the server starts
    init_ratio: float  # ... after an idle loop
    min_ratio: float  # the floor it decays to
    decay: float  # per decode step
    request_pool_cap: int  # ReqToTokenPool: min(max(int(tokens / context x 512), 2048), cap)
    running_cap_offset: int  # max_running_requests = min(tokens // 2, max_num_reqs + this)
    mem_fraction_tp8: float  # server_args.py: mem_fraction_static's default at 8 <= tp < 16
    ignore_eos_adder: bool  # add_one_req_ignore_eos exists (v0.4)
    retract_at_least_one: bool  # retract_decode's first_iter (v0.4)
    budget_state: bool  # admission stops on the tokens actually free too, and batch_is_full holds it off (v0.4)
    source: str


SGLANG_RELEASES = {
    "v0.3.0": SGLangRelease(
        "v0.3.0", start_ratio=0.1, init_ratio=0.7, min_ratio=0.1, decay=0.001, request_pool_cap=5120,
        running_cap_offset=-1, mem_fraction_tp8=0.83, ignore_eos_adder=False, retract_at_least_one=False,
        budget_state=False,
        source=("read in the sglang 0.3.0 wheel (PyPI, sha256 1f7ee60f..., the v0.3.0 tag's python/sglang): "
                "global_config.py:19-21,29 (init_new_token_ratio 0.7, base_min_new_token_ratio 0.1, "
                "new_token_ratio_decay 0.001, retract_decode_steps 20); srt/managers/tp_worker.py:126-133 "
                "(max_running_requests = min(tokens // 2, req_to_token_pool.size - 1)), :217-223 (min ratio = 0.1 x "
                "schedule_conservativeness 1.0, the start ratio), :287 (0.7 when idle), :432-437 (no pre-check; "
                "break on refusal, no_remaining_tokens or the cap); srt/model_executor/model_runner.py:374-385 "
                "(max_num_reqs cap 5120, ReqToTokenPool(max_num_reqs)); srt/server_args.py:54-55,57,109-119 (chunk "
                "8192, max_prefill 16384, conservativeness 1.0, 0.79/0.83/0.85/0.87/0.88); "
                "srt/managers/policy_scheduler.py:32,108-227 (CLIP 4096, PrefillAdder without the ignore_eos "
                "adder); schedule_batch.py:475-550 (retract_decode, no first_iter). Read first (wt42_sglang) in "
                "copies of the era: "
                "v0.3-era global_config.py: init_new_token_ratio = 0.7, base_min_new_token_ratio = 0.1, "
                "new_token_ratio_decay = 0.001, retract_decode_steps = 20; tp_worker.py: min_new_token_ratio = "
                "base_min x schedule_conservativeness (1.0), new_token_ratio = min_new_token_ratio at start; "
                "model_runner.py: max_num_reqs = min(max(int(max_total_num_tokens / context_len * 512), 2048), "
                "5120); policy_scheduler.py PrefillAdder")),
    "v0.4.0": SGLangRelease(
        "v0.4.0", start_ratio=0.7, init_ratio=0.7, min_ratio=0.7 * 0.14, decay=(0.7 - 0.7 * 0.14) / 600,
        request_pool_cap=4096, running_cap_offset=1, mem_fraction_tp8=0.81, ignore_eos_adder=True,
        retract_at_least_one=True, budget_state=True,
        source=("read in the sglang 0.4.0 wheel (PyPI, sha256 f0ae1c46..., the v0.4.0 tag's python/sglang): "
                "global_config.py:17-28 (default_init_new_token_ratio 0.7, default_min_new_token_ratio_factor "
                "0.14, default_new_token_ratio_decay_steps 600, retract_decode_steps 20); "
                "srt/managers/scheduler.py:305-318 (init = 0.7 x schedule_conservativeness, min = init x 0.14, "
                "decay = (init - min) / 600, start = init), :394/:432 (init when idle), :804-861 (batch_is_full on "
                "the cap and on NO_TOKEN, budget_state's included), :776-777 (cleared after a chunk), :919-950; "
                "srt/managers/tp_worker.py:92-99 (max_running_requests = min(tokens // 2, "
                "req_to_token_pool.size)); srt/model_executor/model_runner.py:506-518 (max_num_reqs cap 4096, "
                "ReqToTokenPool(size=max_num_reqs + 1)); srt/server_args.py:64,66,155-175 (max_prefill 16384, "
                "conservativeness 1.0, 0.79/0.81/0.85/0.87/0.88, chunk 8192 over 25,000 MB of GPU memory); "
                "srt/managers/schedule_policy.py:31-33,121-330 (CLIP 4096, budget_state, add_one_req_ignore_eos); "
                "schedule_batch.py:818-899 (retract_decode with first_iter). Read first (wt42_sglang) in copies "
                "of the era: "
                "v0.4-era global_config.py: default_init_new_token_ratio 0.7, default_min_new_token_ratio_factor "
                "0.14, default_new_token_ratio_decay_steps 600 (scheduler.py: init = 0.7 x "
                "schedule_conservativeness, min = init x 0.14, decay = (init - min) / 600, new_token_ratio = init at "
                "start); model_runner.py: max_num_reqs cap 4096; schedule_policy.py PrefillAdder with "
                "add_one_req_ignore_eos; schedule_batch.py retract_decode with first_iter")),
}
DEFAULT_RELEASE = "v0.4.0"
CHUNKED_PREFILL_SIZE = 8192  # server_args.py: 8192 (0.3.0:54); None, 8192 over 25,000 MB of GPU (0.4.0:171-175)
MAX_PREFILL_TOKENS = 16384  # server_args.py (v0.3 and v0.4): max_prefill_tokens: int = 16384


def sglang_release(tag: str | None) -> SGLangRelease:
    tag = DEFAULT_RELEASE if tag is None else tag
    if tag not in SGLANG_RELEASES:
        raise ConfigError(f"--engine-release for the sglang scheduler must be one of {', '.join(SGLANG_RELEASES)}, "
                          f"got {show(tag)}.")
    return SGLANG_RELEASES[tag]


def mem_fraction_static(tp: int, release: SGLangRelease) -> float:
    """server_args.py `__post_init__`: mem_fraction_static's default by tensor-parallel size (tp >= 8: 0.83 at
    v0.3.0, 0.81 at v0.4.0)."""
    return 0.79 if tp >= 16 else release.mem_fraction_tp8 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 \
        else 0.88


def max_running_requests(pool_tokens: int, context: int, release: SGLangRelease) -> int:
    """tp_worker.py: max_running_requests = min(max_total_num_tokens // 2, req_to_token_pool.size - 1) at v0.3.0
    (the pool max_num_reqs), min(..., req_to_token_pool.size) at v0.4.0 (the pool max_num_reqs + 1), max_num_reqs
    model_runner.py's min(max(int(tokens / context_len x 512), 2048), cap)."""
    pool_requests = min(max(int(pool_tokens / context * 512), 2048), release.request_pool_cap)
    return min(pool_tokens // 2, pool_requests + release.running_cap_offset)


class SGLangScheduler(Scheduler):
    """SGLang's scheduler (module docstring): conservative admission, prefill batches alone, retraction. The pool
    pages one token a block (SGLang's TokenToKVPool): block_size 1."""

    name = "sglang"
    steady_decode = False  # every decode step moves new_token_ratio
    source = ("SGLang's PrefillAdder, forward_step / get_next_batch_to_run and retract_decode "
              "(sgl-project/sglang v0.3.0 and v0.4.0, costmodel/serving/sglang.py)")

    def __init__(self, pool: BlockPool, max_num_seqs: int, max_batched_tokens: int, release: str | None = None,
                 max_prefill_tokens: int = MAX_PREFILL_TOKENS, ignore_eos: bool = True):
        super().__init__(pool, max_num_seqs, max_batched_tokens)
        if pool.block_size != 1:
            raise ConfigError(f"the sglang scheduler pages one token at a time (SGLang's TokenToKVPool): "
                              f"--block-size 1, got {pool.block_size}.")
        self.engine = sglang_release(release)
        self.ratio = self.engine.start_ratio
        self.max_prefill_tokens = max_prefill_tokens
        self.ignore_eos = ignore_eos
        self.inflight: Sequence | None = None
        self.retracted_total = 0
        self.full = False  # v0.4's batch_is_full
        self.shrank = False
        self.was_idle = True  # the loop ran no batch since the last one (SGLang's idle iterations)

    def idle(self) -> bool:
        return super().idle() and self.inflight is None

    def add(self, sequence: Sequence) -> None:
        if self.idle():  # SGLang's loop spun with no batch until this request came
            self.was_idle = True
        super().add(sequence)

    def check_request(self, request: Request, max_model_len: int) -> None:
        super().check_request(request, max_model_len)
        output = request.output_tokens if self.engine.ignore_eos_adder and self.ignore_eos else \
            min(request.output_tokens, CLIP_MAX_NEW_TOKENS)  # what admission counts for a request alone
        if request.prompt_tokens + output >= self.pool.num_blocks:
            raise SchedulingError(f"request {request.id}: prompt {request.prompt_tokens} + output "
                                  f"{request.output_tokens} tokens: SGLang admits a request only while its prompt "
                                  f"and output are under the pool's {self.pool.num_blocks} tokens.")

    # ---- admission (PrefillAdder) ----------------------------------------------------------------------------
    def _reserved(self) -> float:
        return sum(min(s.output - s.generated, CLIP_MAX_NEW_TOKENS) * self.ratio for s in self.running)

    def _fits_ignore_eos(self, sequence: Sequence, others: list[Sequence], free: int) -> bool:
        """add_one_req_ignore_eos: (tokens left, tokens held) of the request, the running and the admitted ones,
        sorted by tokens left (the request first among equals); refused if some stretch of decoding would spend
        the free tokens plus those the shorter ones freed."""
        states = sorted(((s.output - s.generated, s.request.prompt_tokens + s.generated)
                         for s in [sequence, *others] if s.output - s.generated > 0), key=lambda state: state[0])
        rem = free - sequence.request.prompt_tokens
        freed = 0
        for i, (left, held) in enumerate(states):
            steps = states[i + 1][0] if i + 1 < len(states) else left
            if rem + freed - steps * (len(states) - i) <= 0:
                return False
            freed += held
        return True

    def _admit(self) -> list[tuple[Sequence, int]]:
        free = self.pool.free  # available_size() (+ evictable_size(): 0 without the radix cache)
        total, current = free - self._reserved(), free
        inputs, chunk = self.max_prefill_tokens, self.max_batched_tokens
        batch: list[tuple[Sequence, int]] = []
        running = list(self.running)  # the running batch before this prefill
        admitted: list[Sequence] = []  # can_run_list
        chunked = self.inflight is not None
        if chunked:  # add_inflight_req: its next chunk first, no memory check
            sequence = self.inflight
            admitted.append(sequence)
            tokens = min(sequence.remaining, chunk)
            last = tokens == sequence.remaining
            if not self.allocate(sequence, sequence.computed + tokens):
                return []
            total -= tokens + (min(sequence.output, CLIP_MAX_NEW_TOKENS) if last else 0)
            current, inputs, chunk = current - tokens, inputs - tokens, chunk - tokens
            batch.append((sequence, tokens))
            if last:
                self.inflight = None
                self.running.append(sequence)
        v04 = self.engine.budget_state
        if v04 and chunked:  # scheduler.py:776-777 (v0.4.0): a chunk's step clears batch_is_full
            self.full = False
        if v04 and self.full:  # batch_is_full: no admission until the running batch shrinks
            return batch
        while self.waiting:
            if not v04 and self._spent(total, current, inputs, chunk):  # v0.3: no_remaining_tokens first
                break
            sequence = self.waiting[0]
            tokens = sequence.remaining
            if self.engine.ignore_eos_adder and self.ignore_eos:
                if not self._fits_ignore_eos(sequence, running + admitted, current):
                    self.full = True
                    break
            else:
                if tokens + min(sequence.output, CLIP_MAX_NEW_TOKENS) >= total:
                    self.full = True
                    break
                if tokens > inputs and batch:
                    break
            cut = min(tokens, chunk)
            if cut == 0 or not self.allocate(sequence, sequence.computed + cut):
                break
            self.waiting.popleft()
            sequence.status = PREFILLING
            batch.append((sequence, cut))
            total -= cut + (min(sequence.output, CLIP_MAX_NEW_TOKENS) if cut == tokens else 0)
            current, inputs, chunk = current - cut, inputs - cut, chunk - cut
            if v04 and (total <= 0 or current <= 0):  # budget_state's NO_TOKEN: batch_is_full (scheduler.py:858-860)
                self.full = True
            if cut < tokens:  # the new in-flight request (chunked prefill)
                self.inflight = sequence
                break
            self.running.append(sequence)
            admitted.append(sequence)
            if len(self.running) >= self.max_num_seqs:
                self.full = True
                break
            if v04 and self._spent(total, current, inputs, chunk):  # v0.4: budget_state after adding
                break
        return batch

    def _spent(self, total: float, current: int, inputs: int, chunk: int) -> bool:
        """no_remaining_tokens (v0.3) / budget_state (v0.4, with the tokens actually free)."""
        return (total <= 0 or inputs <= 0 or chunk <= 0
                or (self.engine.budget_state and current <= 0))

    def finished(self, sequence: Sequence) -> None:
        super().finished(sequence)
        self.shrank = True  # batch_is_full is reset at the next decode step's filter_batch (update_running_batch)

    # ---- decode (forward_decode_batch / update_running_batch) ------------------------------------------------
    def _retract(self) -> None:
        order = sorted(self.running, key=lambda s: (s.generated, -s.request.prompt_tokens), reverse=True)
        first = self.engine.retract_at_least_one
        while self.pool.free < len(order) * RETRACT_DECODE_STEPS or first:
            if len(order) == 1:
                break
            first = False
            victim = order.pop()
            self.running.remove(victim)
            self.reset(victim)
            self.waiting.append(victim)
            self.retracted_total += 1
        decoded = sum(s.generated for s in self.running)
        self.ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(self.running))
                         / sum(s.output for s in self.running))

    def schedule(self) -> list[tuple[Sequence, int]]:
        # The loop ran no batch before this one (tp_worker.py:287 at v0.3.0, scheduler.py:394 at v0.4.0): not when the
        # last running requests ended and the queue's first is admitted at once; at v0.4.0 a batch_is_full held
        # admission off, so the step that filters the ended batch runs nothing (update_running_batch: None)
        if not self.running and self.inflight is None and (self.was_idle or (self.engine.budget_state and self.full)):
            self.ratio = self.engine.init_ratio
            self.full = self.shrank = False  # (the empty batch's update_running_batch cleared batch_is_full)
        self.was_idle = False
        if (self.waiting or self.inflight is not None) and len(self.running) < self.max_num_seqs:
            batch = self._admit()
            if batch:
                return batch
        if not self.running:
            self.was_idle = True
            return []
        if self.shrank:  # update_running_batch: the batch shrank since the last decode step
            self.full = self.shrank = False
        if self.pool.free < len(self.running):  # check_decode_mem
            self._retract()
            self.full = False
        else:
            self.ratio = max(self.ratio - self.engine.decay, self.engine.min_ratio)
        batch = []
        for sequence in self.running:
            if not self.allocate(sequence, sequence.computed + 1):
                raise SchedulingError("the sglang scheduler found no token for a decode after retraction: the "
                                      "pool is smaller than one request.")
            sequence.status = DECODING
            batch.append((sequence, 1))
        return batch
