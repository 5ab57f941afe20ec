"""The kinds of layer a stack of the cost tree has, each with its count (a sympy expression of the
layer counts): one kind when every layer is alike, else windowed and full layers, dense and expert
layers, RoPE and NoPE layers, K/V-sharing layers or one kind per mixer (layer_pattern.LayerKind),
and under full recomputation of N layers the first N apart. costmodel/leaves.py's TreeBuilder
builds each kind's leaves once, run its count of times."""

from __future__ import annotations

import dataclasses

import sympy as sp

from . import symbols as S
from .config import ConfigError, ModelConfig
from .layer_pattern import LayerKind, kv_shared_kinds
from .spec import RECOMPUTED_LAYERS


#: DeepSeek-V4's layer kinds (layer_types sliding_attention, compressed_sparse_attention,
#: heavily_compressed_attention).
V4_SLIDING, V4_CSA, V4_HCA = "sliding", "csa", "hca"


def layer_kinds(cfg: ModelConfig, stack: str, layers: sp.Expr, phase: str,
                recompute_layers: int | None) -> list[LayerKind]:
    """The kinds of layer of a stack, each with its count: one kind when every layer is
    alike; windowed and full layers (Gemma 2: the sliding ones first, as layer 0 slides);
    dense and expert layers (DeepSeek-V3: its first dense); under full recomputation of N
    layers (Profile.recompute_layers) in training, the first N ("recomputed") and the rest."""
    kinds = config_kinds(cfg, stack, layers)
    if phase != "train" or recompute_layers is None:
        return kinds
    if len(kinds) != 1 or cfg.layer_pattern is not None or stack != "decoder" \
            or cfg.architecture != "decoder":
        raise ConfigError("recompute_layers needs a decoder-only model whose layers are all of one kind.")
    if recompute_layers > cfg.n_decoder_layers:
        raise ConfigError(f"recompute_layers {recompute_layers} is more than the model's "
                          f"{cfg.n_decoder_layers} layers.")
    kind = kinds[0]
    return [dataclasses.replace(kind, label=RECOMPUTED_LAYERS, count=sp.Integer(recompute_layers)),
            dataclasses.replace(kind, count=kind.count - recompute_layers)]


def config_kinds(cfg: ModelConfig, stack: str, layers: sp.Expr) -> list[LayerKind]:
    """The kinds of layer the config gives a stack (an encoder's layers are all alike)."""
    if stack != "decoder":
        return [LayerKind(None, layers)]
    if cfg.mixer_layers:  # nemotron_h: one kind per mixer present, in layer_pattern.MIXERS' order
        counts = {"mamba": S.L_m, "attention": S.L_a, "mlp": S.L_f, "moe": S.L_moe, "deltanet": S.L_g,
                  "mamba1": S.L_m1, "shortconv": S.L_sc, "lightning": S.L_la, "kda": S.L_kd,
                  "rglru": S.L_rg, "rwkv_time": S.L_rt, "rwkv_channel": S.L_rc,
                  "mlstm": S.L_ml, "shared": S.L_sh}
        kinds = [LayerKind(mixer, count, experts=mixer == "moe", rope=cfg.rope, mixer=mixer,
                           post_norms=mixer in cfg.post_norm_mixers,
                           window=mixer == "attention" and cfg.sliding_window is not None)
                 for mixer, count in counts.items() if cfg.n_mixer_layers(mixer)]
        return post_normed_mlps(cfg, kinds, counts)
    if cfg.hyper_streams:  # DeepSeek-V4: sliding-only, CSA and HCA layers, every one windowed with experts
        kinds = [LayerKind(V4_SLIDING, S.L_dec - S.L_cs - S.L_hc, True, True), LayerKind(V4_CSA, S.L_cs, True, True),
                 LayerKind(V4_HCA, S.L_hc, True, True)]
        counts = (cfg.n_decoder_layers - cfg.csa_layers - cfg.hca_layers, cfg.csa_layers, cfg.hca_layers)
        return [kind for kind, count in zip(kinds, counts) if count]
    windows = cfg.n_window_layers
    all_window = windows == cfg.n_decoder_layers
    experts = cfg.moe
    if cfg.nope_layers and cfg.n_dense_layers:  # Llama 4 Maverick: every NoPE layer has experts
        rope_window = all_window or cfg.nope_full_layers  # its chunks: on the RoPE layers
        return [LayerKind("dense", S.L_dec - S.L_moe, rope_window, False),
                LayerKind("moe", S.L_moe - S.L_np, rope_window, True),
                LayerKind("moe_nope", S.L_np, all_window, True, rope=False)]
    if cfg.windows_on_experts:  # MiMo-V2-Flash: dense layers full, windows on some expert layers
        full_experts = [LayerKind("moe_full", S.L_moe - S.L_w, False, True)] if cfg.n_window_layers < cfg.n_moe_layers else []
        return [LayerKind("dense", S.L_dec - S.L_moe, False, False), LayerKind("moe", S.L_w, True, True), *full_experts]
    if cfg.n_dense_layers:
        return [LayerKind("dense", S.L_dec - S.L_moe, all_window, False),
                LayerKind("moe", S.L_moe, all_window, True)]
    if cfg.nope_full_layers:  # EXAONE 4, Llama 4 Scout: RoPE (and a window, a chunk) on the same layers
        return [LayerKind("sliding", S.L_w, True, experts),
                LayerKind("full", S.L_dec - S.L_w, False, experts, rope=False)]
    if cfg.nope_layers:  # SmolLM3: RoPE on all but the NoPE layers (layer 0 has it)
        return [LayerKind("rope", S.L_dec - S.L_np, all_window, experts),
                LayerKind("nope", S.L_np, all_window, experts, rope=False)]
    if cfg.kv_shared_layers:  # Gemma 4: the last layers reuse their kind's last own layer's K and V
        return kv_shared_kinds(cfg, experts)
    if windows and not all_window:
        return [LayerKind("sliding", S.L_w, True, experts),
                LayerKind("full", S.L_dec - S.L_w, False, experts)]
    return [LayerKind(None, layers, all_window, experts)]


def post_normed_mlps(cfg: ModelConfig, kinds: list[LayerKind], counts: dict) -> list[LayerKind]:
    """ModelConfig.post_norm_mixers (OlmoHybrid's attention layers): the MLP layer after each of
    those mixers' layers is post-normed with it, a kind "mlp_post" of theirs apart from the others."""
    if not cfg.post_norm_mixers:
        return kinds
    after = sum((counts[m] for m in cfg.post_norm_mixers if cfg.n_mixer_layers(m)), sp.Integer(0))
    normed = sum(cfg.n_mixer_layers(m) for m in cfg.post_norm_mixers)
    out = []
    for kind in kinds:
        if kind.mixer == "mlp" and normed:
            if cfg.n_mixer_layers("mlp") > normed:
                out.append(dataclasses.replace(kind, count=kind.count - after))
            kind = dataclasses.replace(kind, label="mlp_post", count=after, post_norms=True)
        out.append(kind)
    return out
