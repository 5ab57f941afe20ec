"""What validate/hf_survey.py found running the CLI on transformers' own configs, kept as tests.

A field that divides another (attention heads, Qwen2-MoE's decoder_sparse_step, Gemma 2's
query_pre_attn_scalar) set to 0 was a ZeroDivisionError traceback; it is one `error:` line naming
the field, exit 2.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_configs import assert_rows_exact, FAMILY_CONFIGS, hf_meta_count as _hf_count
from tests.test_hf_survey_released import REAL_ADDED

#: (family config, field, value): each was a traceback before validate/FINDINGS.md's survey.
ZERO_DIVISORS = [
    ("phi3", "num_attention_heads", 0),
    ("falcon_new", "num_attention_heads", 0),
    ("bloom", "n_head", 0),
    ("bloom", "num_attention_heads", 0),
    ("qwen2_moe", "decoder_sparse_step", 0),
    ("gemma2", "query_pre_attn_scalar", 0),
    ("gemma2", "query_pre_attn_scalar", -1),  # was an attention_scale of (6e-17-1j)
]


@pytest.mark.parametrize("family, field, value", ZERO_DIVISORS)
def test_a_zero_divisor_is_one_line_naming_the_field(family, field, value, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**FAMILY_CONFIGS[family], field: value}))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:")
    assert field in err and ("at least 1" in err or "must be positive" in err)


# =============================================================================================
# The families the survey added: model types whose blocks already existed under other field names

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs of the added model types (sizes as tests/family_configs.py; expert widths a
#: multiple of 8, which the experts' grouped_mm needs in bf16).
NEW_FAMILY_CONFIGS = {
    # Ministral: Mistral's layers with a per-layer window (layer_types).
    "ministral": dict(_BASE, model_type="ministral", num_key_value_heads=2, head_dim=10,
                      sliding_window=5, rope_theta=10000.0,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
    # CWM: Llama's layers, a window on all but every fourth layer from layer 0 (here 1-3 of 5).
    "cwm": dict(_BASE, model_type="cwm", num_hidden_layers=5, num_key_value_heads=2, head_dim=10,
                sliding_window=4),
    # Gemma 3 text: Gemma 2's four norms and query_pre_attn_scalar, Qwen3-style q/k norms,
    # five sliding layers to one full by default (here sliding_window_pattern 2), no soft caps.
    "gemma3_text": dict(_BASE, model_type="gemma3_text", num_key_value_heads=2, head_dim=10,
                        query_pre_attn_scalar=12, sliding_window=4, sliding_window_pattern=2,
                        tie_word_embeddings=True),
    # Qwen3-MoE: Qwen3's attention, Qwen2-MoE's routing without the shared expert, a dense layer.
    "qwen3_moe": dict(_BASE, model_type="qwen3_moe", num_key_value_heads=2, head_dim=10,
                      num_experts=5, num_experts_per_tok=2, moe_intermediate_size=24,
                      mlp_only_layers=[1], norm_topk_prob=True, tie_word_embeddings=False),
    # DeepSeek-V2 (Lite: no query compression): latent attention, a first dense layer, softmax
    # routing over routed experts, two shared experts.
    "deepseek_v2": dict(_BASE, model_type="deepseek_v2", num_key_value_heads=6, q_lora_rank=None,
                        kv_lora_rank=7, qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5,
                        n_routed_experts=5, num_experts_per_tok=2, moe_intermediate_size=16,
                        n_shared_experts=2, first_k_dense_replace=1, topk_method="greedy"),
    # Model types transformers runs with LlamaForCausalLM, under their own names and defaults:
    # InternLM3's qkv_bias and bias (Llama's attention_bias and mlp_bias), EXAONE's num_layers and
    # activation_function, IQuest-Coder's head_dim 128 when it is left out.
    "internlm3": dict(_BASE, model_type="internlm3", num_key_value_heads=2, head_dim=10,
                      qkv_bias=True, bias=True),
    "exaone": dict({k: v for k, v in _BASE.items() if k != "num_hidden_layers"}, num_layers=3,
                   model_type="exaone", num_key_value_heads=2, activation_function="silu"),
    "iquestcoder": dict(_BASE, model_type="iquestcoder", num_key_value_heads=2, hidden_size=60,
                        num_attention_heads=6),
    # Granite: Llama's layers with four scalar multipliers (embeddings, attention scores, each
    # sublayer's output before its residual add, logits), all pointwise by Python numbers.
    "granite": dict(_BASE, model_type="granite", num_key_value_heads=2, embedding_multiplier=12.0,
                    attention_multiplier=0.125, residual_multiplier=0.22, logits_scaling=8.0,
                    attention_bias=True, mlp_bias=True),
    # SmolLM3: Llama's layers, no RoPE on every no_rope_layer_interval-th layer (here layers 1
    # and 3 of 5), or on the layers no_rope_layers marks 0.
    "smollm3": dict(_BASE, model_type="smollm3", num_hidden_layers=5, num_key_value_heads=2,
                    head_dim=10, no_rope_layer_interval=2, tie_word_embeddings=False,
                    pad_token_id=None),  # its default pad 128004 is past this vocabulary
    "smollm3_listed": dict(_BASE, model_type="smollm3", num_key_value_heads=3, mlp_bias=True,
                           no_rope_layers=[0, 1, 1], pad_token_id=None),
    # OLMo 2: RMSNorms over the whole query and key projections, the layer's norms after its
    # sublayers only.
    "olmo2": dict(_BASE, model_type="olmo2", num_key_value_heads=2, head_dim=10, pad_token_id=None,
                  attention_bias=True),
}


@pytest.mark.parametrize("family", sorted(NEW_FAMILY_CONFIGS))
def test_added_family_parameters_equal_hugging_face(family):
    pytest.importorskip("transformers")
    from costmodel import estimate

    fields = NEW_FAMILY_CONFIGS[family]
    total = estimate(dict(fields, name=family), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count(fields)


def test_deepseek_v2_default_top_k_null_is_refused_as_transformers_cannot_run_it(tmp_path, capsys):
    """DeepseekV2Config() leaves num_experts_per_tok null: transformers builds the model but its
    router's torch.topk(k=None) fails at the first forward (measured below), so the CLI refuses
    it in one line saying why; with every layer dense (no router) transformers runs it, and so
    do we, with its meta model's parameters."""
    transformers = pytest.importorskip("transformers")
    import torch

    fields = transformers.AutoConfig.for_model("deepseek_v2").to_dict()
    assert fields["num_experts_per_tok"] is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") <= 1, err
    assert "num_experts_per_tok is null" in err and "torch.topk" in err, err
    small = dict(NEW_FAMILY_CONFIGS["deepseek_v2"], num_experts_per_tok=None, kv_lora_rank=8)
    config = transformers.AutoConfig.for_model(**small)
    config._experts_implementation = "eager"
    with pytest.raises(TypeError, match="topk"):
        transformers.AutoModelForCausalLM.from_config(config)(input_ids=torch.arange(6)[None])
    dense = dict(small, first_k_dense_replace=small["num_hidden_layers"])
    config = transformers.AutoConfig.for_model(**dense)
    transformers.AutoModelForCausalLM.from_config(config)(input_ids=torch.arange(6)[None])
    from costmodel import estimate

    ours = estimate(dict(dense, name="dense"), seq_len=16).to_dict()["params"]["total"]
    assert ours == _hf_count(dense)
    released = dict(fields, first_k_dense_replace=fields["num_hidden_layers"])
    assert estimate(dict(released, name="dense"), seq_len=16).to_dict()["params"]["total"] == \
        _hf_count({k: v for k, v in released.items() if k not in ("architectures", "transformers_version")})


#: Model types whose transformers defaults (the configuration class's own values) are counted too.
DEFAULT_CONFIGS = ("granite", "smollm3", "olmo2")


@pytest.mark.parametrize("model_type", DEFAULT_CONFIGS)
def test_added_family_default_config_parameters_equal_hugging_face(model_type):
    """The configuration class's defaults (GraniteConfig(): 32 layers of 4096; SmolLM3Config():
    36 of 2048, a NoPE layer in four; Olmo2Config(): 32 of 4096) as its to_dict()."""
    transformers = pytest.importorskip("transformers")
    from costmodel import estimate

    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    total = estimate(dict(fields, name=model_type), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count({"model_type": model_type})


def test_granite_multipliers_are_pointwise_ops_by_python_numbers():
    """Granite's four multipliers: the attention scale, and three more multiplies (embeddings,
    each sublayer before its residual add, the logits) that keep nothing for backward; a zero
    or negative one is one line naming it, as the multipliers are scales."""
    from costmodel import estimate
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    fields = NEW_FAMILY_CONFIGS["granite"]
    cfg = from_hf_config(fields, name="g")
    assert (cfg.embedding_multiplier, cfg.attention_scale, cfg.residual_multiplier,
            cfg.logits_scaling) == (12.0, 0.125, 0.22, 8.0)
    plain = {k: v for k, v in fields.items() if not k.endswith(("multiplier", "scaling"))}
    base = estimate(dict(plain, model_type="llama", name="l"), seq_len=16).to_dict()
    ours = estimate(dict(fields, name="g"), seq_len=16).to_dict()
    assert ours["params"] == base["params"]
    assert ours["memory"]["activations"] == base["memory"]["activations"]
    for key in ("embedding_multiplier", "residual_multiplier", "logits_scaling", "attention_multiplier"):
        with pytest.raises(ConfigError, match=key):
            from_hf_config(dict(fields, **{key: 0}), name="g")


@pytest.mark.parametrize("family", ["smollm3", "smollm3_listed"])
def test_smollm3_rotates_on_the_layers_transformers_rotates(family):
    """The validate rows cannot see RoPE (it keeps nothing the scores do not): the layers whose
    attention runs apply_rotary_pos_emb in one forward of the real class are the layers the
    tree gives a rope leaf (its runs per pass, the NoPE layers left out), and their pattern."""
    transformers = pytest.importorskip("transformers")
    import torch
    from transformers.models.smollm3 import modeling_smollm3

    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    fields = NEW_FAMILY_CONFIGS[family]
    cfg = from_hf_config(fields, name=family)
    dims = {getattr(S, name): value for name, value in cfg.dimensions().items()}
    rope_runs = sum(int(leaf.count.subs(dims)) for leaf in CostModel(cfg).leaves if leaf.name == "rope")
    model = modeling_smollm3.SmolLM3ForCausalLM(transformers.AutoConfig.for_model(**fields)).eval()
    calls = {"n": 0}
    original = modeling_smollm3.apply_rotary_pos_emb

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    per_layer: list[tuple[int, int]] = []  # (layer, calls before it ran)
    for index, layer in enumerate(model.model.layers):
        layer.register_forward_pre_hook(lambda *_, i=index: per_layer.append((i, calls["n"])))
    modeling_smollm3.apply_rotary_pos_emb = counting
    try:
        with torch.no_grad():
            model(input_ids=torch.arange(6).reshape(1, 6))
    finally:
        modeling_smollm3.apply_rotary_pos_emb = original
    marks = [n for _, n in per_layer] + [calls["n"]]
    hf_rotates = [marks[i + 1] > marks[i] for i in range(len(per_layer))]
    assert calls["n"] == rope_runs == cfg.n_decoder_layers - cfg.nope_layers
    assert hf_rotates == [cfg.layer_kind_at("decoder", i) == "rope" for i in range(cfg.n_decoder_layers)]
    assert 0 < cfg.nope_layers < cfg.n_decoder_layers


def test_nope_layers_pattern_follows_the_count_or_the_config():
    """ModelConfig.nope_layers: layer_pattern "rope"/"nope" as SmolLM3's rule places them when no
    config said which (every fourth of 36), checked against the count where one did; the
    per-layer kinds a pipeline stage counts follow it."""
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    real = from_hf_config(REAL_ADDED["smollm3-3b"], name="s")
    assert real.nope_layers == 9 and real.layer_pattern == real.replace(layer_pattern=None).layer_pattern
    assert [i for i in range(36) if real.layer_kind_at("decoder", i) == "nope"] == list(range(3, 36, 4))
    listed = from_hf_config(NEW_FAMILY_CONFIGS["smollm3_listed"], name="s")
    assert listed.layer_pattern == ("nope", "rope", "rope")
    with pytest.raises(ConfigError, match="layer_pattern has 2 nope layers"):
        listed.replace(layer_pattern=("nope", "nope", "rope"), nope_layers=1)
    with pytest.raises(ConfigError, match="must leave a decoder layer with RoPE"):
        listed.replace(nope_layers=3)
    with pytest.raises(ConfigError, match="nope_layers applies only with RoPE"):
        listed.replace(position="none")


@pytest.mark.parametrize("change, words", [
    (dict(no_rope_layers=[0, 1]), "no_rope_layers must give 1 (RoPE) or 0"),
    (dict(no_rope_layers=[0, 2, 1]), "no_rope_layers must give 1 (RoPE) or 0"),
    (dict(no_rope_layers=[0, 0, 0]), "leaves no layer with RoPE"),
    (dict(use_sliding_window=True, sliding_window=4), "use_sliding_window with a sliding_window"),
    (dict(no_rope_layers=None, no_rope_layer_interval=0), "no_rope_layer_interval"),
])
def test_smollm3_config_it_does_not_model_is_one_line(change, words, tmp_path, capsys):
    """A SmolLM3 config the tree does not model (a window, no RoPE layer at all) or a malformed
    no_rope_layers: one error line, exit 2."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(NEW_FAMILY_CONFIGS["smollm3_listed"], **change)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error:") and words in err


def _tree_multiplies(fields: dict, batch: int, seq: int) -> int:
    """Elements the cost tree's forward multiplies (its "mul" elements) for one batch."""
    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    cfg = from_hf_config(fields, name="m")
    values = {getattr(S, name): value for name, value in cfg.dimensions().items()}
    values.update({S.b: batch, S.n: seq, S.T: 0, S.e: 2})
    return int(sum((leaf.count * x).subs(values) for leaf in CostModel(cfg).leaves
                   for kind, x in leaf.cost.elements if kind == "mul"))


def _hf_multiplies(fields: dict, batch: int, seq: int) -> int:
    """Elements aten's mul and div write in one eager forward of the real class."""
    import torch
    import transformers
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ in ("mul", "div"):
                Count.total += out.numel()
            return out

    config = transformers.AutoConfig.for_model(**fields)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad(), Count():
        model(input_ids=torch.arange(batch * seq).reshape(batch, seq))
    return Count.total


@pytest.mark.parametrize("attention_multiplier", [(48 / 6) ** -0.5, 1.0])
def test_granite_multiplies_beyond_llama_equal_the_classes(attention_multiplier):
    """The validate rows cannot see Granite's multipliers (a multiply by a number keeps nothing):
    the elements GraniteForCausalLM multiplies or divides beyond LlamaForCausalLM of the same
    shape (the embeddings, each sublayer's output, the logits) are the tree's extra "mul"
    elements. GraniteAttention multiplies the scores by attention_multiplier even when it is
    exactly 1.0 (GraniteConfig's default), as Llama multiplies by 1/sqrt(d_h): the same count
    (facts.scores_times_unit_scale; the tree dropped 3 x 2 x 6 x 12 x 12 = 5,184 at 1.0 before)."""
    pytest.importorskip("transformers")
    shape = {k: v for k, v in NEW_FAMILY_CONFIGS["granite"].items()
             if k != "model_type" and not k.endswith(("multiplier", "scaling"))}
    llama = dict(shape, model_type="llama")
    granite = dict(NEW_FAMILY_CONFIGS["granite"], attention_multiplier=attention_multiplier)
    extra_hf = _hf_multiplies(granite, 2, 12) - _hf_multiplies(llama, 2, 12)
    assert extra_hf == 2 * 12 * (48 * (1 + 2 * 3) + 99)  # embeddings, 2 residuals a layer, logits
    assert _tree_multiplies(granite, 2, 12) - _tree_multiplies(llama, 2, 12) == extra_hf


@pytest.mark.parametrize("family", ["gemma3_text", "granite"])
def test_a_scale_of_exactly_one_is_still_a_multiply_where_the_code_multiplies(family):
    """Gemma 3's query_pre_attn_scalar of 1 and Granite's attention_multiplier of 1 give a scale of
    exactly 1.0, which their attention still multiplies by: the class's aten mul elements and
    the tree's mul elements do not change from another scale to 1.0."""
    pytest.importorskip("transformers")
    field, other = {"gemma3_text": ("query_pre_attn_scalar", 12),
                    "granite": ("attention_multiplier", 0.125)}[family]
    one, scaled = (dict(NEW_FAMILY_CONFIGS[family], **{field: value}) for value in (1, other))
    assert _hf_multiplies(one, 2, 12) == _hf_multiplies(scaled, 2, 12)
    assert _tree_multiplies(one, 2, 12) == _tree_multiplies(scaled, 2, 12)


@pytest.mark.parametrize("biases", [dict(qkv_bias=True, bias=True), dict(qkv_bias=False, bias=False),
                                    dict(attention_bias=True, mlp_bias=True), {}])
def test_internlm3_biases_equal_hugging_face(biases):
    """InternLM3's qkv_bias and bias together: q, k, v, o and MLP biases, or none (the default)."""
    pytest.importorskip("transformers")
    from costmodel import estimate

    fields = {k: v for k, v in NEW_FAMILY_CONFIGS["internlm3"].items() if k not in ("qkv_bias", "bias")}
    fields.update(biases)
    total = estimate(dict(fields, name="internlm3"), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count(fields)


@pytest.mark.parametrize("biases", [dict(qkv_bias=True, bias=False), dict(qkv_bias=False, bias=True),
                                    dict(qkv_bias=True), dict(attention_bias=True)])
def test_internlm3_with_qkv_bias_unlike_bias_is_refused_as_transformers_does(biases, tmp_path, capsys):
    """transformers 5.24's InternLM3Config refuses qkv_bias != bias ("InternLM3 with `qkv_bias`
    different from `bias` is not supported"), which was counted as Llama's attention_bias (q, k, v
    and o biases) with a count no model has: one line, exit 2."""
    fields = {k: v for k, v in NEW_FAMILY_CONFIGS["internlm3"].items() if k not in ("qkv_bias", "bias")}
    fields.update(biases)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error:") and "qkv_bias different from bias" in err
    transformers = pytest.importorskip("transformers")
    with pytest.raises(Exception, match="qkv_bias` different from `bias"):
        transformers.AutoConfig.for_model(**fields)


@pytest.mark.parametrize("window", [None, 4, 4096])
@pytest.mark.parametrize("name", ["tiny", "gemma-3-1b-it"])
def test_gemma3_rotary_buffers_equal_the_meta_models_with_or_without_a_window(name, window):
    """Gemma3RotaryEmbedding holds inv_freq and original_inv_freq for each kind in
    set(layer_types), which sliding_window_pattern gives even where sliding_window is null (the
    null window counted one set of two). Bytes of every buffer of the bf16 meta model."""
    pytest.importorskip("transformers")
    import torch
    import transformers
    from costmodel import estimate

    base = NEW_FAMILY_CONFIGS["gemma3_text"] if name == "tiny" else {
        k: v for k, v in REAL_ADDED[name].items() if k != "architectures"}
    fields = dict(base, sliding_window=window)
    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    hf = sum(b.numel() * b.element_size() for b in model.buffers())
    assert len(set(config.layer_types)) == 2  # both kinds, whatever the window
    ours = estimate(dict(fields, name=name), seq_len=16, dtype="bf16").to_dict()["memory"]["buffers"]
    assert ours == hf


@pytest.mark.parametrize("layer_types, sets", [(["full_attention"] * 3, 1),
                                               (["sliding_attention"] * 3, 1),
                                               (["full_attention", "sliding_attention", "full_attention"], 2)])
def test_gemma3_rotary_sets_follow_layer_types_without_a_window(layer_types, sets):
    """With sliding_window null, the kinds in an explicit layer_types list decide the sets."""
    from costmodel.hf import from_hf_config

    fields = dict(NEW_FAMILY_CONFIGS["gemma3_text"], sliding_window=None, layer_types=layer_types)
    assert from_hf_config(fields, name="g").rotary_sets == sets


#: (family, attention) of the exactness test: every family under eager and under sdpa (DeepSeek-V2's
#: latent attention under sdpa runs torch's CPU math path: tests/test_mla_sdpa.py).
EXACT_CASES = [(family, attention) for attention in ("eager", "sdpa") for family in sorted(NEW_FAMILY_CONFIGS)]


@pytest.mark.slow
@pytest.mark.parametrize("family, attention", EXACT_CASES)
def test_added_family_is_exact_on_every_validate_row(family, attention):
    """Under sdpa, Ministral's, CWM's and Gemma 3's windowed layers keep the mask and K/V of h
    heads (facts.sdpa_mask; were 121,636 vs 130,468 and 189,604 vs 202,852 bytes without it)."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(NEW_FAMILY_CONFIGS[family], family, attention)
    assert_rows_exact(rows)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_olmo2_is_exact_in_either_dtype(dtype):
    """OLMo 2's fp32 cos/sin and fp32 weight product (facts rotary_tables_fp32 and
    rmsnorm_weight_times_fp32) are extra bytes in bf16 only: fp32 and bf16, 4 layers, b 1, n 7."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(NEW_FAMILY_CONFIGS["olmo2"], num_hidden_layers=4), source="olmo2",
                           name="olmo2")
    rows = validate(cfg, Workload(seq_len=7, batch=1, dtype=dtype, gen_tokens=2), target="hf")
    assert "bytes saved for backward" in {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []
