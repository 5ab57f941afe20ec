"""The event loop's steady-decoding shortcut (engine._steady_steps) where its runs pass block
boundaries and where requests wait behind a full max_num_seqs: the same schedule, free blocks,
preemptions and token times, bit for bit, as one step at a time."""

from __future__ import annotations

import pytest

import costmodel
from costmodel.hardware import load_hardware
from costmodel.serving.replica import build_replica
from costmodel.serving.engine import _steps_within_free_blocks, simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.scheduler_state import Sequence
from costmodel.serving.workload import Lengths, Request, poisson


@pytest.mark.parametrize("scheduler", ["vllm", "sarathi", "orca", "vllm-v0"])
@pytest.mark.parametrize("num_blocks, seqs", [(4000, 12), (260, 12), (260, 256)])
def test_steady_runs_over_blocks_and_full_batches_are_the_same_schedule(scheduler: str, num_blocks: int,
                                                                        seqs: int) -> None:
    cfg = costmodel.load_model("llama3-8b")
    replica, step, _ = build_replica(cfg, load_hardware("h100-sxm"), scheduler=scheduler, num_blocks=num_blocks)
    cls, blocks, size, _, tokens = replica
    chosen = poisson(30, 200, Lengths.parse("uniform:16:1024"), Lengths.parse("uniform:1:300"), seed=7)
    runs = []

    def counted(keys, steps):
        runs.append(steps)
        return step.decode_run(keys, steps)
    one = simulate(chosen, cls(BlockPool(blocks, size), seqs, tokens), step.seconds, 8192)
    fast = simulate(chosen, cls(BlockPool(blocks, size), seqs, tokens), step.seconds, 8192, True, counted)
    assert fast.schedule() == one.schedule()
    assert [(s.start_s, s.seconds, s.preempted) for s in fast.steps] == \
        [(s.start_s, s.seconds, s.preempted) for s in one.steps]
    assert [s.token_times for s in fast.sequences] == [s.token_times for s in one.sequences]
    assert [s.preemptions for s in fast.sequences] == [s.preemptions for s in one.sequences]
    assert runs  # the shortcut ran (steps computed together), over a quarter of the steps with room
    if num_blocks == 4000:
        assert sum(runs) > len(one.steps) // 4
    if num_blocks == 260 and scheduler != "orca":  # the small cache preempts (orca reserves instead)
        assert sum(s.preemptions for s in one.sequences) > 0


def test_steps_within_free_blocks() -> None:
    """Blocks of 16 tokens: a sequence at 30 computed tokens in 2 blocks needs its 3rd at the 3rd
    step (reaching 33 tokens), its 4th at the 19th; one at 16 in 1 block needs one at once."""
    first, second = Sequence(Request(0, 0.0, 30, 100)), Sequence(Request(1, 0.0, 16, 100))
    first.computed, first.blocks = 30, 2
    second.computed, second.blocks = 16, 1
    running = [first, second]
    assert _steps_within_free_blocks(running, 64, 16, 0) == 0
    assert _steps_within_free_blocks(running, 64, 16, 1) == 2  # second's block at once; first's 3rd waits
    assert _steps_within_free_blocks(running, 64, 16, 2) == 16  # second's next one at step 17
    assert _steps_within_free_blocks(running, 64, 16, 3) == 18
    assert _steps_within_free_blocks(running, 64, 16, 4) == 32
    assert _steps_within_free_blocks(running, 20, 16, 100) == 20
