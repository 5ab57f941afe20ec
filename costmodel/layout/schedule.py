"""A layout's pipeline arithmetic: which (virtual) stages a rank runs, the layers of each, the
micro-batches each holds at the rank's peak and the bubble, by schedule.

PipelineSchedule is Layout's (costmodel/layout/spec.py) base: it reads the layout's pp,
virtual_stages, microbatches, schedule and stage_layers, which Layout validates; whether a
framework's engine runs the schedule is Layout.check_schedule.
"""

from __future__ import annotations

from ..config import ConfigError

V_SCHEDULES = ("zbv", "dualpipev")  # two stages a rank, r and 2p - 1 - r


class PipelineSchedule:
    """The pipeline fields' arithmetic (Layout's pp, virtual_stages, microbatches, schedule, stage_layers)."""

    pp: int
    virtual_stages: int
    microbatches: int
    schedule: str
    stage_layers: tuple[int, ...] | None

    @property
    def stages(self) -> int:
        """Pipeline stages: pp, times the virtual stages of each rank when interleaved."""
        return self.pp * self.virtual_stages

    def layers_per_stage(self, layers: int) -> tuple[int, ...]:
        """Layers of each (virtual) stage in pipeline order: the given split, or as even as it
        can be with the extra layers on the first stages."""
        if self.stage_layers is not None:
            return self.stage_layers
        base, extra = divmod(layers, self.stages)
        return tuple(base + (1 if i < extra else 0) for i in range(self.stages))

    def in_flight(self, rank: int) -> tuple[int, ...]:
        """Micro-batches each of this pipeline rank's stages holds at the rank's peak (forward
        begun, backward not yet done), one per stage of the rank: GPipe all m; 1F1B
        min(m, p - rank); interleaved, Megatron's warm-up, 2(p - rank - 1) + (v - 1)p forward
        chunks (micro-batch, virtual stage) and one more, chunk k on virtual stage (k // p) mod v
        (Narayanan et al. 2021; torch's ScheduleInterleaved1F1B, measured: FINDINGS 10.4)."""
        m, p, v = self.microbatches, self.pp, self.virtual_stages
        if self.schedule == "gpipe":
            return (m,)
        if self.schedule == "1f1b":
            return (min(m, p - rank),)
        # Split backward: a micro-batch is held until its weight gradient (W) has run. Read from
        # torch 2.13's own schedules (validate/distributed/schedules.py, tests/test_frontier_layouts.py):
        # ZB-H1 (ScheduleInterleavedZeroBubble, one stage a rank) defers W, so every rank holds
        # min(m, p); ZB-V and DualPipeV hold on stage r min(m, 2p - 1 - r) (ZB-V) or min(m, 2p - r)
        # (DualPipeV) and on stage 2p - 1 - r min(m, r + 1).
        if self.schedule == "zb-h1":
            return (min(m, p),)
        if self.schedule in V_SCHEDULES:
            first = 2 * p - 1 - rank if self.schedule == "zbv" else 2 * p - rank
            return (min(m, first), min(m, rank + 1))
        chunks = min(m * v, 2 * (p - rank - 1) + (v - 1) * p + 1)
        return tuple(sum(1 for k in range(chunks) if (k // p) % v == i) for i in range(v))

    def bubble(self) -> float:
        """The pipeline bubble in units of one micro-batch's time on a rank (forward and
        backward, T). Split-backward schedules take F : I : W = 1 : 1 : 1 (a forward, the input
        gradient, the weight gradient: each a third of T, as for the matrix products).
          gpipe, 1f1b   (p - 1)(F + B) = (p - 1) T                   (Narayanan et al. 2021)
          interleaved   (p - 1) T / v                                 (Narayanan et al. 2021)
          zb-h1         (p - 1)(F + I - W) = (p - 1) T / 3            (Qi et al. 2023, ZB-H1)
          zbv           (p - 1) T / 6: one chunk's forward a rank (torch's ScheduleZBVZeroBubble
                        run with unit times; the paper's (p - 1)(F + I - 2W) = 0 is not what
                        torch's order reaches: validate/distributed/schedules.py, FINDINGS 22.3)
          dualpipev     (p - 1)(F&B + B - 3W), chunks of T / 2, F&B = F + B: (p - 1) T / 3
                        (DeepSeek-V3's DualPipe table, (PP/2 - 1)(F&B + B - 3W), on 2p chunks)
        ZB-H1's and DualPipeV's equal torch's orders run with unit times."""
        p, v = self.pp, self.virtual_stages
        if p == 1:
            return 0.0
        return {"gpipe": p - 1, "1f1b": p - 1, "interleaved": (p - 1) / v, "zb-h1": (p - 1) / 3,
                "zbv": (p - 1) / 6, "dualpipev": (p - 1) / 3}[self.schedule]

    def stages_of(self, rank: int) -> tuple[int, ...]:
        """The (virtual) stages a pipeline rank runs: rank, rank + p, ... (Megatron's order); in a
        V (zbv, dualpipev) rank and 2p - 1 - rank."""
        if self.schedule in V_SCHEDULES:
            return (rank, 2 * self.pp - 1 - rank)
        return tuple(rank + i * self.pp for i in range(self.virtual_stages))

    def rank_of(self, stage: int) -> int:
        """The pipeline rank that runs a (virtual) stage."""
        if self.schedule in V_SCHEDULES:
            return stage if stage < self.pp else 2 * self.pp - 1 - stage
        return stage % self.pp


def empty_edge_chunks(layers: int, stages: int) -> tuple[int, ...]:
    """Layers of each (virtual) stage when the first holds only the embedding and the last only
    the head, the layers as even as they can be over the rest, the extra ones first (Llama 3,
    arXiv 2407.21783, section 3.3.2: "the first model chunk on the first stage has only the
    embedding, and the last model chunk on the last stage has only output projection and loss")."""
    if stages < 3:
        raise ConfigError(f"layout: empty edge chunks need at least 3 pipeline stages, got {stages}.")
    base, extra = divmod(layers, stages - 2)
    return (0,) + tuple(base + (1 if i < extra else 0) for i in range(stages - 2)) + (0,)
