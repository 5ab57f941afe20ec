"""The context a served model accepts, read from its config.json's RoPE scaling as vLLM reads it.

A Hugging Face config's `max_position_embeddings` is not always the context the model is served
at: Qwen2.5's and Qwen3's model cards enable 128K tokens by adding `"rope_scaling": {"factor": 4.0,
"original_max_position_embeddings": 32768, "type": "yarn"}` to a config.json whose
max_position_embeddings stays 32,768 (40,960). vLLM's `_get_and_verify_max_len` (vllm/config.py;
the same rule in every release read, v0.6 to the v5 rope_parameters form) derives the default
max_model_len so:
- the config's length (max_position_embeddings here);
- unless the model_type contains "gemma3" (its 128K "is already scaled by RoPE scaling"), for each
  rope_parameters / rope_scaling entry whose rope_type is not su, longrope or llama3: the factor
  (1 where none is given) multiplies it, and a yarn entry first replaces the length by its
  original_max_position_embeddings.
(The newest vLLM also starts a longrope model, Phi-3 128K, at its original_max_position_embeddings
unless --max-model-len asks for more, up to this derived length, which is the context here.)
So YaRN x4 over 32,768 gives 131,072, DeepSeek-V3's YaRN x40 over 4,096 gives its 163,840 and
gpt-oss' x32 over 4,096 its 131,072 (no change where the config already says so); Llama 3.1's
llama3 and Phi-3's longrope leave max_position_embeddings as it is.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import MAX_SIZE, ConfigError, show

#: rope types whose factor vLLM does not apply to the length (vllm/config.py _get_and_verify_max_len)
UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")


def _entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The config's RoPE parameter dicts: rope_parameters (transformers 5; one dict, or one per
    layer type) or else the legacy rope_scaling; none where neither is an object."""
    rope = data.get("rope_parameters") or data.get("rope_scaling")
    if not isinstance(rope, dict):
        return []
    nested = [value for value in rope.values() if isinstance(value, dict)]
    return nested if nested and len(nested) == len(rope) else [rope]


def served_context(data: dict[str, Any], model_type: str, length: int, source: str) -> int:
    """The context vLLM serves a model at by default: `length` (the config's
    max_position_embeddings) scaled by its RoPE scaling as the module's docstring says."""
    if "gemma3" in model_type:
        return length
    factor: Any = 1.0
    for entry in _entries(data):
        kind = entry.get("rope_type", entry.get("type", "default"))
        if kind in UNSCALED_ROPE_TYPES:
            continue
        factor = entry.get("factor", factor)
        if kind == "yarn" and entry.get("original_max_position_embeddings") is not None:
            length = entry["original_max_position_embeddings"]
    for key, value in (("factor", factor), ("original_max_position_embeddings", length)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise ConfigError(f"{source}: the RoPE scaling's {key} must be a positive number, got {show(value)}.")
    if length > MAX_SIZE:  # YaRN's original_max_position_embeddings (1e308 was int()'s OverflowError)
        raise ConfigError(f"{source}: the RoPE scaling's original_max_position_embeddings {show(length)} is "
                          f"beyond {MAX_SIZE:,}; is it a typo?")
    context = length * factor
    if context > MAX_SIZE:
        shown = f"{int(context):,} tokens" if math.isfinite(context) else "infinite"
        raise ConfigError(f"{source}: the RoPE scaling's factor {show(factor)} makes the context {shown}, "
                          f"beyond {MAX_SIZE:,}; is it a typo?")
    return int(context)
