"""Hub config.json files of 2025-2026 models (session 38; validate/FINDINGS.md "Hub config.json files of
2025-2026 models"): each one's parameter count, ours and transformers 5.24's class built from the same
file on the meta device (tests/family_configs.hf_meta_count), pinned as exact integers; Kimi K2's own
config.json (model_type "kimi_k2"), which was refused; EXAONE 4.0's without layer_types, refused in one
true line."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact, assert_saved_bytes_exact,
                                  estimated_total, hf_meta_count)
from tests.hub_configs_s38 import CONFIGS, EXAONE4_32B_NO_LAYER_TYPES, TRIMMED

#: sum(p.numel()) of AutoModelForCausalLM.from_config(file) on the meta device, transformers 5.24
#: (session 38's run: every one equal to ours)
COUNTS = {
    "apertus-70b-instruct": 70_599_864_480,
    "apertus-8b-instruct": 8_053_338_176,
    "command-a-03-2025": 111_057_580_032,
    "deepseek-v3.2-exp": 671_877_929_216,
    "ernie-4.5-0.3b": 360_748_032,
    "ernie-4.5-21b-a3b": 21_825_437_888,
    "ernie-4.5-300b-a47b": 299_484_163_264,
    "exaone-4.0-32b": 32_003_216_384,
    "falcon3-7b-instruct": 7_455_550_464,
    "gemma-3-270m": 268_098_176,
    "glm-4.5": 352_797_814_784,
    "glm-4.5-air": 106_852_245_504,
    "glm-4.6": 352_797_814_784,
    "glm-4.7-flash": 29_943_390_976,
    "granite-4.0-h-small": 31_955_679_744,
    "hunyuan-7b-instruct": 7_504_932_864,
    "hunyuan-a13b-instruct": 80_393_183_232,
    "minimax-m2": 228_689_748_992,
    "olmo-3-32b": 32_233_522_176,
    "olmo-3-7b": 7_298_011_136,
    "phi-4-mini-instruct": 3_836_021_760,
    "qwen3-4b-instruct-2507": 4_022_468_096,
    "qwen3-coder-480b-a35b-instruct": 480_154_875_392,
    "qwen3-next-80b-a3b-instruct": 79_674_391_296,
    "seed-oss-36b-instruct": 36_151_104_512,
}


def test_every_config_is_pinned():
    assert sorted(COUNTS) == sorted(CONFIGS)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_our_count_is_the_pinned_one(name):
    assert estimated_total(CONFIGS[name], name) == COUNTS[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_class_counts_the_same(name):
    pytest.importorskip("transformers")
    assert hf_meta_count(CONFIGS[name]) == COUNTS[name]


# Kimi K2: moonshotai/Kimi-K2-Instruct's config.json says model_type "kimi_k2" (remote code whose auto_map
# names configuration_deepseek.DeepseekV3Config) and architectures ["DeepseekV3ForCausalLM"]. It was
# "unsupported model_type 'kimi_k2'; supported: llama, ..." while the kimi-k2 preset, the same file with
# model_type deepseek_v3, counted 1,026,408,209,408.

def _kimi_k2() -> dict:
    from pathlib import Path

    import costmodel.presets

    preset = Path(costmodel.presets.__file__).parent / "kimi-k2.json"
    data = {k: v for k, v in json.loads(preset.read_text()).items() if not k.startswith("_")}
    return dict(data, model_type="kimi_k2", aux_loss_alpha=0.001, pretraining_tp=1, seq_aux=True, auto_map={
        "AutoConfig": "configuration_deepseek.DeepseekV3Config", "AutoModel": "modeling_deepseek.DeepseekV3Model",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"})


def test_kimi_k2_is_read_as_the_class_its_architectures_name(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_kimi_k2()))
    out = run_json(["estimate", "--config", str(path)], capsys)
    assert out["params"]["total"] == 1_026_408_209_408


@pytest.mark.slow
def test_kimi_k2_count_is_deepseek_v3s_class():
    pytest.importorskip("transformers")
    deepseek = {k: v for k, v in _kimi_k2().items() if k not in ("auto_map", "architectures")}
    assert hf_meta_count(dict(deepseek, model_type="deepseek_v3")) == 1_026_408_209_408


def test_an_unknown_type_naming_no_known_class_is_still_refused(tmp_path, capsys):
    """inclusionAI/Ling-mini-2.0: remote code of its own class, BailingMoeV2ForCausalLM."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["BailingMoeV2ForCausalLM"], "model_type": "bailing_moe_v2",
                                "hidden_size": 2048, "num_hidden_layers": 20, "vocab_size": 157184}))
    line = one_error_line(["estimate", "--config", str(path)], capsys)
    assert line.startswith(f"error: {path}: unsupported model_type 'bailing_moe_v2'; supported: llama,")


def test_an_unknown_type_without_remote_code_is_refused_whatever_its_architectures(tmp_path, capsys):
    """Review (wt38_review): the architectures rule read any unknown model_type naming a known class, so a typo
    ("lama") was estimated as llama. transformers 5.24's AutoConfig.from_pretrained loads a type it does not
    register only through auto_map's AutoConfig (remote code), else raises "does not recognize this
    architecture": Kimi K2 has one (_kimi_k2), the typo none. One line, naming the type to set."""
    kimi = {k: v for k, v in _kimi_k2().items() if k != "auto_map"}
    path = tmp_path / "config.json"
    for data, wanted in ((kimi, "deepseek_v3"), (dict(kimi, model_type="lama", architectures=["LlamaForCausalLM"]), "llama")):
        path.write_text(json.dumps(data))
        line = one_error_line(["estimate", "--config", str(path)], capsys)
        assert line.startswith(f"error: {path}: unsupported model_type {data['model_type']!r} (its architectures "
                               f"name a class of model_type {wanted!r}, but no auto_map AutoConfig reads the file")


def test_exaone4_without_layer_types_is_refused_in_one_line(tmp_path, capsys):
    """EXAONE 4.0's "LLLG" string pattern with no layer_types: transformers 5.24's Exaone4Config takes
    (i + 1) % sliding_window_pattern and raises TypeError on it, so there is no class to count against."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(EXAONE4_32B_NO_LAYER_TYPES))
    line = one_error_line(["estimate", "--config", str(path)], capsys)
    assert "without layer_types" in line and "sliding_window_pattern" in line


def test_minimax_m2s_fp8_checkpoint_is_read(tmp_path, capsys):
    """MiniMax-M2's quantization_config says "fmt": "float8_e4m3fn" (DeepSeek-V3's says "e4m3"): simulate was
    "its checkpoint's quantization_config (quant_method 'fp8') is not a format modelled here". Now fp8 in
    128 x 128 blocks, as DeepSeek-V3's: the same weight bytes as the file with DeepSeek's spelling."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["minimax-m2"]))
    args = ["simulate", "--config", str(path), "--hardware", "h100-sxm", "--prompt", "512", "--gen", "4"]
    minimax = run_json(args, capsys)["memory"]["weights"]
    quantization = dict(CONFIGS["minimax-m2"]["quantization_config"], fmt="e4m3")
    path.write_text(json.dumps(dict(CONFIGS["minimax-m2"], quantization_config=quantization)))
    assert minimax == run_json(args, capsys)["memory"]["weights"] == 230_024_049_664


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TRIMMED))
def test_trimmed_configs_cache_and_decode_flops(name):
    """Hunyuan-A13B's per-layer lists, MiniMax-M2's attn_type_list, EXAONE 4.0's and OLMo 3's layer_types,
    Gemma 3's and Command A's windows, Granite 4.0-H's and Qwen3-Next's linear mixers, GLM-4.7-Flash's latent
    attention: parameters, the cache after a prefill (b 2, n 9) and a decode step's FLOPs, each exact; the bytes
    saved for backward (eager, bf16) too, but for the Mamba-2 and Gated DeltaNet mixers', which the model
    does not measure (its warning: counted as 0)."""
    pytest.importorskip("transformers")
    fields = TRIMMED[name]
    assert estimated_total(fields, name) == hf_meta_count(fields)
    assert_cache_after_prefill_exact(fields, name, "fp32")
    assert_decode_flops_exact(fields, name)
    if name not in LINEAR_MIXERS:
        assert_saved_bytes_exact(fields, name, "bf16")


#: the trimmed configs with Mamba-2 or Gated DeltaNet layers, whose mixers' saved bytes are not modelled
LINEAR_MIXERS = ("granite-4.0-h-small (trimmed)", "qwen3-next-80b-a3b-instruct (trimmed)")
