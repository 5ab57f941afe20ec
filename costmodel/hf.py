"""A Hugging Face config.json (as a dict) -> ModelConfig, for every SUPPORTED_MODEL_TYPES.

Read as plain JSON: no transformers import, no network, no code from the file. The ModelConfig
describes the class a user trains: *ForCausalLM for decoders, BertModel (with pooler) for BERT,
T5ForConditionalGeneration for T5. Defaults are those of transformers' configuration classes.
This module dispatches on model_type; costmodel/hf_llama.py reads the Llama-like families,
costmodel/hf_classic.py the others (GPT-NeoX, Falcon, OPT, BLOOM, GPT-2, BERT, T5),
costmodel/hf_rope_layernorm.py StarCoder2 and Phi, costmodel/hf_gpt_oss.py gpt-oss,
costmodel/hf_llama_variants.py the Llama-like families whose blocks exist here under other names
(OLMo 1/3, OLMoE, EXAONE 4, Seed-OSS, Helium, Arcee, GLM-4 and GLM-4 0414, ERNIE 4.5, Apertus,
Hunyuan dense),
costmodel/hf_classic_more.py StableLM, GPT-BigCode, MPT, GPT-J, GPT-Neo and Cohere 1-2, and
costmodel/hf_llama4.py Llama 4's language model, costmodel/hf_moe_more.py GLM-4.5 (glm4_moe),
dots.llm1 (dots1), GLM-4.7-Flash (glm4_moe_lite), Hunyuan-A13B (hunyuan_v1_moe) and MiniMax-M2,
costmodel/hf_moe_extra.py more mixture-of-experts decoders (GraniteMoE and its shared variant),
costmodel/hf_dense_extra.py Nemotron, VaultGemma, Ministral 3, Jais 2, HyperCLOVA X, CodeGen,
BioGPT, MiniCPM3 and nanochat, costmodel/hf_gemma4.py Gemma 4's language model (hf_gemma3n.py Gemma
3n's), costmodel/hf_deepseek_v32.py DeepSeek-V3.2 (DeepSeek-V3 with its sparse attention's indexer),
costmodel/hf_new_moe.py Hy3 (hy_v3), AFMoE (afmoe) and Laguna (laguna), and the readers
costmodel/hf_registry.py gathers (Mamba-1, Falcon-H1, LFM2 and newer), all through
costmodel/hf_fields.py's typed field access.
"""

from __future__ import annotations

from typing import Any, Callable

from .checkpoint import with_ignore_list
from .config import ConfigError, ModelConfig, show
from .hf_classic import CLASSIC_BUILDERS
from .hf_deepseek_v32 import DEEPSEEK_V32_ARCHITECTURES, DEEPSEEK_V32_BUILDERS, DEEPSEEK_V32_NAMES
from .hf_unmodelled import UNMODELLED_TYPES
from .hf_classic_more import CLASSIC_MORE_ARCHITECTURES, CLASSIC_MORE_BUILDERS, CLASSIC_MORE_NAMES
from .hf_dense_extra import DENSE_EXTRA_ARCHITECTURES, DENSE_EXTRA_BUILDERS, DENSE_EXTRA_NAMES
from .hf_fields import LLAMA_NAMES, Fields, check_router_loss
from .hf_context import served_context
from .hf_gemma3n import GEMMA3N_ARCHITECTURES, GEMMA3N_BUILDERS, GEMMA3N_NAMES
from .hf_gemma4 import GEMMA4_ARCHITECTURES, GEMMA4_BUILDERS, GEMMA4_NAMES
from .hf_gpt_oss import GPT_OSS_ARCHITECTURES, GPT_OSS_BUILDERS, GPT_OSS_NAMES
from .hf_hybrid import HYBRID_ARCHITECTURES, HYBRID_BUILDERS, HYBRID_NAMES
from .hf_qwen_next import QWEN_NEXT_ARCHITECTURES, QWEN_NEXT_BUILDERS, QWEN_NEXT_NAMES
from .hf_nemotron_h import NEMOTRON_H_ARCHITECTURES, NEMOTRON_H_BUILDERS, NEMOTRON_H_NAMES
from .hf_llama import LLAMA_BUILDERS, LLAMA_READER
from .hf_llama4 import LLAMA4_ARCHITECTURES, LLAMA4_BUILDERS, LLAMA4_NAMES
from .hf_llama_variants import LLAMA_VARIANT_ARCHITECTURES, LLAMA_VARIANT_BUILDERS, LLAMA_VARIANT_NAMES
from .hf_moe_more import MOE_MORE_ARCHITECTURES, MOE_MORE_BUILDERS, MOE_MORE_NAMES
from .hf_moe_extra import MOE_EXTRA_ARCHITECTURES, MOE_EXTRA_BUILDERS, MOE_EXTRA_NAMES
from .hf_more_types import MORE_TYPES_ARCHITECTURES, MORE_TYPES_BUILDERS, MORE_TYPES_NAMES
from .hf_new_moe import NEW_MOE_ARCHITECTURES, NEW_MOE_BUILDERS, NEW_MOE_NAMES
from . import hf_registry
from .hf_multimodal import language_model
from .hf_rope_layernorm import (ROPE_LAYERNORM_ARCHITECTURES, ROPE_LAYERNORM_BUILDERS,
                                ROPE_LAYERNORM_NAMES)


SUPPORTED_MODEL_TYPES = ("llama", "mistral", "ministral", "cwm", "qwen2", "qwen3", "gemma", "gemma2",
                         "gemma3_text", "phi3", "gpt_neox", "falcon", "opt", "bloom", "mixtral",
                         "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "internlm3",
                         "exaone", "iquestcoder", "granite", "smollm3", "olmo2", "gpt2", "bert", "t5",
                         *ROPE_LAYERNORM_BUILDERS, *GPT_OSS_BUILDERS, *NEMOTRON_H_BUILDERS,
                         *LLAMA_VARIANT_BUILDERS, *CLASSIC_MORE_BUILDERS,
                         *LLAMA4_BUILDERS, *MOE_MORE_BUILDERS,
                         *HYBRID_BUILDERS, *MOE_EXTRA_BUILDERS, *DENSE_EXTRA_BUILDERS,
                         *QWEN_NEXT_BUILDERS, *GEMMA4_BUILDERS, *DEEPSEEK_V32_BUILDERS, *MORE_TYPES_BUILDERS,
                         *NEW_MOE_BUILDERS, *GEMMA3N_BUILDERS, *hf_registry.BUILDERS)


_BUILDERS: dict[str, Callable[[Fields, str], ModelConfig]] = {
    **LLAMA_BUILDERS,
    **CLASSIC_BUILDERS,
    **ROPE_LAYERNORM_BUILDERS,
    **GPT_OSS_BUILDERS,
    **NEMOTRON_H_BUILDERS,
    **LLAMA4_BUILDERS,
    **{model_type: (lambda f, name, build=build: build(f, name, LLAMA_READER))
       for model_type, build in {**LLAMA_VARIANT_BUILDERS, **MOE_MORE_BUILDERS,
                                        **MOE_EXTRA_BUILDERS, **DENSE_EXTRA_BUILDERS,
                                        **GEMMA4_BUILDERS, **GEMMA3N_BUILDERS, **DEEPSEEK_V32_BUILDERS,
                                        **MORE_TYPES_BUILDERS, **NEW_MOE_BUILDERS}.items()},
    **CLASSIC_MORE_BUILDERS,
    **HYBRID_BUILDERS,
    **QWEN_NEXT_BUILDERS,
    **hf_registry.BUILDERS,
}


#: The model_type each transformers class of a supported family is registered under (its
#: configuration class's model_type), for a config.json that names `architectures` only.
ARCHITECTURE_TYPES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2",
    "Phi3ForCausalLM": "phi3", "GPTNeoXForCausalLM": "gpt_neox", "FalconForCausalLM": "falcon",
    "OPTForCausalLM": "opt", "BloomForCausalLM": "bloom", "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe", "DeepseekV3ForCausalLM": "deepseek_v3",
    "MinistralForCausalLM": "ministral", "Gemma3ForCausalLM": "gemma3_text", "CwmForCausalLM": "cwm",
    "Qwen3MoeForCausalLM": "qwen3_moe", "DeepseekV2ForCausalLM": "deepseek_v2",
    "GraniteForCausalLM": "granite", "SmolLM3ForCausalLM": "smollm3",
    "Olmo2ForCausalLM": "olmo2",
    "GPT2LMHeadModel": "gpt2", "GPT2Model": "gpt2", "BertModel": "bert", "BertForMaskedLM": "bert",
    "T5ForConditionalGeneration": "t5", "T5Model": "t5",
    **ROPE_LAYERNORM_ARCHITECTURES,
    **GPT_OSS_ARCHITECTURES,
    **NEMOTRON_H_ARCHITECTURES,
    **LLAMA4_ARCHITECTURES,
    **LLAMA_VARIANT_ARCHITECTURES,
    **CLASSIC_MORE_ARCHITECTURES,
    **MOE_MORE_ARCHITECTURES,
    **HYBRID_ARCHITECTURES,
    **MOE_EXTRA_ARCHITECTURES,
    **DENSE_EXTRA_ARCHITECTURES,
    **QWEN_NEXT_ARCHITECTURES,
    **GEMMA4_ARCHITECTURES, **GEMMA3N_ARCHITECTURES,
    **DEEPSEEK_V32_ARCHITECTURES,
    **MORE_TYPES_ARCHITECTURES,
    **hf_registry.ARCHITECTURES,
    **NEW_MOE_ARCHITECTURES,
}

#: The config.json names of ModelConfig's fields, by family (the ones its errors may name).
_LLAMA_NAMES = LLAMA_NAMES
HF_FIELD_NAMES: dict[str, dict[str, str]] = {
    **{family: _LLAMA_NAMES for family in LLAMA_BUILDERS},
    "gpt_neox": _LLAMA_NAMES, "falcon": {**_LLAMA_NAMES, "n_decoder_layers": "num_hidden_layers"},
    "gpt2": {"n_heads": "n_head", "d_model": "n_embd", "d_ff": "n_inner", "n_decoder_layers": "n_layer",
             "max_positions": "n_positions"},
    "bert": {**_LLAMA_NAMES, "n_encoder_layers": "num_hidden_layers"},
    "t5": {"n_heads": "num_heads", "d_head": "d_kv", "n_encoder_layers": "num_layers",
           "n_decoder_layers": "num_decoder_layers"},
    **ROPE_LAYERNORM_NAMES,
    **GPT_OSS_NAMES,
    **NEMOTRON_H_NAMES,
    **LLAMA4_NAMES,
    **LLAMA_VARIANT_NAMES,
    **CLASSIC_MORE_NAMES,
    **MOE_MORE_NAMES,
    **HYBRID_NAMES,
    **MOE_EXTRA_NAMES,
    **DENSE_EXTRA_NAMES,
    **QWEN_NEXT_NAMES,
    **GEMMA4_NAMES, **GEMMA3N_NAMES,
    **DEEPSEEK_V32_NAMES,
    **MORE_TYPES_NAMES,
    **hf_registry.NAMES,
    **NEW_MOE_NAMES,
}


def _model_type(data: dict[str, Any], source: str) -> str:
    """The config's model_type; the one its `architectures` name (ARCHITECTURE_TYPES) where it has none,
    or where it names a type of remote code that runs a supported class (moonshotai/Kimi-K2-Instruct:
    "kimi_k2", whose auto_map's configuration_deepseek.DeepseekV3Config and DeepseekV3ForCausalLM are
    DeepSeek-V3's; vLLM picks the model by `architectures` the same way). Remote code means an auto_map
    naming an AutoConfig, as transformers' AutoConfig.from_pretrained requires of a type it does not register:
    an unknown model_type without one (a typo such as "lama") is refused, whatever its architectures."""
    model_type = data.get("model_type")
    architectures = data.get("architectures")
    names = architectures if isinstance(architectures, list) else []
    known = [ARCHITECTURE_TYPES[a] for a in names if isinstance(a, str) and a in ARCHITECTURE_TYPES]
    if model_type is None:
        if known:
            return known[0]
        raise ConfigError(
            f"{source}: missing field 'model_type'"
            + (f", and architectures {show(architectures)} names no class of a supported family"
               if architectures else "")
            + f"; add \"model_type\" (one of {', '.join(SUPPORTED_MODEL_TYPES)}).")
    if isinstance(model_type, str) and model_type in UNMODELLED_TYPES:
        raise ConfigError(f"{source}: model_type {model_type!r} is not modelled: {UNMODELLED_TYPES[model_type]}")
    if not isinstance(model_type, str) or model_type not in _BUILDERS:
        text = data.get("text_config")
        inner = text.get("model_type") if isinstance(text, dict) else None
        if isinstance(inner, str) and inner in _BUILDERS:  # Gemma 3, Mistral 3...: a vision tower too
            raise ConfigError(
                f"{source}: unsupported model_type {show(model_type)} (a multimodal model); its "
                f"language model, text_config, is model_type {inner!r}, which is supported: save "
                "text_config as its own config.json to estimate the language model alone.")
        auto_map = data.get("auto_map")
        remote = isinstance(auto_map, dict) and "AutoConfig" in auto_map
        if known and isinstance(model_type, str) and remote:  # Kimi K2: "kimi_k2", remote code of DeepseekV3ForCausalLM
            return known[0]
        # transformers' AutoConfig loads an unregistered model_type only through auto_map's AutoConfig (remote
        # code); without it, it refuses the file ("does not recognize this architecture"): so do we
        named = (f" (its architectures name a class of model_type {known[0]!r}, but no auto_map AutoConfig reads "
                 f"the file as one: set model_type {known[0]!r} if it is one)"
                 if known and isinstance(model_type, str) else "")
        raise ConfigError(
            f"{source}: unsupported model_type {show(model_type)}{named}; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}."
        )
    return model_type


def _in_config_names(message: str, model_type: str) -> str:
    """An error about ModelConfig's fields in the words of the user's config.json."""
    import re

    names = HF_FIELD_NAMES.get(model_type, {})
    return re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", lambda m: names[m.group(1)],
                  message) if names else message


def from_hf_config(data: Any, name: str, source: str = "config.json") -> ModelConfig:
    """Translate a parsed Hugging Face config.json into a ModelConfig; a config without
    model_type, or with one of remote code whose `architectures` name a supported class (Kimi K2's kimi_k2),
    is read as the family its `architectures` name. Its quantization_config, if any,
    becomes checkpoint_weights (costmodel/checkpoint.py: the default format of inference)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}.")
    unwrapped = language_model(data, source, name)
    if unwrapped is not None:  # Gemma 3, Mistral 3, Llama 4: the language model of a multimodal config
        text, text_source, text_name = unwrapped
        return from_hf_config(text, name=text_name, source=text_source)
    model_type = _model_type(data, source)
    try:
        check_router_loss(Fields(data, source), model_type)
        cfg = _BUILDERS[model_type](Fields(data, source), name)
    except ConfigError as error:
        raise ConfigError(_in_config_names(str(error), model_type)) from None
    if cfg.position == "rope":  # the context vLLM serves at: YaRN over a shorter original length
        cfg = cfg.replace(max_positions=served_context(data, model_type, cfg.max_positions, source))
    if data.get("quantization_config") is None:
        return cfg
    return cfg.replace(checkpoint_weights=with_ignore_list(cfg, data["quantization_config"], source))
