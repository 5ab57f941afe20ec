"""How the Hugging Face classes with shared experts size them: a count of experts (n_shared_experts,
num_shared_experts, moe_num_shared_experts), each as wide as a routed one, so a shared width that is
not a whole number of experts is a model they cannot build."""

from __future__ import annotations

from costmodel.config import ModelConfig


def shared_experts(cfg: ModelConfig, model_type: str, width: int | None = None) -> int:
    """The shared experts of `cfg`'s shared width (d_shared; none: 0) at `width` each (d_expert unless
    given); a remainder: ValueError naming the model type."""
    shared, rest = divmod(cfg.d_shared or 0, cfg.d_expert if width is None else width)
    if rest:
        raise ValueError(f"model {cfg.name!r}: Hugging Face {model_type} cannot build a shared width "
                         "that is not a whole number of experts.")
    return shared
