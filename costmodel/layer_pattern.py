"""A ModelConfig's layer_pattern: the kind of each decoder layer where the layers differ, checked
against the counts the config gives, or derived from them where no config.json said which layers.

Kinds: "sliding"/"full" (windows on some layers), "dense"/"moe" (experts in some layers),
"rope"/"nope" (RoPE on some layers), "moe_nope" beside "dense"/"moe" (Llama 4 Maverick), "moe_full"
beside "dense"/"moe" (MiMo-V2-Flash: windows on some expert layers, "moe" the windowed); in a
model of one-mixer layers (ModelConfig.mixer_layers, transformers' nemotron_h) the mixer of each:
MIXERS. Gemma 4's layers reusing an earlier layer's K and V (kv_shared_layers) are "sliding_shared" and
"full_shared". LayerKind: one kind of layer as the cost tree builds it (costmodel/layer_kinds.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, check_bool, check_choice, check_int, show


@dataclass(frozen=True)
class LayerKind:
    """One kind of layer of a stack and how many of it: whether its attention slides over a
    window, whether its FFN is a mixture of experts and whether its attention applies RoPE where
    the model has it (label None when every layer is alike)."""

    label: str | None
    count: Any
    window: bool = False
    experts: bool = False
    rope: bool = True
    mixer: str | None = None  # the layer's one mixer (ModelConfig.mixer_layers), else None
    kv_shared: bool = False  # its attention reuses an earlier layer's K and V (Gemma 4's kv_shared_layers)
    post_norms: bool = False  # OLMo 2's norms, after the mixer only (ModelConfig.post_norm_mixers)


#: The one mixer of each layer of a hybrid model (nemotron_h's M, *, - and E): a Mamba-2 mixer
#: (blocks/mamba.py), attention, a dense MLP or a mixture of experts, each after its own norm; a
#: Gated DeltaNet (blocks/deltanet.py), a Mamba-1 mixer (blocks/mamba1.py) or LFM2's gated short
#: convolution (blocks/shortconv.py), MiniMax's lightning attention (blocks/lightning.py), Kimi
#: Delta Attention (blocks/kda.py), Griffin's RG-LRU recurrent block (blocks/rglru.py), RWKV-4's
#: time and channel mixes (blocks/rwkv.py), xLSTM's mLSTM (blocks/mlstm.py) or a use of Zamba's shared
#: attention-and-MLP blocks (costmodel/shared_block.py).
MIXERS = ("mamba", "attention", "mlp", "moe", "deltanet", "mamba1", "shortconv", "lightning", "kda", "rglru",
          "rwkv_time", "rwkv_channel", "mlstm", "shared")
#: The Mamba-2 sizes a model with a "mamba" layer gives (and a model without one leaves None).
MAMBA_SIZES = ("mamba_heads", "mamba_head_dim", "mamba_groups")
#: The chunk both chunked linear mixers give (Mamba-2, Gated DeltaNet).
LINEAR_SIZES = ("chunk_size",)
#: The Gated DeltaNet sizes a model with a "deltanet" layer gives (blocks/deltanet.py).
DELTANET_SIZES = ("deltanet_k_heads", "deltanet_v_heads", "deltanet_k_dim", "deltanet_v_dim")
#: The Mamba-1 sizes a model with a "mamba1" layer gives (blocks/mamba1.py; ssm_state and
#: conv_kernel too, which it shares with Mamba-2).
MAMBA1_SIZES = ("mamba1_inner", "dt_rank")


def check_mixer_layers(cfg, owner: str) -> None:
    """One mixer a layer: layer_pattern names each (MIXERS); experts where a layer is "moe", the
    Mamba-2 sizes where one is "mamba"; decoder-only, no windows, no dense-layer count."""
    for name in ("mixer_layers", "mamba_bias", "conv_bias", "mamba_gated_norm", "deltanet_split_projections"):
        check_bool(owner, name, getattr(cfg, name))
    if cfg.mamba_out_bias is not None:
        check_bool(owner, "mamba_out_bias", cfg.mamba_out_bias)
    check_choice(owner, "mamba1_norms", cfg.mamba1_norms, ("none", "weightless", "weighted"))
    pattern = tuple(cfg.layer_pattern) if isinstance(cfg.layer_pattern, list) else cfg.layer_pattern
    has_mamba = cfg.mixer_layers and isinstance(pattern, tuple) and "mamba" in pattern
    has_deltanet = cfg.mixer_layers and isinstance(pattern, tuple) and "deltanet" in pattern
    has_mamba1 = cfg.mixer_layers and isinstance(pattern, tuple) and "mamba1" in pattern
    has_conv = cfg.mixer_layers and isinstance(pattern, tuple) and "shortconv" in pattern
    has_lightning = cfg.mixer_layers and isinstance(pattern, tuple) and "lightning" in pattern
    has_kda = cfg.mixer_layers and isinstance(pattern, tuple) and "kda" in pattern
    has_rglru = cfg.mixer_layers and isinstance(pattern, tuple) and "rglru" in pattern
    has_mlstm = cfg.mixer_layers and isinstance(pattern, tuple) and "mlstm" in pattern
    for names, present, kind in ((MAMBA_SIZES, has_mamba, "a mamba layer"),
                                 (DELTANET_SIZES, has_deltanet or has_kda, "a deltanet or kda layer"),
                                 (MAMBA1_SIZES, has_mamba1, "a mamba1 layer"),
                                 (("ssm_state",), has_mamba or has_mamba1, "a mamba or mamba1 layer"),
                                 (LINEAR_SIZES, has_mamba or has_deltanet or has_lightning or has_kda or has_mlstm,
                                  "a mamba, deltanet, lightning, kda or mlstm layer"),
                                 (("lru_width",), has_rglru, "an rglru layer"),
                                 (("conv_kernel",), has_mamba or has_deltanet or has_mamba1 or has_conv or has_kda
                                  or has_rglru, "a mamba, deltanet, mamba1, shortconv, kda or rglru layer")):
        for name in names:
            if present:
                check_int(owner, name, getattr(cfg, name))
            elif getattr(cfg, name) is not None:
                raise ConfigError(f"{owner}: {name} applies only with mixer_layers and {kind}.")
    heads = cfg.mamba1_heads
    if heads != 1 and not (has_mamba1 and isinstance(heads, int) and not isinstance(heads, bool) and heads > 0
                           and isinstance(cfg.mamba1_inner, int) and cfg.mamba1_inner % heads == 0):
        raise ConfigError(f"{owner}: mamba1_heads ({show(heads)}) applies only with a mamba1 layer and must be a "
                          "positive divisor of mamba1_inner.")
    if cfg.deltanet_split_projections and not has_deltanet:
        raise ConfigError(f"{owner}: deltanet_split_projections applies only with mixer_layers and a deltanet layer.")
    if not cfg.mixer_layers:
        if cfg.post_norm_mixers:
            raise ConfigError(f"{owner}: post_norm_mixers applies only with mixer_layers.")
        check_shared_blocks(cfg, owner, ())
        return
    object.__setattr__(cfg, "layer_pattern", pattern)
    if (not isinstance(pattern, tuple) or len(pattern) != cfg.n_decoder_layers
            or any(kind not in MIXERS for kind in pattern)):
        raise ConfigError(f"{owner}: mixer_layers needs a layer_pattern giving one of {', '.join(MIXERS)} "
                          f"for each of the {cfg.n_decoder_layers} decoder layers.")
    if cfg.architecture != "decoder" or cfg.window_layers is not None or cfg.n_dense_layers:
        raise ConfigError(f"{owner}: mixer_layers is modelled for decoder-only models without window_layers "
                          "(a sliding_window slides every attention layer) or n_dense_layers (the pattern "
                          "says which layers have experts).")
    if has_rglru and cfg.lru_width % cfg.n_heads:
        raise ConfigError(f"{owner}: lru_width ({cfg.lru_width}) is not divisible by n_heads ({cfg.n_heads}), "
                          "the RG-LRU's gate blocks.")
    if ("moe" in pattern) != cfg.moe:
        raise ConfigError(f"{owner}: a layer_pattern with 'moe' layers needs n_experts, and n_experts "
                          "a 'moe' layer.")
    if has_mamba and cfg.mamba_heads % cfg.mamba_groups:
        raise ConfigError(f"{owner}: mamba_heads ({cfg.mamba_heads}) is not divisible by mamba_groups "
                          f"({cfg.mamba_groups}).")
    parallel = [i for i, kind in enumerate(pattern) if kind == "attention"]
    if cfg.parallel_attention and (cfg.parallel_norms != 1 or any(i == 0 or pattern[i - 1] != "mamba" for i in parallel)
                                   or pattern.count("mamba") != len(parallel)):
        raise ConfigError(f"{owner}: parallel_attention with mixer_layers (Falcon-H1) needs parallel_norms 1 and "
                          "each attention layer right after a mamba layer, as many of each.")
    if has_deltanet and cfg.deltanet_v_heads % cfg.deltanet_k_heads:
        raise ConfigError(f"{owner}: deltanet_v_heads ({cfg.deltanet_v_heads}) is not divisible by "
                          f"deltanet_k_heads ({cfg.deltanet_k_heads}).")
    check_post_norm_mixers(cfg, owner, pattern)
    check_shared_blocks(cfg, owner, pattern)


def check_shared_blocks(cfg, owner: str, pattern: tuple) -> None:
    """Zamba's shared blocks: shared_blocks held (at most the uses), each use followed by the
    mixer layer whose input its output joins; the adapters' rank where any (zamba2)."""
    uses = pattern.count("shared")
    check_bool(owner, "shared_attention_adapters", cfg.shared_attention_adapters)
    if not uses:
        if cfg.shared_blocks is not None or cfg.shared_adapter_rank is not None or cfg.shared_attention_adapters:
            raise ConfigError(f"{owner}: shared_blocks, shared_adapter_rank and shared_attention_adapters "
                              "apply only with mixer_layers and a 'shared' layer.")
        return
    check_int(owner, "shared_blocks", cfg.shared_blocks, maximum=uses)
    if cfg.shared_adapter_rank is not None:
        check_int(owner, "shared_adapter_rank", cfg.shared_adapter_rank)
    elif cfg.shared_attention_adapters:
        raise ConfigError(f"{owner}: shared_attention_adapters needs shared_adapter_rank.")
    if any(pattern[i + 1:i + 2] in ((), ("shared",), ("mlp",), ("moe",)) for i, m in enumerate(pattern) if m == "shared"):
        raise ConfigError(f"{owner}: each 'shared' layer must be followed by the mixer layer its output joins.")


def states_context(cfg: Any) -> bool:
    """Whether the model's context is bounded by the config's max_positions: a model with attention,
    unless every attention layer of a one-mixer-a-layer stack slides (RecurrentGemma's config
    states no context length; its recurrent blocks and local attention take any)."""
    return not (cfg.mixer_layers and ("attention" not in (cfg.layer_pattern or ()) or cfg.sliding_window is not None))


def check_post_norm_mixers(cfg, owner: str, pattern: tuple) -> None:
    """post_norm_mixers: mixers (not the FFNs) of the pattern, each of their layers followed by an
    "mlp" layer (the decoder layer's MLP, post-normed with it), in a pre-norm sequential model."""
    post = cfg.post_norm_mixers
    post = tuple(post) if isinstance(post, list) else post
    object.__setattr__(cfg, "post_norm_mixers", post)
    if not isinstance(post, tuple) or any(m not in MIXERS or m in ("mlp", "moe") for m in post):
        raise ConfigError(f"{owner}: post_norm_mixers must list mixers of the layer_pattern (not mlp or moe).")
    if post and (cfg.norm_position != "pre" or cfg.parallel_attention or cfg.post_sublayer_norm
                 or not cfg.input_norms or any(pattern[i + 1:i + 2] != ("mlp",)
                                               for i, m in enumerate(pattern) if m in post)):
        raise ConfigError(f"{owner}: post_norm_mixers needs pre-norm sequential layers and an mlp layer "
                          "after each of those mixers' layers.")


def rule_pattern(cfg) -> tuple[str, ...] | None:
    """The per-layer pattern that the counts imply when no config said which layers."""
    layers, windows = cfg.n_decoder_layers, cfg.n_window_layers
    # SmolLM3's rule for its default interval of 4: every fourth
    if cfg.nope_layers and (cfg.n_dense_layers or not cfg.nope_full_layers):
        every = layers // cfg.nope_layers
        nope = {i for i in range(layers) if (i + 1) % every == 0 and (i + 1) // every <= cfg.nope_layers}
        if cfg.n_dense_layers:  # Llama 4: experts every (layers // experts)-th from step - 1; dense
            step = layers // max(cfg.n_moe_layers, 1)  # the RoPE layers, those without experts first
            experts = {i for i in range(layers) if (i + 1) % step == 0}
            dense = set(sorted((i for i in range(layers) if i not in nope),
                               key=lambda i: (i in experts, i))[:cfg.n_dense_layers])
            return tuple("moe_nope" if i in nope else "dense" if i in dense else "moe"
                         for i in range(layers))
        return tuple("nope" if i in nope else "rope" for i in range(layers))
    if cfg.windows_on_experts:  # the dense layers first, then the full expert layers, the windowed last
        return tuple("dense" if i < cfg.n_dense_layers else "moe" if i >= layers - windows else "moe_full"
                     for i in range(layers))
    if cfg.n_dense_layers:
        return tuple("dense" if i < cfg.n_dense_layers else "moe" for i in range(layers))
    if not windows or windows == layers:
        return None
    if windows == (layers + 1) // 2:
        return tuple("sliding" if i % 2 == 0 else "full" for i in range(layers))
    return tuple("sliding" if i >= layers - windows else "full" for i in range(layers))

def check_mtp_pattern(cfg, owner: str) -> None:
    """A hybrid model's multi-token-prediction layer (mtp_pattern: its mixers, Megatron-Core's
    mtp_hybrid_override_pattern) is a tuple of MIXERS, given only beside mixer_layers."""
    pattern = cfg.mtp_pattern
    if pattern is None:
        if cfg.mtp_layers and cfg.mixer_layers:
            raise ConfigError(f"{owner}: multi-token prediction (mtp_layers) on a hybrid model needs its MTP "
                              "layer's mixers (mtp_hybrid_override_pattern in its config), which it does not give.")
        return
    pattern = tuple(pattern) if isinstance(pattern, list) else pattern
    object.__setattr__(cfg, "mtp_pattern", pattern)
    if not cfg.mixer_layers or not isinstance(pattern, tuple) or not pattern \
            or any(mixer not in MIXERS for mixer in pattern):
        raise ConfigError(f"{owner}: mtp_pattern lists a hybrid (mixer_layers) model's multi-token-prediction "
                          f"mixers, each one of {', '.join(MIXERS)}; got {pattern!r}.")


def check_layer_pattern(cfg, owner: str) -> None:
    _check_pattern(cfg, owner)
    check_kv_shared(cfg, owner)


def _check_pattern(cfg, owner: str) -> None:
    check_mixer_layers(cfg, owner)
    check_mtp_pattern(cfg, owner)
    if cfg.mixer_layers:
        return
    if cfg.hyper_streams:
        _check_compressed_pattern(cfg, owner)
        return
    if cfg.layer_pattern is None:
        object.__setattr__(cfg, "layer_pattern", rule_pattern(cfg))
        object.__setattr__(cfg, "_derived", cfg._derived | {"layer_pattern"})
        return
    pattern = cfg.layer_pattern
    if isinstance(pattern, list):
        pattern = tuple(pattern)
        object.__setattr__(cfg, "layer_pattern", pattern)
    kinds = (("moe_nope", "dense", "moe") if cfg.nope_layers and cfg.n_dense_layers  # Llama 4 Maverick
             else ("moe_full", "dense", "moe") if cfg.windows_on_experts  # MiMo-V2-Flash
             else ("dense", "moe") if cfg.n_dense_layers
             else ("nope", "rope") if cfg.nope_layers and not cfg.nope_full_layers
             else ("sliding", "full") if 0 < cfg.n_window_layers < cfg.n_decoder_layers else ())
    if not kinds:
        raise ConfigError(f"{owner}: layer_pattern applies only where layers differ (windows on "
                          "some layers, dense and expert layers, or RoPE on some layers).")
    if (not isinstance(pattern, tuple) or len(pattern) != cfg.n_decoder_layers
            or any(kind not in kinds for kind in pattern)):
        raise ConfigError(f"{owner}: layer_pattern must give one of {', '.join(kinds)} for each "
                          f"of the {cfg.n_decoder_layers} decoder layers.")
    counted = sum(kind == kinds[0] for kind in pattern)
    expected = cfg.nope_layers if kinds[0] == "moe_nope" else cfg.n_moe_layers - cfg.n_window_layers \
        if kinds[0] == "moe_full" else (
        cfg.n_dense_layers or (not cfg.nope_full_layers and cfg.nope_layers) or cfg.n_window_layers)
    if counted != expected:
        raise ConfigError(f"{owner}: layer_pattern has {counted} {kinds[0]} layers, the config "
                          f"{expected}.")
    if kinds[0] in ("moe_nope", "moe_full") and pattern.count("dense") != cfg.n_dense_layers:
        raise ConfigError(f"{owner}: layer_pattern has {pattern.count('dense')} dense layers, the config "
                          f"{cfg.n_dense_layers}.")


def _check_compressed_pattern(cfg, owner: str) -> None:
    """DeepSeek-V4's layers (layer_types): "sliding", "csa" or "hca" each, as many as its counts say;
    left out, the sliding ones first, then CSA, then HCA (its pipeline stages follow the order)."""
    counts = {"sliding": cfg.n_decoder_layers - cfg.csa_layers - cfg.hca_layers, "csa": cfg.csa_layers,
              "hca": cfg.hca_layers}
    pattern = cfg.layer_pattern
    if pattern is None:
        pattern = tuple(kind for kind, count in counts.items() for _ in range(max(count, 0)))
        object.__setattr__(cfg, "layer_pattern", pattern)
        object.__setattr__(cfg, "_derived", cfg._derived | {"layer_pattern"})
    if len(pattern) != cfg.n_decoder_layers or any(pattern.count(kind) != count for kind, count in counts.items()):
        raise ConfigError(f"{owner}: layer_pattern must give sliding, csa or hca for each of the "
                          f"{cfg.n_decoder_layers} decoder layers, as many of each as the config has.")


def kv_shared_counts(cfg) -> tuple[int, int]:
    """(sliding, full) among the last kv_shared_layers decoder layers (Gemma 4's num_kv_shared_layers)."""
    shared = range(cfg.n_decoder_layers - cfg.kv_shared_layers, cfg.n_decoder_layers)
    sliding = sum(cfg.layer_slides(i) for i in shared) if cfg.kv_shared_layers else 0
    return sliding, cfg.kv_shared_layers - sliding


def check_kv_shared(cfg, owner: str) -> None:
    """Layers reusing K/V: the last ones of a model with sliding and full layers, each kind with a
    layer of its own before them (whose K/V they reuse)."""
    check_int(owner, "kv_shared_layers", cfg.kv_shared_layers, minimum=0)
    if cfg.double_wide_shared and not cfg.kv_shared_layers:
        raise ConfigError(f"{owner}: double_wide_shared (the K/V-sharing layers' MLPs twice as wide) needs "
                          "kv_shared_layers.")
    if not cfg.kv_shared_layers:
        return
    if cfg.kv_shared_layers >= cfg.n_decoder_layers:  # before counting kinds over the last kv_shared_layers
        raise ConfigError(f"{owner}: kv_shared_layers ({cfg.kv_shared_layers}) must leave decoder layers of their "
                          f"own (of {cfg.n_decoder_layers}).")
    sliding, full = kv_shared_counts(cfg)
    if not 0 < cfg.n_window_layers < cfg.n_decoder_layers or sliding >= cfg.n_window_layers \
            or full >= cfg.n_decoder_layers - cfg.n_window_layers:
        raise ConfigError(f"{owner}: kv_shared_layers is modelled for models with sliding and full layers, each "
                          "kind with a layer of its own before the shared ones.")


def kv_shared_kinds(cfg, experts: bool) -> list[LayerKind]:
    """The kinds of layer of a model with kv_shared_layers: its own sliding and full layers, then the
    sliding and full ones reusing their kind's last own layer's K and V, where there are any."""
    from . import symbols as S  # here, not at the top: config.py imports this module, and a warm plan no sympy

    kinds = [LayerKind("sliding", S.L_w - S.L_ws, True, experts),
             LayerKind("full", S.L_dec - S.L_w - S.L_fs, False, experts)]
    shared = [LayerKind("sliding_shared", S.L_ws, True, experts, kv_shared=True),
              LayerKind("full_shared", S.L_fs, False, experts, kv_shared=True)]
    return kinds + [kind for kind, count in zip(shared, kv_shared_counts(cfg)) if count]


def layer_kind(cfg, index: int) -> str:
    """layer_pattern's kind of decoder layer `index`, "_shared" after it where it reuses K/V."""
    shared = index >= cfg.n_decoder_layers - cfg.kv_shared_layers
    return cfg.layer_pattern[index] + ("_shared" if cfg.kv_shared_layers and shared else "")

