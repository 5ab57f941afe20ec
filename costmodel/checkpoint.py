"""The format a released checkpoint stores its weights in, read from its config.json's
`quantization_config`, and the one rule that makes it the default of inference's --weight-dtype.

A Hugging Face config.json says how its weights are stored (transformers' quantizers read
`quantization_config.quant_method`; so does vLLM's get_quantization_config). hf.py reads it into
ModelConfig.checkpoint_weights as (quant_method, a quantization.WEIGHT_DTYPES name or None, group or
None); inference_weights() turns it into the default of --weight-dtype and --weight-group for every
inference path (estimate's inference memory, simulate, serve, plan --serve, the Python API).
Training paths hold the weights in the training dtype and do not read it.

Which quant_method means which format here (a quant_method or a structure not listed: no format,
and inference_weights says so in one line unless --weight-dtype chooses one; nothing is guessed):

  mxfp4            gpt-oss (openai/gpt-oss-20b and -120b config.json: `{"quant_method": "mxfp4",
                   "modules_to_not_convert": [self_attn, router, embed_tokens, lm_head]}`): mxfp4 on
                   the routed experts only, as quantization.py's mxfp4 (vLLM's Mxfp4Config).
  fp8              DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: `{"quant_method": "fp8", "fmt":
                   "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}`; MiniMax-M2's
                   "fmt" is "float8_e4m3fn", the same format: E4M3_NAMES;
                   transformers' FineGrainedFP8Config, vLLM's Fp8Config): fp8 with one fp32
                   `weight_scale_inv` per 128 x 128 block (group 128: quantization.py's "block"
                   layout). Without weight_block_size (vLLM's per-tensor fp8): fp8 per output row
                   (4 bytes a row where the checkpoint keeps 4 a matrix: a difference under 0.03 %
                   of its bytes at d = 4,096). A block that is not square: not modelled.
  gptq, awq        `bits` 4 or 8 and `group_size` g (transformers' GPTQConfig and AwqConfig): int4 or
                   int8 with groups of g (quantization.py's "gptq" layout, an fp16 scale and a packed
                   zero per group). group_size -1 (one group per row) and other bits: not modelled.
  bitsandbytes     `load_in_4bit` with `bnb_4bit_quant_type` nf4: nf4 (blocks of 64); `load_in_8bit`:
                   int8 (LLM.int8, an fp32 absmax per row). The nf4 absmax is counted with double
                   quantisation unless the workload says otherwise (--no-double-quant): a checkpoint
                   saved without it (`bnb_4bit_use_double_quant` false) holds ~3 bytes more per 64
                   values. fp4 (bnb_4bit_quant_type fp4): not modelled.
  fbgemm_fp8       (Llama 3.1 405B FP8; transformers' FbgemmFp8Config): fp8 rowwise, one fp32 scale per
                   output row: quantization.py's fp8 exactly.
  compressed-tensors  one config group (vLLM's CompressedTensorsConfig; the group's `weights`):
                   `{"type": "float", "num_bits": 8}` with strategy channel (fp8 per row), tensor
                   (per row: as fp8 above) or block with a square block_structure (fp8 blocks);
                   `{"type": "int", "num_bits": 4 or 8, "strategy": "group", "group_size": g}`
                   (W4A16 / W8A16, "pack-quantized"): int4 or int8 in groups of g, stored as vLLM's
                   CompressedTensorsWNA16.create_weights allocates it: `weight_packed` int32 (R, C /
                   pack), `weight_scale` in the model's dtype (R, C / g), `weight_shape` int64 (2,),
                   and `weight_zero_point` int32 (R / pack, C / g) only where `symmetric` is false.
                   Symmetric: quantization.py's "compressed-tensors" layout (a 2-byte scale a group, no
                   zero, 16 bytes of weight_shape a matrix), the checkpoint's default --quant-layout
                   (CHECKPOINT_LAYOUT); asymmetric: GPTQ's bytes (an fp16 scale and a packed zero a group).
                   `{"type": "int", "num_bits": 8, "strategy": "channel", "symmetric": true}` (W8A8,
                   "int-quantized"): int8 with one fp32 scale per output row (LLM.int8's bytes; its
                   int8 x int8 GEMM is timed as weight-only int8). Not modelled (no format): actorder
                   "group" (a g_idx of C int32 a matrix), int4 per channel, other bits, several config
                   groups, a `sparsity_config` (2:4 sparse-24 formats) and formats "marlin-24" and
                   "sparse-*". The `ignore` list (lm_head on RedHatAI's checkpoints; Kimi-K2-Thinking's
                   also its attention, shared experts and dense layer) is read as every method's ignore
                   list is, below.

Every method's ignore list (compressed-tensors' `ignore`, the others' `modules_to_not_convert`) is read by
checkpoint_ignore.py into the weight kinds the checkpoint keeps in --dtype: checkpoint_weights' 5th entry
(with_ignore_list; the 4th, the layout, is then None where it is GPTQ's), carried to the workload's
weight_kept where the weights are the checkpoint's (checkpoint_kept) and read by WeightFormat.quantizes.
The head stays in --dtype whatever the list says, as before (a list that leaves lm_head quantized is not
read so).
"""

from __future__ import annotations

import warnings
from typing import Any

from .errors import ConfigError, show
from .checkpoint_ignore import kept_kinds
from .quantization import WEIGHT_KINDS, weight_format
from .spec import DEFAULT_QUANT_LAYOUT, QUANT_LAYOUTS, UNQUANTIZED, WEIGHT_DTYPES

#: The spellings of fp8 e4m3 an fp8 quantization_config's `fmt` uses: DeepSeek-V3's "e4m3", and MiniMax-M2's
#: "float8_e4m3fn" (MiniMaxAI/MiniMax-M2 config.json; torch.float8_e4m3fn, the one fp8 dtype vLLM's Fp8Config
#: and transformers' FineGrainedFP8Config store, neither reading `fmt`).
E4M3_NAMES = ("e4m3", "float8_e4m3fn")

#: The --quant-layout a checkpoint's stored format implies where it is not GPTQ's (the 4th entry of
#: ModelConfig.checkpoint_weights): compressed-tensors' symmetric pack-quantized int4 / int8.
CHECKPOINT_LAYOUT = "compressed-tensors"


def checkpoint_weights(quantization: Any, source: str) -> tuple:
    """(quant_method, format, group) of a config.json's quantization_config (the module's
    docstring), with a 4th entry, the --quant-layout it is stored in, where that is not GPTQ's
    (compressed-tensors' symmetric int); format None where the method or its structure is not modelled."""
    if not isinstance(quantization, dict) or not isinstance(quantization.get("quant_method"), str):
        raise ConfigError(f"{source}: quantization_config must be an object with a quant_method, "
                          f"got {show(quantization)}.")
    method = quantization["quant_method"]
    reader = _READERS.get(method)
    found = reader(quantization) if reader else None
    return (method, *found) if found else (method, None, None)


def check_stored(owner: str, stored: Any) -> tuple | None:
    """ModelConfig.checkpoint_weights validated and frozen (a JSON list becomes a tuple): None, or
    (quant_method, a WEIGHT_DTYPES name or None, a positive group or None[, a QUANT_LAYOUTS name or None[,
    the WEIGHT_KINDS its ignore list keeps unquantized]])."""
    if stored is None:
        return None
    if (isinstance(stored, (list, tuple)) and len(stored) in (3, 4, 5) and isinstance(stored[0], str)
            and (stored[1] is None or stored[1] in WEIGHT_DTYPES) and (stored[2] is None or _positive(stored[2]))
            and (len(stored) == 3 or stored[3] in QUANT_LAYOUTS or (len(stored) == 5 and stored[3] is None))
            and (len(stored) < 5 or (isinstance(stored[4], (list, tuple)) and set(stored[4]) <= set(WEIGHT_KINDS)))):
        return (*stored[:4], tuple(stored[4])) if len(stored) == 5 else tuple(stored)
    raise ConfigError(f"{owner}: checkpoint_weights must be null or [quant_method, one of "
                      f"{', '.join(WEIGHT_DTYPES)} or null, a group or null, optionally a quant layout (or null) "
                      f"and the weight kinds kept unquantized], got {show(stored)}.")


def with_ignore_list(cfg: Any, quantization: dict, source: str) -> tuple:
    """cfg's checkpoint_weights from its quantization_config with the weight kinds its ignore list keeps
    unquantized (checkpoint_ignore.kept_kinds; a 5th entry where any), of those the format would quantize
    (mxfp4's scope is the routed experts already). A list that splits a kind: the format is not modelled."""
    stored = checkpoint_weights(quantization, source)
    kept = kept_kinds(cfg, quantization, source)
    if stored[1] is None or kept == ():
        return stored
    if kept is None:
        return (stored[0], None, None)
    fmt = weight_format(stored[1], stored[2])
    kept = tuple(kind for kind in kept if fmt.quantizes(kind))
    return (*stored[:3], stored[3] if len(stored) == 4 else None, kept) if kept else stored


def _fp8(block: Any) -> tuple[str, int | None] | None:
    if block is None:
        return "fp8", None
    if isinstance(block, (list, tuple)) and len(block) == 2 and block[0] == block[1] and _positive(block[0]):
        return "fp8", int(block[0])
    return None


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _gptq(q: dict) -> tuple[str, int | None] | None:
    bits, group = q.get("bits"), q.get("group_size", 128)
    if bits in (4, 8) and _positive(group):
        return f"int{bits}", group
    return None


def _bitsandbytes(q: dict) -> tuple[str, int | None] | None:
    if q.get("load_in_4bit") and q.get("bnb_4bit_quant_type", "fp4") == "nf4":
        return "nf4", None
    if q.get("load_in_8bit") and not q.get("load_in_4bit"):
        return "int8", None
    return None


def _compressed_tensors(q: dict) -> tuple | None:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1 or q.get("sparsity_config"):
        return None
    if str(q.get("format", "")).startswith(("marlin-24", "sparse")):
        return None
    group = next(iter(groups.values()))
    weights = group.get("weights") if isinstance(group, dict) else None
    if isinstance(weights, dict) and weights.get("type") == "int":
        return _compressed_int(weights)
    if not isinstance(weights, dict) or weights.get("type") != "float" or weights.get("num_bits") != 8:
        return None
    strategy = weights.get("strategy")
    if strategy in ("channel", "tensor"):
        return "fp8", None
    return _fp8(weights.get("block_structure")) if strategy == "block" else None


def _compressed_int(weights: dict) -> tuple | None:
    """compressed-tensors' integer weights (the module's docstring): (format, group[, layout])."""
    bits, strategy, symmetric = weights.get("num_bits"), weights.get("strategy"), weights.get("symmetric", True)
    if strategy == "group" and bits in (4, 8) and _positive(weights.get("group_size")) \
            and weights.get("actorder") != "group" and isinstance(symmetric, bool):
        found = (f"int{bits}", weights["group_size"])
        return (*found, CHECKPOINT_LAYOUT) if symmetric else found
    if strategy == "channel" and bits == 8 and symmetric is True:
        return "int8", None
    return None


_READERS = {
    "mxfp4": lambda q: ("mxfp4", None),
    "fp8": lambda q: _fp8(q.get("weight_block_size")) if q.get("fmt", "e4m3") in E4M3_NAMES else None,
    "gptq": _gptq,
    "awq": _gptq,
    "bitsandbytes": _bitsandbytes,
    "fbgemm_fp8": lambda q: ("fp8", None),
    "compressed-tensors": _compressed_tensors,
}


def inference_weights(cfg: Any, weight_dtype: str | None = None,
                      weight_group: int | None = None) -> tuple[str | None, int | None, str | None]:
    """(weight_dtype, weight_group, source) an inference path runs: the one rule for the default of
    --weight-dtype. weight_dtype given: that format (spec.UNQUANTIZED, "none": the --dtype's
    unquantized weights), source "option". Not given: the format the checkpoint stores (cfg.checkpoint_weights;
    --weight-group, if given, replaces its group), source "checkpoint"; a checkpoint format not
    modelled is an error that names its quant_method; no quantization_config: unquantized, source
    None."""
    if weight_dtype == UNQUANTIZED:
        if weight_group is not None:
            raise ConfigError("--weight-group applies only with a quantized --weight-dtype, not none.")
        return None, None, "option"
    if weight_dtype is not None:
        return weight_dtype, weight_group, "option"
    stored = getattr(cfg, "checkpoint_weights", None)
    if stored is None:
        return None, weight_group, None
    method, dtype, group = stored[:3]
    if dtype is None:
        raise ConfigError(f"model {cfg.name!r}: its checkpoint's quantization_config (quant_method {method!r}) "
                          "is not a format modelled here; --weight-dtype chooses a format (none: "
                          "unquantized weights in --dtype).")
    return dtype, group if weight_group is None else weight_group, "checkpoint"


def inference_layout(cfg: Any, source: str | None, quant_layout: str | None) -> str | None:
    """The --quant-layout an inference path runs: the checkpoint's (checkpoint_weights' 4th entry) where
    the weights are the checkpoint's (source "checkpoint") and no other layout than the default was
    chosen; else quant_layout as given."""
    stored = getattr(cfg, "checkpoint_weights", None)
    if source == "checkpoint" and stored is not None and len(stored) >= 4 and stored[3] is not None \
            and quant_layout in (None, DEFAULT_QUANT_LAYOUT):
        return stored[3]
    return quant_layout


def inference_options(cfg: Any, options: dict[str, Any], beside_training: bool = False) -> dict[str, Any]:
    """Workload keywords of an inference path with weight_dtype and weight_group resolved by
    inference_weights (weight_dtype "none" becomes None) and weight_dtype_source set.
    beside_training (estimate, whose training figures do not read the format): a checkpoint
    format not modelled leaves the inference figures unquantized, with a warning, instead of
    refusing the whole estimate."""
    try:
        dtype, group, source = inference_weights(cfg, options.get("weight_dtype"), options.get("weight_group"))
    except ConfigError as error:
        if not beside_training or options.get("weight_dtype") is not None:
            raise
        warnings.warn(f"{error} The inference figures below are unquantized.", stacklevel=3)
        dtype, group, source = None, None, None
    layout = inference_layout(cfg, source, options.get("quant_layout"))
    kept = checkpoint_kept(cfg, source)
    return {**options, "weight_dtype": dtype, "weight_group": group, "weight_dtype_source": source,
            **({"quant_layout": layout} if layout is not None else {}), **({"weight_kept": kept} if kept else {})}


def checkpoint_kept(cfg: Any, source: str | None) -> tuple[str, ...]:
    """The weight kinds the checkpoint's ignore list keeps unquantized (checkpoint_weights' 5th entry) where
    the weights are the checkpoint's (source "checkpoint"); () otherwise: an asked-for --weight-dtype
    quantizes as its format says."""
    stored = getattr(cfg, "checkpoint_weights", None)
    return stored[4] if source == "checkpoint" and stored is not None and len(stored) == 5 else ()


def weights_note(weight_dtype: str | None, source: str | None) -> str | None:
    """The text line that says where inference's weight format came from; None where nothing
    was chosen (unquantized weights of a config without quantization_config)."""
    if source == "checkpoint":
        return f"weights: {weight_dtype} (the checkpoint's quantization_config; --weight-dtype none for unquantized)"
    if source == "option" and weight_dtype is None:
        return "weights: unquantized, in --dtype (--weight-dtype none)"
    return None
