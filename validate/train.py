"""The seeds' training demo: the reference Transformer learns to reverse strings.

Task (as in the seeds): a source of 10 symbols drawn uniformly from 10 (tokens 1..10), the target
is the source reversed. The decoder is teacher-forced on <bos> (token 0) followed by the target
without its last token; the loss is cross-entropy over the 10 target positions; Adam with a short
warm-up. Evaluation: exact match of greedy decoding on held-out strings (drawn from a generator
with another seed). Everything is seeded, so a run is reproducible on one machine.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import torch
from torch import Tensor

from costmodel.config import ModelConfig
from costmodel.presets import load_preset

from .decoding import BOS, greedy_decode
from .reference import Transformer, build_reference

SYMBOLS = 10  # tokens 1..10; 0 is <bos>
LENGTH = 10
EVAL_SEED_OFFSET = 1_000_003  # held-out strings come from a generator seeded seed + this

Progress = Callable[[int, float], None]


def reversal_batch(
    batch: int, generator: torch.Generator, length: int = LENGTH, symbols: int = SYMBOLS
) -> tuple[Tensor, Tensor, Tensor]:
    """(source, decoder input, target), each (batch, length): target = source reversed,
    decoder input = <bos> then the target shifted right by one."""
    source = torch.randint(1, symbols + 1, (batch, length), generator=generator)
    target = source.flip(1)
    decoder_input = torch.cat([torch.full((batch, 1), BOS), target[:, :-1]], dim=1)
    return source, decoder_input, target



@dataclass
class TrainResult:
    model: Transformer
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def _check_task(cfg: ModelConfig, length: int, symbols: int) -> None:
    if cfg.architecture != "encoder-decoder" or cfg.head != "lm":
        raise ValueError(f"the reversal task needs an encoder-decoder with an LM head, not {cfg.name!r}.")
    if cfg.vocab_size < symbols + 1:
        raise ValueError(
            f"the reversal task needs {symbols + 1} tokens (<bos> and {symbols} symbols); "
            f"model {cfg.name!r} has a vocabulary of {cfg.vocab_size}."
        )
    if cfg.max_positions < length:
        raise ValueError(f"strings of length {length} need max_positions >= {length}.")


def learning_rate(step: int, peak: float, warmup: int) -> float:
    """Linear warm-up to `peak`, then inverse square-root decay (Vaswani et al.'s shape)."""
    step = step + 1
    return peak * min(step / warmup, math.sqrt(warmup / step))


def train_reversal(
    cfg: ModelConfig | None = None,
    steps: int = 2000,
    batch: int = 128,
    lr: float = 1e-3,
    warmup: int = 100,
    seed: int = 0,
    progress: Progress | None = None,
    threads: int | None = 1,
) -> TrainResult:
    """Train a fresh reference model (default: the seed-toy preset) on string reversal; returns
    the model (in eval mode) and the loss of every step. progress(step, loss) is called every step.

    threads: torch's intra-op threads during training (restored afterwards). One is the default:
    the toy's matrices are tiny, and on a 2-core machine shared with other work two threads were
    measured 4-8x slower per step than one (threads waiting on each other)."""
    cfg = cfg if cfg is not None else load_preset("seed-toy")
    _check_task(cfg, LENGTH, SYMBOLS)
    for name, value in (("steps", steps), ("batch", batch), ("warmup", warmup)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    with torch_threads(threads):
        return _train(cfg, steps, batch, lr, warmup, seed, progress)


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set for a while, then restored (None: leave it)."""
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _train(
    cfg: ModelConfig, steps: int, batch: int, lr: float, warmup: int, seed: int,
    progress: Progress | None,
) -> TrainResult:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = build_reference(cfg)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    result = TrainResult(model)
    began = time.perf_counter()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, lr, warmup)
        source, decoder_input, target = reversal_batch(batch, generator)
        loss = model(source, decoder_input, labels=target).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        result.losses.append(loss.item())
        if progress is not None:
            progress(step, result.losses[-1])
    result.seconds = time.perf_counter() - began
    model.eval()
    return result


@torch.no_grad()
def evaluate_exact_match(model: Transformer, n: int = 1000, seed: int = 0, batch: int = 500) -> float:
    """The fraction of n held-out strings whose greedy decoding is exactly the reversed string."""
    if n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed + EVAL_SEED_OFFSET)
    correct = 0
    for first in range(0, n, batch):
        source, _, target = reversal_batch(min(batch, n - first), generator)
        predicted = greedy_decode(model, source, LENGTH)
        correct += int((predicted == target).all(dim=1).sum())
    model.train(was_training)
    return correct / n


def save_loss_curve(losses: list[float], path: str | Path, title: str = "string reversal") -> Path:
    """The training loss per step as a PNG (log scale), written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    if not losses:
        raise ValueError("there are no losses to plot.")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(range(1, len(losses) + 1), losses, linewidth=1)
    axes.set_yscale("log")
    axes.set_xlabel("step")
    axes.set_ylabel("cross-entropy loss (nats per token)")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp.png")
    try:
        figure.savefig(temporary, dpi=100)
        os.replace(temporary, path)
    finally:
        plt.close(figure)
        temporary.unlink(missing_ok=True)
    return path


def run_train_demo(
    steps: int = 2000,
    batch: int = 128,
    seed: int = 0,
    out_png: str | Path = Path("out/train_loss.png"),
    progress: Progress | None = None,
    eval_strings: int = 1000,
) -> dict:
    """The seeds' demo end to end: train seed-toy on reversal, evaluate exact match on held-out
    strings, save the loss curve. Returns {"steps", "batch", "seed", "first_loss", "final_loss",
    "exact_match", "eval_strings", "seconds", "png"} (seconds: training only)."""
    result = train_reversal(steps=steps, batch=batch, seed=seed, progress=progress)
    with torch_threads(1):
        exact = evaluate_exact_match(result.model, n=eval_strings, seed=seed)
    png = save_loss_curve(result.losses, out_png)
    return {
        "steps": steps,
        "batch": batch,
        "seed": seed,
        "first_loss": result.losses[0],
        "final_loss": result.losses[-1],
        "exact_match": exact,
        "eval_strings": eval_strings,
        "seconds": result.seconds,
        "png": str(png),
    }
