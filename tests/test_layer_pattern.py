"""ModelConfig.layer_pattern: which decoder layers slide and which have experts, read once from the
config.json (costmodel/hf.py) and read by every consumer (pipeline stages, the inverse mapping).

A Qwen2-MoE config with a window below max_window_layers slides layers 0, 2, ... (transformers'
rule); the counts alone put the windows on the last layers, so pipeline stages got the wrong
layers. Here each stage's layers are checked against the module list of the class transformers
builds from the same dict.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.spec import Layout

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
             intermediate_size=40, max_position_embeddings=64)
#: config.json dicts whose layers differ, each with the kinds transformers gives its layers
#: (transformers 5.24: Qwen2MoeDecoderLayer, Gemma2Config.layer_types, DeepseekV3DecoderLayer)
CASES = {
    "qwen2_moe-sparse-step": (
        dict(_BASE, model_type="qwen2_moe", num_hidden_layers=8, num_experts=4, num_experts_per_tok=2,
             moe_intermediate_size=16, shared_expert_intermediate_size=24, decoder_sparse_step=2,
             mlp_only_layers=[5]),
        ("dense", "moe", "dense", "moe", "dense", "dense", "dense", "moe")),
    "qwen2_moe-windows": (
        dict(_BASE, model_type="qwen2_moe", num_hidden_layers=8, num_experts=4, num_experts_per_tok=2,
             moe_intermediate_size=16, shared_expert_intermediate_size=24, use_sliding_window=True,
             sliding_window=4, max_window_layers=4),
        ("sliding", "full", "sliding", "full", "full", "full", "full", "full")),
    "gemma2": (
        dict(_BASE, model_type="gemma2", num_hidden_layers=7, head_dim=8, sliding_window=4),
        ("sliding", "full", "sliding", "full", "sliding", "full", "sliding")),
    "deepseek_v3": (
        dict(_BASE, model_type="deepseek_v3", num_hidden_layers=6, n_routed_experts=4,
             num_experts_per_tok=2, moe_intermediate_size=16, first_k_dense_replace=2,
             n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=4,
             qk_nope_head_dim=4, v_head_dim=8),
        ("dense", "dense", "moe", "moe", "moe", "moe")),
    "qwen2-windows-from-max-window-layers": (
        dict(_BASE, model_type="qwen2", num_hidden_layers=5, use_sliding_window=True,
             sliding_window=4, max_window_layers=3),
        ("full", "full", "full", "sliding", "sliding")),
}


@pytest.mark.parametrize("name", CASES)
def test_the_pattern_is_read_from_the_config(name):
    config, kinds = CASES[name]
    assert from_hf_config(config, name=name).layer_pattern == kinds


def test_an_explicit_layer_types_list_wins():
    config = dict(CASES["gemma2"][0], layer_types=["full_attention"] * 5 + ["sliding_attention"] * 2)
    cfg = from_hf_config(config, name="g")
    assert cfg.layer_pattern == ("full",) * 5 + ("sliding",) * 2 and cfg.n_window_layers == 2


def test_alike_layers_have_no_pattern_and_a_preset_keeps_its_own():
    assert from_hf_config(dict(_BASE, model_type="llama", num_hidden_layers=3), name="l").layer_pattern is None
    from costmodel.presets import load_preset

    assert load_preset("gemma2-9b").layer_pattern[:3] == ("sliding", "full", "sliding")
    assert load_preset("deepseek-v3").layer_pattern[:4] == ("dense", "dense", "dense", "moe")


def test_replace_keeps_the_pattern_unless_a_count_changes():
    cfg = from_hf_config(CASES["qwen2_moe-sparse-step"][0], name="q")
    assert cfg.replace(name="r").layer_pattern == cfg.layer_pattern
    fewer = from_hf_config(CASES["gemma2"][0], name="g").replace(n_decoder_layers=4, window_layers=2)
    assert fewer.layer_pattern == ("sliding", "full", "sliding", "full")  # the counts' rule again


@pytest.mark.parametrize("pattern, message", [
    (("sliding", "full"), "for each of the 7 decoder layers"),
    (("sliding",) * 7, "has 7 sliding layers, the config 4"),
    (("dense",) * 7, "must give one of sliding, full"),
])
def test_a_pattern_that_disagrees_with_the_config_is_one_sentence(pattern, message):
    cfg = from_hf_config(CASES["gemma2"][0], name="g")
    with pytest.raises(ConfigError, match=message):
        cfg.replace(layer_pattern=pattern)
    with pytest.raises(ConfigError, match="applies only where layers differ"):
        from_hf_config(dict(_BASE, model_type="llama", num_hidden_layers=2), name="l").replace(
            layer_pattern=("dense", "moe"))


def stage_kinds(name: str, pp: int) -> list[list[str]]:
    """Each pipeline stage's layers, by kind, in order (ParallelEstimate.stages)."""
    cfg = from_hf_config(CASES[name][0], name=name)
    estimate = ParallelEstimate(cfg, Workload(seq_len=8), Layout(pp=pp, microbatches=pp))
    labels = {key: kind for key, (_, kind) in estimate.structure["layers"].items()}
    return [[labels[key] for key, count in stage.kinds[0] for _ in range(count)]
            for stage in estimate.stages]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("pp", [2, 3])
def test_pipeline_stages_hold_the_layers_the_pattern_says(name, pp):
    kinds = list(CASES[name][1])
    per_stage = Layout(pp=pp, microbatches=pp).layers_per_stage(len(kinds))
    starts = [sum(per_stage[:s]) for s in range(pp)]
    expected = [sorted(kinds[start:start + n], key=kinds.index) for start, n in zip(starts, per_stage)]
    assert [sorted(stage, key=kinds.index) for stage in stage_kinds(name, pp)] == expected


@pytest.mark.measured
@pytest.mark.parametrize("name", CASES)
def test_the_expected_kinds_are_transformers_own(name):
    """The kinds above, read from the module list of the class transformers builds from the dict:
    a layer with routed experts has an `experts` module, a sliding layer's attention a window."""
    pytest.importorskip("transformers")
    import copy

    from validate.hf_families import build_hf_from_dict
    from validate.hf_models import fake_mode

    config, kinds = CASES[name]
    with fake_mode():
        model = build_hf_from_dict(copy.deepcopy(config))
    layers = model.model.layers
    if kinds[0] in ("dense", "moe"):
        read = ["moe" if any(n.endswith("experts") for n, _ in layer.mlp.named_modules()) else "dense"
                for layer in layers]
    else:
        read = ["sliding" if getattr(layer.self_attn, "sliding_window", None) else "full" for layer in layers]
    assert tuple(read) == kinds
