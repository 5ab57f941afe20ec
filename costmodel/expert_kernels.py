"""Routed experts' kernels: a mixture-of-experts layer's expert matrices as the grouped GEMMs
engines launch (one per weight matrix over the experts that get a slot), for
costmodel/tree_kernels.py's leaf_kernels (docs/time.md, "Quantized weights")."""

from __future__ import annotations

import math
from typing import Any

from .kernel_shapes import Gemm, Kernel


def grouped_experts(block: Any) -> bool:
    """Whether a leaf is routed experts that run as one grouped kernel per weight matrix (every
    implementation the tree models: transformers' torch._grouped_mm, vLLM's and SGLang's
    fused_moe, DeepGEMM's grouped GEMM, gpt-fast's gathered einsum, which at batch > 1 gathers each
    token's experts, so an expert two tokens share is read twice there: not modelled); not Llama 4's every-token
    bmm (EveryTokenExperts), whose kernels stay as they were."""
    from .blocks import EveryTokenExperts, Experts

    return isinstance(block, Experts) and not isinstance(block, EveryTokenExperts)


def grouped_gemms(leaf: Any, flops: float, shapes: list[tuple[int, int, int]], share: float,
                  weight_bytes: list[float | None]) -> list[Kernel]:
    """Routed experts as engines run them: one grouped GEMM per weight matrix of an expert
    (gate_up, down), one launch over the experts that get a slot (`shapes`: (out, inner, how many)
    per matrix, the tree's E experts; `share`: Cost.matrix_read_share, the expected touched / E
    (blocks/experts.py experts_touched: E (1 - (1 - k/E)^T) at T tokens, uniform random top-k routing;
    under expert parallelism the rank's own touched experts, of its E / ep, over E); a share that
    splits an expert counts it whole; `weight_bytes`: one
    expert's matrix of each kind as stored, None where unquantized). vLLM's fused_moe (vllm-project/vllm,
    vllm/model_executor/layers/fused_moe/fused_moe.py, commit 13cb3e4: fused_experts_impl sorts
    the slots by expert (moe_align_block_size, each expert's rows padded to BLOCK_SIZE_M) and calls
    invoke_fused_moe_kernel once with w1 (gate_up) and once with w2 (down); the Triton grid runs
    over those blocks, each loading its expert's weights by expert_ids, so each touched expert's
    weights are read once and an expert with no slot is not read); SGLang's copy of it
    (python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py) and transformers'
    torch._grouped_mm (integrations/moe.py) alike. Each expert's GEMM has as rows the slots it
    gets, slots / touched rounded up (the mean load, taken as the most loaded expert's, which
    sets the last tile; under random routing the most loaded gets more). A Gemm of count the experts touched: its bytes every touched expert's weights,
    its tiles every expert's tiles, one DRAM start and one launch for all; grouped_rows the rows
    an expert, which keys the grouped kernel's measured share of the tile model (kernel_facts.json
    "grouped_gemm_efficiency": Transformer Engine's on Hopper in BF16), 0 where one expert gets a
    slot (one GEMM: TE's grouped GEMM of one matrix is one cuBLAS call)."""
    from .quantized_matmul import quantizing_inputs, runs_quantized

    experts = max(1, math.ceil(shapes[0][2] * share - 1e-9))
    one_expert = sum(out * inner for out, inner, _ in shapes)
    rows = max(1, math.ceil(flops / (2 * one_expert * experts) - 1e-9))
    quantized = any(b is not None for b in weight_bytes)
    stored = quantized and getattr(leaf, "weight_format", None) is not None
    kernels = runs_quantized(leaf) if quantized else [False] * len(shapes)
    dtype = leaf.weight_format.dtype if stored else None
    fp8 = [(rows, inner) for (_, inner, _), kernel in zip(shapes, kernels) if stored and kernel and dtype == "fp8"]
    first = iter(quantizing_inputs(fp8))
    return [Gemm(rows, out, inner, count=experts,
                 weight_bytes=one,
                 weight_dtype=dtype if stored and kernel else None,
                 quantizes_input=stored and kernel and dtype == "fp8" and next(first),
                 normed_input=False, grouped_rows=rows if experts > 1 else 0,
                 weight_kernel=leaf.weight_format.storage.kernel if stored and kernel else None)
            for (out, inner, _), kernel, one in zip(shapes, kernels, weight_bytes)]
