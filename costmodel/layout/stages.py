"""Where a model's layers fall on the pipeline ranks: each rank's Stage (costmodel/layout/parts.py),
its layers counted by part key (the cost tree's layer kinds, the recomputed layers apart).

Pure functions of the model, its structure's layer kinds and the layout's pipeline fields, cached:
the layouts `plan` enumerates that share a pipeline place it once. ParallelEstimate
(costmodel/layout/rank.py) reads them; what a stage holds and sends is there.
"""

from __future__ import annotations

from functools import lru_cache

from ..config import ModelConfig
from ..spec import RECOMPUTED_LAYERS
from .parts import Stage
from .spec import Layout


@lru_cache(maxsize=4096)
def layer_kind_counts(cfg: ModelConfig, layer_keys: tuple, stack: str, start: int,
                      layers: int) -> tuple[tuple[str, int], ...]:
    """How many of layers start .. start + layers - 1 of a stack are of each part key; the same
    stages recur across the layouts `plan` enumerates, so they are counted once."""
    keys = {(s, kind): key for key, (s, kind) in layer_keys}
    counts: dict[str, int] = {}
    for index in range(start, start + layers):
        key = keys[(stack, cfg.layer_kind_at(stack, index))]
        counts[key] = counts.get(key, 0) + 1
    return tuple(counts.items())


@lru_cache(maxsize=4096)
def kind_runs(kinds: tuple[tuple[tuple[str, int], ...], ...]) -> tuple[tuple[str, int], ...]:
    """The layers of each part key over a rank's virtual stages."""
    runs: dict[str, int] = {}
    for stage in kinds:
        for key, count in stage:
            runs[key] = runs.get(key, 0) + count
    return tuple(runs.items())


def stage_kinds(cfg: ModelConfig, layer_keys: tuple, recomputed: int | None, stack: str, start: int,
                layers: int) -> tuple[tuple[str, int], ...]:
    """Layers start .. start + layers - 1 of a stack by part key (ModelConfig.layer_kind_at);
    under full recomputation of N layers (recomputed, training), the first N of these (one
    pipeline stage; one model chunk of an interleaved schedule, assumed) recomputed: Megatron-Core's
    block method (TransformerConfig.recompute_method "block": "the number of transformer layers to
    recompute within each pipeline stage", megatron/core/transformer/transformer_config.py
    lines 543-555 at Megatron-LM d98e8a64)."""
    if recomputed is None:
        return layer_kind_counts(cfg, layer_keys, stack, start, layers)
    keys = {kind: key for key, (s, kind) in layer_keys if s == stack}
    rerun = min(recomputed, layers)
    return tuple((key, count) for key, count in ((keys[RECOMPUTED_LAYERS], rerun), (keys[None], layers - rerun))
                 if count)


@lru_cache(maxsize=4096)
def pipeline_stages(cfg: ModelConfig, layer_keys: tuple, stacks: tuple[str, ...], recomputed: int | None,
                    pp: int, virtual_stages: int, schedule: str, microbatches: int,
                    stage_layers: tuple[int, ...] | None) -> tuple[Stage, ...]:
    """Each pipeline rank's Stage: a pure function of the model, its structure's layer kinds, the
    layers recomputed and the layout's pipeline fields (what Layout.layers_per_stage, stages_of
    and in_flight read), so the layouts `plan` enumerates that share a pipeline place it once."""
    if pp == 1:
        layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers}
        kinds = tuple(pair for stack in stacks for pair in stage_kinds(cfg, layer_keys, recomputed, stack, 0, layers[stack]))
        return (Stage(0, (cfg.n_layers,), (1,), True, True, (kinds,)),)
    pipeline = Layout(pp=pp, virtual_stages=virtual_stages, schedule=schedule, microbatches=microbatches,
                      stage_layers=stage_layers)
    # each stage whole decoder layers (cfg.pipeline_unit tree layers each: Falcon-H1's three)
    per_stage = tuple(cfg.pipeline_unit * n for n in pipeline.layers_per_stage(cfg.pipeline_layers))
    starts = [sum(per_stage[:s]) for s in range(len(per_stage))]
    stack = stacks[0]
    last = pipeline.stages - 1
    out = []
    for rank in range(pp):
        own = pipeline.stages_of(rank)
        out.append(Stage(rank, tuple(per_stage[s] for s in own), pipeline.in_flight(rank), 0 in own, last in own,
                         tuple(stage_kinds(cfg, layer_keys, recomputed, stack, starts[s], per_stage[s]) for s in own)))
    return tuple(out)
