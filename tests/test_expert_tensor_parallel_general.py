"""Megatron-Core's expert tensor parallelism at any etp (wt42_etp): 1 < etp < tp and etp > tp (tp 1 included),
the experts' grid RankGenerator(tp=etp, ep, dp=tp x cp x dp // (etp x ep), pp) in the order tp-cp-ep-dp-pp
(megatron/core/parallel_state.py lines 693-714 at core_v0.12.0, NVIDIA/Megatron-LM 26f86a597f). The token
dispatcher is the same code whatever etp is (token_dispatcher.py MoEAlltoAllTokenDispatcher, tp_size =
expert_tensor_parallel_size): each rank routes its own sequence-parallel tokens, all-to-all over EP, then
gathers the etp ranks' received tokens over the expert-TP group and reduce-scatters them after fc2.
Exact per-rank integers for tests/test_parallel_folding.py's odd model, worked by hand below; the same
formulas measured on gloo: tests/test_expert_tensor_parallel_gloo.py."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout, ParallelEstimate

from tests.test_parallel_folding import _estimate, _odd_moe

#: 1 < etp < tp: tp 4 x dp 3 = 12 ranks, etp 2 x ep 3, expert_data_parallel_size 12 // 6 = 2.
NARROW = Layout(tp=4, sp=True, dp=3, ep=3, etp=2, framework="megatron", zero=1)
#: etp > tp = 1: dp 6, etp 2 x ep 3, expert_data_parallel_size 1 (no sequence parallelism at tp 1).
WIDE = Layout(tp=1, dp=6, ep=3, etp=2, framework="megatron", zero=1)
#: etp > tp > 1: tp 2 x dp 6, etp 4 x ep 3, expert_data_parallel_size 1.
WIDER = Layout(tp=2, sp=True, dp=6, ep=3, etp=4, framework="megatron", zero=1)


def _kv4() -> ParallelEstimate:
    """The odd model with 4 KV heads (tp 4 splits them) and vocabulary 512 (Megatron's padding to 128 tp: none)."""
    workload = Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash")
    return ParallelEstimate(_odd_moe().replace(name="odd-moe-kv4", n_kv_heads=4, vocab_size=512), workload, NARROW)


def test_the_expert_grid_at_any_etp():
    """ep_span etp x ep (EP at stride etp), the EP group drawn from tp x cp x dp / etp, the gradients of
    the experts over tp x cp x dp / (etp x ep) ranks (Megatron-Core's expert_data_parallel_size)."""
    assert [(lay.expert_split, lay.ep_span, lay.expert_ranks, lay.expert_data_parallel) for lay in (NARROW, WIDE, WIDER)] \
        == [("etp", 6, 6, 2), ("etp", 6, 3, 1), ("etp", 12, 3, 1)]
    assert Layout(tp=1, dp=6, ep=3, etp=1).expert_split == "" and Layout(tp=1, dp=6, ep=3).ep_span == 3


def test_etp_below_tp_state_and_collectives_in_bytes():
    """tp 4, 3 tokens a rank under SP (12 / 4), S = 6 slots of 64 bf16 values (128 bytes). Outside the
    experts a rank holds per layer q/k/v 64 x 12 x 16 / 4 = 3,072, the output 1,024, two norms 128, the q/k
    norms 32, the router 384 (4,640; 9,280 for two); the embedding and the head 512 x 64 / 4 = 8,192 each,
    the final norm 64: 25,728, sharded over dp 3 by ZeRO-1 (8,576). The experts: E / ep = 2 a rank, each
    split etp = 2 ways (3 x 64 x 24 / 2 = 2,304): 4,608 a layer, 9,216, their optimizer state over the 2
    expert-data-parallel ranks. The all-to-all is each rank's own 6 slots, 2 x (48 + 4 x 6 x 128) = 6,240;
    the gather over the 2 expert-TP ranks 2 x 6 x 128 = 1,536, forward and backward, and as many
    reduce-scatters: 6,144 each for two layers, 3,072 on the wire ((2 - 1) / 2). The gradients: 25,728
    over dp 3 (4 x 3 x 8,576), the experts' 9,216 over 2 (4 x 9,216)."""
    estimate = _kv4()
    stage = estimate.stages[0]
    assert estimate.state(stage) == {"weights": 2 * (25_728 + 9_216), "gradients": 4 * (25_728 + 9_216),
                                     "optimizer": 12 * (8_576 + 4_608)} \
        == {"weights": 69_888, "gradients": 139_776, "optimizer": 158_208}
    moved = estimate.communication(stage)
    assert moved["ep"] == {"all_to_all": 6_240} and moved["etp"] == {"all_gather": 6_144, "reduce_scatter": 6_144}
    assert moved["dp"]["reduce_scatter"] == 4 * 3 * 8_576 and moved["edp"]["reduce_scatter"] == 4 * 9_216
    assert estimate.wire(moved)["etp"] == {"all_gather": 3_072, "reduce_scatter": 3_072}


def test_etp_below_tp_runs_foldings_flops_on_half_the_weights():
    """Each rank runs its experts' d_x / 2 on the 2 expert-TP ranks' gathered 12 slots: folding's FLOPs at
    the same tp (its own 6 slots on all of d_x), half its expert weights; its own 6 slots dispatched."""
    narrow = _kv4()
    folded = ParallelEstimate(narrow.cfg, narrow.workload, Layout(tp=4, sp=True, dp=3, ep=3, etp=1,
                                                                  framework="megatron", zero=1))
    key = next(k for k in narrow.structure["layers"] if narrow.part(k, "expert_params"))
    assert 2 * narrow.part(key, "expert_params") == folded.part(key, "expert_params") == 6 * 3 * 64 * 24
    assert narrow.part(key, "flops") == folded.part(key, "flops")
    assert narrow.part(key, "routed_slots") == folded.part(key, "routed_slots") == 6


def test_etp_above_tp_state_and_collectives_in_bytes():
    """tp 1 (no SP: 12 tokens a rank, S = 24 slots): outside the experts per layer q/k/v 64 x 8 x 16 =
    8,192, the output 4,096, norms 128 + 32, the router 384 (12,832; 25,664 for two), the embedding and the
    head 256 x 64 each, the final norm 64: 58,496, over dp 6 (ceil 9,750). The experts: 2 a rank split two
    ways, 9,216, over expert_data_parallel_size 1 (no gradient reduction of theirs). The all-to-all
    2 x (48 + 4 x 24 x 128) = 24,672 (the tp-1 layout's); the expert-TP gather 2 x 24 x 128 = 6,144 a call,
    24,576 each. Beside tp 2 (etp 4, ep 3, dp 6): 6 tokens a rank, 12 slots, the gather 4 x 12 x 128 =
    6,144 a call, 24,576, 18,432 on the wire ((4 - 1) / 4); the experts 2 x 3 x 64 x 24 / 4 a layer."""
    wide = _estimate(WIDE)
    stage = wide.stages[0]
    assert wide.state(stage) == {"weights": 2 * (58_496 + 9_216), "gradients": 4 * (58_496 + 9_216),
                                 "optimizer": 12 * (9_750 + 9_216)}
    moved = wide.communication(stage)
    assert moved["ep"] == {"all_to_all": 24_672} and moved["etp"] == {"all_gather": 24_576, "reduce_scatter": 24_576}
    assert moved["dp"]["reduce_scatter"] == 4 * 6 * 9_750 and "edp" not in moved and "tp" not in moved
    wider = _estimate(WIDER)
    moved = wider.communication(wider.stages[0])
    assert moved["etp"] == {"all_gather": 24_576, "reduce_scatter": 24_576} and moved["ep"] == {"all_to_all": 12_384}
    assert wider.wire(moved)["etp"] == {"all_gather": 18_432, "reduce_scatter": 18_432}
    assert wider.state(wider.stages[0])["weights"] == 2 * (29_824 + 2 * 2 * 3 * 64 * 24 // 4)


@pytest.mark.parametrize("args, words", [
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "4", "--etp", "4", "--framework", "megatron"],
     "etp x ep = 4 x 4 must divide the 8 ranks"),
    (["--tp", "1", "--dp", "4", "--ep", "2", "--etp", "2", "--framework", "fsdp2", "--zero", "3"],
     "expert tensor parallelism (--etp 2) is Megatron-Core's"),
    (["--tp", "4", "--dp", "4", "--ep", "8", "--etp", "2", "--framework", "megatron"], "needs sequence parallelism"),
    (["--tp", "1", "--dp", "4", "--ep", "4", "--etp", "0", "--framework", "megatron"], "positive integer"),
])
def test_general_etp_refusals_are_one_line(args, words, capsys):
    assert cli.main(["estimate", "--model", "qwen3-30b-a3b", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_etp_not_dividing_the_experts_width_is_refused():
    """TEGroupedMLP divides each expert's fc1 and fc2 by etp: width 24 splits 2, 3, 4 and 6 ways, not 5."""
    with pytest.raises(ConfigError, match="etp = 5 does not divide the experts' FFN width 24"):
        Layout(tp=1, dp=15, ep=3, etp=5, framework="megatron").check(_odd_moe())


def test_plan_searches_etp_beside_folding():
    """Qwen3-30B-A3B (128 experts of width 768) on 8 GPUs at tp 2 with SP, dp 4, Megatron: EP 1, 2, 4, 8 (the
    divisors of tp x dp = 8), and beside each ep > 1 folding's etp 1 and each of 2, 4, 8 whose etp x ep
    divides 8: ep 2 with etp 1, 2, 4; ep 4 with 1, 2; ep 8 with 1. Six layouts, where folding alone gave three
    (ep 1 is refused under SP with a mixture of experts, as before)."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.plan import training_layouts
    from costmodel.presets import load_preset

    fixed = {"tp": 2, "pp": 1, "sp": True, "zero": 1, "framework": "megatron", "batch": 1, "recompute": "none"}
    candidates = list(training_layouts(load_preset("qwen3-30b-a3b"), load_hardware("h100-sxm"), 8, 16, fixed))
    assert [(lay.ep, lay.etp) for lay, *_ in candidates if lay] == [(2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (8, 1)]
    assert [problem for lay, _, _, problem in candidates if not lay] == [
        "layout: sequence parallelism with a mixture of experts is modelled only with --ep beside it: parallel "
        "folding (--etp 1) or expert tensor parallelism (--etp > 1)."]
    assert [(lay.ep, lay.etp) for lay, *_ in training_layouts(
        load_preset("qwen3-30b-a3b"), load_hardware("h100-sxm"), 8, 16, {**fixed, "etp": 2}) if lay] \
        == [(2, 2), (4, 2)]


def test_plan_names_etp(capsys):
    """plan --etp keeps the layouts of that etp, and its JSON names it."""
    import json

    assert cli.main(["plan", "-m", "qwen3-30b-a3b", "--gpus", "8", "--seq-len", "2048", "--global-batch", "16",
                     "--framework", "megatron", "--tp", "2", "--sp", "--pp", "1", "--zero", "1", "--ep", "4",
                     "--etp", "2", "--batch", "1", "--recompute", "none", "--time-model", "roofline", "--json"]) == 0
    feasible = json.loads(capsys.readouterr().out)["feasible"]
    assert [(e["layout"]["ep"], e["layout"]["etp"]) for e in feasible] == [(4, 2)]


def test_the_python_apis_plan_takes_etp():
    """costmodel.plan's etp= is plan --etp's: the layouts of that etp alone, named in each entry (ep 2's 64
    experts a rank do not fit an H100: set aside, as its infeasible entry)."""
    from costmodel.planning import plan

    result = plan("qwen3-30b-a3b", 8, "h100-sxm", framework="megatron", seq_len=2048, global_batch=16, tp=2, sp=True,
                  pp=1, zero=1, batch=1, recompute="none", time_model="roofline", etp=2).to_dict()
    pairs = lambda entries: {(e["layout"]["ep"], e["layout"]["etp"]) for e in entries}  # noqa: E731
    assert pairs(result["feasible"]) == {(4, 2)} and pairs(result["feasible"] + result["infeasible"]) == {(2, 2), (4, 2)}


def test_plan_etp_keeps_only_layouts_of_that_etp():
    """plan --etp 2 at tp 1 (wt42_review2): ep 1 has no etp (simulate refuses --etp without --ep), so only ep 2 and
    4 remain (8 x 2 does not divide the 8 ranks: refused in one line); before, the ep 1 layout came through with
    no etp at all."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.plan import training_layouts
    from costmodel.presets import load_preset

    fixed = {"tp": 1, "pp": 1, "zero": 1, "framework": "megatron", "batch": 1, "recompute": "none", "etp": 2}
    candidates = list(training_layouts(load_preset("qwen3-30b-a3b"), load_hardware("h100-sxm"), 8, 16, fixed))
    assert [(lay.ep, lay.etp) for lay, *_ in candidates if lay] == [(2, 2), (4, 2)]
    assert [problem for lay, _, _, problem in candidates if not lay] == [
        "layout: etp x ep = 2 x 8 must divide the 8 ranks of a pipeline stage (tp x cp x dp; Megatron-Core's expert "
        "grid: its world is not divisible by expert_tensor_model_pipeline_parallel size otherwise)."]
