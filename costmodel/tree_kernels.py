"""A leaf of the cost tree as the kernels that run it, with their shapes, read from the leaf itself
(docs/time.md, "The kernel-level model"; costmodel/kernel_time.py times them on a hardware file):
  - a projection (QKV, output, FFN, experts, the head): one GEMM (M, N, K) per weight matrix (Q, K
    and V as one where the decoding code stores them as one: gpt-fast's wqkv, kernel_facts.json
    "fused_projections") of the leaf (Cost.matrices), M the rows the leaf states for it
    (Cost.matrix_tokens: latent attention's) or else the tokens its FLOPs imply (flops / (2 K N));
    routed experts one grouped GEMM per matrix over the experts that get a slot (expert_kernels.py:
    vLLM's fused_moe);
  - the attention core: one fused call (b, heads, KV heads, n_q, n_kv, head_dim, value width,
    causal, window) under sdpa/flash, read from the weighted-sum leaf, the core's last product,
    which states every field of it (the scores' key width is the core's, shared by its three leaves;
    the values' width and whether they are the keys themselves, as absorbed latent attention's are,
    only the weighted sum states); under eager its two batched GEMMs and the softmax, each a kernel;
  - a Mamba-2 mixer in training: its projections' GEMMs, then mamba_ssm's kernels, each in one pass
    (kernel_shapes.PassKernel: its products' tiles or its bytes, the longer; mamba_kernels.py);
  - everything else: bytes and FLOPs of memory-bound kernels.
Also what recomputation reruns of a leaf (rerun_kernels) and how many kernels it launches (launches_of).
No torch, and no sympy at import: the tree's modules are imported when a leaf's shapes are read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .exact_eval import float_value
from .kernel_shapes import AttentionCall, Gemm, Kernel, MatmulCompute, Pointwise, fused_gemm


def _sdpa_mask(block: Any, n_kv: int, window: int | None) -> str | None:
    """The mask transformers hands torch's sdpa for this call (kernels.Sdpa.mask_kind), a window's once its n_kv
    keys reach it (masking_utils._ignore_causal_mask_sdpa skips it before); None under flash or eager. With a
    mask torch runs the masked kernel over every block: neither the causal triangle nor the window is skipped."""
    from .kernels import Sdpa

    kind = Sdpa.mask_kind(block) if block.profile.attention == "sdpa" else None
    return None if kind == "window" and (window is None or n_kv < window) else kind


def leaf_kernels(leaf: Any, subs: dict, fused_attention: bool, local: dict | None = None,
                 compiled: bool = False, eager: dict | None = None, fused_qkv: bool = False) -> list[Kernel]:
    """The kernels of one run of a leaf, with their shapes, at these values. `local`: symbols to replace first
    (a tensor-parallel rank's share: h -> h / tp, ...; layout/split.py). compiled: torch.compile's fusions
    (kernel_facts.json "compile"). eager: the bytes the measured eager training implementation the step runs
    moves (eager_ops.training_bytes: leaf path -> forward and backward bytes): a leaf it states moves them in
    place of bytes_other. fused_qkv: the code stores Q, K and V as one matrix (kernel_facts_file.fuses_qkv), one
    GEMM."""
    import sympy as sp

    from . import symbols as S
    from .blocks import AttentionCore, QKVProjection, WeightedSum
    from .kernels import SDPA
    from .quantized_matmul import in_memory_dequant

    if local:
        subs = {**subs, **{symbol: sp.sympify(value).xreplace(subs) for symbol, value in local.items()}}
    cost, block = leaf.cost, leaf.block
    kernels: list[Kernel] = []
    if isinstance(block, AttentionCore) and fused_attention:
        if not isinstance(block, WeightedSum):
            return []  # inside the one fused call the weighted-sum leaf stands for
        window = int(float_value(S.w, subs)) if block.windowed else None
        n_kv, heads, kv_heads = int(float_value(block.k_len, subs)), int(float_value(S.h, subs)), int(float_value(block.kv_heads, subs))
        n_q, copies = int(float_value(block.q_len, subs)), []
        causal, masked = block.causal, _sdpa_mask(block, n_kv, window)
        if masked:  # a mask reaches torch's kernel: every (query, key) block computed
            causal, window = False, None
        if masked == "window" and n_q > 1:  # K/V repeated to the heads, each by a clone (a single query is packed)
            kv_heads = int(float_value(SDPA.kv_heads_saved(block), subs))
            copies = [Pointwise(moved, 0.0, moved) for moved in (float_value(x, subs) for x in SDPA.repeat_copy_bytes(block))
                      if moved]  # the clone's backward (expand's): a sum over the repeats, the same bytes
        return [AttentionCall(
            batch=int(float_value(S.b, subs)), heads=heads,
            n_q=n_q, n_kv=n_kv,
            head_dim=int(float_value(block.qk_dim, subs)), causal=causal, window=window,
            chunked=block.chunked,
            value_dim=int(float_value(block.value_dim, subs)), kv_heads=kv_heads,
            values_are_keys=block.values_are_keys,
            kv_element_bytes=None if block.cache_element_bytes == S.e else int(block.cache_element_bytes))] + copies
    flops = float_value(cost.flops_matmul, subs)
    if flops:  # the weights' GEMMs, then any product of two activations (the indexer's scores)
        gemms = _gemms(leaf, subs, flops)  # one GEMM where the code stores Q, K and V as one matrix
        gemms = [fused_gemm(gemms)] if fused_qkv and isinstance(block, QKVProjection) and len(gemms) > 1 else gemms
        kernels += in_memory_dequant(getattr(leaf, "weight_format", None), gemms, float_value(S.e, subs)) \
            + [Gemm(*(int(float_value(x, subs)) for x in g)) for g in block.activation_products()]  # DeepSpeed's int8
    other_flops = sum(float_value(x, subs) for _, x in cost.elements)
    measured = None if eager is None else eager.get(leaf.code_path)  # the eager implementation's
    if measured is not None:
        forward, backward = (float_value(x, subs) for x in measured)
        if forward or backward or other_flops:
            kernels.append(Pointwise(forward, other_flops, backward))
        return kernels
    listed = block.pass_kernels(lambda x: int(float_value(x, subs))) if hasattr(block, "pass_kernels") else None
    if listed is not None:  # a Mamba-2 mixer's training kernels (mamba_kernels.py), not its bytes_other
        return kernels + listed
    other = float_value(cost.bytes_other, subs) - (_fused_away(leaf, subs) if compiled else 0.0)
    stated = None if cost.backward_bytes_other is None else float_value(cost.backward_bytes_other, subs)
    if (other or other_flops or stated) and cost.own_kernel:  # a backward-alone pass (Megatron's split) too
        kernels.append(Pointwise(other, other_flops, stated))
    return kernels


def _fused_away(leaf: Any, subs: dict) -> float:
    """Bytes torch.compile's fusions save in this leaf's memory-bound kernel: the norm after a residual add does
    not read the sum again; a gated activation does not write and reread its output before the product."""
    from . import symbols as S
    from .blocks import FeedForward, Norm

    block = leaf.block
    if isinstance(block, Norm) and leaf.part == "layer":
        return float_value(S.e * block.tokens * block.width, subs)
    if isinstance(block, FeedForward) and block.gated:
        return float_value(2 * S.e * block.tokens * block.width, subs)
    return 0.0


def launches_of(leaf: Any, kernels: int, compiled: bool) -> int:
    """Kernels a leaf launches: a layer's norm runs inside the residual add's kernel when compiled."""
    from .blocks import Norm
    if compiled and isinstance(leaf.block, Norm) and leaf.part == "layer" and kernels == 1:
        return 0
    return kernels


def _gemms(leaf: Any, subs: dict, flops: float) -> list[Kernel]:
    """A projection's GEMMs from its weight matrices; the attention core's batched GEMMs
    (eager); any other product as one memory-or-compute kernel of its FLOPs and bytes."""
    from . import symbols as S
    from .blocks import AttentionScores, FeedForward, LMHead, Mamba2Mixer, QKVProjection, WeightedSum
    from .expert_kernels import grouped_experts, grouped_gemms
    from .quantized_matmul import gemm_rows, matrix_rows, quantizing_inputs, runs_quantized

    block, cost = leaf.block, leaf.cost
    if isinstance(block, (AttentionScores, WeightedSum)):
        b, h = int(float_value(S.b, subs)), int(float_value(S.h, subs))
        n_q, n_kv = int(float_value(block.q_len, subs)), int(float_value(block.k_len, subs))
        if isinstance(block, AttentionScores):
            return [Gemm(n_q, n_kv, int(float_value(block.qk_dim, subs)), b * h)]
        return [Gemm(n_q, int(float_value(block.value_dim, subs)), n_kv, b * h)]
    # Cost.matrices: (output features, input features, how many) per weight matrix.
    # A quantized format stores only these matrices quantized (the tree's weight bytes).
    shapes = [(int(float_value(out, subs)), int(float_value(inner, subs)), int(float_value(how_many, subs)))
              for out, inner, how_many in cost.matrices]
    quantized = bool(shapes)
    if not shapes and hasattr(block, "tokens") and hasattr(block, "width"):
        # The LM head: the tree keeps it unquantized (transformers' quantizers skip lm_head).
        shapes = [(int(float_value(S.V, subs)), int(float_value(block.width, subs)), 1)]
    weights = sum(out * inner * how_many for out, inner, how_many in shapes)
    if grouped_experts(block) and weights:  # (only routed experts read a share of their matrices)
        stored = [_stored(leaf, out, inner, subs) if quantized else None for out, inner, _ in shapes]
        return grouped_gemms(leaf, flops, shapes, float_value(cost.matrix_read_share, subs), stored)
    if cost.matrix_tokens:  # each matrix its own rows (latent attention's queries, latents and keys)
        rows = [int(float_value(tokens, subs)) for tokens in matrix_rows(cost)]
    elif weights and flops % (2 * weights) == 0:
        rows = [int(gemm_rows(flops, weights))] * len(shapes)
    else:
        return [Pointwise(float_value(cost.bytes_matmul, subs), 0.0), MatmulCompute(flops)]
    stored = quantized and getattr(leaf, "weight_format", None) is not None
    # Each matrix in the format's kernel, or (absorbed MLA's kv_b_proj) dequantized to the
    # activations' dtype (quantized_matmul.runs_quantized); the fp8 ones W8A8 under KernelTimer's w8a8.
    kernels = runs_quantized(leaf) if quantized else [False] * len(shapes)
    each = [(tokens, out, inner, stored and kernel) for (out, inner, how_many), tokens, kernel
            in zip(shapes, rows, kernels) for _ in range(how_many)]
    dtype = leaf.weight_format.dtype if stored else None
    fp8 = [(tokens, inner) for tokens, _, inner, kernel in each if kernel and dtype == "fp8"]
    first = iter(quantizing_inputs(fp8))
    # A norm writes the input of Q/K/V, the FFN's first matrices and Mamba's in_proj (layout/fp8.py fp8_blocks), and
    # the final norm the head's; the FFN's activation the input of its last matrix, the down projection.
    normed = each[0][::2] if isinstance(block, (QKVProjection, FeedForward, Mamba2Mixer)) else None
    head = isinstance(block, LMHead)
    down = len(each) - 1 if isinstance(block, FeedForward) and len(each) > 1 else None
    return [Gemm(tokens, out, inner, weight_bytes=_stored(leaf, out, inner, subs) if quantized else None,
                 weight_dtype=dtype if kernel else None, weight_kernel=leaf.weight_format.storage.kernel if kernel else None,
                 quantizes_input=kernel and dtype == "fp8" and next(first),
                 normed_input=head or (tokens, inner) == normed, activated_input=index == down)
            for index, (tokens, out, inner, kernel) in enumerate(each)]


def _stored(leaf: Any, out: int, inner: int, subs: dict) -> float | None:
    """Bytes of one quantized weight matrix as stored (None: unquantized)."""
    if getattr(leaf, "weight_format", None) is None:
        return None
    import sympy as sp

    from .blocks import quantized_bytes

    parts = quantized_bytes(((sp.Integer(out), sp.Integer(inner), sp.Integer(1)),), leaf.weight_format)
    return sum(float_value(x, subs) for x in parts.values())


def rerun_kernels(leaf: Any, kernels: list[Kernel], subs: dict, fused_attention: bool,
                  local: dict | None = None, compiled: bool = False, eager: dict | None = None) -> list[Kernel]:
    """The kernels recomputation reruns of a leaf's forward (Leaf.rerun): all of them, those
    of the part it reruns (latent attention's up-projections), or none."""
    if leaf.rerun is None:
        return []
    if leaf.rerun is leaf.cost:
        return kernels
    return leaf_kernels(replace(leaf, cost=leaf.rerun), subs, fused_attention, local, compiled, eager)
