"""Typed access to a Hugging Face config.json's fields, shared by the readers of costmodel/hf.py
and costmodel/hf_classic.py: a missing or mistyped field is a one-line ConfigError."""

from __future__ import annotations

from typing import Any

from .config import ConfigError, show
from .errors import check_int


def head_width(f: "Fields", d_model: int, n_heads: int, heads_key: str, width_key: str = "hidden_size") -> int:
    """d_model / n_heads, the head width a class derives where it has no head_dim field; a width the
    heads do not divide (or no heads) refused in one line naming the config's own two fields."""
    if not n_heads or d_model % n_heads:
        raise ConfigError(f"{f.source}: {width_key} ({d_model}) is not divisible by {heads_key} ({n_heads}).")
    return d_model // n_heads


class Fields:
    """Typed access to a config dict; a missing or mistyped field is a one-line ConfigError."""

    def __init__(self, data: dict[str, Any], source: str):
        self.data = data
        self.source = source

    def get(self, key: str, default: Any = ..., kind: type | tuple[type, ...] = int,
            minimum: int | None = None) -> Any:
        """The field's value (or the default); `minimum`: an integer at least this (a divisor)."""
        if minimum is not None:
            value = self.get(key, default, kind)
            check_int(self.source, key, value, minimum=minimum)
            return value
        if key not in self.data or self.data[key] is None:
            if default is ...:
                raise ConfigError(f"{self.source}: missing field {key!r}.")
            return default
        value = self.data[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{self.source}: field {key!r} must be an integer, got {show(value)}.")
        if kind is bool and not isinstance(value, bool):
            raise ConfigError(f"{self.source}: field {key!r} must be true or false, got {show(value)}.")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ConfigError(f"{self.source}: field {key!r} must be a number, got {show(value)}.")
        if kind is str and not isinstance(value, str):
            raise ConfigError(f"{self.source}: field {key!r} must be a string, got {show(value)}.")
        return value

    def nullable(self, key: str, default: Any, kind: type = int) -> Any:
        """A field where null means "none" (a window, a soft cap, a query rank): None when the
        config says null, the default when it leaves the field out, else the checked value."""
        if key in self.data and self.data[key] is None:
            return None
        return self.get(key, default, kind)


def same_dropout(f: Fields, keys: tuple[str, ...], family: str, default: float = 0.0) -> float:
    """The one dropout probability ModelConfig holds for the embeddings and the sublayer outputs:
    the config's fields for them (each the family's default where left out) must agree."""
    values = {key: float(f.get(key, default, float)) for key in keys}
    if len(set(values.values())) > 1:
        shown = " and ".join(f"{key} {show(value)}" for key, value in values.items())
        raise ConfigError(f"{f.source}: {shown} differ; {family} is modelled with one dropout "
                          "probability on the embeddings and the sublayer outputs.")
    return values[keys[0]]


def rotary_fraction(f: Fields, key: str | None, default: float) -> float:
    """partial_rotary_factor as transformers 5.24 resolves it: rope_parameters (or the legacy
    rope_scaling dict) first, then the top-level field (`key`), then the family's default."""
    for name in ("rope_parameters", "rope_scaling"):
        rope = f.data.get(name)
        if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
            value = rope["partial_rotary_factor"]
            break
    else:
        value = f.get(key, default, float) if key else default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{f.source}: partial_rotary_factor must be in (0, 1], got {show(value)}.")
    return float(value)


#: Llama's config.json names of ModelConfig's fields (the ones an error may name), which most
#: families' configuration classes share; each reader's *_NAMES table starts from it.
LLAMA_NAMES: dict[str, str] = {
    "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads", "d_model": "hidden_size",
    "d_ff": "intermediate_size", "d_head": "head_dim", "n_decoder_layers": "num_hidden_layers",
    "max_positions": "max_position_embeddings"}


#: Model types whose ForCausalLM, given labels and output_router_logits, adds router_aux_loss_coef x
#: the router's load-balancing loss (load_balancing_loss_func, transformers 5.24) to the training
#: loss, which the tree does not hold. (Qwen3-Next's reader refuses it for its family; the other MoE
#: types' classes take no such loss.)
ROUTER_LOSS_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "olmoe", "minimax_m2", "granitemoe",
                     "granitemoeshared", "flex_olmo", "ernie4_5_moe", "phimoe", "dbrx", "qwen3_5_moe_text",
                     "mellum", "laguna", "granitemoehybrid", "jamba", "minimax", "granitemoe_swa", "jetmoe")


def mixer_kinds(f: Fields, types: Any, n_layers: int, kinds: dict[str, str], wording: str) -> list[str]:
    """A config's per-layer list (layer_types) mapped through `kinds` (its names -> the tree's mixer
    kinds): one entry per layer, each a known name, else one ConfigError naming `wording`."""
    if (not isinstance(types, list) or len(types) != n_layers
            or any(not isinstance(t, str) or t not in kinds for t in types)):
        raise ConfigError(f"{f.source}: layer_types must give {wording} for each of the "
                          f"{n_layers} layers, got {show(types)}.")
    return [kinds[t] for t in types]


def attention_layer_types(f: Fields, types: Any, n_layers: int,
                          names: tuple[str, str] = ("sliding_attention", "full_attention")) -> list[str]:
    """A config's layer_types list of attention kinds (sliding or full; Llama 4's chunked or full):
    one of `names` for each layer, else one ConfigError listing them."""
    if (not isinstance(types, list) or len(types) != n_layers
            or any(not isinstance(t, str) or t not in names for t in types)):
        raise ConfigError(f"{f.source}: layer_types must list {names[0]} or {names[1]} "
                          f"for each of the {n_layers} layers.")
    return types


def check_router_loss(f: Fields, model_type: str) -> None:
    """Refuse output_router_logits where the class adds the router's load-balancing loss in training."""
    if model_type in ROUTER_LOSS_TYPES and f.get("output_router_logits", False, bool):
        raise ConfigError(f"{f.source}: output_router_logits (the router's load-balancing loss in the "
                          f"training loss) is not modelled for {model_type}.")
