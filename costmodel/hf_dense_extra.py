"""config.json readers of more dense decoder families whose blocks exist here already: Nemotron
(Nemotron-4 / Minitron: Llama's attention with partial rotary, a squared-ReLU MLP without a gate,
LayerNorm1P), VaultGemma (Gemma 2 without the norms after the sublayers), Ministral 3
(Mistral's layers with a per-position query scale after RoPE), Jais 2 (Llama's attention,
Nemotron's MLP, LayerNorms) and HyperCLOVA X (Granite with post-sublayer norms). Each reads Llama's
(or Gemma 2's) fields through costmodel/hf.py's Llama reader, which hf.py passes in, and changes
what its own code does otherwise. costmodel/hf.py dispatches on model_type. Defaults are those of
transformers 5.24's configuration classes."""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .hf_fields import LLAMA_NAMES, Fields, rotary_fraction
from .hf_llama_variants import LlamaReader

#: transformers 5.24's NemotronConfig defaults for the Llama fields it reads
#: (models/nemotron/configuration_nemotron.py; head_dim None: hidden_size / heads).
_NEMOTRON_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=4096, hidden_act="silu",
                                          tie_word_embeddings=False)


def _nemotron(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Nemotron (NemotronForCausalLM: Nemotron-4, Minitron): Llama's attention (attention_bias
    on q, k, v and o; grouped KV heads) with RoPE on partial_rotary_factor of each head (0.5 by
    default; rotate_half, the passed part joined by torch.cat), an MLP up_proj -> relu2 ->
    down_proj (mlp_bias on both), and LayerNorm1P: a LayerNorm with weight and bias whose weight
    is applied as weight + 1 (a new d-wide tensor each forward, which layer_norm keeps:
    facts layernorm_weight_plus_one). A missing or null num_key_value_heads (NemotronConfig's
    default, which its attention cannot run) is refused."""
    act = f.get("hidden_act", "relu2", str)
    if act != "relu2":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for nemotron (its MLP has "
                          "no gate; relu2 is modelled).")
    if f.data.get("num_key_value_heads") is None:
        raise ConfigError(f"{f.source}: num_key_value_heads is missing or null (NemotronConfig's "
                          "default), which transformers 5.24's NemotronAttention cannot run (it "
                          "divides num_attention_heads by it); give the number of KV heads.")
    base = llama.read(Fields(dict(f.data, hidden_act="silu"), f.source), name, "llama",
                      _NEMOTRON_DEFAULTS)
    rotary = int(base.d_head * rotary_fraction(f, "partial_rotary_factor", 0.5))
    if rotary < 2 or rotary % 2:
        raise ConfigError(f"{f.source}: partial_rotary_factor leaves {rotary} rotary dimensions per "
                          "head; an even number of at least 2 is modelled.")
    return base.replace(family="nemotron", activation="relu2", norm="layernorm",
                        rotary_dim=None if rotary == base.d_head else rotary)


def _vaultgemma(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """VaultGemma (VaultGemmaForCausalLM): Gemma 2's layers (its configuration class, defaults,
    window on alternate layers, soft-capping, query_pre_attn_scalar, (1 + w) RMSNorms, scaled
    embeddings, a tied head) without the two norms after the sublayers
    (VaultGemmaDecoderLayer deletes post_attention_layernorm and post_feedforward_layernorm)."""
    base = llama.read(f, name, "gemma2", None)
    return base.replace(family="vaultgemma", post_sublayer_norm=False)


#: transformers 5.24's Ministral3Config defaults for the Llama fields it reads
#: (models/ministral3/configuration_ministral3.py; sliding_window None: no window).
_MINISTRAL3_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=262144, hidden_act="silu",
                                            tie_word_embeddings=False, num_key_value_heads=8,
                                            head_dim=128, sliding_window=None)


def _ministral3(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Ministral 3 (Ministral3ForCausalLM; the language model of Mistral 3's mistral3 configs):
    Mistral's layers (no biases, a sliding_window on every layer when one is set) whose queries,
    after RoPE in every layer, are multiplied by 1 + llama_4_scaling_beta log(1 + floor(position /
    original_max_position_embeddings)), both read from rope_parameters on every forward
    (ModelConfig.rope_query_scale). Its default rope_parameters (YaRN, beta 0.1, 16384) change the
    RoPE tables' values only. A rope_parameters without either key, which Ministral3Attention
    cannot run (it computes with None), is refused."""
    rope = f.data.get("rope_parameters") or f.data.get("rope_scaling")
    if rope is not None:  # given: transformers keeps it as is (missing: the YaRN default)
        if not isinstance(rope, dict):
            raise ConfigError(f"{f.source}: rope_parameters must be an object, got {show(rope)}.")
        for key in ("llama_4_scaling_beta", "original_max_position_embeddings"):
            value = rope.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{f.source}: rope_parameters has no number {key} (got "
                                  f"{show(value)}), which transformers 5.24's Ministral3Attention "
                                  "reads on every forward to scale the queries.")
    # the reader takes Mistral's window rule with Mistral's default (4096): Ministral 3's is None
    data = dict(f.data, sliding_window=f.data.get("sliding_window"))
    base = llama.read(Fields(data, f.source), name, "mistral", _MINISTRAL3_DEFAULTS)
    return base.replace(family="ministral3", rope_query_scale=True)


#: transformers 5.24's Jais2Config defaults for the Llama fields it reads (models/jais2).
_JAIS2_DEFAULTS: dict[str, Any] = dict(max_position_embeddings=8192, hidden_act="silu",
                                       tie_word_embeddings=False)


def _jais2(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Jais 2 (Jais2ForCausalLM): Llama's attention (attention_bias on q, k, v and o: True by
    default) and RoPE, Nemotron's MLP up_proj -> relu2 -> down_proj (mlp_bias: True by default)
    and torch's LayerNorm (weight and bias) in place of the RMSNorms."""
    act = f.get("hidden_act", "relu2", str)
    if act != "relu2":
        raise ConfigError(f"{f.source}: unsupported hidden_act {show(act)} for jais2 (its MLP has "
                          "no gate; relu2 is modelled).")
    data = dict(f.data, hidden_act="silu", attention_bias=f.get("attention_bias", True, bool),
                mlp_bias=f.get("mlp_bias", True, bool))
    defaults = dict(vocab_size=150272, hidden_size=3328, intermediate_size=26624,
                    num_attention_heads=26, num_hidden_layers=32)
    data.update({key: value for key, value in defaults.items() if data.get(key) is None})
    base = llama.read(Fields(data, f.source), name, "llama", _JAIS2_DEFAULTS)
    return base.replace(family="jais2", activation="relu2", norm="layernorm")


def _hyperclovax(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """HyperCLOVA X SEED (HyperCLOVAXForCausalLM): Granite's layers and multipliers with an
    RMSNorm on each sublayer's output before the scaled residual add (use_post_norm, True by
    default: Peri-LN), attention_multiplier null meaning head_dim ** -0.5, and the logits
    multiplied by logits_scaling where Granite divides (ModelConfig.logits_scaling is its
    inverse)."""
    n_heads = f.get("num_attention_heads", 32, minimum=1)
    d_model = f.get("hidden_size", 4096)
    head_dim = f.get("head_dim", None) or d_model // n_heads
    data = dict(f.data)
    if data.get("attention_multiplier") is None:
        data["attention_multiplier"] = head_dim ** -0.5
    scaling = f.get("logits_scaling", 1.0, float)
    if not 0 < scaling < float("inf"):
        raise ConfigError(f"{f.source}: logits_scaling must be a positive number, got {show(scaling)}.")
    data["logits_scaling"] = 1 / scaling
    base = llama.read(Fields(data, f.source), name, "granite", None)
    return base.replace(family="hyperclovax", post_sublayer_norm=f.get("use_post_norm", True, bool))


#: model_type -> its reader (hf.py passes its LlamaReader).
DENSE_EXTRA_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {
    "nemotron": _nemotron, "vaultgemma": _vaultgemma, "ministral3": _ministral3, "jais2": _jais2,
    "hyperclovax": _hyperclovax,
}

#: The transformers class of each, for a config.json that names `architectures` only.
DENSE_EXTRA_ARCHITECTURES: dict[str, str] = {
    "NemotronForCausalLM": "nemotron", "VaultGemmaForCausalLM": "vaultgemma",
    "Ministral3ForCausalLM": "ministral3", "Jais2ForCausalLM": "jais2",
    "HyperCLOVAXForCausalLM": "hyperclovax",
}

#: The config.json names of ModelConfig's fields (the ones its errors may name).
DENSE_EXTRA_NAMES: dict[str, dict[str, Any]] = {family: LLAMA_NAMES for family in DENSE_EXTRA_BUILDERS}
