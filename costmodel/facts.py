"""Implementation facts: what the code that runs keeps for backward, and in which dtype, as data.

Four implementations are modelled: "hf" (transformers 5.24's classes), "reference" (this
project's validate/reference.py), "megatron" (the accounting of Korthikanti et al. 2022, Table 2:
2-byte activations, 1-byte dropout masks, a norm keeps its input only) and "flash_attn"
(Dao-AILab/flash-attention's GPT at 30fd8c17, each of its rows read from that code). They differ from family to family in ways only a measurement
shows: Llama's softmax in fp32, T5's norm keeping its un-cast input, GPT-2's fused QKV. Each such
fact is one row of costmodel/facts.json, keyed by implementation and family, citing the
measurement that found it (validate/FINDINGS.md). Facts (the dataclass below) lists every fact with
its default, the behaviour of code that does nothing special; a row overrides it. Blocks read
facts, never a family name, so a new family is rows in the table, not code.

Lookup: a row naming the family beats a row for every family ("*"), which beats the default.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The table; COSTMODEL_FACTS names another file (a what-if, or a test of the design).
FACTS_PATH = Path(__file__).resolve().parent / "facts.json"
_FACTS_FILE = str(FACTS_PATH)


@dataclass(frozen=True)
class Facts:
    """Every implementation fact, with the default of code that does nothing special."""

    # dtype of RMSNorm's computation: "fp32" keeps the input and rsqrt in fp32
    norm_dtype: str = "activation"
    # the LayerNorm runs on an fp32 copy of its input and casts its output back (OLMo 1):
    # it keeps that copy and its mean and rstd in fp32
    layernorm_fp32: bool = False
    # the LayerNorm is applied with weight + 1 (Nemotron's LayerNorm1P): that sum, a new d-wide
    # tensor in the parameters' dtype made each forward, is kept by layer_norm for backward
    layernorm_weight_plus_one: bool = False
    # the norm multiplies the un-cast input by rsqrt, keeping it beside the fp32 copy
    norm_keeps_uncast_input: bool = False
    # a norm keeps its per-token statistics and normalised tensor for backward (aten's kernels);
    # False: only its input and output (Korthikanti et al. 2022's accounting)
    norm_keeps_stats: bool = True
    # dtype of the attention softmax (eager): "fp32" or "activation"
    softmax_dtype: str = "activation"
    # dtype of the log-softmax the cross-entropy keeps, and of the loss and its gradients
    loss_dtype: str = "activation"
    # the loss the model's code calls: "none" (not modelled in time: its FLOPs only) or
    # "vocab_parallel" (Megatron-LM's mpu.vocab_parallel_cross_entropy on the fp32 logits, unfused:
    # its passes timed where the framework runs it, Profile.framework_loss, blocks/head.py
    # vocab_parallel_loss_bytes) or "fused" (one kernel reads the logits, its backward writes their gradient:
    # flash_attn's xentropy, blocks/head.py fused_loss_bytes, what "none" is timed as too)
    loss_passes: str = "none"
    # the causal-LM loss pads the labels by one and shifts: at b = 1 the target is a view of the
    # padded row (one more id)
    shifted_labels: bool = False
    # dtype of a dropout mask: on the CPU the mask has the dtype of its input
    dropout_mask_dtype: str = "activation"
    # where dropout runs when p > 0: attention probabilities, embeddings, sublayer outputs
    # ("sublayer": both; "attention_output" or "ffn_output": one), inside the FFN, after each
    # stack's final norm
    dropout_sites: tuple[str, ...] = ("probs", "embedding", "sublayer")
    # the fixed sinusoidal position table is built in fp32 whatever the model dtype (CTRL's
    # positional_encoding(..., torch.float) buffer), not in the model dtype (XGLM's)
    sinusoid_buffer_fp32: bool = False
    # gelu with the tanh approximation written in Python (x, tanh, 0.5x, 1+tanh kept), not aten's
    gelu_tanh_python: bool = False
    # a learned position table is looked up by int64 position ids the lookup keeps
    position_ids_saved: bool = True
    # repeat_kv's expand + reshape stays a view for multi-query attention at b = 1
    repeat_kv_view_for_mqa: bool = False
    # selective recomputation of the attention core keeps a fused kernel's log-sum-exp per query
    # row; False: only q, k, v and the output (Korthikanti et al. 2022 recompute the softmax)
    selective_keeps_logsumexp: bool = True
    # linear weights stored (d_in, d_out), GPT-2's Conv1D, not torch's (d_out, d_in): dim 0, which
    # FSDP2 shards and pads, is the input width
    linear_weights_transposed: bool = False
    # one fused Q/K/V projection (one weight and one bias)
    fused_qkv: bool = False
    # the dense attention's scale runs in its scores GEMM (baddbmm's alpha) and its mask inside one fused
    # softmax kernel, the probabilities' dropout a kernel of its own (Megatron's FusedScaleMaskSoftmax):
    # the scores leaf moves no pointwise bytes, the softmax leaf the softmax's and the dropout's passes
    fused_scale_mask_softmax: bool = False
    # Megatron's own dense attention path (ParallelAttention / CoreAttention with mpu's linears, not Transformer
    # Engine's): the column-parallel Q/K/V linear adds its bias after the GEMM (backward: the bias's gradient, a sum
    # over the tokens), the split of its output is torch.split (backward: torch.cat of the three gradients) and the
    # context leaves its batched GEMM as [b, heads, s, d] for a permute(2, 0, 1, 3).contiguous() copy (backward: a view)
    megatron_dense_passes: bool = False
    # flash_attn's unfused SelfAttention (mha.py): torch.einsum over q, k and v unbound from the packed
    # (b, s, 3, h, d) projection copies each to (b h, s, d) for its bmm, and its output back from
    # (b, h, s, d) where the output projection's rearrange reads it whole (backward: the gradient's copy the
    # other way); the unbind's backward stacks the three gradients (reads and writes them)
    einsum_layout_copies: bool = False
    # the dense scores' scale multiplies the keys (k * softmax_scale: tokens x width, backward the same),
    # not the scores; the causal mask is built each call in fp32 (torch.full, torch.triu), cast and added
    # to the scores in a pass of its own (backward: none, the gradient passes through)
    scores_scale_on_keys: bool = False
    # the dense softmax and the probabilities' dropout each a torch kernel of their own on CUDA
    # (torch.softmax, nn.Dropout's native_dropout): the softmax leaf moves what Megatron's fused
    # softmax and dropout move (blocks/attention.py Softmax.softmax_dropout_bytes)
    softmax_dropout_passes: bool = False
    # a non-gated FFN's bias and activation run in its first GEMM's epilogue and the activation's
    # gradient and the bias's in the second GEMM's dgrad epilogue (flash_attn's FusedMLP: cuBLASLt
    # GELU_AUX_BIAS and DGELU_BGRAD): no pointwise pass of its own
    activation_in_gemm: bool = False
    # the dropout of a sublayer's output, the residual add and the next pre-norm's LayerNorm run as
    # one kernel (flash_attn's dropout_add_layer_norm): "none", "activation" (the residual stream in
    # the activation dtype) or "fp32" (residual_in_fp32: the residual stream in fp32)
    dropout_add_norm: str = "none"
    # the eager query is a view of the fused Q/K/V output, which it keeps whole at b = 1 (GPT-2)
    fused_qkv_query_view: bool = False
    # one fused gate/up projection (one (2 d_ff) x d weight) in a gated FFN
    fused_gate_up: bool = False
    # a gated FFN's activation and product run as one fused kernel that keeps only its input (the
    # gate and up outputs, 2 d_ff wide) for backward: three d_ff-wide tensors with the output
    # matrix's input, not four (Megatron's bias_swiglu_fusion)
    fused_swiglu: bool = False
    # bytes of int64 index tensors the split of a fused Q/K/V output keeps per layer (advanced
    # indexing, qkv[..., [-2], :])
    qkv_split_index_bytes: int = 0
    # heads the KV cache holds: "kv" (the key/value heads) or "query" (keys and values broadcast
    # to every query head before the cache update)
    kv_cache_heads: str = "kv"
    # the RMSNorm multiplies by (1 + weight) in fp32 and casts after: it keeps the fp32 normalised
    # tensor and the fp32 (1 + w) instead of a cast normalised tensor
    rmsnorm_weight_fp32: bool = False
    # the RMSNorm multiplies the fp32 normalised tensor by its weight and casts the product
    # (OLMo 2): it keeps the fp32 normalised tensor (the weight is a parameter, not kept anew)
    rmsnorm_weight_times_fp32: bool = False
    # with rmsnorm_weight_times_fp32, the weight is cast to fp32 first (Helium:
    # self.weight.to(torch.float32) * x_hat): that copy is kept too, where activations are narrower
    rmsnorm_weight_cast_fp32: bool = False
    # the RMSNorm's rsqrt is torch.pow(mean(x^2) + eps, -0.5) (Gemma 4): pow's backward keeps its
    # input, the multiply keeps the output, two values per row where rsqrt keeps one
    rmsnorm_pow_stats: bool = False
    # a weightless RMSNorm over each value head before attention (Gemma 4's v_norm), beside the
    # query and key norms (qk_norm)
    value_rmsnorm: bool = False
    # each decoder layer ends by multiplying its output in place by a one-element buffer in the
    # model dtype (Gemma 4's layer_scalar): one more multiply, nothing kept
    layer_scalar_buffer: bool = False
    # the embedding scale sqrt(d) is a one-element buffer in the model dtype
    embed_scale_buffer: bool = False
    # that buffer is bf16 whatever the model dtype (RecurrentGemmaModel's normalizer): 2 bytes
    embed_scale_bf16: bool = False
    # the per-layer table reads its own copy of the token ids (Gemma 3n's get_per_layer_inputs:
    # torch.where(in_table, input_ids, 0)), which its embedding keeps: one more int64 per token
    per_layer_ids_copied: bool = False
    # what a Mamba-2 mixer's training step runs (blocks/mamba.py): "torch" (transformers'
    # torch_forward: the chunked scan as einsums) or "mamba_ssm" (Megatron-Core's MambaMixer:
    # mamba_split_conv1d_scan_combined and the Triton gated norm)
    mamba_path: str = "torch"
    # a Mamba-2 mixer multiplies in_proj's output by a buffer as wide, in the model dtype (Falcon-H1)
    mamba_mup_vector: bool = False
    # a Mamba-1 mixer's x_proj input is a copy at every b and n (Zamba's per-head bmm; MambaMixer's
    # mm reads a view where b or n is 1)
    mamba1_x_proj_copied: bool = False
    # ALiBi's slopes are a buffer (False: the bias is built each forward, nothing held)
    alibi_slopes_buffer: bool = True
    # a learned position table is looked up by (b, n) ids built from the attention mask (not one
    # row of n shared by the batch)
    position_ids_per_sequence: bool = False
    # dtype of a mixture-of-experts router's matmul: "fp32" (an fp32 weight; a narrower input is
    # copied to fp32) or "activation"
    router_dtype: str = "activation"
    # an fp32 router's weight is held in the model dtype and cast to fp32 each forward (Kolibri-1:
    # only e_score_correction_bias is kept in fp32): the linear keeps that E x d copy where narrower
    router_weight_cast_fp32: bool = False
    # dtype of a sigmoid router's e_score_correction_bias buffer (E values): "fp32" (DeepSeek-V3)
    # or "activation" (MiniMax-M2's, created in the dtype the model is built in)
    score_bias_dtype: str = "fp32"
    # a softmax router's choice adds a score-correction buffer of its choices (LongCat-Flash's
    # e_score_correction_bias, beside DeepSeek-V3's sigmoid router's)
    softmax_score_bias: bool = False
    # latent attention's query and normed latent times LoRA scales (LongCat-Flash's mla_scale_q_lora
    # and mla_scale_kv_lora): one product an element, nothing kept
    mla_lora_scales: bool = False
    # a "topk_softmax" router's softmax over the k chosen logits runs in fp32 whatever the router's
    # dtype (GraniteMoE: logits cast with .float() first), keeping an fp32 output
    topk_softmax_fp32: bool = False
    # the top-k weights' sum is clamped below before the division (ERNIE 4.5 MoE's moe_norm_min):
    # the clamp keeps its input, one more fp32 value per token
    topk_sum_clamped: bool = False
    # DeepSeek-V4's sqrt(softplus(logits)) scores: softplus keeps its input (the logits), sqrt its
    # output, where a sigmoid keeps its output alone (blocks/router.py Router)
    router_softplus_scores: bool = False
    # DeepSeek-V4's SwiGLU clamped before the SiLU (gate.clamp(max=limit), up.clamp(-limit, limit)):
    # each clamp keeps its input, SiLU the clamped gate and the product the clamped up, two hidden
    # tensors more than SwiGLU keeps (blocks/experts.py Experts.glu and FeedForward.saved)
    swiglu_clamped_copies: bool = False
    # a softmax or sigmoid router's score-correction bias (E values added for the choice only) is
    # a frozen nn.Parameter (ERNIE 4.5 MoE's e_score_correction_bias, AFMoE's expert_bias,
    # requires_grad False), which parameters() counts
    score_bias_parameter: bool = False
    # the attention output gate's product keeps both its operands for backward: the attention's
    # output (a fresh contiguous copy) and sigmoid(gate) (AFMoE's, measured); Qwen3-Next's
    # activations are not measured, so its gate keeps nothing here
    output_gate_saves: bool = False
    # the attention output gate: "sigmoid" of a d -> h d_h projection (Qwen3-Next, AFMoE), or
    # "softplus_per_head" of a d -> h projection, each head's output times its one value (Laguna's
    # gating per-head: an fp32 softplus cast back; its input, the cast gate and the attention's
    # output kept)
    output_gate: str = "sigmoid"
    # with no shared experts, nothing but an fp32 router (and the experts' gathers) reads the
    # norm before the experts, so nothing keeps its output (ERNIE 4.5 MoE builds no shared MLP
    # then; DeepSeek-V3's builds one of width 0, whose linears keep their input)
    router_input_alone: bool = False
    # how many times a training forward multiplies a MoE layer's input in place by fresh uniform
    # noise where the config asks for it (ModelConfig.moe_input_noise; blocks/router.py InputNoise)
    moe_input_noise_multiplies: int = 1
    # dtype of a "softmax" router's scores and their renormalisation (fp32 in most classes; DBRX
    # softmaxes in the logits' dtype and divides by their p-norm there)
    router_scores_dtype: str = "fp32"
    # dtype of the routing weights the experts' output is multiplied by
    routing_weights_dtype: str = "fp32"
    # how the routed slots reach the experts and come back (blocks/experts.py Experts.dispatch_bytes):
    # "index_add" (transformers: each expert gathers its tokens, its output is multiplied by the
    # routing weights and index_add-ed into the layer's output), "loop" (DBRX: the same as a Python
    # loop over the experts hit, one matmul per weight, no grouped_mm), "parallel_experts" (JetMoE's
    # JetMoeParallelExperts: the slots sorted by expert, one F.linear each, no grouped_mm) or "alltoall_permute"
    # (Megatron-Core's MoEAlltoAllTokenDispatcher with moe_permute_fusion: Transformer Engine's
    # fused permute, sort-chunks and unpermute passes)
    expert_dispatch: str = "index_add"
    # how routed experts with biases (gpt-oss) add them (blocks/experts.py Experts.bias_bytes): "add"
    # (transformers: each grouped product's bias gathered per slot and added in place) or
    # "megatron" (fc1's inside the fused activation, fc2's by TEGroupedMLP._apply_bias in fp32)
    expert_bias: str = "add"
    # the code honours sliding_window: a windowed layer's decode step attends min(c, w) keys and
    # its cache keeps the window (False: every key, every token)
    applies_sliding_window: bool = True
    # the class runs torch's scaled_dot_product_attention (False: transformers refuses
    # attn_implementation="sdpa" for it, so --attention sdpa is refused too)
    sdpa_supported: bool = True
    # a sink per head applied after the attention, eagerly (GraniteSWA): the output times
    # sigmoid(logsumexp(scores) - sink), in place of gpt-oss's concatenated sink column
    sink_lse_scaling: bool = False
    # the eager kernel subtracts each row's maximum before the softmax on every layer, with or
    # without sinks (MiMo-V2-Flash's eager_attention_forward): an add over the scores and the
    # maximum's int64 index per row kept
    scores_minus_row_max: bool = False
    # the class runs transformers' flash_attention_2 (its _supports_flash_attn). Read where the
    # model picks a kernel for the user (a default's fallback, the fit verdict's suggestion); a
    # typed --attention flash is not refused: it names a fused kernel other code runs on these
    # models too (llm-foundry's MPT, the published rows), not only this class's
    flash_supported: bool = True
    # sdpa's math path gets a bool causal mask per decoder layer (m^2 bytes kept)
    sdpa_causal_bool_mask: bool = False
    # a mask torch's sdpa gets from the code and keeps, (b, 1, n_q, n_k) in the activation dtype per
    # layer (costmodel/kernels.py Sdpa): "none" (is_causal, no mask), "window" (a sliding-window
    # layer's once its keys reach the window, K/V then repeated to h heads), "always" (every
    # causal layer)
    sdpa_mask: str = "none"
    # the query reaches sdpa contiguous in (b, h, n, d_h) (a torch.cat of its rotated and passed
    # parts), so the kernel's output is too and its transpose back is a copy the output
    # projection keeps (False: a view of the kernel's kept output)
    sdpa_query_contiguous: bool = False
    # the code multiplies the scores by their scale even when the scale is exactly 1 (the
    # attention functions' `* scaling`); False: a scale of 1 is no multiply (T5's code has none,
    # the reference skips it)
    scores_times_unit_scale: bool = False
    # cross-attention gets a zero position bias (1, h, m, n) made once, kept by the flash kernel
    cross_attention_zero_bias: bool = False
    # LayerNorm written in Python in fp32 with a weight only (Cohere's CohereLayerNorm): no aten
    # layer_norm runs; it keeps x - mean (computed twice) and the normalised tensor in fp32, rsqrt
    # per row, the fp32
    # copy of a narrower weight and its output cast back, not its input
    layernorm_python_fp32: bool = False
    # RoPE's cos/sin: "forward" (computed each forward in the activation dtype, kept for backward;
    # inv_freq and original_inv_freq buffers in fp32), "complex" (the same, as one complex64
    # cos + i sin per pair of dimensions, Llama 4's freqs_cis), "buffer" (P x d_h tables held as
    # buffers) or "sincos_buffer" (one P x d_r fp32 buffer of sin and cos halves, looked up and cast
    # each forward, nothing kept at the stack: GPT-J's embed_positions) or "none" (no rotary module
    # at all: Kimi Linear's MLA uses its rope-width key unrotated)
    rotary_tables: str = "forward"
    # the rotation repeats sin and cos to the rotated width (repeat_interleave) for the queries and
    # again for the keys, and its products keep all four: 4 n d_r a layer (GPT-J)
    rotary_repeats_per_call: bool = False
    # the eager attention casts queries and keys to fp32 before Q K^T, which keeps the fp32
    # copies (GPT-J): 4-byte q and k, whatever the activation dtype
    eager_scores_fp32: bool = False
    # "forward" tables left in fp32 (OLMo 2's rotary module returns them uncast), kept so; with
    # rotary_repeats_per_call, the fp32 sin/cos lookups repeated in fp32 (CodeGen: no cast)
    rotary_tables_fp32: bool = False
    # "forward" tables d_h / 2 wide, one value per rotated pair (gpt-oss's rotary module returns
    # cos and sin of the frequencies without repeating them; its rotation multiplies each half)
    rotary_tables_half: bool = False
    # the rotation runs in place on the packed q and k (flash_attn's ApplyRotaryEmbQKV_), its backward in place on
    # their gradients: one read and one write each way (False: backward twice the forward's, the tree's convention)
    rotary_in_place: bool = False
    # Megatron-Core rotates the query and the key with its unfused eager code (rope_utils.py
    # _apply_rotary_pos_emb_bshd: GPT-OSS's YaRN); a training step's kernel model adds its kernels
    # beside the tree's one pass (costmodel/layout/gpt_oss_eager.py)
    rotary_unfused: bool = False
    # the rotation takes the first half of cos and sin and repeat_interleaves it in every layer
    # (interleaved RoPE: GLM, Helium, ERNIE 4.5): each layer with RoPE keeps its own cos and sin
    # (the "forward" tables' dtype and width), the stack's tables are kept by no one
    rotary_tables_per_layer: bool = False
    # "forward" tables are made once per attention type the layers have (Gemma 3: a local RoPE for
    # its sliding layers, a global one for its full layers), not once per stack
    rotary_tables_per_layer_type: bool = False
    # every attention layer builds its own rotary module (RecurrentGemmaAttention's rotary_emb): a
    # set of tables and inv_freq buffers per attention layer (ModelConfig.mixer_layers)
    rotary_tables_per_attention_layer: bool = False
    # one of those sets is the model's global RoPE, built and held (its inv_freq buffers) but never
    # called (GraniteSWA's rotary_emb beside its per-base rotary_embs), so it makes no tables
    rotary_global_set_unused: bool = False
    # int64 buffers of P ids held by the embeddings (BERT: position_ids, token_type_ids)
    id_buffers: tuple[str, ...] = ()
    # a (P, P) causal mask held as a buffer: "model" (one bool mask, one byte per pair of positions,
    # beside the learned position table: GPT-BigCode's `bias`), "layer" (a bool one in every layer's
    # attention: GPT-Neo's), "layer_model_dtype" (a lower-triangular matrix of ones in the model
    # dtype in every layer's attention: OpenAI GPT's) or "" (none)
    causal_mask_buffer: str = ""
    # the eager scores are masked arithmetically with the buffer's (n, n) slice b, `w * b + -1e4 *
    # (1 - b)` (OpenAI GPT): a product and an add over the scores, a subtraction and a product over
    # the slice; the product keeps the slice only, a view of the buffer
    scores_masked_by_product: bool = False
    # the class holds a KV cache when it generates (False: OpenAI GPT's class takes no past key values,
    # so generate() reruns the whole prefix for every token; the tree refuses a decode step)
    kv_cache_held: bool = True
    # the eager attention masks its scores with masked_fill of one (b, 1, n, n) bool causal mask
    # made once a forward, which every layer's masked_fill keeps (MPT): b n^2 bytes once a stack
    masked_fill_causal_mask: bool = False
    # the eager scores, after the mask add, are clamped below with torch.max(scores, a 0-d fp32 tensor
    # of finfo.min) (XGLM, BART-era code): the maximum keeps the masked scores and that scalar (4 bytes)
    scores_clamped_min: bool = False
    # the routed experts run every token through every expert, its input pre-scaled by the token's
    # router score (zero for the experts it did not choose): Llama 4's Llama4TextExperts, two bmm
    # over (E, tokens, d); False: each token through its top k only (grouped_mm over the slots)
    experts_every_token: bool = False
    # the order parameters are registered in a layer (AdamW visits them so): "tree" (as the cost
    # tree lists them), "norm_first" (each sublayer's norm before its block), "norms_last" (every
    # norm after the sublayers)
    parameter_order: str = "tree"


FACT_NAMES = tuple(f.name for f in dataclasses.fields(Facts))


class FactsError(ValueError):
    """The facts table is malformed; the message names the row."""


def facts_path() -> Path:
    return Path(os.environ.get("COSTMODEL_FACTS") or FACTS_PATH)


@lru_cache(maxsize=8)
def _rows(path: str, mtime_ns: int) -> tuple[dict[str, Any], ...]:
    try:
        rows = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise FactsError(f"{path}: cannot read the facts table ({error}).") from None
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("fact") not in FACT_NAMES:
            raise FactsError(f"{path}: row {i} names no known fact ({row!r:.80}).")
        if not row.get("source"):
            raise FactsError(f"{path}: row {i} ({row['fact']}) cites no source.")
    return tuple(rows)


def table() -> tuple[dict[str, Any], ...]:
    """The rows of the facts table in force (re-read when the file changes)."""
    path = facts_path()
    return _rows(str(path), path.stat().st_mtime_ns)


def _matching(impl: str, family: str, key: str) -> dict[str, Any]:
    """fact -> the row's `key` for the rows of (impl, family): a row naming the family beats a
    row for every family; among equals, the first row wins."""
    specific: dict[str, Any] = {}
    general: dict[str, Any] = {}
    for row in table():
        if row["impl"] != impl:
            continue
        if family in row["families"]:
            specific.setdefault(row["fact"], row[key])
        elif "*" in row["families"]:
            general.setdefault(row["fact"], row[key])
    return {**general, **specific}


def facts_for(impl: str, family: str) -> Facts:
    """The facts of one implementation running one family's code (one Facts per table version,
    implementation and family: plan asks for them once per layout, thousands of times)."""
    path = os.environ.get("COSTMODEL_FACTS") or _FACTS_FILE  # facts_path() without building a Path
    return _facts(path, os.stat(path).st_mtime_ns, impl, family)


@lru_cache(maxsize=256)
def _facts(path: str, mtime_ns: int, impl: str, family: str) -> Facts:
    """facts_for's Facts for the table at path as it was at mtime_ns (Facts is frozen: shared)."""
    values = _matching(impl, family, "value")
    return Facts(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def sources(impl: str, family: str) -> dict[str, str]:
    """The measurement behind each non-default fact of (impl, family): fact -> source."""
    return _matching(impl, family, "source")
