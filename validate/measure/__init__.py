"""Measurements of any nn.Module (Hugging Face models and the reference model alike).

What each quantity means is fixed by the conventions in docs/design.md:
  parameters       unique tensors (tied weights once), buffers excluded
  matmul FLOPs     FlopCounterMode: 2*m*n*k per mm/bmm (and per group of torch._grouped_mm, which
                   torch lacks); torch.no_grad (not inference_mode) for forward
  expert loads     tokens routed to each expert of a mixture of experts (real tensors)
  other ops        output elements per aten op, counted by a TorchDispatchMode
  activations      bytes of unique storages saved for backward during a training forward with the
                   loss, parameters and buffers (and views of them) excluded
  KV cache         bytes of the key and value tensors held by the model's cache
Everything here also runs under validate.hf_models.fake_mode(), except profiler_matmul_flops,
expert_loads and cuda_peak_memory, which need real tensors.

One module per thing measured: parameters.py, flops.py (matmul FLOPs, the profiler's count, expert
loads, other ops' elements), saved.py (activations), memory.py (KV cache, peak memory); common.py
holds what they share (the loss, the module running forward, a storage's identity). Every name
is importable from validate.measure.
"""

from __future__ import annotations

from .common import Inputs, LossFn, aten, default_loss
from .flops import (
    CPU_SDPA_FORMULAS, EXTRA_FLOP_FORMULAS, GROUPED_MM_FORMULAS, FlopResult, OpElementCounter, expert_loads,
    matmul_flops, op_key, other_op_elements, profiler_matmul_flops, register_cpu_sdpa_flop_formulas,
)
from .memory import (
    backward_live_bytes, cache_after_each_step, cache_bytes, cuda_peak_memory, kv_cache_bytes, one_training_step, output_cache,
    peak_memory_memtracker, run_with_cache,
)
from .parameters import count_parameters, parameters_by_module
from .saved import UNREACHABLE, SavedResult, SavedTensor, saved_activation_bytes

__all__ = [
    "CPU_SDPA_FORMULAS", "EXTRA_FLOP_FORMULAS", "GROUPED_MM_FORMULAS", "FlopResult", "Inputs", "LossFn",
    "OpElementCounter", "SavedResult", "SavedTensor", "UNREACHABLE", "aten", "cache_after_each_step", "cache_bytes",
    "count_parameters", "cuda_peak_memory", "default_loss", "expert_loads", "kv_cache_bytes", "matmul_flops",
    "one_training_step", "op_key", "other_op_elements", "output_cache", "parameters_by_module",
    "peak_memory_memtracker", "profiler_matmul_flops", "backward_live_bytes", "register_cpu_sdpa_flop_formulas", "run_with_cache",
    "saved_activation_bytes",
]
