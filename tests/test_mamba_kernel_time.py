"""The Mamba-2 mixer's training kernels in the kernel time model (costmodel/mamba_kernels.py, from
Megatron-Core's MambaMixer._ssm_training through mamba_ssm's mamba_split_conv1d_scan_combined): the
work each SSD kernel's products do on a small odd shape, counted by hand from the kernels' loops, and
what the kernels add to a Nemotron 3 Nano training step over the one memory-bound kernel of
blocks/mamba.scan_bytes they replaced (validate/FINDINGS.md, "Mamba-2 mixers' kernel time",
session 16: 0.940 -> 1.840 ms a mixer on an H100). Each test fails if a kernel's work is dropped."""

from __future__ import annotations

import pytest
import sympy

from costmodel import symbols as S
from costmodel.blocks.mamba import Mamba2Mixer, scan_bytes
from costmodel.hardware import load_hardware
from costmodel.kernel_shapes import Gemm, PassKernel, Pointwise
from costmodel.kernel_time import KernelTimer, kernels_seconds, leaf_kernels, leaf_seconds
from costmodel.mamba_kernels import ssd_training_kernels

#: b 2 sequences of n 13 tokens, H 4 heads of P 6, state N 5 in G 2 groups, chunks of Q 8, bf16:
#: ceil(13 / 8) = 2 chunks a sequence, 4 in all, each product batched over chunks x heads (16) or
#: chunks x groups (8)
ODD = dict(batch=2, seq=13, heads=4, head_dim=6, state=5, groups=2, chunk=8, element=2)


def _products(kernels: list[PassKernel], backward: bool) -> dict[str, int]:
    flops: dict[str, int] = {}
    for k in kernels:
        if k.backward == backward and k.products:
            flops[k.name] = flops.get(k.name, 0) + k.flops
    return flops


def test_the_ssd_kernels_products_on_an_odd_shape():
    """2 M N K x count per product (mamba_ssm e9594ce1 ssd_chunk_state.py, ssd_bmm.py,
    ssd_chunk_scan.py): forward _chunk_state_fwd B^T x per chunk and head (P x N over Q),
    _bmm_chunk_fwd C B^T per chunk and group (Q x Q over N), _chunk_scan_fwd the masked
    (C B^T) x (Q x P over Q) and C states (Q x P over N) per chunk and head; the backward reruns
    the first two, then one product per input gradient."""
    kernels = ssd_training_kernels(**ODD)
    per_head, per_group = 16, 8
    state = 2 * 6 * 5 * 8 * per_head  # P N Q
    cb = 2 * 8 * 8 * 5 * per_group  # Q Q N
    intra, inter = 2 * 8 * 6 * 8 * per_head, 2 * 8 * 6 * 5 * per_head  # Q P Q, Q P N
    assert _products(kernels, backward=False) == {
        "_chunk_state_fwd": state, "_bmm_chunk_fwd": cb, "_chunk_scan_fwd": intra + inter}
    assert _products(kernels, backward=True) == {
        "_bmm_chunk_fwd": cb, "_chunk_state_fwd": state,
        "_chunk_scan_bwd_dstates": 2 * 6 * 5 * 8 * per_head,  # dout^T (C decay): P x N over Q
        "_chunk_scan_chunk_state_bwd_dx": intra + inter,  # (C B^T)^T dout and B dstates
        "_chunk_state_bwd_db": 2 * 8 * 5 * 6 * per_head,  # x dstates: Q x N over P
        "_chunk_scan_bwd_dC": 2 * 8 * 5 * 6 * per_head,  # dout states: Q x N over P
        "_chunk_scan_bwd_dcb": 2 * 8 * 8 * 6 * per_head,  # dout x^T: Q x Q over P
        "_bmm_chunk_bwd": 2 * (2 * 8 * 5 * 8 * per_group),  # dB and dC: Q x N over Q, twice
        "_chunk_scan_bwd_ddAcs_stable": 2 * 8 * 8 * 6 * per_head}
    assert sum(_products(kernels, False).values()) == 32_768
    assert sum(_products(kernels, True).values()) == 90_624
    # every kernel moves bytes; 7 forward and 20 backward, plus Megatron's four (l, b) <-> (b, l)
    # copies at b > 1
    assert all(k.bytes > 0 for k in kernels)
    assert (sum(not k.backward for k in kernels), sum(k.backward for k in kernels)) == (9, 22)


NANO = {S.H_m: 64, S.P_m: 64, S.N_m: 128, S.G_m: 8, S.Q_m: 128, S.e: 2}  # nemotron-3-nano's mixer, bf16


@pytest.mark.parametrize("hardware,batch,old_ms,new_ms", [
    ("h100-sxm", 1, 0.940, 1.840), ("gb200", 2, 0.787, 1.836), ("b200", 2, 0.818, 1.907)])
def test_the_kernels_add_their_bytes_to_a_nano_mixer(hardware, batch, old_ms, new_ms):
    """Nemotron 3 Nano's mixer at n 8,192 (b 1 on the H100 rows, 2 on the Blackwell ones, as the
    Megatron-Bridge recipes' micro-batches): every SSD kernel is bound by its bytes at these
    shapes (its products' tiles take less), so the mixer's non-projection time, forward and
    backward, is the kernels' bytes at the bandwidth; the one memory-bound kernel it replaced
    moved scan_bytes three times (forward, and twice in backward)."""
    timer = KernelTimer(load_hardware(hardware), sustained=True)
    kernels = ssd_training_kernels(batch, 8192, 64, 64, 128, 8, 128, 2)
    moved = sum(k.bytes for k in kernels)
    assert moved == {1: 4_930_928_640, 2: 11_749_294_080}[batch]
    assert all(timer.pass_seconds(k) == pytest.approx(k.bytes / timer.bandwidth) for k in kernels)
    new = kernels_seconds(kernels, timer, training=True)
    assert new == pytest.approx(moved / timer.bandwidth)
    old_bytes = int(scan_bytes(S.b, S.n, False).subs({**NANO, S.b: batch, S.n: 8192}))
    old = kernels_seconds([Pointwise(old_bytes)], timer, training=True)
    assert old == pytest.approx(3 * old_bytes / timer.bandwidth)
    assert (round(old * 1e3, 3), round(new * 1e3, 3)) == (old_ms, new_ms)


def test_a_nano_training_step_pays_the_mixers_kernels(monkeypatch):
    """The tree's Mamba-2 leaf in training (kernel_time.leaf_seconds, H100, b 1, n 8,192) runs
    in_proj's and out_proj's GEMMs plus the SSD kernels; without pass_kernels it would fall back
    to scan_bytes' one kernel. The leaf's time differs by exactly the kernels' time less that
    kernel's, 0.900 ms a mixer, and the step holds 23 mixers."""
    from costmodel.config import Workload
    from costmodel.presets import load_preset
    from costmodel.tree import CostModel, model_values, profile_for, workload_values

    cfg = load_preset("nemotron-3-nano")
    workload = Workload(seq_len=8192, batch=1, dtype="bf16", impl="megatron")
    model = CostModel(cfg, profile_for(cfg, workload), phase="train")
    subs = {**model_values(cfg), **workload_values(cfg, workload)}
    leaf = next(leaf for leaf in model.leaves if leaf.name == "mamba")
    assert int(sympy.sympify(leaf.count).subs(subs)) == 23  # the pattern's M layers
    timer = KernelTimer(load_hardware("h100-sxm"), sustained=True)
    listed = leaf_kernels(leaf, subs, fused_attention=True)
    with_kernels, count = leaf_seconds(leaf, subs, timer, True)
    monkeypatch.setattr(Mamba2Mixer, "pass_kernels", lambda self, number: None)
    fallback = leaf_kernels(leaf, subs, fused_attention=True)
    timer = KernelTimer(load_hardware("h100-sxm"), sustained=True)
    without, fallback_count = leaf_seconds(leaf, subs, timer, True)
    assert [type(k) for k in fallback] == [Gemm, Gemm, Pointwise] and fallback_count == 3
    assert listed[:2] == fallback[:2] and all(isinstance(k, PassKernel) for k in listed[2:])
    assert count == len(listed) == 2 + 27  # 7 forward and 20 backward kernels at b 1
    added = kernels_seconds(listed[2:], timer, True) - kernels_seconds(fallback[2:], timer, True)
    assert with_kernels - without == pytest.approx(added)
    assert round(added * 1e3, 3) == 0.900


def test_fp8_runs_a_nano_mixers_projections_not_its_scan():
    """Under an FP8 recipe Megatron-Core's hybrid stack runs each Mamba layer inside the recipe's
    context, and the mixer's in_proj (TELayerNormColumnParallelLinear) and out_proj
    (TERowParallelLinear) are TE modules (layout/fp8.py fp8_blocks, NVIDIA/Megatron-LM d98e8a64dd
    hybrid_block.py and hybrid_layer_specs.py): the mixer's leaf is an FP8 leaf, so its two GEMMs run
    on the FP8 timer and its SSD kernels (PassKernel, not GEMMs) on the dtype's; in_proj's input is
    cast in the fused pre-mixer norm; the weights held in FP8 are the two matrices alone."""
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.fp8 import fp8_blocks, fp8_weights
    from costmodel.presets import load_preset
    from costmodel.tree import CostModel, model_values, profile_for, workload_values

    cfg = load_preset("nemotron-3-nano")
    workload = Workload(seq_len=8192, batch=1, dtype="bf16", impl="megatron")
    model = CostModel(cfg, profile_for(cfg, workload), phase="train")
    subs = {**model_values(cfg), **workload_values(cfg, workload)}
    leaf = next(leaf for leaf in model.leaves if leaf.name == "mamba")
    assert isinstance(leaf.block, fp8_blocks())
    weights = [(int(sympy.sympify(r).subs(subs)), int(sympy.sympify(c).subs(subs)))
               for r, c in fp8_weights(leaf.block, leaf.cost)]
    assert weights == [(10_304, 2_688), (2_688, 4_096)]  # in_proj (2 x 4,096 + 2 x 8 x 128 + 64), out_proj
    listed = leaf_kernels(leaf, subs, fused_attention=True)
    in_proj, out_proj = listed[:2]
    assert (in_proj.m, in_proj.n, in_proj.k, in_proj.normed_input) == (8192, 10_304, 2_688, True)
    assert (out_proj.m, out_proj.n, out_proj.k, out_proj.normed_input) == (8192, 2_688, 4_096, False)
    estimate = ParallelEstimate(cfg, workload, Layout(dp=8, ep=8, framework="megatron", fp8="current"))
    work = {w["path"]: w["fp8"] for w in estimate.structure["work"]}
    assert [fp8 for path, fp8 in work.items() if path.endswith("mamba.mamba")] == [True]
    assert not any(fp8 for path, fp8 in work.items() if path.endswith("mamba.norm"))
