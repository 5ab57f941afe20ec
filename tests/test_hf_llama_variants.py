"""The Llama-like families of costmodel/hf_llama_variants.py: parameters equal to the class
transformers 5.24 builds on the meta device (odd configs and each configuration class's defaults),
every `validate` row exact on the odd configs (slow), a released config equal to its published
total, and the fields their code does not run refused in one line."""

from __future__ import annotations


import pytest

from tests.family_checks import assert_estimate_refuses, cli_total, real_config_checks
from tests.family_configs import assert_rows_exact, buffer_bytes_both, hf_meta_count as _hf_count, estimated_total as _ours

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; a head_dim other than hidden/heads where
#: the class reads one).
CONFIGS = {
    # OLMo 1: LayerNorms without parameters in fp32, biases on q/k/v/o (none on the MLP); OLMo
    # 1.7's clip_qkv clamping q, k and v. (clip_qkv with biases: validate/FINDINGS.md's OLMo
    # section; the measurement cannot reach the copy a clamp of a biased projection keeps.)
    "olmo": dict(_BASE, model_type="olmo", num_key_value_heads=2, head_dim=10, attention_bias=True,
                 pad_token_id=None),
    "olmo-clip": dict(_BASE, model_type="olmo", num_key_value_heads=3, clip_qkv=0.05,
                      tie_word_embeddings=True, pad_token_id=None),
    # OLMo 3: OLMo 2's whole-projection q/k norms and post-sublayer norms, a window on the layers
    # layer_types marks (by default all but every fourth: 5 layers, 1-3 and 5 slide), one RoPE
    # set per kind of layer.
    "olmo3": dict(_BASE, model_type="olmo3", num_hidden_layers=5, num_key_value_heads=2,
                  head_dim=10, sliding_window=4, attention_bias=True, pad_token_id=None),
    "olmo3-listed": dict(_BASE, model_type="olmo3", num_key_value_heads=3, sliding_window=5,
                         layer_types=["full_attention", "sliding_attention", "full_attention"],
                         tie_word_embeddings=True, pad_token_id=None),
    "olmo3-all-full": dict(_BASE, model_type="olmo3", num_key_value_heads=2, sliding_window=7,
                           layer_types=["full_attention"] * 3, pad_token_id=None),
    # OLMoE: whole-projection q/k norms before RoPE in Llama's pre-norm layers, top-3 of 5
    # experts (widths a multiple of 8 for grouped_mm), with and without renormalised weights.
    "olmoe": dict(_BASE, model_type="olmoe", num_key_value_heads=2, intermediate_size=24,
                  num_experts=5, num_experts_per_tok=3, pad_token_id=None),
    "olmoe-renormalised": dict(_BASE, model_type="olmoe", num_key_value_heads=3, intermediate_size=16,
                               num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
                               tie_word_embeddings=True, clip_qkv=0.05, pad_token_id=None),
    "olmoe-biases": dict(_BASE, model_type="olmoe", num_key_value_heads=2, intermediate_size=16,
                         num_experts=4, num_experts_per_tok=2, attention_bias=True,
                         pad_token_id=None),
    # Seed-OSS: biases on q/k/v and not o (its defaults), a biased MLP, dropout on the
    # probabilities and on each sublayer's output.
    "seed_oss": dict(_BASE, model_type="seed_oss", num_key_value_heads=2, head_dim=10,
                     mlp_bias=True, residual_dropout=0.1, attention_dropout=0.05, pad_token_id=None),
    "seed_oss-out-bias": dict(_BASE, model_type="seed_oss", num_key_value_heads=3, head_dim=10,
                              attention_bias=False, attention_out_bias=True, residual_dropout=0.0,
                              attention_dropout=0.0, tie_word_embeddings=True, pad_token_id=None),
    # Arcee: a squared-ReLU MLP without a gate, biases everywhere.
    "arcee": dict(_BASE, model_type="arcee", num_key_value_heads=2, head_dim=10,
                  attention_bias=True, mlp_bias=True, bos_token_id=None, eos_token_id=None),
    # GLM-4: four norms a layer, q/k/v biases, interleaved RoPE on part of each head (0.6 of 10:
    # 6 dimensions; by default half), the fused gate/up projection.
    "glm4": dict(_BASE, model_type="glm4", num_key_value_heads=2, head_dim=10,
                 partial_rotary_factor=0.6, pad_token_id=None, eos_token_id=None),
    "glm4-defaults": dict(_BASE, model_type="glm4", num_key_value_heads=3, attention_bias=False,
                          tie_word_embeddings=True, pad_token_id=None, eos_token_id=None),
    # mlp_bias is a field of Glm4Config (Llama's) that Glm4MLP never reads: no bias on the MLP.
    "glm4-mlp-bias": dict(_BASE, model_type="glm4", num_key_value_heads=2, mlp_bias=True,
                          pad_token_id=None, eos_token_id=None),
    # Helium: fp32 weights in its RMSNorm, interleaved RoPE, q/k/v biases without an o bias.
    "helium": dict(_BASE, model_type="helium", num_key_value_heads=2, head_dim=8,
                   attention_bias=True, mlp_bias=True, pad_token_id=None, bos_token_id=None,
                   eos_token_id=None),
    # ERNIE 4.5: biases everywhere (use_bias), interleaved RoPE in fp32, a tied head.
    "ernie4_5": dict(_BASE, model_type="ernie4_5", num_key_value_heads=2, head_dim=10,
                     use_bias=True, pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "ernie4_5-untied": dict(_BASE, model_type="ernie4_5", num_key_value_heads=3, head_dim=10,
                            tie_word_embeddings=False, pad_token_id=None, bos_token_id=None,
                            eos_token_id=None),
    # EXAONE 4: norms after the sublayers only, per-head q/k norms; with a window, RoPE on the
    # sliding layers only (here 1-3 and 5 of 5; layer 4 full and NoPE); without, on all.
    "exaone4": dict(_BASE, model_type="exaone4", num_hidden_layers=5, num_key_value_heads=2,
                    head_dim=10, sliding_window=4, sliding_window_pattern=4, pad_token_id=None,
                    bos_token_id=None, eos_token_id=None),
    "exaone4-listed": dict(_BASE, model_type="exaone4", num_key_value_heads=3, sliding_window=5,
                           layer_types=["full_attention", "sliding_attention", "full_attention"],
                           tie_word_embeddings=True, pad_token_id=None, bos_token_id=None,
                           eos_token_id=None),
    "exaone4-no-window": dict(_BASE, model_type="exaone4", num_key_value_heads=2, sliding_window=None,
                              layer_types=["full_attention"] * 3, pad_token_id=None,
                              bos_token_id=None, eos_token_id=None),
    # Apertus: per-head q/k norms, an ungated MLP with xIELU (two scalars and two buffers a layer).
    "apertus": dict(_BASE, model_type="apertus", num_key_value_heads=2, pad_token_id=None,
                    bos_token_id=None, eos_token_id=None),
    "apertus-biases": dict(_BASE, model_type="apertus", num_key_value_heads=3, attention_bias=True,
                           tie_word_embeddings=True, pad_token_id=None, bos_token_id=None,
                           eos_token_id=None),
    # GLM-4 (glm): GLM-4 0414's layers without the post-sublayer norms; interleaved RoPE on 0.6
    # of each head (6 of 10), q/k/v biases; then no biases, a tied head, the default factor 0.5.
    "glm": dict(_BASE, model_type="glm", num_key_value_heads=2, head_dim=10,
                partial_rotary_factor=0.6, pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "glm-no-bias": dict(_BASE, model_type="glm", num_key_value_heads=3, head_dim=8,
                        attention_bias=False, tie_word_embeddings=True, pad_token_id=None,
                        bos_token_id=None, eos_token_id=None),
    # Hunyuan dense: per-head q/k norms after RoPE, attention_bias on q, k, v and o, no MLP bias
    # whatever mlp_bias says; one KV head and a tied head in the second.
    "hunyuan_v1_dense": dict(_BASE, model_type="hunyuan_v1_dense", num_key_value_heads=2, head_dim=10,
                             attention_bias=True, mlp_bias=True, pad_token_id=None,
                             bos_token_id=None, eos_token_id=None, eod_token_id=None),
    "hunyuan_v1_dense-mqa": dict(_BASE, model_type="hunyuan_v1_dense", num_key_value_heads=1,
                                 head_dim=8, tie_word_embeddings=True, pad_token_id=None,
                                 bos_token_id=None, eos_token_id=None, eod_token_id=None),
}

#: Model types whose configuration class's defaults are counted too.
DEFAULTS = ("olmo", "olmo3", "olmoe", "seed_oss", "arcee", "glm4", "helium", "ernie4_5", "exaone4",
            "apertus", "glm")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_default_config_parameters_equal_hugging_face(model_type):
    """The configuration class's defaults, as its to_dict() writes them."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type})


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """The rotary buffers (inv_freq and original_inv_freq): bytes of every buffer of the bf16
    meta model."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name)
    assert_rows_exact(rows)


#: The families added in session 16, checked under sdpa too and on cached decode steps.
_NEWER = ("glm", "glm-no-bias", "hunyuan_v1_dense", "hunyuan_v1_dense-mqa")


@pytest.mark.slow
@pytest.mark.parametrize("name", _NEWER)
def test_every_validate_row_is_exact_under_sdpa(name):
    """Under sdpa GLM-4's query is a torch.cat (partial rotary) that the kernel keeps its own
    copy of (facts sdpa_query_contiguous: 8,640 and 6,912 bytes short without); Hunyuan's per-head
    norms after RoPE hand the kernel a contiguous query already."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, "sdpa")
    assert "bytes saved for backward" in {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", _NEWER)
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", ["exaone4", "exaone4-listed", "exaone4-no-window"])
def test_exaone4_rotates_on_the_layers_transformers_rotates(name):
    """The validate rows cannot see RoPE (it keeps nothing the scores do not): the layers whose
    attention runs apply_rotary_pos_emb in one forward of the real class are the layers the
    tree gives a rope leaf (its runs per pass), the sliding ones where there is a window."""
    transformers = pytest.importorskip("transformers")
    import torch
    from transformers.models.exaone4 import modeling_exaone4

    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    fields = CONFIGS[name]
    cfg = from_hf_config(fields, name=name)
    dims = {getattr(S, key): value for key, value in cfg.dimensions().items()}
    rope_runs = sum(int(leaf.count.subs(dims)) for leaf in CostModel(cfg).leaves if leaf.name == "rope")
    model = modeling_exaone4.Exaone4ForCausalLM(transformers.AutoConfig.for_model(**fields)).eval()
    rotated: list[int] = []
    original = modeling_exaone4.apply_rotary_pos_emb
    current = {"layer": -1}
    for index, layer in enumerate(model.model.layers):
        layer.register_forward_pre_hook(lambda *_, i=index: current.update(layer=i))

    def recording(*args, **kwargs):
        rotated.append(current["layer"])
        return original(*args, **kwargs)

    modeling_exaone4.apply_rotary_pos_emb = recording
    try:
        with torch.no_grad():
            model(input_ids=torch.arange(6).reshape(1, 6))
    finally:
        modeling_exaone4.apply_rotary_pos_emb = original
    ours = [i for i in range(cfg.n_decoder_layers)
            if cfg.sliding_window is None or cfg.layer_kind_at("decoder", i) != "full"]
    assert rotated == ours and len(rotated) == rope_runs
    assert cfg.nope_layers == cfg.n_decoder_layers - len(ours)


@pytest.mark.slow
def test_clip_qkv_copies_of_biased_projections_are_held_but_unreachable_to_the_walk():
    """clip_qkv clamps q, k and v in place; on a biased projection (addmm, viewed to 3-D) the
    clamp rewrites a view, so autograd puts its ClampBackward inside a CopySlices node, where
    validate/measure/saved.py's walk from the loss does not look: the copies it keeps are
    counted as unreachable. They are held all the same (the graph owns CopySlices and its
    function): the formula is the measured total plus exactly those copies,
    b n (h + 2 h_kv) d_h bf16 values per layer."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.hf import from_hf_config
    from tests.family_configs import odd_config_rows
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure.saved import saved_activation_bytes

    fields = dict(CONFIGS["olmo-clip"], attention_bias=True)
    cfg = from_hf_config(fields, name="olmo-clip-biased")
    (row,) = [r for r in odd_config_rows(fields, "olmo-clip-biased")
              if r.quantity == "bytes saved for backward"]
    torch.manual_seed(0)
    model = build_hf_model(cfg, dtype=torch.bfloat16)
    result = saved_activation_bytes(model, make_inputs(cfg, 2, 12, labels=True))
    copies = 2 * 12 * (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.d_head * 2 * cfg.n_decoder_layers
    assert result.total_bytes == row.measured
    assert result.unreachable_bytes == copies
    assert row.formula == row.measured + copies


#: Real config.json files (the fields that shape the model, with the Hub's keys and values):
#: - allenai/OLMoE-1B-7B-0924: 16 layers of 2048, 16 heads, 64 experts of 1024 (top 8), vocab
#:   50304, untied (its config.json as quoted by a moe_engine test of OLMoE's adapter, and
#:   transformers' docs/source/en/model_doc/olmoe.md: 16 layers, 64 experts, top-8). Published:
#:   "OLMoE-1B-7B has 7 billion (B) parameters" (arXiv 2409.02060's abstract), 6.9B on listings.
#: - ByteDance-Seed/Seed-OSS-36B-Base: 64 layers of 5120, 80 query and 8 KV heads of 128 (the
#:   README's Model Summary, github.com/ByteDance-Seed/seed-oss README.md @02d7aaa), MLP 27648,
#:   vocab 155136, q/k/v biases (its config.json, quoted by mlx ports' tests; 155K in the
#:   README). Published: "Parameters | 36B" (the README's Model Summary).
#: - allenai/OLMo-7B-hf: 32 layers of 4096, 32 heads, MLP 11008, vocab 50304, untied (OLMo's
#:   paper, arXiv 2402.00838, Table 1: 32 layers, 4096 wide, 32 heads, MLP ~22/3 d, vocab padded
#:   to 50304; OlmoConfig's defaults are this model). Published: "OLMo-7B" (6.89B on its Hub page).
#: - baidu/ERNIE-4.5-0.3B-PT: 18 layers of 1024, 16 query and 2 KV heads of 128, MLP 3072, vocab
#:   103424 (apxml.com/models/ernie-45-03b-base's specifications; Ernie4_5Config's defaults, whose
#:   docstring names this checkpoint), tied. Published: "360 million parameters" (the same page).
REAL = {
    "ernie-4.5-0.3b": {
        "architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5", "hidden_size": 1024,
        "intermediate_size": 3072, "num_hidden_layers": 18, "num_attention_heads": 16,
        "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 103424, "use_bias": False,
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "hidden_act": "silu",
    },
    "olmoe-1b-7b": {
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16, "num_experts": 64,
        "num_experts_per_tok": 8, "num_attention_heads": 16, "num_key_value_heads": 16,
        "vocab_size": 50304, "tie_word_embeddings": False, "clip_qkv": None,
        "max_position_embeddings": 4096, "norm_topk_prob": False,
    },
    "seed-oss-36b": {
        "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "hidden_size": 5120,
        "num_hidden_layers": 64, "intermediate_size": 27648, "num_attention_heads": 80,
        "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 155136, "attention_bias": True,
        "attention_out_bias": False, "mlp_bias": False, "max_position_embeddings": 524288,
        "tie_word_embeddings": False, "hidden_act": "silu",
    },
    "olmo-7b": {
        "architectures": ["OlmoForCausalLM"], "model_type": "olmo", "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "vocab_size": 50304, "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "clip_qkv": None, "hidden_act": "silu",
    },
}
#: The published totals in billions and the digits published (the total rounded to those digits).
PUBLISHED = {"ernie-4.5-0.3b": (0.36, 2), "olmoe-1b-7b": (6.9, 1), "seed-oss-36b": (36, 0),
             "olmo-7b": (6.89, 2)}
#: transformers 5.24's counts of REAL (the meta model's numel; equal to ours, tested below).
EXACT = {"ernie-4.5-0.3b": 360_748_032, "olmoe-1b-7b": 6_919_161_856,
         "seed-oss-36b": 36_151_104_512, "olmo-7b": 6_888_095_744}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_config_gives_the_published_total(name, tmp_path, capsys):
    total = cli_total(REAL[name], tmp_path, capsys)
    assert total == EXACT[name]
    value, digits = PUBLISHED[name]
    assert round(total / 10**9, digits) == value


REAL_CHECKS = real_config_checks(REAL, EXACT)
test_real_config_equals_hugging_face = REAL_CHECKS.equals_hugging_face
test_architectures_alone_name_the_model_type = REAL_CHECKS.architectures_alone_name_the_model_type


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["olmo3"], sliding_window=None), "sliding_window"),
    (dict(CONFIGS["exaone4"], sliding_window=None, layer_types=None), "sliding_window"),
    (dict(CONFIGS["exaone4"], layer_types=["full_attention"] * 5), "no RoPE"),
    (dict(CONFIGS["exaone4"], sliding_window_pattern="LLLG"), "layer_types"),
    (dict(CONFIGS["olmoe"], head_dim=10), "head_dim"),
    (dict(CONFIGS["olmo"], clip_qkv=-1.0), "clip_qkv"),
    (dict(CONFIGS["helium"], head_dim=10), "o_proj"),
    (dict(CONFIGS["glm4"], partial_rotary_factor=0.1), "partial_rotary_factor"),
    (dict(CONFIGS["arcee"], hidden_act="silu"), "hidden_act"),
    (dict(CONFIGS["seed_oss"], hidden_act="gelu"), "hidden_act"),
    (dict(CONFIGS["glm4"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for glm4"),
    (dict(CONFIGS["hunyuan_v1_dense"], head_dim=None), "head_dim is missing or null"),
    (dict(CONFIGS["glm"], head_dim=None), "head_dim null is not modelled for glm"),
    (dict(CONFIGS["hunyuan_v1_dense"], hidden_act="gelu"),
     "unsupported hidden_act 'gelu' for hunyuan_v1_dense"),
    # The config's own names: OLMoE's expert fields, EXAONE 4's window before its pattern.
    (dict(CONFIGS["olmoe"], num_experts_per_tok=9), "num_experts_per_tok must be between 1 and "
                                                    "num_experts (5), got 9"),
    (dict(CONFIGS["olmoe"], num_experts=0), "num_experts_per_tok applies only with num_experts"),
    (dict(CONFIGS["exaone4"], sliding_window=0), "sliding_window must be a whole number of at "
                                                 "least 1 or null (no window), got 0"),
    (dict(CONFIGS["exaone4"], sliding_window=0, layer_types=None, sliding_window_pattern=None),
     "sliding_window must be"),
])
def test_what_is_not_modelled_is_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)
