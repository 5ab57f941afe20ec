"""The implementation profile a paged serving engine runs (serving_profile) and the check that a
grouped weight format splits into whole groups over tensor-parallel ranks; StepTime and
build_replica read both (steptime.py re-exports them)."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

import sympy as sp

from ..config import ModelConfig, Workload
from ..tree import CostModel, model_values, profile_for


def serving_profile(cfg: ModelConfig, attention: str = "flash", weight_dtype: str | None = None,
                    kv_dtype: str | None = None, mla: str = "absorbed", fp8_gemm: str = "auto",
                    weight_group: int | None = None, decode_code: str = "vllm",
                    routed_experts: bool = True, quant_layout: str = "gptq", kv_cache: str = "static",
                    weight_kept: tuple[str, ...] = ()) -> Any:
    """The implementation profile of a paged engine: no dropout, a cache written in place, latent
    attention absorbed (as vLLM's MLA backend runs it); fp8 weights' GEMMs as fp8_gemm says
    (spec.FP8_GEMMS); weight_group: values per scale of weight_dtype (its default when None);
    decode_code: the engine's code (costmodel/decode_codes.py, decode_codes.scheduler_code): the
    heads its cache holds and whether its attention reads a quantized cache as stored (vLLM's and
    TensorRT-LLM's do; Hugging Face generate's static batching, whose QuantizedCache dequantizes, not);
    routed_experts: its MoE kernel runs each token through its top k experts (Profile's field;
    False for transformers' own serving, which runs its class's experts as they are); quant_layout:
    how int8 and int4 weights are stored (spec.QUANT_LAYOUTS). The engines whose MoE kernel routes
    (vLLM's FusedMoE) also load the routed experts alone: LongCat-Flash's zero-compute experts hold no
    weights there (Profile.zero_experts_held), where transformers' class allocates their rows. kv_cache:
    "static", written in place (a paged or preallocated cache), or "dynamic" (Hugging Face generate's
    DynamicCache, each step's keys and values concatenated onto a layer's whole cache: decode_codes.serving_cache);
    weight_kept: the weight kinds the checkpoint keeps unquantized (checkpoint.checkpoint_kept)."""
    workload = Workload(attention=attention, weight_dtype=weight_dtype, kv_dtype=kv_dtype, mla=mla,
                        fp8_gemm=fp8_gemm, weight_group=weight_group, quant_layout=quant_layout, decode_code=decode_code,
                        weight_kept=weight_kept)
    return profile_for(cfg, workload, dropout=False, kv_cache=kv_cache,
                       routed_experts=routed_experts, zero_experts_held=not routed_experts)


def check_tensor_parallel_groups(cfg: ModelConfig, profile: Any, tp: int) -> None:
    """Whole groups of a grouped format on each row-parallel shard (quantization.check_shard_groups):
    the input widths of the decode tree's quantized matrices that tensor parallelism splits (layout/split.py), as
    the layout model's ranks read them (layout/parts.row_parallel_widths)."""
    from ..layout.split import split_inputs, substitution
    from ..quantization import check_shard_groups

    fmt = getattr(profile, "weight_format", None)
    if fmt is None or tp == 1:
        return
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    widths = set()
    for leaf in CostModel(cfg, profile, phase="decode").leaves:
        if leaf.weight_format is None:  # left in --dtype (a kind the checkpoint keeps: WeightFormat.quantizes)
            continue
        split = substitution(leaf.block, sp_on=False, vocabulary="ceil", loss_parallel=False, encoder=False)
        widths |= {int(cols.xreplace(fixed)) for cols in split_inputs(leaf.cost.matrices, split)}
    check_shard_groups(fmt, sorted(widths), tp)


@lru_cache(maxsize=None)
def held_params(cfg: ModelConfig, profile: Any) -> int:
    """The parameters a replica built with `profile` holds (the decode tree's)."""
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    return int(CostModel(cfg, profile, phase="decode").total("params").xreplace(fixed))


def held_weights_note(cfg: ModelConfig, profile: Any) -> tuple[int, str] | None:
    """Where the engine's loader and transformers' class hold different weights (LongCat-Flash's
    zero-compute experts, Profile.zero_experts_held): the parameters this replica holds and a line
    saying whose they are and what the other holds; None elsewhere."""
    if not cfg.zero_experts:
        return None
    held = held_params(cfg, profile)
    other = held_params(cfg, replace(profile, zero_experts_held=not profile.zero_experts_held))
    if not profile.zero_experts_held:
        return held, (f"weights: the routed experts alone, as vLLM's loader holds them (its FusedMoE over the "
                      f"{cfg.n_experts} real experts, none for the {cfg.zero_experts} zero-compute ones: "
                      f"vllm/model_executor/models/longcat_flash.py): {held:,} parameters, not the {other:,} "
                      "transformers' class allocates (estimate's count)")
    return held, (f"weights: transformers' class's, {held:,} parameters with the gate_up rows it allocates for the "
                  f"{cfg.zero_experts} zero-compute experts (never run); vLLM's loader holds {other:,} (serve's "
                  "vllm, sarathi, orca and trtllm schedulers)")
