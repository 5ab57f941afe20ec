"""The Mamba-2 mixer block (costmodel/blocks/mamba.py) against transformers 5.24's
NemotronHMamba2Mixer built from odd tiny configs on the CPU (its PyTorch path: no mamba_ssm):
the parameter tensors in registration order, the forward matmul FLOPs FlopCounterMode counts
(mm, the depthwise convolution, the scan's bmm) in training, prefill, a chunk after a cached
prefix and a decode step, the backward's mm and bmm, and the bytes of the states its cache holds.
"""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.blocks.mamba import Mamba2Mixer, conv_flops, mamba_state_bytes

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

#: Odd sizes no dimension shares: d 36, 6 heads of 5, state 7, 2 groups, conv 3, chunks of 4.
ODD = dict(vocab_size=99, hidden_size=36, num_attention_heads=4, num_key_value_heads=2, head_dim=10,
           intermediate_size=37, ssm_state_size=7, mamba_num_heads=6, mamba_head_dim=5, n_groups=2,
           conv_kernel=3, chunk_size=4, layers_block_type=["linear_attention", "full_attention"])
VARIANTS = {
    "odd": ODD,
    "biases": dict(ODD, use_bias=True, use_conv_bias=True),
    "no_conv_bias_one_group": dict(ODD, use_conv_bias=False, n_groups=1, conv_kernel=4, chunk_size=3),
}


def _values(cfg, b: int, n: int, e: int) -> dict:
    return {S.d: cfg.hidden_size, S.H_m: cfg.mamba_num_heads, S.P_m: cfg.mamba_head_dim,
            S.N_m: cfg.ssm_state_size, S.G_m: cfg.n_groups, S.K_m: cfg.conv_kernel,
            S.Q_m: cfg.chunk_size, S.b: b, S.n: n, S.e: e}


def _config(fields: dict):
    from transformers import NemotronHConfig

    return NemotronHConfig(**fields)


def _mixer(cfg, dtype=torch.float32):
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer

    torch.manual_seed(0)
    return NemotronHMamba2Mixer(cfg, layer_idx=0).to(dtype)


def _block(cfg, phase: str) -> Mamba2Mixer:
    return Mamba2Mixer(phase, bias=cfg.use_bias, conv_bias=cfg.use_conv_bias)


def _counts(run) -> dict[str, int]:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return {str(op): int(v) for op, v in counter.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_in_registration_order(name):
    cfg = _config(VARIANTS[name])
    shapes = [p.numel() for p in _mixer(cfg).parameters()]
    values = _values(cfg, 1, 1, 4)
    ours = [int(t.elements.subs(values)) for t in _block(cfg, "train").tensors()]
    assert ours == shapes
    assert int(_block(cfg, "train").cost().params.subs(values)) == sum(shapes)


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("n", [7, 8, 2, 13])  # a partial chunk, whole chunks, under the kernel
def test_training_flops_forward_and_backward(name, n):
    cfg = _config(VARIANTS[name])
    mixer = _mixer(cfg).train()
    x = torch.randn(2, n, cfg.hidden_size, requires_grad=True)
    forward = _counts(lambda: mixer(x))
    both = _counts(lambda: mixer(x).sum().backward())
    values = _values(cfg, 2, n, 4)
    cost = _block(cfg, "train").cost()
    assert int(cost.flops_matmul.subs(values)) == sum(forward.values())
    assert forward["aten.convolution"] == int(conv_flops(S.b, S.n + S.K_m - 1).subs(values))
    # backward: each mm and bmm twice over; the conv's backward as FlopCounterMode counts it is
    # not ours (its weight gradient ignores the groups), so compare the rest
    conv = int(conv_flops(S.b, S.n + S.K_m - 1).subs(values))
    backward = sum(v for k, v in both.items() if "convolution" not in k) - sum(
        v for k, v in forward.items() if "convolution" not in k)
    assert int(cost.flops_matmul_backward.subs(values)) - 2 * conv == backward


def _prefill(cfg, mixer, x):
    from transformers.cache_utils import DynamicCache

    cache = DynamicCache(config=cfg)
    return cache, _counts(lambda: mixer(x, cache=cache))


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", [9, 2])
def test_prefill_chunk_decode_flops_and_states(name, dtype, n):
    cfg = _config(VARIANTS[name])
    mixer = _mixer(cfg, dtype).eval()
    b, e = 3, torch.tensor([], dtype=dtype).element_size()
    with torch.no_grad():
        cache, prefill = _prefill(cfg, mixer, torch.randn(b, n, cfg.hidden_size, dtype=dtype))
        layer = cache.layers[0]
        held = sum(t.numel() * t.element_size() for t in (*layer.conv_states.values(),
                                                           *layer.recurrent_states.values()))
        chunk = _counts(lambda: mixer(torch.randn(b, 5, cfg.hidden_size, dtype=dtype), cache=cache))
        decode = _counts(lambda: mixer(torch.randn(b, 1, cfg.hidden_size, dtype=dtype), cache=cache))
    values = _values(cfg, b, n, e)
    assert int(_block(cfg, "prefill").cost().flops_matmul.subs(values)) == sum(prefill.values())
    assert int(_block(cfg, "chunk").cost().flops_matmul.subs({**values, S.n: 5})) == sum(chunk.values())
    assert int(_block(cfg, "decode").cost().flops_matmul.subs(values)) == sum(decode.values())
    assert int(mamba_state_bytes().subs(values)) == held
    assert int(_block(cfg, "decode").cost().kv_cache_bytes.subs(values)) == held


def test_state_bytes_do_not_grow_with_the_context():
    assert not mamba_state_bytes().has(S.n, S.c, S.T)
    assert sp.expand(mamba_state_bytes()) == sp.expand(
        S.b * ((S.H_m * S.P_m + 2 * S.G_m * S.N_m) * S.K_m * S.e + 4 * S.H_m * S.P_m * S.N_m))


def test_unknown_phase_is_refused():
    with pytest.raises(ValueError, match="phase"):
        Mamba2Mixer("serve")


def _nano_mamba_kernels(batch: int, seq: int = 8192) -> list:
    from costmodel.config import Workload
    from costmodel.kernel_time import leaf_kernels
    from costmodel.presets import load_preset
    from costmodel.tree import CostModel, model_values, profile_for, workload_values

    cfg = load_preset("nemotron-3-nano")
    workload = Workload(seq_len=seq, batch=batch, dtype="bf16")
    model = CostModel(cfg, profile_for(cfg, workload), phase="train")
    leaf = next(leaf for leaf in model.leaves if leaf.name == "mamba")
    return leaf_kernels(leaf, {**model_values(cfg), **workload_values(cfg, workload)}, fused_attention=True)


#: Megatron-Core's training path through mamba_ssm (costmodel/mamba_kernels.py), forward then backward.
FORWARD = ["causal_conv1d_fwd", "_chunk_cumsum_fwd", "_chunk_state_fwd", "_state_passing_fwd", "_bmm_chunk_fwd",
           "_chunk_scan_fwd", "_layer_norm_fwd"]
BACKWARD = ["_layer_norm_bwd", "causal_conv1d_fwd", "dt.clone", "_chunk_cumsum_fwd", "_bmm_chunk_fwd",
            "_chunk_state_fwd", "_state_passing_fwd", "_chunk_scan_bwd_dz", "_chunk_scan_bwd_dstates",
            "_state_passing_bwd", "_chunk_scan_chunk_state_bwd_dx", "_chunk_state_bwd_db", "_chunk_scan_bwd_dC",
            "_chunk_scan_bwd_dcb", "_bmm_chunk_bwd", "_bmm_chunk_bwd", "_chunk_scan_bwd_ddAcs_stable", "ddA sums",
            "_chunk_cumsum_bwd", "causal_conv1d_bwd"]


def test_kernel_model_times_projections_as_gemms_and_the_scan_as_mamba_ssms_kernels():
    """costmodel/tree_kernels.leaf_kernels on a Nemotron 3 Nano Mamba-2 leaf in training (b 1,
    n 8192; H 64 heads of P 64, state N 128 in G 8 groups, chunks of Q 128): in_proj and out_proj
    as (M, N, K) GEMMs of the 8,192 tokens, then mamba_ssm's kernels, each in its own pass. At
    b = 1 Megatron's (l, b) <-> (b, l) .contiguous() copies move nothing."""
    from costmodel.kernel_shapes import Gemm, PassKernel

    kernels = _nano_mamba_kernels(1)
    assert kernels[:2] == [Gemm(8192, 10304, 2688), Gemm(8192, 2688, 4096)]
    scan = kernels[2:]
    assert all(isinstance(k, PassKernel) for k in scan)
    assert [k.name for k in scan if not k.backward] == FORWARD
    assert [k.name for k in scan if k.backward] == BACKWARD
    named = {k.name: k for k in scan if not k.backward}
    tokens, chunks, e = 8192, 64, 2
    states, dt_cs = chunks * 64 * 64 * 128, 4 * 64 * 8192  # fp32 chunk states; fp32 dt / dA_cumsum
    # B^T (x dt decay) per chunk and head: x (H P) and B (G N) in, dt and dA in, fp32 states out
    assert named["_chunk_state_fwd"].bytes == e * tokens * (4096 + 1024) + 2 * dt_cs + 4 * states
    assert named["_chunk_state_fwd"].products == (Gemm(64, 128, 128, chunks * 64),)
    # C B^T (fp32, per group), x, z, C, dt, dA and the bf16 states in; out and out_x out
    assert named["_chunk_scan_fwd"].bytes == (4 * chunks * 8 * 128 * 128 + e * tokens * (4 * 4096 + 1024)
                                              + 2 * dt_cs + e * states)
    assert named["_chunk_scan_fwd"].products == (Gemm(128, 64, 128, chunks * 64), Gemm(128, 64, 128, chunks * 64))
    assert named["causal_conv1d_fwd"].bytes == 2 * e * tokens * 6144  # 10,304 per row: no stride copy
    two = _nano_mamba_kernels(2)[2:]
    assert {"transpose zxBCdt", "transpose y", "transpose dy", "transpose dzxBCdt"} <= {k.name for k in two}
    assert next(k for k in two if k.name == "transpose zxBCdt").bytes == 2 * e * 2 * tokens * 10304
    assert S.n not in mamba_state_bytes().free_symbols


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("n", [7, 8, 13])
def test_mamba_ssm_products_are_the_torch_scans_less_its_redundant_work(name, n):
    """The Triton forward's products against the scan FlopCounterMode measures on the torch path
    (test_training_flops_forward_and_backward): the same intra-chunk, state and output products;
    C^T B once per group (G) where torch repeats B and C to every head (H); and no bmm across
    chunks (_state_passing_fwd is element-wise where torch multiplies by a (C + 1)^2 decay)."""
    from costmodel.blocks.mamba import scan_flops
    from costmodel.mamba_kernels import ssd_training_kernels

    cfg = _config(VARIANTS[name])
    b, values = 2, _values(cfg, 2, n, 4)
    chunks = -(-n // cfg.chunk_size)
    kernels = ssd_training_kernels(b, n, cfg.mamba_num_heads, cfg.mamba_head_dim, cfg.ssm_state_size,
                                   cfg.n_groups, cfg.chunk_size, 4)
    ours = sum(k.flops for k in kernels if not k.backward)
    q2, pn = chunks * cfg.chunk_size**2, cfg.mamba_head_dim * cfg.ssm_state_size
    torch_scan = int(scan_flops(S.b, S.n).subs(values))
    assert ours == torch_scan - 2 * b * q2 * cfg.ssm_state_size * (cfg.mamba_num_heads - cfg.n_groups) \
        - 2 * b * (chunks + 1)**2 * cfg.mamba_num_heads * pn


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("b,n", [(2, 7), (3, 8), (2, 13), (1, 9)])  # from two chunks on
def test_saved_bytes_of_the_torch_path(name, dtype, b, n):
    """Bytes NemotronHMamba2Mixer's torch_forward saves for backward in training (validate's
    saved-tensor hooks, parameters excluded) less its input (the layer's norm counts it) against
    blocks/mamba.saved_bytes_torch, fp32 and bf16 (whose .float() copies differ)."""
    from validate.measure.saved import saved_activation_bytes

    cfg = _config(VARIANTS[name])
    mixer = _mixer(cfg, dtype).train()
    x = torch.randn(b, n, cfg.hidden_size, dtype=dtype, requires_grad=True)
    measured = saved_activation_bytes(mixer, {"hidden_states": x}, loss_fn=lambda out: out.float().sum())
    e = x.element_size()
    ours = int(_block(cfg, "train").cost().saved_bytes.subs(_values(cfg, b, n, e)))
    assert ours == measured.total_bytes - e * b * n * cfg.hidden_size


def test_saved_bytes_by_path():
    """impl hf keeps the torch path's tensors; impl megatron (facts.json mamba_path) what
    mamba_ssm's autograd function, the gated norm and out_proj keep: Nemotron 3 Nano at b 1,
    n 4,096: 2 x 4096 x (10,304 + 3 x 4,096) + 4 x 4096 x 8 + 8 x 64 bytes a layer. Inference
    phases keep nothing."""
    from costmodel.config import Workload
    from costmodel.presets import load_preset
    from costmodel.tree import CostModel, model_values, profile_for, workload_values

    cfg = load_preset("nemotron-3-nano")
    kept = {}
    for impl in ("hf", "megatron"):
        workload = Workload(seq_len=4096, batch=1, dtype="bf16", impl=impl)
        model = CostModel(cfg, profile_for(cfg, workload), phase="train")
        leaf = next(leaf for leaf in model.leaves if leaf.name == "mamba")
        kept[impl] = int(leaf.cost.saved_bytes.subs({**model_values(cfg), **workload_values(cfg, workload)}))
        assert leaf.block.path == {"hf": "torch", "megatron": "mamba_ssm"}[impl]
    assert kept["megatron"] == 2 * 4096 * (10304 + 3 * 4096) + 4 * 4096 * 8 + 8 * 64
    assert kept["hf"] > 10 * kept["megatron"]  # fp32 (Q x Q) tensors per chunk and head
    assert Mamba2Mixer("prefill").cost().saved_bytes == 0
    with pytest.raises(ValueError, match="path"):
        Mamba2Mixer("train", path="cuda")
