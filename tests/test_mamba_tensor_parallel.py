"""Mamba-2 mixers under tensor (and sequence) parallelism, as Megatron-Core's MambaMixer splits them
(NVIDIA/Megatron-LM d98e8a64, megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ and forward,
megatron/core/ssm/mamba_layer.py): in_proj column-parallel with its z, x, B, C and dt blocks each
split (nheads / tp heads, ngroups / tp groups), conv1d over the rank's x B C channels, dt_bias, A_log
and D over its heads, the gated RMSNorm over its groups (each group whole on one rank), out_proj
row-parallel; nothing of the mixer replicated, the layer's norm before it replicated as every norm.

Exact integers on the odd nemotron_h sizes of tests/test_hf_nemotron_h.py (d 48; Mamba-2 6 heads of
5, state 7, 2 groups, conv 3, chunks of 4; attention 4 heads, 2 KV heads of 10), its MLP 38 wide so
that tp 2 divides it, the pattern M*-M- (two Mamba layers), b 1, n 10, bf16, Megatron's profile
(mamba_ssm's saved bytes). A rank at tp 2 holds H 3 heads and G 1 group:
  inner H P = 15, conv channels H P + 2 G N = 29, in_proj's outputs 2 H P + 2 G N + H = 47
  parameters  dt_bias, A_log, D 3 x 3 = 9; conv 29 x 3 + 29 = 116; in_proj 48 x 47 = 2,256;
              norm 15; out_proj 15 x 48 = 720: 3,116 (the whole mixer's 6,232 over 2)
  forward     in_proj 2 x 10 x 48 x 47 = 45,120; out_proj 2 x 10 x 15 x 48 = 14,400; conv
              2 x 29 x (10 + 3 - 1) x 3 = 2,088; scan (3 chunks of 4) 3 x (2 x 3 x 16 x 12 +
              4 x 3 x 4 x 5 x 7 + 2 x 16 x 5 x 7) = 3 x 3,952 = 11,856: 73,464, backward twice that
  saved       2 x 10 x (47 + 3 x 15) + 4 x 10 x 1 + 2 x 4 x 3 = 1,904 (mamba_ssm's path)
  cache       29 x 3 x 2 + 4 x 3 x 5 x 7 = 594 bytes a sequence
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
from costmodel.layout.spec import tensor_split_error
from costmodel.layout.split import column_inputs, row_outputs, substitution
from costmodel.tree import CostModel, model_values, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from test_hf_nemotron_h import ODD  # noqa: E402

N, E, TP = 10, 2, 2
X = E * N * 48  # one sublayer's input or output, every token: 960 bytes
MIXER = 3_116  # one rank's mixer parameters at tp 2 (the docstring's sum)


@pytest.fixture(scope="module")
def cfg():
    return from_hf_config(dict(ODD, intermediate_size=38, hybrid_override_pattern="M*-M-"), "odd-hybrid-tp")


def _workload() -> Workload:
    return Workload(seq_len=N, batch=1, dtype="bf16", impl="megatron", attention="flash")


def _estimate(cfg, sp_on: bool, tp: int = TP) -> ParallelEstimate:
    return ParallelEstimate(cfg, _workload(), Layout(tp=tp, sp=sp_on, dp=1, framework="megatron", zero=1))


def _mixer(cfg, tp: int = TP):
    """The Mamba-2 mixer's leaf and a function giving its numbers on one of tp ranks."""
    tree = CostModel(cfg, profile_for(cfg, _workload(), precision="megatron"))
    leaf = next(l for l in tree.leaves if isinstance(l.block, B.Mamba2Mixer))
    subs = substitution(leaf.block, sp_on=True, vocabulary="pad128", loss_parallel=True, encoder=False)
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 1, S.n: N, S.e: E, S.T: 0, S.s: N,
          S.tp: tp}
    return leaf, lambda expr: int(sp.sympify(expr).xreplace(subs).xreplace(at))


def test_a_ranks_mixer_parameters_are_the_whole_over_tp(cfg):
    """Each tensor of the rank's mixer (registration order: dt_bias, A_log, D, conv weight and bias,
    in_proj, the norm, out_proj) is the whole one's over 2: nothing replicated."""
    leaf, number = _mixer(cfg)
    _, whole = _mixer(cfg, tp=1)
    shards = [number(t.rows * t.cols) for t in leaf.cost.tensors]
    assert shards == [3, 3, 3, 87, 29, 2_256, 15, 720] and sum(shards) == MIXER
    assert [whole(t.rows * t.cols) for t in leaf.cost.tensors] == [2 * x for x in shards]


def test_a_ranks_mixer_flops_saved_bytes_and_cache(cfg):
    leaf, number = _mixer(cfg)
    assert number(leaf.cost.flops_matmul) == 45_120 + 14_400 + 2_088 + 11_856 == 73_464
    assert number(leaf.cost.flops_matmul_backward) == 2 * 73_464
    assert number(leaf.cost.saved_bytes) == 1_904
    assert number(leaf.cost.kv_cache_bytes) == 594
    _, whole = _mixer(cfg, tp=1)
    assert whole(leaf.cost.flops_matmul) == 2 * 73_464 and whole(leaf.cost.saved_bytes) == 2 * 1_904


def test_the_ranks_layers_hold_the_split_mixer_and_a_replicated_norm(cfg):
    """A Mamba layer a rank holds: its mixer (3,116) and its norm (48, replicated, its gradient
    all-reduced over tp under SP); forward and backward 3 x 73,464 = 220,392; kept for backward
    the mixer's 1,904 and the norm's (its input and output, 2 x 960, one of them halved by SP).
    The mixer's gated-norm weight is split (tensor_model_parallel), not sequence-parallel: only the
    layer's norm is in the gradients all-reduced over tp under SP (norm_params 48)."""
    for sp_on, saved in ((False, 1_904 + 2 * X), (True, 1_904 + X)):
        est = _estimate(cfg, sp_on)
        assert est.part("layer.decoder.mamba", "params") == MIXER + 48
        assert est.part("layer.decoder.mamba", "norm_params") == 48
        assert est.part("layer.decoder.mamba", "flops") == 3 * 73_464
        assert est.part("layer.decoder.mamba", "saved") == saved
    whole = _estimate(cfg, False, tp=1)
    assert whole.part("layer.decoder.mamba", "params") == 2 * MIXER + 48


def test_one_column_and_one_row_parallel_linear(cfg):
    leaf, _ = _mixer(cfg)
    assert column_inputs(leaf.block, "fused", True) == column_inputs(leaf.block, "separate", True) == 1
    assert row_outputs(leaf.block) == 1
    counts = _estimate(cfg, True).structure["counts"]["layer.decoder.mamba"]
    assert counts == {"column_inputs": 1, "row_outputs": 1, "sublayers": 1, "latents": 0, "attentions": 0,
                      "mamba_mixers": 1}


def test_a_ranks_collectives(cfg):
    """Five layers (M * - M -), each one column- and one row-parallel region, X = 960 bytes.
    Without SP: all-reduces of the 5 outputs forward, the embedding's, the 5 inputs' gradients and
    the head's: 12 (8 before the mixers were split). With SP (Megatron regathers the inputs in
    backward): reduce-scatters of the 5 outputs, the embedding's and the 6 gathered inputs'
    gradients (12); all-gathers of those 6 inputs, the 6 outputs' gradients and the 6 regathered
    inputs (18); the norms' gradients (5 x 48 + the final 48, fp32) all-reduced once."""
    plain, shared = _estimate(cfg, False), _estimate(cfg, True)
    assert plain.tensor_parallel_collectives(plain.stages[0]) == [("all_reduce", 12, X), ("loss_all_reduce", 1, 120)]
    assert shared.tensor_parallel_collectives(shared.stages[0]) == [
        ("reduce_scatter", 12, X), ("all_gather", 18, X), ("optimizer_all_reduce", 1, 4 * 288),
        ("loss_all_reduce", 1, 120)]


def test_the_ranks_training_kernels_run_its_heads_and_groups(cfg):
    """The rank's GEMMs, and mamba_ssm's kernels on it (costmodel/mamba_kernels.py at its shapes): the
    per-chunk products over its 3 chunks x 3 heads (the chunk states, P x N from Q) and 3 chunks x
    1 group (C B^T, Q x Q from N); the conv reads and writes its 29 channels (in_proj's 47-wide
    row is not a multiple of 8: copied first), 2 x (1 + 1) x 2 x 10 x 29 = 2,320 bytes."""
    from costmodel.kernel_time import leaf_kernels

    leaf, _ = _mixer(cfg)
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 1, S.n: N, S.e: E, S.T: 0, S.s: N,
          S.tp: TP}
    local = substitution(leaf.block, sp_on=False, vocabulary="pad128", loss_parallel=True, encoder=False)
    listed = leaf_kernels(leaf, at, fused_attention=True, local=local)
    # in_proj (10 tokens, 48 -> 47) and out_proj (15 -> 48), the rank's column and row shards
    assert [(g.m, g.n, g.k, g.count) for g in listed[:2]] == [(10, 47, 48, 1), (10, 48, 15, 1)]
    kernels = {k.name: k for k in listed if hasattr(k, "products") and not k.backward}
    assert [(g.m, g.n, g.k, g.count) for g in kernels["_chunk_state_fwd"].products] == [(5, 7, 4, 9)]
    assert [(g.m, g.n, g.k, g.count) for g in kernels["_bmm_chunk_fwd"].products] == [(4, 4, 7, 3)]
    assert kernels["causal_conv1d_fwd"].bytes == 2_320


def test_tp_must_divide_the_mamba_heads_and_groups(cfg):
    """MambaMixer asserts nheads % tp_size == 0 and ngroups % tp_size == 0."""
    heads = from_hf_config(dict(ODD, intermediate_size=40, hybrid_override_pattern="M*-"), "odd-six-heads")
    assert tensor_split_error(heads, 4, inference=False) == "does not divide the Mamba-2 heads (6) of model 'odd-six-heads'"
    groups = from_hf_config(dict(ODD, intermediate_size=40, mamba_num_heads=8, hybrid_override_pattern="M*-"),
                            "odd-two-groups")
    assert tensor_split_error(groups, 4, inference=True) == "does not divide the Mamba-2 groups (2) of model 'odd-two-groups'"
    assert tensor_split_error(cfg, 2, inference=False) is None
    with pytest.raises(ConfigError, match="Mamba-2 groups"):
        ParallelEstimate(groups, _workload(), Layout(tp=4, dp=1, framework="megatron"))


def test_nemotron_3_nano_at_tp_16_is_refused_in_one_sentence(capsys):
    """Its 8 groups (n_groups) cap Megatron's tp at 8: status 2, one line, no traceback."""
    from tests.cli_run import run_main

    code, _, err = run_main(["simulate", "-m", "nemotron-3-nano", "--train", "--tp", "16", "--gpus", "16",
                             "--framework", "megatron"], capsys)
    assert code == 2 and "Mamba-2 groups (8)" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def measured_ranks() -> dict[bool, list[dict]]:
    """Both measurements (SP off, SP on) in one spawn of the two gloo ranks (launch.run_jobs; spawning a rank
    costs seconds of imports, so the two modes share one): {sp_on: [rank 0's result, rank 1's]}."""
    from functools import partial

    from validate.distributed.launch import run_gloo, run_jobs
    from validate.distributed.mamba_tensor_parallel import MambaCase, measure_mamba_tensor_parallel

    case = MambaCase(d=48, heads=6, head_dim=5, state=7, groups=2, conv=3, chunk=4, tokens=N)
    modes = (False, True)
    jobs = [(partial(measure_mamba_tensor_parallel, sequence_parallel=sp_on), case) for sp_on in modes]
    by_rank = run_gloo(run_jobs, TP, jobs, timeout_s=300)
    return {sp_on: [by_rank[rank][i] for rank in range(TP)] for i, sp_on in enumerate(modes)}


@pytest.mark.parametrize("sp_on", [False, True])
def test_a_measured_megatron_style_rank_moves_what_the_model_says(cfg, sp_on, measured_ranks):
    """Two gloo ranks each run transformers' NemotronHMamba2Mixer on 3 heads and 1 group, loaded
    with their rows, channels and columns of the whole mixer (validate/distributed/
    mamba_tensor_parallel.py, fp32, the odd sizes, n 10): the output and every gradient equal the
    whole mixer's in one process; each holds the model's 3,116 parameters (the whole 6,232); and
    the collectives are the model's for one mixer (one column-parallel input, one row-parallel
    output, each X = 4 x 10 x 48 = 1,920 bytes in fp32): without SP an all-reduce forward (out_proj)
    and one backward (in_proj's input gradient); with SP an all-gather and a reduce-scatter each
    way (the model's Megatron profile adds the input's regather in backward, which this autograd
    function does not do: it keeps the gathered input)."""
    x = 4 * N * 48
    fp32 = ParallelEstimate(cfg, Workload(seq_len=N, batch=1, dtype="fp32", impl="megatron", attention="flash"),
                            Layout(tp=TP, sp=sp_on, dp=1, framework="megatron", zero=1))
    assert fp32.numbers["boundary"] == x
    if sp_on:
        expected = {"forward": [["all_gather", x], ["reduce_scatter", x]],
                    "backward": [["all_gather", x], ["reduce_scatter", x]]}
    else:
        expected = {"forward": [["all_reduce", x]], "backward": [["all_reduce", x]]}
    counts = fp32.structure["counts"]["layer.decoder.mamba"]  # the model's regions of one mixer layer
    model = ({"all_gather": counts["sublayers"] + counts["row_outputs"],
              "reduce_scatter": counts["row_outputs"] + counts["sublayers"]} if sp_on
             else {"all_reduce": counts["row_outputs"] + counts["column_inputs"]})
    for result in measured_ranks[sp_on]:
        measured = [kind for phase in ("forward", "backward") for kind, _ in result["collectives"][phase]]
        assert {kind: measured.count(kind) for kind in model} == model
        assert result["difference"] < 1e-4
        assert result["params"] == MIXER and result["whole_params"] == 2 * MIXER
        assert result["collectives"] == expected
