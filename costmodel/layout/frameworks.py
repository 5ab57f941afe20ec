"""The training frameworks a layout can follow, as data: what each keeps per parameter, how it
shards, pads and communicates. Every row says where the convention comes from.

  megatron   Megatron-LM (Narayanan et al. 2021, Korthikanti et al. 2022): bf16 weights, fp32 main
             gradients, fp32 master + moments; --zero 1 is its distributed optimizer (6 + 12/dp
             bytes), --zero 3 Megatron-FSDP (optim_grads_params; with --dp-shard its HFSDP:
             costmodel/layout/megatron_fsdp.py); fused QKV and gate/up column-parallel layers; sequence parallelism saves the
             shard and all-gathers the input again in backward; the vocabulary padded to a
             multiple of 128 x tp; --grad-reduce-dtype bf16 (grad_reduce_in_fp32 False) keeps
             bf16 main gradients and reduces them in bf16 (2 + 2 + 12, the optimizer casting its
             shard's gradients to fp32 at the step); --precision-aware-optimizer
             (use_precision_aware_optimizer, PRECISION_AWARE_OPTIMIZERS) narrows the moments or
             the master copy under the distributed optimizer.
  deepspeed  DeepSpeed ZeRO (Rajbhandari et al. 2020): 2 + 2 + 12 bytes, sharded by stage over a
             flat, evenly partitioned buffer; tensor parallelism as Megatron's, on the model's own
             vocabulary (ceil(V / tp) rows a rank); its pipeline engine of 2022 (v0.6.5):
             partitioned sends with their meta, the output gathered again before backward, the
             gradients reduced after the last backward, and in bf16 the BF16_Optimizer.
  fsdp2      PyTorch FSDP2 (fully_shard per layer and on the root, MixedPrecisionPolicy bf16/fp32,
             or bf16/bf16 with a layout's grad_reduce_dtype "bf16"; a layout's pure_precision: a model
             built in bf16, its shards, gradients and AdamW's moments bf16, 2 + 2 + 4 bytes)
             with DTensor tensor parallelism composed as torchtitan composes them, and
             torch.distributed.pipelining: measured on torch 2.13 (validate/distributed,
             FINDINGS section 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Framework:
    name: str
    precision: str  # the precision policy (costmodel/precision.py): bytes per parameter
    zero_stages: tuple[int, ...]
    zero_note: str
    # Sharding over dp: "flat" partitions a stage's parameters evenly (ceil(P / dp) per rank);
    # "per_tensor" shards each tensor along dim 0, padded to ceil(rows / dp) rows (FSDP2).
    sharding: str
    # Column-parallel layers: "fused" (one for Q, K, V and one for gate/up: one all-reduce of
    # the input gradient per sublayer) or "separate" (DTensor on q, k, v, gate and up: one each).
    column_layers: str
    sp_regathers_input: bool  # SP keeps the input's shard and all-gathers it again in backward
    vocabulary: str  # "pad128": V padded to a multiple of 128 tp; "ceil": ceil(V / tp) rows a rank
    embedding_gradient_full: bool  # the vocabulary-parallel embedding's gradient is a full V x d
    norm_gradient_all_reduces: int  # SP: all-reduces of each replicated norm gradient per step
    whole_batch_inputs: bool  # pipelining keeps a step's ids (first stage) and labels (last) whole
    step_counters: bool  # torch's AdamW: one fp32 `step` per tensor (device-resident on the CPU)
    dp_gradient_dtype: str  # "fp32" or "activation": the dtype of the gradient collectives
    vocabulary_parallel_loss: bool  # the loss over the rank's vocabulary shard (else all-gathered)
    # The policy and gradient dtype in fp16 where they differ from bf16's: Megatron forces fp32
    # gradient accumulation and all-reduce for bf16 only (arguments.py sets
    # accumulate_allreduce_grads_in_fp32 when args.bf16); in fp16 its gradient buffer is fp16 and
    # the optimizer makes the fp32 copies at the step (issue 22 defect 2).
    fp16_precision: str | None = None
    fp16_dp_gradient_dtype: str | None = None
    # DeepSpeed ZeRO-2/3's step() allocates an fp32 gradient partition beside the fp32 master
    # partition (stage_1_and_2.py: single_partition_of_fp32_groups[i].grad; stage3.py: the fp32
    # partitioned gradients), 4 bytes per parameter of the shard at the peak (issue 22 defect 3).
    fp32_gradient_partition_stages: tuple[int, ...] = ()
    # Pipeline sends without sequence parallelism: each tensor-parallel rank sends 1/tp of the
    # boundary (which every rank of the group holds whole) and the receivers all-gather it over
    # the tensor-parallel group (Narayanan et al. 2021, section 4.1, "scatter/gather"; Megatron-LM
    # p2p_communication.py _communicate, on unless --no-scatter-gather-tensors-in-pipeline,
    # commit cbad126 of March 2021 to 2022). Under sequence parallelism the boundary is already
    # the rank's 1/tp shard and is sent as it is.
    pp_scatter_gather: bool = False
    # Gradient accumulation over micro-batches in fp16, where the weight-gradient GEMM does not
    # accumulate in place: "in_place" adds each micro-batch's gradient after the first into the
    # held one (torch's AccumulateGrad: grad += new, reading both and writing one, in the gradient
    # dtype). Megatron-LM of Narayanan et al.'s runs (March-April 2021, before contiguous DDP
    # buffers became its default in August 2021, commit e8fb052; gradient_accumulation_fusion,
    # February 2022, is switched off in fp16 by arguments.py). None: not modelled (bf16 Megatron
    # fuses it into the weight-gradient GEMM's fp32 output).
    fp16_gradient_accumulation: str | None = None
    # The ZeRO stages that accumulation runs at (None: every stage). DeepSpeed's engine leaves each
    # micro-batch's fp16 gradient to autograd's AccumulateGrad at stages 0 and 1 (FP16_Optimizer;
    # ZeRO-1's reduce_ready_partitions_and_remove_grads reduces only at the accumulation boundary:
    # deepspeed/runtime/zero/stage2.py line 1236 at v0.5.8, "if self.partition_gradients or
    # self.is_gradient_accumulation_boundary"); ZeRO-2 moves each one into its partition instead.
    fp16_accumulation_stages: tuple[int, ...] | None = None
    # The optimizer step in fp16 as the framework runs it, where it is not one fused pass over the
    # parameter's copies (ParamBytes.step_traffic): "megatron", FP16OptimizerWithFP16Params' five
    # passes (precision.megatron_fp16_step_bytes: the fp16 gradients copied to fp32, unscaled and
    # checked, their norm, FusedAdam, the fp32 parameters copied back to fp16). None: one pass.
    fp16_optimizer_passes: str | None = None
    # The loss code the framework runs (Profile.framework_loss): "vocab_parallel", Megatron-LM's
    # _VocabParallelCrossEntropy (megatron/mpu/cross_entropy.py), timed where the model's code
    # calls it unfused (facts.loss_passes: Megatron-LM's GPTModel). None: those passes not timed,
    # whatever the model's code runs (DeepSpeed, FSDP2): Megatron-DeepSpeed's GPTModel calls the same
    # vocab_parallel_cross_entropy, so its runs (BLOOM, MT-NLG) leave those passes out, as do runs
    # whose own code fuses the loss (FlashAttention-2's GPTs), which this field keeps apart; such a
    # loss moves a fused kernel's traffic, the least any code moves (blocks/head.py fused_loss_bytes).
    loss: str | None = None
    # DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py at v0.6.5, 8164ea9, 2022-05):
    # with tensor parallelism its sends are PartitionedTensors (is_pipe_partitioned and, since
    # e2fdd254e of 2021-09-29, is_grad_partitioned = is_model_parallel: each rank sends 1/tp of the
    # boundary, the receiver's PartitionedTensor.full() all-gathers it; pp_scatter_gather), each
    # sent as two tensors, the partition's meta (to_meta(), a LongTensor) and its data
    # (pp_partition_meta); before its backward a stage all-gathers the output it partitioned
    # again (_exec_backward_pass: output_tensors[buffer_id].data = part_output.full();
    # pp_output_regather). Its schedule (pipe/schedule.py TrainSchedule) reduces the tied and
    # data-parallel gradients after the last backward (ReduceTiedGrads, ReduceGrads; the engine
    # sets enable_backward_allreduce False): nothing overlaps them (pp_reduce_after_backward).
    pp_partition_meta: bool = False
    pp_output_regather: bool = False
    pp_reduce_after_backward: bool = False
    # In bf16 with pipeline parallelism DeepSpeed runs its BF16_Optimizer (engine.py
    # _configure_bf16_optimizer; pipe/engine.py _exec_reduce_grads runs bf16 only at ZeRO stage 0,
    # which the BF16_Optimizer shards as ZeRO-1 does: a layout's --zero 1), costmodel/precision.py
    # bf16_optimizer_*: each micro-batch's bf16 gradient cast and added into an fp32 gradient, the
    # rank's whole fp32 gradient all-reduced in the engine's communication dtype (bf16), the tied
    # embedding's fp32 gradient all-reduced, the bf16 parameters all-gathered after the step; in
    # memory the rank's whole gradient in fp32 beside the bf16 one (fp32_groups_gradients_flat).
    bf16_pipeline_optimizer: bool = False
    # The ZeRO stage a layout that names none takes: 0 (plain data parallelism), or FSDP2's 3
    # (fully_shard's default reshard_after_forward=True), the only stages it has being 2 and 3.
    default_zero: int = 0
    # The pipeline schedules the framework's engine runs with pp > 1 (None: every one modelled).
    # DeepSpeed's pipeline engine runs one: PipelineEngine.train_batch builds
    # schedule.TrainSchedule, its 1F1B (deepspeed/runtime/pipe/engine.py and schedule.py at v0.6.5,
    # 8164ea9, and since); it has no GPipe, interleaved or zero-bubble schedule.
    pipeline_schedules: tuple[str, ...] | None = None
    # The policy under a layout's grad_reduce_dtype "bf16" (Layout.grad_reduce_dtype; None: the
    # framework has no such setting). Megatron-Core's DistributedDataParallelConfig.
    # grad_reduce_in_fp32 (default False there; Megatron-LM's arguments.py sets
    # accumulate_allreduce_grads_in_fp32, which training.py passes as grad_reduce_in_fp32, with
    # --bf16 unless --grad-reduce-in-bf16; Megatron-Bridge's bf16_mixed() and MixedPrecisionConfig
    # default True: NVIDIA/Megatron-LM d98e8a64d megatron/training/arguments.py lines 1204-1217,
    # NVIDIA-NeMo/Megatron-Bridge 067f987df src/megatron/bridge/training/mixed_precision.py line 47)
    # decides the main_grad buffers' dtype (param_and_grad_buffer.py group_params_for_buffers:
    # "grad_dtype = torch.float if grad_reduce_in_fp32 else param.dtype") and so the dtype of the
    # data-parallel reduce-scatter or all-reduce; in bf16 the weights' dtype, 2 + 2 + 12 bytes
    # ("mixed"), and the optimizer casts each updated parameter's gradient to fp32 at the step
    # (step_bytes.megatron_gradient_cast_bytes; gradient_cast_at_step).
    bf16_grad_reduce_precision: str | None = None
    # Whether the optimizer step then casts each updated parameter's bf16 gradient to fp32
    # (gradient_cast_at_step): Megatron-Core's, whose buffers hold the gradient in bf16. FSDP2's
    # MixedPrecisionPolicy(reduce_dtype=bf16) reduce-scatters in bf16 and casts the reduced shard to
    # the sharded parameter's fp32 inside the reduce (torch 2.13 torch/distributed/fsdp/_fully_shard/
    # _fsdp_collectives.py foreach_reduce: reduce_output = _to_dtype_if_needed(reduce_output,
    # orig_dtype)), so its step reads an fp32 gradient as with an fp32 reduce.
    bf16_grad_reduce_casts_at_step: bool = False
    # Whether a layout may state Megatron-Core's precision-aware optimizer (Layout.
    # precision_aware_optimizer; PRECISION_AWARE_OPTIMIZERS), which needs its distributed
    # optimizer (megatron/core/optimizer/__init__.py at d98e8a64d lines 1057-1060: '--use-precision-
    # aware-optimizer only supported with distributed optimizer') and Adam (optimizer_config.py
    # lines 433-436).
    precision_aware_optimizer: bool = False
    # Whether the framework's model builds multi-token-prediction depths (ModelConfig.mtp_layers,
    # `--mtp`): Megatron-Core's MultiTokenPredictionBlock (megatron/core/transformer/
    # multi_token_prediction.py, mtp_num_layers). DeepSpeed and FSDP2 train the Hugging Face class
    # they are given, and transformers 5.24's builds none: DeepseekV3ForCausalLM drops the
    # checkpoint's MTP layer on load (modeling_deepseek_v3.py _keys_to_ignore_on_load_unexpected =
    # [r"model\.layers\.61.*"]) and no class reads num_nextn_predict_layers.
    builds_mtp: bool = False
    # The ZeRO stages `plan` tries when none is fixed (None: every one of zero_stages). Megatron's
    # --zero 3 (Megatron-FSDP) is tried only when asked for, so the layouts plan picked stay the
    # ones its tests and docs name.
    planned_zero_stages: tuple[int, ...] | None = None
    # Whether a layout may train in pure precision (Layout.pure_precision): the model built in the
    # activation dtype and the optimizer run on those parameters, no fp32 copy. PyTorch's FSDP keeps
    # the sharded parameter in the dtype the model was built in (FSDP1's FlatParameter, FSDP2's
    # DTensor shards; MixedPrecision(param_dtype=bf16, reduce_dtype=bf16) casts nothing on a bf16
    # model) and torch's AdamW makes its moments in that dtype (torch 2.13 torch/optim/adam.py
    # Adam._init_group, which torch/optim/adamw.py's AdamW(Adam) runs: state["exp_avg"] =
    # torch.zeros_like(p, ...), state["exp_avg_sq"] the same; only `step` is fp32). Megatron-Core
    # and DeepSpeed keep an fp32 master in bf16 (Float16OptimizerWithFloat16Params, the distributed
    # optimizer; BF16_Optimizer, ZeRO's fp32 partitions): not theirs.
    pure_precision: bool = False

    def precision_for(self, dtype: str, grad_reduce: str | None = None, pure: bool = False) -> str:
        """The precision policy (costmodel/precision.py) in this activation dtype, under a
        layout's grad_reduce_dtype (None: the framework's default) and its pure_precision."""
        if pure:  # weights, gradients and moments in the dtype (Layout.pure_precision)
            return "pure"
        if grad_reduce == "bf16" and self.bf16_grad_reduce_precision:
            return self.bf16_grad_reduce_precision
        return self.fp16_precision if dtype == "fp16" and self.fp16_precision else self.precision

    def gradient_dtype_for(self, dtype: str, grad_reduce: str | None = None, pure: bool = False) -> str:
        """"fp32" or "activation": the dtype of the data-parallel gradient collectives (pure precision:
        the gradients', the activation dtype)."""
        if pure:
            return "activation"
        if grad_reduce is not None and self.bf16_grad_reduce_precision:
            return "fp32" if grad_reduce == "fp32" else "activation"
        if dtype == "fp16" and self.fp16_dp_gradient_dtype:
            return self.fp16_dp_gradient_dtype
        return self.dp_gradient_dtype

    def gradient_cast_at_step(self, dtype: str, grad_reduce: str | None, precision_aware: str | None = None) -> bool:
        """Whether the optimizer casts each parameter's reduced gradient to a new fp32 tensor at
        the step: Megatron-Core's distributed optimizer (distrib_optimizer.py
        _copy_model_grads_to_main_grads: shard_main_param.grad = shard_model_grad.float(), a
        no-op on an fp32 buffer) and its Float16OptimizerWithFloat16Params (optimizer.py:
        main_param.grad = model_param.main_grad.float()) with bf16 main_grad buffers; not where
        a precision-aware optimizer's FusedAdam reads the buffer's gradient itself
        (PrecisionAwareOptimizer.reads_buffer_gradient)."""
        if precision_aware is not None and PRECISION_AWARE_OPTIMIZERS[precision_aware].reads_buffer_gradient:
            return False
        return self.bf16_grad_reduce_casts_at_step and grad_reduce == "bf16" and dtype == "bf16"


@dataclass(frozen=True)
class PrecisionAwareOptimizer:
    """Megatron-Core's use_precision_aware_optimizer under one recipe's dtypes (OptimizerConfig
    main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype, store_param_remainders), as the bytes of
    each parameter the rank updates; None keeps the precision policy's."""

    name: str
    master_bytes: int | None  # the master copy (None: the policy's fp32 master, kept by Megatron-Core)
    moment_bytes: int | None  # exp_avg and exp_avg_sq, each (None: the policy's fp32)
    reads_buffer_gradient: bool  # FusedAdam reads the main_grad shard as decoupled_grad: no cast
    source: str


# Which path runs is Megatron-Core's rule (NVIDIA/Megatron-LM d98e8a64d megatron/core/optimizer/
# optimizer_config.py lines 407-414, the same at 441511941, Megatron-Bridge 21d102f5e's submodule):
# use_precision_aware_optimizer_no_fp8_or_ds_fp8 = use_precision_aware_optimizer and
# (main_params_dtype != fp32 or fp8_recipe in (None, "delayed") or optimizer_cpu_offload). Only then
# does Transformer Engine's FusedAdam keep the master weights (optimizer/__init__.py lines 564-588:
# master_weights, use_decoupled_grad, master_weight_dtype, store_param_remainders) and the
# distributed optimizer pass it the bf16 shard without a master of its own (distrib_optimizer.py
# lines 421-453: shard_main_param None; lines 2784-2790: decoupled_grad = the buffer's shard, no
# .float()). Otherwise Megatron-Core keeps its fp32 master shard and casts the gradient, and
# FusedAdam only stores the moments in exp_avg_dtype / exp_avg_sq_dtype (lines 564-570).
PRECISION_AWARE_OPTIMIZERS = {
    "fp32": PrecisionAwareOptimizer(
        "fp32", None, None, False,
        "Megatron-Bridge's performance scripts (scripts/performance/utils/overrides.py "
        "set_post_overrides at 21d102f5e lines 486-487: use_precision_aware_optimizer True for compute "
        "dtype bf16 with Adam) with OptimizerConfig's fp32 dtypes; its BF16 runs carry "
        "MixedPrecisionConfig.fp8_recipe 'tensorwise' (training/mixed_precision.py line 50, the "
        "default with fp8 None), which MixedPrecisionConfig.setup copies into the OptimizerConfig "
        "before ConfigContainer.validate runs its finalize (MCore's __post_init__), so Megatron-Core "
        "keeps the fp32 master, casts the gradient, and FusedAdam's moments stay fp32"),
    "bf16-moments": PrecisionAwareOptimizer(
        "bf16-moments", None, 2, False,
        "Megatron-Bridge's DeepSeek-V3 recipe (src/megatron/bridge/recipes/deepseek/deepseek_v3.py at "
        "21d102f5e lines 167-171: main_params_dtype fp32, main_grads_dtype, exp_avg_dtype and "
        "exp_avg_sq_dtype bf16); TE's FusedAdam (transformer_engine/pytorch/optimizers/fused_adam.py "
        "at d0067d0da: fuse_unscale when both moments are bf16, the kernel updating them in place) "
        "beside Megatron-Core's fp32 master, as fp32 above"),
    "te-master": PrecisionAwareOptimizer(
        "te-master", 2, None, True,
        "Megatron-LM's own launch (TransformerConfig.fp8_recipe default 'delayed', transformer_config.py "
        "at d98e8a64d line 594) with fp32 dtypes: FusedAdam keeps the fp32 master as the int16 "
        "remainder of each bf16 weight (store_param_remainders, True by default from TE 2.1; "
        "distrib_optimizer.py lines 1007-1009 save it as int16; fused_adam.py "
        "multi_tensor_adam_param_remainder) and reads the gradient from the main_grad buffer"),
}


#: The frameworks whose MoE layer runs Megatron-Core's flex token dispatcher (--ep-dispatcher deepep or
#: hybridep): Megatron-Core's own MoEFlexTokenDispatcher, and NeMo AutoModel's copy of it beside FSDP2
#: (NVIDIA-NeMo/Automodel at 36044ad3: nemo_automodel/components/moe/megatron/token_dispatcher.py,
#: class MoEFlexTokenDispatcher, moe_flex_dispatcher_backend "deepep" or "hybridep", moe_deepep_num_sms
#: 20 as Megatron-Core's; megatron/fused_a2a.py calls the same deep_ep Buffer dispatch and combine,
#: lines 23-24). AutoModel shards its experts with FSDP2 as costmodel/layout/experts.py says for fsdp2.
FLEX_DISPATCH_FRAMEWORKS = ("megatron", "fsdp2")


FRAMEWORKS = {
    "megatron": Framework(
        name="megatron", precision="megatron", zero_stages=(0, 1, 3),
        zero_note="1 is its distributed optimizer, 3 Megatron-FSDP (use_megatron_fsdp, data_parallel_sharding_"
                  "strategy optim_grads_params); its ZeRO-2 (optim_grads) is not modelled",
        planned_zero_stages=(0, 1),
        sharding="flat", column_layers="fused", sp_regathers_input=True, vocabulary="pad128",
        embedding_gradient_full=False, norm_gradient_all_reduces=1, whole_batch_inputs=False,
        step_counters=False, dp_gradient_dtype="fp32", vocabulary_parallel_loss=True,
        fp16_precision="mixed", fp16_dp_gradient_dtype="activation",
        pp_scatter_gather=True, fp16_gradient_accumulation="in_place", fp16_optimizer_passes="megatron",
        loss="vocab_parallel", bf16_grad_reduce_precision="mixed", bf16_grad_reduce_casts_at_step=True,
        precision_aware_optimizer=True,
        builds_mtp=True,
    ),
    "deepspeed": Framework(
        name="deepspeed", precision="mixed", zero_stages=(0, 1, 2, 3),
        zero_note="ZeRO stages 0-3", sharding="flat", column_layers="fused",
        sp_regathers_input=True, vocabulary="ceil", embedding_gradient_full=False,
        norm_gradient_all_reduces=1, whole_batch_inputs=False, step_counters=False,
        dp_gradient_dtype="activation", vocabulary_parallel_loss=True,
        fp32_gradient_partition_stages=(2, 3),
        pp_scatter_gather=True, pp_partition_meta=True, pp_output_regather=True, pp_reduce_after_backward=True,
        bf16_pipeline_optimizer=True, pipeline_schedules=("1f1b",),
        fp16_gradient_accumulation="in_place", fp16_accumulation_stages=(0, 1),
    ),
    "fsdp2": Framework(
        name="fsdp2", precision="fsdp2", zero_stages=(2, 3),
        zero_note="fully_shard always shards parameters: 3 reshards them after forward, 2 does not",
        sharding="per_tensor", column_layers="separate", sp_regathers_input=False,
        vocabulary="ceil", embedding_gradient_full=True, norm_gradient_all_reduces=3,
        whole_batch_inputs=True, step_counters=True, dp_gradient_dtype="fp32",
        vocabulary_parallel_loss=False,  # unless the layout asks for loss_parallel
        default_zero=3,
        # MixedPrecisionPolicy(reduce_dtype=torch.bfloat16) (Composer's FSDP mixed_precision "PURE":
        # param, reduce and buffer dtypes all the precision's): the gradient reduce-scatter in bf16,
        # the shards still fp32 (bf16_grad_reduce_casts_at_step), so the same memory policy
        bf16_grad_reduce_precision="fsdp2",
        pure_precision=True,  # a model built in bf16: its shards, gradients and moments bf16
    ),
}


def layout_vocabulary(layout: Any) -> str:
    """How a layout's ranks hold the vocabulary (costmodel/layout/split.py local_vocabulary): its
    framework's rows a rank ("pad128", "ceil"), or "replicated" where the layout keeps the
    embedding and head whole on every rank (Layout.vocab_parallel False)."""
    if not layout.vocab_parallel:
        return "replicated"
    return FRAMEWORKS[layout.framework].vocabulary
