"""Which of a model's weights a quantized checkpoint leaves in its unquantized dtype: the
quantization_config's ignore list matched against the model's module names, read into weight kinds
(quantization.WEIGHT_KINDS) that the one byte count reads (quantization.WeightFormat.kept; the tree's
leaves take their format from it). No bytes are computed here.

The lists and how each integration matches a module name against them:
  compressed-tensors  `ignore` (vLLM's CompressedTensorsConfig; compressed_tensors/utils/match.py
                      `_match_name`, as vLLM copies it in vllm/model_executor/layers/quantization/
                      compressed_tensors/utils.py): an entry "re:PATTERN" matches where
                      re.match(PATTERN, name) does (anchored at the start, not the end); any other entry
                      matches the name exactly. Kimi-K2-Thinking's (moonshotai config.json, quoted in
                      full by a public EXAONE quantization guide found with find_string): ["lm_head",
                      "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
                      int4 in groups of 32, symmetric, pack-quantized.
  modules_to_not_convert  (transformers 5.24's GPTQ, AWQ, bitsandbytes, FineGrainedFP8, FBGEMM FP8 and
                      Mxfp4 configs): transformers/quantizers/quantizers_utils.py should_convert_module
                      skips a module where an entry matches, as a regex, from the start of its name up
                      to a module boundary (re.match(rf"(?:{key})(?:(?<=\\.)|(?=\\.|$))", name)), or
                      is a suffix of its name (name.endswith(key)).
Not read: ModelOpt's hf_quant_config.json `exclude_modules` (checkpoint.py reads no modelopt format), and
compressed-tensors entries that name a module class ("Linear"): such an entry matches no module name here.

The module names are a checkpoint's (its safetensors keys less ".weight", as the quantizer that wrote the
list saw them: Mixtral's and MiniMax-M2's block_sparse_moe.experts.E.w1, which transformers 5.24 renames
on loading), one decoder layer at a time,
for the families whose Hugging Face classes name their modules Llama's way (FAMILY_NAMES); each routed
expert by its index. A kind is kept where every one of its names matches an entry; where some match
and some do not (the first layer's attention only, one projection of several), the kind is split
between two formats, which is not modelled: the checkpoint's format is then none (checkpoint.py's one
line). A family outside the table whose list names anything but the head and the embeddings: likewise.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from .errors import ConfigError, show

#: The field holding the ignore list, by quant_method (the module's docstring); any other method: none.
IGNORE_FIELDS = {"compressed-tensors": "ignore", "gptq": "modules_to_not_convert", "awq": "modules_to_not_convert",
                 "bitsandbytes": "modules_to_not_convert", "fp8": "modules_to_not_convert",
                 "fbgemm_fp8": "modules_to_not_convert", "mxfp4": "modules_to_not_convert"}

_PROJECTIONS = ("gate_proj", "up_proj", "down_proj")

#: model_type -> (a MoE layer's module, its routed experts' matrices, its shared expert's module or None).
#: Llama's naming of attention (self_attn.q_proj ...) and of a dense MLP (mlp.gate_proj ...) is every one's.
FAMILY_NAMES = {
    **{family: ("mlp", _PROJECTIONS, None) for family in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "olmoe",
                                                          "gemma", "gemma2", "gemma3_text", "granite", "olmo2",
                                                          "olmo3", "seed_oss", "exaone4")},
    **{family: ("mlp", _PROJECTIONS, "shared_experts") for family in ("deepseek_v2", "deepseek_v3", "glm4_moe")},
    "qwen2_moe": ("mlp", _PROJECTIONS, "shared_expert"),
    "mixtral": ("block_sparse_moe", ("w1", "w3", "w2"), None),
    "minimax_m2": ("block_sparse_moe", ("w1", "w3", "w2"), None),
    "gpt_oss": ("mlp", None, None),  # its experts are one module, mlp.experts (fused gate_up_proj and down_proj)
}

#: Names that are never a quantized matrix here (the head and the embeddings stay in --dtype).
_UNQUANTIZED = ("lm_head", "model.embed_tokens")


def ignore_list(quantization: dict, source: str) -> list[str] | None:
    """The quantization_config's ignore list (None: it has none), its entries checked: each a string,
    and a regex where the integration reads it as one."""
    method = quantization["quant_method"]
    field = IGNORE_FIELDS.get(method)
    entries = quantization.get(field) if field else None
    if entries is None:
        return None
    if not isinstance(entries, list) or not all(isinstance(entry, str) and entry for entry in entries):
        raise ConfigError(f"{source}: quantization_config.{field} must be a list of module names or patterns, "
                          f"got {show(entries)}.")
    for entry in entries:
        pattern = entry[3:] if method == "compressed-tensors" and entry.startswith("re:") else \
            entry if method != "compressed-tensors" else None
        try:
            if pattern is not None:
                re.compile(pattern)
        except re.error as error:
            raise ConfigError(f"{source}: quantization_config.{field} entry {show(entry)} is not a valid regular "
                              f"expression ({error}).") from None
    return entries


def matches(method: str, name: str, entries: list[str]) -> bool:
    """Whether the integration of `method` leaves module `name` unquantized under `entries` (the
    module's docstring: compressed-tensors' exact-or-"re:" rule, else transformers' should_convert_module)."""
    return matcher(method, entries)(name)


def matcher(method: str, entries: list[str]) -> Callable[[str], bool]:
    """matches() for one list, its patterns compiled once (a model's names are many: Kimi K2's 69,120
    routed-expert matrices)."""
    if method == "compressed-tensors":
        exact = {entry for entry in entries if not entry.startswith("re:")}
        pattern = _any_of([entry[3:] for entry in entries if entry.startswith("re:")])
        return lambda name: name in exact or pattern(name)
    boundary = r"(?:(?<=\.)|(?=\.|$))"
    pattern, suffixes = _any_of([f"(?:{entry}){boundary}" for entry in entries]), tuple(entries)
    return lambda name: pattern(name) or name.endswith(suffixes)


def _any_of(patterns: list[str]) -> Callable[[str], bool]:
    """Whether re.match of any of `patterns` matches a name: one alternation where they combine (not
    where two define the same group name), else each in turn."""
    try:
        combined = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
    except re.error:
        return lambda name: any(re.match(p, name) for p in patterns)
    return lambda name: combined is not None and combined.match(name) is not None


def module_names(cfg: Any) -> dict[str, list[str]] | None:
    """A checkpoint's module names of cfg's quantizable matrices by weight kind (None: a family outside
    FAMILY_NAMES)."""
    naming = FAMILY_NAMES.get(cfg.family)
    if naming is None:
        return None
    moe_module, expert_matrices, shared = naming
    if cfg.mla:
        queries = ("q_a_proj", "q_b_proj") if cfg.q_lora_rank is not None else ("q_proj",)
        attention = (*queries, "kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
    else:
        attention = ("q_proj", "k_proj", "v_proj", "o_proj")
    names: dict[str, list[str]] = {"attention": [], "dense_mlp": [], "shared_experts": [], "routed_experts": []}
    for index in range(cfg.n_decoder_layers):
        layer = f"model.layers.{index}."
        names["attention"] += [f"{layer}self_attn.{matrix}" for matrix in attention]
        moe = bool(cfg.n_experts) and (cfg.layer_pattern is None or cfg.layer_pattern[index] == "moe")
        if not moe:
            names["dense_mlp"] += [f"{layer}mlp.{matrix}" for matrix in _PROJECTIONS]
            continue
        experts = f"{layer}{moe_module}.experts"
        names["routed_experts"] += ([experts] if expert_matrices is None else
                                    [f"{experts}.{e}.{matrix}" for e in range(cfg.n_experts) for matrix in expert_matrices])
        if shared and cfg.d_shared:
            names["shared_experts"] += [f"{layer}{moe_module}.{shared}.{matrix}" for matrix in _PROJECTIONS]
    return {kind: found for kind, found in names.items() if found}


def kept_kinds(cfg: Any, quantization: dict, source: str) -> tuple[str, ...] | None:
    """The weight kinds (quantization.WEIGHT_KINDS, in that order) cfg's checkpoint keeps unquantized by
    its ignore list; () where it has none or it names none of them; None where the list splits a kind or
    the family's names are not known (the module's docstring: the format is then not modelled)."""
    from .quantization import WEIGHT_KINDS

    entries = ignore_list(quantization, source)
    if not entries:
        return ()
    method = quantization["quant_method"]
    names = module_names(cfg)
    if names is None:
        return () if all(any(matcher(method, [entry])(name) for name in _UNQUANTIZED) for entry in entries) else None
    kept, ignored = [], matcher(method, entries)
    for kind in WEIGHT_KINDS:
        found = [ignored(name) for name in names.get(kind, ())]
        if found and all(found):
            kept.append(kind)
        elif any(found):
            return None
    return tuple(kept)
