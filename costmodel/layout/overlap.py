"""The overlap conventions of a training step's communication (Overlap: which share of each kind of
collective runs hidden behind compute, and what the compute loses beside it), and the refusal of
Overlap.ep where Megatron-Core's --overlap-moe-expert-parallel-comm cannot run (check_ep_overlap);
which of a layout's data-parallel collectives each field reads (gathers_per_microbatch,
reduces_after_backward) and the fields a layout has no collective for (unread_overlaps).

Stated conventions, not measurements, each settable; costmodel/layout/time.py (StepTime) applies
them and states the model in its docstring. Overlap is importable from there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import ConfigError
from .frameworks import FRAMEWORKS
from .rank import ParallelEstimate
from .spec import Layout


#: The share of the last micro-batch's compute a gradient reduction that overlaps the backward runs
#: under (Overlap.dp's convention: its backward, two thirds of its compute).
BACKWARD_SHARE = 2 / 3


@dataclass(frozen=True)
class Overlap:
    """The overlap conventions, each settable (stated, not measured):
    tp: the fraction of tensor-parallel communication hidden behind compute (0: exposed, as
        Megatron without its TP-communication overlap);
    dp: the fraction of the last micro-batch's compute a gradient reduction (DDP, ZeRO-1/2) runs
        under (2/3: its backward; 0: reduced after backward, Megatron-LM without
        --overlap-grad-reduce, its default; where a framework is chosen and no share is stated, the
        framework's: framework_dp_overlap);
    prefetch: FSDP/ZeRO-3 gather and scatter each micro-batch while it computes (False: exposed);
    pp: the fraction of each micro-batch's pipeline exchange hidden behind compute (0: exposed, as
        Megatron-LM's blocking sends; 1: Megatron-Core's overlap_p2p_comm, which Megatron-Bridge
        turns on for every interleaved schedule, training/comm_overlap.py; where a user or a row
        chooses the framework and states no share, the framework's: framework_overlap);
    params: the fraction of the first micro-batch's forward (a third of its compute, the 2/3
        convention of dp) the ZeRO-1/2 parameter all-gather runs under (0: exposed, gathered after
        the optimizer step; 1: Megatron-Core's --overlap-param-gather, which all-gathers the updated
        parameters bucket by bucket and waits for each in a forward pre-hook of the next step's
        first micro-batch: megatron/core/optimizer/distrib_optimizer.py at core_r0.8.0, lines
        1330-1337, 1413-1438, 1454-1475);
    ep: the fraction of each micro-batch's expert all-to-all (dispatch and combine) hidden behind
        compute (0: exposed; 1: Megatron-Core's --overlap-moe-expert-parallel-comm, Megatron-Bridge's
        moe_a2a_overlap, whose combined 1F1B schedule runs one micro-batch's forward beside
        another's backward, layer by layer, so that 'EP A2A in forward step is hidden by the
        attention/mlp computation in the backward step, and vice versa': Megatron-LM at d98e8a64d,
        megatron/core/pipeline_parallel/combined_1f1b.py; the fraction is of what the paired steps
        hide, their MoE layers' two streams walked phase by phase (layout/combined_1f1b.py
        paired_layers_seconds; the compute beside HybridEP's or DeepEP's kernels on the SMs they
        leave, nccl_facts.json ep_dispatcher_sms, beside NCCL's at 1 / (1 + slowdown)): the forwards and backwards that run alone, the
        first forward and the last backward without a pipeline, a pipeline rank's warm-up forwards
        and cool-down backwards, run their all-to-all exposed, layout/combined_1f1b.py);
    align_grad: under Megatron-Core's interleaved schedule, whether each chunk's gradient
        collective starts r backwards after the chunk's last on pipeline rank r (True:
        Megatron-LM's align_grad_reduce, its default) or as that backward ends, rank 0's bucketed
        chunk 0 during it (False: NeMo 2.2's MegatronStrategy, which sets no grad_sync_func);
        layout/dp_overlap.py;
    slowdown: how much slower compute runs while a hidden collective runs beside it (its kernels
        hold SMs and memory bandwidth): the step pays hidden x slowdown / (1 + slowdown) more
        (None: nccl_facts.json "overlap_compute_slowdown", a published average; 0: free overlap);
    async_tp: torchtitan's Async TP in place of `tp`'s share: each fused op hides what its own chunked matmuls
        cover and adds what its decomposition costs, its copies on copy engines (no slowdown): layout/async_tp.py;
    ub: Transformer Engine's userbuffers in place of `tp`'s share (Megatron's --tp-comm-overlap, the kernel-level
        model; "" off, "te" TE's default config, or a NeMo config's name): each overlapped GEMM's collective priced
        by its config's method, its SMs split between the GEMM and the collective (no slowdown): layout/ub_overlap.py."""

    tp: float = 0.0
    dp: float = BACKWARD_SHARE
    prefetch: bool = True
    slowdown: float | None = None
    pp: float = 0.0
    params: float = 0.0
    ep: float = 0.0
    align_grad: bool = True
    async_tp: bool = False
    ub: str = ""

    def contention(self, hidden: float) -> float:
        """The seconds compute loses while `hidden` seconds of communication run beside it."""
        return hidden * self.slowdown / (1 + self.slowdown)

    def __post_init__(self) -> None:
        if self.slowdown is None:
            from ..collectives import nccl_facts

            object.__setattr__(self, "slowdown", float(nccl_facts()["overlap_compute_slowdown"]["value"]))
        rate = self.slowdown
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ConfigError(f"overlap slowdown must be a rate in [0, 1] (0.4 the largest published), got {rate!r}.")
        for name in ("align_grad", "async_tp"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"overlap {name} must be true or false, got {getattr(self, name)!r}.")
        for name in ("async_tp", "ub"):
            if getattr(self, name) and self.tp:
                raise ConfigError(f"overlap {name} prices what the TP overlap hides op by op: tp must be 0 beside it, "
                                  f"got {self.tp!r}.")
        if not isinstance(self.ub, str):
            raise ConfigError(f"overlap ub must be a config's name ('te': Transformer Engine's defaults), got {self.ub!r}.")
        if self.ub:
            from .ub_overlap import op_configs

            op_configs(self.ub)  # refuses a name that is neither "te" nor a stated config
        if self.async_tp and self.ub:
            raise ConfigError("overlap async_tp (torchtitan's) and ub (Transformer Engine's userbuffers) are two "
                              "frameworks' TP overlaps: give one of them.")
        for name in ("tp", "dp", "pp", "params", "ep"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ConfigError(f"overlap {name} must be a fraction in [0, 1], got {value!r}.")


def framework_pp_overlap(framework: str, schedule: str, pp: int) -> float:
    """The share of the pipeline sends a framework hides when no overlap is stated: 1 on Megatron's
    interleaved schedule, whose overlap_p2p_comm is on by default ('--no-overlap-p2p-communication',
    action='store_false', dest='overlap_p2p_comm': NVIDIA/Megatron-LM megatron/training/arguments.py,
    at c230e0d7 and d98e8a64d; validate_args turns it off only without virtual pipeline stages, so
    one virtual stage keeps it); 0 elsewhere (1F1B's blocking sends, DeepSpeed's and FSDP2's)."""
    return 1.0 if framework == "megatron" and schedule == "interleaved" and pp > 1 else 0.0


def framework_dp_overlap(framework: str, overlap_grad_reduce: bool | None = None) -> float:
    """The share of the last micro-batch's compute the gradient reduction runs under when no share is
    stated: BACKWARD_SHARE where the gradients are reduced under the backward (overlap_grad_reduce
    True: Megatron's --overlap-grad-reduce, NeMo's overlap_grad_sync), 0 where after it (False).
    Unsaid (None), the framework's default: 0 for megatron, whose '--overlap-grad-reduce' is
    action='store_true' (NVIDIA/Megatron-LM megatron/training/arguments.py line 3121 at d98e8a64d,
    line 1413 at core_r0.8.0; DistributedDataParallelConfig.overlap_grad_reduce False; its README:
    'Fine-grained overlapping with DP (--overlap-grad-reduce, --overlap-param-gather), TP
    (--tp-comm-overlap), and PP (enabled by default)', line 104); BACKWARD_SHARE for the others
    (DDP's and FSDP2's backward hooks; DeepSpeed's overlap_comm not audited)."""
    if overlap_grad_reduce is not None and not isinstance(overlap_grad_reduce, bool):
        raise ConfigError(f"overlap_grad_reduce must be true or false, got {overlap_grad_reduce!r}.")
    if overlap_grad_reduce is None:
        overlap_grad_reduce = framework != "megatron"
    return BACKWARD_SHARE if overlap_grad_reduce else 0.0


def framework_overlap(layout: Layout, stated: dict[str, Any] | None = None,
                      overlap_grad_reduce: bool | None = None) -> Overlap:
    """The overlap a step runs under where a framework is chosen (`simulate --framework`, `plan`, a
    published row's framework): the stated fields; the pipeline sends' share, when not stated, the
    framework's (framework_pp_overlap); the gradient reduction's, when not stated, the framework's
    or the recipe's overlap_grad_reduce (framework_dp_overlap; both stated is refused). The papers'
    tables built in code (reports/published_runs.py narayanan_runs, korthikanti_runs) keep their own:
    their Megatron-LM predates overlap_p2p_comm (added 2023-05-31, f9283c5a8a 'Add option to overlap
    p2p communication')."""
    stated = dict(stated or {})
    if overlap_grad_reduce is not None and "dp" in stated:
        raise ConfigError(f"overlap dp {stated['dp']!r} and overlap_grad_reduce {overlap_grad_reduce!r} both say how "
                          "the gradient reduction overlaps the backward: give one of them.")
    stated.setdefault("pp", framework_pp_overlap(layout.framework, layout.schedule, layout.pp))
    stated.setdefault("dp", framework_dp_overlap(layout.framework, overlap_grad_reduce))
    overlap = Overlap(**stated)
    if layout.framework == "megatron" and overlap.params and not overlap.dp:
        raise ConfigError("--param-gather-overlap is Megatron-Core's --overlap-param-gather, which Megatron-LM runs "
                          "only with --overlap-grad-reduce ('Must use --overlap-param-gather with --overlap-grad-reduce', "
                          "megatron/training/arguments.py lines 1028-1029 at d98e8a64d): add --overlap-grad-reduce.")
    return overlap


def check_ep_overlap(estimate: ParallelEstimate) -> None:
    """Refuse Overlap.ep where Megatron-Core's --overlap-moe-expert-parallel-comm cannot run: its
    TransformerConfig.__post_init__ asserts expert parallelism, virtual pipeline stages when
    pp > 1, no full recomputation, and bf16 or fp16 (Megatron-LM at d98e8a64d,
    megatron/core/transformer/transformer_config.py lines 3005-3037)."""
    layout, workload = estimate.layout, estimate.workload
    refusals = (
        (layout.framework != "megatron", f"it overlaps Megatron-Core's code (--framework megatron), not {layout.framework}"),
        (layout.ep == 1, "it hides the expert all-to-all and this layout has none (--ep 1)"),
        (layout.pp > 1 and layout.schedule != "interleaved",
         "it needs the interleaved schedule where --pp > 1 ('virtual_pipeline_model_parallel_size must be "
         f"specified when pipeline_model_parallel_size > 1'), not {layout.schedule}"),
        (workload.recompute == "full",
         "it refuses full recomputation ('disable full recomputation when enabling overlap_moe_expert_parallel_comm')"),
        (workload.dtype not in ("bf16", "fp16"), f"it runs bf16 or fp16 models only, not {workload.dtype}"))
    for refused, why in refusals:
        if refused:
            raise ConfigError(f"--ep-overlap is Megatron-Core's --overlap-moe-expert-parallel-comm: {why}.")


def gathers_per_microbatch(layout: Layout) -> bool:
    """Whether the layout's data-parallel collectives run each micro-batch under its compute (FSDP2's
    per-tensor sharding, ZeRO-3 and Megatron-FSDP: Overlap.prefetch hides them) rather than once a step
    (DDP and ZeRO-1/2: the gradient reduction under Overlap.dp's share of the last backward)."""
    return FRAMEWORKS[layout.framework].sharding == "per_tensor" or layout.zero == 3


def reduces_after_backward(layout: Layout) -> bool:
    """Whether the gradients are reduced after the schedule's last backward, nothing under them (DeepSpeed's
    pipeline engine: Framework.pp_reduce_after_backward)."""
    return FRAMEWORKS[layout.framework].pp_reduce_after_backward and layout.pp > 1


def unread_overlaps(layout: Layout) -> dict[str, str]:
    """The Overlap fields a training layout has no collective for, each with what it lacks: tp at tp 1,
    pp at pp 1; dp and prefetch where no rank reduces gradients; on a layout that gathers each micro-batch
    dp (prefetch sets it), on one that reduces once a step prefetch, and dp too after the last backward
    (StepTime.data_parallel_split reads them so). A single layout's options refuse them (`simulate`);
    plan's settings apply to the layouts that have them."""
    unread = {}
    if layout.tp == 1:
        unread["tp"] = "tp 1: no tensor-parallel collective to hide"
    if layout.pp == 1:
        unread["pp"] = "pp 1: no pipeline send to hide"
    if not layout.reduces_gradients:
        unread["dp"] = unread["prefetch"] = "dp 1: no data-parallel collective"
    elif gathers_per_microbatch(layout):
        unread["dp"] = ("its data-parallel collectives run each micro-batch under its compute (FSDP2, ZeRO-3): "
                        "--no-prefetch exposes them")
    else:
        unread["prefetch"] = ("it reduces its gradients once a step (DDP, ZeRO-1/2), nothing gathered each "
                              "micro-batch: --dp-overlap or --overlap-grad-reduce set their overlap")
        if reduces_after_backward(layout):
            unread["dp"] = ("DeepSpeed's pipeline engine reduces the gradients after the schedule's last backward: "
                            "nothing overlaps them")
    return unread
