"""The event loop of one engine replica: arrivals, step start, step end.

Time advances by steps. At a step's start every request that has arrived joins the scheduler's
queue; the scheduler picks the step's mix; the step time model says how long it runs; at its
end each sequence whose known tokens are all computed emits a token (at the step's end), and a
sequence with all its output tokens finishes and frees its blocks. An idle replica jumps to the
next arrival. The schedule itself (which sequences, how many tokens, blocks in use, which finish)
is recorded step by step, so tests can compare it with a real engine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .schedulers import Scheduler, SchedulingError, Sequence, StaticScheduler
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
             max_model_len: int, record: bool = True, decode_run: Any = None) -> Timeline:
    """Run every request to completion; returns the timeline. decode_run(keys, steps), if given
    (StepTime.decode_run), lets steady decoding advance several steps per iteration: the same
    steps, each recorded, computed together."""
    import numpy as np

    for request in requests:
        scheduler.check_request(request, max_model_len)
    pending = sorted(requests, key=lambda r: (r.arrival_s, r.id))
    sequences = [Sequence(r) for r in pending]
    timeline = Timeline(sequences, num_blocks=scheduler.pool.num_blocks)
    static = isinstance(scheduler, StaticScheduler)
    now, next_arrival, left = 0.0, 0, len(sequences)
    while left:
        while next_arrival < len(sequences) and sequences[next_arrival].request.arrival_s <= now:
            scheduler.add(sequences[next_arrival])
            next_arrival += 1
        if scheduler.idle():
            now = max(now, sequences[next_arrival].request.arrival_s)
            continue
        if decode_run is not None and scheduler.steady_decode and not scheduler.waiting:
            arrival = sequences[next_arrival].request.arrival_s if next_arrival < len(sequences) else None
            advanced = _steady_steps(scheduler, decode_run, now, arrival, timeline, record)
            if advanced is not None:
                now, done = advanced
                left -= done
                continue
        before = scheduler.preempted_total
        batch = scheduler.schedule()
        free_blocks = scheduler.pool.free
        if not batch:
            if next_arrival < len(sequences):
                now = max(now, sequences[next_arrival].request.arrival_s)
                continue
            raise SchedulingError("the scheduler cannot run the requests left: the budgets are too small.")
        if static:
            query, keys = scheduler.padded(batch)
            emitting = sum(1 for s, q in batch if q and s.computed + q >= s.known)
        else:
            query, keys, emitting = [], [], 0
            for sequence, tokens in batch:
                reach = sequence.computed + tokens
                query.append(tokens)
                keys.append(reach)
                emitting += reach >= sequence.known
        seconds = float(step_seconds(np.asarray(query), np.asarray(keys), emitting))
        start, now = now, now + seconds
        finished = []
        for sequence, tokens in batch:
            if sequence.first_scheduled_s is None:
                sequence.first_scheduled_s = start
            computed = sequence.computed + tokens
            sequence.computed = computed
            if tokens and computed >= sequence.known:
                sequence.generated += 1
                sequence.known += 1
                sequence.token_times.append(now)
                if sequence.generated >= sequence.output:
                    finished.append(sequence.request.id)
                    scheduler.finished(sequence)
                    left -= 1
        if record:
            timeline.steps.append(Step(start, seconds, [(s.request.id, q) for s, q in batch],
                                       free_blocks, finished, scheduler.preempted_total - before,
                                       int(sum(query))))
    return timeline



STEADY_STEPS = 64  # the most steps advanced at once


def _steady_steps(scheduler: Scheduler, decode_run: Any, now: float, arrival: float | None,
                  timeline: Timeline, record: bool) -> tuple[float, int] | None:
    """Every running sequence decoding and none waiting: run the steps before one finishes,
    one needs a new block, or a request arrives, all at once. None if fewer than 2 qualify."""
    import numpy as np

    running = scheduler.running
    if not running or len(running) > scheduler.max_batched_tokens:
        return None
    size = scheduler.pool.block_size
    steps = STEADY_STEPS
    for s in running:
        if s.known - s.computed != 1:
            return None
        steps = min(steps, s.output - s.generated, s.blocks * size - s.computed)
    if steps < 2:
        return None
    times = decode_run([s.computed + 1 for s in running], steps)
    entries = [(s.request.id, 1) for s in running]
    free = scheduler.pool.free
    count = len(running)
    done = 0
    for j in range(steps):
        if j and arrival is not None and now >= arrival:
            break
        seconds = float(times[j])
        start, now = now, now + seconds
        finished = []
        for s in list(running):
            s.computed += 1
            s.generated += 1
            s.known += 1
            s.token_times.append(now)
            if s.generated >= s.output:
                finished.append(s.request.id)
                scheduler.finished(s)
                done += 1
        if record:
            timeline.steps.append(Step(start, seconds, list(entries), free, finished, 0, count))
    return now, done
