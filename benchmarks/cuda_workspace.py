"""What torch keeps on a CUDA GPU beside the tensors a step allocates: the cuBLAS workspaces.

    python benchmarks/cuda_workspace.py        # CUDA only; without a GPU one line, exit status 2

torch allocates a cuBLAS (and cuBLASLt) workspace through its caching allocator the first time a
(handle, stream) pair runs a matmul, and keeps it; a handle belongs to a thread, and autograd runs
backward on its own device thread. torch.cuda.memory_allocated, which benchmarks/gpu_check.py's
peaks read, counts them. This measures, in a fresh process, memory_allocated's growth (net of the
tensors still alive) after the first fp32 matmul, the first bf16 linear with a bias (the cuBLASLt
path), and the first backward, with the environment variables that size them
(validate/device_rates.py cublas_workspaces, which hardware --measure adds to memory_reserve_bytes).
Prints a JSON object; benchmarks/results_cuda_workspace.json is an H200's (torch 2.11.0+cu130).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NO_GPU_EXIT = 2


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("cuda_workspace: no CUDA GPU available", file=sys.stderr)
        return NO_GPU_EXIT
    from validate.device_rates import cublas_workspaces

    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
           "env": {k: os.environ.get(k) for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE")},
           **cublas_workspaces()}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
