"""What a rank keeps for backward of its routed experts under expert tensor parallelism (wt43_etpfix).

Megatron-Core core_v0.12.0's MoEAlltoAllTokenDispatcher gathers the received slots over the etp group before
the experts and reduce-scatters their output back before the all-to-all home, where unpermute multiplies it
by the routing probabilities (token_dispatcher.py token_unpermutation, moe_utils.unpermute). So the experts'
gathered input and their d_x / etp-wide hidden tensors are on etp x the rank's slots, and the slot indices,
the routing weights and the down output the combine weights are on the rank's own slots
(blocks/experts.py Experts.dispatcher_saved_bytes; layout/parts.py takes 1 - 1/etp of them off the gathered
count). Before, all of the Experts leaf was counted at the gathered n etp / tp tokens.

The tiny MoE (d 16, d_x 24, E 4, k 2, fp32), b 2, n 16, tp 4 with sequence parallelism: each rank routes
b n / tp = 8 tokens, S = 16 slots, under balanced routing (each expert S / E of every rank's slots).
Measured on gloo (validate/distributed/expert_tensor_parallel.py measure_expert_saved, four ranks, one expert
grid of etp x ep = 4): per rank, by region of the layer,
  router's top-k indices 8 S = 128; dispatch's token of each slot 8 S = 128;
  experts e G (d + 2 d_x / etp + d_x / etp), G = etp S: 5,632 (etp 1), 6,656 (etp 2), 8,704 (etp 4);
  combine (the slot order 8 S, the fp32 weights 4 S, the down output e S d): 1,216 at every etp.
The model's Experts leaf keeps those and the grouped GEMM's int32 offsets 4 E = 16 (the harness's loop over
experts has no such tensor): 7,120, 8,144, 10,192. Before the fix: 7,120, 9,616, 14,608.
"""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate

TINY = dict(model_type="mixtral", hidden_size=16, intermediate_size=24, num_local_experts=4,
            num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
            vocab_size=32, max_position_embeddings=64, tie_word_embeddings=False)
#: etp -> (dp, ep) of a layout whose rank holds each expert at etp ways (balanced load: the bytes do not
#: depend on ep; etp 4 beside tp 4 needs ep 2 and dp 2, as the model refuses ep 1 with --etp)
GRIDS = {1: (1, 4), 2: (1, 2), 4: (2, 2)}
MEASURED = {1: 5_632, 2: 6_656, 4: 8_704}  # the experts region on gloo; router 128, dispatch 128, combine 1,216
OFFSETS = 4 * 4  # int32 group offsets, one per expert


def _model_expert_saved(etp: int) -> int:
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(TINY, "tiny-moe")
    workload = Workload(seq_len=16, batch=2, dtype="fp32", precision="pure", impl="megatron")
    dp, ep = GRIDS[etp]
    rank = ParallelEstimate(cfg, workload, Layout(tp=4, sp=True, dp=dp, ep=ep, etp=etp, framework="megatron"))
    key = next(k for k in rank.structure["layers"])
    return rank.part(key, "expert_saved")


@pytest.mark.parametrize("etp", [1, 2, 4])
def test_the_experts_keep_the_gathered_rows_and_the_home_slots_as_measured(etp):
    """The gloo figures written down (the slow test below re-measures them): 4 E + 128 + 128 + experts + 1,216."""
    assert _model_expert_saved(etp) == OFFSETS + 128 + 128 + MEASURED[etp] + 1_216 == {
        1: 7_120, 2: 8_144, 4: 10_192}[etp]


def test_only_the_gathered_input_grows_with_etp():
    """The gathered input, e (etp - 1) S d more; the hidden tensors' etp x rows at d_x / etp the same;
    the home slots' terms not at all (before: (etp - 1) S (28 + 2 e d), 2,496 and 7,488)."""
    base = _model_expert_saved(1)
    assert [_model_expert_saved(etp) - base for etp in (2, 4)] == [4 * 16 * 16 * 1, 4 * 16 * 16 * 3]


@pytest.mark.slow
def test_expert_saved_bytes_on_gloo():
    """Four gloo ranks, the layer at etp 1, 2 and 4 in turn (about 20 s)."""
    from validate.distributed.experts import ExpertCase
    from validate.distributed.expert_tensor_parallel import measure_expert_saved
    from validate.distributed.launch import run_gloo

    case = ExpertCase(d=16, d_x=24, experts=4, k=2, batch=2, seq_len=16, tp=4)
    results = run_gloo(measure_expert_saved, 4, case, (1, 2, 4), timeout_s=240)
    for result in results:
        for etp in (1, 2, 4):
            measured = result[etp]
            assert measured["home_slots"] == 16 and measured["gathered_rows"] == 16 * etp
            assert measured["regions"] == {"router": 128 + 128, "dispatch": 128, "experts": MEASURED[etp],
                                           "combine": 1_216}
            kept = sum(measured["regions"].values()) - 4 * 8 * 4  # less the router's fp32 softmax (Router's)
            assert kept + OFFSETS == _model_expert_saved(etp)
