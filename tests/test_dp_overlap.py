"""Megatron-Core's interleaved schedule and its data-parallel collectives, chunk by chunk
(costmodel/layout/dp_overlap.py, read from Megatron-LM's schedules.py at d98e8a64d): each
per-chunk figure below worked out by hand on a timeline in whole seconds, the end of the rank's
last backward at t = 0 (gradients) or its first forward at t = 0 (parameters)."""

import pytest

from costmodel.config import ConfigError
from costmodel.layout.dp_overlap import gather_exposure, gradient_exposure
from costmodel.layout.time import Overlap


def test_aligned_gradient_reduces_start_after_each_chunks_last_backward():
    """Three chunks, g = 2, one chunk-backward 1 s, reduce-scatters of 1, 3, 3 s (chunks 0, 1, 2).
    Rank 0: chunk 2's last backward ends at -4 (chunks 1 and 0 have 2 x 2 left): -4..-1; chunk 1's
    at -2, but the stream is busy to -1: -1..2, 2 s late; chunk 0's at 0: 2..3, 1 s late.
    Rank 1 launches each r = 1 backward later: chunk 2 -3..0, chunk 1 0..3 (3 s), chunk 0 3..4 (1 s).
    Rank 3 (r > k g for chunks 0 and 1: launched at the end): chunk 2 at -1: -1..2 (2 s), chunk 1
    2..5 (3 s), chunk 0 5..6 (1 s)."""
    reduce_s = [1.0, 3.0, 3.0]
    assert gradient_exposure(reduce_s, 1.0, 2, 0, aligned=True) == (1.0, 2.0, 0.0)
    assert gradient_exposure(reduce_s, 1.0, 2, 1, aligned=True) == (1.0, 3.0, 0.0)
    assert gradient_exposure(reduce_s, 1.0, 2, 3, aligned=True) == (1.0, 3.0, 2.0)


def test_unaligned_gradient_reduces_start_as_each_chunks_last_backward_ends():
    """NeMo 2.2 (no grad_sync_func): a chunk's one bucket starts as its last backward ends, on
    every rank (no r delay): 1, 3, 3 s give chunk 2 -4..-1, chunk 1 -1..2 (2 s), chunk 0 2..3 (1 s).
    Rank 0's chunk 0, bucketed, starts under its own last backward: 2, 1, 1 s give chunk 0 -1..1
    (1 s) on rank 0, 0..2 (2 s) on rank 1 (chunks 2 and 1 done by -3 and -1)."""
    for rank in (0, 1, 3):
        assert gradient_exposure([1.0, 3.0, 3.0], 1.0, 2, rank, aligned=False) == (1.0, 2.0, 0.0)
    assert gradient_exposure([2.0, 1.0, 1.0], 1.0, 2, 0, aligned=False) == (1.0, 0.0, 0.0)
    assert gradient_exposure([2.0, 1.0, 1.0], 1.0, 2, 1, aligned=False) == (2.0, 0.0, 0.0)
    assert gradient_exposure([2.0, 1.0, 1.0], 1.0, 2, 0, aligned=True) == (2.0, 0.0, 0.0)


def test_a_reduce_with_nothing_to_hide_under_is_exposed_whole():
    """No backward to hide under (Overlap.dp 0): every chunk's reduce runs after the compute."""
    assert gradient_exposure([1.0, 3.0, 3.0], 0.0, 2, 0, aligned=True) == (1.0, 3.0, 3.0)


def test_parameter_gathers_wait_at_each_chunks_first_forward():
    """Four chunks, g = 2, one chunk-forward 1 s, all-gathers of 1, 1, 3, 3 s. Rank 0: chunks 0 and
    1 dispatched at 0; chunk 0 ends at 1 (its first forward waits 1 s), chunk 1 at 2, needed at 3
    (steps 0, 1 from 1 to 3). Chunk 2 dispatched before step 2 (wall 3): 3..6, needed at step 4
    (wall 5): 1 s. Chunk 3 dispatched before step 4 (wall 5: the dispatch comes before that step's
    wait): 6..9, needed at step 6 (wall 8): 1 s.
    Rank 1 dispatches chunk j one step earlier ((j - 1) g - 1): chunk 2 at wall 2: 2..5, needed at
    5: none; chunk 3 at step 3 (wall 4): 5..8, needed at step 6 (wall 7): 1 s."""
    gather_s = [1.0, 1.0, 3.0, 3.0]
    assert gather_exposure(gather_s, 1.0, 2, 0) == (1.0, 0.0, 1.0, 1.0)
    assert gather_exposure(gather_s, 1.0, 2, 1) == (1.0, 0.0, 0.0, 1.0)


def test_a_gather_with_no_forward_to_hide_under_is_exposed_whole():
    assert gather_exposure([1.0, 1.0, 3.0, 3.0], 0.0, 2, 0) == (1.0, 1.0, 3.0, 3.0)


def test_each_chunk_holds_its_layers_and_the_rank_its_ends():
    """Nemotron-4 340B at TP 8, PP 4, VP 12 (the nemo-25.02 row): a layer per tensor-parallel rank
    holds (2 h^2 + 2 h kv + 2 h ffn) / 8 + 4 h = 431,824,896 parameters (h 18,432, kv 8 x 192,
    ffn 73,728; two LayerNorms with biases), a chunk two: 863,649,792; rank 0's chunk 0 adds the
    embedding 256,000 h / 8 = 589,824,000, rank 3's chunk 11 the output layer and the final
    LayerNorm (2 h = 36,864); the chunks add up to the stage."""
    import json

    from reports.published_runs import train_setup

    data = json.load(open("costmodel/published_runs.json"))
    run = next(r for r in data["runs"] if r["id"] == "nemo-25.02 nemotron-340b 128xb200")
    estimate, _, _ = train_setup(run, data["sources"]["nemo-25.02"])
    layer = (2 * 18432**2 + 2 * 18432 * 1536 + 2 * 18432 * 73728) // 8 + 4 * 18432
    assert layer == 431_824_896
    first, last = estimate.stages[0], estimate.stages[-1]
    assert estimate.on_chunks(first, "params") == (2 * layer + 589_824_000,) + (2 * layer,) * 11
    assert estimate.on_chunks(last, "params") == (2 * layer,) * 11 + (2 * layer + 589_824_000 + 36_864,)
    for stage in estimate.stages:
        assert sum(estimate.on_chunks(stage, "params")) == estimate.on_stage(stage, "params")


def test_the_step_prices_each_chunk_as_the_schedule_runs_it():
    """The row's step: rank 0's exposed data-parallel seconds are the chunks' reduce-scatters
    (unaligned, NeMo 2.2) and all-gathers, each chunk's payload its share of the rank's parameters
    (the gathers' of its bytes: the row gathers FP8 parameters, tests/test_fp8_params.py), under
    chunk-backwards of 2/3 and chunk-forwards of 1/3 of a micro-batch's compute over 12."""
    import json

    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    data = json.load(open("costmodel/published_runs.json"))
    run = next(r for r in data["runs"] if r["id"] == "nemo-25.02 nemotron-340b 128xb200")
    estimate, hardware, options = train_setup(run, data["sources"]["nemo-25.02"])
    timer = step_time(estimate, hardware, **options)
    stage = estimate.stages[0]
    compute = timer.stage(stage)["compute"]
    payload = estimate.communication(stage)["dp"]
    params = estimate.on_chunks(stage, "params")
    assert estimate.layout.fp8_param_gather  # nemo-25.02: bf16_with_fp8_mixed's fp8_params
    gathered = [2 * p - f for p, f in zip(params, estimate.on_chunks(stage, "fp8_params"))]
    reduce_s = [timer.collective("dp", "reduce_scatter", payload["reduce_scatter"] * p / sum(params)) for p in params]
    gather_s = [timer.collective("dp", "all_gather", payload["all_gather"] * b / sum(gathered)) for b in gathered]
    late = sum(gradient_exposure(reduce_s, 2 / 3 * compute / 12, 4, 0, aligned=False))
    waited = sum(gather_exposure(gather_s, compute / 3 / 12, 4, 0))
    exposed, hidden = timer.data_parallel_split(stage, compute)
    assert exposed == pytest.approx(late + waited, rel=1e-12)
    assert exposed + hidden == pytest.approx(sum(reduce_s) + sum(gather_s), rel=1e-12)
    # chunk 0 (with the embedding) goes last and waits whole both ways; fewer than half the
    # reduce-scatters and about two thirds of the gathers run exposed
    assert reduce_s[0] > reduce_s[1] and late < sum(reduce_s) / 2 and waited < sum(gather_s)


def test_align_grad_must_be_a_bool():
    with pytest.raises(ConfigError, match="align_grad must be true or false"):
        Overlap(align_grad=1)


def test_the_cli_moves_the_reduce_only_where_there_are_chunks(capsys):
    """--no-align-grad-reduce on an interleaved Megatron layout starts each chunk's reduce in its
    last backward (sooner than aligned: less exposed); elsewhere one error line, exit 2."""
    import json

    import cli

    base = ["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--train", "--tp", "2", "--pp", "4",
            "--dp", "2", "--framework", "megatron", "--zero", "1", "--global-batch", "16",
            "--param-gather-overlap", "1", "--overlap-grad-reduce", "--json"]
    interleaved = base + ["--schedule", "interleaved", "--virtual-stages", "2"]
    seconds = []
    for extra in ([], ["--no-align-grad-reduce"]):
        assert cli.main(interleaved + extra) == 0
        seconds.append(json.loads(capsys.readouterr().out)["step"]["exposed_communication_seconds"]["dp"])
    assert seconds[1] < seconds[0]
    assert cli.main(base + ["--no-align-grad-reduce"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --no-align-grad-reduce") and "(megatron, 1f1b)" in err[0]
