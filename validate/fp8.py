"""torchao's float8 training measured on the CPU: what a converted linear keeps (torchao 0.18,
`convert_to_float8_training` with Float8LinearConfig.from_recipe_name("tensorwise" | "rowwise")).

measure_float8_linears(recipe, d, f, n) converts two bf16 linears (d -> f -> d) and returns the bytes of
their parameters, of their buffers, and of the storages autograd saves for backward that are not
parameters (saved_tensors_hooks, as validate/measure/saved.py counts activations). torchao is an
optional package: it is not in the project's extras because, once installed, transformers imports
it with every model (FINDINGS 12); the caller skips where it is missing.
"""

from __future__ import annotations

import torch
from torch import nn


def measure_float8_linears(recipe: str, d: int, f: int, n: int) -> dict[str, int]:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)).to(torch.bfloat16)
    convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name(recipe))
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    x = torch.randn(n, d, dtype=torch.bfloat16, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        y = model(x)
    y.float().sum().backward()
    return {"converted": type(model[0]).__name__,
            "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
            "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
            "saved_bytes": sum(saved.values())}
