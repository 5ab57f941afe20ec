"""One class per Transformer block, each owning all of its formulas as sympy expressions.

By kind, one module each: base.py (Profile, Tensor, Cost, Block and the helpers they share),
embedding.py (token, position and token-type embeddings, rotary tables, ALiBi, masks), norms.py
(norms, residual adds, dropout, a recomputed layer's input), attention.py (Q, K, V, RoPE, scores,
softmax, weighted sum, output; the KV cache), mla.py (latent attention), mamba.py (the Mamba-2
mixer), ffn.py (the FFN), router.py (a mixture of experts' router and input noise), experts.py (its
experts, latent projections and shared-expert gate), head.py (LM head, soft-capping, pooler,
losses), per_layer.py (Gemma 4's per-layer inputs), altup.py (Gemma 3n's AltUp streams and LAuReL)
and optimizer.py (the optimizer step). This package re-exports them all.

A block's cost() returns a Cost: parameters, forward matmul FLOPs, the elements of every other op
(norms, softmax, activations, residual adds, scaling, RoPE), backward matmul FLOPs, bytes saved for
backward and KV-cache bytes. Nothing else in the project types a formula: totals are sums of these,
LaTeX is sympy.latex of these, numbers are these with the dimensions substituted.

Conventions (what "formula == measurement" means, see docs/design.md):
- matmul FLOPs are 2*m*n*k per matrix product, as torch.utils.flop_counter.FlopCounterMode counts
  them; bias adds are not counted; attention scores are dense (n_q x n_k, the causal mask ignored).
- backward matmul FLOPs are 2x forward for a product whose two inputs both need gradients (a weight
  and an activation, or two activations): one product for each input's gradient.
- other ops are counted in output elements per op kind; OTHER_FLOPS_PER_ELEMENT turns elements into
  FLOPs (a stated convention, not a measurement): softmax and log-softmax 5 (max, subtract, exp,
  sum, divide or log),
  layernorm 5 (mean, subtract, square-mean, divide, affine), rmsnorm 4 (square, mean, rsqrt-scale,
  weight), gelu 8, gelu_tanh 8, silu 4, relu 1, add 1, mul 1, rope 3 (two products, one sum per
  rotated element); a squared relu (relu2) is a relu and a mul.
- bytes saved for backward follow an implementation profile (Profile, in base.py): which tensors
  the code that runs keeps for the backward pass, in which dtype. e is the activation dtype's bytes.
- bytes moved (for the roofline) count one forward's memory traffic if every op reads its inputs
  and writes its outputs once, and every weight is read once, all in the activation dtype; fused
  attention (sdpa, flash) never writes the n_q x n_k matrix. A model of traffic, not a measurement.
  It is split in two: bytes_matmul, the matrix products' traffic (weights, their inputs, their
  outputs), and bytes_other, the other ops' (they run as separate kernels with their own roofs).
"""

from __future__ import annotations

from .attention import (
    KV_SCALE_BYTES, AttentionCore, AttentionOutput, AttentionScores, AttentionTemperature, QKVProjection,
    QueryScale, RotaryEmbedding, ValueScale,
    Softmax, WeightedSum, kv_cache_bytes,
)
from .base import OTHER_FLOPS_PER_ELEMENT, Backward, BackwardStep, Block, Cost, LinearOp, Profile, Tensor, linears_cost, quantized_bytes
from .embedding import (
    AlibiSlopes, EmbeddingProjection, LearnedPositions, RelativePositionBias, RotaryTables,
    KeptCausalMask, SharedAttentionMask, SinusoidalPositions, TokenEmbedding, TokenTypes,
)
from .experts import EveryTokenExperts, Experts, LatentProjection, SharedExpertGate
from .ffn import ACTIVATION_OPS, FeedForward
from .router import InputNoise, Router, router_reads_norm_alone
from .head import CrossEntropy, LMHead, LogitScale, LogitSoftcap, Pooler, SumLoss
from .deltanet import AttentionOutputGate, GatedDeltaNetMixer, deltanet_state_bytes
from .mamba import Mamba2Mixer, mamba_state_bytes
from .mamba1 import Mamba1Mixer, linear_mixer, mamba1_state_bytes
from .shortconv import ShortConvMixer, shortconv_state_bytes
from .lightning import LightningAttentionMixer, lightning_state_bytes
from .kda import KimiDeltaAttentionMixer, kda_state_bytes
from .rglru import RGLRUMixer, rglru_state_bytes
from .shared import SharedAdapter
from .rwkv import RwkvChannelMix, RwkvTimeMix
from .mlstm import MLSTMMixer
from .indexer import LightningIndexer
from .deepseek_v4 import Compressor, GroupedOutput, HyperConnection, HyperHead, V4Projections, compressed_entries
from .mla import LatentAttention
from .norms import (ClipQKV, Dropout, HeadL2Norms, HeadNorms, KeptOutputs, LayerCheckpoint, Norm, OutputBias, Residual,
                    SublayerInput)
from .optimizer import OptimizerStep, TensorRun
from .per_layer import PerLayerEmbeddings, PerLayerInput
from .differential import DifferentialCombine
from .dynamic_mask import DynamicMask
from .idle import IdleCrossLayers
from .attention_experts import AttentionExperts
from .altup import AltUpEmbedding, AltUpLayer, AltUpUnembedding, Laurel

__all__ = [
    "DifferentialCombine", "DynamicMask", "IdleCrossLayers", "AttentionExperts",
    "ACTIVATION_OPS", "KV_SCALE_BYTES", "OTHER_FLOPS_PER_ELEMENT", "AlibiSlopes", "AttentionCore",
    "AttentionOutput", "AttentionScores", "AttentionTemperature", "Backward", "BackwardStep", "Block", "Cost", "CrossEntropy", "Dropout",
    "ClipQKV", "EmbeddingProjection", "EveryTokenExperts", "Experts", "FeedForward", "HeadL2Norms", "HeadNorms",
    "InputNoise", "KeptOutputs", "LMHead", "router_reads_norm_alone",
    "LatentAttention", "LightningIndexer", "LatentProjection", "LayerCheckpoint", "LinearOp", "Mamba2Mixer", "LearnedPositions", "LogitScale", "LogitSoftcap", "Norm", "OptimizerStep", "Pooler",
    "OutputBias", "Profile", "QKVProjection", "QueryScale", "RelativePositionBias", "Residual", "RotaryEmbedding",
    "SublayerInput",
    "ValueScale",
    "RotaryTables", "Router", "KeptCausalMask", "SharedAttentionMask", "SharedExpertGate", "SinusoidalPositions",
    "Softmax", "SumLoss", "Tensor", "TensorRun", "TokenEmbedding", "TokenTypes", "WeightedSum",
    "kv_cache_bytes", "linears_cost", "mamba_state_bytes", "quantized_bytes",
    "AttentionOutputGate", "GatedDeltaNetMixer", "deltanet_state_bytes", "Mamba1Mixer", "mamba1_state_bytes",
    "linear_mixer", "ShortConvMixer", "shortconv_state_bytes", "LightningAttentionMixer",
    "lightning_state_bytes", "KimiDeltaAttentionMixer", "kda_state_bytes", "RGLRUMixer", "SharedAdapter",
    "rglru_state_bytes", "RwkvTimeMix", "RwkvChannelMix", "MLSTMMixer", "PerLayerEmbeddings", "PerLayerInput",
    "AltUpEmbedding", "AltUpLayer", "AltUpUnembedding", "Laurel",
    "Compressor", "GroupedOutput", "HyperConnection", "HyperHead", "V4Projections", "compressed_entries",
]
