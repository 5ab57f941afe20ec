"""The pipelined runs' terms of a training step (issue 18, pipelined runs): Megatron-LM's
scatter/gather pipeline sends, the tied-embedding all-reduce between the first and the last stage,
and fp16 gradient accumulation's in-place adds, each checked against its formula on Narayanan et
al.'s 310.1B row (tp 8, pp 16, two virtual stages a rank, dp 15, 144 micro-batches of one
2,048-token sequence, fp16, a100-80gb: 8 GPUs a node, 25 GB/s of HDR InfiniBand a GPU)."""

from __future__ import annotations

import dataclasses

import pytest

from costmodel.collectives import nccl_facts
from costmodel.hardware import load_hardware
from costmodel.layout import ParallelEstimate
from costmodel.layout.time import StepTime
from reports.published_runs import narayanan_runs, other_runs_data

H, V_SHARD, TOKENS = 16384, 51200 // 8, 2048
BOUNDARY = 2 * TOKENS * H  # fp16 bytes of one micro-batch's hidden states: 67,108,864
INTER = 25e9 * 0.73  # the NIC's bandwidth at NCCL's inter-node efficiency (nccl_facts.json)
LATENCY = 1e-5  # a100-80gb's collective_latency_s
A100_ALL_REDUCE_BUSBW_64MIB = 171.54e9  # nccl_facts.json, the A100 node's curve at 67,108,864 bytes


def _row_310b():
    row, cfg, workload, layout, overlap = next(run for run in narayanan_runs() if run[0][0] == 310.1)
    return cfg, workload, layout, overlap


def _estimate(**layout_changes) -> ParallelEstimate:
    cfg, workload, layout, _ = _row_310b()
    return ParallelEstimate(cfg, workload, dataclasses.replace(layout, **layout_changes))


def test_the_facts_the_formulas_below_read():
    hardware = load_hardware("a100-80gb")
    assert hardware.link(1920) == 25e9 and hardware.collective_latency_s == LATENCY
    assert float(nccl_facts()["inter_node_efficiency"]["value"]) == 0.73
    curve = dict(next(c for c in nccl_facts()["all_reduce_busbw"] if "a100-80gb" in c["hardware"])
                 ["points_bytes_gbps"])
    assert curve[BOUNDARY] * 1e9 == A100_ALL_REDUCE_BUSBW_64MIB


def test_scatter_gather_sends_one_tp_th_and_gathers_the_whole_boundary():
    """Megatron-LM (p2p_communication.py, scatter_gather_tensors_in_pipeline): without sequence
    parallelism each of the 8 tensor-parallel ranks sends 1/8 of the boundary; the receiver
    all-gathers it. The last rank runs stages 15 and 31: stage 15 sends forward to rank 0's stage
    16 and backward to rank 14, stage 31 (the last) backward only: 3 sends a micro-batch; an inner
    rank 4, the first 3."""
    estimate = _estimate()
    first, inner, last = estimate.stages[0], estimate.stages[1], estimate.stages[15]
    assert BOUNDARY == 67_108_864 == estimate.numbers["boundary"]
    assert estimate.pipeline_exchange(last) == (3, BOUNDARY // 8, BOUNDARY)
    assert estimate.pipeline_exchange(inner) == (4, 8_388_608, BOUNDARY)
    assert estimate.pipeline_exchange(first)[0] == 3
    communication = estimate.communication(last)
    assert communication["pp"]["send"] == communication["pp"]["recv"] == 144 * 3 * 8_388_608
    # the gathers are tensor-parallel all-gathers; without sequence parallelism the layers gather nothing
    assert communication["tp"]["all_gather"] == 144 * 3 * BOUNDARY


def test_the_pipeline_exchange_seconds_of_the_310b_row():
    """Per micro-batch on the last rank: 3 sends of 8 MiB over InfiniBand at 0.73 x 25 GB/s plus
    a latency each, and 3 all-gathers of 64 MiB inside the node at the A100 curve's bus bandwidth
    ((8 - 1)/8 of the payload moves)."""
    time = StepTime(_estimate(), load_hardware("a100-80gb"))
    last = time.estimate.stages[15]
    sends = 3 * (BOUNDARY / 8) / INTER + 3 * LATENCY
    gathers = 3 * BOUNDARY * 7 / 8 / A100_ALL_REDUCE_BUSBW_64MIB
    assert time.pipeline(last) == pytest.approx(sends + gathers, rel=1e-12)
    assert time.pipeline(last) == pytest.approx(2.4359e-3, abs=1e-7)  # 1.409 ms of sends, 1.027 of gathers
    assert time.stage(last)["pp"] == time.pipeline(last)


def test_sequence_parallelism_sends_its_shard_and_gathers_nothing():
    estimate = _estimate(sp=True)
    assert estimate.pipeline_exchange(estimate.stages[15]) == (3, BOUNDARY // 8, 0)


def test_frameworks_that_do_not_scatter_send_the_whole_boundary(monkeypatch):
    from costmodel.layout import frameworks

    plain = dataclasses.replace(frameworks.FRAMEWORKS["megatron"], pp_scatter_gather=False)
    monkeypatch.setitem(frameworks.FRAMEWORKS, "megatron", plain)
    estimate = _estimate()
    assert estimate.pipeline_exchange(estimate.stages[15]) == (3, BOUNDARY, 0)
    one = _estimate(pp=1, virtual_stages=1, schedule="1f1b", stage_layers=None)
    assert one.pipeline_exchange(one.stages[0]) == (0, 0, 0)


def test_the_tied_embedding_all_reduce_between_the_first_and_the_last_stage():
    """Megatron-LM's train_step all-reduces word_embeddings' gradient over the embedding group
    (the first and the last stage) after the backward: the rank's 6,400 x 16,384 rows in fp16
    (these fp16 runs keep fp16 gradients), two ranks in two nodes: the payload crosses the NIC once."""
    time = StepTime(_estimate(), load_hardware("a100-80gb"))
    payload = 2 * V_SHARD * H
    assert payload == 209_715_200
    first, inner, last = (time.estimate.stages[r] for r in (0, 1, 15))
    assert time.estimate.tied_embedding_gradient(first) == time.estimate.tied_embedding_gradient(last) == payload
    assert time.estimate.tied_embedding_gradient(inner) == 0
    # NCCL's ring over 2 nodes, one rank each: its 8.4 us base latency (no in-node call carries it)
    # and 2 network steps of 14 us (nccl_facts.json inter_node_latency; its tree, 2 x log2(2)
    # steps, moves the bytes at .92 x .9 and is slower).
    assert time.tied_embedding(last) == pytest.approx(payload / INTER + 8.4e-6 + 2 * 14e-6, rel=1e-12)
    assert time.stage(first)["pp_step"] == time.tied_embedding(first)


def test_fp16_gradient_accumulation_adds_each_later_micro_batch_in_place():
    """143 of the 144 micro-batches add their gradient into the held one: 3 x 2 bytes a parameter
    (torch's AccumulateGrad, grad += new), memory-bound at 0.8 x 2,039 GB/s. The last rank holds
    6 layers of 12h^2/8 + 7h/8 + 6h parameters (the column-parallel biases split, the row-parallel
    biases and both LayerNorms whole), the final LayerNorm (2h) and its copy of the tied table."""
    time = StepTime(_estimate(), load_hardware("a100-80gb"))
    last = time.estimate.stages[15]
    params = 6 * (12 * H * H // 8 + 7 * H // 8 + 6 * H) + 2 * H + V_SHARD * H
    assert params == 2_521_485_312
    assert time.estimate.on_stage(last, "params") + time.estimate.tied_copy(last) == params
    assert time.gradient_accumulation(last) == pytest.approx(143 * 3 * 2 * params / (0.8 * 2039e9), rel=1e-12)
    step = time.step()
    assert step["gradient_accumulation_seconds"] == max(time.gradient_accumulation(s) for s in
                                                        (time.estimate.stages[0], last))


def test_no_accumulation_pass_in_bf16_or_with_one_micro_batch():
    """bf16 Megatron accumulates in the weight-gradient GEMM's fp32 output (gradient_accumulation_fusion)."""
    hardware = load_hardware("a100-80gb")
    cfg, workload, layout, _ = _row_310b()
    bf16 = StepTime(ParallelEstimate(cfg, dataclasses.replace(workload, dtype="bf16"), layout), hardware)
    assert bf16.gradient_accumulation(bf16.estimate.stages[0]) == 0.0
    one = StepTime(_estimate(microbatches=16), hardware)
    assert one.gradient_accumulation(one.estimate.stages[0]) > 0
    single = StepTime(ParallelEstimate(cfg, workload, dataclasses.replace(layout, pp=1, virtual_stages=1,
                                       schedule="1f1b", microbatches=1, tp=8)), hardware)
    assert single.gradient_accumulation(single.estimate.stages[0]) == 0.0


def test_the_step_adds_every_term():
    time = StepTime(_estimate(), load_hardware("a100-80gb"))
    step = time.step()
    exposed = step["exposed_communication_seconds"]
    parts = (step["compute_seconds"] + exposed["tp"] + exposed["pp"] + exposed["dp"] + step["bubble_seconds"]
             + step["optimizer_seconds"] + step["gradient_accumulation_seconds"] + step["overlap_contention_seconds"])
    assert step["seconds"] == pytest.approx(parts, rel=1e-12)
    # the data-parallel reduction hidden under the backward slows it by 18.9% while it runs
    assert step["overlap_contention_seconds"] == pytest.approx(
        step["hidden_communication_seconds"] * 0.189 / 1.189, rel=1e-12)
    assert step["hidden_communication_seconds"] > 0


def test_empty_edge_chunks_put_the_layers_between_an_embedding_and_a_head_chunk():
    from costmodel.config import ConfigError
    from costmodel.layout.schedule import empty_edge_chunks

    assert empty_edge_chunks(126, 128) == (0,) + (1,) * 126 + (0,)
    assert empty_edge_chunks(7, 5) == (0, 3, 2, 2, 0)
    with pytest.raises(ConfigError, match="at least 3 pipeline stages"):
        empty_edge_chunks(4, 2)


def test_llama_3s_pipeline_as_section_3_3_2_states_it():
    """The 8k- and 16k-GPU rows of Llama 3 405B (Table 4): the interleaved schedule whose first
    and last chunks hold only the embedding and only the head, one layer fewer on the first and
    last ranks, so a chunk is one layer and V = 8 (16 x 8 - 2 = 126 layers,
    costmodel/published_runs.json). The same 2,048 sequences a step: doubling dp halves the
    micro-batches a pipeline (32 -> 16), so the bubble (p - 1)/(v m) doubles (15/256 -> 15/128),
    and the model's 16k / 8k ratio follows the published 400 / 430 (1F1B made it 0.75)."""
    from costmodel.layout import Layout
    from costmodel.presets import load_preset
    from reports.published_runs import train_run

    data = other_runs_data()
    source = data["sources"]["llama3"]
    assert (source["schedule"], source["virtual_stages"], source["empty_edge_chunks"]) == ("interleaved", 8, True)
    assert 16 * source["virtual_stages"] - 2 == load_preset("llama3.1-405b").n_layers == 126
    runs = {r["dp"]: r for r in data["runs"] if r["id"].startswith("llama3")}
    eight, sixteen = (train_run(runs[dp], source, "kernels") for dp in (64, 128))
    published = runs[128]["published_tflops_per_gpu"] / runs[64]["published_tflops_per_gpu"]
    assert sixteen / eight == pytest.approx(published, abs=0.015)
    assert Layout(pp=16, microbatches=16, schedule="interleaved", virtual_stages=8).bubble() == 15 / 8
    # both rows too fast by 6-8%: the H100's GEMMs at the sustained MSMF, every send exposed (10-11%
    # before the TP all-gathers and reduce-scatters took NCCL's ring rate, not the NVLS all-reduce's)
    assert 1.05 <= eight / runs[64]["published_tflops_per_gpu"] <= 1.16
    assert 1.05 <= sixteen / runs[128]["published_tflops_per_gpu"] <= 1.16
