"""A multimodal config.json whose language model is a supported family: read as its text_config.

Gemma 3 (4B-27B: `gemma3`), Gemma 4 (`gemma4`, its audio tower too), Gemma 3n (`gemma3n`, with
vision and audio towers), Mistral Small 3.1/3.2 (`mistral3`) and Llama 4 (`llama4`) ship one
config.json for a vision tower, a projector and a language model. transformers 5.24 builds the
language model from `text_config` (by its model_type, else the wrapper's default sub-config:
`sub_configs_defaults` in each configuration_*.py). Whether the output head is tied to the token
embeddings is read where the head lives: Gemma3ForConditionalGeneration (Gemma4's and Gemma3n's likewise) and
Mistral3ForConditionalGeneration hold `lm_head` themselves, so the wrapper's own
`tie_word_embeddings` decides (PreTrainedModel.get_expanded_tied_weights_keys reads `self.config`;
the class default, Gemma3Config and Mistral3Config, is True); Llama4ForConditionalGeneration holds
a Llama4ForCausalLM, so the text_config's decides. Measured by building each class on the meta
device with every combination of the two (tests/test_hf_multimodal.py; Gemma 4: tests/test_hf_gemma4.py). What is estimated is the
language model alone: the vision tower and the projector are not counted, and the model's name
says so ("... (language model)"). A quantization_config at the top applies to it too.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError, show

#: wrapper model_type -> (the text_config's model_type when it names none, the wrapper's default
#: tie_word_embeddings where the wrapper's value decides, None where the text_config's does), from
#: transformers 5.24's configuration_gemma3.py, configuration_mistral3.py, configuration_llama4.py.
WRAPPERS: dict[str, tuple[str, bool | None]] = {
    "gemma3": ("gemma3_text", True),
    "mistral3": ("mistral", True),
    "llama4": ("llama4_text", None),
    # Qwen3_5ForConditionalGeneration and Qwen3_5MoeForConditionalGeneration hold lm_head; their
    # configs' tie_word_embeddings is False by default (configuration_qwen3_5*.py)
    "qwen3_5": ("qwen3_5_text", False),
    "qwen3_5_moe": ("qwen3_5_moe_text", False),
    "gemma4": ("gemma4_text", True),  # configuration_gemma4.py: Gemma4Config(tie_word_embeddings=True)
    "gemma3n": ("gemma3n_text", True),  # configuration_gemma3n.py: Gemma3nConfig(tie_word_embeddings=True)
    # modular_gemma4_unified.py: Gemma4UnifiedConfig(Gemma4Config), its ForConditionalGeneration Gemma 4's
    "gemma4_unified": ("gemma4_unified_text", True),
}


def language_model(data: dict[str, Any], source: str, name: str) -> tuple[dict[str, Any], str, str] | None:
    """(the language model's config dict, its source, its name) for a known multimodal wrapper
    with a text_config; None for any other config."""
    wrapper = WRAPPERS.get(data.get("model_type")) if isinstance(data.get("model_type"), str) else None
    text = data.get("text_config")
    if wrapper is None:
        return None
    if not isinstance(text, dict):
        raise ConfigError(f"{source}: a {data['model_type']!r} config is read as its language model, text_config, "
                          f"which must be an object, got {show(text)}.")
    inner_type, tie_default = wrapper
    text = dict(text)
    text.setdefault("model_type", inner_type)
    if tie_default is not None:
        text["tie_word_embeddings"] = bool(data["tie_word_embeddings"] if "tie_word_embeddings" in data
                                           else tie_default)
    if "quantization_config" in data:
        text.setdefault("quantization_config", data["quantization_config"])
    return text, f"{source} text_config", f"{name} (language model)"
