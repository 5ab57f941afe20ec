"""The config.json readers of the newer model types, gathered in one place for costmodel/hf.py.

Each reader module exposes <NAME>_ARCHITECTURES (transformers class -> model_type),
<NAME>_BUILDERS (model_type -> builder(fields, name) -> ModelConfig) and <NAME>_NAMES (the config.json
names of ModelConfig's fields, for errors). A module that adds model types with such builders adds
its three dicts here, not to hf.py, so that adding a family touches one short file. (Readers that
take hf.py's LlamaReader are wrapped in hf.py itself.)
"""

from __future__ import annotations

from .hf_falcon_h1 import FALCON_H1_ARCHITECTURES, FALCON_H1_BUILDERS, FALCON_H1_NAMES
from .hf_lfm2 import LFM2_ARCHITECTURES, LFM2_BUILDERS, LFM2_NAMES
from .hf_mamba1 import MAMBA1_ARCHITECTURES, MAMBA1_BUILDERS, MAMBA1_NAMES
from .hf_kimi_linear import KIMI_LINEAR_ARCHITECTURES, KIMI_LINEAR_BUILDERS, KIMI_LINEAR_NAMES
from .hf_minimax import MINIMAX_ARCHITECTURES, MINIMAX_BUILDERS, MINIMAX_NAMES
from .hf_openai_gpt import OPENAI_GPT_ARCHITECTURES, OPENAI_GPT_BUILDERS, OPENAI_GPT_NAMES
from .hf_olmo_hybrid import OLMO_HYBRID_ARCHITECTURES, OLMO_HYBRID_BUILDERS, OLMO_HYBRID_NAMES
from .hf_xglm import XGLM_ARCHITECTURES, XGLM_BUILDERS, XGLM_NAMES
from .hf_roberta import ROBERTA_ARCHITECTURES, ROBERTA_BUILDERS, ROBERTA_NAMES
from .hf_deepseek_v4 import DEEPSEEK_V4_ARCHITECTURES, DEEPSEEK_V4_BUILDERS, DEEPSEEK_V4_NAMES
from .hf_gpt_neox_japanese import (GPT_NEOX_JAPANESE_ARCHITECTURES, GPT_NEOX_JAPANESE_BUILDERS,
                                   GPT_NEOX_JAPANESE_NAMES)
from .hf_jetmoe import JETMOE_ARCHITECTURES, JETMOE_BUILDERS, JETMOE_NAMES

ARCHITECTURES = {**FALCON_H1_ARCHITECTURES, **MAMBA1_ARCHITECTURES, **LFM2_ARCHITECTURES, **MINIMAX_ARCHITECTURES,
                 **KIMI_LINEAR_ARCHITECTURES, **XGLM_ARCHITECTURES,
                 **ROBERTA_ARCHITECTURES, **OLMO_HYBRID_ARCHITECTURES, **OPENAI_GPT_ARCHITECTURES, **DEEPSEEK_V4_ARCHITECTURES,
                 **GPT_NEOX_JAPANESE_ARCHITECTURES, **JETMOE_ARCHITECTURES}
BUILDERS = {**MAMBA1_BUILDERS, **FALCON_H1_BUILDERS, **LFM2_BUILDERS, **MINIMAX_BUILDERS, **KIMI_LINEAR_BUILDERS, **XGLM_BUILDERS,
            **ROBERTA_BUILDERS, **OLMO_HYBRID_BUILDERS, **OPENAI_GPT_BUILDERS, **DEEPSEEK_V4_BUILDERS, **GPT_NEOX_JAPANESE_BUILDERS,
            **JETMOE_BUILDERS}
NAMES = {**FALCON_H1_NAMES, **MAMBA1_NAMES, **LFM2_NAMES, **MINIMAX_NAMES, **KIMI_LINEAR_NAMES, **XGLM_NAMES, **ROBERTA_NAMES,
         **OLMO_HYBRID_NAMES, **OPENAI_GPT_NAMES, **DEEPSEEK_V4_NAMES, **GPT_NEOX_JAPANESE_NAMES,
         **JETMOE_NAMES}
