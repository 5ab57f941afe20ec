"""The flex dispatcher beside FSDP2 (--framework fsdp2 --ep-dispatcher deepep), as NeMo AutoModel runs
it (NVIDIA-NeMo/Automodel at 36044ad3, nemo_automodel/components/moe/parallelizer.py): apply_ep shards
the routed experts on dim 0 over the EP ranks and hands that mesh to its copy of Megatron-Core's
MoEFlexTokenDispatcher (megatron/token_dispatcher.py, on deep_ep's Buffer: megatron/fused_a2a.py lines
23-24); apply_fsdp wraps each block's experts in their own fully_shard over the ep_shard mesh (dp / ep
ranks, Shard(1)), none where that mesh is one rank, and the rest of the block over all dp ranks with
the experts left out (ignored_params); MixedPrecisionPolicy bf16 parameters, fp32 reduces.

Exact bytes on a Qwen3-MoE at odd sizes (tests/test_ep_dispatcher.py's _odd_moe): d 64, 4 heads of
16, 2 KV heads, q/k norms, 6 experts of width 24 (top 2), 2 layers, 256-token untied vocabulary. One
micro-batch of 12 tokens a rank."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import cli
from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset


def _odd_moe():
    return load_preset("qwen3-30b-a3b").replace(name="odd-moe", d_model=64, n_heads=4, n_kv_heads=2, d_head=16,
                                                d_ff=40, d_expert=24, n_experts=6, top_k=2, n_decoder_layers=2,
                                                vocab_size=256)


def _communication(dp: int, zero: int, dispatcher: str = "deepep", framework: str = "fsdp2") -> dict:
    layout = Layout(dp=dp, ep=6, framework=framework, zero=zero, ep_dispatcher=dispatcher)
    estimate = ParallelEstimate(_odd_moe(), Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron",
                                                     attention="flash"), layout)
    return estimate.communication(estimate.stages[0])


def _padded_dense_elements(dp: int) -> int:
    """The block's and the root's parameters (not the experts) as FSDP2 holds them: each tensor's dim 0
    padded to a multiple of dp (ceil(d0 / dp) rows a rank). Per layer Megatron's one linear_qkv (128 x 64: q 64,
    k and v 32 rows; three tensors before session 43's facts.json fused_qkv), o (64 x 64), two RMSNorms (64), q_norm and k_norm (16), the router (6 x 64); then the embedding and
    the output layer (256 x 64) and the final norm (64)."""
    def padded(rows: int, cols: int = 1) -> int:
        return -(-rows // dp) * dp * cols
    layer = (padded(128, 64) + padded(64, 64) + 2 * padded(64) + 2 * padded(16)
             + padded(6, 64))
    return 2 * layer + 2 * padded(256, 64) + padded(64)


def test_padded_dense_elements_by_hand():
    """dp 6: qkv 132 x 64 = 8,448, o 66 x 64 = 4,224, norms 66 + 66 + 18 + 18, router 384: 13,224 a layer;
    embedding and output 258 x 64 = 16,512 each, final norm 66: 59,538. dp 12: 14,016 a layer (qkv 132 x 64,
    o 72 x 64, the router's 6 rows padded to 12), 264 x 64 = 16,896 each, 72: 61,896. (Session 43: q, k and v
    one tensor under impl megatron; 13,608, 59,538, 14,784 and 61,896 with three.)"""
    assert _padded_dense_elements(6) == 2 * 13_224 + 2 * 16_512 + 66 == 59_538
    assert _padded_dense_elements(12) == 2 * 14_016 + 2 * 16_896 + 72 == 61_896


def test_ep_equal_to_dp_leaves_the_experts_out_of_fsdp():
    """dp = ep = 6 (the Qwen3 and Nemotron Nano rows' 8 = 8): AutoModel's ep_shard mesh is one rank, so
    no fully_shard on the experts and no collective on them; the rest gathered once in bf16
    (reshard_after_forward False, --zero 2: 2 x 59,538 bytes) and its gradients reduce-scattered in
    fp32 (4 x 59,538); the flex dispatcher's bytes are Megatron-Core's: each of the 12 tokens once per
    dispatch and combine, forward and backward, 128 bytes each (4 x 12 x 128 = 6,144 a layer), and the
    6 experts' int64 counts (48 bytes a layer)."""
    assert _communication(6, 2) == {"dp": {"all_gather": 2 * 59_538, "reduce_scatter": 4 * 59_538},
                                     "ep": {"all_to_all": 2 * 48, "flex": 2 * 6_144}}
    assert _communication(6, 2)["ep"] == _communication(6, 1, framework="megatron")["ep"]  # the same kernels


def test_deepep_moves_each_token_once_where_the_all_to_all_moves_each_slot():
    """Under the all-to-all each of the 24 slots travels 4 times a layer (4 x 24 x 128 = 12,288) beside
    the counts; the data-parallel side is the same."""
    alltoall = _communication(6, 2, "alltoall")
    assert alltoall["ep"] == {"all_to_all": 2 * (48 + 12_288)}
    assert alltoall["dp"] == _communication(6, 2)["dp"]


@pytest.mark.parametrize("zero, gathers", [(2, 1), (3, 2)])
def test_experts_sharded_over_dp_over_ep(zero, gathers):
    """dp 12, ep 6: the experts' fully_shard over the 2 ranks that hold the same expert (edp). A rank's
    one expert a layer, 3 x 64 x 24 = 4,608 elements, 9,216 over the 2 layers, split on dim 1 (64 and
    24 both even over 2: no padding, as Shard(1) requires), gathered in bf16 once a micro-batch (twice
    where it reshards after forward, --zero 3) and reduce-scattered in fp32; the rest over all 12 ranks
    (61,896 padded elements; under --zero 3 it is gathered again in backward but for the root's
    embedding, output layer and final norm, which FSDP2 keeps after forward: 61,896 + 28,032)."""
    out = _communication(12, zero)
    assert out["edp"] == {"all_gather": gathers * 2 * 9_216, "reduce_scatter": 4 * 9_216}
    dense_gathered = 61_896 if zero == 2 else 61_896 + 2 * 14_016
    assert out["dp"] == {"all_gather": 2 * dense_gathered, "reduce_scatter": 4 * 61_896}
    assert out["ep"] == {"all_to_all": 96, "flex": 12_288}


def test_deepspeed_still_refuses_the_flex_dispatcher():
    with pytest.raises(ConfigError, match="add --framework megatron or fsdp2 \\(here deepspeed\\)"):
        Layout(dp=6, ep=6, framework="deepspeed", zero=1, ep_dispatcher="deepep")


def test_cli_runs_deepep_under_fsdp2():
    """`simulate --train` with --framework fsdp2 --ep-dispatcher deepep (AutoModel's Qwen3 30B row's
    layout) runs; deepspeed's is one error line."""
    args = ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--seq-len", "4096",
            "--batch", "4", "--dp", "8", "--ep", "8", "--ep-dispatcher", "deepep"]
    assert CliRunner().invoke(cli.cli, [*args, "--framework", "fsdp2", "--zero", "2"]).exit_code == 0
    refused = CliRunner().invoke(cli.cli, [*args, "--framework", "deepspeed", "--zero", "1"])
    assert refused.exit_code == 2 and "add --framework megatron or fsdp2" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


@pytest.mark.parametrize("dp, gathered", [(6, None), (12, 2 * 9_440)])
def test_expert_biases_travel_and_are_held_with_their_experts(dp, gathered):
    """gpt-oss's per-expert biases (gate_up 2 x 24, down 64: 112 an expert, 224 over the 2 layers)
    beside the rank's expert: 9,216 + 224 = 9,440 elements, split with it over dp / ep (AutoModel's
    Shard(1) of the (E / ep, 48) and (E / ep, 64) tensors) and none of them on the dp side, which stays
    59,538 / 61,896 padded elements. fp32 weights a rank: (59,538 / 6 + 9,440) x 4 = 77,452 bytes at dp
    6; (61,896 / 12 + 9,440 / 2) x 4 = 39,512 at dp 12."""
    cfg = _odd_moe().replace(expert_bias=True)
    layout = Layout(dp=dp, ep=6, framework="fsdp2", zero=2, ep_dispatcher="deepep")
    estimate = ParallelEstimate(cfg, Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron",
                                              attention="flash"), layout)
    out = estimate.communication(estimate.stages[0])
    assert out["dp"] == {"all_gather": 2 * _padded_dense_elements(dp), "reduce_scatter": 4 * _padded_dense_elements(dp)}
    assert out.get("edp") == (None if gathered is None else {"all_gather": gathered, "reduce_scatter": 2 * gathered})
    held = _padded_dense_elements(dp) // dp + 9_440 * 6 // dp
    assert estimate.state(estimate.stages[0])["weights"] == 4 * held == {6: 77_452, 12: 39_512}[dp]
