"""JAX's remat policies as recompute options (--recompute jax-dots, jax-qkv, jax-qkv-out: costmodel/jax_remat.py,
applied by costmodel/op_checkpoint.py): a layer keeps its input and the linear outputs the policy names (JAX's
dots_saveable every dot_general's, Praxis SAVE_QKV_OUT_PROJ the fused QKV and output projections', MaxText
save_qkv_proj the q, k and v projections'), never a fused attention kernel's (a custom call) nor the last
linear's (no backward reads it); everything else up to the down projection's input reruns in backward.

Exact integers on the odd Llama of tests/odd_configs.py (llama-gqa: d 48, h 6, h_kv 2, d_h 8, d_ff 37, 2 layers),
b 3, n 5 (T = 15 tokens), bf16 (e = 2), sdpa (the flash kernel), as tests/test_recompute_torchtitan_op.py counts
torchtitan's policy; outside the layers 12,164 bytes are kept as without recomputation (that file's docstring)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from costmodel import op_checkpoint
from costmodel.config import ConfigError, Workload
from costmodel.presets import load_preset
from costmodel.spec import OP_POLICIES, RECOMPUTES

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import run_main  # noqa: E402
from test_recompute_torchtitan_op import kept_total, layer, number, rerun_flops, tree  # noqa: E402

OUTSIDE = 12164  # the ids, RoPE tables, final norm and loss (tests/test_recompute_torchtitan_op.py)


def test_the_options_are_the_op_policies():
    assert op_checkpoint.POLICIES == OP_POLICIES == ("torchtitan-op", "jax-dots", "jax-qkv", "jax-qkv-out")
    assert all(name in RECOMPUTES for name in OP_POLICIES)


def test_save_qkv_proj_keeps_q_k_v_and_reruns_the_rest():
    """Kept a layer: the input T d e = 15*48*2 = 1,440, q T h d_h e = 1,440, k and v T h_kv d_h e = 480 each
    (2,400): 3,840, two layers 7,680, + 12,164 = 19,844. Rerun a layer: the flash kernel's forward (scores and
    weighted sum 2 b h n^2 d_h = 2*3*6*25*8 = 7,200 each), o 2 T (h d_h) d = 69,120, gate and up 2 T d d_ff =
    53,280 each: 190,080, two layers 380,160; not q, k, v (kept) nor down (its output read by no backward)."""
    model = tree("llama-gqa", "jax-qkv")
    leaves = layer(model)
    kept = {name: number(model, leaf.cost.saved_bytes) for name, leaf in leaves.items() if not leaf.checkpointed}
    assert kept == {"None.checkpoint": 1440, "self_attention.qkv_kept": 2400, "ffn.residual": 0}
    assert kept_total(model) == 2 * (1440 + 2400) + OUTSIDE == 19844
    assert leaves["self_attention.qkv"].rerun is None
    assert number(model, leaves["self_attention.out"].rerun.flops_matmul) == 69120
    assert number(model, leaves["ffn.mlp"].rerun.flops_matmul) == 2 * 53280
    assert number(model, leaves["self_attention.scores"].rerun.flops_matmul) == 7200
    assert rerun_flops(model) == 2 * (2 * 7200 + 69120 + 2 * 53280) == 380160


def test_save_qkv_out_proj_keeps_the_output_projection_too():
    """+ o's output T d e = 1,440 a layer: 2 * 5,280 + 12,164 = 22,724 kept; o no longer reruns: 2 * (14,400 +
    106,560) = 241,920 FLOPs rerun."""
    model = tree("llama-gqa", "jax-qkv-out")
    leaves = layer(model)
    assert leaves["self_attention.out"].kept_outputs == ("out",) and leaves["self_attention.out"].rerun is None
    assert kept_total(model) == 2 * (1440 + 2400 + 1440) + OUTSIDE == 22724
    assert rerun_flops(model) == 2 * (2 * 7200 + 2 * 53280) == 241920


def test_dots_saveable_keeps_every_linear_but_the_last_and_reruns_the_memory_bound_ops():
    """+ gate's and up's T d_ff e = 1,110 each a layer, not down's: 2 * 7,500 + 12,164 = 27,164 kept. Only the
    attention kernel's products rerun (2 * 14,400 = 28,800 FLOPs), with every norm, RoPE, the residual add, SiLU
    and the product: the memory-bound ops the tree prices (elements as in the forward)."""
    model = tree("llama-gqa", "jax-dots")
    leaves = layer(model)
    assert leaves["ffn.mlp"].kept_outputs == ("gate", "up")
    assert number(model, leaves["ffn.mlp_kept"].cost.saved_bytes) == 2 * 1110
    assert kept_total(model) == 2 * (1440 + 2400 + 1440 + 2220) + OUTSIDE == 27164
    assert rerun_flops(model) == 2 * 2 * 7200 == 28800
    elements = {name: {k: number(model, x) for k, x in leaf.rerun.elements}
                for name, leaf in leaves.items() if leaf.rerun is not None and leaf.rerun.elements}
    assert elements == {"self_attention.norm": {"rmsnorm": 720}, "self_attention.rope": {"rope": 960},
                        "self_attention.scores": {"mul": 450, "add": 450}, "self_attention.softmax": {"softmax": 450},
                        "self_attention.residual": {"add": 720}, "ffn.norm": {"rmsnorm": 720},
                        "ffn.mlp": {"silu": 555, "mul": 555}}


def test_the_policies_keep_no_fused_kernel_output_where_torchtitan_does():
    """torchtitan's list names the sdpa kernel (its output and log-sum-exp kept); a JAX policy does not."""
    assert "self_attention.weighted_sum_kept" in layer(tree("llama-gqa", "torchtitan-op"))
    for policy in ("jax-dots", "jax-qkv", "jax-qkv-out"):
        leaves = layer(tree("llama-gqa", policy))
        assert "self_attention.weighted_sum_kept" not in leaves
        assert leaves["self_attention.weighted_sum"].rerun is not None


def test_refusals(capsys):
    with pytest.raises(ConfigError, match="dot_general"):
        tree("llama-gqa", "jax-dots", attention="eager").leaves
    code, out, err = run_main(["estimate", "-m", "llama3-8b", "--attention", "eager", "--recompute", "jax-dots"],
                              capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "jax-dots" in err
    code, out, err = run_main(["estimate", "-m", "llama3-8b", "--recompute", "jax-everything"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    from costmodel.layout import Layout, ParallelEstimate

    with pytest.raises(ConfigError, match="tensor-parallel"):
        ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=2048, recompute="jax-qkv", attention="flash"),
                         Layout(tp=2, framework="fsdp2", zero=3))


def test_the_cli_accepts_them(capsys):
    for policy in ("jax-dots", "jax-qkv", "jax-qkv-out"):
        code, out, err = run_main(["estimate", "-m", "llama3-8b", "--attention", "flash", "--recompute", policy,
                                   "--json"], capsys)
        assert code == 0, err
        assert policy in json.dumps(json.loads(out))


def test_a_dropout_after_the_down_projection_does_not_make_the_backward_read_its_output():
    """The odd GPT with dropout 0.1 (gpt2-dropout: d 48, d_ff 37, T 15, bf16; flash): a dropout after the down
    projection keeps its mask, and JAX regenerates the mask from the key in backward (the dropout reruns); its
    backward reads no input, so as without dropout the down projection's output is neither kept (jax-dots) nor
    rerun (jax-qkv). Before wt36_review the dropout leaf, the layer's last with saved bytes, hid the stop: jax-dots
    kept down's output too (T d e = 15 * 48 * 2 = 1,440 bytes a layer more: 2,550, not up's 1,110) and jax-qkv
    reran it (2 T d d_ff = 53,280 FLOPs a layer more: 106,560, not up's 53,280)."""
    leaves = layer(tree("gpt2-dropout", "jax-dots", attention="flash"))
    assert leaves["ffn.mlp"].kept_outputs == ("up",) and leaves["ffn.mlp"].not_rerun == ("up", "down")
    model = tree("gpt2-dropout", "jax-dots", attention="flash")
    assert number(model, layer(model)["ffn.mlp_kept"].cost.saved_bytes) == 1110
    assert layer(model)["ffn.dropout"].checkpointed  # the mask is regenerated, not kept
    model = tree("gpt2-dropout", "jax-qkv", attention="flash")
    leaves = layer(model)
    assert leaves["ffn.mlp"].not_rerun == ("down",)
    assert number(model, leaves["ffn.mlp"].rerun.flops_matmul) == 2 * 15 * 48 * 37 == 53280
    # a post-norm layer's last norm reads the residual sum, so the down projection's output: it reruns (bert-dropout)
    model = tree("bert-dropout", "jax-qkv", attention="flash")
    assert number(model, layer(model)["ffn.mlp"].rerun.flops_matmul) == 2 * 53280
