"""Vectorised sweeps over (n, b): every quantity of a model on a grid, in one Sweep call, as a frame.

The expressions are the cost tree's (CostModel totals, costmodel.memory); costmodel.evaluate.Sweep
lambdifies them once (cse=True, numpy) and evaluates the whole grid at once. Values are float64:
exact to about 16 significant digits (`estimate --json` gives exact integers for one point).
SweepResult.frame() is the pandas DataFrame that costmodel.sweep() returns and that the `sweep`
and `report` commands write as CSV.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, ModelConfig, Workload

MAX_POINTS = 20_000_000  # a grid larger than this is refused (memory: ~8 bytes x columns each)

#: The columns of a sweep, in order, with their units.
QUANTITIES = (
    ("forward_flops", "FLOP"),
    ("backward_flops", "FLOP"),
    ("training_flops", "FLOP"),
    ("other_flops", "FLOP"),
    ("attention_flops", "FLOP"),
    ("projection_ffn_flops", "FLOP"),
    ("attention_share", "fraction"),
    ("activation_bytes", "byte"),
    ("kv_cache_bytes", "byte"),
    ("weights_bytes", "byte"),
    ("training_bytes", "byte"),
    ("inference_bytes", "byte"),
)


def expressions(cfg: ModelConfig, workload: Workload) -> tuple[Any, dict[str, Any]]:
    """The cost tree's expression of every column, for the workload's profile and dtype."""
    from .memory import memory
    from .tree import CostModel, profile_for

    model = CostModel(cfg, profile_for(cfg, workload))
    mem = memory(cfg, workload, model)
    forward, backward = model.total("flops_matmul"), model.total("flops_matmul_backward")
    attention, linear = model.attention_flops(), model.projection_ffn_flops()
    exprs = {
        "forward_flops": forward,
        "backward_flops": backward,
        "training_flops": forward + backward,
        "other_flops": model.total("flops_other"),
        "attention_flops": attention,
        "projection_ffn_flops": linear,
        "attention_share": attention / (attention + linear),
        "activation_bytes": mem.activations,
        "kv_cache_bytes": mem.kv_cache,
        "weights_bytes": mem.weights,
        "training_bytes": mem.training_total,
        "inference_bytes": mem.inference_total,
    }
    return model, {name: exprs[name] for name, _ in QUANTITIES}


@dataclass(frozen=True)
class SweepResult:
    model: str
    workload: Workload
    seq_lens: Any  # (points,) int64, n outer
    batches: Any  # (points,) int64, b inner
    columns: dict[str, Any]  # name -> (points,) float64
    compile_seconds: float  # lambdify
    evaluate_seconds: float  # the vectorised call

    @property
    def points(self) -> int:
        return int(self.seq_lens.size)

    def frame(self) -> Any:
        """The grid as a pandas DataFrame: model, seq_len, batch, then every column (float64;
        integral values below 2**53 are exact)."""
        import pandas as pd

        data = {"model": self.model, "seq_len": self.seq_lens, "batch": self.batches, **self.columns}
        return pd.DataFrame(data)


def run(cfg: ModelConfig, workload: Workload, seq_lens: list[int], batches: list[int]) -> SweepResult:
    """Every column on the grid seq_lens x batches (n outer, b inner) in one Sweep call."""
    import numpy as np

    from .evaluate import Sweep

    points = len(seq_lens) * len(batches)
    if points > MAX_POINTS:
        raise ConfigError(f"the grid has {points:,} points; at most {MAX_POINTS:,} at once.")
    started = time.perf_counter()
    model, exprs = expressions(cfg, workload)
    sweep = Sweep(model, exprs)
    compiled = time.perf_counter()
    grid_n, grid_b = np.meshgrid(np.asarray(seq_lens, dtype=np.int64),
                                 np.asarray(batches, dtype=np.int64), indexing="ij")
    grid_n, grid_b = grid_n.ravel(), grid_b.ravel()
    if cfg.architecture == "encoder-decoder":  # n is the decoder side: tgt_len or the same n
        source = grid_n
        grid_dec = grid_n if workload.tgt_len is None else np.full_like(grid_n, workload.tgt_len)
    else:
        source, grid_dec = grid_n, grid_n
    columns = sweep(n=grid_dec, s=source, b=grid_b, T=workload.gen_tokens, c=grid_dec + workload.fed_back_tokens(),
                    e=workload.bytes_per_element)
    done = time.perf_counter()
    return SweepResult(cfg.name, workload, grid_n, grid_b, columns, compiled - started,
                       done - compiled)
