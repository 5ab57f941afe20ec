"""flash_attn's GPT as an implementation of its own (--impl flash_attn, facts.json's flash_attn rows, wt45_flashimpl,
session 45): every byte here is written out from Dao-AILab/flash-attention 30fd8c17's lines, cited beside it, and
the unfused attention's against a CPU count of a verbatim transcription of its SelfAttention
(validate/flash_attn_attention_ops.py); none is read from the tool."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.blocks import AttentionScores, QKVProjection, Softmax, WeightedSum
from costmodel.blocks.base import Profile
from costmodel.config import ConfigError, Workload
from costmodel.kernel_shapes import Pointwise
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
from reports.published_runs import other_runs_data, train_run, train_setup

E = 2  # bf16


def _row(row_id: str):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row_id)
    return run, data["sources"][row_id.split()[0]]


def _pointwise(row_id: str) -> dict[str, tuple[float, float]]:
    """Each leaf path's memory-bound kernel of one published row: (forward bytes, backward bytes)."""
    run, source = _row(row_id)
    estimate, hardware, options = train_setup(run, source)
    step = KernelStepTime(estimate, hardware, autocast=options["autocast"])
    timer = step.timer
    pointwise = {}
    for (_, _, _, kernels), work in zip(rank_kernels(estimate, timer.fused_attention, timer.compiled,
                                                     options["autocast"], step.fused_qkv), estimate.structure["work"]):
        listed = [k for k in kernels if isinstance(k, Pointwise)]
        if listed:
            (kernel,) = listed
            backward = 2 * kernel.bytes if kernel.backward_bytes is None else kernel.backward_bytes
            pointwise[work["path"]] = (kernel.bytes, backward)
    return pointwise


def test_the_rows_that_ran_flash_attn_are_typed_so():
    data = other_runs_data()
    for name in ("flash-attention-2", "flash-attention-2-noflash", "flash-attention-2-v1"):
        assert data["sources"][name]["impl"] == "flash_attn"


def test_the_unfused_attention_against_the_cpu_count():
    # an odd size; the CPU's dropout (a noise tensor) is not CUDA's native_dropout, which the model prices:
    # (2e + 1) bytes a score each way (a bool mask), so the softmax leaf is the count's softmax plus that
    from validate.flash_attn_attention_ops import count

    b, n, h, d = 2, 13, 3, 6
    counted = count(b, n, h, d)
    profile = Profile(impl="flash_attn", attention="eager", dropout=True, family="gpt", kernel_device="cuda")
    subs = {S.b: b, S.n: n, S.h: h, S.h_kv: h, S.d_h: d, S.e: E}
    leaves = {
        "qkv": QKVProjection(S.b * S.n, S.b * S.n, bias=True, fused=True, profile=profile),
        "scores": AttentionScores(S.n, S.n, profile=profile, causal=True),
        "softmax": Softmax(S.n, S.n, profile=profile, causal=True),
        "weighted_sum": WeightedSum(S.n, S.n, profile=profile, causal=True),
    }
    pairs = b * h * n * n
    native_dropout = (2 * E + 1) * pairs
    for name, block in leaves.items():
        cost = block.cost()
        forward = int(sp.sympify(cost.bytes_other).xreplace(subs))
        backward = int(sp.sympify(cost.backward_bytes_other).xreplace(subs))
        dropout = native_dropout if name == "softmax" else 0
        assert (forward, backward) == (counted["bytes"]["forward"][name] + dropout,
                                       counted["bytes"]["backward"][name] + dropout), name
    # the count itself, op for op (bf16; t x w = 26 x 18 = 468 values, 169 (query, key) pairs a head)
    assert [name for name, _, _ in counted["ops"]["forward"]] == [
        "aten.mul", "aten.clone", "aten.clone", "aten.bmm", "aten.full", "aten.triu", "aten._to_copy", "aten.add",
        "aten._softmax", "aten.bernoulli_", "aten.div_", "aten.mul", "aten.clone", "aten.bmm", "aten.clone"]
    assert [name for name, _, _ in counted["ops"]["backward"]] == [
        "aten.clone", "aten.bmm", "aten.bmm", "aten.mul", "aten._softmax_backward_data", "aten.bmm", "aten.bmm",
        "aten.mul", "aten.stack"]
    assert dict(counted["bytes"]["forward"]) == {"scores": 13_052, "softmax": 4_056, "dropout (cpu)": 14_196,
                                                 "weighted_sum": 3_744}
    assert dict(counted["bytes"]["backward"]) == {"weighted_sum": 1_872, "dropout (cpu)": 6_084, "softmax": 6_084,
                                                  "scores": 1_872, "qkv": 5_616}


def test_noflash_1_3b_layer_bytes():
    # flash-attention-2-noflash gpt3-1.3b 2k: micro-batch 2 x 2,048 tokens, h 2,048 (16 heads of 128), bf16
    tokens, width, heads, n = 2 * 2048, 2048, 16, 2048
    values, pairs = tokens * width, 2 * heads * n * n
    norm_weights = E * 2 * width  # the LayerNorm's weight and bias, read forward, read and written backward
    passes = _pointwise("flash-attention-2-noflash gpt3-1.3b 2k")
    # dropout_add_layer_norm (ln_api.cpp dropout_add_ln_fwd / _bwd; residual_in_fp32): forward x0 (e) and the fp32
    # residual (4) read, the residual x (4), the uint8 mask (1) and z (e) written; backward dz (e), the residual's
    # gradient (4, prenorm), x (4) and the mask (1) read, dx0 (e) and dresidual (4) written
    layer_norm = (13 * values + norm_weights, 17 * values + 2 * norm_weights)
    assert passes["decoder.layer.self_attention.norm"] == passes["decoder.layer.ffn.norm"] == layer_norm \
        == (109_060_096, 142_622_720)
    # GPTModel's ln_f: prenorm=False, so its backward reads no residual gradient (gpt.py lines 384-388)
    assert passes["decoder.final_norm"] == (13 * values + norm_weights, 13 * values + 2 * norm_weights)
    # the residual adds and the dropouts run inside those kernels; the GeLU and both biases in the GEMMs
    # (no kernel of their own: their FLOPs are those kernels', Cost.own_kernel)
    for path in ("decoder.layer.self_attention.residual", "decoder.layer.ffn.residual", "decoder.layer.ffn.mlp",
                 "decoder.layer.self_attention.dropout", "decoder.layer.ffn.dropout", "embedding.dropout"):
        assert path not in passes, path
    # SelfAttention (mha.py lines 172-189): the unbind's stack backward (3h); k * scale (h) each way and the
    # einsum's copies of q and k; the fp32 mask, full (4) triu (4 + 4) .to (4 + e) n^2, and the add (2e a score
    # and the mask's e n^2); softmax (2e, backward 3e) and native_dropout (2e + 1 each way); v's copy and the
    # output's (h each), backward the gradient's copy
    assert passes["decoder.layer.self_attention.qkv"] == (0.0, 2 * E * 3 * values) == (0.0, 100_663_296)
    scores = 2 * E * values + 2 * 2 * E * values + (16 + E) * n * n + 2 * E * pairs + E * n * n
    assert passes["decoder.layer.self_attention.scores"] == (scores, 2 * E * values) == (721_420_288, 33_554_432)
    assert passes["decoder.layer.self_attention.softmax"] == ((2 * E + 2 * E + 1) * pairs, (3 * E + 2 * E + 1) * pairs)
    assert passes["decoder.layer.self_attention.weighted_sum"] == (2 * 2 * E * values, 2 * E * values)


def test_flash_rows_keep_no_attention_passes():
    # FlashSelfAttention: flash_attn_qkvpacked_func on the packed qkv (no unbind, no copies), dqkv written packed
    passes = _pointwise("flash-attention-2 gpt3-1.3b 2k")
    for leaf in ("qkv", "scores", "softmax", "weighted_sum"):
        assert f"decoder.layer.self_attention.{leaf}" not in passes, leaf
    # FusedMLP: fc1's bias and GeLU in its epilogue; the residual adds and dropouts in dropout_add_layer_norm
    for path in ("decoder.layer.ffn.mlp", "decoder.layer.ffn.residual", "decoder.layer.self_attention.residual",
                 "decoder.layer.ffn.dropout", "decoder.layer.self_attention.dropout", "embedding.dropout"):
        assert path not in passes, path


@pytest.mark.parametrize("row_id, ratio, was", [
    # ours / published, the kernel model (`python cli.py published`); was: typed impl megatron (main). The noflash
    # rows as wt45_flashimpl left them: 1.082, 1.196, 0.855, 0.832; after wt45_megatron's copy-rate rule (their
    # score GEMMs write more than they read, at the A100 file's Copy rate) 1.085, 1.203, 0.8575, 0.837; after
    # wt45_integreview's scale on the keys (k * softmax_scale's multiplies, not one a score) alone 1.0842, 1.1995,
    # 0.8568, 0.8345; both, as merged in integ45 (the 1.3B 8k 1.2067 before its selectively recomputed core paid its
    # launches again, wt46_mgsoftmax):
    ("flash-attention-2-noflash gpt3-1.3b 2k", 1.0871, 1.082),
    ("flash-attention-2-noflash gpt3-1.3b 8k", 1.2060, 1.363),
    ("flash-attention-2-noflash gpt3-2.7b 2k", 0.8593, 0.864),
    ("flash-attention-2-noflash gpt3-2.7b 8k", 0.8399, 0.945),
    ("flash-attention-2 gpt3-1.3b 2k", 1.178, 1.131),
    ("flash-attention-2 gpt3-2.7b 8k", 1.067, 1.041),
    ("flash-attention-2-v1 gpt3-2.7b 8k", 0.819, 0.807),
])
def test_published_ratios(row_id, ratio, was):
    run, source = _row(row_id)
    assert train_run(run, source, "kernels") / run["published_tflops_per_gpu"] == pytest.approx(ratio, abs=5e-4)


def test_models_flash_attn_does_not_build_are_refused():
    from costmodel.presets import load_preset

    cfg = load_preset("deepseek-v2-lite")
    with pytest.raises(ConfigError, match="builds no routed experts, no latent attention"):
        Workload(seq_len=512, batch=1, impl="flash_attn").check_fits(cfg)


def test_rotary_runs_in_place_each_way():
    # flash_attn/layers/rotary.py ApplyRotaryEmbQKV_: apply_rotary on q1, q2 and k1, k2 in place, backward the same
    # on dq and dk: 2e bytes a rotated value each way (b 3, n 5, h 7 heads of 6, all rotated: 630 values a side)
    from costmodel.blocks.attention import RotaryEmbedding

    subs = {S.b: 3, S.n: 5, S.h: 7, S.h_kv: 7, S.d_h: 6, S.e: E}
    ours = RotaryEmbedding(S.b * S.n, S.b * S.n, profile=Profile(impl="flash_attn", family="gpt")).cost()
    assert [int(sp.sympify(x).xreplace(subs)) for x in (ours.bytes_other, ours.backward_bytes_other)] \
        == [2 * E * 2 * 630] * 2
    megatron = RotaryEmbedding(S.b * S.n, S.b * S.n, profile=Profile(impl="megatron", family="gpt")).cost()
    assert megatron.backward_bytes_other is None  # the tree's convention, twice the forward's


def test_the_cli_refuses_in_one_line(capsys):
    import cli

    assert cli.main(["estimate", "--model", "deepseek-v2-lite", "--impl", "flash_attn", "--seq-len", "512"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: flash_attn's GPT (--impl flash_attn) builds no routed experts, no latent attention (model "
        "'deepseek-v2-lite'); use --impl hf or megatron."]


@pytest.mark.parametrize("model, refused", [
    # an encoder-decoder and an encoder alike: GPTLMHeadModel is a causal decoder stack (gpt.py GPTModel)
    ("t5-small", "builds no encoder (model 't5-small')"),
    ("bert-base-uncased", "builds no encoder (model 'bert-base-uncased')"),
])
def test_the_refusal_reads_as_a_sentence(model, refused):
    # was "builds no an encoder-decoder" before the item lost its article
    from costmodel.presets import load_preset

    with pytest.raises(ConfigError) as raised:
        Workload(seq_len=128, batch=1, impl="flash_attn").check_fits(load_preset(model))
    assert str(raised.value) == f"flash_attn's GPT (--impl flash_attn) {refused}; use --impl hf or megatron."


@pytest.mark.parametrize("model, refused", [
    # MHA.__init__ at 30fd8c17 (modules/mha.py line 311) takes num_heads alone: MQA/GQA came in 425dbcb6 (2023-07-23)
    ("llama3-8b", "grouped key/value heads"),
    # ALiBi came in c3b21966 (2023-12-21)
    ("bloom-560m", "ALiBi"),
    # window_size in ef0ed106 (2024-01-31); neither SelfAttention nor Block has a soft cap or a norm after the sublayer
    ("gemma2-2b", "grouped key/value heads, no sliding window, no post_sublayer_norm, no attention_softcap, "
                   "no logit_softcap"),
    ("qwen3-8b", "grouped key/value heads, no qk_norm"),
])
def test_what_30fd8c17_does_not_build_is_refused(model, refused, capsys):
    # before: each priced as if flash_attn's GPT ran it (exit 0)
    import cli

    assert cli.main(["estimate", "--model", model, "--impl", "flash_attn", "--seq-len", "512"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: flash_attn's GPT (--impl flash_attn) builds no {refused} (model '{model}'); use --impl hf or megatron."]


@pytest.mark.parametrize("model", ["gpt2", "gpt3-2.7b", "llama2-7b", "opt-1.3b"])
def test_what_it_builds_is_not_refused(model):
    # learned positions, rotary, RMSNorm and an unfused SwiGLU (GatedMlp), OPT's two offset rows (opt.py line 33)
    from costmodel.presets import load_preset

    Workload(seq_len=512, batch=1, impl="flash_attn").check_fits(load_preset(model))


def test_sdpa_is_refused(capsys):
    # MHA runs SelfAttention (eager) or FlashSelfAttention (mha.py line 350); flash_attn/ at 30fd8c17 calls no
    # scaled_dot_product_attention (facts sdpa_supported). Before: priced as torch's sdpa, exit 0.
    import cli

    assert cli.main(["simulate", "--model", "gpt3-2.7b", "--train", "--impl", "flash_attn", "--attention", "sdpa",
                     "--seq-len", "2048", "--hardware", "a100-80gb"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: attention 'sdpa': --impl flash_attn's code has no scaled_dot_product_attention path (facts.json); "
        "use --attention eager, or flash for a fused kernel."]


def test_the_dense_scale_multiplies_the_keys_not_the_scores():
    # mha.py line 174, k * softmax_scale: b x n x h x d multiplies (2 x 13 x 3 x 6 = 468), not one a score
    # (2 x 3 x 13 x 13 = 1,014, what the scores leaf counted before); the mask add stays one a score
    subs = {S.b: 2, S.n: 13, S.h: 3, S.h_kv: 3, S.d_h: 6, S.e: E}
    eager = Profile(impl="flash_attn", attention="eager", family="gpt", kernel_device="cuda")
    ours = dict(AttentionScores(S.n, S.n, profile=eager, causal=True).cost().elements)
    assert {op: int(sp.sympify(x).xreplace(subs)) for op, x in ours.items()} == {"mul": 468, "add": 1_014}
    # FlashSelfAttention scales in its kernel, as every impl's flash path is counted: one a score
    flash = Profile(impl="flash_attn", attention="flash", family="gpt", kernel_device="cuda")
    ours = dict(AttentionScores(S.n, S.n, profile=flash, causal=True).cost().elements)
    assert int(sp.sympify(ours["mul"]).xreplace(subs)) == 1_014


def test_the_default_attention_is_said_as_flash_attns():
    # was "(the gpt2 class runs no sdpa either ...)": flash_attn's GPT is no Hugging Face class
    from costmodel.defaults import attention_source

    assert attention_source(None, "flash_attn", None, "gpt2") == (
        "eager attention: the default without a layout (--impl flash_attn's code runs no sdpa either; facts.json)")
    assert attention_source(None, "hf", None, "gpt_neo") == (
        "eager attention: the default without a layout (the gpt_neo class runs no sdpa either; facts.json)")


def test_a_layouts_fallback_is_said_as_flash_attns():
    # plan's note was "gpt2's Hugging Face class has no sdpa path in transformers 5.24, so deepspeed's and fsdp2's
    # default sdpa gives way to eager, what transformers picks ...": flash_attn's GPT is no Hugging Face class
    from costmodel.defaults import fallback_note

    assert fallback_note(("megatron", "deepspeed", "fsdp2"), "flash_attn", None, "gpt2") == (
        "attention eager: --impl flash_attn's code has no sdpa path (facts.json), so deepspeed's and fsdp2's default "
        "sdpa gives way to eager; --attention picks another.")
