"""Latent attention under sequence parallelism, as Megatron-Core's MLASelfAttention runs it with
Transformer Engine (NVIDIA/Megatron-LM d98e8a64: megatron/core/transformer/multi_latent_attention.py,
megatron/core/extensions/transformer_engine.py TELinear, megatron/core/models/gpt/gpt_layer_specs.py,
megatron/core/distributed/finalize_model_grads.py): linear_q_down_proj and linear_kv_down_proj are
TELinear with parallel_mode "duplicated" (whole weights on each tp rank, no tp group) fed the
rank's n / tp sequence-parallel hidden states; q_layernorm and kv_layernorm run on those tokens; the
column-parallel up-projections all-gather the normed latents (r_q and r_kv wide) and the RoPE key
(d_r) is all-gathered by gather_from_sequence_parallel_region; their gradients are reduce-scattered,
TE regathers the two latents for the weight gradients, and the duplicated weights' gradients are
all-reduced over tp with the norms' (their `sequence_parallel` attribute).

Exact integers on the odd DeepSeek-V3 (tests/family_odd_configs.py: d 48, h 6, r_q 20, r_kv 12,
d_r 4, d_h - d_r 6, d_v 7), its 3 layers dense (d_ff 38) so that tp 2 runs with and without SP,
Megatron's profile with flash, b 1, n 10, bf16: a rank holds 3 heads and, under SP, 5 tokens.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sympy as sp

from costmodel import blocks as B
from costmodel import symbols as S
from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.split import rank_leaf, substitution
from costmodel.tree import CostModel, model_values, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from family_odd_configs import _deepseek_v3  # noqa: E402

N, E, TP = 10, 2, 2
X = E * N * 48  # one sublayer's input or output, every token: 960 bytes


@pytest.fixture(scope="module")
def cfg():
    return from_hf_config(dict(_deepseek_v3()[0], first_k_dense_replace=3, intermediate_size=38), "odd-dense-mla")


def _workload(recompute: str = "none") -> Workload:
    return Workload(seq_len=N, batch=1, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)


def _estimate(cfg, sp_on: bool, recompute: str = "none") -> ParallelEstimate:
    return ParallelEstimate(cfg, _workload(recompute), Layout(tp=TP, sp=sp_on, dp=1, framework="megatron", zero=1))


def _rank_mla(cfg, sp_on: bool, recompute: str = "none"):
    """The latent projections' leaf on one rank and a function giving its numbers."""
    tree = CostModel(cfg, profile_for(cfg, _workload(recompute), precision="megatron"))
    leaf = rank_leaf(next(l for l in tree.leaves if isinstance(l.block, B.LatentAttention)), sp_on)
    subs = substitution(leaf.block, sp_on=sp_on, vocabulary="pad128", loss_parallel=True, encoder=False)
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 1, S.n: N, S.e: E, S.T: 0, S.s: N,
          S.tp: TP}
    return leaf, lambda expr: int(sp.sympify(expr).xreplace(subs).xreplace(at))


def test_the_down_projections_run_on_the_ranks_tokens_the_up_projections_on_all(cfg):
    """Forward, a rank: q_a 2 x 5 x 48 x 20 = 9,600 and kv_a 2 x 5 x 48 x 16 = 7,680 on its 5 SP
    tokens; q_b 2 x 10 x 20 x (3 x 10) = 12,000 and kv_b 2 x 10 x 12 x (3 x 13) = 9,360 on the
    gathered 10: 38,640 (55,920 without SP, the down-projections on all 10 tokens). Backward twice
    the forward. The latent norms' elements: 5 x 20 and 5 x 12."""
    for sp_on, forward, tokens, norms in ((False, 55_920, [10, 10, 10, 10], [200, 120]),
                                          (True, 38_640, [5, 10, 5, 10], [100, 60])):
        leaf, number = _rank_mla(cfg, sp_on)
        assert number(leaf.cost.flops_matmul) == forward and number(leaf.cost.flops_matmul_backward) == 2 * forward
        assert [number(t) for t in leaf.cost.matrix_tokens] == tokens
        assert [number(x) for _, x in leaf.cost.elements] == norms
    assert 19_200 + 12_000 + 15_360 + 9_360 == 55_920 and 9_600 + 12_000 + 7_680 + 9_360 == 38_640


def test_what_a_rank_keeps_of_its_latents(cfg):
    """Kept for backward, bf16: the query norm's input and output on the rank's 5 tokens
    (2 x 2 x 5 x 20 = 400), kv_a's output and the kv norm's (2 x 5 x (2 x 12 + 4) = 280) with its
    rstd (10), kv_b's input shard (TE regathers it: 2 x 5 x 12 = 120), and the query view every
    gathered token's 3 heads (2 x 10 x 3 x 6 = 360): 1,170 (1,980 without SP). Recomputing the
    up-projections (mla-up-proj) keeps their checkpoint's inputs: the two latents of the rank's
    tokens (2 x 5 x 20 + 2 x 5 x 12) and the RoPE key gathered before it (2 x 10 x 4): 400 (720);
    it reruns q_b and kv_b on all 10 tokens (21,360) and the norms on 5."""
    assert _rank_mla(cfg, True)[1](_rank_mla(cfg, True)[0].cost.saved_bytes) == 400 + 280 + 10 + 120 + 360 == 1_170
    assert _rank_mla(cfg, False)[1](_rank_mla(cfg, False)[0].cost.saved_bytes) == 1_980
    for sp_on, kept, norms in ((True, 400, [100, 60]), (False, 720, [200, 120])):
        leaf, number = _rank_mla(cfg, sp_on, "mla-up-proj")
        assert number(leaf.cost.saved_bytes) == kept
        assert number(leaf.rerun.flops_matmul) == 12_000 + 9_360 == 21_360
        assert [number(x) for _, x in leaf.rerun.elements] == norms
    leaf, number = _rank_mla(cfg, True, "full")
    assert leaf.rerun is leaf.cost and number(leaf.rerun.flops_matmul) == 38_640


def test_a_ranks_weights_and_the_duplicated_weights_gradient_all_reduce(cfg):
    """The parameters are the same with and without SP (6,668 a layer). Under SP the rank's
    tp all-reduce of replicated gradients (fp32) holds, a layer, the two norms (2 x 48) and latent
    attention's duplicated weights: q_a 48 x 20, its norm 20, kv_a 48 x 16, its norm 12 (1,760):
    1,856; three layers and the final norm 48: 5,616 values, 22,464 bytes."""
    plain, shared = _estimate(cfg, False), _estimate(cfg, True)
    key = next(iter(shared.structure["layers"]))
    assert plain.part(key, "params") == shared.part(key, "params") == 6_668
    assert plain.part(key, "norm_params") == 96 and shared.part(key, "norm_params") == 96 + 960 + 20 + 768 + 12
    assert ("optimizer_all_reduce", 1, 4 * (3 * 1_856 + 48)) in shared.tensor_parallel_collectives(shared.stages[0])


def test_a_ranks_collectives_under_sp(cfg):
    """One micro-batch, tp 2, the whole model on one stage: the usual SP events on X = 960 bytes
    (reduce-scatters: 3 attention and 3 FFN outputs, the embedding, and the gradients of the 3 FFN
    and the head's gathered inputs; all-gathers: those 4 inputs, the 7 outputs' gradients, the 4
    regathered inputs), no d-wide gather before latent attention; per layer the latents' gathers
    (2 x 10 x 20 = 400, 2 x 10 x 12 = 240, the RoPE key 2 x 10 x 4 = 80) forward, their
    gradients' reduce-scatters, the two latents regathered. Without SP the all-reduces of the
    latents' gradient (2 x 10 x 32 = 640 a layer) stay as before."""
    shared = _estimate(cfg, True)
    events = shared.tensor_parallel_collectives(shared.stages[0])
    latent = [("all_gather", 3, 400), ("all_gather", 3, 240), ("all_gather", 3, 80), ("reduce_scatter", 3, 400),
              ("reduce_scatter", 3, 240), ("reduce_scatter", 3, 80), ("all_gather", 3, 400), ("all_gather", 3, 240)]
    assert events == [("reduce_scatter", 11, X), ("all_gather", 15, X), ("optimizer_all_reduce", 1, 22_464),
                      *latent, ("loss_all_reduce", 1, 3 * 4 * N)]
    assert shared.communication(shared.stages[0])["tp"] == {
        "reduce_scatter": 11 * X + 3 * 720, "all_gather": 15 * X + 3 * 720 + 3 * 640, "all_reduce": 22_464 + 120}
    plain = _estimate(cfg, False)
    assert ("all_reduce", 3, 640) in plain.tensor_parallel_collectives(plain.stages[0])


@pytest.mark.parametrize("recompute, expected", [
    ("none", []),
    # Megatron-Core's mla_up_proj checkpoint reruns linear_q_up_proj and linear_kv_up_proj, which
    # gather the latents inside it; the RoPE key was gathered before it
    ("mla-up-proj", [("all_gather", 3, 400), ("all_gather", 3, 240)]),
    ("deepseek", [("all_gather", 3, 400), ("all_gather", 3, 240)]),
    # full: each layer's forward again, its output reduce-scatters, its FFN's input gather, the
    # three latent gathers
    ("full", [("reduce_scatter", 6, X), ("all_gather", 3, X), ("all_gather", 3, 400), ("all_gather", 3, 240),
              ("all_gather", 3, 80)]),
])
def test_recomputation_reruns_the_latent_gathers_it_recomputes(cfg, recompute, expected):
    estimate = _estimate(cfg, True, recompute)
    assert estimate.recomputed_collectives(estimate.stages[0]) == expected


def test_whole_model_flops_do_not_change_with_sp(cfg):
    """Model and executed FLOPs are the whole model's: SP moves work between ranks, not into it."""
    plain, shared = _estimate(cfg, False), _estimate(cfg, True)
    for name in ("model_flops", "executed_flops"):
        assert plain.numbers[name] == shared.numbers[name]


def test_other_frameworks_and_op_policies_are_refused(cfg):
    """DTensor's and DeepSpeed's latent attention under SP run other plans (torchtitan's gathers the
    d-wide input and runs the down-projections on every token): one sentence each."""
    with pytest.raises(ConfigError, match="modelled for Megatron-Core only"):
        Layout(tp=TP, sp=True, dp=1, framework="fsdp2", zero=3).check(cfg)
    with pytest.raises(ConfigError, match="torchtitan's selective op checkpointing .FSDP2., which megatron"):
        _estimate(cfg, True, "torchtitan-op").numbers  # torchtitan's op policy: refused beside Megatron-Core


def test_deepseek_v3s_latent_gathers_at_its_recipes_layout():
    """DeepSeek-V3 (r_q 1,536, r_kv 512, d_r 64) at n 4,096, b 1, bf16, tp 2 folded: each all-gather
    moves 2 x 4,096 x 1,536 = 12,582,912, 2 x 4,096 x 512 = 4,194,304 and 2 x 4,096 x 64 = 524,288
    bytes, together 0.29 of the d-wide gather (2 x 4,096 x 7,168) a Llama-style attention runs."""
    from costmodel.presets import load_preset

    workload = Workload(seq_len=4096, batch=1, dtype="bf16", impl="megatron", attention="flash")
    layout = Layout(tp=2, sp=True, pp=8, dp=64, ep=64, etp=1, framework="megatron", zero=1)
    estimate = ParallelEstimate(load_preset("deepseek-v3"), workload, layout)
    key = next(k for k in estimate.structure["layers"] if k.endswith("moe"))
    gathers = [estimate.part(key, f"latent_gather_{name}") for name in ("q", "kv", "rope")]
    assert gathers == [12_582_912, 4_194_304, 524_288]
    assert round(sum(gathers) / (2 * 4096 * 7168), 2) == 0.29


@pytest.mark.slow
def test_a_measured_megatron_style_rank_moves_what_the_model_says(cfg):
    """Two gloo ranks run latent attention as Megatron-Core does under SP (validate/distributed/
    mla_sequence_parallel.py, fp32, the odd sizes, n 10): their output and every gradient equal the
    whole module's in one process (the RoPE key's reduce-scatter and the duplicated weights'
    all-reduce are what make them equal), and each collective's payload is the model's: the three
    latent gathers forward (LatentAttention.sequence_parallel_gathers), their gradients'
    reduce-scatters and the two regathers backward (the events latent_collectives gives one
    layer), the output projection's reduce-scatter and its gradient's all-gather (X, fp32), and
    the duplicated weights' gradients all-reduced once (replicated_params, 1,760 fp32 values)."""
    from validate.distributed.launch import run_gloo
    from validate.distributed.mla_sequence_parallel import MlaCase, measure_mla_sequence_parallel

    case = MlaCase(d=48, heads=6, q_rank=20, kv_rank=12, rope=4, nope=6, value=7, tokens=N)
    ranks = run_gloo(measure_mla_sequence_parallel, TP, case)
    fp32 = ParallelEstimate(cfg, Workload(seq_len=N, batch=1, dtype="fp32", impl="megatron", attention="flash"),
                            Layout(tp=TP, sp=True, dp=1, framework="megatron", zero=1))
    stage = fp32.stages[0]
    layers = cfg.n_decoder_layers
    model = sorted([kind, payload] for kind, calls, payload in fp32.latent_collectives(stage, ("forward", "backward"))
                   for _ in range(calls // layers))
    x = 4 * N * 48
    leaf, number = _rank_mla(cfg, True)
    for result in ranks:
        assert result["difference"] < 1e-4
        measured = result["collectives"]
        latent = sorted(e for e in measured["forward"] + measured["backward"] if e[1] != x)
        q, kv, rope = 4 * N * 20, 4 * N * 12, 4 * N * 4
        assert latent == model == sorted([["all_gather", q], ["all_gather", kv], ["all_gather", rope],
                                          ["reduce_scatter", q], ["reduce_scatter", kv], ["reduce_scatter", rope],
                                          ["all_gather", q], ["all_gather", kv]])
        assert [e for e in measured["forward"] if e[1] == x] == [["reduce_scatter", x]]
        assert [e for e in measured["backward"] if e[1] == x] == [["all_gather", x]]
        assert measured["optimizer"] == [["all_reduce", 4 * number(leaf.block.replicated_params())]] \
            == [["all_reduce", 4 * 1_760]]


@pytest.mark.parametrize("recompute", ["mla-up-proj", "deepseek"])
def test_deepseek_v3_recomputes_its_up_projections_gathers_under_sp(recompute, capsys):
    """The 25.09 H100 recipe's layout (tp 2, pp 8 x 4 virtual stages, ep 64 folded): rank 0 holds
    virtual stages 0, 8, 16 and 24, two layers each (61 layers over 32 chunks, the first 29 with 2),
    and a recomputation of the up-projections gathers their two latents again in each of the 8:
    12,582,912 and 4,194,304 bytes a call. The command runs too."""
    import cli
    from costmodel.presets import load_preset

    workload = Workload(seq_len=4096, batch=1, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
    layout = Layout(tp=2, sp=True, pp=8, dp=64, ep=64, etp=1, framework="megatron", zero=1, schedule="interleaved",
                    virtual_stages=4, microbatches=128)
    estimate = ParallelEstimate(load_preset("deepseek-v3"), workload, layout)
    stage = estimate.stages[0]
    assert stage.layers == (2, 2, 2, 2)
    assert estimate.recomputed_collectives(stage) == [("all_gather", 8, 12_582_912), ("all_gather", 8, 4_194_304)]
    assert cli.main(["simulate", "--train", "--model", "deepseek-v3", "--hardware", "h100-sxm", "--tp", "2", "--sp",
                     "--pp", "8", "--dp", "64", "--ep", "64", "--etp", "1", "--framework", "megatron", "--zero", "1",
                     "--seq-len", "4096", "--batch", "1", "--global-batch", "8192", "--recompute", recompute]) == 0
    assert "error" not in capsys.readouterr().err
