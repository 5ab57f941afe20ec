"""Tensor parallelism above the key/value heads in inference, as vLLM serves it: each rank holds
h / tp query heads and one key/value head, replicated over tp / h_kv ranks (QKVParallelLinear,
vllm/model_executor/layers/linear.py at 0036d38; ModelConfig.get_num_kv_heads, max(1, h_kv // tp),
vllm/config/model.py at 0052a5b). costmodel/layout/split.py's kv_heads_per_rank is the one place;
these check what reads it (per-rank parameters, KV bytes, serve's blocks, the kernels' shapes,
the roofline's cache reads), that training still refuses (Megatron-LM), and that tp <= h_kv
gives what it gave before.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import cli
from costmodel import symbols as S
from costmodel.config import ModelConfig, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.split import kv_heads_per_rank
from costmodel.presets import load_preset
from tests.published import REQUESTED

# h 8, h_kv 2, odd widths elsewhere so that no swapped dimension hides (d 48, d_h 6, d_ff 40, V 99).
ODD = ModelConfig(name="kv-replicas", vocab_size=99, d_model=48, n_heads=8, n_kv_heads=2, d_head=6, d_ff=40,
                  n_decoder_layers=3, position="rope", norm="rmsnorm", activation="swiglu", qkv_bias=True,
                  out_bias=False, ffn_bias=False, tie_embeddings=False)


@pytest.mark.parametrize("kv, tp, heads", [(8, 2, 4), (4, 4, 1), (4, 8, 1), (2, 8, 1), (1, 4, 1)])
def test_kv_heads_per_rank_is_vllms(kv, tp, heads):
    """max(1, h_kv // tp) (get_num_kv_heads), as ints and as the expression the tree substitutes."""
    assert kv_heads_per_rank(kv, tp) == heads
    assert kv_heads_per_rank(S.h_kv, S.tp).xreplace({S.h_kv: sp.Integer(kv), S.tp: sp.Integer(tp)}) == heads


def _odd_by_hand(tp: int, kv_heads: int) -> int:
    """One rank's parameters of ODD: q (with bias) and o at h / tp heads, k and v (with bias) at
    the rank's kv_heads, two RMSNorms, SwiGLU at d_ff / tp, ceil(V / tp) rows of the embedding and
    of the untied head, the final norm."""
    d, h, d_h, d_ff, layers, vocab = 48, 8, 6, 40, 3, 99
    q = d * (h // tp) * d_h + (h // tp) * d_h
    kv = 2 * (d * kv_heads * d_h + kv_heads * d_h)
    layer = q + kv + (h // tp) * d_h * d + 2 * d + 3 * d * (d_ff // tp)
    return layers * layer + 2 * -(-vocab // tp) * d + d


@pytest.mark.parametrize("tp, kv_heads, params, kv_bytes", [
    (1, 2, 44_616, 2_736), (2, 1, 22_524, 1_368), (4, 1, 12_312, 1_368), (8, 1, 7_254, 1_368)])
def test_per_rank_parameters_and_kv_cache_of_a_small_config(tp, kv_heads, params, kv_bytes):
    """At tp 4 and 8 each rank holds the k/v weights (and biases) of one head; its KV cache is one
    head's: 2 (k, v) x 3 layers x kv_heads x 6 x 2 B (bf16) x 19 tokens (16 + 3: the last of the 4
    generated is never fed back)."""
    workload = Workload(seq_len=16, gen_tokens=4, batch=1, dtype="bf16", precision="pure", attention="flash")
    estimate = ParallelEstimate(ODD, workload, Layout(tp=tp), phase="decode")
    stage = estimate.stages[0]
    assert estimate.on_stage(stage, "params") == _odd_by_hand(tp, kv_heads) == params
    assert estimate.on_stage(stage, "kv_cache") == 2 * 3 * kv_heads * 6 * 2 * 19 == kv_bytes


def _simulate(tp: int, **options) -> dict:
    from costmodel import simulate

    return simulate("qwen3-30b-a3b", "h100", layout={"tp": tp}, **options).to_dict()


def test_qwen3_30b_a3b_per_rank_weights_and_kv_cache_at_tp_8():
    """Qwen3-30B-A3B (d 2048, 32 heads, 4 KV heads, d_h 128, 48 layers, 128 experts of 768, V
    151,936, untied; 30,532,122,624 parameters, tests/published.py): a layer at tp 8 holds q and o
    2 x 2048 x 4 x 128, k and v of one head 2 x 2048 x 128, q/k norms 2 x 128, two norms 2 x 2048,
    the router 2048 x 128 and the experts 128 x 3 x 2048 x 96: 78,385,408; with ceil(V / 8) =
    18,992 rows of the embedding and of the head and the final norm, 3,840,292,864 parameters,
    7,680,585,728 bf16 bytes. At tp 4 (one head a rank too) 15,285,252,096 bytes, main's figure."""
    layer = 2 * 2048 * 4 * 128 + 2 * 2048 * 1 * 128 + 2 * 128 + 2 * 2048 + 2048 * 128 + 128 * 3 * 2048 * 96
    assert layer == 78_385_408
    assert 2 * (48 * layer + 2 * 18_992 * 2048 + 2048) == 7_680_585_728
    whole = 48 * (2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 2 * 128 + 2 * 2048 + 2048 * 128
                  + 128 * 3 * 2048 * 768) + 2 * 151_936 * 2048 + 2048
    assert whole == REQUESTED["qwen3-30b-a3b"]
    tp8, tp4 = _simulate(8), _simulate(4)
    assert tp8["per_rank"]["weights"] == 7_680_585_728
    assert tp4["per_rank"]["weights"] == 15_285_252_096
    # KV bytes per token a rank: 2 (k, v) x 48 layers x 1 head x 128 x 2 B = 24,576, at 2,175 tokens
    # (prompt 2,048 + the 127 of 128 generated tokens fed back).
    assert tp8["per_rank"]["kv_cache"] == tp4["per_rank"]["kv_cache"] == 24_576 * 2_175 == 53_452_800


def test_serve_blocks_at_tp_8_are_one_kv_heads():
    """serve's blocks = memory left / the bytes of a block of one KV head. Weights a GPU: the
    whole model's 61,064,245,248 bf16 bytes / 8 plus the replicated half of k and v, 48 layers x
    2 x 2048 x 128 x 2 B x (1 - 4 / 8) = 25,165,824, plus what every GPU holds whole (as simulate
    --tp 8's rank, serving/kvcache.py rank_weight_bytes): the routers (48 x 2048 x 128), the norms
    (48 x 2 x 2048 + 2048) and the q/k head norms (48 x 2 x 128), 12,793,856 weights, 7/8 of whose
    bf16 bytes an even split left out: 22,389,248; activations 344,785,408 whole on each GPU
    (vLLM v1's profile run, profile_run.json: the logits of its 1,024 sampled rows, the 8,192 x
    2,048 hidden states, ids and buffers; 311,173,184 a GPU when the tree's prefill peak of all
    8,192 positions' logits was divided by 8); the presets' 512 MiB reserve (hardware.py
    serving_memory) of the 81,117 MiB the H100 reports; a block 16 tokens x 24,576 B."""
    from costmodel.serving.replica import build_replica

    _, _, setup = build_replica(load_preset("qwen3-30b-a3b"), load_hardware("h100"), tp=8)
    sizing = setup["kv_cache"]
    replicated = (48 * 2048 * 128 + 48 * 2 * 2048 + 2048 + 48 * 2 * 128) * 2 * 7 // 8
    assert sizing["weight_bytes"] == 61_064_245_248 // 8 + 48 * 2 * 2048 * 128 * 2 // 2 + replicated == 7_680_585_728
    assert sizing["kv_bytes_per_token"] == 2 * 48 * 1 * 128 * 2 == 24_576
    assert sizing["activation_bytes"] == 1024 * 151_936 * 2 + 8192 * 2048 * 2 + 66_048 == 344_785_408
    left = 81_117 * 2**20 * 9 // 10 - 512 * 2**20 - 7_680_585_728 - 344_785_408  # 67,989,363,404 B
    # 172,905: 174,918 at 80 GiB with the tree's prefill peak / 8; 174,975 before the whole norms and routers
    assert setup["num_blocks"] == sizing["num_blocks"] == left // (16 * 24_576) == 172_905


def test_kernels_at_tp_8_read_one_kv_head():
    """The kernel model's shapes at tp 8: the attention call has 32 / 8 query heads over one KV
    head; the k and v projections are one head (N = 128) each, q four (N = 512)."""
    from costmodel.kernel_time import AttentionCall, Gemm
    from costmodel.serving.steptime import KernelStepTime

    step = KernelStepTime(load_preset("qwen3-30b-a3b"), load_hardware("h100"), tp=8)
    calls = [k for kernels, _ in step.groups["context"] for k in kernels(1, 100) if isinstance(k, AttentionCall)]
    assert [(c.heads, c.kv_heads) for c in calls] == [(4, 1)]
    qkv = next(kernels for kernels, _ in step.groups["tokens"] if kernels.leaf.path.endswith("self_attention.qkv"))
    assert [g.n for g in qkv(1, 0) if isinstance(g, Gemm)] == [512, 128, 128]


@pytest.mark.parametrize("tp, per_key", [(2, 49_152), (4, 24_576), (8, 24_576)])
def test_the_roofline_reads_a_replicated_head_whole(tp, per_key):
    """The serving roofline divides each leaf by tp and adds what replication leaves on a rank:
    a decode token's cache reads per key a rank are 2 x 48 layers x max(1, 4 / tp) heads x 128 x 2 B
    (flash attention: nothing else grows with the keys)."""
    from costmodel.serving.steptime import RooflineStepTime

    step = RooflineStepTime(load_preset("qwen3-30b-a3b"), load_hardware("h100"), tp=tp)
    rows = step._evaluate("context", 1, np.array([1000, 2000])).reshape(-1, 4, 2) / tp
    grown = (rows[:, :, 1] - rows[:, :, 0]).sum(axis=0)
    assert grown[1] == pytest.approx(1000 * per_key, rel=1e-12)


# -- what cannot run says why, in one line ------------------------------------------------------


def _config(tmp_path, heads: int, kv_heads: int) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 96, "num_attention_heads": heads,
                                "num_key_value_heads": kv_heads, "head_dim": 8, "intermediate_size": 240,
                                "num_hidden_layers": 2, "vocab_size": 99}))
    return str(path)


@pytest.mark.parametrize("heads, kv_heads, tp", [(12, 4, 6), (24, 3, 8)])
def test_tp_above_the_kv_heads_must_be_a_multiple(heads, kv_heads, tp, tmp_path, capsys):
    """6 over 4 KV heads, 8 over 3: the query heads divide, but a head cannot be replicated over
    tp / h_kv ranks (vLLM's divide(tp_size, total_num_kv_heads) asserts it is whole)."""
    config = _config(tmp_path, heads, kv_heads)
    words = f"is neither a divisor nor a multiple of the key/value heads ({kv_heads})"
    for command in (["simulate", "--tp", str(tp)], ["serve", "--tp", str(tp), "--rate", "1", "--requests", "2"]):
        assert cli.main([*command, "--config", config, "--hardware", "h100"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, (command, err)


@pytest.mark.parametrize("command", [["simulate", "--train", "--tp", "8"], ["estimate", "--tp", "8"],
                                     ["plan", "--gpus", "8", "--tp", "8"]])
def test_training_still_refuses_and_says_why(command, capsys):
    """Megatron-LM's TransformerConfig: num_query_groups must be a multiple of
    tensor_model_parallel_size (transformer_config.py at d2c5e8b); the message points to inference."""
    assert cli.main([*command, "--model", "qwen3-30b-a3b"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "does not divide the key/value heads (4)" in err and "num_query_groups" in err
    assert "simulate without --train, serve or plan --serve" in err


def test_plan_serve_and_capacity_try_tp_8():
    from costmodel.serving.capacity import tensor_sizes

    cfg = load_preset("qwen3-30b-a3b")
    assert tensor_sizes(cfg, load_hardware("h100")) == [1, 2, 4, 8]
    from costmodel.layout.plan import plan_serving

    result = plan_serving(cfg, load_hardware("h100"), 8, 8, 2048, 128, "bf16")
    by_tp = {e["layout"]["tp"]: e for e in result["feasible"]}
    assert sorted(by_tp) == [1, 2, 4, 8]
    assert by_tp[8]["per_rank"]["weights"] == 7_680_585_728


# -- tp <= h_kv: what it was --------------------------------------------------------------------


def test_tp_up_to_the_kv_heads_is_unchanged(capsys):
    """main at 1aa3663, before replication: simulate --tp 4 (9.8717 ms a token under sdpa at context
    2,176; 9.871694 ms at 2,175 since the cache holds prompt + gen - 1, session 23; the
    CLI's and, since tests/test_smoke8_defects.py, the API's default too; 11.0523 ms under eager, 11.0522 ms
    at 2,175;
    15,285,252,096 B of weights a rank) and
    serve --tp 4 (154,836 blocks; 15,266,061,312 B of weights a GPU; the roofline's mean TPOT
    3.2182 ms)."""
    from costmodel.serving.replica import build_replica

    assert cli.main(["simulate", "--model", "qwen3-30b-a3b", "--hardware", "h100", "--tp", "4", "--json"]) == 0
    tp4 = json.loads(capsys.readouterr().out)
    # Since wt27_tphost an eager step weighs each rank's host: these kernels less their per-block launches
    # (48 x 11 + 3 = 531 under sdpa, 48 x 13 + 3 = 627 under eager, 10 us each: the h100 file's), and the
    # step is the host's (generate's counted Qwen3-MoE ops, 5,384 sdpa, 6,559 eager, x 6.545 us borrowed)
    # (session 38: the kernels keep each one's GPU-side launch cost, 867 kernels x 1.3 us, graph_kernel_s)
    host = tp4["token"]["host"]
    assert host["kernels_seconds"] + 531 * 1e-5 - 867 * 1.3e-6 == pytest.approx(0.009871693823741, rel=1e-12)
    assert tp4["token"]["seconds_per_token"] == 5384 * 6.545241752576789e-06
    assert tp4["per_rank"]["weights"] == 15_285_252_096
    assert _simulate(4)["token"]["seconds_per_token"] == tp4["token"]["seconds_per_token"]
    eager = _simulate(4, attention="eager")["token"]
    assert eager["host"]["kernels_seconds"] + 627 * 1e-5 - 1011 * 1.3e-6 == pytest.approx(0.011052186804647028, rel=1e-12)
    assert eager["seconds_per_token"] == 6559 * 6.545241752576789e-06
    _, _, setup = build_replica(load_preset("qwen3-30b-a3b"), load_hardware("h100"), tp=4)
    # (76,551,605,452 - 536,870,912 reserve - 15,285,252,096 - 344,785,408 activations) // (16 x 24,576):
    # serve's weights a GPU are simulate's rank's now, the norms and routers whole (main: 15,266,061,312
    # and 154,836 blocks, every leaf divided by 4); 154,787 at 80 GiB with the tree's prefill peak / 4
    assert setup["kv_cache"]["weight_bytes"] == tp4["per_rank"]["weights"] == 15_285_252_096
    assert setup["num_blocks"] == 153_566
    # The serving roofline at the layout model's split (session 17's tenth round: the norms and the
    # routers read and run whole on every GPU, not a quarter each): main's mean TPOT 3.2182 ms -> 3.2358 ms.
    assert cli.main(["serve", "--model", "qwen3-30b-a3b", "--hardware", "h100", "--tp", "4", "--rate", "1",
                     "--requests", "20", "--time-model", "roofline", "--json"]) == 0
    served = json.loads(capsys.readouterr().out)
    # + V1's sampler (session 34): 3.2564 ms; session 40 (wt40_customar): vLLM's replicas run its custom all-reduce
    # at tp 4 on NVLink (sglang PR #2904's H100 curve, ~9-10 us a small call against NCCL's ~19-23): 3.1501 ms
    assert served["tpot"]["mean"] == pytest.approx(0.0031500566343826836, rel=1e-12)
