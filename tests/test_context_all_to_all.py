"""Context parallelism by head-parallel all-to-all (--cp-rotate a2a: DeepSpeed-Ulysses, Megatron-Core's
cp_comm_type "a2a" through Transformer Engine; costmodel/layout/context.py): the bytes of the four
all-to-alls worked by hand from the code, the heads each framework refuses, the attention call a rank
runs, and the payloads measured on gloo."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.kernel_shapes import AttentionCall
from costmodel.layout import Layout
from costmodel.layout.context import all_to_all_call, exchange
from costmodel.layout.rank import ParallelEstimate

# 8 query heads, 4 KV heads, head width 8, 2 layers: odd enough that a swapped head count shows
SMALL_GQA = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=8, num_key_value_heads=4, vocab_size=128, max_position_embeddings=64)


def small_gqa():
    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    assert (cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.n_layers) == (8, 4, 8, 2)
    return cfg


@pytest.mark.parametrize("framework, tp, cp, per_pass", [
    # Transformer Engine (AttnFuncWithCPAndQKVOA2A): Q and out of h / tp heads, K and V of h_kv / tp,
    # each b (n / cp) d_h bf16: cp 2, tp 1: 2 x 1 x 8 tokens x 8 x (2 x 8 + 2 x 4) = 3,072
    ("megatron", 1, 2, 3072),
    # tp 2: 4 query heads, 2 KV heads a rank: 2 x 8 x 8 x (2 x 4 + 2 x 2) = 1,536
    ("megatron", 2, 2, 1536),
    # DeepSpeed-Ulysses (UlyssesSPAttentionHF) at cp 4: 4 tokens a rank, 4 KV heads divide: 2 x 4 x 8 x 24 = 1,536
    ("deepspeed", 1, 4, 1536),
    # cp 8 > 4 KV heads: repeat_interleave'd to 8 before the all-to-all: 2 x 2 tokens x 8 x (16 + 16) = 1,024
    ("deepspeed", 1, 8, 1024),
])
def test_all_to_all_bytes_worked_by_hand(framework, tp, cp, per_pass):
    """Per layer and pass, the four all-to-alls' inputs (the output's as many as Q's); the backward's
    transposed all-to-alls move as many bytes: 2 layers x 2 micro-batches x 2 passes x per_pass."""
    workload = Workload(seq_len=16, batch=1, attention="flash")
    rank = ParallelEstimate(small_gqa(), workload, Layout(tp=tp, cp=cp, microbatches=2, cp_rotate="a2a",
                                                          framework=framework, zero=1))
    assert rank.to_dict()["communication"]["cp"] == {"all_to_all": 2 * 2 * 2 * per_pass}


def test_all_to_all_runs_again_in_a_recomputed_forward():
    """--recompute full: each layer's forward again in backward, its three all-to-alls and the
    output's with it: 3 x 1,536 a layer (deepspeed, cp 4, as above), 2 layers, 1 micro-batch."""
    cfg = small_gqa()
    workload = Workload(seq_len=16, batch=1, attention="flash", recompute="full")
    rank = ParallelEstimate(cfg, workload, Layout(cp=4, cp_rotate="a2a", framework="deepspeed", zero=1))
    assert rank.to_dict()["communication"]["cp"] == {"all_to_all": 2 * 3 * 1536}
    assert exchange(cfg, workload, 4, "a2a", 2, recomputed_layers=2) == {"all_to_all": 2 * 3 * 1536}


def test_the_rank_runs_all_n_tokens_of_its_heads_over_cp():
    """Llama 3 8B (32 heads, 8 KV heads of 128) at n = 65,536, cp 8: the tree's call at 8,192 tokens
    becomes one causal call over 65,536 tokens of 4 query heads and 1 KV head; under DeepSpeed at
    cp 16 the 8 KV heads are repeated to 16, one a rank."""
    from costmodel.presets import load_preset

    cfg = load_preset("llama3-8b")
    tree = AttentionCall(batch=1, heads=32, n_q=8192, n_kv=8192, head_dim=128, kv_heads=8)
    whole = all_to_all_call(tree, cfg, Layout(cp=8, cp_rotate="a2a", framework="megatron"))
    assert whole == AttentionCall(batch=1, heads=4, n_q=65536, n_kv=65536, head_dim=128, kv_heads=1)
    # executed in 128 x 128 blocks, 4 x 128^3 FLOPs each (two products): the whole call's causal
    # triangle 512 x 513 / 2 blocks a head, 4 heads; the ring's cp calls 8 x 32 heads x 64 x 65 / 2:
    # fewer blocks on the diagonal (1.35% fewer executed FLOPs), the same model FLOPs
    assert whole.executed_flops(128) == 4 * (512 * 513 // 2) * 4 * 128 ** 3 == 4_406_636_445_696
    assert 8 * tree.executed_flops(128) == 8 * 32 * (64 * 65 // 2) * 4 * 128 ** 3
    tree16 = AttentionCall(batch=1, heads=32, n_q=4096, n_kv=4096, head_dim=128, kv_heads=8)
    ulysses = all_to_all_call(tree16, cfg, Layout(cp=16, cp_rotate="a2a", framework="deepspeed"))
    assert (ulysses.heads, ulysses.kv_heads, ulysses.n_q) == (2, 1, 65536)


def test_kernel_model_times_the_whole_sequence_call():
    """Under the kernel model the attention core of Llama 3 8B at cp 8, n = 65,536 (Megatron, a2a) is
    its 32 layers' whole-sequence call, forward and backward, and nothing else (no ring steps, no
    Transformer Engine ring passes); the ring's core differs."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.timing import step_time
    from costmodel.presets import load_preset

    cfg, hardware = load_preset("llama3-8b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=65536, attention="flash", impl="megatron")
    cores = {}
    for rotate in ("ring", "a2a"):
        estimate = ParallelEstimate(cfg, workload, Layout(cp=8, zero=1, framework="megatron", cp_rotate=rotate))
        step = step_time(estimate, hardware, time_model="kernels")
        cores[rotate] = step.compute_by_block(estimate.stages[0])["decoder.layer.self_attention.core"]
    whole = AttentionCall(batch=1, heads=4, n_q=65536, n_kv=65536, head_dim=128, kv_heads=1)
    expected = 32 * sum(step.timer.attention_seconds(whole, backward) for backward in (False, True))
    assert cores["a2a"] == pytest.approx(expected, rel=1e-12)
    assert cores["ring"] != pytest.approx(cores["a2a"], rel=1e-3)


LLAMA3 = ["--model", "llama3-8b", "--seq-len", "8192"]


@pytest.mark.parametrize("args, words", [
    ([*LLAMA3, "--framework", "fsdp2", "--cp", "2"], "fsdp2 runs torch's context_parallel"),
    ([*LLAMA3, "--framework", "megatron", "--cp", "16"],
     "8 key/value heads over --cp 16; they do not divide, and Transformer Engine repeats none"),
    ([*LLAMA3, "--framework", "deepspeed", "--cp", "64"], "32 attention heads over --cp 64"),
    # Qwen2.5 7B: 28 heads, 4 KV heads; cp 7 divides the heads, and neither 4 nor 7 divides the other
    (["--model", "qwen2.5-7b", "--seq-len", "8190", "--framework", "deepspeed", "--cp", "7"],
     "4 key/value heads over --cp 7; they do not divide, nor do they divide 7"),
])
def test_all_to_all_refusals_are_one_line(args, words, capsys):
    """What the code refuses: DeepSpeed-Ulysses' ValueErrors (heads not divisible by cp; KV heads neither
    divisible by cp nor dividing it), Transformer Engine's assertion (query and KV heads of the rank
    divisible by cp), and torch's context_parallel, which has no all-to-all attention."""
    assert cli.main(["estimate", "--attention", "flash", "--cp-rotate", "a2a", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


TINY = dict(model_type="llama", hidden_size=32, intermediate_size=24, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=32, max_position_embeddings=64)


@pytest.mark.slow
def test_all_to_all_exchange_equals_ulysses_on_gloo():
    """Two gloo ranks run DeepSpeed-Ulysses' attention (validate/distributed/context.py, its steps as
    UlyssesSPAttentionHF writes them) forward and backward: the payload of every all-to-all equals
    the model's exchange, with 2 KV heads (scattered) and with 1 (repeated to 2), about 1 min."""
    from validate.distributed.context import ContextCase, measure_context
    from validate.distributed.launch import run_gloo, run_jobs

    cases = [ContextCase(batch=2, heads=4, seq_len=16, head_dim=8, rotate="a2a", kv_heads=kv) for kv in (2, 1)]
    results = run_gloo(run_jobs, 2, [(measure_context, case) for case in cases], timeout_s=300)
    for index, case in enumerate(cases):
        cfg = from_hf_config({**TINY, "num_key_value_heads": case.kv_heads}, "tiny")
        model = exchange(cfg, Workload(seq_len=case.seq_len, batch=case.batch), 2, "a2a", 1)
        for rank in results:
            records = rank[index]["records"]
            assert {record["kind"] for record in records} == {"all_to_all"}
            assert [r["phase"] for r in records] == ["forward"] * 4 + ["backward"] * 4
            assert {"all_to_all": sum(record["payload"] for record in records)} == model
    # by hand: 8 tokens a rank, bf16: Q and out 2 x 8 x 4 x 8 x 2 = 1,024 each, K and V 512 each (2 heads,
    # and 1 head repeated to 2 alike): 3,072 a pass, 6,144 forward and backward
    assert model == {"all_to_all": 6144}


def test_a_hybrids_attention_and_mixer_all_to_alls_add():
    """Megatron's hybrid (tests/test_mamba_context_parallel.py's odd M*-M-: 2 Mamba-2 mixers of 1,488
    bytes a pass, one attention layer of 4 heads, 2 KV heads of 10) at cp 2, n 12: the attention's
    a2a, 2 x 6 tokens x 10 x (2 x 4 + 2 x 2) = 1,440 a pass, adds to the mixers' 5,952 (neither
    overwrites the other): 5,952 + 2 x 1,440 = 8,832."""
    from tests.test_hf_nemotron_h import ODD

    cfg = from_hf_config(dict(ODD, intermediate_size=38, hybrid_override_pattern="M*-M-"), "odd-hybrid-cp")
    workload = Workload(seq_len=12, batch=1, impl="megatron", attention="flash")
    rank = ParallelEstimate(cfg, workload, Layout(cp=2, framework="megatron", zero=1, cp_rotate="a2a"))
    assert rank.communication(rank.stages[0])["cp"] == {"all_to_all": 5_952 + 2 * 1_440}


def test_ulysses_cuts_the_sequence_into_cp_pieces_not_2cp():
    """DeepSpeed-Ulysses splits the sequence into cp contiguous pieces (UlyssesSPDataLoaderAdapter:
    "seqlen isn't divisible by sp-size"); Transformer Engine's a2a keeps the load-balanced 2 cp chunks
    ("Sequence length per GPU needs to be divisible by 2!"). n = 12, cp 4: 3 tokens a rank, 12 / 8 does not divide."""
    cfg, workload = small_gqa(), Workload(seq_len=12, batch=1, attention="flash")
    ulysses = ParallelEstimate(cfg, workload, Layout(cp=4, cp_rotate="a2a", framework="deepspeed", zero=1))
    assert ulysses.values["n"] == 3
    with pytest.raises(ConfigError, match="into 2 x cp = 8 chunks; 12 tokens do not divide"):
        ParallelEstimate(cfg, workload, Layout(cp=4, cp_rotate="a2a", framework="megatron", zero=1))
    with pytest.raises(ConfigError, match="into 4 pieces; 18 tokens do not divide"):
        ParallelEstimate(cfg, workload.replace(seq_len=18), Layout(cp=4, cp_rotate="a2a", framework="deepspeed", zero=1))


def test_the_layout_names_how_its_context_ranks_exchange(capsys):
    """simulate --json's layout and its text line say --cp-rotate (wt42_review2: the layout dict dropped it,
    so a2a, ring and allgather runs of different exchanges and times read as one layout). Llama 3 8B at
    4096, tp 2 + SP, cp 2: the a2a payload by hand, 1 x 2048 tokens x 128 x 2 B x (2 x 16 + 2 x 4) heads
    = 20,971,520 a layer and pass, x 2 passes x 32 layers = 1,342,177,280."""
    args = ["simulate", "--train", "--model", "llama3-8b", "--seq-len", "4096", "--cp", "2", "--tp", "2", "--sp",
            "--framework", "megatron"]
    assert cli.main([*args, "--cp-rotate", "a2a", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert (run["parallel"]["layout"]["cp_rotate"], run["parallel"]["layout"]["cp_kv_heads"]) == ("a2a", "kv")
    assert run["parallel"]["communication"]["cp"] == {"all_to_all": 1_342_177_280}
    assert cli.main([*args, "--cp-rotate", "a2a"]) == 0
    assert "cp 2 + SP, --cp-rotate a2a, ZeRO 0" in capsys.readouterr().out
    assert cli.main([*args, "--json"]) == 0  # torch's default, allgather, named too
    assert json.loads(capsys.readouterr().out)["parallel"]["layout"]["cp_rotate"] == "allgather"
    assert "cp_rotate" not in Layout(tp=2).to_dict(1)  # nothing to name without context parallelism
