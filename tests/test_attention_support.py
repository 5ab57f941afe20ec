"""The attention implementations each family's Hugging Face class runs (facts.json sdpa_supported,
from the class's _supports_sdpa in transformers 5.24), and every place that takes or picks an
attention following them: a typed one the class refuses is one sentence and exit 2, a framework's
default falls back as transformers itself does (sdpa if the class runs it, else eager), and under
--impl megatron the class's flags do not apply."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.defaults import class_attention, fallback_note, implied, runs_attention
from costmodel.facts import facts_for
from costmodel.hf import ARCHITECTURE_TYPES, SUPPORTED_MODEL_TYPES

#: Families whose transformers 5.24 class refuses sdpa (its _supports_sdpa False), flash_attention_2
#: (_supports_flash_attn False).
NO_SDPA = {"gemma2", "vaultgemma", "gpt_oss", "bloom", "mpt", "gpt_neo", "mamba2", "mamba", "falcon_mamba", "granite_swa", "granitemoe_swa", "xglm",
           "megatron-bert", "mimo_v2_flash", "openai-gpt", "deepseek_v4", "gpt_neox_japanese", "rwkv", "xlstm"}
NO_FLASH = {"bloom", "mpt", "t5", "llama4_text", "mamba2", "deepseek_v32", "glm_moe_dsa", "mamba", "falcon_mamba", "xglm", "doge",
            "megatron-bert", "openai-gpt", "deepseek_v4", "gpt_neox_japanese", "mllama", "rwkv", "xlstm"}
#: Model types read as another family (costmodel/hf.py): Falcon's layouts, the types run as Llama.
FAMILY_OF = {"falcon_new": "falcon", "falcon_rw": "falcon"}
#: Model types whose reader names their family otherwise (the key of their facts).
FACTS_FAMILY = {"megatron-bert": "megatron_bert", "openai-gpt": "openai_gpt"}


def _hf_class(model_type: str):
    """The transformers class AutoModelForCausalLM (else AutoModel) builds for the model type."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_MAPPING_NAMES

    name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type) or MODEL_MAPPING_NAMES[model_type]
    return getattr(transformers, name)


def _families() -> list[str]:
    """Every family a config.json can be read as: the model types that keep their name, and
    Falcon's layouts (the types run as Llama are the llama family)."""
    kept = [t for t in SUPPORTED_MODEL_TYPES if t not in ("internlm3", "exaone", "iquestcoder")]
    return [*kept, *FAMILY_OF]


#: Classes with no attention module at all, whose _supports_sdpa and _supports_flash_attn are False
#: for that reason (Mamba2ForCausalLM): the reader builds no attention layer.
NO_ATTENTION = ("mamba2",)


@pytest.mark.parametrize("family", NO_ATTENTION)
def test_a_class_without_attention_builds_no_attention_layer(family):
    from costmodel.hf import from_hf_config

    cls = _hf_class(family)
    assert (cls._supports_sdpa, cls._supports_flash_attn) == (False, False)
    cfg = from_hf_config({"model_type": family}, family)
    assert cfg.mixer_layers and cfg.n_mixer_layers("attention") == 0 and cfg.n_decoder_layers == 64


@pytest.mark.parametrize("family", _families())
def test_the_facts_are_the_class_attributes(family):
    cls = _hf_class(FAMILY_OF.get(family, family))
    key = FACTS_FAMILY.get(family, family)
    facts = facts_for("hf", key)
    assert (facts.sdpa_supported, facts.flash_supported) == (cls._supports_sdpa, cls._supports_flash_attn), family
    assert runs_attention("hf", key, "sdpa") is (family not in NO_SDPA)
    assert runs_attention("hf", key, "flash") is (family not in NO_FLASH)
    assert runs_attention("hf", key, "eager")
    # the architectures a config.json may name instead of model_type: the same flag
    import transformers

    for architecture, model_type in ARCHITECTURE_TYPES.items():
        if model_type == FAMILY_OF.get(family, family) and hasattr(transformers, architecture):
            other = getattr(transformers, architecture)
            assert (other._supports_sdpa, other._supports_flash_attn) == \
                (cls._supports_sdpa, cls._supports_flash_attn), architecture


def test_the_gemma2_class_refuses_sdpa_and_falls_back_to_eager():
    """What transformers does with Gemma 2's flag: attn_implementation='sdpa' raises, none requested
    is eager, as class_attention picks; Llama's class keeps sdpa (a tiny config on the CPU)."""
    transformers = pytest.importorskip("transformers")
    tiny = dict(vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=8)
    gemma2 = transformers.Gemma2Config(**tiny)
    with pytest.raises(ValueError, match="scaled_dot_product_attention"):
        transformers.Gemma2ForCausalLM._from_config(gemma2, attn_implementation="sdpa")
    built = transformers.Gemma2ForCausalLM._from_config(transformers.Gemma2Config(**tiny))
    assert built.config._attn_implementation == "eager" == class_attention("hf", "gemma2", "sdpa")
    llama = transformers.LlamaForCausalLM._from_config(transformers.LlamaConfig(**tiny))
    assert llama.config._attn_implementation == "sdpa" == class_attention("hf", "llama", "sdpa")


def test_defaults_follow_the_class_and_megatron_keeps_its_own():
    assert implied("deepspeed", family="gemma2") == {"impl": "hf", "attention": "eager"}
    assert implied("fsdp2", family="llama") == {"impl": "hf", "attention": "sdpa"}
    assert implied("megatron", family="gemma2") == {"impl": "megatron", "attention": "flash"}
    # Megatron-Core runs its own attention: the Hugging Face class's flag does not apply
    assert implied("fsdp2", impl="megatron", family="gemma2") == {"impl": "megatron", "attention": "sdpa"}
    assert runs_attention("megatron", "gemma2", "sdpa") and runs_attention("reference", "bloom", "sdpa")
    # Megatron's flash under Hugging Face code: what transformers picks with none requested
    assert implied("megatron", impl="hf", family="t5")["attention"] == "sdpa"  # no flash_attention_2
    assert implied("megatron", impl="hf", family="bloom")["attention"] == "eager"  # neither
    assert implied("megatron", impl="hf", family="gemma2")["attention"] == "flash"
    # a typed attention is never changed here (the model refuses it: below)
    assert implied("deepspeed", attention="sdpa", family="gemma2")["attention"] == "sdpa"
    assert fallback_note("deepspeed", None, "sdpa", "gemma2") is None
    assert fallback_note("deepspeed", None, None, "llama") is None
    assert fallback_note(None, None, None, "gemma2") is None  # eager, no framework: nothing to fall back
    note = fallback_note("fsdp2", None, None, "gemma2")
    assert note.startswith("attention eager: gemma2's") and "fsdp2's default sdpa" in note


def _estimate(args, capsys):
    code = cli.main(["estimate", *args])
    return code, *capsys.readouterr()


def test_estimate_under_deepspeed_states_gemma2s_eager(capsys):
    code, out, err = _estimate(["--model", "gemma2-2b", "--seq-len", "512", "--framework", "deepspeed",
                                "--dp", "2", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["attention"] == "eager"
    assert err.startswith("note: attention eager: gemma2's Hugging Face class has no sdpa path")
    code, out, err = _estimate(["--model", "gemma2-2b", "--seq-len", "512", "--framework", "deepspeed",
                                "--dp", "2", "--attention", "eager", "--json"], capsys)
    assert code == 0 and err == "" and json.loads(out)["inputs"]["attention"] == "eager"


@pytest.mark.parametrize("command", [
    ["estimate", "--model", "gemma2-2b", "--attention", "sdpa"],
    ["estimate", "--model", "bloom-560m", "--attention", "sdpa", "--dp", "2"],
    ["simulate", "--model", "gemma2-9b", "--attention", "sdpa"],
    ["simulate", "--model", "gemma2-9b", "--train", "--attention", "sdpa", "--dp", "8"],
])
def test_a_typed_sdpa_the_class_refuses_is_one_sentence(command, capsys):
    code = cli.main(command)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: attention 'sdpa':") and "_supports_sdpa is False" in line


def test_megatron_code_takes_sdpa_for_gemma2(capsys):
    code, out, err = _estimate(["--model", "gemma2-2b", "--seq-len", "512", "--impl", "megatron",
                                "--attention", "sdpa", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["attention"] == "sdpa"


def test_the_fit_verdict_suggests_a_kernel_the_class_runs():
    """eager's n x n matrices over 1 byte less than eager needs: Llama 2 is offered sdpa, Gemma 2
    (no sdpa) flash, BLOOM (neither) no kernel; each figure is that kernel's own training memory."""
    import dataclasses

    from costmodel.config import Workload
    from costmodel.presets import load_preset
    from costmodel.verdict import options, training_memory

    workload = Workload(seq_len=2048, batch=1, dtype="bf16")
    for name, kernel in (("llama2-7b", "sdpa"), ("gemma2-2b", "flash"), ("bloom-560m", None)):
        cfg = load_preset(name)
        needed = training_memory(cfg, workload, None)
        changes = {o.change: o.memory for o in options(cfg, workload, None, needed - 1, 1, "training",
                                                        training_memory)}
        offered = [change for change in changes if change.startswith("--attention")]
        assert offered == ([f"--attention {kernel}"] if kernel else []), name
        if kernel:
            fused = training_memory(cfg, dataclasses.replace(workload, attention=kernel), None)
            assert changes[f"--attention {kernel}"] == fused < needed
