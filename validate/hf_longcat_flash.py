"""config.json writer for costmodel/hf_more_types.py's longcat_flash reader, and the routing its
validate rows are measured under.

LongcatFlashForCausalLM routes each token to moe_topk of n_routed_experts + zero_expert_num experts,
the zero ones identities that cost no matmul. The tree counts every slot on a real expert (the most a
token can cost: costmodel/blocks/experts.py Experts.zero_experts), so its numbers are measured with the
router held to the real experts: counted_routing sets the zero experts' score-correction bias (a
buffer the router adds to the softmax scores for the choice alone, LongcatFlashTopkRouter
.get_topk_indices) to -1e4, below any score (a softmax's are in (0, 1)). The routing weights are the
softmax's values gathered at the chosen experts, which the bias does not touch."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from costmodel.config import ModelConfig

#: What counted_routing adds to a zero expert's score before the top-k choice.
NEVER_CHOSEN = -1e4


def counted_routing(model: nn.Module) -> nn.Module:
    """The model with every LongCat-Flash router kept off its zero experts (a no-op for any other)."""
    for module in model.modules():
        if type(module).__name__ == "LongcatFlashTopkRouter":
            routed = module.n_routed_experts - (model.config.zero_expert_num or 0)
            with torch.no_grad():
                module.e_score_correction_bias[routed:] = NEVER_CHOSEN
    return model


def _longcat_flash(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """LongcatFlashConfig's names; the tree's layers are two per LongCat layer (llama unused)."""
    rope = cfg.rotary_dim
    return dict(model_type="longcat_flash", vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                num_attention_heads=cfg.n_heads, num_layers=cfg.n_decoder_layers // 2,
                max_position_embeddings=cfg.max_positions, ffn_hidden_size=cfg.d_ff, q_lora_rank=cfg.q_lora_rank,
                kv_lora_rank=cfg.kv_lora_rank, qk_nope_head_dim=cfg.d_head - rope, qk_rope_head_dim=rope,
                head_dim=rope, v_head_dim=cfg.v_head_dim, moe_topk=cfg.top_k, n_routed_experts=cfg.n_experts,
                zero_expert_num=cfg.zero_experts, expert_ffn_hidden_size=cfg.d_expert,
                tie_word_embeddings=cfg.tie_embeddings, attention_dropout=cfg.dropout, attention_bias=cfg.qkv_bias,
                bos_token_id=None, eos_token_id=None, pad_token_id=None)


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
LONGCAT_FLASH_DICTS = {"longcat_flash": _longcat_flash}
