"""One model + one workload -> every number `estimate` reports, as exact Python integers.

This is the library behind `python cli.py estimate`: parameters, FLOPs, memory and the regime,
in total and per block. Every value is a cost-tree expression evaluated exactly; nothing here
adds a formula of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import sympy as sp

from . import symbols as S
from .config import ModelConfig, Workload
from .evaluate import exact, exact_rational, values
from .memory import korthikanti_activation_bytes, memory
from .model import CostModel, Leaf, profile_for

EMBEDDING_GROUPS = ("embedding", "encoder_embedding", "decoder_embedding")


@dataclass(frozen=True)
class BlockRow:
    """One leaf of the cost tree with its numbers summed over its repetitions."""

    path: str
    count: int
    params: int
    flops_forward: int
    flops_backward: int
    flops_other: int
    saved_bytes: int
    kv_cache_bytes: int


class Estimate:
    """All numbers of one model and workload; cheap to build, evaluated on first use."""

    def __init__(self, cfg: ModelConfig, workload: Workload):
        self.warnings = workload.check_fits(cfg)
        self.cfg = cfg
        self.workload = workload
        self.model = CostModel(cfg, profile_for(cfg, workload))
        self.values = {k: sp.Integer(v) for k, v in values(cfg, workload).items()}
        self.memory = memory(cfg, workload, self.model)

    def number(self, expr: sp.Expr) -> int:
        return exact(expr, self.values)

    def total(self, quantity: str) -> int:
        return self.number(self.model.total(quantity))

    @cached_property
    def tokens(self) -> int:
        """Tokens per batch on the decoder (or only) side: the per-token denominator."""
        return int(self.values[S.b] * self.values[S.n])

    @cached_property
    def rows(self) -> list[BlockRow]:
        return [self._row(leaf) for leaf in self.model.leaves]

    def _row(self, leaf: Leaf) -> BlockRow:
        n = self.number
        return BlockRow(
            path=leaf.path,
            count=n(leaf.count),
            params=n(leaf.total("params")),
            flops_forward=n(leaf.total("flops_matmul")),
            flops_backward=n(leaf.total("flops_matmul_backward")),
            flops_other=n(leaf.total("flops_other")),
            saved_bytes=n(leaf.total("saved_bytes")),
            kv_cache_bytes=n(leaf.total("kv_cache_bytes")),
        )

    def params(self) -> dict[str, Any]:
        rows = self.rows
        embeddings = sum(r.params for r in rows if r.path.split(".")[0] in EMBEDDING_GROUPS)
        head = sum(r.params for r in rows if r.path.startswith("head."))
        per_layer = {}
        for stack in ("encoder", "decoder"):
            layer = [r for r in rows if r.path.startswith(f"{stack}.layer.")]
            if layer:
                per_layer[stack] = sum(r.params for r in layer) // layer[0].count
        return {
            "total": self.total("params"),
            "embeddings": embeddings,
            "head": head,
            "per_layer": per_layer,
            "by_block": {r.path: r.params for r in rows if r.params},
        }

    def flops(self) -> dict[str, Any]:
        forward = self.total("flops_matmul")
        backward = self.total("flops_matmul_backward")
        other = self.total("flops_other")
        return {
            "forward": forward,
            "backward": backward,
            "training": forward + backward,
            "forward_per_token": forward // self.tokens,
            "training_per_token": (forward + backward) // self.tokens,
            "other_forward": other,
            "by_block": {r.path: r.flops_forward for r in self.rows if r.flops_forward},
            "other_by_block": {r.path: r.flops_other for r in self.rows if r.flops_other},
            "other_elements": {
                kind: self.number(count) for kind, count in self.model.element_counts().items()
            },
        }

    def memory_numbers(self) -> dict[str, Any]:
        m, n = self.memory, self.number
        korthikanti = n(korthikanti_activation_bytes(self.cfg.n_layers))
        return {
            "weights": n(m.weights),
            "gradients": n(m.gradients),
            "optimizer": n(m.optimizer),
            "activations": n(m.activations),
            "kv_cache": n(m.kv_cache),
            "training_total": n(m.training_total),
            "inference_total": n(m.inference_total),
            "bytes_per_param": {
                "weights": m.param_bytes.weights,
                "gradients": m.param_bytes.gradients,
                "optimizer": m.param_bytes.optimizer,
                "note": m.param_bytes.note,
            },
            "korthikanti_2022_activations": korthikanti,
            "activations_by_block": {r.path: r.saved_bytes for r in self.rows if r.saved_bytes},
        }

    def regime(self) -> dict[str, Any]:
        crossover = self.model.crossover
        value = exact_rational(crossover, self.values)
        attention = self.number(self.model.attention_flops())
        linear = self.number(self.model.projection_ffn_flops())
        return {
            "crossover_seq_len": float(value),
            "crossover_seq_len_exact": str(value),
            "crossover_formula": str(crossover),
            "crossover_latex": S.latex(crossover),
            "attention_flops": attention,
            "projection_ffn_flops": linear,
            "attention_share": attention / (attention + linear),
            "dominant": "attention (n^2 d)" if attention > linear else "projections and FFN (n d^2)",
        }

    def inputs(self) -> dict[str, Any]:
        w = self.workload
        return {
            "model": self.cfg.name,
            "family": self.cfg.family,
            "architecture": self.cfg.architecture,
            "seq_len": w.seq_len,
            "tgt_len": w.decoder_len if self.cfg.architecture == "encoder-decoder" else None,
            "batch": w.batch,
            "dtype": w.dtype,
            "impl": w.impl,
            "attention": w.attention,
            "recompute": w.recompute,
            "gen_tokens": w.gen_tokens,
            "optimizer": w.optimizer,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs(),
            "params": self.params(),
            "flops": self.flops(),
            "memory": self.memory_numbers(),
            "regime": self.regime(),
        }
