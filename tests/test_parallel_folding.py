"""Megatron-Core's MoE parallel folding (--etp 1 with --tp > 1 and --ep): attention under tp with
sequence parallelism, the routed experts whole on each rank over an EP group drawn from tp x dp
(costmodel/layout/experts.py, docs/layouts.md). Exact per-rank integers for a small odd model,
worked by hand below from Megatron-Core's code (NVIDIA/Megatron-LM d98e8a64dd)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset


def _odd_moe():
    """Qwen3-MoE's family at odd small sizes: d 64, 4 heads of 16 (2 KV heads), 6 experts of width
    24, top 2, 2 layers, vocabulary 256 (Megatron pads it to 128 x tp = 256: no padding), untied."""
    return load_preset("qwen3-30b-a3b").replace(name="odd-moe", d_model=64, n_heads=4, n_kv_heads=2, d_head=16,
                                                d_ff=40, d_expert=24, n_experts=6, top_k=2, n_decoder_layers=2,
                                                vocab_size=256)


def _estimate(layout: Layout) -> ParallelEstimate:
    workload = Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash")
    return ParallelEstimate(_odd_moe(), workload, layout)


FOLDED = Layout(tp=2, sp=True, dp=3, ep=3, etp=1, framework="megatron", zero=1)


def test_a_folded_ranks_state_in_bytes():
    """tp 2 x dp 3 = 6 ranks, EP 3 (parallel_state.py: expert_data_parallel_size = world_size //
    (expert_tensor_parallel_size x expert_model_parallel_size x pp) = 6 // 3 = 2).
    A rank's parameters: per layer the attention split by tp, q/k/v 64 x (4 + 2 x 2) x 16 / 2 = 4,096
    and the output 64 x 64 / 2 = 2,048; replicated: two norms of 64, the q/k norms 2 x 16, the router
    64 x 6 = 384: 6,688 a layer, 13,376 for two; the embedding and the head 256 x 64 / 2 = 8,192
    each, the final norm 64: 29,824 outside the experts. The experts: 6 of 3 x 64 x 24 = 4,608 a
    layer, E / ep = 2 of them on a rank whole (expert_tensor_parallel_size 1): 9,216 a layer,
    18,432. Megatron's precision (bf16 weights 2 bytes, fp32 gradients 4, fp32 master and two
    moments 12) with ZeRO-1: the 29,824 sharded over dp 3 (ceil: 9,942), the experts' 18,432 over
    the 2 expert-data-parallel ranks (9,216)."""
    estimate = _estimate(FOLDED)
    stage = estimate.stages[0]
    rest, experts = 29_824, 18_432
    assert estimate.experts()["expert_data_parallel"] == 2 and estimate.experts()["experts_per_rank"] == 2
    assert estimate.state(stage) == {"weights": 2 * (rest + experts), "gradients": 4 * (rest + experts),
                                     "optimizer": 12 * (-(-rest // 3) + experts // 2)} \
        == {"weights": 96_512, "gradients": 193_024, "optimizer": 229_896}


def test_a_folded_ranks_collectives_in_bytes():
    """One micro-batch of 1 x 12 tokens, 6 a rank under SP. The all-to-all
    (token_dispatcher.py MoEAlltoAllTokenDispatcher: `all_to_all(self.ep_group, ...)`, and no
    all-gather over the experts' tensor-parallel group when its size is 1): a rank routes its own
    6 tokens x top 2 = 12 slots of 64 bf16 values (128 bytes), dispatched and combined forward
    and backward (4 x 12 x 128), and sends the 6 experts' int64 counts (48 bytes) once a layer:
    6,192 a layer, 12,384 for two, half the slots of the same model at tp 1 (24,672 there: the
    counts are not halved). The gradients: the 29,824 over dp as fp32 (reduce-scatter of
    3 x 9,942 = 29,826 padded elements), the experts' 18,432 over the 2 expert-data-parallel ranks;
    the MoE layer adds no tensor-parallel collective, and the router's 2 x 384 fp32 gradients join
    the norms' all-reduce over tp (Megatron-Core sets the router weight's `sequence_parallel`,
    moe/router.py line 85)."""
    folded = _estimate(FOLDED).communication(_estimate(FOLDED).stages[0])
    plain = _estimate(Layout(tp=1, dp=6, ep=3, framework="megatron", zero=1))
    unfolded = plain.communication(plain.stages[0])
    assert folded["ep"] == {"all_to_all": 2 * (48 + 4 * 12 * 128)} == {"all_to_all": 12_384}
    assert unfolded["ep"] == {"all_to_all": 2 * (48 + 4 * 24 * 128)}
    assert folded["dp"]["reduce_scatter"] == 4 * 3 * 9_942 and folded["edp"]["reduce_scatter"] == 4 * 18_432
    # the attention's SP collectives only (a 1 x 12 x 64 bf16 tensor, 1,536 bytes, each): forward the
    # embedding's and two output projections' reduce-scatters, the QKV and head inputs' all-gathers;
    # backward their gradients, and Megatron's re-gather of the QKV and head inputs
    assert (folded["tp"]["reduce_scatter"], folded["tp"]["all_gather"]) == (6 * 1_536, 9 * 1_536)
    assert FOLDED.folded and not Layout(tp=2, dp=3, ep=3, framework="megatron").folded  # etp unset: not folded
    assert folded["tp"]["all_reduce"] - 4 * 2 * 384 == 1_424  # the norms' and the loss's, as without a router


@pytest.mark.parametrize("args, words", [
    (["--tp", "2", "--dp", "4", "--ep", "8", "--etp", "1", "--framework", "megatron"], "needs sequence parallelism"),
    # (wt42_etp: etp 4 beside tp 2 is Megatron-Core's expert grid too; here it does not divide the 8 ranks)
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--etp", "4", "--framework", "megatron"],
     "etp x ep = 4 x 8 must divide the 8 ranks"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "16", "--etp", "1", "--framework", "megatron"],
     "must divide tp x dp = 2 x 4"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--etp", "1", "--framework", "fsdp2", "--zero", "3"],
     "is Megatron-Core's"),
    (["--tp", "2", "--sp", "--dp", "4", "--ep", "32", "--etp", "1", "--framework", "megatron", "--cp", "2",
      "--seq-len", "4096"], "must divide tp x cp x dp = 2 x 2 x 4"),
])
def test_folding_refusals_are_one_line(args, words, capsys):
    assert cli.main(["estimate", "--model", "qwen3-30b-a3b", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def _shared(layout: Layout) -> ParallelEstimate:
    """The odd model with Qwen2-MoE's shared expert: width 40 (gate_up 80 x 64, down 64 x 40) and its
    sigmoid gate (1 x 64)."""
    workload = Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash")
    return ParallelEstimate(_odd_moe().replace(name="odd-shared", d_shared=40, shared_expert_gate=True),
                            workload, layout)


def test_a_shared_expert_under_folding_in_bytes():
    """Megatron-Core's SharedExpertMLP is a dense MLP on the attention's TP group (`super().__init__(
    ..., tp_group=pg_collection.tp)`, megatron/core/transformer/moe/shared_experts.py at 0065cf8a),
    not the experts' (size 1 here): its width 40 split by tp 2, 3 x 64 x 20 = 3,840 a layer on a
    rank, 7,680 for two; its gate_weight (1 x 64) whole on each rank, 128 for two. Both are reduced
    over dp 3 with the attention (they are no expert parameters): the rest grows from 29,824 to
    37,632 (ZeRO-1: 12,544 a rank), the experts' 18,432 over 2 ranks as before.
    Weights 2 x 56,064 = 112,128, gradients 4 x 56,064 = 224,256, optimizer 12 x (12,544 + 9,216)."""
    estimate = _shared(FOLDED)
    stage = estimate.stages[0]
    rest, experts = 29_824 + 2 * 3 * 64 * 20 + 2 * 64, 18_432
    assert estimate.experts()["expert_data_parallel"] == 2
    assert estimate.state(stage) == {"weights": 2 * (rest + experts), "gradients": 4 * (rest + experts),
                                     "optimizer": 12 * (-(-rest // 3) + experts // 2)} \
        == {"weights": 112_128, "gradients": 224_256, "optimizer": 261_120}


def test_a_shared_expert_under_folding_adds_its_tp_collectives():
    """Each MoE layer's shared expert gathers its input and scatters its output over tp (its fc1
    ColumnParallelLinear and fc2 RowParallelLinear under sequence parallelism; with
    moe_shared_expert_overlap the same two collectives, pre_forward_comm's
    gather_from_sequence_parallel_region and post_forward_comm's reduce_scatter_to_sequence_
    parallel_region): per layer forward one all-gather and one reduce-scatter of the 1 x 12 x 64
    bf16 tensor (1,536 bytes), backward their gradients (a reduce-scatter, an all-gather) and
    Megatron's re-gather of fc1's input: 2 reduce-scatters and 3 all-gathers a layer, 4 and 6 for two
    over the folded model without it. The gate's 64 fp32 gradients a layer join the router's
    all-reduce over tp (`setattr(self.gate_weight, 'sequence_parallel', ...)`): 2 x 64 x 4 = 512 bytes.
    The routed experts' all-to-all is unchanged (12,384), and so are the experts' gradients over
    the expert-data-parallel ranks; dp reduce-scatters the 37,632 (3 x 12,544 fp32)."""
    plain, shared = _estimate(FOLDED), _shared(FOLDED)
    before, after = plain.communication(plain.stages[0]), shared.communication(shared.stages[0])
    assert after["tp"]["reduce_scatter"] - before["tp"]["reduce_scatter"] == 4 * 1_536
    assert after["tp"]["all_gather"] - before["tp"]["all_gather"] == 6 * 1_536
    assert (after["tp"]["reduce_scatter"], after["tp"]["all_gather"]) == (10 * 1_536, 15 * 1_536)
    assert after["tp"]["all_reduce"] - before["tp"]["all_reduce"] == 512
    assert after["ep"] == before["ep"] == {"all_to_all": 12_384}
    assert after["dp"]["reduce_scatter"] == 4 * 3 * 12_544 and after["edp"] == before["edp"]


def test_a_shared_expert_runs_on_every_token_of_its_tp_shard():
    """The shared expert's GEMMs take the gathered 12 tokens at width 40 / 2 (three products of
    2 x 12 x 64 x 20 forward, twice that backward: 3 x 3 x 30,720 = 276,480 FLOPs a layer), the
    routed experts the rank's 6 tokens unsplit; the gate its 6 SP tokens (2 x 6 x 64 forward,
    3 x 768 = 2,304 with backward)."""
    shared, plain = _shared(FOLDED), _estimate(FOLDED)
    key = next(k for k in shared.structure["layers"])
    assert shared.part(key, "flops") - plain.part(key, "flops") == 276_480 + 2_304


def test_deepseek_v3_under_folding_runs_its_latent_attention_under_sp(capsys):
    """DeepSeek-V3's shared expert and its latent attention under sequence parallelism are both
    expressible under folding with Megatron-Core (tests/test_mla_sequence_parallel.py; folding is
    Megatron-Core's alone, and another framework's latent attention under SP is refused there)."""
    assert cli.main(["estimate", "--model", "deepseek-v3", "--tp", "2", "--sp", "--dp", "4", "--ep", "8", "--etp",
                     "1", "--framework", "megatron"]) == 0
    assert "error" not in capsys.readouterr().err


def test_a_folded_layout_trains_from_the_command_line(capsys):
    """`--etp 1` reaches the layout: ep 8 of tp x dp, 16 experts a rank, one rank holding each."""
    import json

    assert cli.main(["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--tp", "2", "--sp",
                     "--dp", "4", "--ep", "8", "--etp", "1", "--framework", "megatron", "--zero", "1", "--seq-len",
                     "4096", "--batch", "1", "--global-batch", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parallel"]["layout"]["etp"] == 1 and out["parallel"]["experts"]["expert_data_parallel"] == 1


@pytest.mark.slow
def test_a_folded_moe_layer_on_gloo_moves_what_the_model_says():
    """Four gloo ranks as tp 2 x dp 2, one EP group of 4 over all of them (parallel folding): each
    TP pair shares a sequence of 10 tokens, each rank routes its SP shard of 5 to experts it holds
    whole (validate/distributed/experts.py, ExpertCase.tp). The model's folded layout at seq_len 10
    gives each rank's expert bytes (E / ep whole experts, not split by tp) and the most loaded
    rank's all-to-all with the measured tokens per expert as the load (about 35 s)."""
    from costmodel.hf import from_hf_config
    from validate.distributed.experts import ExpertCase, measure_experts
    from validate.distributed.launch import run_gloo

    case = ExpertCase(seq_len=10, tp=2)
    results = run_gloo(measure_experts, 4, case, timeout_s=240)
    counts = tuple(results[0]["counts"])
    assert sum(counts) == 4 * case.batch * (case.seq_len // 2) * case.k  # each rank its 5 tokens
    tiny = dict(model_type="mixtral", hidden_size=16, intermediate_size=24, num_local_experts=4,
                num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                vocab_size=32, max_position_embeddings=64, tie_word_embeddings=False)
    cfg = from_hf_config(tiny, "tiny-moe")
    workload = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", precision="pure", expert_load=counts)
    rank = ParallelEstimate(cfg, workload, Layout(tp=2, sp=True, dp=2, ep=4, etp=1, framework="megatron"))
    key = next(k for k in rank.structure["layers"])
    assert {r["expert_bytes"] for r in results} == {4 * rank.part(key, "expert_params") // 4} == {4 * 3 * 16 * 24}
    measured = [sum(c["payload"] for c in r["records"] if c["kind"] == "all_to_all") for r in results]
    assert rank.to_dict()["communication"]["ep"]["all_to_all"] == max(measured)
    assert measured.index(max(measured)) == rank.load.rank
