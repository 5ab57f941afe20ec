"""How TorchInductor compiles vLLM's RTN linear before PR #26051 (quant_layout vllm-rtn-torch).

vllm/model_executor/layers/quantization/rtn.py at 03346f0b (the copy before the PR): RTNLinearMethod.apply
dequantizes the stored weight (uint8: one value a byte for int8, two for int4 packed along the output
rows; a bf16 scale a group of input columns) into a new bf16 tensor with torch ops (for int8 a copy and
a subtraction of 128; for int4 two shifted slices each written into every other output row, minus 8;
then a multiplication by the group's scale), and calls F.linear on it. vLLM's V1 engine runs the model
under torch.compile. This script rewrites that op sequence (our own code, the same ops in the same order),
compiles it with the pinned torch's Inductor on the CPU and reports the kernels of the generated code:
`python validate/rtn_inductor.py` prints, per width, the fused kernels before the mm and the mm calls.
On torch 2.13.0 both widths give one fused kernel (read the stored bytes and scales, write the bf16
copy) and one extern mm: the one pass quantized_matmul.dequant_bytes counts. The CUDA backend (Triton) is
not run here; its scheduler fuses pointwise chains the same way, a stated assumption.
"""

from __future__ import annotations

import re
from typing import Any


def dequantized_linear(x: Any, stored: Any, scale: Any) -> Any:
    """The pre-#26051 op sequence: stored (out or out / 2, in) uint8, scale (out, in / group) bf16."""
    import torch
    import torch.nn.functional as F

    rows, cols = stored.shape
    int8 = rows == scale.shape[0]  # int4 keeps half the rows: two values a byte
    out = rows if int8 else 2 * rows
    weight = torch.empty((1, out, cols), dtype=scale.dtype)
    if int8:
        weight.copy_(stored.unsqueeze(0))
        weight -= 128
    else:
        packed = stored.reshape(1, out, cols // 2)  # the stored bytes seen as out rows of half the columns
        for half in range(2):
            weight[:, :, half::2] = ((packed << 4 * (1 - half)) >> 4).to(torch.int8) - 8
    groups = scale.shape[0] * scale.shape[1]
    weight = torch.mul(weight.reshape(1, groups, -1), scale.reshape(1, groups, -1))
    return F.linear(x, weight.reshape(out, cols).contiguous())


def generated_kernels(bits: int, out: int = 256, cols: int = 512, group: int = 128) -> tuple[list[str], int]:
    """(the fused kernels' names, the extern mm calls) of Inductor's code for one width."""
    import torch
    from torch._inductor.utils import run_and_get_code

    rows = out if bits == 8 else out // 2
    stored = torch.randint(0, 255, (rows, cols), dtype=torch.uint8)
    scale = torch.rand(out, cols // group, dtype=torch.bfloat16)
    x = torch.rand(1, cols, dtype=torch.bfloat16)
    torch._dynamo.reset()
    _, code = run_and_get_code(torch.compile(dequantized_linear), x, stored, scale)
    source = "\n".join(code)
    fused = sorted(set(re.findall(r"^(cpp_fused\w*) = async_compile", source, re.M)))
    return fused, len(re.findall(r"extern_kernels\.mm\(", source))


if __name__ == "__main__":
    for bits in (8, 4):
        fused, mms = generated_kernels(bits)
        print(f"int{bits}: {len(fused)} fused kernel(s) before {mms} mm: {', '.join(fused)}")
