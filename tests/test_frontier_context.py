"""Context parallelism (costmodel/layout/context.py): a rank holds n / cp tokens, its exchange moves the
rank's tensor-parallel share of the key/value heads (all-gather or ring, against torch's ring attention on
gloo), sequence parallelism beside it, and the refusals (split from tests/test_frontier_layouts.py)."""

from __future__ import annotations

import pytest

import cli
from costmodel.config import Workload
from costmodel.layout import Layout
from costmodel.layout.rank import ParallelEstimate
from tests.test_frontier_layouts import parallel


def test_context_parallel_rank_holds_n_over_cp_tokens():
    """cp 4 at n = 8192: activations are the tree's at 2048; the parameter state is sharded over
    dp x cp = 8 ranks; the step's model FLOPs are those of the whole sequence."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import StepTime

    workload = Workload(seq_len=8192, attention="flash")
    cp = parallel("llama2-7b", workload, dp=2, cp=4, zero=1, framework="megatron")
    short = parallel("llama2-7b", workload.replace(seq_len=2048), dp=8, zero=1, framework="megatron")
    assert cp.per_rank == short.per_rank
    assert cp.layout.gpus == 8
    whole = parallel("llama2-7b", workload, dp=2, zero=1, framework="megatron")
    h100 = load_hardware("h100-sxm")
    assert StepTime(cp, h100).step()["model_flops"] == StepTime(whole, h100).step()["model_flops"]
    # Keys and values of 2048 tokens, 32 heads of 128, bf16, per layer: gathered forward and
    # backward (4 x each), and the fp32 gradients sent around the ring (4 sends).
    kv = 2 * 2048 * 32 * 128 * 2
    assert cp.to_dict()["communication"]["cp"] == {"all_gather": 32 * 2 * 4 * kv, "send": 32 * 4 * 2 * kv}


SMALL_GQA = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=8, num_key_value_heads=4, vocab_size=128, max_position_embeddings=64)


@pytest.mark.parametrize("rotate", ["allgather", "ring"])
def test_context_parallel_exchange_moves_the_ranks_tensor_parallel_share_of_the_kv_heads(rotate):
    """tp 2, cp 2, 2 layers of 4 KV heads of 8, 16 tokens, bf16, 2 micro-batches: a rank's
    attention holds 4 / 2 = 2 KV heads (Transformer Engine's num_gqa_groups_per_partition) of its
    16 / 2 = 8 tokens, and the ring moves those, not all 4 heads. By hand, per layer and
    micro-batch: kv = 2 (K and V) x 1 x 2 heads x 8 tokens x 8 x 2 bytes = 512; its fp32
    gradient 4 x 256 = 1,024. allgather: all-gathers 2 x cp x kv = 2,048, gradient sends cp x 1,024
    = 2,048; ring (Transformer Engine's: kv, kv and its bf16 gradient, cp - 1 sends each) 3 (cp - 1)
    kv = 1,536. With and without sequence parallelism alike (inside the tensor-parallel region)."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    assert (cfg.n_kv_heads, cfg.d_head, cfg.n_layers) == (4, 8, 2)
    workload = Workload(seq_len=16, batch=1, attention="flash")
    layers, microbatches = 2, 2
    per_layer = {"allgather": {"all_gather": 2048, "send": 2048}, "ring": {"send": 1536}}[rotate]
    expected = {kind: layers * microbatches * value for kind, value in per_layer.items()}
    for sp_on in (False, True):
        rank = ParallelEstimate(cfg, workload, Layout(tp=2, cp=2, sp=sp_on, microbatches=microbatches,
                                                      cp_rotate=rotate, framework="megatron"))
        assert rank.to_dict()["communication"]["cp"] == expected
    # tp 1: the rank holds all 4 heads, twice the bytes
    whole = ParallelEstimate(cfg, workload, Layout(cp=2, microbatches=microbatches, cp_rotate=rotate,
                                                   framework="megatron"))
    assert whole.to_dict()["communication"]["cp"] == {kind: 2 * value for kind, value in expected.items()}


def test_context_parallel_with_sequence_parallelism_is_the_trees_at_n_over_cp():
    """CP 2 with TP 2 and SP (Megatron-Core's 405B recipes run them together) at n = 8192: a rank
    holds 4096 tokens of the sequence, 2048 of them outside the tensor-parallel region. Its memory,
    its tensor-parallel and pipeline collectives and their time are those of SP alone at
    n = 4096 over the same dp x cp = 2 ranks; only the attention core (cp x) and the ring differ,
    and the step's model FLOPs are the whole sequence's.
    By hand: SP's all-gathers move b (n / cp) d bf16 = 4096 x 4096 x 2 bytes each, the pipeline
    sends the rank's 1/tp of that."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.timing import step_time

    workload = Workload(seq_len=8192, attention="flash", impl="megatron")
    both = parallel("llama2-7b", workload, tp=2, sp=True, cp=2, pp=2, microbatches=2, zero=1, framework="megatron")
    alone = parallel("llama2-7b", workload.replace(seq_len=4096), tp=2, sp=True, dp=2, pp=2, microbatches=2,
                     zero=1, framework="megatron")
    assert both.values["n"] == 4096
    assert both.per_rank == alone.per_rank
    with_cp, without = both.to_dict()["communication"], alone.to_dict()["communication"]
    assert with_cp.pop("cp") and "cp" not in without
    assert with_cp == without
    stage = both.stages[0]
    boundary = 4096 * 4096 * 2
    gathers = [(calls, payload) for kind, calls, payload in both.tensor_parallel_collectives(stage)
               if kind == "all_gather"]
    assert gathers and all(payload == boundary for _, payload in gathers)
    assert both.pipeline_exchange(stage)[1:] == (boundary // 2, 0)
    h100 = load_hardware("h100-sxm")
    for model in ("roofline", "kernels"):
        one, other = step_time(both, h100, time_model=model), step_time(alone, h100, time_model=model)
        assert one.tensor_parallel(stage) == other.tensor_parallel(stage)
        assert one.pipeline(stage) == other.pipeline(stage)
        assert one.step()["model_flops"] == step_time(parallel(
            "llama2-7b", workload, tp=2, sp=True, pp=2, microbatches=2, zero=1, framework="megatron"),
            h100, time_model=model).step()["model_flops"]


@pytest.mark.parametrize("args, words", [
    (["--model", "mistral-7b", "--cp", "2", "--attention", "flash"], "with a sliding window"),
    (["--model", "t5-small", "--cp", "2", "--attention", "flash"], "of an encoder is not modelled"),
    (["--model", "llama2-7b", "--cp", "2", "--attention", "eager"], "runs fused attention"),
    # torch's 2 x cp load-balanced chunks (fsdp2); under DeepSpeed, the default framework, a2a since session 43
    # (wt43_review2: this row ran the default and met a2a's head check first), cp contiguous pieces
    (["--model", "llama2-7b", "--cp", "3", "--seq-len", "2048", "--framework", "fsdp2"],
     "--cp 3 cuts each sequence into 2 x cp = 6 chunks; 2048 tokens do not divide"),
    (["--model", "llama2-7b", "--cp", "4", "--seq-len", "2050"], "--cp 4 cuts each sequence into 4 pieces; 2050 tokens"),
    (["--model", "llama3-8b", "--cp", "2", "--tp", "4", "--sp", "--seq-len", "4100", "--attention", "flash"],
     "splits a rank's 2050 tokens (--cp 2) over --tp 4"),
])
def test_context_parallel_refusals_are_one_line(args, words, capsys):
    assert cli.main(["estimate", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


TINY_LLAMA = dict(model_type="llama", hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, vocab_size=32, max_position_embeddings=64)


@pytest.mark.slow
@pytest.mark.parametrize("rotate", ["allgather", "ring"])
def test_context_parallel_exchange_equals_torch_ring_attention_on_gloo(rotate):
    """Two gloo ranks run torch's _templated_ring_attention and its backward (what
    context_parallel dispatches sdpa to) with the CPU flash kernel: the payload of every
    collective, forward and backward, equals the model's exchange (about 30 s each)."""
    from costmodel.hf import from_hf_config
    from costmodel.layout.context import exchange
    from validate.distributed.context import ContextCase, measure_context
    from validate.distributed.launch import run_gloo

    case = ContextCase(batch=1, heads=2, seq_len=16, head_dim=8, rotate=rotate)
    results = run_gloo(measure_context, 2, case, timeout_s=240)
    cfg = from_hf_config(TINY_LLAMA, "tiny-llama")
    assert (cfg.n_kv_heads, cfg.d_head) == (case.heads, case.head_dim)
    model = exchange(cfg, Workload(seq_len=case.seq_len, batch=case.batch), 2, rotate, 1)
    for result in results:
        measured = {"all_gather": 0, "send": 0}
        for record in result["records"]:  # torch's ring send is an all_to_all_single to one peer
            measured["all_gather" if record["kind"] == "all_gather" else "send"] += record["payload"]
        assert {k: v for k, v in measured.items() if v} == model
