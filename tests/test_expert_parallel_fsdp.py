"""Expert parallelism under FSDP2 as torchtitan runs it (costmodel/layout/experts.py): the routed
experts fully_shard over the dp / ep ranks that hold them, on dim 0 or (dp / ep x ep > E) dim 1,
the rest of the model over dp. Expected numbers are hand-computed from torchtitan's rule
(torchtitan/models/llama4/infra/parallelize.py apply_fsdp, the dp_shard_mod_ep mesh) and FSDP2's
padding (each rank's shard of a dim of size s over r ranks is ceil(s / r) rows, rank 0 the fullest)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import Workload
from costmodel.layout import Layout
from costmodel.layout.rank import ParallelEstimate
from costmodel.presets import load_preset

MIXTRAL_EXPERT = 3 * 4096 * 14336  # one SwiGLU expert of Mixtral-8x7B (d 4096, d_x 14336)
V2_LITE_EXPERT = 3 * 2048 * 1408  # one routed expert of DeepSeek-V2-Lite (d 2048, d_x 1408)


def parallel(name: str, workload: Workload, **layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset(name), workload, Layout(framework="fsdp2", zero=3, **layout))


def test_fsdp2_experts_shard_on_dim_1_where_dp_exceeds_the_experts():
    """Mixtral-8x7B on dp 16, ep 8: each rank holds 1 of the 8 experts a layer, sharded over the
    2 ranks holding it; 2 x 8 > 8 experts, so on dim 1: w1, w3 by 14336 / 2 of their rows, w2 by
    4096 / 2. Without ep, FSDP2 shards the (8, ...) tensors on dim 0 over 16 ranks: rank 0 holds
    one whole expert a layer. fsdp2 keeps 4 + 4 + 8 bytes a parameter (fp32 weights, gradients,
    AdamW's moments); the rest of the model is the same in both."""
    workload = Workload(seq_len=8)
    ep = parallel("mixtral-8x7b", workload, dp=16, ep=8)
    plain = parallel("mixtral-8x7b", workload, dp=16)
    sharded = 2 * 7168 * 4096 + 2048 * 14336
    for name, width in (("weights", 4), ("gradients", 4), ("optimizer", 8)):
        assert plain.per_rank[name] - ep.per_rank[name] == width * 32 * (MIXTRAL_EXPERT - sharded)
    # The experts' gathers and reduce-scatters run over the 2 ranks, per micro-batch: forward and
    # backward all-gathers in bf16 (every layer is resharded after forward), a reduce-scatter in fp32.
    comm = ep.to_dict()["communication"]
    assert comm["edp"] == {"all_gather": 2 * 2 * 2 * 32 * sharded, "reduce_scatter": 4 * 2 * 32 * sharded}


def test_fsdp2_experts_shard_on_dim_0_within_the_expert_group():
    """DeepSeek-V2-Lite (64 experts, 26 MoE layers after one dense) on dp 24, ep 8: 8 experts a
    rank over 3 ranks, 3 x 8 <= 64 so on dim 0: ceil(8 / 3) = 3 experts a layer on rank 0, as many
    as ceil(64 / 24) without ep, so the state is the same; the experts' collectives leave the dp
    group (24 ranks gathering 3 experts a layer each) for the 3-rank group."""
    workload = Workload(seq_len=8)
    ep = parallel("deepseek-v2-lite", workload, dp=24, ep=8)
    plain = parallel("deepseek-v2-lite", workload, dp=24)
    assert ep.per_rank["weights"] == plain.per_rank["weights"]
    experts = 26 * 3 * V2_LITE_EXPERT
    comm, before = ep.to_dict()["communication"], plain.to_dict()["communication"]
    assert comm["edp"] == {"all_gather": 2 * 2 * 3 * experts, "reduce_scatter": 4 * 3 * experts}
    assert before["dp"]["all_gather"] - comm["dp"]["all_gather"] == 2 * 2 * 24 * experts
    assert before["dp"]["reduce_scatter"] - comm["dp"]["reduce_scatter"] == 4 * 24 * experts


def test_fsdp2_gathers_a_layer_with_its_own_experts_only():
    """Mixtral-8x7B on dp 16: FSDP2's buffers hold the layer it computes twice over (its gathered
    parameters in bf16, unsharded and in the all-gather's buffer) and the fp32 reduce-scatter
    buffer: 2 + 2 + 4 bytes an element. Without ep the 16 ranks gather 16 rows of each (8, ...)
    expert tensor (8 experts, padded to 16 whole ones); with ep 8 the 2 ranks of a group gather
    their one expert (dim 1, 2 x 8 > 8)."""
    workload = Workload(seq_len=8)
    ep = parallel("mixtral-8x7b", workload, dp=16, ep=8)
    plain = parallel("mixtral-8x7b", workload, dp=16)
    assert plain.per_rank["buffers"] - ep.per_rank["buffers"] == (2 + 2 + 4) * (16 - 1) * MIXTRAL_EXPERT


def test_fsdp2_and_megatron_exchange_the_same_tokens():
    """The all-to-all is the token exchange (torchtitan's pattern, measured in
    validate/distributed/experts.py): the framework does not change it."""
    workload = Workload(seq_len=64)
    fsdp = parallel("mixtral-8x7b", workload, dp=16, ep=8)
    megatron = ParallelEstimate(load_preset("mixtral-8x7b"), workload,
                                Layout(dp=16, ep=8, zero=1, framework="megatron"))
    assert fsdp.to_dict()["communication"]["ep"] == megatron.to_dict()["communication"]["ep"]
    assert fsdp.to_dict()["communication"]["ep"] == {"all_to_all": 32 * (8 * 8 + 4 * 64 * 2 * 2 * 4096)}


def test_plan_tries_expert_parallel_sizes_under_fsdp2():
    from costmodel.hardware import load_hardware
    from costmodel.layout.plan import plan_training

    moe = plan_training(load_preset("mixtral-8x7b"), load_hardware("h100-sxm"), 16, 4096, 64,
                        Workload(seq_len=4096), {"tp": 1, "pp": 1, "recompute": "full", "batch": 1,
                                                 "framework": "fsdp2", "zero": 3})
    entries = moe["feasible"] + moe["infeasible"]
    assert {e["layout"]["ep"] for e in entries} == {1, 2, 4, 8}


@pytest.mark.parametrize("args, words", [
    (["--model", "mixtral-8x7b", "--dp", "24", "--ep", "8", "--framework", "fsdp2", "--zero", "3"],
     "refuses uneven dim-1 shards: dp / ep = 3 must divide"),
    (["--model", "mixtral-8x7b", "--dp", "4", "--ep", "2", "--framework", "deepspeed", "--zero", "3"],
     "with ZeRO-3 is not modelled"),
])
def test_fsdp2_expert_parallel_refusals_are_one_line(args, words, capsys):
    assert cli.main(["estimate", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


@pytest.mark.slow
@pytest.mark.parametrize("experts, d_x, dim1", [(4, 24, False), (2, 24, True)])
def test_fsdp2_expert_parallel_bytes_equal_torchtitan_wrapping_on_gloo(experts, d_x, dim1):
    """Four gloo ranks, ep 2 (two expert groups of two ranks): the experts' all-gathers (forward,
    and again in backward: resharded) and reduce-scatter over their 2 ranks, and the token
    exchange, against the model at each EP group's measured load. 4 experts: 2 a rank, dim 0;
    2 experts: 1 a rank, 2 x 2 > 2 so dim 1, w1 and w3 by 24 / 2 rows, w2 by 16 / 2 (an odd
    width there raises in fully_shard: the model refuses it). About 15 s each."""
    from costmodel.hf import from_hf_config
    from validate.distributed.experts import ExpertCase
    from validate.distributed.fsdp_experts import measure_fsdp_experts
    from validate.distributed.launch import run_gloo

    case = ExpertCase(experts=experts, d_x=d_x)
    results = run_gloo(measure_fsdp_experts, 4, case, 2, timeout_s=240)
    assert {r["dim1"] for r in results} == {dim1}
    cfg = from_hf_config({"model_type": "mixtral", "hidden_size": case.d, "intermediate_size": d_x,
                          "num_local_experts": experts, "num_experts_per_tok": case.k, "num_hidden_layers": 1,
                          "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 32,
                          "max_position_embeddings": 64, "tie_word_embeddings": False}, "tiny-moe")

    def measured(r: dict, group: str, kind: str) -> int:
        return sum(c["payload"] for c in r["records"] if c["group"] == group and c["kind"] == kind)

    for group in (results[:2], results[2:]):  # each EP group routes its own tokens: its load
        workload = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", precision="pure",
                            expert_load=tuple(group[0]["counts"]))
        rank = ParallelEstimate(cfg, workload, Layout(dp=4, ep=2, framework="fsdp2", zero=3))
        model = rank.to_dict()["communication"]
        for r in group:
            assert measured(r, "edp", "all_gather") == model["edp"]["all_gather"]
            assert measured(r, "edp", "reduce_scatter") == model["edp"]["reduce_scatter"]
        assert max(measured(r, "ep", "all_to_all") for r in group) == model["ep"]["all_to_all"]
    if dim1:  # 1 expert a rank: w1, w3 (1, 12, 16) and w2 (1, 8, 24) shards, 4 bytes, 2 ranks
        assert model["edp"]["reduce_scatter"] == 4 * 2 * (2 * 12 * 16 + 8 * 24)


@pytest.mark.slow
def test_full_recomputation_runs_the_token_exchange_again_on_gloo():
    """The layer of validate/distributed/experts.py under torch.utils.checkpoint on 4 gloo ranks
    (one EP group): backward re-runs the forward's counts, dispatch and combine before its own
    two exchanges; the model's all-to-all under --recompute full equals the most loaded rank's
    (about 15 s)."""
    from costmodel.hf import from_hf_config
    from validate.distributed.experts import ExpertCase, measure_experts
    from validate.distributed.launch import run_gloo

    case = ExpertCase(checkpoint=True)
    results = run_gloo(measure_experts, 4, case, timeout_s=240)
    for r in results:
        assert [c["phase"] for c in r["records"]] == ["forward"] * 3 + ["backward"] * 5
    cfg = from_hf_config({"model_type": "mixtral", "hidden_size": case.d, "intermediate_size": case.d_x,
                          "num_local_experts": case.experts, "num_experts_per_tok": case.k, "num_hidden_layers": 1,
                          "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 32,
                          "max_position_embeddings": 64, "tie_word_embeddings": False}, "tiny-moe")
    workload = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", precision="pure",
                        expert_load=tuple(results[0]["counts"]), recompute="full")
    rank = ParallelEstimate(cfg, workload, Layout(dp=4, ep=4, framework="megatron"))
    measured = [sum(c["payload"] for c in r["records"] if c["kind"] == "all_to_all") for r in results]
    assert rank.to_dict()["communication"]["ep"]["all_to_all"] == max(measured)
    plain = ParallelEstimate(cfg, workload.replace(recompute="none"), Layout(dp=4, ep=4, framework="megatron"))
    assert rank.to_dict()["communication"]["ep"]["all_to_all"] > plain.to_dict()["communication"]["ep"]["all_to_all"]
