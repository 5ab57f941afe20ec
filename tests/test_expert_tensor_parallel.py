"""Megatron-Core's expert tensor parallelism (--etp = --tp > 1 with --ep): each routed expert split over
the attention's tp ranks, the EP group drawn from dp, the dispatcher's all-gather and reduce-scatter of
the tokens over the experts' tp group (costmodel/layout/experts.py, "Expert tensor parallelism").
Exact per-rank integers for tests/test_parallel_folding.py's small odd model, worked by hand below from
Megatron-Core's code at core_v0.12.0 (NVIDIA/Megatron-LM 26f86a597f, NeMo 25.04's)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.layout import Layout

from tests.test_parallel_folding import FOLDED, _estimate, _odd_moe

ETP = Layout(tp=2, sp=True, dp=6, ep=3, etp=2, framework="megatron", zero=1)


def test_an_expert_tensor_parallel_ranks_state_in_bytes():
    """tp 2 x dp 6 = 12 ranks; the experts' grid (parallel_state.py lines 693-714) etp 2 x ep 3 x
    expert_data_parallel_size 12 // (2 x 3 x 1) = 2. Outside the experts a rank holds what it holds
    under folding, 29,824 (the attention split by tp, the router's 384 a layer whole), sharded over
    dp 6 by ZeRO-1 (ceil: 4,971). The experts: E / ep = 2 a rank, each split two ways (TEGroupedMLP:
    fc1 column-parallel, 2 x 24 / 2 = 24 rows of 64, 1,536; fc2 row-parallel, 64 x 24 / 2 = 768):
    2,304 an expert, 4,608 a layer, 9,216 for two, their optimizer state over the 2
    expert-data-parallel ranks (4,608). Weights bf16 2 x 39,040, gradients fp32 4 x 39,040,
    optimizer 12 x (4,971 + 4,608)."""
    estimate = _estimate(ETP)
    stage = estimate.stages[0]
    rest, experts = 29_824, 9_216
    assert ETP.expert_split == "etp" and FOLDED.expert_split == "folded" and Layout(tp=2, dp=3).expert_split == ""
    assert estimate.experts()["expert_data_parallel"] == 2 and estimate.experts()["experts_per_rank"] == 2
    assert estimate.state(stage) == {"weights": 2 * (rest + experts), "gradients": 4 * (rest + experts),
                                     "optimizer": 12 * (-(-rest // 6) + experts // 2)} \
        == {"weights": 78_080, "gradients": 156_160, "optimizer": 114_948}


def test_an_expert_tensor_parallel_ranks_collectives_in_bytes():
    """One micro-batch of 1 x 12 tokens, 6 a rank under SP. The all-to-all over the EP group is
    folding's (each rank dispatches its own 6 x top 2 = 12 slots of 64 bf16 values, 128 bytes,
    token_dispatcher.py line 531): 2 x (48 + 4 x 12 x 128) = 12,384. Then the gather over the experts'
    tp group (lines 537-544): the 2 ranks' received slots, 2 x 12 x 128 = 3,072 bytes gathered, and
    after fc2 the reduce-scatter of the same (lines 619-628), forward and (swapped) backward: 2 x
    3,072 a layer of each, 12,288 for two. The attention's SP collectives are folding's (the routed
    experts' TE linears run no TP collective of their own, explicit_expert_comm); the gradients:
    29,824 over dp 6 (6 x 4,971 fp32), the experts' 9,216 over the 2 expert-data-parallel ranks."""
    estimate = _estimate(ETP)
    moved = estimate.communication(estimate.stages[0])
    folded = _estimate(FOLDED).communication(_estimate(FOLDED).stages[0])
    assert moved["ep"] == folded["ep"] == {"all_to_all": 12_384}
    assert moved["etp"] == {"all_gather": 12_288, "reduce_scatter": 12_288}
    assert moved["tp"] == folded["tp"]
    assert moved["dp"]["reduce_scatter"] == 4 * 6 * 4_971 and moved["edp"]["reduce_scatter"] == 4 * 9_216
    assert estimate.wire(moved)["etp"] == {"all_gather": 6_144, "reduce_scatter": 6_144}  # (2 - 1) / 2 of each


def test_the_experts_gemms_are_split_not_their_flops():
    """A rank's experts run the tp ranks' 24 gathered slots on d_x / 2 = 12 of each expert's width
    where folding runs its own 12 slots on all 24: the same FLOPs a rank, the experts' weights halved."""
    etp, folded = _estimate(ETP), _estimate(FOLDED)
    key = next(k for k in etp.structure["layers"] if etp.part(k, "expert_params"))
    assert 2 * etp.part(key, "expert_params") == folded.part(key, "expert_params") == 6 * 3 * 64 * 24
    assert etp.part(key, "flops") == folded.part(key, "flops")
    assert etp.part(key, "routed_slots") == folded.part(key, "routed_slots") == 12


@pytest.mark.parametrize("args, words", [
    (["--tp", "2", "--dp", "4", "--ep", "8", "--etp", "2", "--framework", "megatron"], "needs sequence parallelism"),
    # (wt42_etp: 1 < etp < tp and etp > tp are modelled; Megatron-Core refuses only a grid that does not divide)
    (["--tp", "4", "--sp", "--dp", "4", "--ep", "16", "--etp", "2", "--framework", "megatron"],
     "etp x ep = 2 x 16 must divide the 16 ranks"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--etp", "4", "--framework", "megatron"],
     "etp x ep = 4 x 8 must divide the 8 ranks"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--framework", "megatron"], "needs --etp"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "16", "--etp", "2", "--framework", "megatron"],
     "etp x ep = 2 x 16 must divide the 8 ranks"),
    (["--tp", "1", "--dp", "4", "--ep", "4", "--etp", "2", "--framework", "deepspeed"], "use --framework megatron"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--etp", "2", "--framework", "fsdp2"], "Megatron-Core's"),
    (["--tp", "2", "--sp", "--dp", "8", "--ep", "8", "--etp", "2", "--framework", "megatron",
      "--ep-dispatcher", "deepep"], "all-to-all dispatcher"),
])
def test_expert_tensor_parallel_refusals_are_one_line(args, words, capsys):
    assert cli.main(["estimate", "--model", "qwen3-30b-a3b", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_etp_not_dividing_the_experts_width_is_refused():
    """Megatron-Core's TEGroupedMLP divides each expert's fc1 and fc2 by the experts' tp size: the odd
    model's experts at width 25 do not split two ways (its heads and d 64 do)."""
    with pytest.raises(ConfigError, match="etp = 2 does not divide the experts' FFN width 25"):
        ETP.check(_odd_moe().replace(d_expert=25))
