"""costmodel/spec.py is the one home of the commands' choices: every click.Choice of every
command is one of its lists, the registries that implement a choice (frameworks, schedulers, FP8
recipes, precision policies, weight formats) hold exactly its values, and the help texts that list
values name every value of their list (the drift issue 21 found: retyped lists that lost a value)."""

from __future__ import annotations

import pickle

import click

import cli
from costmodel import spec
from costmodel.config import Workload


def every_option(group: click.Group = cli.cli, prefix: str = ""):
    """(command path, option) for each option of each command, sub-commands included."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from every_option(command, f"{prefix}{name} ")
        for param in command.params:
            yield f"{prefix}{name}", param


def test_every_choice_of_every_command_is_a_spec_list():
    choices = [(path, param) for path, param in every_option() if isinstance(param.type, click.Choice)]
    assert len(choices) > 60
    lists = {tuple(value) for value in vars(spec).values() if isinstance(value, spec.Choices)}
    retyped = [f"{path} {param.opts[0]}" for path, param in choices if tuple(param.type.choices) not in lists]
    assert retyped == []


def test_each_value_has_its_meaning_and_the_phrases_read_as_sentences():
    lists = [value for value in vars(spec).values() if isinstance(value, spec.Choices)]
    assert len(lists) > 25
    for choices in lists:
        assert tuple(choices.meanings) == tuple(choices) and len(set(choices)) == len(choices)
    assert spec.RECOMPUTES.phrase() == ("none, selective (the attention core), full (each layer), deepseek "
                                        "(every norm and latent attention's up-projections), torchtitan-op "
                                        "(torchtitan's op policy: the attention kernel and every second "
                                        "(odd-numbered) matmul kept, the rest rerun), jax-dots (JAX's "
                                        "dots_saveable (Praxis SAVE_DOT_ONLY): every linear's output kept, the rest "
                                        "(norms, activations, dropout, the fused attention kernel) rerun), jax-qkv "
                                        "(JAX's save_only_these_names of MaxText's save_qkv_proj: the q, k, v "
                                        "projections kept, the rest of each layer rerun), jax-qkv-out (Praxis "
                                        "SAVE_QKV_OUT_PROJ (MaxText save_dot_except_mlp): the q, k, v and output "
                                        "projections kept, the rest of each layer rerun), layernorm-moe-act "
                                        "(Megatron-Core's recompute_modules layernorm and moe_act: the norm "
                                        "before the routed experts and their activation), layernorm-moe "
                                        "(Megatron-Core's recompute_modules layernorm and moe: the norm before the "
                                        "routed experts and the whole MoE layer (router, dispatch, experts, combine)), "
                                        "layernorm-moe-core-attn (Megatron-Core's recompute_modules layernorm, moe "
                                        "and core_attn: layernorm-moe and the attention core (as selective)) "
                                        "or mla-up-proj "
                                        "(Megatron-Core's recompute_modules mla_up_proj: latent attention's "
                                        "up-projections with their norms)")
    assert spec.OPTIMIZERS.listed() == "adamw or sgd"
    assert spec.IMPLEMENTATIONS.listed(first="hf") == "hf, reference, megatron or flash_attn"
    assert spec.KV_CACHES.described().startswith("dynamic: each decode step copies the cache")
    restored = pickle.loads(pickle.dumps(spec.ATTENTIONS))
    assert restored == spec.ATTENTIONS and restored.meanings == spec.ATTENTIONS.meanings


def test_the_registries_hold_exactly_the_spec_values():
    from costmodel import precision, quantization
    from costmodel.defaults import FRAMEWORK_CODE
    from costmodel.layout.fp8 import RECIPES
    from costmodel.layout.frameworks import FRAMEWORKS
    from costmodel.serving.schedulers import SCHEDULERS

    assert tuple(FRAMEWORKS) == spec.FRAMEWORK_NAMES and tuple(FRAMEWORK_CODE) == spec.FRAMEWORK_NAMES
    assert tuple(SCHEDULERS) == spec.SCHEDULERS
    assert tuple(RECIPES) == spec.FP8_RECIPES
    assert tuple(quantization.WEIGHT_DTYPES) == spec.WEIGHT_DTYPES
    assert set(precision.PRECISIONS) == set(spec.PRECISIONS)
    assert set(spec.OPTIMIZERS) <= set(precision.OPTIMIZERS)


def test_help_that_lists_values_names_every_value_of_its_list():
    lists = {"--impl": spec.IMPLEMENTATIONS, "--precision": spec.PRECISIONS, "--recompute": spec.RECOMPUTES,
             "--optimizer": spec.OPTIMIZERS, "--kv-cache": spec.KV_CACHES, "--mla": spec.MLA_FORMS,
             "--flops-convention": spec.FLOPS_CONVENTIONS, "--rank-by": spec.RANK_BY, "--method": spec.FINETUNE_METHODS}
    checked = 0
    for path, param in every_option():
        name = param.opts[0]
        if (path in ("estimate", "simulate") or (path, name) == ("finetune", "--method")) and name in lists:
            missing = [v for v in lists[name] if v not in param.help]
            assert missing == [], (path, name, missing)
            checked += 1
    assert checked >= 10


def test_the_workload_defaults_are_the_spec_defaults():
    workload = Workload()
    assert (workload.seq_len, workload.dtype, workload.impl, workload.attention, workload.recompute) == (
        spec.DEFAULT_SEQ_LEN, spec.DEFAULT_DTYPE, spec.DEFAULT_IMPL, spec.DEFAULT_ATTENTION, spec.DEFAULT_RECOMPUTE)
    assert (workload.optimizer, workload.precision, workload.kv_cache, workload.mla) == (
        spec.DEFAULT_OPTIMIZER, spec.DEFAULT_PRECISION, spec.DEFAULT_KV_CACHE, spec.DEFAULT_MLA)
