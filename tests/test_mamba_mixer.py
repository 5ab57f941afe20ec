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


def test_kernel_model_times_projections_as_gemms_and_the_rest_as_bytes():
    """costmodel/kernel_time.leaf_kernels on a Nemotron 3 Nano Mamba-2 leaf (b 1, n 8192): in_proj
    and out_proj as (M, N, K) GEMMs of the 8,192 tokens, then one memory-bound kernel of
    scan_bytes (docs/time.md): 8192 x (3 x 6,144 + 64 + 4 x 4,096) x 2 bytes (6,144 conv channels:
    64 x 64 + 2 x 8 x 128) and the fp32 chunk
    states (64 chunks of 64 x 64 x 128) written and read."""
    from costmodel import symbols as S
    from costmodel.config import Workload
    from costmodel.kernel_time import leaf_kernels
    from costmodel.kernel_shapes import Gemm, Pointwise
    from costmodel.presets import load_preset
    from costmodel.tree import CostModel, model_values, profile_for, workload_values

    cfg = load_preset("nemotron-3-nano")
    workload = Workload(seq_len=8192, batch=1, dtype="bf16")
    model = CostModel(cfg, profile_for(cfg, workload), phase="train")
    leaf = next(leaf for leaf in model.leaves if leaf.name == "mamba")
    subs = {**model_values(cfg), **workload_values(cfg, workload)}
    kernels = leaf_kernels(leaf, subs, fused_attention=True)
    assert kernels[:2] == [Gemm(8192, 10304, 2688), Gemm(8192, 2688, 4096)]
    assert isinstance(kernels[2], Pointwise) and len(kernels) == 3
    assert kernels[2].bytes == 8192 * (3 * 6144 + 64 + 4 * 4096) * 2 + 2 * 4 * 64 * 64 * 64 * 128
    assert S.n not in mamba_state_bytes().free_symbols
