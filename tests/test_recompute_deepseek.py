"""DeepSeek-V3's recomputation (--recompute deepseek; technical report arXiv 2412.19437, section
3.2.3: "we recompute all RMSNorm operations and MLA up-projections during back-propagation"), as
Megatron-LM's output-discarding checkpoints run it (recompute_modules layernorm, mla_up_proj): each
norm keeps only its input; latent attention keeps the latents its up-projections read; the flash
kernel keeps its output and log-sum-exp but not the queries, keys and values the up-projections
rebuild; the up-projections (not the down-projections), the latent norms and RoPE rerun in backward.

Exact integers on the odd DeepSeek-V3 (tests/family_odd_configs.py: d 48, h 6, r_q 20, r_kv 12,
d_r 4, d_h - d_r 6, d_v 7; 3 layers, the first dense), Megatron's profile with flash, b 3, n 5, bf16.
"""

import sys
from pathlib import Path

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.tree import CostModel, model_values, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from family_odd_configs import _deepseek_v3, _llama  # noqa: E402

D, H, RQ, RKV, DR, NOPE, DV = 48, 6, 20, 12, 4, 6, 7
B, N, E = 3, 5, 2
TOKENS = B * N
QK = NOPE + DR  # a query or key head


def tree(cfg, recompute: str, attention: str = "flash", impl: str = "megatron") -> CostModel:
    workload = Workload(seq_len=N, batch=B, dtype="bf16", impl=impl, attention=attention, recompute=recompute)
    return CostModel(cfg, profile_for(cfg, workload))


def number(cfg, expr) -> int:
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: B, S.n: N, S.e: E, S.T: 0, S.s: N}
    return int(sp.sympify(expr).xreplace(at))


def saved_by_leaf(cfg, model: CostModel, kind: str = "moe") -> dict[str, int]:
    return {leaf.path.split(".", 2)[2]: number(cfg, leaf.cost.saved_bytes)
            for leaf in model.leaves if leaf.part == "layer" and leaf.kind == kind}


@pytest.fixture(scope="module")
def cfg():
    return from_hf_config(_deepseek_v3()[0], "odd-deepseek-v3")


def test_each_leaf_keeps_what_the_checkpoints_keep(cfg):
    """Per MoE layer: the two norms keep their d-wide input only (not their output too), latent
    attention its r_q query latent and kv_a_proj's r_kv + d_r output (not its norms' outputs, nor
    kv_b_proj's output that the kept value is a view of), the flash kernel its output and fp32
    log-sum-exp (not q, k, v); the router and experts are untouched."""
    none, deepseek = saved_by_leaf(cfg, tree(cfg, "none")), saved_by_leaf(cfg, tree(cfg, "deepseek"))
    # Before: each norm input + output; MLA: the query view (h nope), kv norm's r_kv output, the
    # query norm's input and output, kv_a's whole output and the kv norm's rstd, kv_b's input.
    assert none["self_attention.norm"] == none["ffn.norm"] == TOKENS * E * 2 * D == 2880
    assert none["self_attention.mla"] == TOKENS * E * (H * NOPE + RKV + 2 * RQ + DR + 2 * RKV + 1) == 3510
    assert none["self_attention.scores"] == TOKENS * E * QK * 2 * H == 3600  # q and k, h heads each
    assert none["self_attention.weighted_sum"] == TOKENS * E * DV * 2 * H == 2520  # v and the output
    assert deepseek["self_attention.norm"] == deepseek["ffn.norm"] == TOKENS * E * D == 1440
    assert deepseek["self_attention.mla"] == TOKENS * E * (RQ + RKV + DR) == 1080
    assert deepseek["self_attention.scores"] == 0
    assert deepseek["self_attention.weighted_sum"] == TOKENS * E * DV * H == 1260  # the output only
    assert deepseek["self_attention.softmax"] == none["self_attention.softmax"] == TOKENS * 4 * H == 360
    for name in ("ffn.router", "ffn.experts", "ffn.shared_expert"):
        assert deepseek[name] == none[name]
    saved = sum(none.values()) - sum(deepseek.values())
    assert saved == 1440 + 1440 + (3510 - 1080) + 3600 + (2520 - 1260) == 10170


def test_the_layout_saves_the_trees_bytes_per_layer(cfg):
    """The layout's per-layer saved bytes (costmodel/layout/parts.py) are the tree's leaves' sum,
    and the activations the estimate reports fall by the per-layer difference times the layers."""
    from costmodel.layout import Layout, ParallelEstimate

    layout = Layout(framework="megatron")
    for recompute in ("none", "deepseek"):
        workload = Workload(seq_len=N, batch=B, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
        estimate = ParallelEstimate(cfg, workload, layout)
        for kind in ("dense", "moe"):
            assert estimate.numbers[f"layer.decoder.{kind}.saved"] == sum(saved_by_leaf(cfg, tree(cfg, recompute), kind).values())


def test_only_the_up_projections_rerun(cfg):
    """What reruns: the norms and RoPE whole, of latent attention's projections the two
    up-projections (2 tokens (r_q h d_h + r_kv h (nope + d_v)) FLOPs a layer) and its two norms,
    never the down-projections: the recomputed FLOPs are those of the up-projections alone."""
    model = tree(cfg, "deepseek")
    rerun = {leaf.path.split(".", 2)[2]: leaf for leaf in model.leaves if leaf.part == "layer" and leaf.kind == "moe"
             and leaf.recomputed}
    assert sorted(rerun) == ["ffn.norm", "self_attention.mla", "self_attention.norm", "self_attention.rope"]
    up = 2 * TOKENS * (RQ * H * QK + RKV * H * (NOPE + DV))
    assert number(cfg, rerun["self_attention.mla"].rerun.flops_matmul) == up == 64080
    whole = number(cfg, rerun["self_attention.mla"].cost.flops_matmul)
    assert whole == up + 2 * TOKENS * D * (RQ + RKV + DR)  # the down-projections do not rerun
    assert number(cfg, sum(leaf.count * leaf.rerun.flops_matmul for leaf in model.leaves if leaf.rerun is not None)) \
        == 3 * up  # every layer's attention, dense or MoE


def test_the_kernel_model_reruns_the_two_up_projection_gemms(cfg):
    """Under the kernel model the rerun is the up-projections' two GEMMs (tokens x h d_h x r_q and
    tokens x h (nope + d_v) x r_kv) and the latent norms' pointwise kernel."""
    from costmodel.kernel_time import Gemm, Pointwise, leaf_kernels, rerun_kernels

    (mla,) = [leaf for leaf in tree(cfg, "deepseek").leaves if leaf.name == "mla" and leaf.kind == "moe"]
    subs = {k: sp.Integer(v) for k, v in model_values(cfg).items()} | {S.b: B, S.n: N, S.e: E, S.T: 0, S.s: N}
    kernels = leaf_kernels(mla, subs, True)
    again = rerun_kernels(mla, kernels, subs, True)
    assert [k for k in again if isinstance(k, Gemm)] == [Gemm(TOKENS, H * QK, RQ), Gemm(TOKENS, H * (NOPE + DV), RKV)]
    # the two RMSNorms' output elements, all the pointwise work the projections' leaf has
    pointwise = [k for k in again if isinstance(k, Pointwise)]
    assert [k.flops for k in pointwise] == [TOKENS * (RQ + RKV)]
    assert pointwise == [k for k in kernels if isinstance(k, Pointwise)]
    assert len([k for k in kernels if isinstance(k, Gemm)]) == 4


def test_without_a_fused_kernel_latent_attention_is_refused_and_other_models_recompute_their_norms(cfg):
    with pytest.raises(ConfigError, match="fused attention kernel"):
        tree(cfg, "deepseek", attention="eager")
    llama = from_hf_config(_llama()[0], "odd-llama")
    none, deepseek = tree(llama, "none", "eager", "hf"), tree(llama, "deepseek", "eager", "hf")
    for before, after in zip(none.leaves, deepseek.leaves):
        if type(before.block).__name__ == "Norm":
            assert after.recomputed and number(llama, after.cost.saved_bytes) == E * B * N * llama.d_model
        else:
            assert number(llama, after.cost.saved_bytes) == number(llama, before.cost.saved_bytes)
            assert not after.recomputed


# ---------------------------------------------------------------------------------------------
# DeepSeek-V3's low-precision activations (--fp8 blockwise; report section 3.3.3)

DX, K, EXPERTS, DS, DFF = 16, 3, 8, 16, 37  # the odd config's expert width, top k, experts, shared, dense
SLOTS = TOKENS * K


def layer_saved(cfg, recompute: str, fp8: str | None) -> dict[str, int]:
    from costmodel.layout import Layout, ParallelEstimate

    workload = Workload(seq_len=N, batch=B, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
    numbers = ParallelEstimate(cfg, workload, Layout(framework="megatron", fp8=fp8)).numbers
    return {kind: numbers[f"layer.decoder.{kind}.saved"] for kind in ("dense", "moe")}


def tiles(rows: int, width: int, bits: int = 8) -> int:
    """rows x width at `bits` a value, an fp32 scale per 1 x 128 tile of a row (hand count)."""
    return rows * width * bits // 8 + 4 * rows * -(-width // 128)


def test_blockwise_fp8_caches_the_linear_inputs_it_states(cfg):
    """Per layer under --recompute deepseek: the routed experts keep their gathered input and
    SwiGLU's input in FP8 tiles and not SwiGLU's output (the product, S d_x bf16 values; Megatron's
    fused SwiGLU keeps no SiLU output in bf16 either: Experts.glu), the shared expert and the dense FFN their output matrix's input in FP8, the flash
    kernel its output in E5M6 tiles; tensorwise (torchao) keeps everything as bf16 does."""
    bf16, blockwise = layer_saved(cfg, "deepseek", None), layer_saved(cfg, "deepseek", "blockwise")
    assert layer_saved(cfg, "deepseek", "tensorwise") == bf16
    experts = E * SLOTS * (2 * D + 3 * DX) - (tiles(SLOTS, D) + tiles(SLOTS, 2 * DX) + E * SLOTS * D)
    assert experts == 12960 - (2340 + 1620 + 4320) == 4680
    shared = E * TOKENS * DS - tiles(TOKENS, DS)  # one of the fused SwiGLU's three tensors
    assert shared == 480 - 300
    attention_output = E * TOKENS * H * DV - tiles(TOKENS, H * DV, bits=12)
    assert attention_output == 1260 - 1005
    assert bf16["moe"] - blockwise["moe"] == experts + shared + attention_output == 5115
    dense = E * TOKENS * DFF - tiles(TOKENS, DFF)
    assert bf16["dense"] - blockwise["dense"] == dense + attention_output == 1110 - 615 + 255


def test_the_experts_rerun_their_swiglu_under_blockwise_fp8(cfg):
    """SwiGLU's output is recomputed in backward: the routed experts' leaf reruns its SiLU and
    product over the S d_x hidden values (no GEMM), only under the blockwise recipe."""
    from costmodel.layout.parts import part_expressions
    from costmodel.layout import Layout

    workload = Workload(seq_len=N, batch=B, dtype="bf16", impl="megatron", attention="flash", recompute="deepseek")
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: B, S.n: N, S.e: E, S.T: 0, S.s: N,
          sp.Symbol("tp", integer=True, positive=True): 1, sp.Symbol("dp", integer=True, positive=True): 1}
    works = {}
    for fp8 in (None, "blockwise"):
        exprs, structure = part_expressions(cfg, workload, Layout(framework="megatron", fp8=fp8))
        (index,) = [i for i, w in enumerate(structure["work"]) if w["experts"]]
        works[fp8] = {q: number(cfg, sp.sympify(exprs[f"work.{index}.{q}"]).xreplace(at)) for q in ("f_mm", "f_o")}
    assert works["blockwise"]["f_mm"] == works[None]["f_mm"]
    assert works["blockwise"]["f_o"] - works[None]["f_o"] == 4 * SLOTS * DX + SLOTS * DX  # silu 4, mul 1 a value
