"""What is being costed: ModelConfig (the architecture) and Workload (how it is run; defined in
workload.py and re-exported here, as are the choices spec.py defines).

Both are frozen dataclasses validated on construction; an invalid value raises ConfigError with a
sentence that names the field and what is wrong. Every Transformer family in the seeds is a
ModelConfig: the original encoder-decoder, GPT-2 and Llama decoders, BERT encoders, T5."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .checkpoint import check_stored
from .config_checks import check_experts, check_latent_attention, check_newer_fields, check_nope_layers
from .layer_pattern import MIXERS, check_kv_shared, check_layer_pattern, kv_shared_counts, layer_kind
from .errors import MAX_SIZE, ConfigError, show, unknown_field  # noqa: F401 (re-exported: costmodel.config.ConfigError, show)
from .errors import check_bool, check_choice, check_int, check_number, require_decoder  # noqa: F401 (re-exported)
# The workload's choices and dtypes (spec.py) and Workload, re-exported where they always were.
from .spec import (ATTENTIONS, CANONICAL_DTYPE, DTYPE_BYTES, DTYPES, IMPLEMENTATIONS,  # noqa: F401
                   KV_CACHES, OPTIMIZERS, PRECISIONS, RECOMPUTES)
from .workload import NOT_IN_REFERENCE, Workload, reference_unsupported  # noqa: F401
# The architecture choices a ModelConfig field takes (model_choices.py), re-exported.
from .model_choices import (ACTIVATIONS, GATED_ACTIVATIONS, HEADS, NORM_POSITIONS, NORMS,  # noqa: F401
                            POSITIONS, ROUTERS)

#: The ModelConfig fields a layer_pattern must agree with.
_PATTERN_COUNTS = ("n_decoder_layers", "sliding_window", "window_layers", "n_experts", "n_dense_layers", "nope_layers",
                   "csa_layers", "hca_layers")


@dataclass(frozen=True)
class ModelConfig:
    """A Transformer architecture, enough to count its parameters, FLOPs and bytes exactly. A decoder-only
    model has n_encoder_layers == 0, an encoder-only model n_decoder_layers == 0, and an encoder-decoder
    has both. Optional fields left as None are derived in __post_init__ (n_kv_heads = n_heads, d_head =
    d_model // n_heads)."""

    name: str
    vocab_size: int
    d_model: int
    n_heads: int
    d_ff: int
    n_encoder_layers: int = 0
    n_decoder_layers: int = 0
    n_kv_heads: int | None = None
    d_head: int | None = None
    max_positions: int = 2048
    position: str = "learned"
    relative_buckets: int = 32  # used only by position == "relative"
    norm: str = "layernorm"
    norm_position: str = "pre"
    norm_bias: bool = True  # a LayerNorm's bias (False: weight only, MPT's); RMSNorm has none
    embedding_norm: bool = False  # a norm right after the embeddings (BERT)
    activation: str = "gelu"
    qkv_bias: bool = True
    out_bias: bool = True  # the attention output projection's bias
    ffn_bias: bool = True
    lm_head_bias: bool = False
    last_out_bias: bool = False  # a d-wide bias added to the last layer's attention output (GPT-NeoX-Japanese)
    idle_cross_layers: int = 0  # Mllama's cross-attention layers: held, skipped on text alone (blocks/idle.py)
    embedding_extra_rows: int = 0  # token-table rows past vocab_size (Mllama's 8 image tokens; the head has V)
    head: str = "lm"  # lm: logits over the vocabulary; pooler: BERT's CLS pooler; none
    tie_embeddings: bool = True  # the output projection reuses the (decoder) input embedding
    share_embeddings: bool = True  # encoder-decoder: one table for source and target tokens
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(d_model) (Vaswani et al.)
    token_types: int = 0  # BERT's segment embeddings (type_vocab_size)
    dropout: float = 0.0  # training-time dropout probability (keeps masks for backward)
    # Dropout on the attention probabilities where not `dropout` (OPT: 0.1 on the outputs, 0.0 here); None: the same.
    attention_dropout: float | None = None
    attention_scale: float | None = None  # scores' multiplier: None 1/sqrt(d_head); 1.0 none (T5 folds it into init)
    scale_lm_head_input: bool = False  # the decoder output scaled before the head (T5: d**-0.5; MiniCPM3)
    # Attend to at most this many previous tokens (Mistral v0.1, Phi-3, Gemma 2's local layers) in window_layers of the
    # decoder layers (None: all). Eager still computes every score; the cache is Hugging Face's (blocks/attention.py).
    sliding_window: int | None = None
    window_layers: int | None = None
    qk_norm: bool = False  # a norm (`norm`'s kind) over each query and key head before RoPE (Qwen3)
    post_sublayer_norm: bool = False  # a norm on each sublayer's output before its residual add (Gemma 2)
    # False: no norm before each sublayer, only post_sublayer_norm's after it (OLMo 2); the
    # sublayer's linears keep its input, the residual stream
    input_norms: bool = True
    # the query and key norms (qk_norm) each span the whole projection, h d_h and h_kv d_h wide,
    # with a weight that wide (OLMo 2), not one head (Qwen3)
    qk_norm_whole: bool = False
    norm_affine: bool = True  # False: norms with no weight or bias (OLMo 1's LayerNorm), no parameters
    # clamp the q, k and v projections in place to [-clip_qkv, clip_qkv] (OLMo 1.7, OLMoE): autograd
    # keeps a copy of each unclamped projection
    clip_qkv: float | None = None
    moe_input_noise: float | None = None  # training: the MoE input *= U(1 - x, 1 + x) in place (PhiMoE, DBRX)
    attention_softcap: float | None = None  # scores -> cap * tanh(scores / cap) (Gemma 2)
    logit_softcap: float | None = None  # logits -> cap * tanh(logits / cap) (Gemma 2)
    # Granite's scalar multipliers, each one pointwise op by a Python number that keeps nothing for
    # backward (None: no op): the token embeddings times embedding_multiplier, each sublayer's
    # output times residual_multiplier before its residual add, the logits over logits_scaling.
    embedding_multiplier: float | None = None
    residual_multiplier: float | None = None
    logits_scaling: float | None = None
    rotary_dim: int | None = None  # RoPE rotates this many of each head's dimensions (None: d_head)
    # RoPE cos/sin sets a stack builds where each kind of attention layer has its own
    # (facts.rotary_tables_per_layer_type): Gemma 3 one per kind in layer_types, a window or not.
    # None: one per kind the window makes (2 where some layers slide, else 1).
    rotary_sets: int | None = None
    # Attention and FFN both read the layer input and add their outputs to it together (GPT-NeoX,
    # Falcon); parallel_norms: one norm per branch (2) or one norm feeding both (1, Falcon-7B).
    parallel_attention: bool = False
    parallel_norms: int = 2
    position_offset: int = 0  # extra rows of a position table (OPT, XGLM look up position + 2)
    # The token embeddings' width when it is not d_model: projected in to d_model after the lookup
    # and out again before the head, which is this wide (OPT-350m's word_embed_proj_dim).
    embedding_dim: int | None = None
    # Mixture of experts: every token goes to top_k of n_experts routed experts (gated FFNs of width d_expert, default
    # d_ff) chosen by a router ("softmax": Mixtral, Qwen2-MoE; "sigmoid": DeepSeek-V3's sigmoid scores with
    # group-limited top-k), plus a shared expert of width d_shared (0: none), gated by a sigmoid of d -> 1 in Qwen2-MoE.
    # n_dense_layers of the decoder layers keep a dense FFN of d_ff instead (DeepSeek-V3's first three).
    n_experts: int = 0
    top_k: int = 0
    d_expert: int | None = None
    d_shared: int = 0
    shared_expert_gate: bool = False
    moe_output_norm: bool = False  # an RMSNorm on the experts' sum, expert layers only (A.X K1's post_mlp_layernorm)
    zero_experts: int = 0  # LongCat-Flash's zero-compute (identity) experts beside the E routed (symbols.Z)
    n_dense_layers: int = 0
    router: str = "softmax"
    renormalize_top_k: bool = True  # the top-k routing weights are divided by their sum
    router_bias: bool = False  # the router's d -> E linear has a bias of E (gpt-oss)
    expert_bias: bool = False  # each routed expert's gate_up and down projections have biases (gpt-oss)
    moe_output_bias: bool = False  # a d-wide bias on the experts' sum (JetMoE's JetMoeMoE.bias)
    attention_experts: bool = False  # JetMoE's mixture of attention heads (blocks/attention_experts.py)
    # Group-limited routing (DeepSeek-V3's n_group and topk_group, Megatron-Core's moe_router_num_groups
    # and moe_router_group_topk): expert_groups groups of consecutive experts, each token's top_k from its
    # best expert_groups_per_token; it decides only how many nodes a token's experts span (flex_copies).
    expert_groups: int = 1
    expert_groups_per_token: int = 1
    d_latent: int | None = None  # routed experts in d -> d_latent -> d; router, shared expert read d (Nemotron 3 Super)
    # gpt-oss's clamped SwiGLU in the routed experts, both set or neither (None: plain SwiGLU):
    # gate clamped above at swiglu_limit, up clamped to [-limit, limit], then
    # (up + 1) * gate * sigmoid(swiglu_alpha * gate).
    swiglu_limit: float | None = None
    swiglu_alpha: float | None = None
    # A learned logit per query head that joins each softmax row as one more key with no value
    # (gpt-oss's attention sinks; h parameters a layer).
    attention_sinks: bool = False
    sinks_windowed_only: bool = False  # the sinks on the sliding-window layers only (MiMo-V2-Flash)
    value_scale: bool = False  # the values times a constant before the cache (MiMo's attention_value_scale)
    # Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank is set: keys and values come up
    # from a cached latent of kv_lora_rank plus one shared RoPE key of rotary_dim; queries from a
    # latent of q_lora_rank (None: a direct projection); d_head is the query/key width (the part
    # without RoPE plus rotary_dim), v_head_dim the value width. Without MLA, v_head_dim (where
    # set) is the width of each value head beside d_head-wide queries and keys (MiMo-V2-Flash).
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    v_head_dim: int | None = None
    index_n_heads: int | None = None  # DeepSeek-V3.2's lightning indexer (blocks/indexer.py): its heads,
    index_head_dim: int | None = None  # its head width
    per_layer_input: int | None = None  # Gemma 4's per-layer input width p (blocks/per_layer.py; None: none)
    per_layer_vocab: int | None = None  # V_pl, vocab_size_per_layer_input (with per_layer_input)
    global_head_dim: int | None = None  # the full (unwindowed) layers' head width where not d_head (Gemma 4)
    global_kv_heads: int | None = None  # their KV heads where not n_kv_heads (Gemma 4's num_global_key_value_heads)
    keys_as_values: bool = False  # Gemma 4's attention_k_eq_v: the full layers' values are their keys' projection
    kv_shared_layers: int = 0  # Gemma 4's num_kv_shared_layers: the last ones reuse their kind's last own K/V
    double_wide_shared: bool = False  # Gemma 4's use_double_wide_mlp: those layers' MLPs are 2 d_ff wide
    altup_inputs: int | None = None  # Gemma 3n's AltUp streams A (blocks/altup.py; None: none)
    laurel_rank: int | None = None  # Gemma 3n's LAuReL rank r (with altup_inputs)
    # BitNet's sub-norms: attn_sub_norm on the attention's output before o_proj, ffn_sub_norm on the
    # gate's product before down_proj (the model's norm kind, each its own leaf)
    sub_norms: bool = False
    # DiffLlama's differential attention (blocks/differential.py): two softmax maps over the two halves
    # of the value heads, subtracted with a learned lambda (4 d_h-vectors a layer), an RMSNorm of 2 d_h
    differential_attention: bool = False
    # Doge: a dynamic mask learned from the values added to the scores (blocks/dynamic_mask.py), and
    # the residual stream times a learned d-vector before each residual add (blocks/norms.Residual)
    dynamic_mask: bool = False
    residual_scales: bool = False
    # Multi-token prediction while training (DeepSeek-V3 2.2; set by `--mtp`, never from a config.json): mtp_layers
    # depths (leaves.multi_token_prediction; a hybrid's mixers: mtp_pattern); mtp_repeated_layer: one set of
    # weights run at every depth (Megatron-Core's mtp_use_repeated_layer).
    mtp_layers: int = 0
    mtp_pattern: tuple[str, ...] | None = None
    mtp_repeated_layer: bool = False
    # Decoder layers whose attention applies no RoPE to queries and keys (SmolLM3's NoPE layers,
    # every no_rope_layer_interval-th); layer_pattern says which ("rope" or "nope"), or, where
    # they are exactly the layers without a window (EXAONE 4), "sliding" or "full".
    nope_layers: int = 0
    # Llama 4: a weightless L2 norm on each query and key head after RoPE, RoPE layers only (use_qk_norm);
    # the NoPE layers' queries times a per-position scale (attn_temperature_tuning); the window a chunk,
    # query i attends keys floor(i / w) w .. i (attention_chunk_size; caches, eager scores: a window's).
    qk_l2_norm: bool = False
    nope_temperature: bool = False
    chunked_window: bool = False
    rope_query_scale: bool = False  # Ministral 3: every RoPE layer's queries times a per-position scale
    # GPT-2's reorder_and_upcast_attn: transformers' eager attention as an fp32 baddbmm (sdpa ignores it);
    # not modelled under hf eager, where it is refused (leaves.py)
    upcast_attention: bool = False
    # Layers of one mixer each after its own norm and residual add (nemotron_h; layer_pattern.MIXERS);
    # parallel_attention: each attention beside the mamba before it, off its norm (Falcon-H1). Mamba-2's
    # sizes, in/out projections' bias (use_bias; out_proj's mamba_out_bias where not None), conv's bias,
    # gated RMSNorm (mamba_gated_norm False: y * silu(z) instead): costmodel/blocks/mamba.py.
    mixer_layers: bool = False
    mamba_heads: int | None = None
    mamba_head_dim: int | None = None
    ssm_state: int | None = None
    mamba_groups: int | None = None
    conv_kernel: int | None = None
    chunk_size: int | None = None
    mamba_bias: bool = False
    mamba_out_bias: bool | None = None
    mamba_gated_norm: bool = True
    conv_bias: bool = True
    # Gated DeltaNet key/value heads and widths (conv_kernel, chunk_size too; blocks/deltanet.py);
    # attention_output_gate: q_proj doubled, a sigmoid gate on the output (Qwen3NextAttention).
    deltanet_k_heads: int | None = None
    deltanet_v_heads: int | None = None
    deltanet_k_dim: int | None = None
    deltanet_v_dim: int | None = None
    # True: OlmoHybridGatedDeltaNet's separate q, k, v, a, b, g projections (their q, k, v
    # concatenated before the conv), else Qwen3-Next's fused in_proj_qkvz and in_proj_ba.
    deltanet_split_projections: bool = False
    # Mixers whose layers have OLMo 2's norms: one after the mixer and the MLP, none before (OlmoHybrid's attention)
    post_norm_mixers: tuple[str, ...] = ()
    attention_output_gate: bool = False
    mamba1_inner: int | None = None  # Mamba-1 mixers (blocks/mamba1.py): inner width, dt's rank, dt/B/C norms,
    dt_rank: int | None = None  # and heads (zamba's n_mamba_heads: x_proj and dt_proj a head, as bmm)
    mamba1_norms: str = "none"
    mamba1_heads: int = 1
    lru_width: int | None = None  # Griffin's RG-LRU recurrent blocks (blocks/rglru.py): their width
    # Zamba's "shared" layers (costmodel/shared_block.py): shared_blocks blocks held, run in turn; zamba2's
    # per-use LoRA adapters of shared_adapter_rank on the MLP (and q, k, v: shared_attention_adapters)
    shared_blocks: int | None = None
    shared_adapter_rank: int | None = None
    shared_attention_adapters: bool = False
    # DeepSeek-V4 (transformers' deepseek_v4; blocks/deepseek_v4.py), all set or none: hyper_streams
    # residual streams (hc_mult) mixed by a hyper-connection before each sublayer and one before the
    # final norm; the attention's output through output_groups groups of output_rank (o_groups,
    # o_lora_rank) then d; csa_layers of the decoder layers compress every csa_rate tokens into one
    # overlapping entry scored by an indexer (index_n_heads x index_head_dim), hca_layers every
    # hca_rate tokens; every layer's keys (one head, the values too) slide in sliding_window.
    hyper_streams: int | None = None
    output_groups: int | None = None
    output_rank: int | None = None
    csa_layers: int = 0
    hca_layers: int = 0
    csa_rate: int | None = None
    hca_rate: int | None = None
    family: str = "custom"  # whose code runs it (the facts table's key): llama, gpt2, bert, t5...
    # The kind of each decoder layer where the layers differ (costmodel/layer_pattern.py; None: all
    # alike), from the config.json or, left out, from the counts (layer_pattern.rule_pattern). Pipeline
    # stages (layout/rank.py) and the inverse mapping (validate/hf_config_dict.py) read it.
    layer_pattern: tuple[str, ...] | None = None
    # The format the released checkpoint stores its weights in (checkpoint.py): inference's default;
    # not the architecture, so equality (and hf_config's round trip) leave it out.
    checkpoint_weights: tuple | None = dataclasses.field(default=None, compare=False)
    # Which of n_kv_heads / d_head were derived rather than given (replace() derives them again).
    _derived: frozenset = dataclasses.field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = f"model {show(self.name)}" if isinstance(self.name, str) and self.name else "model"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError("model: name must be a non-empty string.")
        for name in ("layer_pattern", "mtp_pattern", "post_norm_mixers"):  # a JSON list, frozen (hashable)
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_positions"):
            check_int(owner, name, getattr(self, name))
        for name in ("n_encoder_layers", "n_decoder_layers", "token_types"):
            check_int(owner, name, getattr(self, name), minimum=0)
        if self.n_encoder_layers == 0 and self.n_decoder_layers == 0:
            raise ConfigError(f"{owner}: needs at least one encoder or decoder layer.")
        derived = set()
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
            derived.add("n_kv_heads")
        check_int(owner, "n_kv_heads", self.n_kv_heads)
        if self.n_heads % self.n_kv_heads:
            raise ConfigError(f"{owner}: n_heads ({self.n_heads}) is not divisible by n_kv_heads ({self.n_kv_heads}).")
        if self.d_head is None:
            if self.d_model % self.n_heads:
                raise ConfigError(f"{owner}: d_model ({self.d_model}) is not divisible by n_heads "
                                  f"({self.n_heads}) and no head dimension is given.")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
            derived.add("d_head")
        if self.d_expert is None:
            object.__setattr__(self, "d_expert", self.d_ff)
            derived.add("d_expert")
        object.__setattr__(self, "_derived", frozenset(derived))
        check_int(owner, "d_head", self.d_head)
        check_choice(owner, "position", self.position, POSITIONS)
        check_int(owner, "relative_buckets", self.relative_buckets)
        check_choice(owner, "norm", self.norm, NORMS)
        check_choice(owner, "norm_position", self.norm_position, NORM_POSITIONS)
        check_choice(owner, "activation", self.activation, ACTIVATIONS)
        check_choice(owner, "head", self.head, HEADS)
        for name in ("embedding_norm", "norm_bias", "qkv_bias", "out_bias", "ffn_bias", "lm_head_bias", "last_out_bias",
                     "tie_embeddings", "share_embeddings", "scale_embeddings", "scale_lm_head_input",
                     "attention_output_gate", "keys_as_values", "double_wide_shared"):
            check_bool(owner, name, getattr(self, name))
        check_number(owner, "attention_scale", self.attention_scale)
        check_newer_fields(self, owner)
        check_experts(self, owner, d_expert_given="d_expert" not in derived)
        check_latent_attention(self, owner)
        check_nope_layers(self, owner)
        check_layer_pattern(self, owner)
        object.__setattr__(self, "checkpoint_weights", check_stored(owner, self.checkpoint_weights))
        if not isinstance(self.family, str) or not self.family:
            raise ConfigError(f"{owner}: family must be a non-empty string, got {show(self.family)}.")
        for name in ("dropout", "attention_dropout"):
            p = getattr(self, name)
            if name == "attention_dropout" and p is None:
                continue
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
                raise ConfigError(f"{owner}: {name} must be a number in [0, 1), got {show(p)}.")
        if self.rope and (self.rotary_dim or self.d_head) % 2:
            raise ConfigError(f"{owner}: RoPE needs an even head dimension, got {self.d_head}.")
        if self.rotary_dim is not None and not self.rope:
            raise ConfigError(f"{owner}: rotary_dim applies only to RoPE.")

    @property
    def nope_full_layers(self) -> bool:
        """The NoPE layers are exactly the layers without a window (EXAONE 4: RoPE on its
        sliding-window layers only; Llama 4: chunks on its RoPE layers); layer_pattern then says
        "sliding" or "full", or, beside dense layers (Maverick), "dense", "moe" or "moe_nope"."""
        windows = self.n_window_layers
        return bool(self.nope_layers) and 0 < windows < self.n_decoder_layers \
            and self.nope_layers == self.n_decoder_layers - windows

    @property
    def windows_on_experts(self) -> bool:
        """Windows on (some or all) expert layers only, beside dense layers that are all full (MiMo-V2-Flash:
        layer 0 dense and full); layer_pattern then says "dense", "moe" (an expert layer with a
        window) or "moe_full" (an expert layer without one)."""
        windows = self.n_window_layers
        return bool(self.n_dense_layers) and not self.nope_layers and 0 < windows <= self.n_moe_layers

    # Derived facts, computed from the fields so they can never disagree with them.
    @property
    def architecture(self) -> str:
        if self.n_encoder_layers and self.n_decoder_layers:
            return "encoder-decoder"
        return "decoder" if self.n_decoder_layers else "encoder"

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    @property
    def rope(self) -> bool:
        return self.position == "rope"

    @property
    def scaled_scores(self) -> bool:
        """Whether the scores are multiplied by a scale (a scale of exactly 1 is no op)."""
        return self.attention_scale != 1.0

    @property
    def scores_scale(self) -> float | None:
        """The multiplier the scores get, or None when they get none."""
        if not self.scaled_scores:
            return None
        return self.d_head**-0.5 if self.attention_scale is None else float(self.attention_scale)

    @property
    def has_kv_cache(self) -> bool:
        return self.n_decoder_layers > 0

    @property
    def n_layers(self) -> int:
        return self.n_encoder_layers + self.n_decoder_layers

    @property
    def pipeline_unit(self) -> int:
        """Tree layers per decoder layer of the model's code, the smallest piece a pipeline stage
        holds: 3 for Falcon-H1 (its mamba, parallel attention and MLP entries are one
        FalconH1DecoderLayer: hf_falcon_h1.py), else 1."""
        if self.parallel_attention and self.mixer_layers and self.layer_pattern:
            mixers = self.layer_pattern.count("mamba")
            if mixers and len(self.layer_pattern) % mixers == 0:
                return len(self.layer_pattern) // mixers
        return 1

    @property
    def pipeline_layers(self) -> int:
        """The layers a pipeline splits, as the model's code counts them (num_hidden_layers)."""
        return self.n_layers // self.pipeline_unit

    @property
    def partial_rotary(self) -> bool:
        """RoPE rotates only rotary_dim of each head's dimensions (GPT-NeoX, Phi-4-mini, MLA)."""
        return self.rotary_dim is not None and self.rotary_dim != self.d_head

    @property
    def projected_embeddings(self) -> bool:
        """Token embeddings of another width, projected in and out (OPT-350m)."""
        return self.embedding_dim is not None and self.embedding_dim != self.d_model

    @property
    def moe(self) -> bool:
        return self.n_experts > 0

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (kv_lora_rank set)."""
        return self.kv_lora_rank is not None

    @property
    def n_window_layers(self) -> int:
        """Decoder layers with a sliding window."""
        if self.sliding_window is None:
            return 0
        return (self.n_mixer_layers("attention") if self.mixer_layers  # all slide (recurrent_gemma)
                else self.n_decoder_layers if self.window_layers is None else self.window_layers)

    def layer_kind_at(self, stack: str, index: int) -> str | None:
        """The kind label (costmodel/layer_kinds.py's layer_kinds) of layer `index` (from
        0) of a stack, for placing layers on pipeline stages: layer_pattern's."""
        if stack != "decoder" or self.layer_pattern is None:
            return None
        return layer_kind(self, index)

    def layer_slides(self, index: int) -> bool:
        """Whether decoder layer `index` attends within the sliding window."""
        if self.layer_pattern is not None and self.layer_pattern[index] in ("sliding", "full"):
            return self.layer_pattern[index] == "sliding"
        if self.windows_on_experts:
            return self.layer_pattern[index] == "moe"
        if self.nope_full_layers:
            return self.layer_pattern is None or not self.layer_pattern[index].endswith("nope")
        return self.n_window_layers > 0

    @property
    def n_moe_layers(self) -> int:
        if self.mixer_layers:
            return self.layer_pattern.count("moe")
        return self.n_decoder_layers - self.n_dense_layers if self.moe else 0

    def n_mixer_layers(self, mixer: str) -> int:  # layers whose one mixer is `mixer` (0 unless mixer_layers)
        return self.layer_pattern.count(mixer) if self.mixer_layers else 0

    def dimensions(self) -> dict[str, int]:
        """The values of the model dimensions' symbols (costmodel/symbols.py), by symbol name.
        Absent parts count as one (a symbol must be positive; no leaf uses it then)."""
        return {
            "d": self.d_model, "h": self.n_heads, "h_kv": self.n_kv_heads, "d_h": self.d_head,
            "d_ff": self.d_ff, "V": self.vocab_size, "P": self.max_positions,
            "N_tt": max(self.token_types, 1), "N_rb": self.relative_buckets,
            "L_enc": max(self.n_encoder_layers, 1), "L_dec": max(self.n_decoder_layers, 1),
            "d_r": self.rotary_dim or self.d_head, "d_e": self.embedding_dim or self.d_model,
            "w": self.sliding_window or 1, "L_w": max(self.n_window_layers, 1),
            "E": max(self.n_experts, 1), "k": max(self.top_k, 1), "d_x": self.d_expert,
            "d_s": max(self.d_shared, 1), "d_l": self.d_latent or 1, "L_moe": max(self.n_moe_layers, 1),
            "Z": max(self.zero_experts, 1),
            "L_np": max(self.nope_layers, 1), "r_q": self.q_lora_rank or 1, "r_kv": self.kv_lora_rank or 1,
            "d_v": self.v_head_dim or self.d_head, "h_i": self.index_n_heads or 1, "d_i": self.index_head_dim or 1,
            "p_l": self.per_layer_input or 1, "V_pl": self.per_layer_vocab or 1, "d_hg": self.global_head_dim or 1,
            "A_u": self.altup_inputs or 1, "r_la": self.laurel_rank or 1,
            "H_c": self.hyper_streams or 1, "g_o": self.output_groups or 1, "r_o": self.output_rank or 1,
            "m_c": self.csa_rate or 1, "m_h": self.hca_rate or 1,
            "L_cs": max(self.csa_layers, 1), "L_hc": max(self.hca_layers, 1),
            **dict(zip(("L_ws", "L_fs"), (max(count, 1) for count in kv_shared_counts(self)))),
            **{symbol: max(self.n_mixer_layers(mixer), 1) for symbol, mixer in zip(
               ("L_m", "L_a", "L_f", "L_g", "L_m1", "L_sc", "L_la", "L_kd", "L_rg", "L_rt", "L_rc", "L_ml", "L_sh"), ("mamba",
                "attention", "mlp", "deltanet", "mamba1", "shortconv", "lightning", "kda", "rglru", "rwkv_time",
                "rwkv_channel", "mlstm", "shared"))},
            **{symbol: getattr(self, name) or 1 for symbol, name in
               (("H_m", "mamba_heads"), ("P_m", "mamba_head_dim"), ("N_m", "ssm_state"), ("h_kvg", "global_kv_heads"),
                ("G_m", "mamba_groups"), ("K_m", "conv_kernel"), ("Q_m", "chunk_size"), ("H_gk", "deltanet_k_heads"),
                ("H_gv", "deltanet_v_heads"), ("P_gk", "deltanet_k_dim"), ("P_gv", "deltanet_v_dim"),
                ("D_m1", "mamba1_inner"), ("R_m1", "dt_rank"), ("D_rg", "lru_width"), ("B_sh", "shared_blocks"),
                ("r_sh", "shared_adapter_rank"))},
        }

    #: Fields that only give a dimension symbol its value (see dimensions()); every other field
    #: shapes the cost tree itself (structure() keeps whether the optional ones are set).
    DIMENSION_FIELDS = ("name", "vocab_size", "d_model", "n_heads", "n_kv_heads", "d_head", "d_ff",
                        "max_positions", "relative_buckets", "rotary_dim", "embedding_dim",
                        "sliding_window", "window_layers", "n_experts", "top_k", "d_expert",
                        "d_shared", "d_latent", "n_dense_layers", "kv_lora_rank", "q_lora_rank", "v_head_dim",
                        "index_n_heads", "index_head_dim", "nope_layers", "layer_pattern", "mamba_heads",
                        "mamba_head_dim", "ssm_state", "mamba_groups", "conv_kernel", "chunk_size", "mamba1_inner",
                        "deltanet_k_heads", "deltanet_v_heads", "deltanet_k_dim", "deltanet_v_dim", "dt_rank",
                        "per_layer_input", "per_layer_vocab", "global_head_dim", "global_kv_heads", "lru_width",
                        "altup_inputs", "laurel_rank", "output_groups", "output_rank", "csa_layers",
                        "hca_layers", "csa_rate", "hca_rate", "zero_experts", "shared_blocks", "shared_adapter_rank")

    def structure(self) -> dict[str, Any]:
        """What the cost tree's expressions depend on besides the dimensions' values: every
        field but the sizes, and of the counts only whether they are zero."""
        data = {k: v for k, v in self.to_dict().items() if k not in self.DIMENSION_FIELDS}
        data.pop("checkpoint_weights")  # inference's default format (the workload's), not the tree's
        for name in ("n_encoder_layers", "n_decoder_layers", "token_types"):
            data[name] = data[name] > 0
        data["dropout"] = data["dropout"] > 0
        if data["attention_dropout"] is not None:
            data["attention_dropout"] = data["attention_dropout"] > 0
        windowed = self.n_window_layers
        data["layers"] = {
            "partial_rotary": self.partial_rotary, "projected_embeddings": self.projected_embeddings,
            "windows": "none" if not windowed else "all" if windowed == self.n_decoder_layers else "some",
            "moe": self.moe, "dense_layers": self.n_dense_layers > 0, "shared_expert": self.d_shared > 0,
            "latent_experts": self.d_latent is not None, "indexer": self.index_n_heads is not None,
            "per_layer_inputs": self.per_layer_input is not None, "altup": self.altup_inputs is not None,
            "compressed": (self.csa_layers > 0, self.hca_layers > 0,
                           self.n_decoder_layers > self.csa_layers + self.hca_layers),
            "global_heads": self.global_head_dim is not None, "windows_on_experts": self.windows_on_experts and (
                "all" if self.n_window_layers == self.n_moe_layers else "some"),
            "kv_shared": tuple(n > 0 for n in kv_shared_counts(self)), "global_kv": self.global_kv_heads is not None,
            "value_width_differs": self.v_head_dim is not None and self.v_head_dim != self.d_head,  # kernels._sdpa: math
            "mla": self.mla, "q_lora": self.q_lora_rank is not None, "nope": self.nope_layers > 0, "zero": self.zero_experts > 0,
            "mixers": tuple(m for m in MIXERS if self.n_mixer_layers(m)),
        }
        return data

    def replace(self, **changes: Any) -> "ModelConfig":
        """A copy with some fields changed (validated again); derived fields are derived again,
        and so is a given layer_pattern when a count it depends on changes."""
        for name in self._derived:
            changes.setdefault(name, None)
        if any(name in changes for name in _PATTERN_COUNTS):
            changes.setdefault("layer_pattern", None)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as given (derived ones as None), ready for from_dict or JSON."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        for name in self._derived:
            data[name] = None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> "ModelConfig":
        """Build from a dict of field names (the project's own preset format)."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:  # its 100-odd fields not listed
            raise ConfigError(f"{source}: {unknown_field(unknown[0], known, list_known=False)}.")
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.name not in data]
        if missing:
            raise ConfigError(f"{source}: missing field {missing[0]!r}.")
        return cls(**data)
