"""The implementation profile a paged serving engine runs (serving_profile) and the check that a
grouped weight format splits into whole groups over tensor-parallel ranks; StepTime and
build_replica read both (steptime.py re-exports them)."""

from __future__ import annotations

from typing import Any

import sympy as sp

from ..config import ModelConfig, Workload
from ..tree import CostModel, model_values, profile_for


def serving_profile(cfg: ModelConfig, attention: str = "flash", weight_dtype: str | None = None,
                    kv_dtype: str | None = None, mla: str = "absorbed", fp8_gemm: str = "auto",
                    weight_group: int | None = None, kv_read_as_stored: bool = True,
                    routed_experts: bool = True, quant_layout: str = "gptq") -> Any:
    """The implementation profile of a paged engine: no dropout, a cache written in place, latent
    attention absorbed (as vLLM's MLA backend runs it); fp8 weights' GEMMs as fp8_gemm says
    (spec.FP8_GEMMS); weight_group: values per scale of weight_dtype (its default when None);
    kv_read_as_stored: its fused attention reads a quantized cache as stored (Profile's field;
    False for Hugging Face generate's static batching, whose QuantizedCache dequantizes);
    routed_experts: its MoE kernel runs each token through its top k experts (Profile's field;
    False for transformers' own serving, which runs its class's experts as they are); quant_layout:
    how int8 and int4 weights are stored (spec.QUANT_LAYOUTS)."""
    workload = Workload(attention=attention, weight_dtype=weight_dtype, kv_dtype=kv_dtype, mla=mla,
                        fp8_gemm=fp8_gemm, weight_group=weight_group, quant_layout=quant_layout)
    return profile_for(cfg, workload, dropout=False, kv_cache="static", kv_read_as_stored=kv_read_as_stored,
                       routed_experts=routed_experts)


def check_tensor_parallel_groups(cfg: ModelConfig, profile: Any, tp: int) -> None:
    """Whole groups of a grouped format on each row-parallel shard (quantization.check_shard_groups):
    the input widths of the decode tree's matrices that tensor parallelism splits (layout/split.py)."""
    from ..layout.split import split_inputs, substitution
    from ..quantization import check_shard_groups

    fmt = getattr(profile, "weight_format", None)
    if fmt is None or tp == 1:
        return
    fixed = {k: sp.Integer(v) for k, v in model_values(cfg).items()}
    widths = set()
    for leaf in CostModel(cfg, profile, phase="decode").leaves:
        split = substitution(leaf.block, sp_on=False, vocabulary="ceil", loss_parallel=False, encoder=False)
        widths |= {int(cols.xreplace(fixed)) for cols in split_inputs(leaf.cost.matrices, split)}
    check_shard_groups(fmt, sorted(widths), tp)
