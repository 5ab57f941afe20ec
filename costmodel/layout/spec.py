"""A parallel layout as input: group sizes, schedule, ZeRO stage and framework, validated.

  dp, tp, pp       data-, tensor- and pipeline-parallel ranks (gpus = dp x tp x pp)
  sp               Megatron sequence parallelism: norms, dropouts and residuals split by tp
  zero             0-3: ZeRO's optimizer state (1), gradients (2) and parameters (3) sharded over
                   dp; FSDP2's fully_shard is 3 (2: reshard_after_forward=False)
  microbatches     per step per pipeline (the global batch is batch x microbatches x dp); with
                   pp = 1 it is gradient accumulation
  schedule         gpipe, 1f1b or interleaved (with virtual_stages per rank)
  stage_layers     layers per pipeline stage (uneven splits allowed); default as even as can be
  framework        whose conventions: megatron, deepspeed or fsdp2 (costmodel/layout/frameworks.py)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, ModelConfig, show

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"layout: {name} must be a positive integer, got {show(value)}.")


def tensor_split_sizes(cfg: ModelConfig) -> list[tuple[str, int]]:
    """What tensor parallelism divides (costmodel/layout/split.py), each a size tp must divide."""
    sizes = [("query heads", cfg.n_heads), ("key/value heads", cfg.n_kv_heads), ("FFN width", cfg.d_ff)]
    if cfg.moe:
        sizes.append(("experts' FFN width", cfg.d_expert))
        if cfg.d_shared:
            sizes.append(("shared expert's FFN width", cfg.d_shared))
    return sizes


@dataclass(frozen=True)
class Layout:
    """How a training step is spread over GPUs (see the module docstring)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: bool = False
    zero: int = 0
    microbatches: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    framework: str = "deepspeed"
    stage_layers: tuple[int, ...] | None = None
    loss_parallel: bool = True  # fsdp2/DTensor: logits stay vocabulary-sharded (torchtitan's default)
    # fsdp2: fully_shard's reshard_after_forward. None (the default with --zero 3): every layer
    # is gathered again in backward, the root group (embeddings, final norm, head) is not;
    # True: the root too; False (--zero 2): nothing is gathered again.
    reshard_after_forward: bool | None = None
    device: str = "cuda"  # where AdamW's step counters live (torch keeps them on the host on CUDA)
    # DeepSpeed's ZeRO-Offload/Infinity (costmodel/offload.py): what leaves the GPU, and where to.
    offload: str = "none"  # none, optimizer, params
    offload_device: str = "cpu"  # cpu, nvme
    gpus_per_node: int = 8  # ranks sharing a host (host memory per node)

    def __post_init__(self) -> None:
        from .frameworks import FRAMEWORKS

        for name in ("dp", "tp", "pp", "microbatches", "virtual_stages"):
            _positive(name, getattr(self, name))
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"layout: schedule must be one of {', '.join(SCHEDULES)}, got {show(self.schedule)}.")
        if self.framework not in FRAMEWORKS:
            raise ConfigError(f"layout: framework must be one of {', '.join(FRAMEWORKS)}, got {show(self.framework)}.")
        framework = FRAMEWORKS[self.framework]
        if self.zero not in framework.zero_stages:
            raise ConfigError(f"layout: {self.framework} supports --zero {', '.join(map(str, framework.zero_stages))} "
                              f"({framework.zero_note}), not {show(self.zero)}.")
        if self.framework == "deepspeed" and self.pp > 1 and self.zero > 1:
            raise ConfigError("layout: DeepSpeed's pipeline engine shards the optimizer state only "
                              "(--zero 0 or 1 with --pp > 1).")
        if self.sp and self.tp == 1:
            raise ConfigError("layout: sequence parallelism (--sp) splits over the tensor-parallel ranks; it needs --tp > 1.")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ConfigError("layout: --virtual-stages applies to the interleaved schedule only.")
        if self.schedule == "interleaved":
            if self.pp == 1:
                raise ConfigError("layout: the interleaved schedule needs pipeline parallelism (--pp > 1).")
            if self.microbatches % self.pp:
                raise ConfigError(f"layout: the interleaved schedule needs microbatches ({self.microbatches}) "
                                  f"to be a multiple of pp ({self.pp}).")
        if self.stage_layers is not None:
            for value in self.stage_layers:
                _positive("each stage's layers", value)
        if self.reshard_after_forward is not None and self.framework != "fsdp2":
            raise ConfigError("layout: reshard_after_forward is FSDP2's option (--framework fsdp2).")
        if self.reshard_after_forward is not None and self.zero == 2:
            raise ConfigError("layout: --zero 2 with fsdp2 means reshard_after_forward=False already.")
        if self.device not in ("cuda", "cpu"):
            raise ConfigError(f"layout: device must be cuda or cpu, got {show(self.device)}.")
        from ..offload import check as check_offload

        check_offload(self)

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def stages(self) -> int:
        """Pipeline stages: pp, times the virtual stages of each rank when interleaved."""
        return self.pp * self.virtual_stages

    def check(self, cfg: ModelConfig, gpus: int | None = None) -> None:
        """Raise ConfigError (one sentence) if the layout cannot run the model."""
        if gpus is not None and gpus != self.gpus:
            raise ConfigError(f"layout: tp x pp x dp = {self.tp} x {self.pp} x {self.dp} = {self.gpus}, "
                              f"not the {gpus} GPUs asked for.")
        for what, size in tensor_split_sizes(cfg):
            if size % self.tp:
                raise ConfigError(f"layout: tp = {self.tp} does not divide the {what} ({size}) of "
                                  f"model {show(cfg.name)}.")
        if self.sp and (cfg.moe or cfg.mla):
            raise ConfigError("layout: sequence parallelism with a mixture of experts or latent attention "
                              "is not modelled.")
        if self.pp > 1:
            if cfg.architecture == "encoder-decoder":
                raise ConfigError("layout: pipeline parallelism of encoder-decoders is not modelled.")
            if self.stages > cfg.n_layers:
                raise ConfigError(f"layout: {self.stages} pipeline stages for {cfg.n_layers} layers: "
                                  "pp x virtual stages must not exceed the layers.")
        if self.sp and cfg.norm_position != "pre":
            raise ConfigError("layout: sequence parallelism is modelled for pre-norm layers only.")
        if self.stage_layers is not None:
            if len(self.stage_layers) != self.stages:
                raise ConfigError(f"layout: {len(self.stage_layers)} stage sizes given for {self.stages} stages.")
            if sum(self.stage_layers) != cfg.n_layers:
                raise ConfigError(f"layout: the stages' layers add up to {sum(self.stage_layers)}, "
                                  f"not the {cfg.n_layers} layers of model {show(cfg.name)}.")

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
        chunks = min(m * v, 2 * (p - rank - 1) + (v - 1) * p + 1)
        return tuple(sum(1 for k in range(chunks) if (k // p) % v == i) for i in range(v))

    def stages_of(self, rank: int) -> tuple[int, ...]:
        """The (virtual) stages a pipeline rank runs: rank, rank + p, ... (Megatron's order)."""
        return tuple(rank + i * self.pp for i in range(self.virtual_stages))

    def to_dict(self, batch: int) -> dict[str, Any]:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "sp": self.sp, "zero": self.zero,
                "microbatches": self.microbatches, "schedule": self.schedule,
                "virtual_stages": self.virtual_stages, "framework": self.framework,
                "stage_layers": list(self.stage_layers) if self.stage_layers else None,
                "gpus": self.gpus, "micro_batch": batch,
                "global_batch": batch * self.microbatches * self.dp,
                **({"offload": self.offload, "offload_device": self.offload_device,
                    "gpus_per_node": self.gpus_per_node} if self.offload != "none" else {})}

