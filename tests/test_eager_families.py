"""The eager decoding step's ops of every family transformers' generate decodes (issue 18):
kernel_facts.json "eager_step_ops" states them for Qwen2, Mistral (with and without its window),
Qwen3, Gemma, Gemma 2, Phi-3 (with and without), Mixtral, Qwen2-MoE and Qwen3-MoE as well as
Llama; here they are counted again on each family's own tiny model (validate/generate_ops.py:
under 1 s a family once transformers is imported) and the step's total is checked on the presets."""

from __future__ import annotations

import pytest

from costmodel.eager_ops import step_ops
from costmodel.kernel_time import kernel_facts
from costmodel.presets import load_preset

FAMILIES = ("qwen2", "mistral", "qwen3", "gemma", "gemma2", "phi3", "mixtral", "qwen2_moe", "qwen3_moe",
            "mistral windowed", "phi3 windowed")


def _stated(family: str, dtype: str) -> dict[str, dict[str, int]]:
    """The stated counts in `dtype` of a family (validate/generate_ops.py's name: "FAMILY windowed" is
    the entry without a config window condition) by attention."""
    model_type, windowed = family.split()[0], family.endswith("windowed")
    return {entry["attention"]: entry["ops"][dtype] for entry in kernel_facts()["eager_step_ops"]["implementations"]
            if entry["name"] == "transformers" and entry["family"] == model_type
            and ("sliding_window" not in entry["config"]) == (windowed or model_type in ("gemma", "gemma2"))}


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_issues_its_stated_ops(family, dtype):
    """Counted again: per layer (two layers less one) and the step's own, eager at 4 and 2 KV heads
    of 4, sdpa at 2; Gemma 2 per layer kind."""
    pytest.importorskip("transformers")
    from validate.generate_ops import family_counts

    counted = family_counts(family, dtype)
    stated = _stated(family, dtype)
    assert set(stated) == {key.split()[0] for key in counted}
    for key, counts in counted.items():
        attention, kind = key.split()
        ops = dict(stated[attention])
        if kind == "sliding_attention":
            ops["per_layer"] = ops.pop("sliding_per_layer")
        ops.pop("sliding_per_layer", None)
        assert counts == ops, key


def test_a_step_is_its_layers_ops_and_its_own_in_every_family():
    """Qwen2.5-7B (28 layers, 4 KV heads of 28): eager 28 x (92 + 8) + 79, sdpa 28 x 76 + 56 (its
    biases change no count: Llama's), flash_attention_2 counted as sdpa (it runs on no CPU);
    Qwen3-8B: the q and k norms, 16 a layer; Gemma-2-9B: 21 sliding layers of 121 + 8 and 21 full
    of 119 + 8, + 113, eager only (its class takes no sdpa), flash not counted; Mistral-7B-v0.1's
    window takes the windowed counts, v0.3 Llama's; Mixtral-8x7B's router and grouped experts;
    fp32 has its own counts (fewer casts)."""
    qwen = load_preset("qwen2.5-7b-instruct")
    assert step_ops(qwen, "transformers", "bf16", "eager", "dynamic") == 28 * (92 + 8) + 79 == 2879
    assert step_ops(qwen, "transformers", "bf16", "sdpa", "dynamic") == 28 * 76 + 56 == 2184
    assert step_ops(qwen, "transformers", "bf16", "flash", "dynamic") == 2184
    assert step_ops(qwen, "transformers", "fp16", "flash", "dynamic") == 2184
    assert step_ops(qwen, "transformers", "fp32", "sdpa", "dynamic") == 28 * 72 + 51 == 2067
    assert step_ops(qwen, "transformers", "bf16", "sdpa", "static") is None
    assert step_ops(load_preset("qwen3-8b"), "transformers", "bf16", "sdpa", "dynamic") == 36 * 92 + 56 == 3368
    gemma2 = load_preset("gemma2-9b")
    assert step_ops(gemma2, "transformers", "bf16", "eager", "dynamic") == 21 * 129 + 21 * 127 + 113 == 5489
    assert step_ops(gemma2, "transformers", "bf16", "flash", "dynamic") is None
    assert step_ops(load_preset("mistral-7b"), "transformers", "bf16", "sdpa", "dynamic") == 32 * 82 + 81 == 2705
    assert step_ops(load_preset("mistral-7b-v0.3"), "transformers", "bf16", "sdpa", "dynamic") == 32 * 76 + 56
    assert step_ops(load_preset("mixtral-8x7b"), "transformers", "bf16", "sdpa", "dynamic") == 32 * 97 + 56 == 3160
    assert step_ops(load_preset("qwen3-30b-a3b"), "transformers", "bf16", "eager", "dynamic") == 48 * 135 + 79
    assert step_ops(load_preset("phi3-mini"), "transformers", "bf16", "eager", "dynamic") == 32 * 92 + 84 == 3028
    assert step_ops(load_preset("gpt2"), "transformers", "bf16", "sdpa", "dynamic") is None  # still not counted


def test_qwen25_transformers_decoding_is_host_bound_on_an_a100():
    """Qwen2.5's speed benchmark's transformers row (A100 80GB, flash-attention 2, input 1, 2,048
    generated): 2,184 ops a step at the A100 files' 7.1 us, 15.5 ms a step, above the kernels'."""
    from costmodel.hardware import load_hardware
    from costmodel.roofline import simulate_inference

    result = simulate_inference(load_preset("qwen2.5-7b-instruct"), load_hardware("a100-80gb"), prompt=1, gen=4,
                                batch=1, attention="flash", time_model="kernels")
    host = result["decode"]["host"]
    assert host["ops_per_step"] == 2184 and host["seconds_per_step"] == pytest.approx(2184 * 7.1e-6, rel=1e-12)
    assert result["decode"]["first_token"]["seconds"] == pytest.approx(2184 * 7.1e-6, rel=1e-12)
