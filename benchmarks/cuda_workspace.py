"""What torch keeps on a CUDA GPU beside the tensors a step allocates: the cuBLAS workspaces.

    python benchmarks/cuda_workspace.py        # CUDA only; without a GPU one line, exit status 2

torch allocates a cuBLAS (and cuBLASLt) workspace through its caching allocator the first time a
(handle, stream) pair runs a matmul, and keeps it; a handle belongs to a thread, and autograd runs
backward on its own device thread. torch.cuda.memory_allocated, which benchmarks/gpu_check.py's
peaks read, counts them. This measures, in a fresh process, memory_allocated's growth (net of the
tensors still alive) after the first fp32 matmul, the first bf16 linear with a bias (the cuBLASLt
path), and the first backward, with the environment variables that size them. Prints a JSON object.
"""

from __future__ import annotations

import json
import os
import sys

NO_GPU_EXIT = 2


def main() -> int:
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("cuda_workspace: no CUDA GPU available", file=sys.stderr)
        return NO_GPU_EXIT

    def allocated() -> int:
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
           "env": {k: os.environ.get(k) for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE")}}
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    before = allocated()
    c = a @ b
    out["first_fp32_mm"] = allocated() - before - c.numel() * c.element_size()
    del c
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    before = allocated()
    y = F.linear(x, w, bias)
    out["first_bf16_linear_bias"] = allocated() - before - y.numel() * y.element_size()
    del y
    xg = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    wg = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    before = allocated()
    F.linear(xg, wg).sum().backward()
    grads = sum(t.grad.numel() * t.grad.element_size() for t in (xg, wg))
    out["first_backward"] = allocated() - before - grads
    xb = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    wb = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    bb = torch.randn(1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    before = allocated()
    F.linear(xb, wb, bb).sum().backward()
    grads = sum(t.grad.numel() * t.grad.element_size() for t in (xb, wb, bb))
    out["first_bf16_backward_bias"] = allocated() - before - grads
    out["total_beside_tensors"] = sum(out[k] for k in ("first_fp32_mm", "first_bf16_linear_bias", "first_backward",
                                                        "first_bf16_backward_bias"))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
