"""DeepSpeed's pipeline engine of 2022 as the "deepspeed" framework runs it (issue 18, MT-NLG and
BLOOM): partitioned sends with their metas and the output gathered again before backward
(deepspeed/runtime/pipe/engine.py at v0.6.5), the gradients reduced after the last backward, and
in bf16 the BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py), each checked in exact bytes on
Narayanan et al.'s 310.1B row (tp 8, pp 16, two virtual stages a rank, 144 micro-batches) and on
BLOOM's row (tp 4, pp 12, dp 8, 128 micro-batches of two 2,048-token sequences, bf16)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from costmodel.hardware import load_hardware
from costmodel.layout import ParallelEstimate
from costmodel.layout.time import StepTime
from costmodel.precision import bf16_optimizer_microbatch_bytes, bf16_optimizer_step_bytes
from reports.published_runs import narayanan_runs, train_setup

BOUNDARY_310B = 2 * 2048 * 16384  # fp16 bytes of one micro-batch's hidden states
INTER = 25e9 * 0.73  # a100-80gb's NIC at NCCL's inter-node efficiency (tests/test_pipeline_time.py)
LATENCY = 1e-5
A100_ALL_REDUCE_BUSBW_64MIB = 171.54e9
H = 14336  # BLOOM's hidden size
BLOOM_LAYER = 3 * H * H + 7 * H // 4 + 6 * H  # a tp-4 rank's share of one layer: 616,673,792


def _deepspeed_310b() -> ParallelEstimate:
    row, cfg, workload, layout, _ = next(run for run in narayanan_runs() if run[0][0] == 310.1)
    return ParallelEstimate(cfg, workload, dataclasses.replace(layout, framework="deepspeed"))


def _bloom() -> tuple[ParallelEstimate, StepTime]:
    data = json.loads((Path(__file__).resolve().parents[1] / "costmodel" / "published_runs.json").read_text())
    run = next(r for r in data["runs"] if r["id"] == "bloom 176b 384 GPUs")
    estimate, hardware, options = train_setup(run, data["sources"]["bloom"])
    return estimate, StepTime(estimate, hardware, autocast=options["autocast"])


def test_the_partitioned_sends_their_metas_and_the_regathered_outputs():
    """The last rank runs stages 15 and 31: 3 crossings (15 forward, 15 and 31 backward), each a
    1/8 partition beside a meta of 7 + 8 longs (rank 3, the sizes [2048, 1, 16384], 8 parts, the
    rank, 9 offsets: 120 bytes); one output (stage 15's) gathered again before its backward. An
    inner rank (stages 1 and 17) sends 4, two of them forward."""
    estimate = _deepspeed_310b()
    last, inner = estimate.stages[15], estimate.stages[1]
    assert estimate.pipeline_exchange(last) == (3, BOUNDARY_310B // 8, BOUNDARY_310B)
    assert estimate.pipeline_extras(last) == (3, 120, 1)
    assert estimate.pipeline_extras(inner) == (4, 120, 2)
    communication = estimate.communication(last)
    assert communication["pp"]["send"] == 144 * 3 * (8_388_608 + 120)
    assert communication["tp"]["all_gather"] == 144 * (3 + 1) * BOUNDARY_310B  # no sequence parallelism
    # under sequence parallelism the boundary is the rank's shard: nothing partitioned, nothing extra
    sp = ParallelEstimate(estimate.cfg, estimate.workload, dataclasses.replace(estimate.layout, sp=True))
    assert sp.pipeline_extras(sp.stages[15]) == (0, 0, 0)


def test_the_deepspeed_pipeline_exchange_seconds():
    """3 partitions and 3 metas over InfiniBand, a latency each; 4 all-gathers of 64 MiB in the node."""
    time = StepTime(_deepspeed_310b(), load_hardware("a100-80gb"))
    sends = (3 * BOUNDARY_310B / 8 + 3 * 120) / INTER + 6 * LATENCY
    gathers = 4 * BOUNDARY_310B * 7 / 8 / A100_ALL_REDUCE_BUSBW_64MIB
    assert time.pipeline(time.estimate.stages[15]) == pytest.approx(sends + gathers, rel=1e-12)


def test_the_pipeline_engine_overlaps_no_gradient_reduction():
    time = StepTime(_deepspeed_310b(), load_hardware("a100-80gb"))
    stage = time.estimate.stages[15]
    exposed, hidden = time.data_parallel_split(stage, compute=1e3)  # however much compute there is
    assert hidden == 0.0 and exposed > 0.0
    megatron = StepTime(ParallelEstimate(time.estimate.cfg, time.estimate.workload,
                                         dataclasses.replace(time.estimate.layout, framework="megatron")),
                        load_hardware("a100-80gb"))
    # Megatron's interleaved schedule reduces each model chunk after its last backward, under the
    # backwards left (layout/dp_overlap.py): only the last chunk's (chunk 0's, half the layers at v 2)
    # waits at the step's end, so however much compute there is about half stays exposed
    mega_exposed, mega_hidden = megatron.data_parallel_split(stage, compute=1e3)
    assert 0.45 * exposed < mega_exposed < 0.5 * exposed and mega_hidden > 0.5 * exposed
    assert mega_exposed + mega_hidden == pytest.approx(exposed, rel=2e-3)  # the same bytes, by chunk


def test_bf16_optimizer_bytes_per_parameter():
    """update_hp_grads: lp.grad.to(fp32) (read 2, write 4) and hp_grad.add_ (read 4 + 4, write 4);
    once a step: cast to bf16 (4 + 2), average (2 + 2), copy back (2 + 4), norm (4), zero (4)."""
    assert bf16_optimizer_microbatch_bytes(2) == 18
    assert bf16_optimizer_step_bytes(2) == 24


def test_bloom_runs_the_bf16_optimizer():
    estimate, time = _bloom()
    assert estimate.runs_bf16_optimizer and estimate.layout.microbatches == 128
    first, inner = estimate.stages[0], estimate.stages[1]
    assert estimate.on_stage(inner, "params") == 6 * BLOOM_LAYER == 3_700_042_752
    # the whole fp32 gradient all-reduced in bf16, then the bf16 shards gathered (ZeRO-1's shapes)
    assert estimate.communication(inner)["dp"] == {"all_reduce": 2 * 3_700_042_752, "all_gather": 2 * 3_700_042_752}
    # the tied embedding's fp32 gradient: 250,880 / 4 rows of 14,336
    assert estimate.tied_embedding_gradient(first) == 4 * 62_720 * H == 3_596_615_680
    bandwidth = time.bytes_per_s
    assert time.microbatch_accumulation(inner) == pytest.approx(18 * 3_700_042_752 / bandwidth, rel=1e-12)
    assert time.stage(inner)["accumulation_microbatch"] == time.microbatch_accumulation(inner)
    # the partitioned sends: 1/4 of 2 x 2,048 x 14,336 bf16 elements, metas of 7 + 4 longs
    assert estimate.pipeline_exchange(inner) == (2, 117_440_512 // 4, 117_440_512)
    assert estimate.pipeline_extras(inner) == (2, 88, 1)


def test_the_bf16_optimizer_is_deepspeeds_bf16_pipeline_only():
    estimate, _ = _bloom()
    for change in ({"framework": "megatron"}, {"pp": 1, "stage_layers": None, "dp": 96}):
        other = ParallelEstimate(estimate.cfg, estimate.workload, dataclasses.replace(estimate.layout, **change))
        assert not other.runs_bf16_optimizer
    fp16 = ParallelEstimate(estimate.cfg, dataclasses.replace(estimate.workload, dtype="fp16"), estimate.layout)
    assert not fp16.runs_bf16_optimizer


def test_the_train_schedule_replayed_is_1f1b():
    """validate/deepspeed_schedule.py: stage 1 of 4 with 3 micro-batches as DeepSpeed v0.6.5's
    TrainSchedule(micro_batches=3, stages=4, stage_id=1).steps() yields it (its buffer ids are the
    micro-batches here: 3 buffers), and the replay of every stage at free sends takes exactly
    1F1B's (m + p - 1)(f + b), the bubble the layout model gives DeepSpeed's pipeline."""
    from validate.deepspeed_schedule import instructions, replay

    assert instructions(1, 4, 3) == [
        ("recv_activation", 0), ("forward", 0), ("send_activation", 0), ("recv_activation", 1), ("forward", 1),
        ("send_activation", 1), ("recv_activation", 2), ("forward", 2), ("send_activation", 2), ("recv_grad", 0),
        ("backward", 0), ("send_grad", 0), ("recv_grad", 1), ("backward", 1), ("send_grad", 1), ("recv_grad", 2),
        ("backward", 2), ("send_grad", 2)]
    for stages, microbatches in ((35, 240), (35, 160), (12, 128), (5, 3), (2, 1)):
        for forward, backward in ((1.0, 3.0), (1.0, 2.0)):
            assert replay(stages, microbatches, forward, backward, 0.0) == \
                (microbatches + stages - 1) * (forward + backward)
    # blocking sends, one after another, cost more than two exposed sends a micro-batch
    blocking = replay(12, 128, 1.0, 3.0, 0.05)
    assert blocking == pytest.approx(582.4) and blocking > (128 + 11) * (4 + 2 * 0.05)


def test_the_bf16_optimizer_holds_the_whole_gradient_in_fp32():
    """bf16_optimizer.py (v0.6.5) _setup_for_real_optimizer: fp32_groups_gradients_flat is
    torch.zeros_like(bf16_groups_flat[i], dtype=fp32), the rank's whole (padded) flat, beside the
    bf16 gradients; the optimizer state stays sharded over the 8 replicas."""
    estimate, _ = _bloom()
    inner = estimate.stages[1]
    params = 3_700_042_752  # a multiple of 8: no padding
    state = estimate.state(inner)
    assert state["gradients"] == 2 * params + 4 * params == 22_200_256_512
    assert state["optimizer"] == 12 * params // 8
    megatron = ParallelEstimate(estimate.cfg, estimate.workload, dataclasses.replace(estimate.layout, framework="megatron"))
    assert not megatron.runs_bf16_optimizer
