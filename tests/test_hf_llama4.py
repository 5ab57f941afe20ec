"""Llama 4's language model (model_type llama4_text, Llama4ForCausalLM) against transformers 5.24.

Odd configs in the sizes of tests/family_configs.py (hidden 48, 6 heads, 2 KV heads of 10, vocab
99, dense MLP 37, experts 24 wide: a multiple of 8 as the other MoE families' tests use), each
exercising what differs from Llama: NoPE layers every second layer (temperature tuning on them),
chunked attention of 5 on the RoPE layers (the cache keeps 5 of 14 tokens there), the weightless
L2 qk norm, every token through every one of 5 experts with a shared one, dense layers
interleaved with expert layers (Maverick's layout, every NoPE layer an expert layer).
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.published import CARDS, FLAGSHIPS, LLAMA4_VISION, PUBLISHED_ACTIVE

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2, head_dim=10,
             intermediate_size=24, intermediate_size_mlp=37, num_hidden_layers=5,
             max_position_embeddings=64, model_type="llama4_text", num_local_experts=5,
             attention_chunk_size=5, no_rope_layer_interval=2, pad_token_id=None)

LLAMA4_CONFIGS = {
    # Scout's layout: experts in every layer, qk norm, temperature tuning on the NoPE layers 1, 3
    "scout_like": dict(_BASE, interleave_moe_layer_step=1),
    # Maverick's: experts in every second layer from layer 1 (1 and 3, the NoPE layers), dense
    # layers of 37 between them, no qk norm
    "maverick_like": dict(_BASE, interleave_moe_layer_step=2, use_qk_norm=False),
    # no experts at all, listed no_rope_layers, no temperature tuning, biases, top 2 routing unused
    "dense": dict(_BASE, moe_layers=[], no_rope_layers=[1, 0, 1, 1, 0],
                  attn_temperature_tuning=False, attention_bias=True),
    # experts listed, no chunking (the RoPE layers attend to every key), RoPE on every layer
    "unchunked": dict(_BASE, moe_layers=[0, 2, 3], no_rope_layers=[1, 1, 1, 1, 1],
                      attention_chunk_size=None, num_experts_per_tok=2),
}


def _hf_count(fields: dict) -> int:
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert type(model).__name__ == "Llama4ForCausalLM"
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", sorted(LLAMA4_CONFIGS))
def test_llama4_parameters_equal_the_meta_model(name):
    pytest.importorskip("transformers")
    from costmodel import estimate

    fields = LLAMA4_CONFIGS[name]
    total = estimate(dict(fields, name=name), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count(fields)


def test_llama4_default_config_parameters_equal_the_meta_model():
    """Llama4TextConfig()'s defaults (Scout's shape) as its to_dict()."""
    transformers = pytest.importorskip("transformers")
    from costmodel import estimate

    fields = transformers.AutoConfig.for_model("llama4_text").to_dict()
    total = estimate(dict(fields, name="llama4"), seq_len=16).to_dict()["params"]["total"]
    assert total == _hf_count({"model_type": "llama4_text"}) == FLAGSHIPS["llama4-scout"]


def test_llama4_layers_follow_the_config():
    """Which layers have experts, RoPE and chunks, as Llama4TextConfig resolves them."""
    from costmodel.hf import from_hf_config
    from costmodel.presets import load_preset

    scout = load_preset("llama4-scout")
    assert (scout.n_experts, scout.top_k, scout.d_expert, scout.d_shared, scout.router) == \
        (16, 1, 8192, 8192, "sigmoid_topk")
    assert (scout.nope_layers, scout.sliding_window, scout.window_layers) == (12, 8192, 36)
    assert scout.qk_l2_norm and scout.nope_temperature and not scout.renormalize_top_k
    assert [i for i in range(48) if scout.layer_kind_at("decoder", i) == "full"] == list(range(3, 48, 4))
    assert scout.nope_full_layers  # its chunks on the RoPE layers, as EXAONE 4's windows
    assert [i for i in range(48) if scout.layer_slides(i)] == [i for i in range(48) if (i + 1) % 4]
    maverick = load_preset("llama4-maverick")
    assert (maverick.n_experts, maverick.n_dense_layers, maverick.d_ff, maverick.nope_layers) == (128, 24, 16384, 12)
    kinds = [maverick.layer_kind_at("decoder", i) for i in range(48)]
    assert kinds[:8] == ["dense", "moe", "dense", "moe_nope", "dense", "moe", "dense", "moe_nope"]
    assert not maverick.qk_l2_norm
    assert maverick.layer_pattern == maverick.replace(layer_pattern=None).layer_pattern  # the rule
    dense = from_hf_config(LLAMA4_CONFIGS["dense"], name="d")
    assert not dense.moe and dense.layer_pattern == ("sliding", "full", "sliding", "sliding", "full")
    unchunked_nope = from_hf_config(dict(LLAMA4_CONFIGS["dense"], attention_chunk_size=None), name="n")
    assert unchunked_nope.layer_pattern == ("rope", "nope", "rope", "rope", "nope")
    unchunked = from_hf_config(LLAMA4_CONFIGS["unchunked"], name="u")
    assert unchunked.sliding_window is None and unchunked.nope_layers == 0
    assert unchunked.layer_pattern == ("moe", "dense", "moe", "moe", "dense")


def test_llama4_cards_count_the_vision_encoder_too():
    """The model cards' totals are the multimodal model's: the language model plus the vision
    encoder and projector, within the cards' rounding; active is the language model's."""
    for name in ("llama4-scout", "llama4-maverick"):
        total, active, unit, _source = CARDS[name]
        assert abs(FLAGSHIPS[name] + LLAMA4_VISION - total) < unit
        assert abs(PUBLISHED_ACTIVE[name] - active) < unit
    assert abs(FLAGSHIPS["llama4-scout"] - CARDS["llama4-scout"][0]) >= CARDS["llama4-scout"][2]


@pytest.mark.slow
def test_llama4_vision_encoder_is_the_difference_of_the_classes():
    """Llama4ForConditionalGeneration (the released vision_config, 34 layers of 1,408) less
    Llama4ForCausalLM, both from a one-layer text_config: LLAMA4_VISION."""
    import torch
    transformers = pytest.importorskip("transformers")

    text = dict(model_type="llama4_text", num_hidden_layers=1, vocab_size=202048)
    vision = dict(model_type="llama4_vision_model", hidden_size=1408, intermediate_size=5632,
                  num_hidden_layers=34, num_attention_heads=16, image_size=336, patch_size=14,
                  vision_output_dim=4096, projector_input_dim=4096, projector_output_dim=4096,
                  pixel_shuffle_ratio=0.5)
    config = transformers.Llama4Config(text_config=text, vision_config=vision)
    with torch.device("meta"):
        both = transformers.Llama4ForConditionalGeneration(config)
    assert sum(p.numel() for p in both.parameters()) - _hf_count(text) == LLAMA4_VISION


@pytest.mark.parametrize("change, words", [
    (dict(no_rope_layers=[0, 0, 0, 0, 0]), "leaves no layer with RoPE"),
    (dict(no_rope_layers=[1, 2, 1, 1, 1]), "no_rope_layers must give 1 (RoPE) or 0"),
    (dict(no_rope_layers=[1, 0]), "no_rope_layers must give 1 (RoPE) or 0"),
    (dict(moe_layers=[0, 2]), "NoPE layer without experts"),
    (dict(hidden_act="gelu"), "unsupported hidden_act"),
    (dict(layer_types=["full_attention", "chunked_attention", "full_attention", "full_attention",
                       "full_attention"]), "chunked attention on layers other than the RoPE layers"),
    (dict(interleave_moe_layer_step=0), "interleave_moe_layer_step"),
    (dict(attn_temperature_tuning="yes"), "attn_temperature_tuning"),
])
def test_llama4_config_it_does_not_model_is_one_line(change, words, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LLAMA4_CONFIGS["scout_like"], **change)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error:") and words in err


def test_llama4_multimodal_wrapper_reads_its_text_config(tmp_path, capsys):
    """A Llama4ForConditionalGeneration config.json (model_type llama4) is read as its language
    model: a bare llama4_text takes Llama4TextConfig's defaults, Scout's shapes (the preset's count;
    tests/test_hf_multimodal.py checks the tying against the classes)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama4", "text_config": {"model_type": "llama4_text"}}))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == FLAGSHIPS["llama4-scout"] == 107_769_861_120


def _tree_counts(fields: dict, leaf_name: str, batch: int, seq: int) -> int:
    """Runs of one leaf per forward (its count summed over the kinds of layer)."""
    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    cfg = from_hf_config(fields, name="m")
    values = {getattr(S, name): value for name, value in cfg.dimensions().items()}
    values.update({S.b: batch, S.n: seq, S.T: 0})
    return sum(int(leaf.count.subs(values)) for leaf in CostModel(cfg).leaves if leaf.name == leaf_name)


@pytest.mark.parametrize("name", ["scout_like", "maverick_like"])
def test_llama4_rope_qk_norm_and_temperature_run_where_the_class_runs_them(name):
    """The validate rows cannot see RoPE, the weightless qk norm or the temperature (kept bytes
    aside): the layers where Llama4TextAttention applies each in one forward of the real class
    are the runs of the tree's rope, qk_norm and temperature leaves."""
    transformers = pytest.importorskip("transformers")
    import torch
    from transformers.models.llama4 import modeling_llama4

    fields = LLAMA4_CONFIGS[name]
    model = modeling_llama4.Llama4ForCausalLM(transformers.AutoConfig.for_model(**fields)).eval()
    calls = {"rope": 0, "qk_norm": 0}
    original = modeling_llama4.apply_rotary_emb

    def counting(*args, **kwargs):
        calls["rope"] += 1
        return original(*args, **kwargs)

    for layer in model.model.layers:
        if hasattr(layer.self_attn, "qk_norm"):  # called on the queries, then on the keys
            layer.self_attn.qk_norm.register_forward_hook(
                lambda *_: calls.__setitem__("qk_norm", calls["qk_norm"] + 1))
    tuned = sum(layer.self_attn.attn_temperature_tuning and not layer.self_attn.use_rope
                for layer in model.model.layers)
    modeling_llama4.apply_rotary_emb = counting
    try:
        with torch.no_grad():
            model(input_ids=torch.arange(6).reshape(1, 6))
    finally:
        modeling_llama4.apply_rotary_emb = original
    assert calls["rope"] == _tree_counts(fields, "rope", 1, 6) == 3
    assert calls["qk_norm"] == 2 * _tree_counts(fields, "qk_norm", 1, 6)
    assert tuned == _tree_counts(fields, "temperature", 1, 6) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LLAMA4_CONFIGS))
def test_llama4_is_exact_on_every_validate_row(name):
    """Eager attention, b 2, n 12, bf16, 2 generated tokens (tests/family_configs.odd_config_rows)."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(LLAMA4_CONFIGS[name], name)
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs", "bytes saved for backward",
            "KV-cache bytes", "silu elements", "softmax elements"} <= {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []


@pytest.mark.slow
def test_llama4_is_exact_in_fp32_where_its_rope_table_is_complex():
    """fp32, b 1, n 7 on the CPU: freqs_cis is complex64 (4 n d_h bytes kept) whatever the
    dtype, which a cos/sin pair in the activation dtype matches in bf16 only; the experts' bmm
    runs in fp32 on the CPU (not under FakeTensorMode, which refuses MoE outside bf16)."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(LLAMA4_CONFIGS["maverick_like"]), source="m", name="m")
    rows = validate(cfg, Workload(seq_len=7, batch=1, dtype="fp32", gen_tokens=2), target="hf",
                    device="cpu")
    assert "bytes saved for backward" in {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama4-scout", "llama4-maverick"])
def test_llama4_presets_flops_and_cache_equal_the_class(name):
    """The full-size presets under FakeTensorMode at n = 64 (the chunk of 8,192 not reached)."""
    pytest.importorskip("transformers")
    import torch
    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from costmodel.presets import PRESET_DIR, load_preset
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.hf_models import fake_mode
    from validate.measure import count_parameters, kv_cache_bytes, matmul_flops

    config = {k: v for k, v in json.loads((PRESET_DIR / f"{name}.json").read_text()).items()
              if not k.startswith("_") and k != "torch_dtype"}
    estimate = Estimate(load_preset(name), Workload(seq_len=64, batch=1, dtype="bf16"))
    with fake_mode():
        model = build_hf_from_dict(config, dtype=torch.bfloat16)
        assert count_parameters(model) == FLAGSHIPS[name] == estimate.total("params")
        flops = matmul_flops(model, family_inputs(config, 1, 64, labels=True), backward=True)
        assert flops.forward == estimate.total("flops_matmul")
        assert flops.backward == estimate.total("flops_matmul_backward")
        model.eval()
        assert kv_cache_bytes(model, family_inputs(config, 1, 64)) == estimate.memory_numbers()["kv_cache"]


def test_llama4_engines_route_the_experts_transformers_runs_on_every_token():
    """transformers' Llama4TextExperts runs every token through all E experts (facts
    experts_every_token); a paged engine's profile (serving_profile, Profile.routed_experts) runs
    its top k: E / k times fewer expert FLOPs, the same parameters, the same active ones."""
    from costmodel import blocks as B
    from costmodel import symbols as S
    from costmodel.presets import load_preset
    from costmodel.serving.profile import serving_profile
    from costmodel.tree import CostModel, model_values, profile_for

    cfg = load_preset("llama4-scout")
    values = {**{k: v for k, v in model_values(cfg).items()}, S.b: 1, S.n: 64, S.e: 2}

    def experts(profile):
        leaves = [leaf for leaf in CostModel(cfg, profile, phase="prefill").leaves if leaf.name == "experts"]
        return ({type(leaf.block) for leaf in leaves},
                sum(int((leaf.count * leaf.cost.flops_matmul).subs(values)) for leaf in leaves),
                sum(int((leaf.count * leaf.cost.params).subs(values)) for leaf in leaves),
                sum(int((leaf.count * leaf.cost.active_params).subs(values)) for leaf in leaves))

    hf_kinds, hf_flops, hf_params, hf_active = experts(profile_for(cfg))
    engine_kinds, engine_flops, engine_params, engine_active = experts(serving_profile(cfg))
    assert hf_kinds == {B.EveryTokenExperts} and engine_kinds == {B.Experts}
    assert hf_flops == cfg.n_experts // cfg.top_k * engine_flops == 48 * 2 * 64 * 16 * 3 * 5120 * 8192
    assert (hf_params, hf_active) == (engine_params, engine_active)
    hf_only = serving_profile(cfg, routed_experts=False)  # transformers' own continuous batching
    assert experts(hf_only)[0] == {B.EveryTokenExperts}


@pytest.mark.parametrize("name, pattern", [("llama4-scout", ("sliding", "full")),
                                           ("llama4-maverick", ("dense", "moe_nope"))])
def test_llama4_tiny_member_keeps_its_layer_kinds(name, pattern):
    """report's tiny member (2 layers) of a preset with NoPE layers keeps one NoPE layer, the
    last (it had 12 of 2 layers: a ConfigError before any figure)."""
    from costmodel.presets import load_preset
    from reports.measured import tiny

    small = tiny(load_preset(name))
    assert (small.n_decoder_layers, small.nope_layers, small.layer_pattern) == (2, 1, pattern)
    assert small.nope_full_layers and small.layer_slides(0) and not small.layer_slides(1)


@pytest.mark.parametrize("n, w", [(37, 5), (40, 5), (4, 5), (300, 64)])
def test_llama4_chunked_kernel_runs_each_query_from_its_chunk(n, w):
    """A kernel that skips what Llama 4's chunked mask hides: query p (from 0) attends p mod w + 1
    keys. The tree's "windowed" variant counts those pairs (a sliding window: min(p + 1, w)), and
    the fused call's executed pairs, at a block of one query, are the same count; at blocks of
    16 they start at the first query's chunk."""
    from costmodel import symbols as S
    from costmodel.blocks import AttentionScores
    from costmodel.kernel_shapes import AttentionCall

    exact = sum(p % w + 1 for p in range(n))
    sliding = sum(min(p + 1, w) for p in range(n))
    values = {S.b: 1, S.h: 1, S.w: w}
    chunked = AttentionScores(S.n, S.n, causal=True, windowed=True, chunked=True)
    window = AttentionScores(S.n, S.n, causal=True, windowed=True)
    assert chunked.windowed_pairs.subs({**values, S.n: n}) == exact
    assert window.windowed_pairs.subs({**values, S.n: n}) == sliding
    call = AttentionCall(1, 1, n, n, 8, True, w, chunked=True)
    assert call.executed_pairs(1) == exact
    blocks = sum(min(-(-min(s + 16, n) // 16) * 16, n) - (s // w * w) // 16 * 16
                 for s in range(0, n, 16) for _ in range(min(s + 16, n) - s))
    assert call.executed_pairs(16) == blocks


def test_llama4_chunks_halve_the_windowed_kernels_attention_at_long_prompts():
    """Scout at 131,072 tokens: the windowed kernel's forward with chunks of 8,192 on the 36
    RoPE layers is below the same model's with sliding windows of 8,192 by 36 layers' difference
    of pairs, w (w - 1) / 2 per chunk boundary passed; the eager FLOPs (every score) are equal."""
    import warnings

    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from costmodel.presets import load_preset

    cfg = load_preset("llama4-scout")
    assert cfg.chunked_window
    n, w = 131072, 8192
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunk = Estimate(cfg, Workload(seq_len=n)).to_dict()["flops"]
        slide = Estimate(cfg.replace(chunked_window=False), Workload(seq_len=n)).to_dict()["flops"]
    assert chunk["forward"] == slide["forward"]
    pairs = (n * w - w * (w - 1) // 2) - (n // w) * w * (w + 1) // 2  # sliding less chunked, per head
    per_pair = 2 * 2 * cfg.d_head  # Q K^T and P V
    assert slide["windowed_kernel_forward"] - chunk["windowed_kernel_forward"] == 36 * cfg.n_heads * pairs * per_pair


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scout_like", "maverick_like"])
def test_llama4_is_exact_under_sdpa(name):
    """sdpa (bf16, b 2, n 12): the chunked layers' mask reaches the CPU flash kernel once the chunk
    of 5 bites, which keeps it and K and V repeated to every head (facts sdpa_mask "window", the
    same term as Mistral's windows); the NoPE layers run is_causal."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(LLAMA4_CONFIGS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2, attention="sdpa"),
                    target="hf")
    assert "bytes saved for backward" in {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []


def test_estimate_says_transformers_runs_every_expert():
    """impl hf counts every token through all routed experts (Llama4TextExperts), and says so
    with the way to the routed count; a routing framework and a model that routes (Mixtral) say
    nothing."""
    from costmodel import load_model, make_workload

    scout, mixtral = load_model("llama4-scout"), load_model("mixtral-8x7b")

    def said(cfg, impl):
        return [w for w in make_workload(cfg, seq_len=16, impl=impl)[1] if "routed experts" in w]

    assert [w for w in said(scout, "hf") if "all 16 routed experts" in w and "top 1 only" in w]
    assert not said(scout, "megatron") and not said(mixtral, "hf")
