"""Context parallelism beside expert parallelism, as Megatron-Core's expert grid runs them
(costmodel/layout/experts.py, "Parallel folding ... and context parallelism"): the EP group drawn
from the tp x cp x dp ranks of a stage under ETP 1 (cp x dp at tp 1), each rank routing its own
n / cp / tp tokens. Exact per-rank integers for the odd model of tests/test_parallel_folding.py,
worked by hand from megatron/core/parallel_state.py (NVIDIA/Megatron-LM d98e8a64dd, lines 859-893:
expert_data_parallel_size = world_size // (etp x ep x pp), both grids in the order tp-cp-ep-dp-pp)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from tests.test_parallel_folding import FOLDED, _estimate, _odd_moe

#: tp 2 x cp 3 x dp 1 = 6 ranks a stage, EP 6 over all of them: ep divides tp x cp x dp = 6 and not
#: tp x dp = 2, so the EP group needs the context-parallel ranks.
CP_FOLDED = Layout(tp=2, sp=True, cp=3, dp=1, ep=6, etp=1, framework="megatron", zero=1, cp_rotate="ring")


def _cp_estimate(layout: Layout, seq_len: int = 36) -> ParallelEstimate:
    """36 tokens over cp 3: 12 a rank (chunks of 6, two a rank), 6 a rank at the MoE layer under SP."""
    workload = Workload(seq_len=seq_len, batch=1, dtype="bf16", impl="megatron", attention="flash")
    return ParallelEstimate(_odd_moe(), workload, layout)


def test_the_expert_grid_draws_ep_from_tp_cp_and_dp():
    """parallel_state.py: expert_data_parallel_size = world // (etp x ep x pp): 6 // 6 = 1 here;
    at dp 2 (12 ranks) 2; at tp 1 the same rule over cp x dp (6 ranks, EP 6: 1)."""
    assert (CP_FOLDED.expert_ranks, CP_FOLDED.expert_data_parallel, CP_FOLDED.ep_span) == (6, 1, 6)
    wider = Layout(tp=2, sp=True, cp=3, dp=2, ep=6, etp=1, framework="megatron", zero=1)
    assert (wider.expert_ranks, wider.expert_data_parallel) == (12, 2)
    plain = Layout(tp=1, cp=3, dp=2, ep=6, framework="megatron", zero=1)
    plain.check(_odd_moe())
    assert (plain.expert_ranks, plain.expert_data_parallel) == (6, 1)


def test_a_cp_folded_rank_routes_its_own_tokens():
    """Each rank routes the 12 / 2 = 6 SP tokens of its n / cp = 12 x top 2 = 12 slots a layer, and
    the all-to-all moves what FOLDED's rank moves at n = 12 without CP (tests/test_parallel_folding.py,
    12,384: 2 layers x (48 bytes of counts + 4 x 12 slots x 128 bytes)); E / ep = 1 expert a rank."""
    estimate = _cp_estimate(CP_FOLDED)
    key = next(iter(estimate.structure["layers"]))
    assert estimate.part(key, "routed_slots") == 12
    assert estimate.communication(estimate.stages[0])["ep"] == {"all_to_all": 2 * (48 + 4 * 12 * 128)} \
        == _estimate(FOLDED).communication(_estimate(FOLDED).stages[0])["ep"] == {"all_to_all": 12_384}
    assert estimate.experts()["experts_per_rank"] == 1


def test_a_cp_folded_ranks_activations_are_its_n_over_cp_tokens():
    """Bytes saved for backward on a rank: those of its 12 tokens (n / cp), as FOLDED's rank at n = 12
    keeps them: each layer 12,096 (the experts' 5,160 of its 12 slots among them), the embedding
    96, the head 3,170, the final norm's 1,536 and 768 outside the layers: 96 + 2 x 12,096 + 768 +
    1,536 + 3,170 = 29,762 (the attention keeps its own queries, keys and values and output, the
    gathered keys and values not: context.py)."""
    cp_rank, plain = _cp_estimate(CP_FOLDED), _estimate(FOLDED)
    assert cp_rank.part("layer.decoder", "saved") == plain.part("layer.decoder", "saved") == 12_096
    assert cp_rank.part("layer.decoder", "expert_saved") == 5_160
    assert cp_rank.activations(cp_rank.stages[0]) == plain.activations(plain.stages[0]) \
        == 96 + 2 * 12_096 + 768 + 1_536 + 3_170 == 29_762


def test_a_cp_folded_ranks_state_in_bytes():
    """The 29,824 parameters outside the experts (tests/test_parallel_folding.py) sharded over
    dp x cp = 3 (ZeRO-1: ceil 9,942); the experts 1 of 6 a rank, 2 x 4,608 = 9,216, over the one
    expert-data-parallel rank. Megatron's 2 + 4 + 12 bytes: weights 2 x 39,040, gradients
    4 x 39,040, optimizer 12 x (9,942 + 9,216)."""
    estimate = _cp_estimate(CP_FOLDED)
    assert estimate.state(estimate.stages[0]) == {"weights": 2 * 39_040, "gradients": 4 * 39_040,
                                                   "optimizer": 12 * (9_942 + 9_216)} \
        == {"weights": 78_080, "gradients": 156_160, "optimizer": 229_896}


def test_a_cp_folded_ranks_collectives_in_bytes():
    """One micro-batch. The key/value ring (context.py exchange, cp_rotate ring): the rank's keys and
    values 2 x 1 x (2 KV heads / tp 2) x 12 tokens x 16 x 2 bytes = 768, forward (cp - 1) x 768,
    backward (cp - 1) x 768 and, Transformer Engine's ring sending them in bf16 (v1.4
    AttnFuncWithCP.backward), (cp - 1) x 768 gradients: 4,608 a layer, 9,216 for two. The
    gradients: 3 x 9,942 fp32 reduce-scattered over dp x cp (119,304), none over the experts' single
    data-parallel rank. tp: the attention's SP collectives on the rank's 1 x 12 x 64 bf16 tensor
    (1,536 bytes), 6 reduce-scatters and 9 all-gathers, as FOLDED's at n = 12."""
    communication = _cp_estimate(CP_FOLDED).communication(_cp_estimate(CP_FOLDED).stages[0])
    assert communication["cp"] == {"send": 2 * (2 * 768 + 2 * 768 + 2 * 768)} == {"send": 9_216}
    assert communication["dp"]["reduce_scatter"] == 4 * 3 * 9_942 and "edp" not in communication
    assert (communication["tp"]["reduce_scatter"], communication["tp"]["all_gather"]) == (6 * 1_536, 9 * 1_536)


def test_the_experts_gradients_are_reduced_over_tp_cp_dp_over_ep():
    """At dp 2 (12 ranks, EP 6): expert_data_parallel 2, the rank's 9,216 expert parameters
    reduce-scattered in fp32 over those 2 (4 x 9,216 = 36,864 bytes, ZeRO-1's gather 2 x 9,216),
    the rest over dp x cp = 6 (ceil(29,824 / 6) = 4,971; 4 x 6 x 4,971 = 119,304)."""
    layout = Layout(tp=2, sp=True, cp=3, dp=2, ep=6, etp=1, framework="megatron", zero=1, cp_rotate="ring")
    estimate = _cp_estimate(layout)
    communication = estimate.communication(estimate.stages[0])
    assert communication["edp"] == {"reduce_scatter": 36_864, "all_gather": 18_432}
    assert communication["dp"]["reduce_scatter"] == 4 * 6 * 4_971 == 119_304
    assert estimate.state(estimate.stages[0])["optimizer"] == 12 * (4_971 + 9_216 // 2)


def test_the_time_model_places_the_groups_on_megatrons_grid():
    """Megatron-Core's order tp-cp-ep-dp-pp: the EP group ep neighbouring GPUs, the expert-data-
    parallel group striding over the tp x cp x dp = 12 of a stage, cp over tp x cp = 6."""
    from costmodel.layout.time import StepTime

    layout = Layout(tp=2, sp=True, cp=3, dp=2, ep=6, etp=1, framework="megatron", zero=1, cp_rotate="ring")
    model = StepTime(_cp_estimate(layout), load_hardware("h100-sxm"))
    assert (model.spans["ep"], model.spans["edp"], model.spans["cp"]) == (6, 12, 6)
    assert (model.worlds["ep"], model.worlds["edp"], model.worlds["cp"]) == (6, 2, 3)


@pytest.mark.parametrize("layout, words", [
    (Layout(tp=1, cp=2, dp=2, ep=2, framework="fsdp2", zero=3), "use --framework megatron, not fsdp2"),
    (Layout(tp=1, cp=2, dp=2, ep=2, framework="deepspeed", zero=1), "use --framework megatron, not deepspeed"),
    (Layout(tp=1, cp=2, dp=1, ep=3, framework="megatron", zero=1), "must divide cp x dp = 2 x 1"),
    (Layout(tp=2, sp=True, cp=2, dp=1, ep=3, etp=1, framework="megatron", zero=1),
     "must divide tp x cp x dp = 2 x 2 x 1"),
])
def test_refusals_name_the_grid(layout, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        layout.check(_odd_moe())


def test_a_cp_folded_layout_trains_from_the_command_line(capsys):
    """--cp with --etp 1 reaches the layout: Qwen3 30B-A3B at 16k on 32 GPUs, tp 2 x cp 4 x dp 4, EP 32
    (it divides tp x cp x dp = 32, not tp x dp = 8): 4 experts a rank, one rank holding each."""
    import json

    assert cli.main(["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--tp", "2", "--sp",
                     "--cp", "4", "--dp", "4", "--ep", "32", "--etp", "1", "--framework", "megatron", "--zero", "1",
                     "--seq-len", "16384", "--batch", "1", "--global-batch", "16", "--attention", "flash",
                     "--impl", "megatron", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parallel"]["experts"] == {**out["parallel"]["experts"], "experts_per_rank": 4, "expert_data_parallel": 1}
    assert out["parallel"]["layout"]["cp"] == 4 and out["parallel"]["layout"]["etp"] == 1


@pytest.mark.slow
def test_a_cp_folded_moe_layer_on_gloo_moves_what_the_model_says():
    """Four gloo ranks as tp 2 x cp 2 x dp 1, one EP group of 4 over all of them (ep divides
    tp x cp x dp = 4, not tp x dp = 2): each rank holds chunks c and 3 - c of its sequence of 20
    tokens (5 each), 10 tokens, and routes its SP shard of 5 (validate/distributed/experts.py,
    ExpertCase.cp). The model's layout at seq_len 20 gives each rank's expert bytes (E / ep = 1
    expert whole) and the most loaded rank's all-to-all with the measured tokens per expert as the
    load, as tests/test_parallel_folding.py checks without CP (about 35 s)."""
    from costmodel.hf import from_hf_config
    from validate.distributed.experts import ExpertCase, measure_experts
    from validate.distributed.launch import run_gloo

    case = ExpertCase(seq_len=20, tp=2, cp=2)
    results = run_gloo(measure_experts, 4, case, timeout_s=240)
    counts = tuple(results[0]["counts"])
    assert sum(counts) == 4 * case.batch * (case.seq_len // 4) * case.k  # each rank its 5 tokens a sequence
    tiny = dict(model_type="mixtral", hidden_size=16, intermediate_size=24, num_local_experts=4,
                num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                vocab_size=32, max_position_embeddings=64, tie_word_embeddings=False, sliding_window=None)
    cfg = from_hf_config(tiny, "tiny-moe")
    workload = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", precision="pure", expert_load=counts,
                        attention="sdpa")
    rank = ParallelEstimate(cfg, workload, Layout(tp=2, sp=True, cp=2, dp=1, ep=4, etp=1, framework="megatron"))
    key = next(k for k in rank.structure["layers"])
    assert {r["expert_bytes"] for r in results} == {4 * rank.part(key, "expert_params") // 4} == {4 * 3 * 16 * 24}
    measured = [sum(c["payload"] for c in r["records"] if c["kind"] == "all_to_all") for r in results]
    assert rank.to_dict()["communication"]["ep"]["all_to_all"] == max(measured)
    assert measured.index(max(measured)) == rank.load.rank
