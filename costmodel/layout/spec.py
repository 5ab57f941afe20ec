"""A parallel layout as input: group sizes, schedule, ZeRO stage and framework, validated.

  dp, tp, pp       data-, tensor- and pipeline-parallel ranks (gpus = dp x tp x pp x cp)
  sp               Megatron sequence parallelism: norms, dropouts and residuals split by tp
  zero             0-3: ZeRO's optimizer state (1), gradients (2) and parameters (3) sharded over
                   dp; FSDP2's fully_shard is 3 (2: reshard_after_forward=False); megatron's 3 is
                   Megatron-FSDP, optim_grads_params (costmodel/layout/megatron_fsdp.py)
  microbatches     per step per pipeline (the global batch is batch x microbatches x dp); with
                   pp = 1 it is gradient accumulation
  schedule         gpipe, 1f1b, interleaved (with virtual_stages per rank), zb-h1, zbv or dualpipev
                   (split backward: the zero-bubble schedules of Qi et al. 2023 and DeepSeek-V3's
                   DualPipeV; zbv and dualpipev hold two stages a rank in a V: r and 2p - 1 - r)
  stage_layers     layers per pipeline stage (uneven splits allowed); default as even as can be
  framework        whose conventions: megatron, deepspeed or fsdp2 (costmodel/layout/frameworks.py)
  ep               expert-parallel ranks, drawn from dp, cp x dp with context parallelism, tp x cp x dp / etp
                   with the experts' own tensor parallelism (etp 1: parallel folding; costmodel/layout/experts.py)
  dp_shard         the ranks each parameter's state is sharded over (None: all dp); 1 < dp_shard < dp is
                   hybrid sharding, FSDP2's HSDP (torchtitan's data_parallel_shard_degree): dp / dp_shard replicas
                   of the shards, each gradient shard all-reduced over them (layout/communication.py); megatron
                   --zero 3's HFSDP: the optimizer state sharded over all of dp, the gradient shard reduce-scattered
                   and the weights all-gathered over the replicas once a step (layout/megatron_fsdp.py)
  capacity_factor  a mixture of experts' capacity per expert (None: dropless); pad_to_capacity: every expert
                   padded to it (Megatron-Core's moe_pad_expert_input_to_capacity, costmodel/layout/experts.py)
  ep_dispatcher    how expert parallelism moves tokens: "alltoall" (a copy per routed slot) or the
                   flex dispatcher's "deepep"/"hybridep" (a token once per target node, then once
                   per target rank over NVLink; costmodel/layout/experts.py flex_copies)
  fp8              an FP8 (or FP4) training recipe: tensorwise, rowwise, current, delayed, blockwise, mxfp8 or nvfp4
                   (costmodel/layout/fp8.py)
  cp, cp_rotate    context-parallel ranks, each holding n / cp of every sequence; how keys and
                   values travel: "allgather" (torch 2.13's default), "ring" or "a2a" (heads scattered,
                   the sequence gathered: DeepSpeed-Ulysses, Transformer Engine's cp_comm_type "a2a";
                   costmodel/layout/context.py); None, the default: a2a under DeepSpeed (its only one),
                   else allgather, once cp is above 1 (None at cp 1: nothing rotates)
  cp_kv_heads      which heads the ring moves: "kv" (the model's h_kv, Transformer Engine's) or
                   "repeated" (h: K and V repeated to every query head before sdpa, torchtitan's Llama)
  all_reduce       whose code runs an all-reduce inside a node: "nccl" (the default), "intra-node"
                   (PyTorch's IntraNodeComm, ENABLE_INTRA_NODE_COMM=1) or "vllm-custom" (vLLM's custom
                   all-reduce; costmodel/collectives.py)
  grad_reduce_dtype  Megatron-Core's grad_reduce_in_fp32 (fsdp2: MixedPrecisionPolicy's reduce_dtype):
                   "fp32" or "bf16", the dtype of the main_grad buffers and the data-parallel gradient
                   collectives (None: the default, fp32; frameworks.py bf16_grad_reduce_precision)
  pure_precision   the model built in --dtype and trained so: weights, gradients and AdamW's moments in
                   it, no fp32 master, the gradients reduced in it (fsdp2 only: frameworks.py
                   Framework.pure_precision; 2 + 2 + 4 bytes a parameter in bf16)
  zero_optimizer   whose ZeRO-1 reduces and gathers: "flat" (Megatron-Core's, DeepSpeed's) or "nanotron" (layout/zero_optimizer.py)
  optimizer_step   "fused" (one pass) or torch's AdamW and clip_grad_norm_ (FSDP2: layout/torch_optimizer.py)
  precision_aware_optimizer  Megatron-Core's use_precision_aware_optimizer under a recipe's dtypes:
                   "fp32", "bf16-moments" or "te-master" (None: off; costmodel/layout/frameworks.py
                   PRECISION_AWARE_OPTIMIZERS); megatron's distributed optimizer (--zero 1) only
  fp8_autocast     where the training script opens Transformer Engine's fp8_autocast, for --fp8
                   delayed under fsdp2 (costmodel/layout/fp8_options.py FP8_AUTOCASTS)
  mixed_precision  a named mixed-precision configuration whose layers and modules stay out of the --fp8
                   recipe (Megatron-Bridge's nemotron_3_super_bf16_with_nvfp4_mixed: layout/fp8_layers.py)
  vocab_parallel   tensor parallelism splits the embedding and the output head by the vocabulary
                   (True: Megatron's, DTensor's); False: every rank holds both whole and computes every logit, so
                   no embedding all-reduce and no logits all-gather (gpt-fast's tp.py shards attention and the FFN only); decoding only
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, ModelConfig, show
from ..offload import check as check_offload
from ..spec import ALL_REDUCES, CP_KV_HEADS, CP_ROTATE_HINTS, CP_ROTATES, DEVICES, EP_DISPATCHERS, GRAD_REDUCE_DTYPES, SCHEDULES, spell_fields
from ..spec import PRECISION_AWARE_OPTIMIZERS as PRECISION_AWARE_OPTIMIZERS_CHOICES
from .experts import check_expert_parallel
from .fp8 import RECIPES
from .fp8_layers import check_mixed_precision_model
from .fp8_options import check_fp8_options
from .permute_fusion import check as check_permute_fusion, check_model as check_permute_model
from . import replicated_kv, sequential_mlp
from .router_fusion import check as check_router_fusion, check_model as check_router_model
from .zero_optimizer import check as check_zero_optimizer
from .torch_optimizer import check as check_optimizer_step
from .megatron_step import DEFAULT_RELEASE
from .schedule import V_SCHEDULES, PipelineSchedule
from .frameworks import FLEX_DISPATCH_FRAMEWORKS, FRAMEWORKS, PRECISION_AWARE_OPTIMIZERS
from .tensor_split import tensor_split_error, tensor_split_sizes  # noqa: F401 (re-exported: plan.py)

def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"layout: {name} must be a positive integer, got {show(value)}.")


def check_inference_model(cfg: ModelConfig) -> None:
    """Inference by rank (a layout's prefill and decode steps, serving memory) is built for
    decoder-only models: an encoder-decoder's rank held only its decoder's layers (T5-small at
    tp 1: 48.02 MiB of weights for 115.41 MiB) and decoded after the encoder's prompt as if the
    decoder had read it (context prompt + gen). One GPU (no layout) models it whole."""
    if cfg.architecture != "decoder":
        raise ConfigError(f"layout: inference on a layout (--tp, --pp, --dp) is modelled for decoder-only models; "
                          f"{show(cfg.name)} is {cfg.architecture}: leave the layout out (one GPU).")


def check_hybrid_framework(framework: str, zero: int | None = None) -> None:
    """Hybrid sharding (dp_shard < dp) is FSDP2's HSDP or Megatron-FSDP's HFSDP (--zero 3); others refused by name."""
    if framework == "megatron" and zero == 3:
        return
    if framework != "fsdp2":
        theirs = {"deepspeed": "DeepSpeed's MiCS and ZeRO++ hpZ partition differently and are not modelled",
                  "megatron": "Megatron's partial distributed optimizer is not modelled; --zero 3 is "
                              "Megatron-FSDP, whose HFSDP --dp-shard models"}.get(framework, "")
        raise ConfigError("layout: hybrid sharding (--dp-shard < dp) is modelled as FSDP2's HSDP "
                          f"(--framework fsdp2){'; ' + theirs if theirs else ''}.")


@dataclass(frozen=True)
class Layout(PipelineSchedule):
    """How a training step is spread over GPUs (see the module docstring)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: bool = False
    zero: int | None = None  # None: the framework's default_zero (0; fsdp2 3)
    microbatches: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    framework: str = "deepspeed"
    stage_layers: tuple[int, ...] | None = None
    loss_parallel: bool = True  # fsdp2/DTensor: logits stay vocabulary-sharded (torchtitan's default)
    # fsdp2: fully_shard's reshard_after_forward. None (the default with --zero 3): every layer is gathered again
    # in backward, the root group (embeddings, final norm, head) is not; True: the root too; False (--zero 2): none.
    reshard_after_forward: bool | None = None
    device: str = "cuda"  # where AdamW's step counters live (torch keeps them on the host on CUDA)
    ep: int = 1
    # the experts' own tensor parallelism (Megatron-Core's expert_tensor_parallel_size): None, the experts split as
    # a dense FFN by tp; with ep > 1, 1 (tp > 1: parallel folding) or any etp whose etp x ep divides tp x cp x dp
    # (expert tensor parallelism; costmodel/layout/experts.py)
    etp: int | None = None
    dp_shard: int | None = None  # hybrid sharding: the shard group (None: dp, plain FSDP)
    capacity_factor: float | None = None
    # Megatron-Core's moe_pad_expert_input_to_capacity: every expert runs its capacity (layout/experts.py)
    pad_to_capacity: bool = False
    ep_dispatcher: str = "alltoall"  # how the EP group moves tokens (costmodel/spec.EP_DISPATCHERS)
    fp8: str | None = None  # an FP8 training recipe (costmodel/layout/fp8.py)
    cp: int = 1
    cp_rotate: str | None = None  # None: the framework's own (DeepSpeed's a2a, else torch's allgather)
    cp_kv_heads: str = "kv"  # the heads the ring moves (CP_KV_HEADS; layout/context.py)
    all_reduce: str = "nccl"  # whose all-reduce runs inside a node (costmodel/spec.ALL_REDUCES)
    vocab_parallel: bool = True  # the embedding and head split by the vocabulary (False: replicated)
    # DeepSpeed's ZeRO-Offload/Infinity (costmodel/offload.py): what leaves the GPU, and where to.
    offload: str = "none"  # none, optimizer, params
    offload_device: str = "cpu"  # cpu, nvme
    gpus_per_node: int = 8  # ranks sharing a host (host memory per node)
    grad_reduce_dtype: str | None = None  # Megatron-Core's grad_reduce_in_fp32 (None: the default)
    pure_precision: bool = False  # the model trained in --dtype, no fp32 copy (frameworks.py Framework.pure_precision)
    precision_aware_optimizer: str | None = None  # Megatron-Core's use_precision_aware_optimizer (None: off)
    fp8_param_gather: bool = False  # Megatron-Core's --fp8-param-gather: FP8 parameters, gathered in FP8
    tp_only_amax_red: bool = False  # Megatron-Core's --tp-only-amax-red: delayed scaling's amaxes over TP x CP
    fp8_autocast: str | None = None  # the script's fp8_autocast scope, --fp8 delayed off Megatron-Core
    mixed_precision: str | None = None  # a named configuration's bf16 layers and modules (layout/fp8_layers.py)
    moe_router_fusion: bool = True  # Megatron-Core's --moe-router-fusion (layout/router_fusion.py; False: eager ops)
    moe_router_load_balancing_type: str = "aux_loss"  # Megatron-Core's; read where the router is unfused
    moe_permute_fusion: bool = True  # Megatron-Core's --moe-permute-fusion (layout/permute_fusion.py)
    moe_grouped_gemm: bool = True  # Megatron-Core's --moe-grouped-gemm (layout/sequential_mlp.py; False: SequentialMLP)
    # the model's code calls Megatron's vocabulary-parallel cross-entropy on the fp32 logits, unfused, whatever the family (Megatron-
    # Core's GPTModel before cross_entropy_loss_fusion: core_v0.6.0 language_module.py); False: the family's (facts.loss_passes)
    unfused_loss: bool = False
    fp32_norm_input: bool = False  # each norm reads an fp32 copy of its input, as InternLM's layer (blocks/norms.py)
    zero_optimizer: str = "flat"  # whose ZeRO-1 reduces the gradients and gathers the parameters (layout/zero_optimizer.py)
    optimizer_step: str = "fused"  # whose code runs the step (spec.OPTIMIZER_STEPS; layout/torch_optimizer.py)
    megatron_release: str = DEFAULT_RELEASE  # optimizer_step megatron-lm's release (costmodel/megatron_releases.json)

    def __post_init__(self) -> None:
        spell_fields(self)  # framework "Megatron", schedule "1F1B" as the command takes them
        if self.cp_rotate is None and self.cp != 1:  # DeepSpeed's sequence parallelism is Ulysses' all-to-all alone
            # (layout/context.py); at cp 1 it stays None, so a layout given cp later (dataclasses.replace) takes its own
            object.__setattr__(self, "cp_rotate", "a2a" if self.framework == "deepspeed" else "allgather")
        for name in ("dp", "tp", "pp", "microbatches", "virtual_stages", "ep", "cp"):
            _positive(name, getattr(self, name))
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"layout: schedule must be one of {', '.join(SCHEDULES)}, got {show(self.schedule)}.")
        if self.framework not in FRAMEWORKS:
            raise ConfigError(f"layout: framework must be one of {', '.join(FRAMEWORKS)}, got {show(self.framework)}.")
        framework = FRAMEWORKS[self.framework]
        if self.zero is None:
            object.__setattr__(self, "zero", framework.default_zero)
        if self.zero not in framework.zero_stages:
            raise ConfigError(f"layout: {self.framework} supports --zero {', '.join(map(str, framework.zero_stages))} "
                              f"({framework.zero_note}), not {show(self.zero)}.")
        if self.megatron_fsdp and self.pp > 1:
            raise ConfigError("layout: Megatron-FSDP (--framework megatron --zero 3) with pipeline parallelism is "
                              "not modelled (--pp 1, or --zero 1 for Megatron-Core's distributed optimizer).")
        if self.framework == "deepspeed" and self.pp > 1 and self.zero > 1:
            raise ConfigError("layout: DeepSpeed's pipeline engine shards the optimizer state only "
                              "(--zero 0 or 1 with --pp > 1).")
        if self.unfused_loss and FRAMEWORKS[self.framework].loss != "vocab_parallel":
            raise ConfigError("layout: unfused_loss is Megatron's vocabulary-parallel cross-entropy "
                              f"(--framework megatron); the framework is {show(self.framework)}.")
        if self.sp and self.tp == 1:
            raise ConfigError("layout: sequence parallelism (--sp) splits over the tensor-parallel ranks; it needs --tp > 1.")
        if self.schedule in V_SCHEDULES:
            if self.virtual_stages not in (1, 2):
                raise ConfigError(f"layout: {self.schedule} runs two stages a rank (a V), not {self.virtual_stages}.")
            object.__setattr__(self, "virtual_stages", 2)
            if self.pp == 1:
                raise ConfigError(f"layout: the {self.schedule} schedule needs pipeline parallelism (--pp > 1).")
        elif self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ConfigError("layout: --virtual-stages applies to the interleaved schedule only.")
        if self.schedule == "zb-h1" and self.pp == 1:
            raise ConfigError("layout: the zb-h1 schedule needs pipeline parallelism (--pp > 1).")
        if self.schedule == "dualpipev" and self.microbatches < 2 * self.pp:
            raise ConfigError(f"layout: dualpipev needs at least 2 pp = {2 * self.pp} micro-batches, "
                              f"got {self.microbatches} (torch's ScheduleDualPipeV).")
        if self.schedule == "interleaved":
            if self.pp == 1:
                raise ConfigError("layout: the interleaved schedule needs pipeline parallelism (--pp > 1).")
            if self.microbatches % self.pp:
                raise ConfigError(f"layout: the interleaved schedule needs microbatches ({self.microbatches}) "
                                  f"to be a multiple of pp ({self.pp}).")
        if self.stage_layers is not None:
            for index, value in enumerate(self.stage_layers):
                edge = index in (0, len(self.stage_layers) - 1)
                if edge and value == 0:
                    continue  # Llama 3's first and last chunks: only the embedding, only the head
                if edge and isinstance(value, int) and not isinstance(value, bool) and value < 0:
                    raise ConfigError(f"layout: the first and last stages' layers must be 0 or a positive "
                                      f"integer, got {show(value)}.")
                _positive("each stage's layers" if edge else "each inner stage's layers", value)
        if self.reshard_after_forward is not None and self.framework != "fsdp2":
            raise ConfigError("layout: reshard_after_forward is FSDP2's option (--framework fsdp2).")
        if self.reshard_after_forward is not None and self.zero == 2:
            raise ConfigError("layout: --zero 2 with fsdp2 means reshard_after_forward=False already.")
        if self.cp_rotate not in CP_ROTATES and not (self.cp_rotate is None and self.cp == 1):
            hint = CP_ROTATE_HINTS.get(str(self.cp_rotate).lower())
            raise ConfigError(f"layout: cp_rotate must be {CP_ROTATES.listed()}, got {show(self.cp_rotate)}"
                              + (f": {hint}." if hint else "."))
        if self.cp_kv_heads not in CP_KV_HEADS:
            raise ConfigError(f"layout: cp_kv_heads must be {CP_KV_HEADS.listed()}, got {show(self.cp_kv_heads)}.")
        if self.all_reduce not in ALL_REDUCES:
            raise ConfigError(f"layout: all_reduce must be {ALL_REDUCES.listed()}, got {show(self.all_reduce)}.")
        if not isinstance(self.vocab_parallel, bool):
            raise ConfigError(f"layout: vocab_parallel must be true or false, got {show(self.vocab_parallel)}.")
        if self.fp8 is not None and self.fp8 not in RECIPES:
            raise ConfigError(f"layout: fp8 must be one of {', '.join(RECIPES)}, got {show(self.fp8)}.")
        if self.ep_dispatcher not in EP_DISPATCHERS:
            raise ConfigError(f"layout: ep_dispatcher must be {EP_DISPATCHERS.listed()}, got {show(self.ep_dispatcher)}.")
        if self.ep_dispatcher != "alltoall" and self.ep == 1:
            raise ConfigError(f"layout: the {self.ep_dispatcher} dispatcher moves tokens between expert-parallel "
                              "ranks; it needs --ep above 1.")
        if self.ep_dispatcher != "alltoall" and self.framework not in FLEX_DISPATCH_FRAMEWORKS:
            raise ConfigError(f"layout: the {self.ep_dispatcher} dispatcher is Megatron-Core's flex token dispatcher "
                              "(MoEFlexTokenDispatcher), which Megatron-Core and NeMo AutoModel's FSDP2 run; add "
                              f"--framework megatron or fsdp2 (here {self.framework}).")
        if self.grad_reduce_dtype is not None:
            if self.grad_reduce_dtype not in GRAD_REDUCE_DTYPES:
                raise ConfigError(f"layout: grad_reduce_dtype must be {GRAD_REDUCE_DTYPES.listed()}, "
                                  f"got {show(self.grad_reduce_dtype)}.")
            if not framework.bf16_grad_reduce_precision:
                raise ConfigError("layout: the gradient reduce dtype (--grad-reduce-dtype) is Megatron-Core's grad_reduce_"
                                  f"in_fp32 or FSDP2's reduce_dtype; add --framework megatron or fsdp2 (here {self.framework}).")
        if self.precision_aware_optimizer is not None:
            self._check_precision_aware(framework)
        self._check_pure(framework)
        check_fp8_options(self)
        check_zero_optimizer(self), check_optimizer_step(self)
        check_router_fusion(self)
        check_permute_fusion(self)
        if self.device not in DEVICES:
            raise ConfigError(f"layout: device must be {DEVICES.listed()}, got {show(self.device)}.")
        self._check_hybrid()
        check_offload(self)

    def _check_pure(self, framework: Any) -> None:
        """Pure precision (Framework.pure_precision): a framework that trains the model's own
        16-bit parameters, its gradients reduced in their dtype."""
        if not isinstance(self.pure_precision, bool):
            raise ConfigError(f"layout: pure_precision must be true or false, got {show(self.pure_precision)}.")
        if not self.pure_precision:
            return
        if not framework.pure_precision:
            raise ConfigError(f"layout: pure precision (--pure-precision) trains the model's own bf16 parameters, as "
                              f"PyTorch's FSDP with torch's AdamW does; {self.framework} keeps an fp32 master copy: "
                              "add --framework fsdp2.")
        if self.grad_reduce_dtype == "fp32":
            raise ConfigError("layout: pure precision reduces the gradients in their own dtype; --grad-reduce-dtype fp32 "
                              "with bf16 parameters is not modelled (drop one).")

    def _check_precision_aware(self, framework: Any) -> None:
        """Megatron-Core's precision-aware optimizer: one of the modelled dtype sets, on its
        distributed optimizer, and Transformer Engine's master weights only without an FP8
        recipe or with delayed scaling, and only those then (frameworks.py PRECISION_AWARE_OPTIMIZERS)."""
        name = self.precision_aware_optimizer
        if name not in PRECISION_AWARE_OPTIMIZERS:
            raise ConfigError(f"layout: precision_aware_optimizer must be {PRECISION_AWARE_OPTIMIZERS_CHOICES.listed()}, "
                              f"got {show(name)}.")
        if not framework.precision_aware_optimizer:
            raise ConfigError(f"layout: the precision-aware optimizer (--precision-aware-optimizer) is Megatron-Core's "
                              f"use_precision_aware_optimizer; add --framework megatron (here {self.framework}).")
        if self.zero != 1:
            raise ConfigError("layout: Megatron-Core runs the precision-aware optimizer only under its distributed "
                              "optimizer; add --zero 1 (under Megatron-FSDP, --zero 3, it is not modelled).")
        if self.fp8 not in (None, "delayed") and PRECISION_AWARE_OPTIMIZERS[name].reads_buffer_gradient:
            raise ConfigError(f"layout: with an FP8 recipe ({self.fp8}) Megatron-Core keeps the fp32 master weights "
                              f"itself, not Transformer Engine; use --precision-aware-optimizer fp32 or bf16-moments.")
        if self.fp8 == "delayed" and not PRECISION_AWARE_OPTIMIZERS[name].reads_buffer_gradient:
            raise ConfigError(f"layout: with delayed scaling (--fp8 delayed) Megatron-Core hands Transformer Engine "
                              f"the master weights (fp8_recipe 'delayed'), which {name} does not model; use "
                              f"--precision-aware-optimizer te-master.")

    def _check_hybrid(self) -> None:
        """dp_shard: a divisor of dp, more than one rank, where the framework has hybrid sharding
        (FSDP2's HSDP); dp_shard = dp is plain sharding (stored as None)."""
        if self.dp_shard is None:
            return
        _positive("dp_shard", self.dp_shard)
        if self.dp % self.dp_shard:
            raise ConfigError(f"layout: --dp-shard {self.dp_shard} must divide dp = {self.dp} "
                              "(dp / dp_shard replicas of each shard group).")
        if self.dp_shard == self.dp:
            object.__setattr__(self, "dp_shard", None)
            return
        if self.dp_shard == 1:
            raise ConfigError("layout: --dp-shard 1 shards nothing (every rank a replica); hybrid sharding "
                              "needs 1 < dp_shard < dp.")
        check_hybrid_framework(self.framework, self.zero)
        if self.ep > 1 and not self.megatron_fsdp:
            raise ConfigError("layout: hybrid sharding (--dp-shard) with expert parallelism is modelled only as "
                              "Megatron-FSDP's HFSDP (--framework megatron --zero 3).")
        if self.ep > 1 and self.expert_data_parallel % self.replicas:
            raise ConfigError(f"layout: Megatron-FSDP's HFSDP shards the experts over the expert-data-parallel group "
                              f"({self.expert_data_parallel} ranks) divided by the {self.replicas} replicas "
                              f"(dp / dp_shard), which must divide it.")

    @property
    def replicas(self) -> int:
        """Hybrid sharding's replicas of each shard group: dp / dp_shard (1: plain sharding)."""
        return self.dp // self.dp_shard if self.dp_shard else 1

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def megatron_fsdp(self) -> bool:
        """Megatron-FSDP (costmodel/layout/megatron_fsdp.py): megatron's --zero 3."""
        return self.framework == "megatron" and self.zero == 3

    @property
    def optimizer_ranks(self) -> int:
        """The ranks the optimizer state (master weights and moments) is sharded over: the shard
        group, except under Megatron-FSDP, whose HFSDP shards it over all of dp x cp."""
        return self.dp * self.cp if self.megatron_fsdp else self.shard_ranks

    @property
    def expert_shard_ranks(self) -> int:
        """The ranks the routed experts' weights and gradients are sharded over, which gather them and
        reduce-scatter their gradients: the expert-data-parallel group, or under Megatron-FSDP's HFSDP
        its part inside one replica (get_expert_data_parallel_group(partial_expert_data_parallel=True))."""
        return self.expert_data_parallel // self.replicas if self.megatron_fsdp else self.expert_data_parallel

    @property
    def folded(self) -> bool:
        """Megatron-Core's parallel folding: attention under tp (with SP), the routed experts whole
        (expert_tensor_parallel_size 1) over an EP group drawn from tp x dp."""
        return self.ep > 1 and self.tp > 1 and self.etp == 1

    @property
    def expert_tp(self) -> int:
        """The experts' own tensor-parallel ranks (Megatron-Core's expert_tensor_parallel_size): --etp where
        given, else tp (its default; without expert parallelism the experts split as a dense FFN is)."""
        return self.tp if self.etp is None else self.etp

    @property
    def expert_split(self) -> str:
        """How the routed experts meet tensor parallelism (costmodel/layout/experts.py): "folded"
        (parallel folding, --etp 1 with tp > 1), "etp" (expert tensor parallelism, --etp > 1, any tp:
        each expert's weights split etp ways over the experts' own TP group), or "" (neither: tp 1 with
        --etp unset or 1, or no expert parallelism)."""
        if self.ep > 1 and self.etp is not None and (self.etp > 1 or self.tp > 1):
            return "etp" if self.etp > 1 else "folded"
        return ""

    @property
    def ep_span(self) -> int:
        """Consecutive GPUs the expert-parallel group spans: etp x ep (Megatron-Core's expert grid, order
        tp-cp-ep-dp-pp without cp: the experts' etp ranks come first, EP at stride etp; ep under folding)."""
        return self.expert_tp * self.ep

    @property
    def expert_ranks(self) -> int:
        """The ranks of a pipeline stage the expert-parallel group is drawn from: tp x cp x dp / etp
        (Megatron-Core's expert grid covers the stage's tp x cp x dp ranks, etp of them each expert's
        tensor-parallel group): cp x dp where etp = tp, tp x cp x dp under parallel folding
        (costmodel/layout/experts.py)."""
        return self.tp * self.cp * self.dp // self.expert_tp

    @property
    def expert_data_parallel(self) -> int:
        """The ranks holding the same experts (the same slice of them), which reduce their gradients:
        expert_ranks / ep = tp x cp x dp / (etp x ep), Megatron-Core's expert_data_parallel_size (dp / ep at
        tp 1; under parallel folding tp x cp x dp / ep)."""
        return self.expert_ranks // self.ep

    @property
    def reduces_gradients(self) -> bool:
        """Whether a rank runs data-parallel collectives: a shard group of more than one rank, or
        under expert parallelism an expert-data-parallel group of more than one (parallel folding at
        dp 1: tp x cp / ep ranks hold the same experts, Megatron-Core's expert_data_parallel_size)."""
        return self.shard_ranks > 1 or (self.ep > 1 and self.expert_data_parallel > 1)

    @property
    def shard_ranks(self) -> int:
        """The ranks a parameter's state is sharded over, which gather it and reduce-scatter its
        gradient: dp x cp (context-parallel ranks see different tokens of the same sequences:
        Megatron's data-parallel group with context parallelism, torchtitan's dp_shard_cp mesh);
        under hybrid sharding dp_shard x cp, the rest of dp (replicas) all-reducing the shards."""
        return (self.dp_shard or self.dp) * self.cp

    def check_schedule(self) -> None:
        """Raise ConfigError where the framework's pipeline engine does not run the schedule asked
        for (Framework.pipeline_schedules: DeepSpeed's runs 1F1B only). Read where a user's or the
        plan's training layout is taken (the CLI, costmodel.api, simulate, plan), not by the
        schedule arithmetic that builds a Layout for its pipeline fields alone."""
        runs = FRAMEWORKS[self.framework].pipeline_schedules
        if self.pp > 1 and runs and self.schedule not in runs:
            raise ConfigError(f"layout: {self.framework}'s pipeline engine runs the {' or '.join(runs)} schedule "
                              f"only, not {show(self.schedule)} (DeepSpeed's PipelineEngine builds "
                              "schedule.TrainSchedule); add --framework megatron or fsdp2 for another.")

    def check_gpus(self, gpus: int | None) -> None:
        """Raise ConfigError where a GPU count is given and the layout's ranks are another count."""
        if gpus is not None and gpus != self.gpus:
            sizes = f"tp x pp x dp = {self.tp} x {self.pp} x {self.dp}" + (f" x cp {self.cp}" if self.cp > 1 else "")
            raise ConfigError(f"layout: {sizes} = {self.gpus}, not the {gpus} GPUs asked for.")

    def check(self, cfg: ModelConfig, gpus: int | None = None, inference: bool = False) -> None:
        """Raise ConfigError (one sentence) if the layout cannot run the model; inference: for
        prefill and decoding (serving), where tp may exceed the key/value heads (tensor_split_error)."""
        self.check_gpus(gpus)
        if inference:
            check_inference_model(cfg)
        check_expert_parallel(cfg, self.ep, self.tp, self.dp, self.zero, self.framework, self.capacity_factor,
                              etp=self.etp, sp=self.sp, inference=inference, cp=self.cp)
        if self.expert_split == "etp" and self.ep_dispatcher != "alltoall":
            raise ConfigError("layout: expert tensor parallelism (--etp > 1) is modelled with the all-to-all "
                              "dispatcher (costmodel/layout/experts.py); drop --ep-dispatcher.")
        if not isinstance(self.pad_to_capacity, bool):
            raise ConfigError(f"layout: pad_to_capacity must be true or false, got {show(self.pad_to_capacity)}.")
        if self.pad_to_capacity and self.capacity_factor is None:
            raise ConfigError("layout: --pad-to-capacity pads each expert's tokens to its capacity; give --capacity-factor too.")
        if not self.moe_router_fusion:
            check_router_model(cfg)
        if not self.moe_permute_fusion:
            check_permute_model(cfg, self)
        sequential_mlp.check(cfg, self)
        check_mixed_precision_model(cfg, self)
        if self.cp > 1:
            from .context import check_context_parallel

            check_context_parallel(cfg, self)
        reason = tensor_split_error(cfg, self.tp, inference or replicated_kv.replicates_kv_head(cfg, self, inference))
        if reason:
            raise ConfigError(f"layout: tp = {self.tp} {reason}.")
        if self.sp and cfg.moe and not self.expert_split:  # folding or expert TP: the dispatcher reads the SP tokens
            raise ConfigError("layout: sequence parallelism with a mixture of experts is modelled only with --ep "
                              "beside it: parallel folding (--etp 1) or expert tensor parallelism (--etp > 1).")
        if cfg.mtp_layers and not FRAMEWORKS[self.framework].builds_mtp:  # frameworks.py builds_mtp
            raise ConfigError(f"layout: multi-token prediction (--mtp) is Megatron-Core's; {self.framework} trains "
                              "the Hugging Face class, which builds no MTP depths; add --framework megatron.")
        if self.sp and cfg.mla and self.framework != "megatron":  # layout/split.py rank_leaf: Megatron-Core's
            raise ConfigError("layout: sequence parallelism with latent attention is modelled for Megatron-Core "
                              "only (--framework megatron).")
        if self.pp > 1:
            if cfg.architecture == "encoder-decoder":
                raise ConfigError("layout: pipeline parallelism of encoder-decoders is not modelled.")
            if cfg.n_mixer_layers("shared"):  # each stage with a use would hold the block (shared_block.py)
                raise ConfigError(f"layout: pipeline parallelism of model {show(cfg.name)}'s shared blocks is not modelled.")
            # An even split needs a layer a stage; a given split may leave edge stages with none
            # (Llama 3's first and last chunks: the embedding alone, the head alone).
            if self.stages > cfg.pipeline_layers and self.stage_layers is None:
                raise ConfigError(f"layout: {self.stages} pipeline stages for {cfg.pipeline_layers} layers: "
                                  "pp x virtual stages must not exceed the layers.")
        if self.sp and cfg.norm_position != "pre":
            raise ConfigError("layout: sequence parallelism is modelled for pre-norm layers only.")
        if self.stage_layers is not None:
            if len(self.stage_layers) != self.stages:
                raise ConfigError(f"layout: {len(self.stage_layers)} stage sizes given for {self.stages} stages.")
            if sum(self.stage_layers) != cfg.pipeline_layers:
                raise ConfigError(f"layout: the stages' layers add up to {sum(self.stage_layers)}, "
                                  f"not the {cfg.pipeline_layers} layers of model {show(cfg.name)}.")

    def to_dict(self, batch: int) -> dict[str, Any]:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "sp": self.sp, "zero": self.zero,
                "microbatches": self.microbatches, "schedule": self.schedule,
                "virtual_stages": self.virtual_stages, "framework": self.framework,
                "stage_layers": list(self.stage_layers) if self.stage_layers else None,
                "gpus": self.gpus, "micro_batch": batch, "ep": self.ep,
                "capacity_factor": self.capacity_factor, "fp8": self.fp8, "cp": self.cp,
                # how the context-parallel ranks exchange (each prices differently: layout/context.py)
                **({"cp_rotate": self.cp_rotate, "cp_kv_heads": self.cp_kv_heads} if self.cp > 1 else {}),
                **({"pad_to_capacity": True} if self.pad_to_capacity else {}),
                "all_reduce": self.all_reduce, "vocab_parallel": self.vocab_parallel,
                "global_batch": batch * self.microbatches * self.dp,
                **({"dp_shard": self.dp_shard, "dp_replicate": self.replicas} if self.dp_shard else {}),
                **({"etp": self.etp} if self.expert_split else {}),
                **({"ep_dispatcher": self.ep_dispatcher} if self.ep_dispatcher != "alltoall" else {}),
                **({"grad_reduce_dtype": self.grad_reduce_dtype} if self.grad_reduce_dtype else {}),
                **({"pure_precision": True} if self.pure_precision else {}),
                **({"precision_aware_optimizer": self.precision_aware_optimizer} if self.precision_aware_optimizer else {}),
                **({"fp8_param_gather": True} if self.fp8_param_gather else {}),
                **({"tp_only_amax_red": True} if self.tp_only_amax_red else {}),
                **({"moe_router_fusion": False, "moe_router_load_balancing_type": self.moe_router_load_balancing_type}
                   if not self.moe_router_fusion else {}),
                **({"moe_permute_fusion": False} if not self.moe_permute_fusion else {}),
                **({"moe_grouped_gemm": False} if not self.moe_grouped_gemm else {}),
                **({"fp8_autocast": self.fp8_autocast} if self.fp8_autocast else {}),
                **({"mixed_precision": self.mixed_precision} if self.mixed_precision else {}),
                **({"unfused_loss": True} if self.unfused_loss else {}),
                **({"fp32_norm_input": True} if self.fp32_norm_input else {}),
                **({"zero_optimizer": self.zero_optimizer} if self.zero_optimizer != "flat" else {}),
                **({"optimizer_step": self.optimizer_step} if self.optimizer_step != "fused" else {}),
                **({"megatron_release": self.megatron_release} if self.megatron_release != DEFAULT_RELEASE else {}),
                **({"offload": self.offload, "offload_device": self.offload_device,
                    "gpus_per_node": self.gpus_per_node} if self.offload != "none" else {})}
