"""A multimodal config.json (Gemma 3 4B-27B, Mistral Small 3.1, Llama 4) is read as its language
model: parameters equal to transformers' ForConditionalGeneration built on the meta device, less
its vision tower and projector, for every way the head's tying can be written."""

from __future__ import annotations

import json

import pytest

from costmodel import estimate
from costmodel.hf import from_hf_config
from tests.cli_run import run_main

TEXT = {
    "gemma3": dict(model_type="gemma3_text", hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=1000, sliding_window=64),
    "mistral3": dict(model_type="mistral", hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=1000),
    "llama4": dict(model_type="llama4_text", hidden_size=256, intermediate_size=512, intermediate_size_mlp=768,
                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=1000,
                   num_local_experts=4),
}
VISION = {
    "gemma3": dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                   num_attention_heads=2, image_size=56, patch_size=14),
    "mistral3": dict(model_type="pixtral", hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                     num_attention_heads=2, image_size=56, patch_size=14, head_dim=32),
    "llama4": dict(model_type="llama4_vision_model", hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                   num_attention_heads=2, image_size=56, patch_size=14, vision_output_dim=64, projector_input_dim=64,
                   projector_output_dim=64, pixel_shuffle_ratio=0.5),
}
#: (wrapper's tie_word_embeddings, text_config's) -> the language model's parameters, counted from
#: Gemma3/Mistral3/Llama4ForConditionalGeneration on the meta device less every parameter named
#: *vision* or multi_modal_projector* (test_counts_are_transformers_own measures them again).
#: A tied head saves vocab x d = 256,000.
COUNTS = {
    "gemma3": {(None, None): 2_029_184, (False, None): 2_285_184, (True, False): 2_029_184,
               (None, False): 2_029_184, (False, True): 2_285_184},
    "mistral3": {(None, None): 2_027_264, (False, None): 2_283_264, (None, False): 2_027_264,
                 (True, False): 2_027_264},
    "llama4": {(None, None): 9_169_152, (True, None): 9_169_152, (None, True): 8_913_152,
               (False, True): 8_913_152},
}
CASES = [(family, wrapper, text) for family, counts in COUNTS.items() for wrapper, text in counts]


def wrapper_config(family: str, wrapper_tie: bool | None, text_tie: bool | None) -> dict:
    text = dict(TEXT[family], **({} if text_tie is None else {"tie_word_embeddings": text_tie}))
    return {"model_type": family, "text_config": text, "vision_config": VISION[family],
            **({} if wrapper_tie is None else {"tie_word_embeddings": wrapper_tie})}


@pytest.mark.parametrize("family, wrapper_tie, text_tie", CASES)
def test_the_language_model_of_a_multimodal_config(family, wrapper_tie, text_tie):
    cfg = from_hf_config(wrapper_config(family, wrapper_tie, text_tie), name="m")
    assert cfg.name == "m (language model)"
    assert estimate(cfg).to_dict()["params"]["total"] == COUNTS[family][(wrapper_tie, text_tie)]


@pytest.mark.parametrize("family, wrapper_tie, text_tie", CASES)
def test_counts_are_transformers_own(family, wrapper_tie, text_tie):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    classes = {"gemma3": ("Gemma3Config", "Gemma3ForConditionalGeneration"),
               "mistral3": ("Mistral3Config", "Mistral3ForConditionalGeneration"),
               "llama4": ("Llama4Config", "Llama4ForConditionalGeneration")}[family]
    data = wrapper_config(family, wrapper_tie, text_tie)
    config = getattr(transformers, classes[0])(**{k: v for k, v in data.items() if k != "model_type"})
    with torch.device("meta"):
        model = getattr(transformers, classes[1])(config)
    language = sum(p.numel() for name, p in model.named_parameters()
                   if "vision" not in name and "multi_modal_projector" not in name)
    assert language == COUNTS[family][(wrapper_tie, text_tie)]


def test_the_command_line_reads_a_gemma3_config_file(tmp_path, capsys):
    folder = tmp_path / "gemma-3-4b-it"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(wrapper_config("gemma3", None, None)))
    code, out, err = run_main(["estimate", "--config", str(folder / "config.json"), "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["model"] == "gemma-3-4b-it (language model)"
    assert data["params"]["total"] == 2_029_184


def test_another_wrapper_still_names_its_supported_text_config(tmp_path, capsys):
    """LLaVA's language model is a Llama, but its tying and layout are not checked here: one line."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llava", "text_config": TEXT["mistral3"] | {"model_type": "llama"}}))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "'llama', which is supported" in err


def test_a_wrapper_without_a_text_config_object_is_one_line(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": None}))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "a 'gemma3' config is read as its language model, text_config, which must be an object" in err
