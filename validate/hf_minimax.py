"""config.json writer for costmodel/hf_minimax.py's family (MiniMax): what costmodel.hf reads back as
the same ModelConfig, so that validate/hf_models.py builds MiniMaxForCausalLM from a ModelConfig
(validate's rows, target hf)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig

_TYPES = {"lightning": "linear_attention", "attention": "full_attention"}


def _minimax(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """MiniMax's config.json: each decoder layer's mixer (the pattern's even entries) as layer_types,
    the experts (every odd entry), the lightning attention's block as block_size."""
    pattern = cfg.layer_pattern
    mixers, ffns = pattern[0::2], pattern[1::2]
    if any(m not in _TYPES for m in mixers) or any(f != "moe" for f in ffns):
        raise ValueError(f"model {cfg.name!r}: Hugging Face minimax layers are a lightning or full attention "
                         "each followed by experts.")
    return dict(llama, num_hidden_layers=len(mixers), layer_types=[_TYPES[m] for m in mixers],
                block_size=cfg.chunk_size or 256, num_local_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k,
                intermediate_size=cfg.d_expert)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
MINIMAX_DICTS = {"minimax": _minimax}
