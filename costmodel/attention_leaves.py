"""One attention sublayer's leaves (costmodel/leaf.py), as TreeBuilder (costmodel/leaves.py) places
them: the norms before it, the projections (or latent attention's), RoPE and what runs beside it,
the kernel's scores, softmax and weighted sum (DiffLlama's second call too), the output projection
and the residual; and the tokens a self-attention layer's cache holds.

AttentionLeaves is TreeBuilder's base: it reads the builder's cfg, profile, phase and decode, and
its norms, dropout and residual.
"""

from __future__ import annotations

import dataclasses

import sympy as sp

from . import blocks as B
from . import symbols as S
from .config import ConfigError
from .leaf import ONE, Leaves, Place
from .terms import FP32, ZERO


class AttentionLeaves:
    """The attention sublayer's part of TreeBuilder (see the module docstring)."""

    def cached_tokens(self, windowed: bool) -> sp.Expr:
        """Tokens one self-attention layer's cache holds, as Hugging Face's DynamicCache holds them.
        Full layers: the prompt (prefill), the prompt and the T - 1 generated tokens fed back (train
        tree: symbols.LAST_CONTEXT, as generate leaves it), c (decode).
        A sliding layer (DynamicSlidingWindowLayer) keeps keys[:, :, -w+1:], a view of the whole
        concatenation: after the prefill it holds every prompt token (w - 1 visible); each decode
        step concatenates the visible w - 1 and the new token afresh: min(n + T - 1, w) held
        (FINDINGS 11.4): min(n + T - 1, w) after T - 1 are fed back. So the cache shrinks at the
        first decode step, which a generation of T >= 2 runs."""
        if self.decode:
            return sp.Min(S.c, S.w) if windowed else S.c
        if self.phase == "prefill" or not windowed:
            return S.n if self.phase == "prefill" else S.LAST_CONTEXT
        return sp.Piecewise((S.n, S.T <= 1), (sp.Min(S.n + S.T - 1, S.w), True))

    def attention(
        self, at: Place, q_len: sp.Expr, k_len: sp.Expr, *, cross: bool, cached: sp.Expr,
        kv_len: sp.Expr | None = None, window: bool = False, rope: bool = True, kv_shared: bool = False,
    ) -> Leaves:
        """One attention sublayer; `cached` tokens of its keys/values stay in the KV cache.
        kv_len is the number of tokens whose keys and values are projected here (default k_len;
        in a decode step, the new token for self-attention and none for cross-attention). A
        windowed layer's decode step attends min(c, w) keys; its prefill, run eagerly, computes
        every score and masks (the same FLOPs as a full layer). rope False: a NoPE layer of a RoPE
        model (SmolLM3), which rotates neither queries nor keys. Gemma 4's full layers: d_hg-wide heads."""
        cfg, profile = self.cfg, self.profile
        if cfg.upcast_attention and profile.impl == "hf" and profile.attention == "eager":
            raise ConfigError(f"model {cfg.name!r}: reorder_and_upcast_attn (transformers' fp32 baddbmm path, "
                              "which only eager attention runs) is not modelled; use --attention sdpa or flash.")
        q_tokens, kv_tokens = S.b * q_len, S.b * (k_len if kv_len is None else kv_len)
        keys_as_values = cfg.keys_as_values and not window and not cross  # Gemma 4's full layers
        head = S.d_hg if cfg.global_head_dim and not window and not cross else S.d_h
        kv_heads = S.h_kvg if cfg.global_kv_heads and not window and not cross else S.h_kv
        k_len = sp.Min(k_len, S.w) if window and self.decode else k_len
        position_bias = not cross and cfg.position in ("alibi", "relative")
        all_heads = profile.facts.kv_cache_heads == "query" and not cross  # Falcon's new layout
        core = dict(
            profile=profile,
            # T5's trained relative bias, Doge's dynamic mask: the kernel adds a tensor that needs gradients
            bias_needs_grad=(position_bias and cfg.position == "relative") or (cfg.dynamic_mask and not cross),
            cross=cross,
            causal=not cross and (cached != 0 or kv_shared), kv_shared=kv_shared,
            kv_heads=S.h if all_heads else kv_heads,
            windowed=window and not self.decode,
            chunked=window and not self.decode and cfg.chunked_window,
            latent=cfg.mla and not cross,
            sinks=cfg.attention_sinks and not cross and (window or not cfg.sinks_windowed_only),
            **({"qk_dim": head, "value_dim": head} if head != S.d_h else {}),
        )
        experts = cfg.attention_experts and not cross  # JetMoE's: K and V reach the kernel repeated to h heads
        if experts:
            core.update(kv_heads=S.h)
        value_width = cfg.v_head_dim is not None and not cfg.mla and not cross  # MiMo-V2-Flash's d_v
        if value_width:
            core.update(value_dim=S.d_v)
        absorbed = cfg.mla and not cross and profile.mla == "absorbed"
        if absorbed:  # attention over the cached latents: one head of r_kv + d_r, values r_kv of it
            core.update(qk_dim=S.r_kv + S.d_r, kv_heads=ONE)
        if cfg.mla and not cross:
            core.update(value_dim=S.d_v)
            projections = [at.leaf("mla", B.LatentAttention(
                q_tokens, kv_tokens, S.b * k_len, cached, cfg.q_lora_rank is not None,
                cfg.qkv_bias, profile, absorbed=absorbed))]
        else:
            held = cached if profile.facts.kv_cache_held else ZERO  # OpenAI GPT's class holds none
            projections = [*([at.leaf("router", B.Router(q_tokens, cfg.router, cfg.renormalize_top_k, profile)),
                              at.leaf("q_experts", B.AttentionExperts(q_tokens, "map", profile))] if experts else []),
                           at.leaf("qkv", B.QKVProjection(
                q_tokens, kv_tokens, cfg.qkv_bias, held,
                copies_cache=self.decode and not cross and profile.kv_cache == "dynamic",
                fused=profile.facts.fused_qkv and not cross, profile=profile,
                cache_heads=kv_heads if experts else core["kv_heads"], transposed=profile.facts.linear_weights_transposed,
                head_dim=head, values_are_keys=keys_as_values, kv_shared=kv_shared, kv_heads=kv_heads,
                value_dim=S.d_v if value_width else None, queries=not experts))]
            if cfg.value_scale and not cross:  # MiMo-V2-Flash: the values times attention_value_scale
                projections.append(at.leaf("value_scale", B.ValueScale(kv_tokens, kv_heads)))
            if cfg.clip_qkv is not None and not cross:
                projections.append(at.leaf("clip_qkv", B.ClipQKV(q_tokens, kv_tokens)))
            if cfg.qk_norm and not cross:
                norms = B.HeadNorms(q_tokens, kv_tokens, profile, cfg.qk_norm_whole, cfg.norm, head, keys_as_values,
                                    kv_shared, kv_heads)
                projections.append(at.leaf("qk_norm", norms))
            if cfg.attention_output_gate and not cross:  # Qwen3-Next: q_proj's second half; AFMoE
                projections.append(at.leaf("output_gate", B.AttentionOutputGate(q_tokens, cfg.qkv_bias, profile)))
        if cfg.rope and rope and not cross:
            width = S.d_r if cfg.partial_rotary else head
            key_heads = ONE if cfg.mla else kv_heads
            tables = ZERO  # interleaved RoPE: this layer's own cos and sin, q_len positions
            if profile.facts.rotary_tables_per_layer and profile.facts.rotary_tables == "forward":
                tables = 2 * q_len * width * (FP32 if profile.facts.rotary_tables_fp32 else S.e)
            projections.append(at.leaf("rope", B.RotaryEmbedding(q_tokens, kv_tokens, width, key_heads,
                                                                 tables, profile)))
            if cfg.qk_l2_norm:  # Llama 4: after RoPE, on the RoPE layers only
                projections.append(at.leaf("qk_norm", B.HeadL2Norms(q_tokens, kv_tokens)))
            if cfg.rope_query_scale:  # Ministral 3: after RoPE, on every RoPE layer
                projections.append(at.leaf("temperature", B.QueryScale(q_tokens, q_len)))
        if cfg.index_n_heads is not None and not cross:  # DeepSeek-V3.2: scores every key, picks the top k
            projections.append(at.leaf("indexer", B.LightningIndexer(q_tokens, k_len, kv_tokens, cached, profile)))
        if cfg.dynamic_mask and not cross:  # Doge: from every key's values, after the cache's update
            projections.append(at.leaf("dynamic_mask", B.DynamicMask(S.b * k_len, q_len, k_len, cfg.qkv_bias)))
        if cfg.nope_temperature and not rope and not cross:
            projections.append(at.leaf("temperature", B.AttentionTemperature(q_tokens, q_len)))
        scores = B.AttentionScores(q_len, k_len, **core, position_bias=position_bias,
                                   scaled=cfg.scaled_scores or profile.facts.scores_times_unit_scale,
                                   softcap=cfg.attention_softcap is not None and not cross)
        pre, post = self.norms(at, q_tokens)
        # DiffLlama: o_proj reads the group norm's output, not the kernel's
        kernel_keeps = scores.kernel.keeps_projection_input(scores) and not cfg.differential_attention
        sub_norm = cfg.sub_norms and not cross  # BitNet's attn_sub_norm: it keeps o_proj's input
        output = B.AttentionOutput(q_tokens, cfg.out_bias, value_dim=core.get("value_dim", S.d_h),
                                   input_kept_by_kernel=kernel_keeps or sub_norm,
                                   transposed=profile.facts.linear_weights_transposed)
        # registered after o_proj; its input is the kernel's kept output where the kernel keeps one
        sub_norms = [at.leaf("sub_norm", B.Norm(q_tokens, cfg.norm, profile, width=S.h * S.d_h,
                                                input_kept=not kernel_keeps))] if sub_norm else []
        return [
            *pre,
            *projections,
            at.leaf("scores", scores),
            at.leaf("softmax", B.Softmax(q_len, k_len, **core)),
            at.leaf("weighted_sum", B.WeightedSum(q_len, k_len, **{**core, "value_dim": S.r_kv}, values_are_keys=True)
                    if absorbed else B.WeightedSum(q_len, k_len, **core)),
            *self.second_call(at, scores, q_tokens, core),
            *([at.leaf("o_experts", B.AttentionExperts(q_tokens, "reduce", profile)),
               at.leaf("out_bias", B.OutputBias(q_tokens))] if experts else [at.leaf("out", output)]),
            *sub_norms,
            *self.residual(at, q_tokens, post, "attention_output"),
        ]

    def second_call(self, at: Place, scores: B.AttentionScores, q_tokens: sp.Expr, core: dict) -> Leaves:
        """DiffLlama's differential attention (blocks/differential.py): the kernel's second call on
        the same queries and keys with the other half of the values, and what combines the two."""
        if not self.cfg.differential_attention:
            return []
        q_len, k_len, second = scores.q_len, scores.k_len, dict(core, second_call=True)
        return [at.leaf("scores_2", dataclasses.replace(scores, second_call=True)),
                at.leaf("softmax_2", B.Softmax(q_len, k_len, **second)),
                at.leaf("weighted_sum_2", B.WeightedSum(q_len, k_len, **second)),
                at.leaf("differential", B.DifferentialCombine(q_tokens, S.b * k_len))]
