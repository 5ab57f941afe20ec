"""Counts the host calls one forward of AutoGPTQ's int4 QuantLinear modules issues at a decoding
step's few rows, beside the nn.Linear they replace: what kernel_facts.json eager_step_ops
"quantized_linears" states by layout and costmodel/eager_ops.step_ops adds to a step.

The modules are AutoGPTQ v0.4.2's (AutoGPTQ/AutoGPTQ tag v0.4.2, 2023-08-24), as optimum's GPTQ
integration of August 2023 builds them (optimum/gptq/quantizer.py at 09638629,
_replace_by_quant_layers: `QuantLinear(bits, group_size, in_features, out_features, True,
use_cuda_fp16=self.use_cuda_fp16)`: a bias buffer always, of zeros where the checkpoint has none, and
use_cuda_fp16 the quantizer's default False on loading, load_quantized_model's from_dict):
  - qlinear_exllama.py forward: `out = ext_q4_matmul(x.half(), self.q4, self.width)`, then
    `out.add_(self.bias)` (bias not None); ext_q4_matmul: x.view(-1, x.shape[-1]), torch.empty
    (the output), the q4_matmul extension call, output.view(outshape);
  - qlinear_cuda_old.py forward below kernel_switch_threshold (128 rows), use_cuda_fp16 False:
    x.reshape(-1, K), torch.zeros (an fp32 output), x.float(), self.scales.float() (every call:
    the argument to the extension), the vecquant4matmul_old extension call, out.half().reshape(
    out_shape), out + self.bias.
The functions below reproduce those lines with the extension calls stubbed (each one host call
and one launch on the GPU, none here); a TorchDispatchMode counts every aten op reaching the
dispatcher (views included), as validate/eager_op_counts.py counts transformers' steps. An fp16
activation's x.half() dispatches nothing (the tensor is returned). Counted with torch 2.13 on the
CPU; tests/test_gptq_linear_ops.py pins the counts.

    PYTHONPATH=. python validate/gptq_linear_ops.py
"""

from __future__ import annotations

from typing import Any, Callable

#: The extension calls each forward makes (q4_matmul; vecquant4matmul_old): one host call each,
#: which a dispatch mode does not see.
EXTENSION_CALLS = {"nn.Linear": 0, "gptq-exllama": 1, "gptq-cuda-old": 1}


def _forwards(torch: Any) -> dict[str, Callable[..., Any]]:
    """The modules' forwards at rows < their thresholds (the lines the docstring quotes)."""

    def ext_q4_matmul(x, width):  # qlinear_exllama.py ext_q4_matmul; the extension call stubbed
        outshape = x.shape[:-1] + (width,)
        x = x.view(-1, x.shape[-1])
        output = torch.empty((x.shape[0], width), dtype=torch.float16, device=x.device)
        return output.view(outshape)

    def exllama(x, weight, bias):  # QuantLinear.forward, QUANT_TYPE "exllama"
        out = ext_q4_matmul(x.half(), weight.shape[0])
        out.add_(bias)
        return out

    def cuda_old(x, weight, bias, scales):  # QuantLinear.forward, QUANT_TYPE "cuda-old", use_cuda_fp16 False
        out_shape = x.shape[:-1] + (weight.shape[0],)
        x = x.reshape(-1, x.shape[-1])
        out = torch.zeros(x.shape[0], out_shape[-1], dtype=torch.float, device=x.device)
        x = x.float()
        scales.float()  # the argument to autogptq_cuda.vecquant4matmul_old(x, qweight, out, scales.float(), ...)
        out = out.half().reshape(out_shape)
        return out + bias

    def linear(x, weight, bias):  # what they replace: nn.Linear without a bias (Llama's)
        return torch.nn.functional.linear(x, weight)

    return {"nn.Linear": linear, "gptq-exllama": exllama, "gptq-cuda-old": cuda_old}


def host_calls(k: int = 64, n: int = 96, rows: int = 1) -> dict[str, int]:
    """Each module's host calls for one forward on an fp16 activation of (rows, 1, k): the aten ops
    its lines dispatch plus its extension calls."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: list[str] = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x = torch.randn(rows, 1, k, dtype=torch.float16)
    weight, bias = torch.randn(n, k, dtype=torch.float16), torch.zeros(n, dtype=torch.float16)
    scales = torch.ones(k // 32, n, dtype=torch.float16)  # a group of 32 here; its shape decides nothing
    counts = {}
    for name, forward in _forwards(torch).items():
        ops.clear()
        arguments = (x, weight, bias, scales) if name == "gptq-cuda-old" else (x, weight, bias)
        with torch.no_grad(), Count():
            forward(*arguments)
        counts[name] = len(ops) + EXTENSION_CALLS[name]
    return counts


if __name__ == "__main__":
    for name, calls in host_calls().items():
        print(f"{name}: {calls} host calls a forward")
