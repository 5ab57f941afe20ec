"""Which part of a model each of Megatron-Core's recompute_modules choices reruns, and the one-line
refusal of a choice the model has nothing for (costmodel/tree.py applies the recomputation; plan
checks it before its search). Light: no sympy, so a warm plan stays without it."""

from __future__ import annotations

from .errors import ConfigError

#: Megatron-Core's recompute_modules choices and the part of the model each needs (spec.RECOMPUTES).
MODULE_NEEDS = {"layernorm-moe-act": ("routed experts", lambda cfg: bool(cfg.n_experts)),
                "layernorm-moe": ("routed experts", lambda cfg: bool(cfg.n_experts)),
                "layernorm-moe-core-attn": ("routed experts", lambda cfg: bool(cfg.n_experts)),
                "mla-up-proj": ("latent attention", lambda cfg: bool(cfg.mla))}


def check_recomputed_modules(cfg, recompute: str) -> None:
    """Refuse a module recomputation the model has nothing for (it would rerun and free nothing)."""
    if recompute in MODULE_NEEDS and not MODULE_NEEDS[recompute][1](cfg):
        part = MODULE_NEEDS[recompute][0]
        raise ConfigError(f"recompute {recompute!r} reruns Megatron-Core's modules of the {part}, and "
                          f"{cfg.name} has no {part}; use none, selective or full.")


def check_recompute_framework(recompute: str, framework: str, tp: int = 1) -> None:
    """Refuse Megatron-Core's recompute_modules choices on a framework that does not run them: DeepSpeed
    checkpoints the functions the model code hands it (deepspeed/runtime/activation_checkpointing, a
    whole layer in Hugging Face's gradient checkpointing), FSDP2 (torchtitan) a whole layer or its op
    policy (torchtitan-op); neither checkpoints the norm before the experts, the MoE layer, the
    experts' activation or latent attention's up-projections on their own; and torchtitan's op policy
    (torchtitan-op) beside any framework but FSDP2, torchtitan's; JAX's remat policies (jax_remat.py) beside
    any but FSDP2, the layout the JAX recipes are typed as, and with tensor parallelism."""
    if recompute in MODULE_NEEDS and framework != "megatron":
        raise ConfigError(f"recompute {recompute!r} is Megatron-Core's recompute_modules, which {framework} "
                          "does not run; use --framework megatron, or none, selective or full.")
    if recompute.startswith("jax-") and framework != "fsdp2":  # the JAX sources' layout: XLA's SPMD sharding as fsdp2
        raise ConfigError(f"recompute {recompute!r} is a JAX remat policy, which {framework} does not run; the JAX "
                          "recipes are laid out as --framework fsdp2 (XLA's sharding), or use none, selective or full.")
    if recompute.startswith("jax-") and tp > 1:  # costmodel/jax_remat.py: XLA reruns the collectives it needs
        raise ConfigError(f"recompute {recompute!r} is a JAX remat policy, whose rerun tensor-parallel collectives "
                          "are not modelled; use --tp 1, or none, selective or full.")
    if recompute == "torchtitan-op" and framework != "fsdp2":  # torchtitan's policy (op_checkpoint.py)
        raise ConfigError(f"recompute 'torchtitan-op' is torchtitan's selective op checkpointing (FSDP2), which "
                          f"{framework} does not run; use --framework fsdp2, or none, selective or full.")
