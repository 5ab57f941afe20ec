"""Hybrid sharding (FSDP2's HSDP, Layout.dp_shard): formula == measurement on torch 2.13's own
fully_shard over a 2-D (replicate, shard) DeviceMesh, on 4 gloo processes and on the fake process
group; the placement of its two groups in the time model; the refusals and the CLI.

The measured runs are validate/distributed/fsdp.py's (FsdpCase.replicate); the model equals them to
the byte for data-parallel rank 0 (the most loaded: it holds every padded row). By hand for TINY
(tests/distributed_cases.py) at a shard group of 2: the padded shard is 2 x 50 x 48 + 24 = 4,824
elements of the root and 5,832 of each of its 2 layers (FINDINGS 10.2), 16,488 elements, 65,952 bytes
in fp32, whatever the replicas; each step reduce-scatters 2 x 65,952 bytes over the shard group and
all-reduces the 65,952-byte shard over the replicas.
"""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset
from tests.distributed_cases import TINY

REFERENCE_FP32 = Workload(seq_len=8, batch=2, dtype="fp32", impl="reference", precision="pure")
SHARD_OF_TWO = 4 * (2 * 50 * 48 + 24 + 2 * 5832)  # fp32 bytes of the padded shard at a shard group of 2


def hsdp(dp: int, dp_shard: int, workload: Workload = REFERENCE_FP32) -> dict:
    layout = Layout(dp=dp, dp_shard=dp_shard, zero=3, framework="fsdp2", device="cpu")
    return ParallelEstimate(TINY, workload, layout).per_stage[0]


def assert_equal(rank: dict, measured: dict) -> None:
    """State and every collective's payload of one rank, model == measurement."""
    assert rank["weights"] == measured["state"]["parameters"]["storage"]
    assert rank["gradients"] == measured["state"]["gradients"]["storage"]
    assert rank["optimizer"] == measured["state"]["optimizer"]["elements"]
    forward, backward = measured["communication"]["forward"], measured["communication"]["backward"]
    assert rank["communication"] == {
        "dp": {"all_gather": forward["dp"]["all_gather"] + backward["dp"]["all_gather"],
               "reduce_scatter": backward["dp"]["reduce_scatter"]},
        "dp_replicate": {"all_reduce": backward["dp_replicate"]["all_reduce"]},
    }
    # one all-reduce of each group's gradient shard after its reduce-scatter (root and 2 layers)
    assert measured["calls"]["backward"]["dp_replicate"]["all_reduce"] == 3
    assert measured["calls"]["backward"]["dp"]["reduce_scatter"] == 3


@pytest.mark.slow
def test_hsdp_two_by_two_on_four_gloo_processes():
    """fully_shard over a (2, 2) mesh on 4 CPU processes, fp32 and bf16 (MixedPrecisionPolicy
    param_dtype bf16, reduce_dtype fp32): every rank's state and collectives."""
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_gloo, run_jobs

    jobs = [(measure_fsdp, FsdpCase(TINY, replicate=2, memory_tracker=False, mixed_precision=mixed))
            for mixed in (False, True)]
    by_rank = run_gloo(run_jobs, 4, jobs, timeout_s=300)
    fp32, bf16 = hsdp(4, 2), hsdp(4, 2, REFERENCE_FP32.replace(dtype="bf16"))
    assert_equal(fp32, by_rank[0][0])
    assert_equal(bf16, by_rank[0][1])
    assert fp32["weights"] == SHARD_OF_TWO
    assert fp32["communication"]["dp"]["reduce_scatter"] == 2 * SHARD_OF_TWO
    assert fp32["communication"]["dp_replicate"]["all_reduce"] == SHARD_OF_TWO  # fp32 in bf16 too
    assert bf16["communication"]["dp_replicate"]["all_reduce"] == SHARD_OF_TWO
    for rank in range(4):  # the collectives are the same on every rank (their payloads padded)
        for case in (0, 1):
            assert by_rank[rank][case]["communication"] == by_rank[0][case]["communication"]


@pytest.mark.parametrize("dp, replicas", [(8, 2), (8, 4), (12, 3)])
def test_hsdp_uneven_shards_on_the_fake_process_group(dp, replicas):
    """Shard groups of 4 (uneven rows) and 2, on the fake process group."""
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake

    measured = run_fake(measure_fsdp, dp, [0], FsdpCase(TINY, replicate=replicas, memory_tracker=False))[0]
    rank = hsdp(dp, dp // replicas)
    assert_equal(rank, measured)
    if dp // replicas == 2:
        assert rank["weights"] == SHARD_OF_TWO


def test_the_state_is_sharded_over_the_shard_group_only():
    """Llama-2-7B, fsdp2 ZeRO 3 on 128 ranks: dp_shard 8 holds what plain FSDP on 8 ranks holds,
    and the wire bytes of the shard group are those of 8 ranks; dp_shard = dp is plain FSDP."""
    cfg, workload = load_preset("llama2-7b"), Workload(seq_len=4096, batch=1, dtype="bf16", recompute="full")
    hybrid = ParallelEstimate(cfg, workload, Layout(dp=128, dp_shard=8, zero=3, framework="fsdp2"))
    eight = ParallelEstimate(cfg, workload, Layout(dp=8, zero=3, framework="fsdp2"))
    plain = ParallelEstimate(cfg, workload, Layout(dp=128, dp_shard=128, zero=3, framework="fsdp2"))
    assert plain.layout == Layout(dp=128, zero=3, framework="fsdp2")
    assert hybrid.per_rank == eight.per_rank
    assert hybrid.to_dict()["wire"]["dp"] == eight.to_dict()["wire"]["dp"]
    shard = hybrid.to_dict()["communication"]["dp"]["reduce_scatter"] // 8
    assert hybrid.to_dict()["wire"]["dp_replicate"] == {"all_reduce": round(shard * 2 * 15 / 16)}
    assert hybrid.to_dict()["layout"]["dp_replicate"] == 16
    assert "dp_shard" not in plain.to_dict()["layout"]


def test_the_shard_group_stays_in_a_node_and_the_replicas_cross_nodes():
    """Times with the one collectives model: the shard group of 8 (tp 1) within a node, the 16
    replicas one a node, a ring over 16 nodes; prefetch off, the step's data-parallel time is all
    exposed and is the sum of the three collectives."""
    from costmodel.collectives import collective_seconds, nccl_facts, within_node
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import Overlap, StepTime

    cfg, workload = load_preset("llama2-7b"), Workload(seq_len=4096, batch=1, dtype="bf16", recompute="full")
    hw = load_hardware("a100-80gb")
    estimate = ParallelEstimate(cfg, workload, Layout(dp=128, dp_shard=8, zero=3, framework="fsdp2"))
    talk = estimate.communication(estimate.stages[0])
    reduced = talk["dp_replicate"]["all_reduce"]
    inter = hw.link(128) * float(nccl_facts()["inter_node_efficiency"]["value"])
    # NCCL's ring over 16 nodes, one rank each: its 8.4 us base and 2 x 15 network steps of 14 us
    # (nccl_facts.json inter_node_latency) a call, one call per FSDP2 unit (32 layers and the root:
    # 33, costmodel/layout/communication.py data_parallel_calls); at these 51 MB a call its tree
    # (2 x 4 steps at .92 of the bandwidth) is slower.
    across = reduced * 2 * 15 / 16 / inter + 33 * (8.4e-6 + 2 * 15 * 14e-6)
    assert collective_seconds(hw, "all_reduce", reduced, 16, 128, calls=33) == pytest.approx(across, rel=1e-12)
    # in the node: 65 all-gathers (33 forward, 32 again in backward) and 33 reduce-scatters
    inside = within_node(hw, "all_gather", talk["dp"]["all_gather"], 8, calls=65) \
        + within_node(hw, "reduce_scatter", talk["dp"]["reduce_scatter"], 8, calls=33)
    step = StepTime(estimate, hw, overlap=Overlap(prefetch=False)).step()
    assert step["exposed_communication_seconds"]["dp"] == pytest.approx(inside + across, rel=1e-9)


@pytest.mark.parametrize("layout, message", [
    (dict(dp=8, dp_shard=3, framework="fsdp2", zero=3), "must divide dp = 8"),
    (dict(dp=8, dp_shard=1, framework="fsdp2", zero=3), "shards nothing"),
    (dict(dp=8, dp_shard=0, framework="fsdp2", zero=3), "positive integer"),
    (dict(dp=8, dp_shard=4, zero=3), "MiCS"),
    (dict(dp=8, dp_shard=4, framework="megatron", zero=1), "partial distributed optimizer"),
])
def test_refusals(layout, message):
    with pytest.raises(ConfigError, match=message):
        Layout(**layout)


def test_cli_takes_dp_shard_and_refuses_bad_values_in_one_line(capsys):
    base = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "16", "--train",
            "--seq-len", "4096", "--recompute", "full", "--framework", "fsdp2", "--zero", "3", "--json"]
    assert cli.main(base + ["--dp-shard", "8"]) == 0
    import json

    layout = json.loads(capsys.readouterr().out)["parallel"]["layout"]
    assert (layout["dp_shard"], layout["dp_replicate"]) == (8, 2)
    assert cli.main(base + ["--dp-shard", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dp-shard 3 must divide dp = 16" in err
    serve = ["simulate", "--model", "llama2-7b", "--gpus", "16", "--dp-shard", "8"]
    assert cli.main(serve) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dp-shard: training layout options, read only with --train" in err


def test_a_published_run_can_state_hybrid_sharding():
    """reports/published_runs.train_setup passes a run's (or its source's) dp_shard to the Layout,
    as fms-fsdp's HSDP rows would state it (FINDINGS, hybrid sharding): shards of 8 on 128 ranks."""
    from reports.published_runs import train_setup

    source = {"hardware": "a100-80gb", "dtype": "bf16", "attention": "flash", "impl": "hf",
              "framework": "fsdp2", "zero": 3, "dp_shard": 8}
    run = {"model": "llama2-7b", "tp": 1, "pp": 1, "dp": 128, "seq_len": 4096, "global_batch": 256,
           "micro_batch": 2}
    estimate, _, _ = train_setup(run, source)
    assert (estimate.layout.shard_ranks, estimate.layout.replicas) == (8, 16)
    assert "dp_replicate" in estimate.communication(estimate.stages[0])
    estimate, _, _ = train_setup({**run, "dp_shard": 128}, source)  # the run's own value first
    assert estimate.layout.replicas == 1


def test_plan_keeps_the_shard_group_in_every_layout(capsys):
    import json

    args = ["plan", "--model", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "128", "--seq-len", "4096",
            "--global-batch", "512", "--tp", "1", "--pp", "1", "--dp-shard", "8", "--json"]
    assert cli.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["feasible"]
    for entry in result["feasible"]:
        assert (entry["layout"]["framework"], entry["layout"]["dp_shard"]) == ("fsdp2", 8)
    assert cli.main(args[:-1] + ["--framework", "deepspeed"]) == 2
    assert "MiCS" in capsys.readouterr().err


def test_plan_refuses_dp_shard_with_another_framework_before_any_search(capsys):
    """Review: `plan --gpus 8 --dp-shard 4 --framework deepspeed` listed deepspeed layouts whose dp
    was 4 (dp_shard = dp is plain sharding), though the help says the option is FSDP2's only."""
    code = cli.main(["plan", "--model", "llama2-7b", "--gpus", "8", "--dp-shard", "4", "--framework", "deepspeed"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "modelled as FSDP2's HSDP" in err and "MiCS" in err
