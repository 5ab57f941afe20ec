"""Memory of training and inference: weights, gradients, optimizer states, activations, KV cache.

Bytes per parameter are data (BYTES_PER_PARAM); activation bytes come from the cost tree's
bytes saved for backward under an implementation profile, reduced by recomputation; the KV cache
comes from the attention blocks. Korthikanti et al. (2022) is kept beside ours for comparison.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import sympy as sp

from . import symbols as S
from .config import DTYPE_BYTES, ModelConfig, Workload
from .model import CostModel, profile_for


@dataclass(frozen=True)
class ParamBytes:
    """Bytes kept per parameter while training."""

    weights: int
    gradients: int
    optimizer: int
    note: str

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer


def param_bytes(dtype: str, optimizer: str) -> ParamBytes:
    """Bytes per parameter for a training dtype and optimizer.

    fp32: weights and gradients in fp32; AdamW keeps m and v in fp32 (8 bytes).
    bf16/fp16 (mixed precision, as in ZeRO, Rajbhandari et al. 2020): 2-byte weights and gradients,
    plus an fp32 master copy and AdamW's m and v (12 bytes): 16 bytes per parameter in all.
    SGD without momentum keeps no state beyond the fp32 master copy in mixed precision.
    """
    width = DTYPE_BYTES[dtype]
    master = 0 if width == 4 else 4
    states = 8 if optimizer == "adamw" else 0
    name = {"adamw": "AdamW (m, v in fp32)", "sgd": "SGD (no momentum)"}[optimizer]
    mixed = "" if width == 4 else " + fp32 master weights"
    return ParamBytes(width, width, master + states, f"{dtype} weights and gradients, {name}{mixed}")


def korthikanti_activation_bytes(layers: int) -> sp.Expr:
    """Korthikanti et al. 2022, eq. 2: s*b*h*(34 + 5*a*s/h) bytes per layer (2-byte activations,
    no recomputation, dropout on), written with our symbols (s -> n, h -> d, a -> heads), for
    `layers` layers at the same length (a comparison, not our model)."""
    return layers * (34 * S.n * S.b * S.d + 5 * S.h * S.b * S.n**2)


def activation_bytes(model: CostModel, recompute: str) -> sp.Expr:
    """Bytes saved for backward over a training forward, after recomputation.

    none: everything the profile keeps.
    selective (Korthikanti et al. 2022): the attention core is recomputed in backward, so no
      n_q x n_k tensor is kept: the same bytes as a fused attention kernel keeps.
    full: each layer keeps only its input (b * tokens * d elements); in backward one layer at a time
      is recomputed, so the largest layer's own saved bytes are added once.
    """
    cfg = model.cfg
    if recompute == "selective" and model.profile.attention == "eager":
        model = CostModel(cfg, dataclasses.replace(model.profile, attention="flash"))
    total = model.total("saved_bytes")
    if recompute in ("none", "selective"):
        return total
    layer_leaves = model.layer_leaves()
    outside = total - sp.Add(*(leaf.total("saved_bytes") for leaf in layer_leaves))
    boundaries, layers = [], []
    for stack in ("encoder", "decoder"):
        leaves = [leaf for leaf in layer_leaves if leaf.path.startswith(f"{stack}.")]
        if leaves:
            seq = S.s if stack == "encoder" and cfg.architecture == "encoder-decoder" else S.n
            boundaries.append(leaves[0].count * S.b * seq * S.d * S.e)
            layers.append(sp.Add(*(leaf.cost.saved_bytes for leaf in leaves)))
    return outside + sp.Add(*boundaries) + (layers[0] if len(layers) == 1 else sp.Max(*layers))


@dataclass(frozen=True)
class Memory:
    """Memory expressions of one model and workload (bytes)."""

    weights: sp.Expr
    gradients: sp.Expr
    optimizer: sp.Expr
    activations: sp.Expr
    kv_cache: sp.Expr
    param_bytes: ParamBytes

    @property
    def training_total(self) -> sp.Expr:
        return self.weights + self.gradients + self.optimizer + self.activations

    @property
    def inference_total(self) -> sp.Expr:
        """Weights plus the KV cache after the prefill and the generated tokens."""
        return self.weights + self.kv_cache


def memory(cfg: ModelConfig, workload: Workload, model: CostModel | None = None) -> Memory:
    """Training and inference memory of a workload as expressions."""
    model = model or CostModel(cfg, profile_for(cfg, workload))
    per_param = param_bytes(workload.dtype, workload.optimizer)
    params = model.total("params")
    return Memory(
        weights=per_param.weights * params,
        gradients=per_param.gradients * params,
        optimizer=per_param.optimizer * params,
        activations=activation_bytes(model, workload.recompute),
        kv_cache=model.total("kv_cache_bytes"),
        param_bytes=per_param,
    )
