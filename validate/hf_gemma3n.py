"""The config.json of a ModelConfig of costmodel/hf_gemma3n.py's family (gemma3n_text): what
costmodel.hf reads back as the same ModelConfig (validate/hf_config_dict.py's config_dict checks that),
so that validate builds Gemma3nForCausalLM for it. Gemma 4's writer (validate/hf_gemma4.py) with
Gemma 3n's own fields: the AltUp streams and LAuReL rank, and none of Gemma 4's."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.config import ModelConfig

from .hf_gemma4 import GEMMA4_DICTS

#: Gemma 4 fields Gemma3nTextConfig does not take (its strict dataclass rejects none, but they would
#: be unread).
_GEMMA4_ONLY = ("global_head_dim", "per_layer_config", "attention_k_eq_v", "use_double_wide_mlp")


def _gemma3n_text(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Gemma 3n's text config.json: Gemma 4's fields less its own, plus altup_num_inputs and
    laurel_rank."""
    data = {k: v for k, v in GEMMA4_DICTS["gemma4_text"](cfg, llama).items() if k not in _GEMMA4_ONLY}
    return dict(data, model_type="gemma3n_text", altup_num_inputs=cfg.altup_inputs, laurel_rank=cfg.laurel_rank)


#: family -> its config.json writer (validate/hf_extra_dicts.py's NEWER_DICTS).
GEMMA3N_DICTS: dict[str, Callable[[ModelConfig, dict[str, Any]], dict[str, Any]]] = {"gemma3n_text": _gemma3n_text}
