"""Model types transformers 5.24 runs that no block here expresses (costmodel/hf_unmodelled.py):
their config.json is one `error:` line, exit 2, naming the type and what it lacks, and what each
reason says of the class holds on the class built on the meta device from its default config."""

from __future__ import annotations

import json

import pytest

#: model_type -> words its refusal must hold.
WORDS = {
    "longcat_flash": "shortcut MoE",
}


@pytest.mark.parametrize("model_type", sorted(WORDS))
def test_refused_in_one_line_naming_what_it_lacks(model_type, tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert f"model_type {model_type!r} is not modelled" in err and WORDS[model_type] in err, err


def test_every_refused_type_is_a_causal_lm_of_transformers():
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from costmodel.hf_unmodelled import UNMODELLED_TYPES

    assert set(UNMODELLED_TYPES) == set(WORDS)
    for model_type in UNMODELLED_TYPES:
        assert model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        assert transformers.AutoConfig.for_model(model_type).model_type == model_type


def _meta(model_type: str, **fields):
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def test_what_the_reasons_say_holds_on_the_classes():
    """One layer of each default config, on the meta device."""
    pytest.importorskip("transformers")
    longcat = _meta("longcat_flash", num_layers=1).model.layers[0]
    assert len(longcat.self_attn) == 2 and len(longcat.mlps) == 2 and hasattr(longcat.mlp, "router")
