"""Storage of quantized weights, measured on the tensors a quantization library really holds.

Hugging Face's integrations (bitsandbytes, torchao, optimum-quanto) replace each nn.Linear's weight
with their own tensor: packed integers or floats plus per-row, per-block or per-group scales (and
zeros, and lookup tables). storage_by_part() walks a loaded model and sums the bytes of every
storage it holds once, split into data / scales / zeros / tables / unquantized (embeddings, head,
norms and buffers the scheme leaves alone). None of these libraries is a dependency of this
project: install them with pip to run this (validate/FINDINGS.md section 12 says which work on the
CPU).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

#: Which part of a quantized tensor each attribute is, by the name the library gives it.
_PART_OF = {
    "qdata": "data", "_data": "data",
    "scale": "scales", "_scale": "scales", "SCB": "scales", "absmax": "scales",
    "state2.absmax": "scales", "_scale_shift": "scales",
    "zero_point": "zeros", "_shift": "zeros",
    "code": "tables", "state2.code": "tables", "offset": "tables",
}


def quantization_config(scheme: str) -> Any:
    """The transformers quantization config of a scheme name (see SCHEMES)."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; known: {', '.join(SCHEMES)}.")
    return SCHEMES[scheme]()


def _bnb(**kwargs: Any) -> Callable[[], Any]:
    def make() -> Any:
        from transformers import BitsAndBytesConfig
        return BitsAndBytesConfig(**kwargs)
    return make


def _quanto(weights: str) -> Callable[[], Any]:
    def make() -> Any:
        from transformers import QuantoConfig
        return QuantoConfig(weights=weights)
    return make


def _torchao(kind: str) -> Callable[[], Any]:
    def make() -> Any:
        from torchao.quantization import Float8WeightOnlyConfig, Int8WeightOnlyConfig
        from transformers import TorchAoConfig
        return TorchAoConfig(quant_type={"int8": Int8WeightOnlyConfig,
                                         "fp8": Float8WeightOnlyConfig}[kind]())
    return make


SCHEMES: dict[str, Callable[[], Any]] = {
    "bnb-int8": _bnb(load_in_8bit=True),
    "bnb-nf4": _bnb(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=False),
    "bnb-nf4-double": _bnb(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                           bnb_4bit_use_double_quant=True),
    "quanto-int8": _quanto("int8"),
    "quanto-int4": _quanto("int4"),
    "quanto-fp8": _quanto("float8"),
    "torchao-int8": _torchao("int8"),
    "torchao-fp8": _torchao("fp8"),
}


def load_quantized(path: str, scheme: str, dtype: torch.dtype = torch.bfloat16) -> nn.Module:
    """from_pretrained of a local checkpoint with the scheme's quantization config."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        path, quantization_config=quantization_config(scheme), dtype=dtype)


def _parts(name: str, t: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
    """(attribute path, plain tensor) of everything a possibly quantized tensor holds."""
    quant_state = getattr(t, "quant_state", None)
    if quant_state is not None:  # bitsandbytes Params4bit: packed uint8 + QuantState
        yield name, t
        yield "absmax", quant_state.absmax
        yield "code", quant_state.code
        if quant_state.nested:
            yield "offset", quant_state.offset
            yield "state2.absmax", quant_state.state2.absmax
            yield "state2.code", quant_state.state2.code
        return
    if getattr(t, "SCB", None) is not None:  # bitsandbytes Int8Params: int8 + row scales
        yield name, t
        yield "SCB", t.SCB
        return
    if type(t) not in (torch.Tensor, nn.Parameter) and hasattr(t, "__tensor_flatten__"):
        for attr in t.__tensor_flatten__()[0]:  # torchao / quanto tensor subclasses
            yield from _parts(attr, getattr(t, attr))
        return
    yield name, t


def storage_by_part(model: nn.Module) -> dict[str, int]:
    """Bytes of every storage the model's parameters and buffers hold, each once, by part:
    data, scales, zeros, tables (quantized tensors) and unquantized (everything left as it was)."""
    seen: set[int] = set()
    totals: dict[str, int] = defaultdict(int)
    for module in model.modules():
        tensors = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
        for name, tensor in tensors:
            quantized = _is_quantized(tensor)
            for attr, part in _parts(name, tensor):
                key = part.untyped_storage()._cdata
                if key in seen:
                    continue
                seen.add(key)
                kind = _PART_OF.get(attr, "data") if quantized else "unquantized"
                totals[kind] += part.untyped_storage().nbytes()
    return dict(totals)


def _is_quantized(t: torch.Tensor) -> bool:
    return (getattr(t, "quant_state", None) is not None or getattr(t, "SCB", None) is not None
            or (type(t) not in (torch.Tensor, nn.Parameter) and hasattr(t, "__tensor_flatten__")))
