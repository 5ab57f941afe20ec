"""How a ModelConfig's blocks are placed as the cost tree's leaves (costmodel/leaf.py: a block
where it runs, how many times). TreeBuilder walks a ModelConfig stack by stack, layer by layer (each
kind of layer once: costmodel/layer_kinds.py), in the order the code registers its parameters: the
embeddings, each layer's sublayers (self_attention, cross_attention, ffn, Gemma 4's
per_layer_input, a hybrid model's one mixer), a stack's own blocks, the head, the loss and the
multi-token-prediction depths; a decode step through the decoder only. An attention sublayer's
leaves are costmodel/attention_leaves.py's."""

from __future__ import annotations

import dataclasses

import sympy as sp

from . import blocks as B
from . import op_checkpoint
from .attention_leaves import AttentionLeaves
from . import symbols as S
from .config import ConfigError, ModelConfig
from .layer_kinds import V4_CSA, V4_HCA, layer_kinds
from .layer_pattern import LayerKind
from .leaf import ONE, Leaves, Place
from .shared_block import shared_layer
from .spec import RECOMPUTED_LAYERS
from .terms import ZERO



def require_chunks(cfg: ModelConfig) -> None:
    """Refuse a model whose prefill chunk against a cache (the serving engines' step) is not
    modelled: DeepSeek-V4's compressed attention. serve refuses it building its replica, and the
    capacity search before its configurations (else each read "not feasible" and it exited 1)."""
    if cfg.hyper_streams:
        raise ConfigError(f"model {cfg.name!r}: a prefill chunk against a cache (serving) is not "
                          "modelled for DeepSeek-V4's compressed attention.")

class TreeBuilder(AttentionLeaves):
    """Builds the leaves of one config; each method returns the leaves of one part of the model."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile, phase: str):
        self.cfg = cfg
        self.profile = profile
        self.phase = phase
        # "chunk" (serving): a decode step whose sequences each run n new tokens against c keys
        self.decode = phase in ("decode", "chunk")
        self.step_len = S.n if phase == "chunk" else ONE
        self.dropout_sites = profile.dropout_sites()  # where dropout runs (see Profile)

    @property
    def norm_adds_residual(self) -> bool:
        """Each pre-norm runs the dropout and residual add before it in its own kernel (facts.dropout_add_norm,
        flash_attn's Block: dropout -> add -> LayerNorm), where the layer is a plain pre-norm one (no parallel
        attention, no norm after the sublayer, no residual multiplier)."""
        cfg = self.cfg
        return (self.profile.facts.dropout_add_norm != "none" and cfg.norm_position == "pre"
                and not cfg.parallel_attention and not cfg.post_sublayer_norm and cfg.residual_multiplier is None
                and not cfg.residual_scales)

    def dropout(self, at: Place, tokens: sp.Expr, site: str, name: str = "dropout") -> Leaves:
        """Dropout where the profile runs it: `site` or, for a sublayer's output, "sublayer" (both)."""
        sites = (site, "sublayer") if site.endswith("_output") else (site,)
        if not set(sites) & set(self.dropout_sites):
            return []
        # flash_attn's Block drops the embeddings and each sublayer's output in the next norm's kernel
        in_norm = self.norm_adds_residual and (site == "embedding" or site.endswith("_output"))
        return [at.leaf(name, B.Dropout(tokens, S.d, self.profile, in_norm=in_norm))]

    def norms(self, at: Place, tokens: sp.Expr, sublayer: str = "attention",
              experts: bool = False, output_kept: bool = True) -> tuple[Leaves, Leaves]:
        """The sublayer's norm before (pre-LN) or after (post-LN) it; Gemma 2 has both, the one
        after on the sublayer's output before the residual add (only that add reads it). With
        parallel attention the FFN's norm reads the input the attention's norm keeps (or, one norm
        for both, the FFN has none). experts: the FFN is routed experts (Norm.before_experts);
        output_kept False: no block keeps the pre-norm's output (Router.input_kept)."""
        cfg = self.cfg
        if cfg.parallel_attention and (at.sublayer == "attention" if cfg.mixer_layers else sublayer == "ffn"):
            if cfg.parallel_norms == 1:  # Falcon-H1's attention keeps its own input (times attention_in_multiplier)
                return ([at.leaf("input", B.SublayerInput(tokens))] if cfg.mixer_layers else []), []
            return [at.leaf("norm", B.Norm(tokens, cfg.norm, self.profile, input_kept=False,
                                           affine=cfg.norm_affine, bias=cfg.norm_bias))], []
        norm = [at.leaf("norm", B.Norm(tokens, cfg.norm, self.profile, affine=cfg.norm_affine,
                                       bias=cfg.norm_bias, output_kept=output_kept,
                                       before_experts=experts and cfg.norm_position == "pre",
                                       dropout_add="layer" if self.norm_adds_residual else ""))]
        if cfg.post_sublayer_norm:
            post = [at.leaf("post_norm", B.Norm(tokens, cfg.norm, self.profile, output_kept=False,
                                                affine=cfg.norm_affine, bias=cfg.norm_bias))]
            if not cfg.input_norms:  # OLMo 2: the sublayer's linears keep its input themselves
                return [at.leaf("input", B.SublayerInput(tokens))], post
            return norm, post
        return (norm, []) if cfg.norm_position == "pre" else ([], norm)

    def residual(self, at: Place, tokens: sp.Expr, post: Leaves, site: str) -> Leaves:
        """Dropout, the residual add and a post-LN norm, or a post-sublayer norm then the add."""
        scalar = site == "ffn_output" and self.profile.facts.layer_scalar_buffer  # Gemma 4's layer_scalar
        residual = at.leaf("residual", B.Residual(tokens, self.cfg.residual_multiplier is not None, scalar,
                                                  vector=self.cfg.residual_scales, in_norm=self.norm_adds_residual))
        if self.cfg.post_sublayer_norm:
            return [*post, *self.dropout(at, tokens, site), residual]
        return [*self.dropout(at, tokens, site), residual, *post]

    def ffn(self, at: Place, tokens: sp.Expr, experts: bool = False, width: sp.Expr = S.d_ff) -> Leaves:
        cfg = self.cfg
        router_alone = experts and B.router_reads_norm_alone(cfg, self.profile.facts)
        pre, post = self.norms(at, tokens, "ffn", experts, output_kept=not router_alone)
        if not experts:
            body = [at.leaf("mlp", B.FeedForward(tokens, cfg.activation, cfg.ffn_bias, self.profile, width=width,
                                                 sub_norm=cfg.sub_norms))]
            if cfg.sub_norms:  # BitNet's ffn_sub_norm on the gate's product, registered after down_proj
                body.append(at.leaf("sub_norm", B.Norm(tokens, cfg.norm, self.profile, width=width)))
        else:
            latent = cfg.d_latent is not None  # nemotron_h's moe_latent_size: experts in d_l
            every_token = self.profile.facts.experts_every_token and not self.profile.routed_experts
            if latent and every_token:
                raise ConfigError(f"model {cfg.name!r}: latent experts (d_latent) are not modelled with "
                                  "Llama 4's every-token experts.")
            noise = cfg.moe_input_noise is not None and self.phase == "train"  # training only (InputNoise)
            whole = self.profile.recomputes("moe_layer")  # Megatron-Core's "moe": the layer rerun whole
            body = [
                *([at.leaf("input_noise", B.InputNoise(tokens, self.profile))] if noise else []),
                at.leaf("router", B.Router(tokens, cfg.router, cfg.renormalize_top_k, self.profile,
                                           bias=cfg.router_bias, input_kept=not router_alone,
                                           zero_experts=cfg.zero_experts > 0)),
                *([at.leaf("latent_in", B.LatentProjection(tokens, S.d, S.d_l, cfg.ffn_bias, recomputed=whole))]
                  if latent else []),
                at.leaf("experts", B.EveryTokenExperts(tokens, self.profile) if every_token
                        else B.Experts(tokens, self.profile, bias=cfg.expert_bias, clamped=cfg.swiglu_limit is not None,
                                       gated=cfg.gated, width=S.d_l if latent else S.d,
                                       zero_experts=cfg.zero_experts > 0 and self.profile.zero_experts_held)),
                *([at.leaf("latent_out", B.LatentProjection(tokens, S.d_l, S.d, cfg.ffn_bias, input_kept=True,
                                                            recomputed=whole))]
                  if latent else []),
            ]
            if cfg.moe_output_bias:  # JetMoE's bias on the experts' sum
                body.append(at.leaf("bias", B.OutputBias(tokens)))
            if cfg.d_shared:
                body.append(at.leaf("shared_expert", B.FeedForward(
                    tokens, cfg.activation, cfg.ffn_bias, self.profile, width=S.d_s, shared_expert=True)))
            if cfg.shared_expert_gate:
                body.append(at.leaf("shared_expert_gate", B.SharedExpertGate(tokens)))
            if cfg.moe_output_norm:  # A.X K1: the sum normed; only the residual add reads its output
                body.append(at.leaf("output_norm", B.Norm(tokens, cfg.norm, self.profile, output_kept=False,
                                                          affine=cfg.norm_affine, bias=cfg.norm_bias)))
        return [*pre, *body, *self.residual(at, tokens, post, "ffn_output")]

    def embedding(self, group: str, stack: str, seq: sp.Expr, owns_table: bool) -> Leaves:
        cfg = self.cfg
        at = Place(group, "embedding", stack)
        tokens = S.b * seq
        positions = {
            "learned": lambda: B.LearnedPositions(tokens, seq, self.profile, cfg.position_offset),
            "sinusoidal": lambda: B.SinusoidalPositions(tokens, cfg.position_offset,
                                                        self.profile.facts.sinusoid_buffer_fp32),
        }.get(cfg.position)
        # Post-LN without an embedding norm: nothing else keeps the embeddings layer 0's projections
        # read (pre-LN: the first norm keeps them as its input; an embedding norm's output is it).
        post = cfg.norm_position == "post"
        output_kept = post and not cfg.embedding_norm
        width = S.d_e if cfg.projected_embeddings else S.d
        scaled = cfg.scale_embeddings or cfg.embedding_multiplier is not None
        token_embedding = B.TokenEmbedding(tokens, owns_table, scaled, output_kept, width, self.profile,
                                           cfg.embedding_extra_rows)
        # OPT-350m: d_e-wide embeddings projected in to d (the projection keeps its input).
        project_in = B.EmbeddingProjection(tokens, S.d_e, S.d, input_kept=True)
        return [
            at.leaf("tokens", token_embedding),
            *([at.leaf("per_layer", B.PerLayerEmbeddings(tokens, self.profile))] if cfg.per_layer_input else []),
            *([at.leaf("altup", B.AltUpEmbedding(tokens))] if cfg.altup_inputs else []),  # Gemma 3n's streams
            *([at.leaf("project_in", project_in)] if cfg.projected_embeddings else []),
            *([at.leaf("positions", positions())] if positions else []),
            *([at.leaf("token_types", B.TokenTypes(tokens, self.profile))] if cfg.token_types else []),
            *([at.leaf("norm", B.Norm(tokens, cfg.norm, self.profile, output_kept=post,
                                      affine=cfg.norm_affine, bias=cfg.norm_bias))]
              if cfg.embedding_norm else []),
            *self.dropout(at, tokens, "embedding"),
        ]

    def sublayers(self, layer: Place, stack: str, seq: sp.Expr, kind: LayerKind,
                  cross_len: sp.Expr | None) -> Leaves:
        """A layer's self-attention, cross-attention (encoder-decoder) and FFN sublayers."""
        if self.cfg.hyper_streams:
            return self.hyper_connected_layer(layer, seq, kind)
        decoder = stack == "decoder"
        if not self.profile.facts.applies_sliding_window:  # the code attends and caches all
            kind = dataclasses.replace(kind, window=False)
        self_at = dataclasses.replace(layer, sublayer="self_attention")
        cached = self.cached_tokens(kind.window) if decoder and not kind.kv_shared else sp.Integer(0)
        shared = dict(kv_len=sp.Integer(0), kv_shared=True) if kind.kv_shared else {}
        # generate's prefill (logits_to_keep 1) runs the K/V-sharing layers on the last position only
        sliced = self.phase == "prefill" and self.profile.logits_to_keep == 1 and self.profile.attention != "flash" \
            and not self.cfg.altup_inputs  # Gemma 3n's code runs every position
        q_len = ONE if shared and sliced else seq
        if self.decode:
            self_attention = self.attention(self_at, seq, S.c, cross=False, cached=cached, window=kind.window,
                                            rope=kind.rope, **{"kv_len": seq, **shared})
        else:  # the cache after the prompt (prefill), or after it and T generated tokens (train)
            self_attention = self.attention(self_at, q_len, seq, cross=False, cached=cached,
                                            window=kind.window, rope=kind.rope, **shared)
        cross: Leaves = []
        if cross_len is not None:
            cross_at = dataclasses.replace(layer, sublayer="cross_attention")
            kv_len = sp.Integer(0) if self.decode else None
            cross = self.attention(cross_at, seq, cross_len, cross=True, cached=cross_len, kv_len=kv_len)
        wide = 2 * S.d_ff if kind.kv_shared and self.cfg.double_wide_shared else S.d_ff  # Gemma 4's use_double_wide_mlp
        ffn = self.ffn(dataclasses.replace(layer, sublayer="ffn"), S.b * q_len, kind.experts, wide)
        gate = [dataclasses.replace(layer, sublayer="per_layer_input").leaf("gate", B.PerLayerInput(
            S.b * q_len, self.cfg.activation, self.profile))] if self.cfg.per_layer_input else []  # Gemma 4's
        extra = dataclasses.replace(layer, sublayer="altup")  # Gemma 3n's AltUp predict/correct and LAuReL
        altup = [extra.leaf("altup", B.AltUpLayer(S.b * q_len, profile=self.profile)),
                 extra.leaf("laurel", B.Laurel(S.b * q_len, profile=self.profile))]
        return [*self_attention, *cross, *ffn, *gate, *(altup if self.cfg.altup_inputs else [])]

    def hyper_connected_layer(self, layer: Place, seq: sp.Expr, kind: LayerKind) -> Leaves:
        """A DeepSeek-V4 layer (blocks/deepseek_v4.py): a hyper-connection, the norm, the projections,
        a CSA or HCA layer's compressor, the core over the window's keys (every prompt key, eagerly)
        plus the compressed entries, with sinks, and the grouped output; then a hyper-connection, the
        norm and the experts with their shared expert (the hyper-connections replace the residual adds)."""
        if self.phase == "chunk":
            require_chunks(self.cfg)
        profile, tokens = self.profile, S.b * seq
        at = dataclasses.replace(layer, sublayer="self_attention")
        keys = S.c if self.decode else seq  # tokens the compressors have seen
        rate = {V4_CSA: S.m_c, V4_HCA: S.m_h}.get(kind.label)
        entries = B.compressed_entries(keys, rate) if rate is not None else ZERO
        k_len = (sp.Min(S.c, S.w) if self.decode else seq) + entries
        core = dict(profile=profile, cross=False, causal=True, kv_heads=S.h_kv, sinks=True)
        pre, _ = self.norms(at, tokens)
        # the cache's compressor states after the prompt (prefill), after it and T - 1 fed back (train
        # tree, as generate leaves it) or after c tokens (decode); prompt_view: no decode step has run
        seen, view = ((S.c, False) if self.decode else (S.n, True) if self.phase == "prefill"
                      else (S.LAST_CONTEXT, sp.Le(S.T, 1)))
        # the windows this call closes: every one of the prompt, or the one the new token may close
        windows = entries - B.compressed_entries(S.c - 1, rate) if self.decode and rate is not None else entries
        compressor = [at.leaf("compressor", B.Compressor(tokens, tokens, entries, kind.label == V4_CSA, windows,
                                                         seen, view, profile))] if rate is not None else []
        attention = [
            at.leaf("hyper", B.HyperConnection(tokens, profile)),
            *pre,
            at.leaf("projections", B.V4Projections(tokens, tokens, self.cached_tokens(True), profile,
                                                                    copies=1 if rate is not None else 2)),
            *compressor,
            at.leaf("scores", B.AttentionScores(seq, k_len, **core)),
            at.leaf("softmax", B.Softmax(seq, k_len, **core)),
            at.leaf("weighted_sum", B.WeightedSum(seq, k_len, **core)),
            at.leaf("out", B.GroupedOutput(tokens)),
        ]
        ffn_at = dataclasses.replace(layer, sublayer="ffn")
        ffn = [leaf for leaf in self.ffn(ffn_at, tokens, experts=True) if not isinstance(leaf.block, B.Residual)]
        return [*attention, ffn_at.leaf("hyper", B.HyperConnection(tokens, profile)), *ffn]

    def layer(self, stack: str, seq: sp.Expr, kind: LayerKind, cross_len: sp.Expr | None) -> Leaves:
        """The leaves of one kind of layer, run kind.count times."""
        layer = Place(stack, "layer", stack, count=kind.count, kind=kind.label)
        body = (self.mixer_layer(layer, seq, kind) if kind.mixer is not None
                else self.sublayers(layer, stack, seq, kind, cross_len))
        if self.phase != "train" or self.profile.recompute not in ("full", *op_checkpoint.POLICIES):
            return body
        if self.profile.recompute_layers is not None and kind.label != RECOMPUTED_LAYERS:
            return body  # a layer block recomputation leaves out keeps everything
        checkpoint = layer.leaf("checkpoint", B.LayerCheckpoint(S.b * seq))
        if self.profile.recompute in op_checkpoint.POLICIES:
            return op_checkpoint.checkpointed_layer(checkpoint, body, self.profile.recompute)
        return [checkpoint, *(dataclasses.replace(leaf, checkpointed=True) for leaf in body)]

    def mixer_layer(self, layer: Place, seq: sp.Expr, kind: LayerKind) -> Leaves:
        """A layer of one mixer (ModelConfig.mixer_layers: NemotronHBlock's norm, mixer, residual add);
        kind.post_norms: OLMo 2's norms instead, after the mixer only (ModelConfig.post_norm_mixers)."""
        if kind.post_norms:
            cfg = self.cfg.replace(post_sublayer_norm=True, input_norms=False, post_norm_mixers=())
            builder = TreeBuilder(cfg, self.profile, self.phase)
            return builder.mixer_layer(layer, seq, dataclasses.replace(kind, post_norms=False))
        if kind.mixer == "shared":  # a use of Zamba's shared attention-and-MLP block
            return shared_layer(self, layer, seq)
        at = dataclasses.replace(layer, sublayer=kind.mixer)
        if kind.mixer in ("mlp", "moe"):
            return self.ffn(at, S.b * seq, kind.experts)
        if kind.mixer == "attention":  # every attention layer slides where the model has a window
            window = kind.window and self.profile.facts.applies_sliding_window
            cached = self.cached_tokens(window)
            if self.decode:
                return self.attention(at, seq, S.c, cross=False, cached=cached, kv_len=seq, rope=kind.rope,
                                      window=window)
            return self.attention(at, seq, seq, cross=False, cached=cached, rope=kind.rope, window=window)
        tokens = S.b * seq
        pre, post = self.norms(at, tokens)
        mixer = B.linear_mixer(kind.mixer, self.phase, self.cfg, self.profile.facts)
        return [*pre, at.leaf(kind.mixer, mixer), *self.residual(at, tokens, post, "attention_output")]

    def stack(self, stack: str, seq: sp.Expr, layers: sp.Expr, *, cross_len: sp.Expr | None) -> Leaves:
        """A stack of layers. A decoder caches its n prompt + T generated tokens' keys/values and,
        in an encoder-decoder, the encoder's keys/values for cross-attention. In a decode step
        (seq = 1) the new token attends to c keys and only its own keys/values are projected."""
        cfg = self.cfg
        own = Place(stack, "stack", stack)
        body = [leaf for kind in layer_kinds(self.cfg, stack, layers, self.phase, self.profile.recompute_layers)
                for leaf in self.layer(stack, seq, kind, cross_len)]
        final_norm = (B.Norm(S.b * seq, cfg.norm, self.profile, affine=cfg.norm_affine,
                             bias=cfg.norm_bias, dropout_add="final" if self.norm_adds_residual else "")
                      if cfg.norm_position == "pre" else None)
        mixed = 0 < cfg.n_window_layers < cfg.n_decoder_layers
        sets = cfg.rotary_sets if cfg.rotary_sets is not None else 2 if mixed else 1
        per_type = self.profile.facts.rotary_tables_per_layer_type and stack == "decoder"
        width = S.d_r if cfg.partial_rotary else S.d_h
        if cfg.global_head_dim and per_type:  # Gemma 4: a table per kind, the full layers' d_hg wide
            sets, width = 1, (S.d_h if cfg.n_window_layers else 0) + (S.d_hg if mixed or not cfg.n_window_layers else 0)
        if self.profile.facts.rotary_tables_per_attention_layer and cfg.mixer_layers:  # RecurrentGemma's
            per_type, sets = True, S.L_a
        rotary = B.RotaryTables(seq, self.profile, width, sets=sets if per_type else 1)
        # OPT-350m: the last hidden state projected out to the d_e-wide head, which keeps it.
        project_out = B.EmbeddingProjection(S.b * seq, S.d, S.d_e, output_kept=True)
        return [
            *([own.leaf("relative_bias", B.RelativePositionBias(seq))] if cfg.position == "relative" else []),
            *self.shared_cross_mask(own, seq, cross_len),
            *([own.leaf("rope_tables", rotary)] if cfg.rope else []),
            *([own.leaf("alibi_slopes", B.AlibiSlopes(self.profile))] if cfg.position == "alibi" else []),
            *([own.leaf("causal_mask", B.KeptCausalMask(seq, self.profile))]
              if self.profile.facts.masked_fill_causal_mask and stack == "decoder" else []),
            *body,
            *([own.leaf("last_out_bias", B.OutputBias(S.b * seq))] if cfg.last_out_bias and stack == "decoder" else []),
            *([own.leaf("idle_cross_layers", B.IdleCrossLayers(cfg.idle_cross_layers))]
              if cfg.idle_cross_layers and stack == "decoder" else []),
            *([own.leaf("altup_unembed", B.AltUpUnembedding(S.b * seq))] if cfg.altup_inputs else []),
            *([own.leaf("hyper_head", B.HyperHead(S.b * seq))] if cfg.hyper_streams else []),
            *([own.leaf("final_norm", final_norm)] if final_norm else []),
            *self.dropout(own, S.b * seq, "final", "final_dropout"),
            *([own.leaf("project_out", project_out)] if cfg.projected_embeddings else []),
        ]

    def shared_cross_mask(self, at: Place, seq: sp.Expr, cross_len: sp.Expr | None) -> Leaves:
        """A zero position bias (1, h, n, s) made once for cross-attention, which the flash kernel
        keeps (facts.cross_attention_zero_bias: Hugging Face's T5 under sdpa without dropout)."""
        if cross_len is None or not self.profile.facts.cross_attention_zero_bias:
            return []
        if self.profile.kernel().saves_as != "flash":
            return []
        return [at.leaf("cross_bias", B.SharedAttentionMask(seq, cross_len))]

    def head(self, seq: sp.Expr, stack: str) -> Leaves:
        cfg = self.cfg
        at = Place("head", "head", stack)
        tokens = S.b * seq
        if self.phase == "prefill" and self.profile.logits_to_keep:  # generate's: the last positions
            tokens = S.b * self.profile.logits_to_keep
        if cfg.head == "pooler":
            leaves = [at.leaf("pooler", B.Pooler(S.b * seq))]
        elif cfg.head == "lm":
            fmt = self.profile.weight_format
            quantized = self.phase != "train" and fmt is not None and fmt.head
            if quantized and cfg.tie_embeddings:
                asked = "exl2 (its converter quantizes the head)" if fmt.dtype == "exl2" else "quantize_head"
                raise ConfigError(f"{asked}: {cfg.name!r} ties its head to the embedding; quantizing it "
                                  "would keep a second, quantized copy of the table (not modelled).")
            lm = B.LMHead(tokens, not cfg.tie_embeddings, cfg.lm_head_bias,
                          scaled_input=cfg.scale_lm_head_input, returns_logits=self.phase != "train",
                          width=S.d_e if cfg.projected_embeddings else S.d, quantized=quantized)
            leaves = [at.leaf("lm_head", lm)]
            if cfg.logits_scaling is not None:
                leaves.append(at.leaf("logit_scale", B.LogitScale(tokens)))
            if cfg.logit_softcap is not None:
                leaves.append(at.leaf("softcap", B.LogitSoftcap(tokens)))
        else:
            leaves = []
        if self.phase == "train":
            loss = B.CrossEntropy(tokens, self.profile) if cfg.head == "lm" else B.SumLoss()
            leaves.append(dataclasses.replace(at, part="loss").leaf("loss", loss))
        return leaves

    def build(self) -> Leaves:
        cfg = self.cfg
        if self.decode:
            return self.decode_step()
        if cfg.architecture == "encoder-decoder":
            return [
                *self.embedding("encoder_embedding", "encoder", S.s, owns_table=True),
                *self.stack("encoder", S.s, S.L_enc, cross_len=None),
                *self.embedding("decoder_embedding", "decoder", S.n, owns_table=not cfg.share_embeddings),
                *self.stack("decoder", S.n, S.L_dec, cross_len=S.s),
                *self.head(S.n, "decoder"),
            ]
        stack, layers = ("decoder", S.L_dec) if cfg.architecture == "decoder" else ("encoder", S.L_enc)
        return [
            *self.embedding("embedding", stack, S.n, owns_table=True),
            *self.stack(stack, S.n, layers, cross_len=None),
            *self.head(S.n, stack),
            *self.multi_token_prediction(S.n, stack),
        ]

    def multi_token_prediction(self, seq: sp.Expr, stack: str) -> Leaves:
        """The multi-token-prediction depths (cfg.mtp_layers, training only) after the head, as
        Megatron-Core's MultiTokenPredictionLayer runs each (multi_token_prediction.py at d98e8a64):
        enorm on the next token's embedding (the shared table's lookup) and hnorm on the last
        hidden state, eh_proj 2d -> d on their concatenation (no bias; it keeps its input), one more
        layer (of the last kind, or a hybrid model's mtp_pattern of mixers: a HybridStack with no
        norm of its own), final_layernorm, the shared output head and a loss of its own. Each leaf
        runs mtp_layers times; its weights are held once under mtp_repeated_layer. Placed with
        the head (part "head": the last pipeline stage, Megatron's layout 'm' before 'L')."""
        cfg = self.cfg
        if not cfg.mtp_layers or self.phase != "train" or cfg.head != "lm":
            return []
        count = sp.Integer(cfg.mtp_layers)
        holds = ONE if cfg.mtp_repeated_layer else None
        at = Place("mtp", "head", stack, count=count)
        tokens = S.b * seq
        if cfg.mtp_pattern is None:
            inner = self.layer(stack, seq, layer_kinds(cfg, stack, S.L_dec, self.phase, self.profile.recompute_layers)[-1], None)
        else:  # one layer of each mixer, in the pattern's order
            inner = [leaf for mixer in cfg.mtp_pattern for leaf in self.mixer_layer(
                Place(stack, "layer", stack, count=count), seq,
                LayerKind(mixer, count, experts=mixer == "moe", rope=cfg.rope, mixer=mixer))]
        layer = [dataclasses.replace(leaf, group="mtp", part="head", count=count, kind=None)
                 for leaf in inner]
        own = [at.leaf("hidden_norm", B.Norm(tokens, cfg.norm, self.profile, bias=cfg.norm_bias)),
               at.leaf("embedding_norm", B.Norm(tokens, cfg.norm, self.profile, bias=cfg.norm_bias)),
               at.leaf("projection", B.EmbeddingProjection(tokens, 2 * S.d, S.d, input_kept=True)),
               *layer,
               at.leaf("final_norm", B.Norm(tokens, cfg.norm, self.profile, bias=cfg.norm_bias))]
        return [
            *(dataclasses.replace(leaf, holds=holds) for leaf in own),
            at.leaf("lm_head", B.LMHead(tokens, False, False)),
            dataclasses.replace(at, part="loss").leaf("loss", B.CrossEntropy(tokens, self.profile)),
        ]

    def decode_step(self) -> Leaves:
        """One cached decoding step: one new token per sequence through the decoder only (an
        encoder-decoder's encoder ran once, before; its keys/values are in the cache)."""
        cfg = self.cfg
        if not cfg.n_decoder_layers:
            raise ConfigError(f"model {cfg.name!r} has no decoder, so no decode step.")
        encoder_decoder = cfg.architecture == "encoder-decoder"
        group = "decoder_embedding" if encoder_decoder else "embedding"
        owns = not cfg.share_embeddings if encoder_decoder else True
        return [
            *self.embedding(group, "decoder", self.step_len, owns_table=owns),
            *self.stack("decoder", self.step_len, S.L_dec, cross_len=S.s if encoder_decoder else None),
            *self.head(self.step_len, "decoder"),
        ]
