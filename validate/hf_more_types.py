"""Measurements and config.json writers for costmodel/hf_more_types.py's families and the
training-only MoE input noise (PhiMoE's input_jitter_noise, DBRX's moe_jitter_eps).

live_saved_bytes measures what a training forward keeps for backward by liveness, not by walking
the autograd graph: validate/measure/saved.py reads each node's _saved_* attributes, and a node
that an in-place op on a view wraps in CopySlices (PhiMoE's router multiplies a reshape of the MoE
input in place) exposes none of its own, so the walk cannot see what it keeps."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import torch
from torch import nn

from costmodel.config import ModelConfig

from .hf_llama_variants import LLAMA_VARIANT_DICTS, exaone4
from .measure.common import Inputs, LossFn, forward_loss, held, storage_key


class _Box:
    """One packed saved tensor; it lives as long as the autograd node that saved it."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


def live_saved_bytes(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None = None) -> int:
    """Bytes of the unique storages that the autograd graph of a training forward (with the loss)
    still holds for backward once the forward is done, parameters and buffers (and views of them)
    excluded: every tensor packed by saved_tensors_hooks whose node is alive."""
    boxes: list[weakref.ref] = []

    def pack(t: torch.Tensor) -> _Box:
        box = _Box(t)
        boxes.append(weakref.ref(box))
        return box

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.tensor):
        output, loss = forward_loss(model, inputs, loss_fn)
    gc.collect()
    excluded = {storage_key(held(t)) for t in [*model.parameters(), *model.buffers()]}
    storages: dict[int, int] = {}
    for ref in boxes:
        box = ref()
        if box is not None and storage_key(held(box.tensor)) not in excluded:
            storages[storage_key(held(box.tensor))] = held(box.tensor).untyped_storage().nbytes()
    del output, loss
    return sum(storages.values())


def _solar_open(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Solar Open's config.json: GLM-4.5's (validate/hf_llama_variants.py) less the fields
    SolarOpenConfig lacks (costmodel/hf_more_types.py); every layer has experts."""
    if cfg.n_dense_layers or cfg.qk_norm:
        raise ValueError(f"model {cfg.name!r}: Hugging Face solar_open builds experts in every "
                         "layer and no q/k norms.")
    data = LLAMA_VARIANT_DICTS["glm4_moe"](cfg, llama)
    for key in ("intermediate_size", "first_k_dense_replace", "use_qk_norm"):
        data.pop(key, None)
    return dict(data, model_type="solar_open")


def _youtu(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Youtu-LLM's config.json: Llama's fields with DeepSeek-V3's latent attention ones (head_dim
    left out: YoutuConfig, as DeepseekV3Config, sets it to qk_rope_head_dim)."""
    if cfg.n_experts:
        raise ValueError(f"model {cfg.name!r}: Hugging Face youtu builds no experts.")
    data = {k: v for k, v in llama.items() if k != "head_dim"}
    return dict(data, q_lora_rank=cfg.q_lora_rank, kv_lora_rank=cfg.kv_lora_rank,
                qk_rope_head_dim=cfg.rotary_dim, qk_nope_head_dim=cfg.d_head - (cfg.rotary_dim or 0),
                v_head_dim=cfg.v_head_dim, attention_bias=cfg.qkv_bias, pad_token_id=None,
                bos_token_id=None, eos_token_id=None)


def _mellum(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Mellum's config.json: Llama's fields, Qwen3-MoE's expert ones, its per-layer MLP kinds,
    every layer full attention."""
    if cfg.sliding_window is not None:
        raise ValueError(f"model {cfg.name!r}: mellum's sliding layers are not modelled.")
    layers = cfg.n_decoder_layers
    mlp = ["sparse" if cfg.n_experts and cfg.layer_kind_at("decoder", i) != "dense" else "dense"
           for i in range(layers)]
    return dict(llama, num_local_experts=cfg.n_experts or 1, num_experts_per_tok=cfg.top_k or 1,
                moe_intermediate_size=cfg.d_expert or cfg.d_ff, norm_topk_prob=cfg.renormalize_top_k,
                attention_bias=cfg.qkv_bias, mlp_layer_types=mlp,
                layer_types=["full_attention"] * layers, pad_token_id=None, bos_token_id=None,
                eos_token_id=None)


def _kolibri1(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Kolibri-1's config.json: EXAONE 4.0's windows (layer_types), its experts' fields (no dense
    MLP, so no intermediate_size)."""
    if not cfg.n_experts or cfg.n_dense_layers or not cfg.d_shared:
        raise ValueError(f"model {cfg.name!r}: Hugging Face kolibri1 builds experts and a shared MLP in every layer.")
    data = {k: v for k, v in exaone4(cfg, llama).items() if k != "intermediate_size"}
    return dict(data, num_experts=cfg.n_experts, num_experts_per_tok=cfg.top_k, moe_intermediate_size=cfg.d_expert,
                shared_expert_intermediate_size=cfg.d_shared, norm_topk_prob=cfg.renormalize_top_k)


def _emu3(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Emu3's config.json: the language model as text_config (what AutoModelForCausalLM builds
    Emu3ForCausalLM from), one dropout probability for the probabilities and the sublayers' outputs, special
    token ids 0-2 (Emu3TextConfig's lie past a small vocabulary, and it takes no null); vocab_size at the top too, where
    validate's inputs read it (Emu3Config keeps an unknown field as an attribute)."""
    if cfg.qkv_bias != cfg.out_bias or (cfg.attention_dropout not in (None, cfg.dropout)):
        raise ValueError(f"model {cfg.name!r}: Hugging Face emu3 has one attention_bias and one dropout probability.")
    text = dict(llama, model_type="emu3_text_model", attention_bias=cfg.qkv_bias, mlp_bias=cfg.ffn_bias,
                attention_dropout=cfg.dropout, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return {"model_type": "emu3", "vocab_size": cfg.vocab_size, "text_config": text}


def _mllama(cfg: ModelConfig, llama: dict[str, Any]) -> dict[str, Any]:
    """Mllama's config.json: the language model as text_config with its idle cross-attention layers
    last (where they sit does not change what a text prompt runs), vocab_size at the top too (validate's
    inputs read it there)."""
    if cfg.embedding_extra_rows != 8 or cfg.qkv_bias or cfg.ffn_bias:
        raise ValueError(f"model {cfg.name!r}: Hugging Face mllama has 8 extra token rows and no biases.")
    layers = cfg.n_decoder_layers + cfg.idle_cross_layers
    text = dict(llama, model_type="mllama_text_model", num_hidden_layers=layers, dropout=0.0,
                cross_attention_layers=list(range(cfg.n_decoder_layers, layers)),
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    text.pop("attention_dropout")
    return {"model_type": "mllama", "vocab_size": cfg.vocab_size, "text_config": text}


#: family -> its config.json writer (validate/hf_config_dict.py's config_dict).
MORE_TYPES_DICTS = {"solar_open": _solar_open, "youtu": _youtu, "mellum": _mellum, "kolibri1": _kolibri1,
                    "emu3": _emu3, "mllama": _mllama}
