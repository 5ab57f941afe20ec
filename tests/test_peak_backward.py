"""The training peak of BERT (no LM head; loss = last_hidden_state.sum() + pooler_output.sum()) lies
inside backward: costmodel.peak's walk through the head and the last layer (backward_moments)
against MemTracker (validate.measure.peak_memory_memtracker), fp32, eager, CPU, AdamW.

Where the peak is: the FFN output matrix's backward (its input gradient b n d_ff, its weight
gradients, with the residual's held gradient and dropout's gradient) when d_ff is large beside n,
and the weighted sum's backward in attention (the probabilities' gradient, b h n^2) when n is.
Before the walk the analytic peak (the start of backward) was low by the cited "before" bytes.
"""

from __future__ import annotations

import pytest
import torch

from costmodel.config import Workload
from costmodel.evaluate import exact, values
from costmodel.peak import backward_moments, training_model, training_peak_bytes, walked_leaves
from costmodel.presets import load_preset
from validate.compare import build, training_loss
from validate.measure import backward_live_bytes, peak_memory_memtracker


def bert(d: int, d_ff: int, layers: int, heads: int = 4):
    return load_preset("bert-base-uncased").replace(
        name=f"bert-{d}-{d_ff}-{layers}", vocab_size=1000, d_model=d, n_heads=heads, d_ff=d_ff,
        n_encoder_layers=layers, max_positions=512)


def measured(cfg, workload: Workload) -> int:
    torch.manual_seed(0)
    model, inputs, _ = build(cfg, workload, "hf")
    opt = torch.optim.AdamW(model.parameters())
    return peak_memory_memtracker(model, inputs, loss_fn=training_loss(cfg, "hf"), optimizer=opt)["Total"]


# (config, b, n, MemTracker's peak Total = the analytic peak, the analytic peak before the walk)
CASES = [
    pytest.param(bert(96, 200, 3), 3, 100, 11_364_328, 11_132_676, id="d96-ff200-3layers-3x100"),  # FFN
    pytest.param(bert(64, 256, 1), 1, 512, 18_748_680, 15_977_220, id="d64-1layer-1x512"),  # attention
    pytest.param(bert(96, 200, 1), 3, 128, 6_110_760, 5_846_180, id="d96-ff200-1layer-3x128",
                 marks=pytest.mark.slow),
    pytest.param(bert(256, 1024, 1), 2, 240, 23_639_048, 22_015_584, id="d256-1layer-2x240",
                 marks=pytest.mark.slow),
    pytest.param(bert(256, 1024, 2), 4, 480, 180_597_768, 173_434_884, id="d256-2layers-4x480",
                 marks=pytest.mark.slow),
    pytest.param(bert(64, 256, 2), 1, 512, 33_899_016, 31_127_556, id="d64-2layers-1x512",
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("cfg, batch, seq, cited, before", CASES)
def test_bert_peaks_inside_backward_to_the_byte(cfg, batch, seq, cited, before):
    workload = Workload(seq_len=seq, batch=batch, dtype="fp32")
    analytic = training_peak_bytes(cfg, workload.replace(impl="hf"))
    assert analytic["phase"] == "backward"
    assert max(analytic["optimizer_step"], analytic["forward_end"]) == before
    assert analytic["total"] == measured(cfg, workload) == cited


@pytest.mark.slow
def test_memtracker_keeps_one_more_context_gradient_at_b_above_one():
    """At b > 1 the heads' gradient is copied (clone) before the weighted sum's backward, and the
    original (b x n x d) is freed at once in a plain run; MemTracker's module hooks (ModTracker's
    multi-grad hooks) keep it alive, so MemTracker reads exactly e*b*n*d more at the attention's
    peak. The walk models the plain run: the next test's hookless instrument agrees with it."""
    cfg, workload = bert(64, 256, 2), Workload(seq_len=384, batch=2, dtype="fp32")
    analytic = training_peak_bytes(cfg, workload.replace(impl="hf"))["total"]
    assert analytic == 39_348_744
    assert measured(cfg, workload) - analytic == 4 * 2 * 384 * 64


@pytest.mark.parametrize("cfg, batch, seq, rise", [
    (bert(64, 256, 1), 2, 384, 2_513_156),  # attention's weighted sum, b > 1 (MemTracker: + e b n d)
    (bert(96, 200, 1), 3, 100, 236_452),  # the FFN output matrix
])
def test_the_walk_rises_above_its_start_as_live_storages_do(cfg, batch, seq, rise):
    """backward_live_bytes (no module hooks): the largest rise of live bytes over backward above
    its start equals the walk's largest moment less its start, to the byte."""
    workload = Workload(seq_len=seq, batch=batch, dtype="fp32")
    torch.manual_seed(0)
    model, inputs, _ = build(cfg, workload, "hf")
    trace = backward_live_bytes(model, inputs, training_loss(cfg, "hf"))
    tree = training_model(cfg, workload.replace(impl="hf"))
    subs = values(cfg, workload.replace(impl="hf"))
    start = sum(exact(tree.total(q), subs) for q in ("weight_bytes", "input_bytes", "buffer_bytes"))
    moments = [exact(m, subs) for m in backward_moments(tree, start)]
    assert max(live for _, live in trace) - trace[0][1] == max(moments) - start == rise


def test_the_walk_stops_at_the_cross_entropy_so_lms_keep_their_candidates():
    cfg = load_preset("gpt2").replace(name="gpt2-64", vocab_size=1000, d_model=64, n_heads=4, d_ff=256,
                                      n_decoder_layers=2, max_positions=512)
    workload = Workload(seq_len=256, batch=4, dtype="fp32", impl="hf")
    model = training_model(cfg, workload)
    (loss, _), *_ = walked_leaves(model)
    assert loss.name == "loss" and loss.block.backward() is None
    subs = values(cfg, workload)
    peak = training_peak_bytes(cfg, workload)
    start = peak["forward_end"]
    assert [exact(m, subs) for m in backward_moments(model, start)] == [start]
    assert peak["phase"] == "forward_end" and peak["total"] == 54_815_752  # tests/test_peak.py's LONG case


def test_the_walk_covers_the_pooler_and_a_whole_post_norm_layer_of_bert():
    """The leaves walked and stated: the loss, the pooler, the FFN sublayer, the attention's norm,
    residual, dropout, output and weighted sum; the walk stops at the softmax (not stated: its
    moments come after the probabilities' kept tensors go, so none is higher)."""
    model = training_model(bert(64, 256, 2), Workload(seq_len=128, batch=2, dtype="fp32", impl="hf"))
    stated = []
    for leaf, _ in walked_leaves(model):
        if leaf.block.backward() is None:
            break
        stated.append(leaf.path)
    assert stated == [
        "head.loss", "head.pooler", "encoder.layer.ffn.norm", "encoder.layer.ffn.residual",
        "encoder.layer.ffn.dropout", "encoder.layer.ffn.mlp", "encoder.layer.self_attention.norm",
        "encoder.layer.self_attention.residual", "encoder.layer.self_attention.dropout",
        "encoder.layer.self_attention.out", "encoder.layer.self_attention.weighted_sum"]
