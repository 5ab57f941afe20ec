"""What a user types for a model or a GPU: a preset's name with other hyphens or case, a chat or
instruct checkpoint's Hub id that shares its base's config.json, and the product name the driver
reports for a GPU (nvidia-smi, torch.cuda.get_device_name)."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.hardware import hardware_aliases, hardware_names, load_hardware
from costmodel.presets import PRESET_DIR, load_preset, preset_names, resolve_name


@pytest.mark.parametrize("typed, preset", [
    ("Llama-2-7B", "llama2-7b"), ("llama_3_8b", "llama3-8b"), ("llama-3.1-8b", "llama3.1-8b"),
    ("Mixtral 8x7B", "mixtral-8x7b"), ("GPT-2-XL", "gpt2-xl"), ("qwen-2.5-7b", "qwen2.5-7b"),
])
def test_a_preset_answers_whatever_its_hyphens(typed, preset):
    assert resolve_name(typed) == preset


def test_dots_and_hub_ids_stay_exact():
    assert resolve_name("qwen2-57b") is None  # Qwen2-57B-A14B, not qwen2.5-7b
    assert [resolve_name(n) for n in ("llama-38b", "qwen-38b", "gemma-32-7b")] == [None] * 3  # digits stay apart
    assert resolve_name("meta-llama/llama-2-7b_hf") is None  # a Hub id matches as typed (any case)
    assert resolve_name("META-LLAMA/LLAMA-2-7B-HF") == "llama2-7b"


@pytest.mark.parametrize("hub_id, preset, params", [
    # tests/published.py FLAGSHIPS and REQUESTED: the Hugging Face classes built from the configs
    ("meta-llama/Llama-2-7b-chat-hf", "llama2-7b", 6_738_415_616),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b", 8_030_261_248),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama3.1-70b", 70_553_706_496),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b", 46_702_792_704),
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3", 671_026_404_352),
    # Llama 3.1's ids as released (the Hub renamed them Llama-3.1-*): a new user's
    # meta-llama/Meta-Llama-3.1-8B-Instruct was "cannot reach the Hugging Face Hub"
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b", 8_030_261_248),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama3.1-70b", 70_553_706_496),
])
def test_chat_and_instruct_ids_are_their_base_preset(hub_id, preset, params, capsys):
    assert resolve_name(hub_id) == preset
    assert cli.main(["estimate", "--model", hub_id, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs"]["model"] == preset and out["params"]["total"] == params


@pytest.mark.parametrize("hub_id, preset, params, context", [
    # tests/published.py REQUESTED: MistralForCausalLM and Qwen2ForCausalLM built from the presets;
    # v0.3's 32,768-token vocabulary adds 2 x 768 x 4096 = 6,291,456 to v0.1/v0.2's 7,241,732,096
    ("mistralai/Mistral-7B-Instruct-v0.2", "mistral-7b-v0.2", 7_241_732_096, 32_768),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3", 7_248_023_552, 32_768),
    ("mistralai/Mistral-7B-v0.3", "mistral-7b-v0.3", 7_248_023_552, 32_768),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct", 7_615_616_512, 32_768),
    ("Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b-instruct", 32_763_876_352, 32_768),
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b-instruct", 72_706_203_648, 32_768),
])
def test_checkpoints_whose_context_differs_have_their_own_preset(hub_id, preset, params, context, capsys):
    """Offline, by Hub id: Mistral 7B v0.2/v0.3 attend to all 32k tokens (v0.1, mistral-7b, within a
    4,096-token window) and Qwen2.5's instruct configs hold 32,768 positions (the bases 131,072)."""
    assert resolve_name(hub_id) == preset
    assert cli.main(["estimate", "--model", hub_id, "--seq-len", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs"]["model"] == preset and out["params"]["total"] == params
    cfg = load_preset(hub_id)
    assert cfg.max_positions == context and cfg.n_window_layers == 0
    if preset.startswith("qwen"):  # the base keeps its own, longer context
        assert load_preset(preset.removesuffix("-instruct")).max_positions == 131_072
    assert load_preset("mistral-7b").n_window_layers == 32  # v0.1 slides in every layer


def test_an_unknown_spelling_still_suggests():
    with pytest.raises(Exception, match="Did you mean .*llama3-8b"):
        load_preset("llama3-8b-chat")


def test_every_preset_name_is_unique_under_the_loose_match():
    from costmodel.presets import loose_key

    keys = [loose_key(name) for name in preset_names()]
    assert len(keys) == len(set(keys))
    assert (PRESET_DIR / "aliases.json").is_file()


@pytest.mark.parametrize("typed, preset", [
    ("h100", "h100-sxm"), ("H100-SXM5", "h100-sxm"), ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A100 80GB PCIe", "a100-pcie"),
    ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("rtx4090", "rtx-4090"),
    ("AMD Instinct MI300X", "mi300x"), ("nvidia_h200", "h200"),
])
def test_a_gpu_answers_to_its_short_and_driver_names(typed, preset):
    hw = load_hardware(typed)
    assert hw.name == preset and hw.memory_bytes == load_hardware(preset).memory_bytes


def test_an_ambiguous_gpu_name_is_one_line_with_the_candidates(capsys):
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "a100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a100-80gb" in err[0] and "a100-40gb" in err[0]


def test_hardware_aliases_are_data_naming_presets_once():
    aliases = hardware_aliases()
    assert set(aliases) == set(hardware_names())
    spellings = [a.casefold() for more in aliases.values() for a in more]
    assert len(spellings) == len(set(spellings)) and "h100" in spellings


def test_the_hardware_table_lists_the_aliases(capsys):
    assert cli.main(["hardware", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "NVIDIA H100 80GB HBM3" in rows["h100-sxm"]["aliases"]
    # gb200 was the one preset without an alias until session 19 gave it nvidia-smi's name, as gb300's
    assert rows["gb200"]["aliases"] == ["NVIDIA GB200", "gb200-nvl72", "dgx-gb200"]


def test_read_aliases_is_the_one_reader_of_both_names_files(tmp_path):
    """costmodel/aliases.read_aliases reads presets/aliases.json and hardware_aliases.json alike: each
    name's aliases in order, () where none, "_" keys skipped, and a key naming no preset refused."""
    from costmodel.aliases import read_aliases
    from costmodel.errors import ConfigError

    path = tmp_path / "names.json"
    path.write_text(json.dumps({"_about": "x", "b": ["B2", "b-two"], "a": ["A1"]}))
    assert read_aliases(path, ["a", "b", "c"], "widget") == {"a": ("A1",), "b": ("B2", "b-two"), "c": ()}
    with pytest.raises(ConfigError, match=r"^names\.json: 'b' is not a widget\.$"):
        read_aliases(path, ["a", "c"], "widget")
    with pytest.raises(ConfigError, match=r"^names\.json: 'b' is not a preset\.$"):
        read_aliases(path, ["a"], "preset")
