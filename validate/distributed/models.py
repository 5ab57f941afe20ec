"""The models the distributed runners train: the reference Transformer or Hugging Face's class,
built from one ModelConfig, with their decoder layers, inputs and loss in one place.

A Trainee is what a runner needs: the module, its list of decoder layers (the units FSDP shards and
pipelines split), deterministic token inputs with labels, and loss(model, inputs). build_trainee
builds it in the current mode: a runner enters run_context(fake=True), FakeTensorMode, around the
build AND the step (fake tensors of two modes cannot mix), after it has created its DeviceMesh
(a mesh created under FakeTensorMode fails). The dtype, if given, is the default dtype while
building (`.to(dtype)` fails under FakeTensorMode).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from costmodel.config import ModelConfig
from validate.hf_models import build_hf_model, default_dtype, fake_mode

IMPLEMENTATIONS = ("reference", "hf")


@dataclass
class Trainee:
    model: nn.Module
    layers: nn.ModuleList  # the decoder layers, in order
    inputs: dict[str, torch.Tensor]  # input_ids and labels, (b, n) int64
    loss: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor]


def tokens(batch: int, seq_len: int, vocab: int, offset: int = 3) -> torch.Tensor:
    """A fixed (batch, seq_len) int64 pattern that spreads over the vocabulary."""
    index = torch.arange(batch * seq_len, dtype=torch.long).reshape(batch, seq_len)
    return (index * 7919 + offset) % vocab


def _model_loss(model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's own cross-entropy (the reference's and HF's causal-LM loss alike)."""
    return model(**inputs).loss


def check_decoder_only(cfg: ModelConfig) -> None:
    if cfg.architecture != "decoder" or cfg.head != "lm":
        raise ValueError(
            f"model {cfg.name!r}: the distributed runners train decoder-only models with an LM head; "
            f"this one is {cfg.architecture} with head {cfg.head!r}."
        )


def build_trainee(cfg: ModelConfig, implementation: str, batch: int, seq_len: int,
                  dtype: torch.dtype | None = None, seed: int = 0, attention: str = "eager") -> Trainee:
    """The model of cfg ("reference" or "hf"), its decoder layers, inputs and loss (attention: HF's
    attn_implementation)."""
    check_decoder_only(cfg)
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; got {implementation!r}."
        )
    torch.manual_seed(seed)
    with default_dtype(dtype):
        if implementation == "reference":
            from validate.reference import build_reference

            model = build_reference(cfg).train()
            layers = model.decoder.layers
        else:
            model = build_hf_model(cfg, attention)
            layers = model.model.layers
        ids = tokens(batch, seq_len, cfg.vocab_size)
        inputs = {"input_ids": ids, "labels": tokens(batch, seq_len, cfg.vocab_size, offset=5)}
    return Trainee(model, layers, inputs, _model_loss)


def run_context(fake: bool) -> Any:
    """FakeTensorMode (fake=True) for building and training a model without memory, else nothing."""
    return fake_mode() if fake else contextlib.nullcontext()
