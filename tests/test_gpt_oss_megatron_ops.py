"""The eager kernels Megatron-Core runs around GPT-OSS's fused ones (costmodel/layout/gpt_oss_eager.py): the
clamp of weighted_bias_quick_geglu_impl, the unfused YaRN rotary embedding and _apply_bias's autograd, counted by
running Megatron-Core's lines on the CPU (validate/gpt_oss_megatron_ops.py) and priced as launches and the bytes
beyond the tree's fused passes (kernel_facts.json megatron_gpt_oss_eager)."""

from __future__ import annotations

import pytest

from costmodel.layout import gpt_oss_eager
from reports.published_runs import other_runs_data, train_setup

GB200 = "megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xgb200"


def _bytes(ops):
    return sum(b for _, b in ops)


@pytest.mark.parametrize("dtype, element", [("bfloat16", 2), ("float32", 4)])
@pytest.mark.parametrize("slots, hidden", [(37, 24), (29, 40)])
def test_the_clamps_counts_are_measured(dtype, element, slots, hidden):
    """At odd sizes, in bf16 and fp32: 3 forward and 9 backward kernels, 8 e N and 11 e N + 8 N bytes (N the
    slots x d_x of each half), beside the backward's two scalar zeros (written, then read by where: 4 e)."""
    torch = pytest.importorskip("torch")
    from validate.gpt_oss_megatron_ops import clamp_kernels

    ops = clamp_kernels(slots, hidden, getattr(torch, dtype))
    clamp, n = gpt_oss_eager.facts()["clamp"], slots * hidden
    terms = (element * n, n)
    assert len(ops["forward"]) == clamp["forward_kernels"] and len(ops["backward"]) == clamp["backward_kernels"]
    assert _bytes(ops["forward"]) == sum(c * t for c, t in zip(clamp["forward_bytes"], terms))
    assert _bytes(ops["backward"]) == sum(c * t for c, t in zip(clamp["backward_bytes"], terms)) + 4 * element


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("seq, batch, heads, head_dim", [(23, 3, 5, 16), (17, 2, 7, 64)])
def test_the_rotary_counts_are_measured(dtype, seq, batch, heads, head_dim):
    """One apply_rotary_pos_emb call at odd sizes: 12 forward and 7 backward kernels, 12 e R + 40 s d_h +
    4 e s d_h and 14 e R + 2 e s d_h bytes (R the tensor's elements, s d_h the fp32 frequencies')."""
    torch = pytest.importorskip("torch")
    from validate.gpt_oss_megatron_ops import rope_kernels

    ops = rope_kernels(seq, batch, heads, head_dim, getattr(torch, dtype))
    rope = gpt_oss_eager.facts()["rope"]
    terms = (2 * seq * batch * heads * head_dim, seq * head_dim, 2 * seq * head_dim)
    assert len(ops["forward"]) == rope["forward_kernels"] and len(ops["backward"]) == rope["backward_kernels"]
    assert _bytes(ops["forward"]) == sum(c * t for c, t in zip(rope["forward_bytes"], terms))
    assert _bytes(ops["backward"]) == sum(c * t for c, t in zip(rope["backward_bytes"], terms))


@pytest.mark.parametrize("rows, width, experts", [(13, 24, 2), (7, 40, 5)])
def test_apply_bias_autograd_is_the_trees_backward(rows, width, experts):
    """_apply_bias in bf16 over L local experts of r rows: forward 2L + 2 kernels, (24 + 2e) V + L (e w + 4 r)
    bytes (V = L r w; the tree's 28 a value); backward 6L + 3 kernels, (32 + 4e) V + L (16 r + (8 + 2e) w): the
    tree's 40 a value (blocks/experts.py Experts.bias_bytes), each bias's and weight's own few left out."""
    pytest.importorskip("torch")
    from validate.gpt_oss_megatron_ops import bias_kernels

    ops = bias_kernels(rows, width, experts)
    values = experts * rows * width
    assert len(ops["forward"]) == 2 * experts + 2 and len(ops["backward"]) == 6 * experts + 3
    assert _bytes(ops["forward"]) == 28 * values + experts * (2 * width + 4 * rows)
    assert _bytes(ops["backward"]) == 40 * values + experts * (16 * rows + 12 * width)


def _estimate(run_id, **changes):
    data = other_runs_data()
    run = dict(next(r for r in data["runs"] if r["id"] == run_id), **changes)
    return train_setup(run, data["sources"][run_id.split()[0]])


def test_the_terms_at_the_gb200_rows_shapes():
    """26.04.01's GB200 BF16 row (MBS 4 x 4,096 tokens a rank, k 4, d_x 2,880, moe_act recomputed): the clamp
    runs forward twice, 2 x 3 + 9 = 15 kernels and 2 x 16 N + 22 N + 8 N = 62 N bytes, N = 188,743,680; the
    rotary embedding 2 x (11 + 6) = 34 kernels beyond the fused calls and 40 R + 52 s d_h a call (query R =
    67,108,864, key 8,388,608, s d_h 262,144); 36 layers of both at 5 us a launch and 6.4 TB/s."""
    estimate, hardware, _ = _estimate(GB200)
    n = 4 * 4096 * 4 * 2880
    assert n == 188_743_680
    assert gpt_oss_eager.clamp_layer(estimate) == (15, 62 * n)
    rope = 40 * (67_108_864 + 8_388_608) + 2 * 52 * 262_144
    assert gpt_oss_eager.rope_layer(estimate) == (34, rope)
    layer = 49 * 5e-6 + (62 * n + rope) / 6.4e12
    assert gpt_oss_eager.stage_seconds(estimate, hardware, estimate.stages[0], 6.4e12) == pytest.approx(36 * layer)


def test_the_op_fuser_drops_the_clamp_and_other_code_pays_neither():
    """With Transformer Engine's op fuser (the MXFP8 rows from 26.06) the clamp is ScaledClampedQGeGLU's and
    only the rotary term is left; AutoModel's GPT-OSS (FSDP2, its own code) and a model with neither pay none."""
    estimate, hardware, options = _estimate("megatron-bridge-moe 26.06 gpt-oss-120b mxfp8 64xgb200")
    assert options["moe_op_fuser"] is True
    kernels, moved = gpt_oss_eager.rope_layer(estimate)
    rope_only = 36 * (kernels * 5e-6 + moved / 6.4e12)
    assert gpt_oss_eager.stage_seconds(estimate, hardware, estimate.stages[0], 6.4e12, True) == pytest.approx(rope_only)
    automodel, hardware, _ = _estimate("automodel-moe gpt-oss-20b ep8 8xh100")
    assert gpt_oss_eager.stage_seconds(automodel, hardware, automodel.stages[0], 3e12) == 0.0
    qwen, hardware, _ = _estimate("megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100")
    assert gpt_oss_eager.stage_seconds(qwen, hardware, qwen.stages[0], 3e12) == 0.0


def test_only_the_op_fuser_rows_state_it():
    """The MXFP8 rows whose recipes turn the op fuser on (session 31: GPT-OSS's four; session 34, read for
    layout/grouped_quantize.py: the 26.06-26.08 GB200 Qwen3 and DeepSeek-V3 rows, 26.08's DeepSeek-V4 Flash and
    Nemotron 3 Ultra, and the cards' Qwen3, DeepSeek and Nemotron 3 Nano GB300 items), and no other training row."""
    data = other_runs_data()
    stated = sorted(r["id"] for r in data["runs"] if r.get("moe_op_fuser"))
    gpt_oss = ["megatron-bridge-cards gpt-oss-120b perf mxfp8 64xgb300",
               "megatron-bridge-moe 26.06 gpt-oss-120b mxfp8 64xgb200",
               "megatron-bridge-moe 26.06.01 gpt-oss-120b mxfp8 64xgb200",
               "megatron-bridge-moe 26.08 gpt-oss-120b mxfp8 64xgb200"]
    assert set(gpt_oss) <= set(stated) and len(stated) == 29
    assert sum(i.startswith("megatron-bridge-cards") for i in stated) == 15
    assert "megatron-bridge-moe 26.04.01 qwen3-30b-a3b mxfp8 8xgb200" not in stated  # op fuser forced off then
    assert not any("nemotron-3-super" in i or "nemotron-3-nano mxfp8" in i for i in stated)
