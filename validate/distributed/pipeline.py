"""Pipeline parallelism with torch.distributed.pipelining, measured per rank and per stage.

The reference decoder (validate/reference.py) is cut into stages: the first holds the token
embedding, the last the final norm, the LM head and (through the schedule's loss_fn) the loss;
every stage recomputes the causal mask and RoPE tables it needs (no parameters). Schedules:
"gpipe" (ScheduleGPipe), "1f1b" (Schedule1F1B): one stage per rank, stage s on rank s;
"interleaved" (ScheduleInterleaved1F1B): v stages per rank, stage s on rank s mod p.
Run it with launch.run_gloo: on torch 2.13 the fake process group cannot run pipelining (the stages'
warm-up vote and shape negotiation are real messages that the fake group never delivers).

measure_pipeline(rank, world_size, case) runs two training steps (schedule.step + AdamW) on one
rank; the first warms the schedule up (shape and mode negotiation between stages), the second is
measured. It returns plain data:
    {"stages": {stage index: {"layers": [layer indices], "saved_peak_bytes": int,
                              "saved_bytes_per_microbatch": [bytes of each micro-batch],
                              "max_in_flight": int}},
     "rank_saved_peak_bytes": the peak of the saved bytes of all this rank's stages together,
     "p2p": [(kind, peer rank, payload bytes, dtype), ...] of the measured step, in issue order,
     "communication": {"pp": {"send": bytes, "recv": bytes}}, "calls": {"pp": {...: count}},
     "state": {"parameters"|"gradients"|"optimizer": {"storage": int, "elements": int}}}
"Saved bytes" follow validate.measure: unique storages saved for backward, parameters and
buffers excluded. A storage is live from the forward op that saves it until autograd frees the
node that holds it (after that node's backward), tracked with saved_tensors_hooks and a finaliser
on each packed object; it belongs to the micro-batch that saved it first (the schedule cuts the
batch into views, so the first stage's saved token ids are the whole batch's storage, counted once
with micro-batch 0). A micro-batch is in flight on a stage from the start of its forward to the
end of its backward_one_chunk.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributed.pipelining import (
    PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B,
)

from costmodel.config import ModelConfig
from validate.reference import build_reference
from validate.reference_blocks import AttentionInputs, additive_mask

from .comm import CommRecorder
from .models import check_decoder_only, tokens
from .state import training_state

SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class PipelineCase:
    """One pipeline run: microbatches of microbatch_size sequences of seq_len tokens per step.
    layers_per_stage: layers of each stage in order (default: an even split, which must exist)."""

    cfg: ModelConfig
    schedule: str = "1f1b"
    microbatches: int = 4
    microbatch_size: int = 1
    seq_len: int = 8
    virtual_stages: int = 1  # stages per rank; > 1 only for "interleaved"
    layers_per_stage: tuple[int, ...] | None = None


class ReferenceStage(nn.Module):
    """A run of decoder layers of the reference model; the first stage embeds the token ids, the
    last applies the final norm and the head (logits (B, T, V))."""

    def __init__(self, model: nn.Module, layers: list[int], first: bool, last: bool):
        super().__init__()
        self.embedding = model.embedding if first else None
        self.layers = nn.ModuleList(model.decoder.layers[i] for i in layers)
        self.rotary = model.decoder.rotary  # RoPE cos/sin tables: buffers, no parameters
        self.final_norm = model.decoder.final_norm if last else None
        self.head = model.head if last else None

    def forward(self, x: Tensor) -> Tensor:
        if self.embedding is not None:
            x = self.embedding(x)  # (B, T, d)
        T = x.shape[1]
        mask = additive_mask(T, T, causal=True, dtype=x.dtype, device=x.device)  # (1, 1, T, T)
        inputs = AttentionInputs(mask, None, self.rotary(0, T) if self.rotary is not None else None)
        for layer in self.layers:
            x = layer(x, inputs)  # (B, T, d)
        if self.head is not None:
            x = self.head(self.final_norm(x) if self.final_norm is not None else x)  # (B, T, V)
        return x


def check_case(case: PipelineCase, world_size: int) -> tuple[int, ...]:
    """The layers of each stage; raises ValueError for a layout the runner cannot build."""
    cfg = case.cfg
    check_decoder_only(cfg)
    if cfg.position in ("alibi", "relative"):
        raise ValueError(
            f"model {cfg.name!r}: the pipeline stages do not carry {cfg.position} position biases."
        )
    if case.schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}; got {case.schedule!r}.")
    if case.virtual_stages != 1 and case.schedule != "interleaved":
        raise ValueError(f"schedule {case.schedule!r} runs one stage per rank; virtual_stages must be 1.")
    stages = world_size * case.virtual_stages
    split = case.layers_per_stage
    if split is None:
        if cfg.n_decoder_layers % stages:
            raise ValueError(
                f"{cfg.n_decoder_layers} layers do not split evenly into {stages} stages; "
                "give layers_per_stage."
            )
        split = (cfg.n_decoder_layers // stages,) * stages
    if len(split) != stages or sum(split) != cfg.n_decoder_layers or min(split) < 0:
        raise ValueError(
            f"layers_per_stage {split} must give {stages} stages whose layers add up to "
            f"{cfg.n_decoder_layers}."
        )
    return tuple(split)


def stage_indices(rank: int, world_size: int, virtual_stages: int) -> list[int]:
    """The stages rank holds: rank, rank + p, rank + 2p, ... (the looped placement)."""
    return [rank + k * world_size for k in range(virtual_stages)]


def _stage_layers(split: tuple[int, ...], stage: int) -> list[int]:
    start = sum(split[:stage])
    return list(range(start, start + split[stage]))


class SavedTracker:
    """Live bytes saved for backward, per stage: storages are added at pack time and removed when
    the last packed object holding them is freed. Parameters and buffers (`excluded`) never count."""

    def __init__(self, excluded: set[int]):
        self.excluded = excluded
        self.current: tuple[int, int] | None = None  # (stage, micro-batch) running forward
        self.refs: dict[int, int] = defaultdict(int)  # storage -> live packed objects
        self.owner: dict[int, tuple[int, int, int]] = {}  # storage -> (stage, micro-batch, bytes)
        self.live: dict[int, int] = defaultdict(int)  # stage -> live bytes
        self.live_total = 0
        self.peak: dict[int, int] = defaultdict(int)
        self.peak_total = 0
        self.per_microbatch: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.in_flight: dict[int, int] = defaultdict(int)  # forwards begun minus backwards done
        self.max_in_flight: dict[int, int] = defaultdict(int)

    def forward_begins(self, stage: int, microbatch: int) -> None:
        self.current = (stage, microbatch)
        self.in_flight[stage] += 1
        self.max_in_flight[stage] = max(self.max_in_flight[stage], self.in_flight[stage])

    def backward_done(self, stage: int) -> None:
        self.in_flight[stage] -= 1

    def pack(self, t: Tensor) -> object:
        holder = _Packed(t)
        key = t.untyped_storage()._cdata
        if key in self.excluded or self.current is None:
            return holder
        if self.refs[key] == 0:
            self._add(key, t.untyped_storage().nbytes())
        self.refs[key] += 1
        weakref.finalize(holder, self._release, key)
        return holder

    @staticmethod
    def unpack(holder: object) -> Tensor:
        return holder.tensor

    def _add(self, key: int, nbytes: int) -> None:
        stage, microbatch = self.current
        self.owner[key] = (stage, microbatch, nbytes)
        self.live[stage] += nbytes
        self.live_total += nbytes
        self.peak[stage] = max(self.peak[stage], self.live[stage])
        self.peak_total = max(self.peak_total, self.live_total)
        self.per_microbatch[stage][microbatch] += nbytes

    def _release(self, key: int) -> None:
        self.refs[key] -= 1
        if self.refs[key]:
            return
        del self.refs[key]
        stage, _, nbytes = self.owner.pop(key)
        self.live[stage] -= nbytes
        self.live_total -= nbytes


class _Packed:
    """What autograd holds for one saved tensor while the tracker is on."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor


def _track_stage(stage: PipelineStage, tracker: SavedTracker) -> None:
    """Tag what a stage's forward saves with (stage, micro-batch number), and count the micro-batches
    in flight (forward begun, backward not finished). The loss computed after the last stage's
    forward keeps that stage's tag (a tag holds until the next forward)."""
    index, count = stage.stage_index, [0]

    def pre_hook(module: nn.Module, args: tuple) -> None:
        tracker.forward_begins(index, count[0])
        count[0] += 1

    stage.submod.register_forward_pre_hook(pre_hook)
    backward_one_chunk = stage.backward_one_chunk

    def counted_backward(*args, **kwargs):
        result = backward_one_chunk(*args, **kwargs)
        tracker.backward_done(index)
        return result

    stage.backward_one_chunk = counted_backward


def _schedule(case: PipelineCase, stages: list[PipelineStage], loss_fn):
    if case.schedule == "gpipe":
        return ScheduleGPipe(stages[0], case.microbatches, loss_fn=loss_fn)
    if case.schedule == "1f1b":
        return Schedule1F1B(stages[0], case.microbatches, loss_fn=loss_fn)
    return ScheduleInterleaved1F1B(stages, case.microbatches, loss_fn=loss_fn)


def _cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def _schedule_step(schedule, stages: list[PipelineStage], inputs: Tensor, labels: Tensor) -> None:
    """schedule.step with what this rank's stages take: the inputs on the first stage's rank, the
    target on the last stage's."""
    args = (inputs,) if any(s.is_first for s in stages) else ()
    kwargs = {"target": labels, "losses": []} if any(s.is_last for s in stages) else {}
    schedule.step(*args, **kwargs)


def _build_stages(case: PipelineCase, rank: int, world_size: int, split: tuple[int, ...]
                  ) -> tuple[dict[int, ReferenceStage], list[PipelineStage]]:
    """This rank's stage modules (cut from one full reference model) and their PipelineStages."""
    n_stages = world_size * case.virtual_stages
    torch.manual_seed(0)
    model = build_reference(case.cfg).train()
    modules = {
        s: ReferenceStage(model, _stage_layers(split, s), first=s == 0, last=s == n_stages - 1)
        for s in stage_indices(rank, world_size, case.virtual_stages)
    }
    stages = [PipelineStage(m, s, n_stages, torch.device("cpu"), group=dist.group.WORLD)
              for s, m in modules.items()]
    return modules, stages


def _measured_step(schedule, stages: list[PipelineStage], modules: dict[int, ReferenceStage],
                   inputs: Tensor, labels: Tensor) -> tuple[SavedTracker, CommRecorder]:
    """One schedule step under the saved-bytes tracker and the communication recorder."""
    held = [t for m in modules.values() for t in [*m.parameters(), *m.buffers()]]
    excluded = {t.untyped_storage()._cdata for t in held}
    tracker = SavedTracker(excluded)
    for stage in stages:
        _track_stage(stage, tracker)
    recorder = CommRecorder({"pp": dist.group.WORLD})
    hooks = torch.autograd.graph.saved_tensors_hooks(tracker.pack, tracker.unpack)
    with recorder, recorder.in_phase("step"), hooks:
        _schedule_step(schedule, stages, inputs, labels)
    return tracker, recorder


def _stage_report(tracker: SavedTracker, split: tuple[int, ...], stage: int) -> dict:
    per_microbatch = tracker.per_microbatch[stage]
    return {
        "layers": _stage_layers(split, stage),
        "saved_peak_bytes": tracker.peak[stage],
        "saved_bytes_per_microbatch": [per_microbatch[m] for m in sorted(per_microbatch)],
        "max_in_flight": tracker.max_in_flight[stage],
    }


def measure_pipeline(rank: int, world_size: int, case: PipelineCase) -> dict:
    """One rank's pipeline measurements for case (see the module docstring for the keys)."""
    split = check_case(case, world_size)
    modules, stages = _build_stages(case, rank, world_size, split)
    optimizer = torch.optim.AdamW([p for m in modules.values() for p in m.parameters()], lr=1e-3)
    batch = case.microbatches * case.microbatch_size
    inputs = tokens(batch, case.seq_len, case.cfg.vocab_size)
    labels = tokens(batch, case.seq_len, case.cfg.vocab_size, offset=5)
    schedule = _schedule(case, stages, _cross_entropy)
    _schedule_step(schedule, stages, inputs, labels)  # warm-up: stages negotiate shapes and mode
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    tracker, recorder = _measured_step(schedule, stages, modules, inputs, labels)
    optimizer.step()
    return {
        "stages": {s: _stage_report(tracker, split, s) for s in modules},
        "rank_saved_peak_bytes": tracker.peak_total,
        "p2p": [(r.kind, r.peer, r.payload_bytes, r.dtype) for r in recorder.records],
        "communication": recorder.totals(),
        "calls": recorder.counts(),
        "state": training_state(nn.ModuleList(modules.values()), optimizer).as_dict(),
    }
