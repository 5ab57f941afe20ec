"""ModelConfig's checks of how its fields go together: the newer, optional fields (windows, partial
rotary, parallel layers, projections, per-layer inputs, multipliers, MoE input noise), routed
experts, latent attention and NoPE layers.

Split from config.py (whose ModelConfig.__post_init__ calls each, after deriving the fields left as
None) to keep the dataclass apart from its checks; each failure raises ConfigError with a sentence
naming the field.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError, check_bool, check_choice, check_int, check_number, show
from .model_choices import ROUTERS


def check_newer_fields(cfg: Any, owner: str) -> None:
    """Windows, partial rotary, parallel layers, projections and the optional sizes and flags (ModelConfig
    checks its experts, latent attention, NoPE layers and layer pattern after this)."""
    optional_sizes = ("sliding_window", "window_layers", "rotary_dim", "rotary_sets", "embedding_dim",
                      "kv_lora_rank", "q_lora_rank", "v_head_dim", "d_latent", "index_n_heads", "index_head_dim",
                      "per_layer_input", "per_layer_vocab", "global_head_dim", "global_kv_heads",
                      "altup_inputs", "laurel_rank", "hyper_streams", "output_groups", "output_rank",
                      "csa_rate", "hca_rate")
    for name in optional_sizes:
        if getattr(cfg, name) is not None:
            check_int(owner, name, getattr(cfg, name))
    check_hyper_connected(cfg, owner)
    if (cfg.per_layer_input is None) != (cfg.per_layer_vocab is None) or (
            cfg.per_layer_input and cfg.n_encoder_layers):
        raise ConfigError(f"{owner}: per_layer_input and per_layer_vocab go together, in a decoder-only model.")
    if (cfg.altup_inputs is None) != (cfg.laurel_rank is None) or (cfg.altup_inputs and not cfg.per_layer_input):
        raise ConfigError(f"{owner}: altup_inputs and laurel_rank go together, with per_layer_input (Gemma 3n).")
    for name in ("n_experts", "top_k", "d_shared", "n_dense_layers", "position_offset", "mtp_layers", "zero_experts",
                 "nope_layers", "idle_cross_layers", "embedding_extra_rows"):
        check_int(owner, name, getattr(cfg, name), minimum=0)
    for name in ("expert_groups", "expert_groups_per_token", "mamba1_heads"):
        check_int(owner, name, getattr(cfg, name), minimum=1)
    for name in ("qk_norm", "post_sublayer_norm", "parallel_attention", "shared_expert_gate",
                 "renormalize_top_k", "input_norms", "qk_norm_whole", "attention_sinks", "sinks_windowed_only",
                 "value_scale", "norm_affine",
                 "qk_l2_norm", "nope_temperature", "chunked_window", "mtp_repeated_layer", "rope_query_scale",
                 "upcast_attention",
                 "sub_norms", "differential_attention", "dynamic_mask", "residual_scales", "moe_output_bias",
                 "attention_experts"):
        check_bool(owner, name, getattr(cfg, name))
    check_attention_experts(cfg, owner)
    if cfg.upcast_attention and cfg.family != "gpt2":
        raise ConfigError(f"{owner}: upcast_attention is GPT-2's reorder_and_upcast_attn; family "
                          f"{cfg.family!r} has no such path.")
    if cfg.differential_attention and (cfg.architecture != "decoder" or cfg.mixer_layers or cfg.mla
                                       or cfg.n_heads % 2 or cfg.n_kv_heads % 2 or cfg.n_window_layers
                                       or cfg.qk_norm or cfg.attention_output_gate or cfg.sub_norms
                                       or cfg.dropout or cfg.attention_dropout):
        raise ConfigError(f"{owner}: differential_attention (DiffLlama's) is modelled in a decoder-only model of "
                          "full-attention layers with an even number of query and KV heads, without dropout, only.")
    if cfg.sub_norms and (cfg.architecture != "decoder" or cfg.n_experts or cfg.mixer_layers
                          or cfg.kv_lora_rank is not None or cfg.parallel_attention):
        raise ConfigError(f"{owner}: sub_norms (BitNet's) are modelled in a decoder-only model of dense "
                          "attention and FFN layers only (no experts, mixers, latent attention or parallel layers).")
    if (cfg.dynamic_mask or cfg.residual_scales) and (
            cfg.architecture != "decoder" or cfg.mixer_layers or cfg.mla or cfg.n_window_layers or cfg.n_experts
            or cfg.parallel_attention or cfg.post_sublayer_norm or cfg.norm_position != "pre"
            or cfg.residual_multiplier is not None or cfg.dropout or cfg.attention_dropout):
        raise ConfigError(f"{owner}: dynamic_mask and residual_scales (Doge's) are modelled in a decoder-only model "
                          "of pre-norm, sequential, dense full-attention layers without dropout only.")
    if not cfg.input_norms and (not cfg.post_sublayer_norm or cfg.norm_position != "pre"
                                 or cfg.parallel_attention):
        raise ConfigError(f"{owner}: input_norms false (norms after the sublayers only) needs "
                          "post_sublayer_norm, norm_position pre and sequential layers.")
    if cfg.qk_norm_whole and not cfg.qk_norm:
        raise ConfigError(f"{owner}: qk_norm_whole applies only with qk_norm.")
    for name, needs, ok in (("qk_l2_norm", "RoPE and no qk_norm", cfg.rope and not cfg.qk_norm),
                            ("nope_temperature", "nope_layers", cfg.nope_layers),
                            ("rope_query_scale", "RoPE", cfg.rope),
                            ("chunked_window", "a sliding_window", cfg.sliding_window is not None)):
        if getattr(cfg, name) and not ok:
            raise ConfigError(f"{owner}: {name} applies only with {needs}.")
    check_number(owner, "moe_input_noise", cfg.moe_input_noise, zero=True)
    if cfg.moe_input_noise is not None and not cfg.n_experts:
        raise ConfigError(f"{owner}: moe_input_noise applies only to a MoE model.")
    if cfg.clip_qkv is not None and (cfg.kv_lora_rank is not None or cfg.n_encoder_layers):
        raise ConfigError(f"{owner}: clip_qkv is modelled for decoder-only models with q, k and v projections.")
    for name in ("attention_softcap", "logit_softcap", "embedding_multiplier",
                 "residual_multiplier", "logits_scaling", "clip_qkv"):
        check_number(owner, name, getattr(cfg, name))
    if cfg.window_layers is not None:
        if cfg.sliding_window is None:
            raise ConfigError(f"{owner}: window_layers needs a sliding_window.")
        if cfg.window_layers > cfg.n_decoder_layers:
            raise ConfigError(f"{owner}: window_layers ({cfg.window_layers}) exceeds the "
                              f"{cfg.n_decoder_layers} decoder layers.")
    if cfg.sliding_window is not None and not cfg.n_decoder_layers:
        raise ConfigError(f"{owner}: a sliding window needs decoder layers.")
    if cfg.rotary_dim is not None and (cfg.rotary_dim > cfg.d_head or cfg.rotary_dim % 2):
        raise ConfigError(f"{owner}: rotary_dim must be even and at most d_head ({cfg.d_head}), "
                          f"got {cfg.rotary_dim}.")
    if cfg.parallel_norms not in (1, 2) or isinstance(cfg.parallel_norms, bool):
        raise ConfigError(f"{owner}: parallel_norms must be 1 or 2, got {show(cfg.parallel_norms)}.")
    if cfg.parallel_norms == 1 and not cfg.parallel_attention:
        raise ConfigError(f"{owner}: parallel_norms applies only with parallel_attention.")
    if cfg.parallel_attention and (cfg.norm_position != "pre" or cfg.post_sublayer_norm
                                    or cfg.n_encoder_layers):
        raise ConfigError(f"{owner}: parallel_attention needs pre-norm decoder-only layers.")
    if cfg.position_offset and cfg.position not in ("learned", "sinusoidal"):
        raise ConfigError(f"{owner}: position_offset applies only to learned or sinusoidal position tables.")
    if cfg.projected_embeddings and (cfg.architecture != "decoder" or cfg.head != "lm"):
        raise ConfigError(f"{owner}: embedding_dim (projected embeddings) is modelled for "
                          "decoder-only language models.")
    if cfg.mtp_layers and (cfg.architecture != "decoder" or cfg.head != "lm"):
        raise ConfigError(f"{owner}: multi-token prediction (mtp_layers) needs a decoder-only language model.")


def check_hyper_connected(cfg: Any, owner: str) -> None:
    """DeepSeek-V4's fields (hyper_streams ... hca_rate) go together, in a decoder-only model of
    routed experts on every layer, one key/value head and a sliding window, with an indexer where
    some layers are csa_layers; each compressed kind has its rate."""
    for name in ("csa_layers", "hca_layers"):
        check_int(owner, name, getattr(cfg, name), minimum=0)
    group = (cfg.hyper_streams, cfg.output_groups, cfg.output_rank, cfg.csa_rate, cfg.hca_rate)
    if all(value is None for value in group) and not cfg.csa_layers and not cfg.hca_layers:
        return
    if any(value is None for value in group):
        raise ConfigError(f"{owner}: hyper_streams, output_groups, output_rank, csa_rate and hca_rate "
                          "(DeepSeek-V4's) go together.")
    if (cfg.architecture != "decoder" or cfg.n_kv_heads != 1 or cfg.sliding_window is None
            or cfg.window_layers is not None or not cfg.n_experts or cfg.n_dense_layers
            or cfg.q_lora_rank is None or cfg.kv_lora_rank is not None or cfg.mixer_layers):
        raise ConfigError(f"{owner}: hyper_streams (DeepSeek-V4's layers) are modelled in a decoder-only "
                          "model with one key/value head, a sliding_window on every layer, a q_lora_rank "
                          "and routed experts on every layer only.")
    if cfg.csa_layers + cfg.hca_layers > cfg.n_decoder_layers:
        raise ConfigError(f"{owner}: csa_layers + hca_layers ({cfg.csa_layers + cfg.hca_layers}) exceeds "
                          f"the {cfg.n_decoder_layers} decoder layers.")
    if (cfg.n_heads * cfg.d_head) % cfg.output_groups:
        raise ConfigError(f"{owner}: n_heads x d_head ({cfg.n_heads * cfg.d_head}) is not divisible by "
                          f"output_groups ({cfg.output_groups}).")
    if cfg.csa_layers and (cfg.index_n_heads is None or cfg.index_head_dim is None):
        raise ConfigError(f"{owner}: csa_layers need the indexer's index_n_heads and index_head_dim.")


def check_latent_attention(cfg: Any, owner: str) -> None:
    """Latent attention (MLA), the DeepSeek-V3.2 indexer, a query rank and a value width of its own."""
    # DeepSeek-V3.2's indexer (blocks/indexer.py): both sizes, with q_lora_rank (its queries read
    # the query latent) and RoPE on rotary_dim <= index_head_dim (its rope slice)
    if (cfg.index_n_heads is None) != (cfg.index_head_dim is None) or cfg.index_n_heads is not None and (
            cfg.q_lora_rank is None or not cfg.rope or cfg.index_head_dim < (cfg.rotary_dim or 0)):
        raise ConfigError(f"{owner}: index_n_heads and index_head_dim (DeepSeek-V3.2's indexer) go "
                          "together, with MLA's q_lora_rank and RoPE on rotary_dim <= index_head_dim.")
    if cfg.kv_lora_rank is None:
        if cfg.q_lora_rank is not None and cfg.hyper_streams is None:  # DeepSeek-V4's query rank
            raise ConfigError(f"{owner}: q_lora_rank applies only with kv_lora_rank (MLA) or "
                              "hyper_streams (DeepSeek-V4).")
        if cfg.v_head_dim is not None and (cfg.global_head_dim or cfg.keys_as_values or cfg.n_encoder_layers
                                            or cfg.differential_attention):
            raise ConfigError(f"{owner}: a value width of its own (v_head_dim) without MLA is modelled in "
                              "decoder-only models whose heads are all d_head wide with values of their own.")
        return
    if not cfg.rope or cfg.rotary_dim is None or cfg.rotary_dim >= cfg.d_head:
        raise ConfigError(f"{owner}: MLA needs RoPE on rotary_dim < d_head dimensions (the decoupled key).")
    if cfg.v_head_dim is None:
        raise ConfigError(f"{owner}: MLA needs v_head_dim.")
    if cfg.n_kv_heads != cfg.n_heads or cfg.n_encoder_layers:
        raise ConfigError(f"{owner}: MLA is modelled for decoder-only models whose keys and "
                          "values have every query head.")


def check_attention_experts(cfg: Any, owner: str) -> None:
    """JetMoE's fields: moe_output_bias with experts; attention_experts (its mixture of attention heads,
    blocks/attention_experts.py) with experts too, top_k x n_kv_heads query heads, in a decoder-only model of
    pre-norm, sequential full-attention layers with RoPE, every one with experts, and without q/k norms or
    output gates."""
    if (cfg.moe_output_bias or cfg.zero_experts) and not cfg.n_experts:
        raise ConfigError(f"{owner}: moe_output_bias and zero_experts apply only with n_experts.")
    if not cfg.attention_experts:
        return
    if not cfg.n_experts or cfg.n_heads != cfg.top_k * cfg.n_kv_heads:
        raise ConfigError(f"{owner}: attention_experts (JetMoE's mixture of attention heads) needs n_experts and "
                          "n_heads = top_k x n_kv_heads.")
    if (cfg.architecture != "decoder" or cfg.mixer_layers or cfg.mla or cfg.n_window_layers or cfg.n_dense_layers
            or cfg.layer_pattern is not None or cfg.parallel_attention or cfg.post_sublayer_norm
            or cfg.norm_position != "pre" or not cfg.rope or cfg.qk_norm or cfg.attention_output_gate
            or cfg.qkv_bias or cfg.out_bias or cfg.clip_qkv is not None or cfg.sub_norms):
        raise ConfigError(f"{owner}: attention_experts (JetMoE's mixture of attention heads) is modelled in a "
                          "decoder-only model of pre-norm, sequential full-attention RoPE layers, each with experts, "
                          "without attention biases, q/k norms or output gates only.")


def check_experts(cfg: Any, owner: str, d_expert_given: bool) -> None:
    """Routed experts: the router, the experts' sizes and flags, which apply only with n_experts
    (d_expert too, where given rather than derived from d_ff), top_k of them, in decoder-only models
    of SwiGLU (or relu2) FFNs, with whole expert groups (check_expert_groups)."""
    check_choice(owner, "router", cfg.router, ROUTERS)
    check_int(owner, "d_expert", cfg.d_expert)
    for name in ("router_bias", "expert_bias", "moe_output_norm"):
        check_bool(owner, name, getattr(cfg, name))
    if (cfg.swiglu_limit is None) != (cfg.swiglu_alpha is None):
        raise ConfigError(f"{owner}: swiglu_limit and swiglu_alpha (the clamped SwiGLU) go together.")
    for name in ("swiglu_limit", "swiglu_alpha"):
        check_number(owner, name, getattr(cfg, name))
    if not cfg.n_experts:
        extras = [name for name, default in (("top_k", 0), ("d_shared", 0), ("n_dense_layers", 0),
                                             ("shared_expert_gate", False), ("moe_output_norm", False),
                                             ("router", "softmax"),
                                             ("router_bias", False), ("expert_bias", False),
                                             ("swiglu_limit", None), ("expert_groups", 1),
                                             ("expert_groups_per_token", 1), ("d_latent", None))
                  if getattr(cfg, name) != default]
        if extras or d_expert_given:
            raise ConfigError(f"{owner}: {(extras or ['d_expert'])[0]} applies only with n_experts.")
        return
    if not 1 <= cfg.top_k <= cfg.n_experts:
        raise ConfigError(f"{owner}: top_k must be between 1 and n_experts ({cfg.n_experts}), "
                          f"got {cfg.top_k}.")
    if cfg.n_encoder_layers or not cfg.n_decoder_layers:
        raise ConfigError(f"{owner}: experts are modelled in decoder-only models.")
    check_expert_groups(cfg, owner)
    if cfg.n_dense_layers >= cfg.n_decoder_layers:
        raise ConfigError(f"{owner}: n_dense_layers ({cfg.n_dense_layers}) leaves no layer with experts.")
    if cfg.shared_expert_gate and not cfg.d_shared:
        raise ConfigError(f"{owner}: shared_expert_gate needs a shared expert (d_shared).")
    if cfg.activation not in (("relu2", "swiglu") if cfg.mixer_layers else ("swiglu",)):  # nemotron_h: relu2
        raise ConfigError(f"{owner}: experts are modelled as SwiGLU FFNs (or relu2 with mixer_layers), "
                          f"got {cfg.activation!r}.")
    if (cfg.n_dense_layers and cfg.window_layers not in (None, cfg.n_decoder_layers)
            and not cfg.nope_full_layers and not cfg.windows_on_experts):
        raise ConfigError(f"{owner}: dense and expert layers with windows on only some layers "
                          "are not modelled.")


def check_expert_groups(cfg: Any, owner: str) -> None:
    """Group-limited routing: whole groups, no more chosen than there are, enough experts in them."""
    groups, chosen = cfg.expert_groups, cfg.expert_groups_per_token
    if cfg.n_experts % groups:
        raise ConfigError(f"{owner}: expert_groups ({groups}) must divide n_experts ({cfg.n_experts}).")
    if chosen > groups:
        raise ConfigError(f"{owner}: expert_groups_per_token ({chosen}) exceeds expert_groups ({groups}).")
    if cfg.top_k > chosen * (cfg.n_experts // groups):
        raise ConfigError(f"{owner}: top_k ({cfg.top_k}) exceeds the experts of {chosen} of {groups} groups.")


def check_nope_layers(cfg: Any, owner: str) -> None:
    """NoPE layers: RoPE on the others; windows on all layers or only the RoPE ones (nope_full_layers);
    dense layers beside expert ones where every NoPE layer has experts (Llama 4 Maverick)."""
    if not cfg.nope_layers:
        return
    if not cfg.rope:
        raise ConfigError(f"{owner}: nope_layers applies only with RoPE.")
    if cfg.nope_layers >= cfg.n_decoder_layers:
        raise ConfigError(f"{owner}: nope_layers ({cfg.nope_layers}) must leave a decoder layer "
                          f"with RoPE (of {cfg.n_decoder_layers}).")
    if 0 < cfg.n_window_layers < cfg.n_decoder_layers and not cfg.nope_full_layers:
        raise ConfigError(f"{owner}: layers without RoPE beside windows on some layers (unless "
                          "they are the layers without a window) are not modelled.")
    if cfg.n_dense_layers and cfg.nope_layers > cfg.n_moe_layers:
        raise ConfigError(f"{owner}: {cfg.nope_layers} layers without RoPE beside {cfg.n_moe_layers} "
                          "expert layers: NoPE layers without experts are not modelled.")
