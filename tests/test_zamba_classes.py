"""What Zamba's and Zamba2's classes do with their shared blocks, on the class alone (measured in
session 26, when both types were refused; validate/FINDINGS.md "Zamba and Zamba2"): one block tied
across the hybrid layers (num_mem_blocks in turn, adapters per use), each use's own keys and values
in the cache, and mixers that are Mamba-1's and Mamba-2's. costmodel/hf_zamba.py reads both types
on these facts; tests/test_hf_zamba.py checks the estimate against the classes."""

from __future__ import annotations

import pytest


def _meta(model_type: str, **fields):
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _unique_and_all(model) -> tuple[int, int]:
    """Parameters counted once (what a checkpoint holds) and once per module that holds them."""
    return (sum(p.numel() for p in model.parameters()),
            sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)))


def test_zamba_shares_one_block_across_its_hybrid_layers():
    """ZambaConfig() (hidden 3,712, 76 layers, 13 of them 'hybrid': 2, 7, 13, ..., 73): the hybrid
    layers' shared_transf is one set of weights, read off 2 x 3,712 = 7,424 wide. Counted once:
    embeddings 32,000 x 3,712 (the head tied) + final norm 3,712 + 76 Mamba layers x 91,105,920
    (norm 3,712, in_proj 3,712 x 14,848, conv 7,424 x 4 + 7,424, x_proj 7,424 x (232 + 2 x 16),
    dt_proj 7,424 x 232 + 7,424, A_log 7,424 x 16, D 7,424, out_proj 7,424 x 3,712) + 13 linears
    3,712^2 + the shared block once, 358,263,680 (norm 7,424, q/k/v 3 x 7,424^2, o 7,424 x 3,712,
    norm 3,712, MLP 3 x 3,712 x 14,848) = 7,232,490,496; every module's own count adds the block 12
    times more and the tied head: 12 x 358,263,680 + 118,784,000."""
    pytest.importorskip("transformers")
    model = _meta("zamba")
    hybrid = [i for i, kind in enumerate(model.config.layers_block_type) if kind == "hybrid"]
    assert hybrid == [2, 7, 13, 19, 25, 31, 37, 43, 49, 55, 61, 67, 73]
    first, *rest = (model.model.layers[i].shared_transf for i in hybrid)
    assert all(block.self_attn.q_proj.weight is first.self_attn.q_proj.weight for block in rest)
    assert first.self_attn.q_proj.in_features == first.input_layernorm.weight.numel() == 2 * 3712
    assert _unique_and_all(model) == (7_232_490_496, 7_232_490_496 + 12 * 358_263_680 + 32_000 * 3712)


def test_zamba2_ties_its_blocks_in_turn_with_adapters_per_use():
    """Zamba2 at hidden 40, 9 layers of which 5 'hybrid', num_mem_blocks 2 (uses 0, 2, 4 on block 0;
    1, 3 on block 1), adapters of rank 3: each block holds an adapter set for each of its uses.
    Counted once, 161,858 = embeddings 99 x 40 + final norm 40 + 9 Mamba-2 layers x 11,092 (norm 40,
    in_proj 40 x (80 + 100 + 4), conv 100 x 3 + 100, dt_bias, A_log, D 3 x 4, gated norm 80,
    out_proj 80 x 40) + 5 linears 40^2 + 2 blocks x 20,560 (norm 80, q 80 x 80, k and v 80 x 40
    each, o 80 x 40, norm 40, gate_up 40 x 74, down 37 x 40) + 5 adapter sets x 1,782 (gate_up
    40 x 3 + 3 x 74, q/k/v 3 x (80 x 3 + 3 x 80)). The k and v adapters are 80 wide, not the
    2 x 20 of two KV heads: this class builds but cannot run its forward with them (a shape error)."""
    pytest.importorskip("transformers")
    layers = ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid", "mamba", "hybrid"]
    model = _meta("zamba2", vocab_size=99, hidden_size=40, intermediate_size=37, num_hidden_layers=9,
                  num_attention_heads=4, num_key_value_heads=2, n_mamba_heads=4, mamba_d_state=5,
                  mamba_d_conv=3, mamba_ngroups=2, num_mem_blocks=2, use_shared_attention_adapter=True,
                  adapter_rank=3, layers_block_type=layers)
    blocks = [model.model.layers[i].shared_transformer for i in (1, 3, 4, 6, 8)]
    weight = [block.feed_forward.gate_up_proj.weight for block in blocks]
    assert weight[0] is weight[2] is weight[4] and weight[1] is weight[3] and weight[0] is not weight[1]
    assert _unique_and_all(model)[0] == 99 * 40 + 40 + 9 * 11_092 + 5 * 40 ** 2 + 2 * 20_560 + 5 * 1_782 == 161_858


def test_zamba_caches_the_keys_and_values_of_each_use_of_its_block():
    """A prefill of 7 tokens (batch 2) through a 9-layer Zamba on the CPU: each of the 3 hybrid layers
    (2, 4, 7) caches its own keys and values, 2 KV heads x 7 tokens x head_dim 2 x 40 / 4 = 20, though
    they share one block's weights; the Mamba-only layers cache none."""
    pytest.importorskip("transformers")
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(
        "zamba", vocab_size=99, hidden_size=40, intermediate_size=37, num_hidden_layers=9, num_attention_heads=4,
        num_key_value_heads=2, n_mamba_heads=2, mamba_d_state=5, mamba_d_conv=3, attn_layer_period=3,
        attn_layer_offset=1)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 99, (2, 7)), use_cache=True).cache
    shapes = {i: tuple(layer.keys.shape) for i, layer in enumerate(cache.layers)
              if getattr(layer, "keys", None) is not None}
    assert shapes == {2: (2, 2, 7, 20), 4: (2, 2, 7, 20), 7: (2, 2, 7, 20)}


def _forward_backward_flops(mixer, hidden) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        mixer(hidden).sum().backward()
    return counter.get_total_flops()


def test_zamba_mixers_are_mamba_1_and_mamba_2_mixers_in_parameters_and_flops():
    """What a model of the two types could reuse (validate/FINDINGS.md, session 26): at hidden 40, a
    batch of 2 x 7 tokens, ZambaMambaMixer split into n_mamba_heads 2 or 4 heads (x_proj and dt_proj
    per head, bmm instead of mm) holds MambaMixer's parameters and runs its forward-and-backward FLOPs,
    1,696,320 (state 5, conv 3, dt rank 6, no projection bias); Zamba2MambaMixer is Mamba2Mixer's
    (4 heads of 20, 2 groups, state 5, conv 3, chunk 4): 11,052 parameters, 2,147,040 FLOPs."""
    pytest.importorskip("transformers")
    import torch
    import transformers
    from transformers.models.mamba.modeling_mamba import MambaMixer
    from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer
    from transformers.models.zamba.modeling_zamba import ZambaMambaMixer
    from transformers.models.zamba2.modeling_zamba2 import Zamba2MambaMixer

    config = transformers.AutoConfig.for_model
    torch.manual_seed(0)
    hidden = torch.randn(2, 7, 40, requires_grad=True)
    mamba1 = MambaMixer(config("mamba", hidden_size=40, state_size=5, conv_kernel=3, expand=2, time_step_rank=6,
                               use_bias=False, use_conv_bias=True, num_hidden_layers=1), 0)
    assert _forward_backward_flops(mamba1, hidden) == 1_696_320
    for heads in (2, 4):
        zamba = ZambaMambaMixer(config("zamba", hidden_size=40, n_mamba_heads=heads, mamba_d_state=5, mamba_d_conv=3,
                                       mamba_dt_rank=6, num_attention_heads=4, num_hidden_layers=3), 0)
        assert sum(p.numel() for p in zamba.parameters()) == sum(p.numel() for p in mamba1.parameters())
        assert _forward_backward_flops(zamba, hidden) == 1_696_320
    zamba2 = Zamba2MambaMixer(config("zamba2", hidden_size=40, n_mamba_heads=4, mamba_d_state=5, mamba_d_conv=3,
                                     mamba_ngroups=2, chunk_size=4, num_attention_heads=4, num_hidden_layers=3,
                                     layers_block_type=["mamba", "hybrid", "mamba"]), 0)
    mamba2 = Mamba2Mixer(config("mamba2", hidden_size=40, num_heads=4, head_dim=20, state_size=5, conv_kernel=3,
                                n_groups=2, chunk_size=4, expand=2, use_bias=False, use_conv_bias=True,
                                num_hidden_layers=1), 0)
    assert sum(p.numel() for p in zamba2.parameters()) == sum(p.numel() for p in mamba2.parameters()) == 11_052
    assert _forward_backward_flops(zamba2, hidden) == _forward_backward_flops(mamba2, hidden) == 2_147_040
