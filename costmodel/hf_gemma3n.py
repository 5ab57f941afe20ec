"""config.json reader of Gemma 3n's language model (model_type gemma3n_text, Gemma3nForCausalLM; the
multimodal gemma3n wrapper is read as its text_config by costmodel/hf_multimodal.py).

transformers 5.24's models/gemma3n/modeling_gemma3n.py, read against Gemma 4's (costmodel/hf_gemma4.py,
whose reader this one calls): the same attention (per-head q/k RMSNorms times w, a weightless value
norm, scores scaled by 1.0, sliding_attention / full_attention layers with one RoPE table per kind,
one head width on every layer), the same per-layer inputs (blocks/per_layer.py: always on here) and
the same K/V sharing over the last num_kv_shared_layers (each kind reusing its last own layer's K
and V; Gemma3nTextConfig.kv_sharing_modes). Gemma 3n adds AltUp (altup_num_inputs streams: d -> d
projections before and after the layers, a predict and a correct in each layer) and LAuReL (a
d -> laurel_rank -> d residual beside the attention), blocks/altup.py. Unlike Gemma 4 the last
layer may slide, no layer_scalar buffer exists, and generate's prefill runs the K/V-sharing layers on
every position.

Read but without cost here: altup_active_idx (which stream is active changes no count),
activation_sparsity_pattern (a Gaussian top-k on the first layers' FFN gate: means, standard
deviations and a ReLU per element, no parameters and no matmul; what it keeps for backward is not
counted, the workload's warning says so). Refused in one sentence each: intermediate_size lists of
several widths, hidden_size_per_layer_input 0, altup_active_idx outside the streams,
final_logit_softcapping null and altup_coef_clip null (both of which Gemma3nTextConfig rejects),
altup_correct_scale false (its saved bytes are not modelled: the blocks are built without the
config, costmodel/leaves.py) and (layer_pattern.py)
K/V sharing without an own layer of each kind before the sharing ones (transformers runs it when
every layer is full). Tensor parallelism is refused (costmodel/layout/spec.py). Defaults are
Gemma3nTextConfig's (transformers 5.24 configuration_gemma3n.py).
"""

from __future__ import annotations

from typing import Any, Callable

from .config import ConfigError, ModelConfig, show
from .hf_fields import Fields
from .hf_gemma4 import GEMMA4_BUILDERS, GEMMA4_NAMES
from .hf_llama_variants import LlamaReader

#: Gemma3nTextConfig's defaults (transformers 5.24) for the fields Gemma 4's reader reads.
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=262_400, hidden_size=2048, intermediate_size=16_384, num_hidden_layers=35, num_attention_heads=8,
    num_key_value_heads=2, head_dim=256, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=32_768,
    tie_word_embeddings=True, attention_bias=False, sliding_window=512, final_logit_softcapping=30.0,
    vocab_size_per_layer_input=262_144, hidden_size_per_layer_input=256, num_kv_shared_layers=15)
#: Its AltUp and LAuReL defaults.
_ALTUP_INPUTS, _LAUREL_RANK, _PATTERN = 4, 64, 5
#: Gemma 4 fields Gemma3nTextConfig does not have: Gemma 4's reader is given their neutral values.
_GEMMA4_ONLY = dict(attention_k_eq_v=False, enable_moe_block=False, use_double_wide_mlp=False)


def _mlp_width(f: Fields, layers: int) -> int:
    """intermediate_size: one width, or a list of one width per layer (Gemma3nTextConfig takes
    both; the tree gives every layer's MLP one width)."""
    width = f.data.get("intermediate_size", _DEFAULTS["intermediate_size"])
    if isinstance(width, list):
        if len(width) != layers:
            raise ConfigError(f"{f.source}: intermediate_size must give one width or one for each of the "
                              f"{layers} layers, got {len(width)}.")
        if len(set(map(show, width))) != 1:
            raise ConfigError(f"{f.source}: intermediate_size widths {show(sorted(set(width)))} differ between "
                              "layers; MLPs of several widths are not modelled for gemma3n_text.")
        width = width[0]
    return width


def _gemma3n_text(f: Fields, name: str, llama: LlamaReader) -> ModelConfig:
    """Gemma 3n's language model: Gemma 4's reader on Gemma3nTextConfig's defaults, then its own
    layer kinds (the last layer may slide) and the AltUp and LAuReL sizes."""
    data = {**_DEFAULTS, **{k: v for k, v in f.data.items() if k not in ("global_head_dim", "per_layer_config",
                                                                      "num_global_key_value_heads")}}
    layers = Fields(data, f.source).get("num_hidden_layers", minimum=1)
    data["intermediate_size"] = _mlp_width(Fields(data, f.source), layers)
    types = llama.layer_types(Fields(data, f.source), layers) or [
        "full_attention" if (i + 1) % _PATTERN == 0 else "sliding_attention" for i in range(layers)]
    data.update(_GEMMA4_ONLY, model_type="gemma4_text", layer_types=types, global_head_dim=data.get("head_dim"))
    g = Fields(data, f.source)
    if not g.get("hidden_size_per_layer_input", minimum=0):
        raise ConfigError(f"{f.source}: hidden_size_per_layer_input 0 is not modelled for gemma3n_text "
                          "(its per-layer inputs are part of every layer).")
    if data["final_logit_softcapping"] is None:
        raise ConfigError(f"{f.source}: final_logit_softcapping null is not modelled for gemma3n_text: "
                          "Gemma3nTextConfig takes a number (30.0 by default).")
    sparsity = data.get("activation_sparsity_pattern")
    if sparsity is not None and not isinstance(sparsity, (int, float)) and not (
            isinstance(sparsity, list) and len(sparsity) == layers and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in sparsity)):
        raise ConfigError(f"{f.source}: activation_sparsity_pattern must give a number for each of the {layers} "
                          f"layers, got {show(sparsity)}.")
    altup = g.get("altup_num_inputs", _ALTUP_INPUTS, minimum=1)
    active = g.get("altup_active_idx", 0, minimum=0)
    if active >= altup:
        raise ConfigError(f"{f.source}: altup_active_idx ({active}) must name one of the {altup} AltUp streams "
                          "(altup_num_inputs).")
    if g.nullable("altup_coef_clip", 120.0, float) is None:
        raise ConfigError(f"{f.source}: altup_coef_clip null is not modelled for gemma3n_text: Gemma3nTextConfig "
                          "takes a number (120.0 by default), whose clamped correction weight backward keeps.")
    if not g.get("altup_correct_scale", True, bool):
        raise ConfigError(f"{f.source}: altup_correct_scale false is not modelled for gemma3n_text: the bytes saved "
                          "for backward count the scaled copy of the active stream that it leaves out.")
    try:
        base = GEMMA4_BUILDERS["gemma4_text"](g, name, llama)
    except ConfigError as err:  # Gemma 4's sentences, for this family
        raise ConfigError(str(err).replace("gemma4_text", "gemma3n_text")) from None
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    return base.replace(
        family="gemma3n_text", altup_inputs=altup, laurel_rank=g.get("laurel_rank", _LAUREL_RANK, minimum=1),
        sliding_window=g.get("sliding_window", minimum=1) if sliding else None, window_layers=len(sliding) or None,
        rotary_sets=len(set(types)), layer_pattern=llama.pattern(layers, sliding, None))


#: model_type -> its reader (hf.py passes its LlamaReader).
GEMMA3N_BUILDERS: dict[str, Callable[[Fields, str, LlamaReader], ModelConfig]] = {"gemma3n_text": _gemma3n_text}
#: The transformers class, for a config.json that names `architectures` only.
GEMMA3N_ARCHITECTURES: dict[str, str] = {"Gemma3nForCausalLM": "gemma3n_text"}
#: The config.json names of ModelConfig's fields (the ones its errors may name).
GEMMA3N_NAMES: dict[str, dict[str, str]] = {"gemma3n_text": {
    **GEMMA4_NAMES["gemma4_text"], "altup_inputs": "altup_num_inputs", "laurel_rank": "laurel_rank"}}
