"""The dense families of costmodel/hf_dense_extra.py (nemotron, vaultgemma, ministral3, jais2,
hyperclovax, codegen, biogpt, minicpm3, nanochat, persimmon): parameters and
buffers equal to the class transformers 5.24 builds on the meta device (odd configs, each
configuration class's defaults and released configs), every `validate` row exact on the odd
configs under eager and sdpa (slow), cached decode steps' FLOPs equal to the decode tree (slow),
and the fields their code does not run refused in one line."""

from __future__ import annotations


import pytest

from tests.family_checks import assert_estimate_refuses, cli_total, real_config_checks
from tests.family_configs import assert_rows_exact, buffer_bytes_both, hf_meta_count as _hf_count, estimated_total as _ours

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; a head_dim other than hidden/heads).
CONFIGS = {
    # Nemotron: LayerNorm1P (weight + 1), RoPE on 0.6 of each head (6 of 10 dimensions, rotate_half
    # and a torch.cat), a squared-ReLU MLP without a gate, biases on q/k/v/o and the MLP.
    "nemotron": dict(_BASE, model_type="nemotron", num_key_value_heads=2, head_dim=10,
                     partial_rotary_factor=0.6, attention_bias=True, mlp_bias=True,
                     bos_token_id=None, eos_token_id=None),
    # Its defaults: no biases, half of each head rotated, head_dim hidden / heads, a tied head.
    "nemotron-defaults": dict(_BASE, model_type="nemotron", num_key_value_heads=3,
                              tie_word_embeddings=True, bos_token_id=None, eos_token_id=None),
    # VaultGemma: Gemma 2's layers without the post-sublayer norms: a window on alternate layers
    # (3 layers: sliding, full, sliding), soft caps, queries scaled by query_pre_attn_scalar**-0.5.
    "vaultgemma": dict(_BASE, model_type="vaultgemma", num_key_value_heads=2, head_dim=10,
                       query_pre_attn_scalar=12, sliding_window=4),
    # One KV head, no soft caps, a listed window on the middle layer only.
    "vaultgemma-mqa": dict(_BASE, model_type="vaultgemma", num_key_value_heads=1, head_dim=8,
                           sliding_window=5, attn_logit_softcapping=None,
                           final_logit_softcapping=None,
                           layer_types=["full_attention", "sliding_attention", "full_attention"]),
    # Ministral 3: Mistral's layers with the queries times 1 + beta log(1 + floor(p / P0)) after
    # RoPE: its default rope_parameters (YaRN, beta 0.1, P0 16384); then a window on every layer,
    # plain RoPE and beta 0.5 over 4 positions (scales 1, 1.35, 1.55 over the 12 positions).
    "ministral3": dict(_BASE, model_type="ministral3", num_key_value_heads=2, head_dim=10,
                       pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "ministral3-window": dict(_BASE, model_type="ministral3", num_key_value_heads=3, head_dim=8,
                              sliding_window=5, tie_word_embeddings=True, pad_token_id=None,
                              bos_token_id=None, eos_token_id=None,
                              rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                               "llama_4_scaling_beta": 0.5,
                                               "original_max_position_embeddings": 4}),
    # Jais 2: Llama's attention with biases (its defaults), Nemotron's relu2 MLP with biases,
    # torch LayerNorms; then neither bias, a tied head.
    "jais2": dict(_BASE, model_type="jais2", num_key_value_heads=2, head_dim=10,
                  bos_token_id=None, eos_token_id=None, pad_token_id=None),
    "jais2-no-bias": dict(_BASE, model_type="jais2", num_key_value_heads=3, attention_bias=False,
                          mlp_bias=False, tie_word_embeddings=True, bos_token_id=None,
                          eos_token_id=None, pad_token_id=None),
    # HyperCLOVA X: Granite's multipliers (the logits multiplied by 0.125) with post-sublayer
    # norms; then no post norms, a given attention_multiplier, q/k/v/o biases, a tied head.
    "hyperclovax": dict(_BASE, model_type="hyperclovax", num_key_value_heads=2, head_dim=10,
                        embedding_multiplier=2.5, residual_multiplier=0.25, logits_scaling=0.125,
                        pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "hyperclovax-no-post-norm": dict(_BASE, model_type="hyperclovax", num_key_value_heads=3,
                                     use_post_norm=False, attention_multiplier=0.0625,
                                     attention_bias=True, tie_word_embeddings=True,
                                     pad_token_id=None, bos_token_id=None, eos_token_id=None),
    # CodeGen: GPT-J's parallel layers with one fused qkv_proj (no bias, four groups), RoPE on
    # 4 of each 8-wide head with fp32 sin/cos repeats; then RoPE on the whole head, a tied head.
    "codegen": dict(vocab_size=99, n_embd=48, n_head=6, n_inner=37, n_layer=3, n_positions=64,
                    model_type="codegen", rotary_dim=4, bos_token_id=None, eos_token_id=None),
    "codegen-whole-head": dict(vocab_size=99, n_embd=48, n_head=4, n_layer=2, n_positions=64,
                               model_type="codegen", rotary_dim=12, tie_word_embeddings=True,
                               bos_token_id=None, eos_token_id=None),
    # BioGPT: OPT's pre-LN layers, embeddings times sqrt(48), positions at + 2, erf GELU, dropout
    # 0.1 (its defaults); then unscaled embeddings, ReLU, no dropout (under sdpa the kernel keeps
    # the all-ones mask's (b, 1, n, n) causal mask on every layer: facts sdpa_mask), untied.
    "biogpt": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
                   num_hidden_layers=3, max_position_embeddings=64, model_type="biogpt",
                   pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "biogpt-unscaled": dict(vocab_size=99, hidden_size=48, num_attention_heads=4,
                            intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64,
                            model_type="biogpt", scale_embedding=False, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, hidden_act="relu",
                            tie_word_embeddings=False, pad_token_id=None, bos_token_id=None,
                            eos_token_id=None),
    # MiniCPM3: DeepSeek-V2's latent attention (q and kv LoRA, a 4-wide RoPE key) in dense Llama
    # layers, embeddings times 12, residuals times 1.4 / sqrt(3), the head's input divided by
    # 48 / 16; then q_proj without LoRA and every multiplier null (defaults: no-op scales, still
    # run). scale_emb a float here: an integer makes an int64 buffer (test below).
    "minicpm3": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
                     num_hidden_layers=3, max_position_embeddings=64, model_type="minicpm3",
                     num_key_value_heads=6, q_lora_rank=20, kv_lora_rank=12, qk_nope_head_dim=6, qk_rope_head_dim=4,
                     v_head_dim=7, scale_emb=12.0, scale_depth=1.4, dim_model_base=16,
                     pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "minicpm3-no-q-lora": dict(vocab_size=99, hidden_size=48, num_attention_heads=4,
                               intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64,
                               model_type="minicpm3", num_key_value_heads=4, q_lora_rank=None,
                               kv_lora_rank=10,
                               qk_nope_head_dim=8, qk_rope_head_dim=6, scale_emb=1.5,
                               scale_depth=None, dim_model_base=None, tie_word_embeddings=False,
                               pad_token_id=None, bos_token_id=None, eos_token_id=None),
    # nanochat: weightless fp32 RMSNorms (after the embeddings, before each sublayer, at the end;
    # on each query and key head after RoPE), a relu2 MLP without a gate, logits soft-capped at
    # 15; then q/k/v/o biases, no cap, a tied head.
    "nanochat": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
                     num_hidden_layers=3, max_position_embeddings=64, model_type="nanochat",
                     num_key_value_heads=2, head_dim=10, pad_token_id=None, bos_token_id=None,
                     eos_token_id=None),
    "nanochat-tied": dict(vocab_size=99, hidden_size=48, num_attention_heads=4, intermediate_size=37,
                          num_hidden_layers=2, max_position_embeddings=64, model_type="nanochat",
                          attention_bias=True, final_logit_softcapping=None,
                          tie_word_embeddings=True, pad_token_id=None, bos_token_id=None,
                          eos_token_id=None),
    # Persimmon: LayerNorms, a fused biased query_key_value, a LayerNorm with a bias on each query
    # and key head (they keep their inputs as views of the fused output, values included), RoPE
    # on half of each head, a relu2 MLP with biases; then no q/k norms, a tied head.
    "persimmon": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
                      num_hidden_layers=3, max_position_embeddings=64, model_type="persimmon",
                      pad_token_id=None, bos_token_id=None, eos_token_id=None),
    "persimmon-no-qk-norm": dict(vocab_size=99, hidden_size=48, num_attention_heads=4,
                                 intermediate_size=37, num_hidden_layers=2,
                                 max_position_embeddings=64, model_type="persimmon",
                                 qk_layernorm=False, tie_word_embeddings=True, pad_token_id=None,
                                 bos_token_id=None, eos_token_id=None),
}

#: Model types whose configuration class's defaults are counted too (NemotronConfig's with
#: num_key_value_heads given: its default, None, is a TypeError in NemotronAttention, refused).
DEFAULTS = {"nemotron": dict(num_key_value_heads=8), "vaultgemma": {}, "ministral3": {}, "jais2": {},
            "hyperclovax": {}, "codegen": {}, "biogpt": {}, "minicpm3": {}, "nanochat": {},
            "persimmon": {}}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


def test_odd_config_parameters_are_these_integers():
    """The counts above, by hand: nemotron: embeddings and untied head 2 * 99 * 48; a layer's
    q (48 -> 60) and o (60 -> 48) with biases, k and v (48 -> 20) with biases, up (48 -> 37) and
    down (37 -> 48) with biases, two LayerNorms (2 * 48 each); a final LayerNorm."""
    layer = (48 * 60 + 60) + (60 * 48 + 48) + 2 * (48 * 20 + 20) + (48 * 37 + 37) + (37 * 48 + 48) \
        + 2 * 96
    assert _ours(CONFIGS["nemotron"], "nemotron") == 2 * 99 * 48 + 3 * layer + 96 == 44_571


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_default_config_parameters_equal_hugging_face(model_type):
    """The configuration class's defaults, as its to_dict() writes them."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model(model_type, **DEFAULTS[model_type]).to_dict()
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type, **DEFAULTS[model_type]})


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    """Under sdpa Nemotron's query is a torch.cat (partial rotary), kept contiguous by the kernel
    (facts sdpa_query_contiguous: 8,640 and 6,912 bytes short without); BioGPT's kernel keeps a
    causal mask on every layer (facts sdpa_mask always: 1,152 bytes short without, for the config
    without dropout); VaultGemma, as Gemma 2, refuses sdpa (soft caps), so only eager for it;
    MiniCPM3's latent attention runs the CPU's sdpa math path (kernels._sdpa, tests/test_mla_sdpa.py)."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    if attention == "sdpa" and name.startswith("vaultgemma"):
        pytest.skip("VaultGemmaPreTrainedModel._supports_sdpa is False (facts sdpa_supported)")
    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert_rows_exact(rows)


def test_layernorm1p_keeps_its_weight_plus_one():
    """facts layernorm_weight_plus_one adds the d-wide weight + 1 to what each LayerNorm keeps:
    without it the odd nemotron config's saved bytes were 672 short of the measurement (7 norms,
    2 a layer and the final one, of 48 bf16 values)."""
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.blocks.norms import norm_saved
    from costmodel.facts import Facts

    rows = sp.Symbol("rows")
    extra = (norm_saved("layernorm", rows, S.d, Facts(layernorm_weight_plus_one=True))
             - norm_saved("layernorm", rows, S.d, Facts()))
    assert sp.simplify(extra - S.e * S.d) == 0
    assert 7 * int(extra.subs({S.e: 2, S.d: 48})) == 672


def test_hyperclovax_multiplies_the_logits_where_granite_divides():
    """logits_scaling 0.125 multiplies HyperCLOVAX's logits: ModelConfig.logits_scaling (a
    divisor, Granite's) is 8; attention_multiplier null is head_dim ** -0.5; use_post_norm is
    Gemma 2's post-sublayer norms."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["hyperclovax"], name="hyperclovax")
    assert (cfg.logits_scaling, cfg.attention_scale, cfg.post_sublayer_norm) == (8.0, 10 ** -0.5, True)
    assert (cfg.embedding_multiplier, cfg.residual_multiplier) == (2.5, 0.25)


def test_minicpm3_integer_scale_emb_is_an_int64_buffer():
    """MiniCPM3ScaledWordEmbedding holds torch.tensor(scale_emb): an int64 buffer for an integer
    (MiniCPM3Config's default, 12), which the tree counts as one value of the
    model dtype (facts embed_scale_buffer): 6 bytes short in bf16, not modelled."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(dict(CONFIGS["minicpm3"], scale_emb=12), "minicpm3-int")
    assert hf - ours == 8 - 2


def test_minicpm3_multipliers():
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["minicpm3"], name="minicpm3")
    assert (cfg.family, cfg.kv_lora_rank, cfg.q_lora_rank, cfg.d_head, cfg.rotary_dim, cfg.v_head_dim) \
        == ("minicpm3", 12, 20, 10, 4, 7)
    assert (cfg.embedding_multiplier, cfg.residual_multiplier, cfg.scale_lm_head_input) \
        == (12.0, 1.4 / 3 ** 0.5, True)
    assert cfg.n_experts == 0 and cfg.tie_embeddings


def test_weightless_rmsnorm_keeps_no_normalised_copy():
    """An RMSNorm without a weight (nanochat's) keeps its fp32 input copy, rsqrt and output, not
    the cast normalised tensor a weight would multiply: with it the odd nanochat configs were
    18,432 and 13,824 bytes over the measurement (8 and 6 norms of 24 x 48 bf16 values)."""
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.blocks.norms import norm_saved
    from costmodel.facts import facts_for

    rows, facts = sp.Symbol("rows"), facts_for("hf", "nanochat")
    extra = (norm_saved("rmsnorm", rows, S.d, facts)
             - norm_saved("rmsnorm", rows, S.d, facts, affine=False))
    assert sp.simplify(extra - S.e * rows * S.d) == 0
    assert 8 * int(extra.subs({S.e: 2, S.d: 48, rows: 24})) == 18_432


def test_persimmon_qk_layernorms_keep_the_fused_output():
    """Persimmon's q_layernorm keeps its input, a (b, n, h, d_h) view of query_key_value's output,
    whose storage holds q, k and v (b n 3 d); k_layernorm's is the same storage. The per-head
    LayerNorms also have a bias (2 d_h parameters each). Without the values in that storage the
    odd config's formula was 6,912 bytes short (2 x 12 x 48 bf16 values a layer, 3 layers)."""
    from costmodel import estimate
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["persimmon"], name="persimmon")
    plain = from_hf_config(dict(CONFIGS["persimmon"], qk_layernorm=False), name="plain")
    assert cfg.qk_norm and cfg.norm == "layernorm" and not plain.qk_norm

    def kept(config):
        return estimate(config, seq_len=12, batch=2, dtype="bf16").to_dict()["memory"]["activations"]

    # per layer: the fused output 2 x 12 x 144, four statistics of 2 x 12 x 6, in bf16
    assert kept(cfg) - kept(plain) == 3 * (2 * 12 * 144 * 2 + 4 * 2 * 12 * 6 * 2) == 24_192
    assert _ours(CONFIGS["persimmon"], "p") - _ours(dict(CONFIGS["persimmon"], qk_layernorm=False),
                                                    "p") == 3 * 4 * 8


def test_ministral3_query_scale_keeps_its_scales():
    """The query scale's multiply keeps the scales cast to the activation dtype, one per position
    and layer: 3 layers x 12 positions x 2 bytes at b = 2, n = 12 in bf16, the 72 bytes by which
    the measurement (every validate row exact above) exceeds the tree without it."""
    from costmodel import estimate
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["ministral3"], name="ministral3")
    assert cfg.rope_query_scale and cfg.family == "ministral3" and cfg.sliding_window is None

    def kept(config):
        return estimate(config, seq_len=12, batch=2, dtype="bf16").to_dict()["memory"]["activations"]

    assert kept(cfg) == 162_604
    assert kept(cfg) - kept(cfg.replace(rope_query_scale=False)) == 3 * 12 * 2


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_step_flops_equal_the_decode_tree(name):
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


#: Released config.json files (the fields that shape the model):
#: - nvidia/Minitron-4B-Base (Nemotron-4 4B): 32 layers of 3072, 24 query and 8 KV heads of 128,
#:   relu2 MLP 9216, vocab 256000, half of each head rotated, untied (the config TensorRT-LLM's
#:   tests/unittest/_torch/modeling/test_modeling_nemotron.py quotes as Nemotron_4_4B_CONFIG).
#: - google/vaultgemma-1b: 26 layers of 1152, 4 heads (4 KV) of 256, MLP 6912, vocab 256000,
#:   window 512, query_pre_attn_scalar 256 (the config keras-hub's
#:   convert_vaultgemma test quotes; Gemma 2's defaults otherwise).
REAL = {
    "minitron-4b": {
        "architectures": ["NemotronForCausalLM"], "model_type": "nemotron", "hidden_act": "relu2",
        "hidden_size": 3072, "intermediate_size": 9216, "max_position_embeddings": 4096,
        "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "norm_eps": 1e-05, "rope_theta": 10000, "partial_rotary_factor": 0.5,
        "tie_word_embeddings": False, "vocab_size": 256000,
    },
    "vaultgemma-1b": {
        "architectures": ["VaultGemmaForCausalLM"], "model_type": "vaultgemma",
        "vocab_size": 256000, "num_hidden_layers": 26, "num_attention_heads": 4,
        "num_key_value_heads": 4, "hidden_size": 1152, "intermediate_size": 6912, "head_dim": 256,
        "query_pre_attn_scalar": 256, "sliding_window": 512,
    },
}
REAL["biogpt"] = {  # microsoft/biogpt's config.json, as a fine-tune's copy quotes it (4.26.0)
    "architectures": ["BioGptForCausalLM"], "model_type": "biogpt", "activation_dropout": 0.0,
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 1024, "intermediate_size": 4096, "layerdrop": 0.0,
    "max_position_embeddings": 1024, "num_attention_heads": 16, "num_hidden_layers": 24,
    "scale_embedding": True, "vocab_size": 42384, "pad_token_id": 1}
#: transformers 5.24's counts of REAL (the meta model's numel; equal to ours, tested below).
EXACT = {"minitron-4b": 4_190_509_056, "vaultgemma-1b": 1_038_741_120, "biogpt": 346_763_264}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_config_total(name, tmp_path, capsys):
    assert cli_total(REAL[name], tmp_path, capsys) == EXACT[name]


REAL_CHECKS = real_config_checks(REAL, EXACT)
test_real_config_equals_hugging_face = REAL_CHECKS.equals_hugging_face
test_architectures_alone_name_the_model_type = REAL_CHECKS.architectures_alone_name_the_model_type


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["nemotron"], hidden_act="silu"), "unsupported hidden_act 'silu' for nemotron"),
    (dict(CONFIGS["nemotron"], partial_rotary_factor=0.1), "partial_rotary_factor leaves 1"),
    (dict(CONFIGS["vaultgemma"], hidden_activation="relu"), "hidden_activation"),
    (dict(CONFIGS["nemotron"], num_key_value_heads=None), "num_key_value_heads is missing or null"),
    ({"model_type": "nemotron"}, "NemotronAttention cannot run"),
    (dict(CONFIGS["codegen"], rotary_dim=None), "rotary_dim null"),
    (dict(CONFIGS["codegen"], n_embd=54, n_head=6), "by 4 (CodeGen's qkv_proj is split"),
    (dict(CONFIGS["codegen"], activation_function="swish"), "activation_function 'swish'"),
    (dict(CONFIGS["biogpt"], activation_dropout=0.1), "activation_dropout 0.1 is not modelled"),
    (dict(CONFIGS["biogpt"], layerdrop=0.2), "layerdrop 0.2 is not modelled"),
    (dict(CONFIGS["minicpm3"], scale_depth=-1.0), "scale_depth must be a positive number"),
    (dict(CONFIGS["minicpm3"], num_key_value_heads=3), "num_key_value_heads (3, 40 by default)"),
    ({k: v for k, v in CONFIGS["minicpm3"].items() if k != "num_key_value_heads"},
     "num_key_value_heads (40, 40 by default) differs"),
    (dict(CONFIGS["nanochat"], hidden_act="silu"), "unsupported hidden_act 'silu' for nanochat"),
    (dict(CONFIGS["nanochat"], final_logit_softcapping=-1.0), "final_logit_softcapping must be"),
    (dict(CONFIGS["persimmon"], hidden_dropout=0.1), "hidden_dropout"),
    (dict(CONFIGS["persimmon"], partial_rotary_factor=0.1), "partial_rotary_factor leaves 0"),
    (dict(CONFIGS["jais2"], hidden_act="silu"), "unsupported hidden_act 'silu' for jais2"),
    (dict(CONFIGS["hyperclovax"], logits_scaling=0), "logits_scaling must be a positive number"),
    (dict(CONFIGS["ministral3"], rope_parameters={"rope_type": "default", "rope_theta": 1e4}),
     "rope_parameters has no number llama_4_scaling_beta"),
    (dict(CONFIGS["ministral3"], rope_parameters={"rope_type": "default", "llama_4_scaling_beta": 0.1}),
     "no number original_max_position_embeddings"),
])
def test_what_is_not_modelled_is_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_mistral3_wrapper_reads_its_ministral3_language_model():
    """Ministral 3 and Devstral Small 2 ship as mistral3 (Mistral3ForConditionalGeneration) with a
    ministral3 text_config; its language model is read as ministral3 with the query scale. Text
    fields of Devstral-Small-2's config.json as an inference engine's test quotes it (40 layers of
    5120, 32 query and 8 KV heads of 128, YaRN with llama_4_scaling_beta 0.1 over 8192); the
    MLP width and vocabulary, which that quote leaves out, are given as Ministral3Config's
    defaults (14336, 131072); the wrapper's tie_word_embeddings is false here."""
    pytest.importorskip("transformers")
    from costmodel.hf import from_hf_config

    text = {"model_type": "ministral3", "head_dim": 128, "hidden_size": 5120,
            "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 40,
            "intermediate_size": 14336, "vocab_size": 131072,
            "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 48.0,
                                "llama_4_scaling_beta": 0.1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                "original_max_position_embeddings": 8192,
                                "rope_theta": 100000000.0, "rope_type": "yarn", "type": "yarn"}}
    wrapper = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
               "text_config": text, "tie_word_embeddings": False}
    cfg = from_hf_config(wrapper, name="devstral-small-2")
    assert (cfg.family, cfg.rope_query_scale, cfg.sliding_window) == ("ministral3", True, None)
    total = _ours(wrapper, "devstral-small-2")
    assert total == _hf_count(dict(text, tie_word_embeddings=False)) == 12_247_782_400
