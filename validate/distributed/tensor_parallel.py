"""Tensor (and sequence) parallelism with DTensor, measured per rank: shards, collectives, saved bytes.

Plans are data, as in torchtitan's apply_tp: {module path (fnmatch wildcards): ParallelStyle}.
    q, k, v, gate, up      ColwiseParallel            (weights Shard(0): output features split)
    out, down              RowwiseParallel            (weights Shard(1); output all-reduced, or
                                                       reduce-scattered to Shard(1) under SP)
    token embedding        RowwiseParallel            (vocabulary-parallel: table Shard(0); output
                                                       all-reduced, or reduce-scattered under SP)
    LM head                ColwiseParallel            (Shard(0) of V x d; logits all-gathered to
                                                       Replicate, or kept Shard(-1) for loss_parallel)
    norms                  not parallelized           (replicated plain tensors), or with SP
                           SequenceParallel            (Replicate DTensor weights, inputs Shard(1))
    attention, FFN (SP)    PrepareModuleInput         (all-gather Shard(1) -> Replicate)
Under SP the residual stream stays a DTensor sharded on the sequence (the projections keep
use_local_output=False), so the reference model's masks and RoPE tables see the full length.

measure_tp(rank, world_size, case) runs one training step (forward with the loss, backward, AdamW)
on one rank and returns plain data:
    {"state": {"parameters"|"gradients"|"optimizer": {"storage": int, "elements": int}},
     "communication": {phase: {"tp": {kind: bytes}}}, "calls": {phase: {"tp": {kind: count}}},
     "collectives": [(phase, kind, payload bytes, dtype), ...] in issue order,
     "gradient_layouts": {parameter: (placements, local shape of its gradient)},
     "saved_bytes": bytes saved for backward on this rank (validate.measure's convention),
     "saved_by_module": {module path at depth 3: bytes}}
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_module
from torch.distributed.tensor.parallel import (
    ColwiseParallel, ParallelStyle, PrepareModuleInput, RowwiseParallel, SequenceParallel,
    loss_parallel, parallelize_module,
)

from costmodel.config import ModelConfig
from validate.measure import saved_activation_bytes

from .comm import CommRecorder
from .models import Trainee, build_trainee, run_context
from .state import training_state

PHASES = ("forward", "backward", "optimizer")


@dataclass(frozen=True)
class TpCase:
    """One tensor-parallel run. seq_len must divide by the world size under sequence parallelism."""

    cfg: ModelConfig
    batch: int = 2
    seq_len: int = 8
    implementation: str = "reference"
    sequence_parallel: bool = False
    loss_parallel: bool = False  # logits stay Shard(-1); cross-entropy under loss_parallel()
    fake: bool = False
    measure_saved: bool = True
    dtype: torch.dtype | None = None  # the default dtype while building (None: fp32)
    attention: str = "eager"  # HF's attn_implementation


class ColwiseLMHead(ColwiseParallel):
    """ColwiseParallel for the reference model's LMHead, which applies F.linear to its own weight
    (ColwiseParallel itself accepts only nn.Linear and nn.Embedding): weight and bias Shard(0)."""

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        return distribute_module(
            module, device_mesh, self._partition_linear_fn,
            partial(self._prepare_input_fn, self.input_layouts, self.desired_input_layouts),
            partial(self._prepare_output_fn, self.output_layouts, self.use_local_output),
        )


def _head_style(head_class: type, sp: bool, loss_par: bool) -> ParallelStyle:
    return head_class(
        input_layouts=Shard(1) if sp else Replicate(),
        output_layouts=Shard(-1) if loss_par else Replicate(),
        use_local_output=not loss_par,
    )


def _layer_plan(names: dict[str, str], sp: bool, attention_kwarg: str | None) -> dict[str, ParallelStyle]:
    """One decoder layer's plan; names maps roles (q, k, v, o, gate, up, down, attention, ffn,
    attention_norm, ffn_norm) to the layer's module paths. attention_kwarg: the keyword under which
    the layer passes hidden states to its attention (None: positionally)."""
    plan: dict[str, ParallelStyle] = {names[r]: ColwiseParallel() for r in ("q", "k", "v", "gate", "up")}
    rowwise = dict(output_layouts=Shard(1), use_local_output=False) if sp else {}
    plan.update({names[r]: RowwiseParallel(**rowwise) for r in ("o", "down")})
    if sp:
        plan[names["attention_norm"]] = SequenceParallel()
        plan[names["ffn_norm"]] = SequenceParallel()
        if attention_kwarg is None:
            plan[names["attention"]] = PrepareModuleInput(
                input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
        else:
            plan[names["attention"]] = PrepareModuleInput(
                input_kwarg_layouts={attention_kwarg: Shard(1)},
                desired_input_kwarg_layouts={attention_kwarg: Replicate()})
        plan[names["ffn"]] = PrepareModuleInput(
            input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    return plan


REFERENCE_LAYER = dict(
    q="self_attention.block.q_proj", k="self_attention.block.k_proj", v="self_attention.block.v_proj",
    o="self_attention.block.out_proj", gate="ffn.block.gate_proj", up="ffn.block.up_proj",
    down="ffn.block.down_proj", attention="self_attention.block", ffn="ffn.block",
    attention_norm="self_attention.norm", ffn_norm="ffn.norm",
)
HF_LLAMA_LAYER = dict(
    q="self_attn.q_proj", k="self_attn.k_proj", v="self_attn.v_proj", o="self_attn.o_proj",
    gate="mlp.gate_proj", up="mlp.up_proj", down="mlp.down_proj", attention="self_attn", ffn="mlp",
    attention_norm="input_layernorm", ffn_norm="post_attention_layernorm",
)


def reference_plan(sp: bool, loss_par: bool) -> dict[str, ParallelStyle]:
    """The plan for validate/reference.py's decoder-only model (untied head)."""
    embedding = dict(output_layouts=Shard(1), use_local_output=False) if sp else {}
    plan = {"embedding.tokens": RowwiseParallel(input_layouts=Replicate(), **embedding)}
    layer = _layer_plan(REFERENCE_LAYER, sp, attention_kwarg=None)
    plan.update({f"decoder.layers.*.{path}": style for path, style in layer.items()})
    if sp:
        plan["decoder.final_norm"] = SequenceParallel()
    plan["head"] = _head_style(ColwiseLMHead, sp, loss_par)
    return plan


def hf_llama_plan(sp: bool, loss_par: bool) -> dict[str, ParallelStyle]:
    """The plan for Hugging Face's LlamaForCausalLM (untied lm_head)."""
    embedding = dict(output_layouts=Shard(1), use_local_output=False) if sp else {}
    plan = {"model.embed_tokens": RowwiseParallel(input_layouts=Replicate(), **embedding)}
    layer = _layer_plan(HF_LLAMA_LAYER, sp, attention_kwarg="hidden_states")
    plan.update({f"model.layers.*.{path}": style for path, style in layer.items()})
    if sp:
        plan["model.norm"] = SequenceParallel()
    plan["lm_head"] = _head_style(ColwiseParallel, sp, loss_par)
    return plan


def check_divisible(cfg: ModelConfig, world_size: int, case: TpCase) -> None:
    """Tensor parallelism splits whole heads and FFN columns; sequence parallelism whole tokens."""
    if cfg.n_heads % world_size or cfg.n_kv_heads % world_size:
        raise ValueError(
            f"model {cfg.name!r}: tensor parallelism over {world_size} ranks needs n_heads "
            f"({cfg.n_heads}) and n_kv_heads ({cfg.n_kv_heads}) divisible by {world_size}."
        )
    if cfg.d_ff % world_size:
        raise ValueError(
            f"model {cfg.name!r}: tensor parallelism over {world_size} ranks needs d_ff ({cfg.d_ff}) "
            f"divisible by {world_size} (a local FFN shard is re-read as an even Shard(-1))."
        )
    if case.sequence_parallel and case.seq_len % world_size:
        raise ValueError(
            f"sequence parallelism over {world_size} ranks needs seq_len ({case.seq_len}) "
            "divisible by it."
        )
    if cfg.tie_embeddings:
        raise ValueError(f"model {cfg.name!r}: the plans shard an untied head; set tie_embeddings=False.")


def apply_tp(trainee: Trainee, mesh: DeviceMesh, case: TpCase) -> None:
    """parallelize_module with the implementation's plan; the reference attention is told its
    local head counts (Hugging Face's infers them from the projection widths)."""
    make_plan = reference_plan if case.implementation == "reference" else hf_llama_plan
    parallelize_module(trainee.model, mesh, make_plan(case.sequence_parallel, case.loss_parallel))
    if case.implementation == "reference":
        world = mesh.size()
        for layer in trainee.layers:
            attention = layer.self_attention.block
            attention.n_heads //= world
            attention.n_kv_heads //= world


def _gradient_layouts(model: nn.Module) -> dict[str, tuple[str, tuple[int, ...]]]:
    layouts = {}
    for name, param in model.named_parameters():
        grad = param.grad
        if isinstance(grad, DTensor):
            layouts[name] = (str(grad.placements), tuple(grad._local_tensor.shape))
        elif grad is not None:
            layouts[name] = ("plain", tuple(grad.shape))
    return layouts


def _train_step(trainee: Trainee, optimizer: torch.optim.Optimizer, recorder: CommRecorder,
                loss_par: bool) -> None:
    with loss_parallel() if loss_par else contextlib.nullcontext():
        with recorder.in_phase("forward"):
            loss = trainee.loss(trainee.model, trainee.inputs)
        with recorder.in_phase("backward"):
            loss.backward()
    with recorder.in_phase("optimizer"):
        optimizer.step()


def _saved(trainee: Trainee, loss_par: bool) -> tuple[int, dict[str, int]]:
    with loss_parallel() if loss_par else contextlib.nullcontext():
        result = saved_activation_bytes(trainee.model, trainee.inputs, loss_fn=lambda out: out.loss)
    return result.total_bytes, result.by_module(depth=3)


def measure_tp(rank: int, world_size: int, case: TpCase) -> dict:
    """One rank's tensor-parallel measurements for case (see the module docstring for the keys)."""
    check_divisible(case.cfg, world_size, case)
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("tp",))
    with run_context(case.fake):
        trainee = build_trainee(case.cfg, case.implementation, case.batch, case.seq_len, case.dtype,
                                attention=case.attention)
        apply_tp(trainee, mesh, case)
        optimizer = torch.optim.AdamW(trainee.model.parameters(), lr=1e-3)
        recorder = CommRecorder({"tp": mesh.get_group("tp")})
        with recorder:
            _train_step(trainee, optimizer, recorder, case.loss_parallel)
        state = training_state(trainee.model, optimizer)
        layouts = _gradient_layouts(trainee.model)
        optimizer.zero_grad(set_to_none=True)
        saved, saved_by_module = _saved(trainee, case.loss_parallel) if case.measure_saved else (0, {})
    return {
        "state": state.as_dict(),
        "communication": {p: recorder.totals(p) for p in PHASES},
        "calls": {p: recorder.counts(p) for p in PHASES},
        "collectives": [(r.phase, r.kind, r.payload_bytes, r.dtype) for r in recorder.records],
        "gradient_layouts": layouts,
        "saved_bytes": saved,
        "saved_by_module": saved_by_module,
    }
