"""The mixture-of-experts families of costmodel/hf_moe_extra.py (GraniteMoE as granitemoe,
GraniteMoE-shared as granitemoeshared): parameters and buffers equal to the class transformers
5.24 builds on the meta device (odd configs, each configuration class's defaults), every
`validate` row exact on the odd configs under eager and sdpa (slow), decode-step FLOPs equal to
the decode tree (slow), and the fields their code does not run refused in one line."""

from __future__ import annotations

import pytest

from tests.family_configs import buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; head_dim 10, not hidden/heads = 8).
CONFIGS = {
    # GraniteMoE: top 3 of 5 experts of 24 (a multiple of 8: the fake grouped_mm needs 16-byte rows), q/k/v/o biases, Granite's four multipliers away
    # from 1 (the scores times 0.05, not 10**-0.5).
    "granitemoe": dict(_BASE, model_type="granitemoe", num_key_value_heads=2, head_dim=10,
                       intermediate_size=24,
                       attention_bias=True, num_local_experts=5, num_experts_per_tok=3,
                       embedding_multiplier=3.0, attention_multiplier=0.05,
                       residual_multiplier=0.2, logits_scaling=4.0, bos_token_id=None,
                       eos_token_id=None),
    # The multipliers at their default 1.0 (still run), one KV head, hidden/heads as the head
    # width, a tied head, top 1 of 4.
    "granitemoe-defaults": dict(_BASE, model_type="granitemoe", num_key_value_heads=1,
                                intermediate_size=16,
                                num_local_experts=4, num_experts_per_tok=1,
                                tie_word_embeddings=True, bos_token_id=None, eos_token_id=None),
    # GraniteMoE-shared: GraniteMoE's odd config with an ungated shared MLP of 29.
    "granitemoeshared": dict(_BASE, model_type="granitemoeshared", num_key_value_heads=2,
                             intermediate_size=16,
                             head_dim=10, num_local_experts=5, num_experts_per_tok=2,
                             shared_intermediate_size=29, embedding_multiplier=3.0,
                             attention_multiplier=0.05, residual_multiplier=0.2,
                             logits_scaling=4.0, bos_token_id=None, eos_token_id=None),
    # shared_intermediate_size 0: no shared MLP (GraniteMoeSharedDecoderLayer's shared_mlp None).
    "granitemoeshared-none": dict(_BASE, model_type="granitemoeshared", num_key_value_heads=3,
                                  intermediate_size=24,
                                  num_local_experts=4, num_experts_per_tok=2,
                                  shared_intermediate_size=0, bos_token_id=None, eos_token_id=None),
    # FlexOlmo: OLMo 2's whole-projection q/k norms and post-sublayer norms, q/k/v/o biases, top
    # 3 of 5 experts of 24, the top-k weights renormalised.
    "flex_olmo": dict(_BASE, model_type="flex_olmo", num_key_value_heads=2, head_dim=10,
                      intermediate_size=24, attention_bias=True, num_experts=5,
                      num_experts_per_tok=3, norm_topk_prob=True, pad_token_id=None,
                      eos_token_id=None),
    # Not renormalised (FlexOlmoConfig's default), one KV head, a tied head, the experts'
    # count under the mapped name (num_local_experts -> num_experts).
    "flex_olmo-plain": dict(_BASE, model_type="flex_olmo", num_key_value_heads=1,
                            intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                            tie_word_embeddings=True, pad_token_id=None, eos_token_id=None),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs", "bytes saved for backward",
            "KV-cache bytes"} <= {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []
