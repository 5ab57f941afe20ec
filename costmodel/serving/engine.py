"""The event loop of one engine replica: arrivals, step start, step end.

Time advances by steps. At a step's start every request that has arrived joins the scheduler's
queue; the scheduler picks the step's mix; the step time model says how long it runs; at its
end each sequence whose known tokens are all computed emits a token (at the step's end), and a
sequence with all its output tokens finishes and frees its blocks. An idle replica jumps to the
next arrival. The schedule itself (which sequences, how many tokens, blocks in use, which finish)
is recorded step by step, so tests can compare it with a real engine's. Under multi-step
scheduling (vllm_v0.py) one decision runs a window of steps, run here as a whole (Replica.window).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..spec import ROUTERS
from .scheduler_state import Scheduler, SchedulingError, Sequence
from .schedulers import StaticScheduler
from .workload import Request

StepSeconds = Callable[[Any, Any, int], float]  # (query tokens, keys, emitting) -> seconds


@dataclass
class Step:
    """One step as the engine ran it."""

    start_s: float
    seconds: float
    entries: list[tuple[int, int]]  # (request id, query tokens)
    free_blocks: int  # after scheduling (and any preemption), before the step runs
    finished: list[int]
    preempted: int  # sequences preempted while scheduling this step
    tokens: int = 0  # query tokens the step ran (padded rows included)


@dataclass
class Timeline:
    """What a simulation returns: the sequences (with their token times) and the steps."""

    sequences: list[Sequence]
    steps: list[Step] = field(default_factory=list)
    num_blocks: int = 0

    def schedule(self) -> list[tuple[tuple[tuple[int, int], ...], int, tuple[int, ...]]]:
        """Per step: the (request, query tokens) entries, free blocks, requests finished."""
        return [(tuple(s.entries), s.free_blocks, tuple(s.finished)) for s in self.steps]


def simulate(requests: list[Request], scheduler: Scheduler, step_seconds: StepSeconds,
             max_model_len: int, record: bool = True, decode_run: Any = None,
             concurrency: int | None = None, host: Any = None) -> Timeline:
    """Run every request to completion on one replica; returns its timeline. decode_run(keys,
    steps), if given (StepTime.decode_run), lets steady decoding advance several steps per
    iteration: the same steps, each recorded, computed together. concurrency: a closed loop
    (simulate_replicas). host: the engine's host time a step (host_time.HostTime; None: none)."""
    return simulate_replicas(requests, [scheduler], step_seconds, max_model_len, "round-robin", record,
                             decode_run, concurrency, host)[0]


class Replica:
    """One engine replica: its scheduler, its clock and its timeline."""

    def __init__(self, scheduler: Scheduler, step_seconds: StepSeconds, record: bool, decode_run: Any,
                 host: Any = None):
        self.scheduler = scheduler
        self.host = host  # the engine's host time a step (host_time.py), added to the GPU's
        self.step_seconds = step_seconds
        self.record = record
        self.decode_run = decode_run
        self.timeline = Timeline([], num_blocks=scheduler.pool.num_blocks)
        self.static = isinstance(scheduler, StaticScheduler)
        self.now = 0.0
        self.stalled = False  # nothing schedulable until a request arrives
        self.pace = 0.0  # its last step's seconds (how far a steady run's times are computed at first)

    def add(self, sequence: Sequence, arrival: float) -> None:
        if self.scheduler.idle() or self.stalled:
            self.now = max(self.now, arrival)
            self.stalled = False
        self.scheduler.add(sequence)
        self.timeline.sequences.append(sequence)

    def active(self) -> bool:
        return not self.scheduler.idle() and not self.stalled

    def outstanding_tokens(self) -> int:
        """Tokens its unfinished requests still have to run (what a least-outstanding router weighs)."""
        return sum(s.known - s.computed + s.output - s.generated for s in self.timeline.sequences
                   if s.generated < s.output)

    def step(self, arrival: float | None) -> int:
        """Run the next step (or steady steps before `arrival`); returns the requests finished."""
        import numpy as np

        scheduler = self.scheduler
        if (self.decode_run is not None and scheduler.steady_decode
                and (not scheduler.waiting or len(scheduler.running) >= scheduler.max_num_seqs)):
            advanced = _steady_steps(scheduler, self.decode_run, self.now, arrival, self.timeline, self.record,
                                     self.pace, self.host)
            if advanced is not None:
                self.now, done, self.pace = advanced
                return done
        before = scheduler.preempted_total
        batch = scheduler.schedule()
        free_blocks = scheduler.pool.free
        if not batch:
            if arrival is None:
                raise SchedulingError("the scheduler cannot run the requests left: the budgets are too small.")
            self.stalled = True
            return 0
        if scheduler.window > 1:
            return self.window(batch, scheduler.window, free_blocks, scheduler.preempted_total - before)
        if self.static:
            query, keys = scheduler.padded(batch)
            emitting = sum(1 for s, q in batch if q and s.computed + q >= s.known)
        else:  # (one pass over the batch: this runs every step)
            query, keys, emitting = [], [], 0
            add_query, add_keys = query.append, keys.append
            for sequence, tokens in batch:
                reach = sequence.computed + tokens
                add_query(tokens)
                add_keys(reach)
                if reach >= sequence.known:
                    emitting += 1
        # (a typed array from the lists: numpy need not look at each element for its type)
        seconds = float(self.step_seconds(np.array(query, dtype=np.int64), np.array(keys, dtype=np.int64), emitting))
        if self.host is not None:  # each step a decision (a window's steps: window())
            seconds = float(self.host.step(seconds, len(batch)))
        start = self.now
        self.now = now = start + seconds
        self.pace = seconds
        finished: list[int] = []
        for sequence, tokens in batch:  # (a loop over every sequence of every step: kept lean)
            if sequence.first_scheduled_s is None:
                sequence.first_scheduled_s = start
            computed = sequence.computed = sequence.computed + tokens
            known = sequence.known
            if tokens and computed >= known:  # it emits a token; with all its output, finishes
                generated = sequence.generated = sequence.generated + 1
                sequence.known = known + 1
                sequence.token_times.append(now)
                if generated >= sequence.output:
                    finished.append(sequence.request.id)
                    scheduler.finished(sequence)
        if self.record:
            self.timeline.steps.append(Step(start, seconds, [(s.request.id, q) for s, q in batch], free_blocks,
                                            finished, scheduler.preempted_total - before, int(sum(query))))
        return len(finished)


    def window(self, batch: list[tuple[Sequence, int]], steps: int, free_blocks: int, preempted: int) -> int:
        """Multi-step scheduling: the decode batch runs `steps` steps on one decision (nothing is
        admitted before the last ends). A sequence that emits its last token inside the window is
        still computed (its later tokens discarded) and keeps its slot and blocks; the window's
        outputs are processed at its end, where its tokens are stamped and the finished freed
        (vLLM v0.6's LLMEngine.step processes outputs once no steps remain)."""
        import numpy as np

        scheduler = self.scheduler
        sequences = [s for s, _ in batch]
        count = len(sequences)
        keys = np.asarray([s.computed + 1 for s in sequences], dtype=np.int64)
        if self.decode_run is not None:
            times = self.decode_run(keys, steps)
        else:
            ones = np.ones(count, dtype=np.int64)
            times = [self.step_seconds(ones, keys + j, count) for j in range(steps)]
        if self.host is not None:  # the decision's host time once, on the window's first step
            times = self.host.window(times, count)
        entries = [(s.request.id, 1) for s in sequences]
        emitted = [0] * count
        done: list[Sequence] = []
        for j in range(steps):
            seconds = float(times[j])
            start, self.now = self.now, self.now + seconds
            for index, sequence in enumerate(sequences):
                sequence.computed += 1
                if sequence.generated < sequence.output:
                    sequence.generated += 1
                    sequence.known += 1
                    emitted[index] += 1
                    if sequence.generated >= sequence.output:
                        done.append(sequence)
            if self.record:
                last = j == steps - 1
                self.timeline.steps.append(Step(start, seconds, list(entries), free_blocks,
                                                [s.request.id for s in done] if last else [],
                                                preempted if j == 0 else 0, count))
        for sequence, tokens in zip(sequences, emitted):
            sequence.token_times.extend([self.now] * tokens)
        for sequence in done:
            scheduler.finished(sequence)
        return len(done)


def simulate_replicas(requests: list[Request], schedulers: list[Scheduler], step_seconds: StepSeconds,
                      max_model_len: int, router: str = "round-robin", record: bool = True,
                      decode_run: Any = None, concurrency: int | None = None, host: Any = None) -> list[Timeline]:
    """Replicas behind a router, one event loop: the next event is the earliest of the next
    arrival and the busy replicas' next step starts. An arrival goes to the next replica in turn
    (round-robin) or to the one with the fewest outstanding tokens (as its steps started before the
    arrival left it; ties to the lowest index). A replica admits what it was sent at its next step.

    concurrency=N: a closed loop, as benchmark clients run at a fixed concurrency (vLLM's
    benchmark_serving.py --max-concurrency: an asyncio.Semaphore(N) held around each request;
    AIPerf/genai-perf --concurrency N): N clients, each sending its next request the moment its
    previous one finishes (its last token). The requests go out in id order, the first N at time
    0; their arrival_s is replaced by the time they are sent (TTFT counts from there, as those
    clients time a request from when it holds a slot). With several replicas a steady decoding
    run stops at the next step start of any other busy replica, since a request finishing there
    may send one here. host: the engine's host time a step (host_time.HostTime; None: the GPU's
    kernels alone)."""
    if router not in ROUTERS:
        raise SchedulingError(f"--router must be one of {', '.join(ROUTERS)}, got {router!r}.")
    for request in requests:
        schedulers[0].check_request(request, max_model_len)
    closed = concurrency is not None
    if closed and concurrency < 1:
        raise SchedulingError(f"--concurrency must be a positive number of clients, got {concurrency}.")
    if closed:
        queue = sorted(requests, key=lambda r: r.id)
        free = [0.0] * min(concurrency, len(queue))  # a heap: when each client is free to send
    else:
        sequences = [Sequence(r) for r in sorted(requests, key=lambda r: (r.arrival_s, r.id))]
    replicas = [Replica(s, step_seconds, record, decode_run, host) for s in schedulers]
    issued, left, turn, total = 0, len(requests), 0, len(requests)
    while left:
        if closed:
            arrival = free[0] if issued < total and free else None
        else:
            arrival = sequences[issued].request.arrival_s if issued < total else None
        busy = [r for r in replicas if r.active()]
        replica = min(busy, key=lambda r: r.now) if busy else None
        if replica is None or (arrival is not None and arrival <= replica.now):
            if arrival is None:
                raise SchedulingError("the scheduler cannot run the requests left: the budgets are too small.")
            if router == "round-robin":
                target, turn = replicas[turn], (turn + 1) % len(replicas)
            else:
                target = min(replicas, key=lambda r: r.outstanding_tokens())
            if closed:
                heapq.heappop(free)
                sequence = Sequence(replace(queue[issued], arrival_s=arrival))
            else:
                sequence = sequences[issued]
            target.add(sequence, arrival)
            issued += 1
            continue
        horizon = arrival
        if closed and len(busy) > 1:
            others = min(r.now for r in busy if r is not replica)
            horizon = others if horizon is None else min(horizon, others)
        done = replica.step(horizon)
        left -= done
        if closed:
            for _ in range(done):  # every sequence a step finishes ends at the step's end
                heapq.heappush(free, replica.now)
    return [r.timeline for r in replicas]


STEADY_STEPS = 64  # the most steps advanced at once


def _steady_steps(scheduler: Scheduler, decode_run: Any, now: float, arrival: float | None,
                  timeline: Timeline, record: bool, pace: float = 0.0,
                  host: Any = None) -> tuple[float, int, float] | None:
    """Every running sequence decoding and none waiting: run the steps before one finishes or a
    request arrives, all at once. A step in which a sequence needs a new block is one of them
    while the free blocks cover every such block of the run (then each step's schedule() would
    give each its block, in running order, and preempt nothing: the blocks are taken here at the
    steps they are needed). With layer groups (a Paging, which also frees blocks that leave the
    window) or a prefix to register (which schedule() does), the run stops before a sequence
    needs a block instead. (Orca reserves every block at admission: its runs never need one.)
    With requests waiting, it runs while max_num_seqs are running (none is admitted before one
    finishes, which ends the run). pace: the replica's last step's seconds (0: none yet). None
    if fewer than 2 qualify. host: the engine's host time, each step a decision (single-step runs)."""
    import numpy as np

    running = scheduler.running
    if not running or len(running) > scheduler.max_batched_tokens:
        return None
    if running[-1].known - running[-1].computed != 1:  # the newest admitted still prefills (often): no run
        return None
    pool = scheduler.pool
    size, paging = pool.block_size, pool.paging
    crossing = paging is None and not scheduler.unregistered
    steps = STEADY_STEPS
    for s in running:
        if s.known - s.computed != 1:
            return None
        steps = min(steps, s.output - s.generated)
        if not crossing:
            room = s.blocks * size - s.computed if paging is None else paging.room(s.computed, s.allocated, s.blocks)
            steps = min(steps, room)
    if crossing:
        steps = _steps_within_free_blocks(running, steps, size, pool.free)
    if steps < 2:
        return None
    keys = np.asarray([s.computed + 1 for s in running], dtype=np.int64)
    starts, ends, times = [], [], []  # each step's start, end and seconds, the clock added to step by step
    while len(ends) < steps and not (ends and arrival is not None and now >= arrival):
        # An arrival often ends the run early: the steps' times are computed as far as it at the
        # last step's pace, then again if it is not reached (a step's time is the same however
        # many are computed together: StepTime.decode_run; the pace only saves work).
        ran, count = len(ends), steps - len(ends)
        if arrival is not None and pace > 0:
            count = min(count, max(2, math.ceil((arrival - now) / pace) + 1))
        chunk = decode_run(keys + ran, count)
        chunk = (chunk if host is None else host.step(chunk, len(running))).tolist()
        for seconds in chunk:
            if ends and arrival is not None and now >= arrival:
                break
            starts.append(now)
            times.append(seconds)
            now = now + seconds
            ends.append(now)
        pace = chunk[-1]
    ran = len(ends)
    entries, count = [(s.request.id, 1) for s in running], len(running)
    taken = [0] * ran  # blocks taken at each step's start
    # Each sequence emits a token a step (Replica.step's moves, `ran` steps at once); none can
    # finish before the last step run, since `steps` is at most any one's tokens left.
    finished = []
    for s in list(running):
        if crossing:
            first = s.blocks * size - s.computed  # the step at which it needs its next block
            for j in range(first, ran, size):
                taken[j] += 1
                s.blocks += 1
        s.computed += ran
        s.generated += ran
        s.known += ran
        s.token_times += ends
    free = pool.free
    pool.take(sum(taken))
    for s in list(running):
        if s.generated >= s.output:
            finished.append(s.request.id)
            scheduler.finished(s)
    if record:
        for j in range(ran):
            free -= taken[j]
            timeline.steps.append(Step(starts[j], times[j], list(entries), free,
                                       finished if j == ran - 1 else [], 0, count))
    return now, len(finished), times[-1]


def _steps_within_free_blocks(running: list[Sequence], steps: int, size: int, free: int) -> int:
    """The most decode steps, up to `steps`, whose new blocks (one each time a sequence's tokens
    pass its blocks) the `free` blocks cover."""
    if len(running) * -(-steps // size) <= free:  # none needs more than that many
        return steps

    def needed(count: int) -> int:
        return sum(max(0, -(-(s.computed + count) // size) - s.blocks) for s in running)
    if needed(steps) <= free:
        return steps
    low, high = 0, steps  # needed(low) <= free < needed(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if needed(middle) <= free else (low, middle)
    return low
