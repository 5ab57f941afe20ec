"""The config.json writers of the newer model types, gathered in one place for validate/hf_config_dict.py.

Each writer turns a costmodel ModelConfig back into the config.json its transformers class reads
(from the Llama-like dict hf_config_dict builds). A module that adds model types adds its dict here, not
to hf_config_dict.py, so that adding a family touches one short file.
"""

from __future__ import annotations

from .hf_deepseek_v4 import DEEPSEEK_V4_DICTS
from .hf_falcon_h1 import FALCON_H1_DICTS
from .hf_gemma3n import GEMMA3N_DICTS
from .hf_gpt_neox_japanese import GPT_NEOX_JAPANESE_DICTS
from .hf_jetmoe import JETMOE_DICTS
from .hf_longcat_flash import LONGCAT_FLASH_DICTS
from .hf_kimi_linear import KIMI_LINEAR_DICTS
from .hf_lfm2 import LFM2_DICTS
from .hf_minimax import MINIMAX_DICTS
from .hf_moe_extra import MOE_EXTRA_DICTS
from .hf_more_types import MORE_TYPES_DICTS
from .hf_new_moe import NEW_MOE_DICTS
from .hf_openai_gpt import OPENAI_GPT_DICTS
from .hf_xglm import XGLM_DICTS
from .hf_zamba import ZAMBA_DICTS

#: Writers of the families registered after MOE_EXTRA_DICTS's (their DICT_FAMILIES entries).
NEWER_DICTS = {**MORE_TYPES_DICTS, **NEW_MOE_DICTS, **FALCON_H1_DICTS, **LFM2_DICTS, **GEMMA3N_DICTS,
               **MINIMAX_DICTS, **KIMI_LINEAR_DICTS, **XGLM_DICTS, **OPENAI_GPT_DICTS, **DEEPSEEK_V4_DICTS,
               **GPT_NEOX_JAPANESE_DICTS, **JETMOE_DICTS,
               **LONGCAT_FLASH_DICTS, **ZAMBA_DICTS}

#: Every writer hf_config_dict.config_dict calls with the Llama-like dict.
EXTRA_DICTS = {**MOE_EXTRA_DICTS, **NEWER_DICTS}
