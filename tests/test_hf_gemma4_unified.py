"""Gemma 4 unified's language model (costmodel/hf_gemma4.py: model_type "gemma4_unified_text") against
transformers 5.24's Gemma4UnifiedForCausalLM built from the same config dict: parameters
(Gemma4UnifiedTextConfig()'s defaults and odd configs), buffers, validate's rows under eager attention
and sdpa, bytes saved for backward, the cache after a prefill, a decode step's and a prefill's FLOPs,
K/V sharing without per-layer inputs (which Gemma4ForCausalLM cannot run), and the configs refused in
one line."""

from __future__ import annotations

import pytest

from tests.family_checks import family_checks, refused_in_one_line
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

_BASE = dict(model_type="gemma4_unified_text", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_key_value_heads=2, head_dim=10, global_head_dim=16, intermediate_size=37,
             num_hidden_layers=4, max_position_embeddings=64, sliding_window=5)

CONFIGS = {
    # The class's own layer rule (all but every sixth slide, the last forced full: 0-2 sliding, 3 full),
    # full heads 16 wide, the default RoPE (proportional, a quarter rotated, on the full layers), tied.
    "gemma4u": dict(_BASE),
    # The last 2 of 4 alternating layers reuse layers 0's and 1's K and V, their MLPs twice as wide,
    # keys as values on the full layers, exact GELU, an untied head with a final soft cap.
    "gemma4u-kv-shared": dict(_BASE, layer_types=["sliding_attention", "full_attention"] * 2, num_kv_shared_layers=2,
                              use_double_wide_mlp=True, attention_k_eq_v=True, hidden_activation="gelu",
                              tie_word_embeddings=False, final_logit_softcapping=30.0),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and Gemma4UnifiedTextConfig()'s (30 layers of hidden 2,304, 8 heads of
    256 (512 on the 5 full layers) and 4 KV heads, a GeGLU of 9,216, vocabulary 262,144, tied), the
    meta models' (transformers 5.24). Per-layer inputs and the MoE block are not built whatever the
    config says: hidden_size_per_layer_input 256 and enable_moe_block change nothing."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    # a sliding layer: q 48*60, k and v 48*20 each, o 60*48, q/k norms 10 each, four norms 4*48, GeGLU 3*48*37:
    # 13,220; a full one (heads of 16): 17,840; the first: 99*48 + 48 + 3*13,220 + 17,840. The second: no
    # v_proj on layer 1 (keys as values: 16,304), layers 2 and 3 sharing (no k/v projections or norms, MLPs
    # 2*37 wide: 16,618 and 20,080), an untied head: 2*99*48 + 48 + 13,220 + 16,304 + 16,618 + 20,080
    assert counts == COUNTS == [62_300, 75_774]
    default = transformers.AutoConfig.for_model("gemma4_unified_text")
    for fields in (default.to_dict(), default.to_diff_dict(), {"model_type": "gemma4_unified_text"},
                   {"model_type": "gemma4_unified_text", "hidden_size_per_layer_input": 256, "enable_moe_block": True}):
        assert estimated_total(fields, "x") == 3_010_758_400
    assert hf_meta_count({"model_type": "gemma4_unified_text"}) == 3_010_758_400


COUNTS = [62_300, 75_774]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """RoPE's fp32 inv_freq and its copy per kind (sliding: 10/2, full: 16/2), the bf16 embed_scale and
    each layer's bf16 layer_scalar: 2*4*5 + 2*4*8 + 2 + 4*2."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == 114


# validate's rows (b 2, n 12, bf16, 2 generated tokens; validate/hf_gemma4.py writes the gemma4_unified_text
# config.json back, so Gemma4UnifiedForCausalLM is built): parameters, matmul FLOPs, other ops, bytes saved,
# KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


test_saved_bytes_and_cache = CHECKS.saved_bytes_and_cache


test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_refused_in_one_line = refused_in_one_line(CONFIGS["gemma4u"], [
    ({"hidden_activation": "relu"}, "unsupported hidden_activation 'relu' for gemma4_unified_text"),
    ({"sliding_window": None}, "sliding_window null is not modelled for gemma4_unified_text"),
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention \"all\""),
    # found by a fuzz of these readers: the kinds were counted over more shared layers than layers (IndexError)
    ({"num_kv_shared_layers": 96}, "num_kv_shared_layers (96) must leave decoder layers of their own (of 4)"),
])


def test_architectures_alone():
    fields = {k: v for k, v in CONFIGS["gemma4u"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["Gemma4UnifiedForCausalLM"]), "x") == COUNTS[0]


def _wrapper(wrapper_tie, text_tie) -> dict:
    text = {k: v for k, v in CONFIGS["gemma4u"].items() if k != "model_type"}
    if text_tie is not None:
        text["tie_word_embeddings"] = text_tie
    return {"model_type": "gemma4_unified", "text_config": text, "vision_config": None, "audio_config": None,
            **({} if wrapper_tie is None else {"tie_word_embeddings": wrapper_tie})}


#: (wrapper's tie_word_embeddings, text_config's) -> the language model's parameters: the wrapper's value
#: decides (Gemma4UnifiedForConditionalGeneration holds lm_head, as Gemma 4's), True by default; an untied
#: head adds 99 x 48 = 4,752.
_WRAPPED = {(None, None): 62_300, (None, False): 62_300, (False, None): 67_052, (True, False): 62_300}


@pytest.mark.parametrize("wrapper_tie, text_tie", sorted(_WRAPPED, key=str))
def test_the_wrapper_is_read_as_its_language_model(wrapper_tie, text_tie):
    """costmodel/hf_multimodal.py reads a gemma4_unified config.json as its text_config, and the count
    is the class's own (Gemma4UnifiedForConditionalGeneration on the meta device, no vision or audio tower)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from costmodel import estimate
    from costmodel.hf import from_hf_config

    data = _wrapper(wrapper_tie, text_tie)
    cfg = from_hf_config(data, name="m")
    assert cfg.name == "m (language model)" and cfg.family == "gemma4_unified_text"
    assert estimate(cfg).to_dict()["params"]["total"] == _WRAPPED[(wrapper_tie, text_tie)]
    config = transformers.Gemma4UnifiedConfig(**{k: v for k, v in data.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.Gemma4UnifiedForConditionalGeneration(config)
    assert sum(p.numel() for p in model.parameters()) == _WRAPPED[(wrapper_tie, text_tie)]
