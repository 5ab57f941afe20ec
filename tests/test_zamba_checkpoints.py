"""A real Zyphra checkpoint's shape read by costmodel/hf_zamba.py: Zamba2-7B's config.json as the
NX-AI/mlstm_kernels Hugging Face model benchmark copies it (its `zamba_config`: the Hub file of
transformers 4.43.0.dev0, Zyphra's own keys), written with transformers 5.24's keys: ffn_hidden_size
14,336 as intermediate_size, state_size 64 as mamba_d_state, lora_rank 128 as adapter_rank,
use_shared_block_lora true as use_shared_mlp_adapter, use_shared_attention_lora false as
use_shared_attention_adapter, mamba_headdim 64 as n_mamba_heads = 2 x 3,584 / 64 = 112; 81 layers,
13 of them hybrid, two shared blocks in turn. tie_word_embeddings is not in that file (transformers'
default, true, ties the shared blocks: untied, transformers would build 11,442,513,232 parameters,
a block a use, which the reader refuses in one line). The count is the meta model's
(Zamba2ForCausalLM) and ours: 7,356,749,648, the "7B" of the model card. Zamba-7B-v1 is
ZambaConfig's default (7,232,490,496: tests/test_hf_zamba.py).
"""

from __future__ import annotations

from tests.family_checks import assert_counts_exact

LAYERS = ["mamba"] * 6 + ["hybrid"] + ["mamba"] * 4 + ["hybrid"] + (["mamba"] * 5 + ["hybrid"]) * 11 + ["mamba"] * 3
ZAMBA2_7B = dict(model_type="zamba2", vocab_size=32000, hidden_size=3584, num_hidden_layers=81,
                 layers_block_type=LAYERS, num_mem_blocks=2, n_mamba_heads=112, mamba_d_state=64,
                 mamba_ngroups=2, mamba_expand=2, mamba_d_conv=4, intermediate_size=14336,
                 num_attention_heads=32, num_key_value_heads=32, use_shared_attention_adapter=False,
                 use_shared_mlp_adapter=True, adapter_rank=128, use_mem_rope=True, add_bias_linear=False,
                 max_position_embeddings=4096, rms_norm_eps=1e-5)


def test_zamba2_7b_layers_as_the_file_lists_them():
    assert len(LAYERS) == 81 and LAYERS.count("hybrid") == 13
    assert [i for i, kind in enumerate(LAYERS) if kind == "hybrid"][:3] == [6, 11, 17]


def test_zamba2_7b_parameters():
    assert_counts_exact({"zamba2_7b": ZAMBA2_7B}, [7_356_749_648])
