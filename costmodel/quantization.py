"""Quantized weight formats as data: what one quantized weight matrix stores.

A format says how many bits a stored value takes and how its scales, zeros and lookup tables are
laid out; blocks.quantized_bytes() turns a block's weight matrices into bytes of data, scales,
zeros and tables with it. The layouts (validate/FINDINGS.md section 12; R output rows, C input
columns, N = R C values per matrix):

  int8  bitsandbytes' LLM.int8: one byte per value and one fp32 absmax per output row (measured:
        validate/quantized.py). With a group size g: GPTQ's 8-bit layout, an fp16 scale and an
        8-bit zero point per group of g input columns of a row (stated, not measured).
  int4  GPTQ / AWQ: values packed two per byte, per group of g (128) input columns of a row an
        fp16 scale and a 4-bit zero point, packed (stated: their kernels need a GPU; quanto's int4,
        measured here, keeps a bf16 scale and shift per group, 4 bytes, section 12).
  fp8   float8 e4m3, one byte per value and one fp32 scale per output row (torchao's float8
        weight-only, measured).
  nf4   bitsandbytes NF4: values packed two per byte, one absmax per block of g (64) values, the
        16-entry fp32 code per matrix; with double quantisation (the default, as QLoRA runs it)
        the absmax is one uint8 per block plus one fp32 per 256 blocks and an fp32 offset, and
        the 256-entry fp32 second code adds 1,024 bytes per matrix (measured).

What stays in the activation dtype (the integrations' defaults): the embeddings, the output head,
norms, biases, routers and Qwen2-MoE's shared-expert gate; every other matrix a layer multiplies
by is quantized, each routed expert as its own matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError
from .spec import KV_DTYPES  # noqa: F401 (--kv-dtype: one byte per cached element, plus two fp32 scales per layer)

#: --weight-dtype -> (bits per value, the default group: None is one scale per output row).
WEIGHT_DTYPES = {"int8": (8, None), "int4": (4, 128), "fp8": (8, None), "nf4": (4, 64)}


@dataclass(frozen=True)
class WeightFormat:
    """One quantized weight format (see the module's docstring)."""

    dtype: str
    bits: int
    group: int | None  # input columns per scale (gptq), values per block (nf4), None: per row
    layout: str  # "row": a scale per output row; "gptq": scale and zero per group; "nf4"
    double_quant: bool = False

    @property
    def label(self) -> str:
        grouped = f", groups of {self.group}" if self.group else ", per output row"
        double = ", double quantisation" if self.double_quant else ""
        return f"{self.dtype}{grouped}{double}"


def weight_format(dtype: str | None, group: int | None = None,
                  double_quant: bool = True) -> WeightFormat | None:
    """The format of --weight-dtype (None: unquantized), with its group size and, for nf4,
    whether the absmax is quantized again."""
    if dtype is None:
        if group is not None:
            raise ConfigError("workload: weight_group applies only with a weight_dtype.")
        return None
    if dtype not in WEIGHT_DTYPES:
        raise ConfigError(f"workload: unknown weight_dtype {dtype!r}; use one of "
                          f"{', '.join(WEIGHT_DTYPES)}.")
    bits, default = WEIGHT_DTYPES[dtype]
    if dtype == "fp8" and group is not None:
        raise ConfigError("workload: fp8 weights keep one scale per output row; no weight_group.")
    group = default if group is None else group
    if dtype == "nf4":
        return WeightFormat(dtype, bits, group, "nf4", double_quant)
    return WeightFormat(dtype, bits, group, "gptq" if group else "row")
