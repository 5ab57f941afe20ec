"""The mixture-of-experts families of costmodel/hf_moe_extra.py (GraniteMoE as granitemoe,
GraniteMoE-shared as granitemoeshared, FlexOlmo as flex_olmo, ERNIE 4.5 MoE as ernie4_5_moe,
PhiMoE as phimoe, DBRX as dbrx, Sarvam MoE as sarvam_moe, run as glm4_moe): parameters and buffers equal to the class transformers
5.24 builds on the meta device (odd configs, each configuration class's defaults), every
`validate` row exact on the odd configs under eager and sdpa (slow), decode-step FLOPs equal to
the decode tree (slow), and the fields their code does not run refused in one line."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_estimate_refuses
from tests.family_configs import assert_fp32_rows_exact, assert_rows_exact, buffer_bytes_both
from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=3, max_position_embeddings=64)

#: Tiny, odd configs (sizes as tests/family_configs.py; head_dim 10, not hidden/heads = 8).
CONFIGS = {
    # GraniteMoE: top 3 of 5 experts of 24 (a multiple of 8: the fake grouped_mm needs 16-byte rows), q/k/v/o biases, Granite's four multipliers away
    # from 1 (the scores times 0.05, not 10**-0.5).
    "granitemoe": dict(_BASE, model_type="granitemoe", num_key_value_heads=2, head_dim=10,
                       intermediate_size=24,
                       attention_bias=True, num_local_experts=5, num_experts_per_tok=3,
                       embedding_multiplier=3.0, attention_multiplier=0.05,
                       residual_multiplier=0.2, logits_scaling=4.0, bos_token_id=None,
                       eos_token_id=None),
    # The multipliers at their default 1.0 (still run), one KV head, hidden/heads as the head
    # width, a tied head, top 1 of 4.
    "granitemoe-defaults": dict(_BASE, model_type="granitemoe", num_key_value_heads=1,
                                intermediate_size=16,
                                num_local_experts=4, num_experts_per_tok=1,
                                tie_word_embeddings=True, bos_token_id=None, eos_token_id=None),
    # GraniteMoE-shared: GraniteMoE's odd config with an ungated shared MLP of 29.
    "granitemoeshared": dict(_BASE, model_type="granitemoeshared", num_key_value_heads=2,
                             intermediate_size=16,
                             head_dim=10, num_local_experts=5, num_experts_per_tok=2,
                             shared_intermediate_size=29, embedding_multiplier=3.0,
                             attention_multiplier=0.05, residual_multiplier=0.2,
                             logits_scaling=4.0, bos_token_id=None, eos_token_id=None),
    # shared_intermediate_size 0: no shared MLP (GraniteMoeSharedDecoderLayer's shared_mlp None).
    "granitemoeshared-none": dict(_BASE, model_type="granitemoeshared", num_key_value_heads=3,
                                  intermediate_size=24,
                                  num_local_experts=4, num_experts_per_tok=2,
                                  shared_intermediate_size=0, bos_token_id=None, eos_token_id=None),
    # FlexOlmo: OLMo 2's whole-projection q/k norms and post-sublayer norms, q/k/v/o biases, top
    # 3 of 5 experts of 24, the top-k weights renormalised.
    "flex_olmo": dict(_BASE, model_type="flex_olmo", num_key_value_heads=2, head_dim=10,
                      intermediate_size=24, attention_bias=True, num_experts=5,
                      num_experts_per_tok=3, norm_topk_prob=True, pad_token_id=None,
                      eos_token_id=None),
    # Not renormalised (FlexOlmoConfig's default), one KV head, a tied head, the experts'
    # count under the mapped name (num_local_experts -> num_experts).
    "flex_olmo-plain": dict(_BASE, model_type="flex_olmo", num_key_value_heads=1,
                            intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                            tie_word_embeddings=True, pad_token_id=None, eos_token_id=None),
    # ERNIE 4.5 MoE: use_bias (q/k/v/o, the dense and shared MLPs, the head), experts on layers
    # 1 and 3 of 4 (start 1, interval 2), top 3 of 5 experts of 16 beside two shared (one MLP of
    # 32), untied.
    "ernie4_5_moe": dict(_BASE, model_type="ernie4_5_moe", num_hidden_layers=4,
                         num_key_value_heads=2, head_dim=10, use_bias=True, moe_num_experts=5,
                         moe_k=3, moe_intermediate_size=16, moe_num_shared_experts=2,
                         moe_layer_start_index=1, moe_layer_interval=2, tie_word_embeddings=False,
                         pad_token_id=None, bos_token_id=None, eos_token_id=None),
    # No biases, no shared expert, every layer from 0 with experts, a tied head, one KV head.
    "ernie4_5_moe-plain": dict(_BASE, model_type="ernie4_5_moe", num_key_value_heads=1,
                               moe_num_experts=4, moe_k=2, moe_intermediate_size=24,
                               moe_num_shared_experts=0, moe_layer_start_index=0,
                               pad_token_id=None, bos_token_id=None, eos_token_id=None),
    # PhiMoE: LayerNorms with biases, q/k/v/o biases, a head bias, top 2 (sparsemixer) of 5
    # experts of 24.
    "phimoe": dict(_BASE, model_type="phimoe", num_key_value_heads=2, head_dim=10,
                   intermediate_size=24, attention_bias=True, lm_head_bias=True,
                   num_local_experts=5, num_experts_per_tok=2, bos_token_id=None,
                   eos_token_id=None),
    # No biases, one KV head, a tied head, 4 experts of 16.
    "phimoe-plain": dict(_BASE, model_type="phimoe", num_key_value_heads=1, intermediate_size=16,
                         num_local_experts=4, tie_word_embeddings=True, bos_token_id=None,
                         eos_token_id=None),
    # Sarvam MoE (Glm4MoeForCausalLM under SarvamMoEConfig): the released files' names
    # (num_experts, num_shared_experts, use_qkv_bias), RoPE on the whole head by default, per-head
    # q/k norms by default, layer 0 dense, top 3 of 8 experts of 16 in 4 groups (top 2).
    "sarvam_moe": dict(_BASE, model_type="sarvam_moe", num_key_value_heads=2, head_dim=10,
                       use_qkv_bias=True, num_experts=8, num_shared_experts=2, n_group=4,
                       topk_group=2, num_experts_per_tok=3, moe_intermediate_size=16,
                       pad_token_id=None, eos_token_id=None),
    # A partial_rotary_factor given (0.6 of 10: 6 rotated), no q/k norms, a tied head.
    "sarvam_moe-partial": dict(_BASE, model_type="sarvam_moe", num_key_value_heads=3,
                               head_dim=8, partial_rotary_factor=0.6, use_qk_norm=False,
                               n_routed_experts=4, num_experts_per_tok=2,
                               moe_intermediate_size=24, tie_word_embeddings=True,
                               pad_token_id=None, eos_token_id=None),
    # moe_layer_start_index past the last layer: no layer has experts, a dense model.
    "ernie4_5_moe-dense": dict(_BASE, model_type="ernie4_5_moe", num_key_value_heads=2,
                               head_dim=10, use_bias=True, moe_layer_start_index=5,
                               pad_token_id=None, bos_token_id=None, eos_token_id=None),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_meta_models(name):
    """The rotary buffers (inv_freq and original_inv_freq, fp32) of the bf16 meta model; ERNIE
    4.5 MoE's e_score_correction_bias is a parameter, not a buffer."""
    pytest.importorskip("transformers")
    ours, hf = buffer_bytes_both(CONFIGS[name], name)
    assert ours == hf


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name, attention):
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert_rows_exact(rows)


@pytest.mark.parametrize("model_type, expected", [
    # GraniteMoeConfig's defaults (32 layers of 8 experts of 11008, top 2, hidden 4096): 37.0B.
    ("granitemoe", 37_039_116_288),
    # GraniteMoeSharedConfig's: the same, shared_intermediate_size 0 (no shared MLP).
    ("granitemoeshared", 37_039_116_288),
    # FlexOlmoConfig's: 32 layers of 7 experts of 11008 (top 5), vocab 100352: 33.3B
    # (allenai/FlexOlmo-7x7B-1T's shape).
    ("flex_olmo", 33_270_665_216),
    # Ernie4_5_MoeConfig's: 28 layers, the first dense, 64 experts of 1536 (top 6) and two
    # shared, a tied head: 21.8B (baidu/ERNIE-4.5-21B-A3B's shape, 21B published), each MoE
    # layer's 64 e_score_correction_bias values included.
    ("ernie4_5_moe", 21_825_437_888),
    # PhimoeConfig's: 32 layers of 16 experts of 6400 (top 2), vocab 32064, no biases: 41.9B
    # (Phi-3.5-MoE's shape; 42B published).
    ("phimoe", 41_872_793_600),
    # SarvamMoEConfig's: 19 layers, the first dense, 128 experts of 1024 (top 6) and one
    # shared, vocab 262144: 32.2B (sarvamai/sarvam-30b's class defaults).
    ("sarvam_moe", 32_152_648_064),
])
def test_default_config_parameters_equal_hugging_face(model_type, expected):
    """The configuration class's defaults, as its to_dict() writes them."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    assert _ours(fields, model_type) == _hf_count({"model_type": model_type}) == expected


def test_ernie_score_correction_bias_is_counted_as_a_parameter(tmp_path, monkeypatch):
    """Ernie4_5_MoeStatics registers e_score_correction_bias as an nn.Parameter
    (requires_grad False): without the score_bias_parameter fact the odd config's count is 5
    experts x 2 MoE layers short of the class's."""
    import json

    from costmodel.facts import FACTS_PATH

    fields = CONFIGS["ernie4_5_moe"]
    with_bias = _ours(fields, "e")
    rows = [row for row in json.loads(FACTS_PATH.read_text())
            if row["fact"] != "score_bias_parameter"]
    (tmp_path / "facts.json").write_text(json.dumps(rows))
    monkeypatch.setenv("COSTMODEL_FACTS", str(tmp_path / "facts.json"))
    assert with_bias - _ours(fields, "e") == 5 * 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["granitemoe", "granitemoeshared", "flex_olmo", "ernie4_5_moe",
                                  "phimoe", "sarvam_moe"])
def test_decode_step_flops_equal_the_decode_tree(name):
    """One cached decode step of the class (FlopCounterMode) against the decode tree, at three
    cache lengths."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("name", sorted(n for n in CONFIGS if not n.startswith("sarvam")))
def test_architectures_alone_name_the_model_types(name):
    """A config.json that names only `architectures` reads as its model type."""
    from costmodel.hf import from_hf_config

    fields = CONFIGS[name]
    classes = {"granitemoe": "GraniteMoeForCausalLM",
               "granitemoeshared": "GraniteMoeSharedForCausalLM",
               "flex_olmo": "FlexOlmoForCausalLM", "ernie4_5_moe": "Ernie4_5_MoeForCausalLM",
               "phimoe": "PhimoeForCausalLM"}
    bare = {k: v for k, v in fields.items() if k != "model_type"}
    bare["architectures"] = [classes[fields["model_type"]]]
    assert from_hf_config(bare, name=name) == from_hf_config(fields, name=name)


@pytest.mark.parametrize("fields, words", [
    (dict(CONFIGS["granitemoe"], hidden_act="gelu"), "unsupported hidden_act 'gelu' for granitemoe"),
    (dict(CONFIGS["granitemoe"], num_experts_per_tok=6),
     "num_experts_per_tok (6) is more than num_local_experts (5)"),
    (dict(CONFIGS["granitemoe"], num_local_experts=0), "num_local_experts must be at least 1, got 0"),
    (dict(CONFIGS["granitemoeshared"], shared_intermediate_size=-1),
     "shared_intermediate_size must be at least 0, got -1"),
    (dict(CONFIGS["flex_olmo"], num_experts_per_tok=6), "num_experts_per_tok (6) is more than num_experts (5)"),
    (dict(CONFIGS["flex_olmo"], hidden_act="relu"), "unsupported hidden_act 'relu' for flex_olmo"),
    (dict(CONFIGS["phimoe"], num_experts_per_tok=3), "its sparsemixer router always chooses 2"),
    (dict(CONFIGS["phimoe"], num_local_experts=1), "num_local_experts must be at least 2, got 1"),
    (dict(CONFIGS["ernie4_5_moe"], moe_k=6), "moe_k (6) is more than moe_num_experts (5)"),
    (dict(CONFIGS["ernie4_5_moe"], moe_num_experts=[5, 5]), "field 'moe_num_experts' must be an integer"),
    (dict(CONFIGS["ernie4_5_moe"], moe_layer_interval=0), "moe_layer_interval must be at least 1, got 0"),
])
def test_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["granitemoe", "granitemoeshared", "flex_olmo", "ernie4_5_moe",
                                  "ernie4_5_moe-plain", "phimoe"])
def test_every_validate_row_is_exact_in_fp32_on_real_tensors(name):
    """fp32 on the CPU (real tensors: the fake grouped_mm takes only bf16), where validate adds
    torch.profiler's count of the training matmul FLOPs as a second, independent measurement;
    in fp32 the fp32 router copies (ERNIE 4.5 MoE) and casts (GraniteMoE) are no copies."""
    pytest.importorskip("transformers")
    assert_fp32_rows_exact(CONFIGS[name], name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["granitemoe-defaults", "flex_olmo-plain", "ernie4_5_moe-plain",
                                  "phimoe-plain"])
def test_one_kv_head_at_batch_one_is_exact(name):
    """One KV head at b = 1, where repeat_kv's expand + reshape stays a view
    (facts.repeat_kv_view_for_mqa): every validate row, bf16 eager."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=1, dtype="bf16", gen_tokens=2), target="hf")
    assert [row for row in rows if row.difference != 0] == []


#: DBRX's odd configs (its own field names, attention and experts nested). Measured on real
#: tensors on the CPU: DbrxExperts loops over nonzero(), which FakeTensorMode cannot run.
DBRX = {
    # Top 3 of 5 experts of 24, two KV heads, clip_qkv 8, weights divided by their 1-norm.
    "dbrx": dict(model_type="dbrx", d_model=48, n_heads=6, n_layers=3, max_seq_len=64,
                 vocab_size=99, attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=10000.0),
                 ffn_config=dict(ffn_hidden_size=24, moe_num_experts=5, moe_top_k=3)),
    # One KV head, a tight clamp, attention dropout, top 1 of 4, the weights not divided.
    "dbrx-mqa": dict(model_type="dbrx", d_model=48, n_heads=6, n_layers=3, max_seq_len=64,
                     vocab_size=99,
                     attn_config=dict(kv_n_heads=1, clip_qkv=0.5, rope_theta=10000.0, attn_pdrop=0.1),
                     ffn_config=dict(ffn_hidden_size=16, moe_num_experts=4, moe_top_k=1,
                                     moe_normalize_expert_weights=None)),
}


@pytest.mark.parametrize("name", sorted(DBRX))
def test_dbrx_parameters_and_buffers_equal_hugging_face(name):
    pytest.importorskip("transformers")
    assert _ours(DBRX[name], name) == _hf_count(DBRX[name])
    ours, hf = buffer_bytes_both(DBRX[name], name)
    assert ours == hf


def test_dbrx_released_shape():
    """databricks/dbrx-instruct's shape (40 layers, d_model 6144, 48 heads, 8 KV heads, 16
    experts of 10752, top 4, vocab 100352): 131,596,523,520 parameters and 36,469,708,800
    active, Databricks' published 132B total and 36B active."""
    pytest.importorskip("transformers")
    from costmodel import estimate

    fields = dict(model_type="dbrx", d_model=6144, n_heads=48, n_layers=40, max_seq_len=32768,
                  vocab_size=100352, attn_config=dict(kv_n_heads=8, clip_qkv=8, rope_theta=500000),
                  ffn_config=dict(ffn_hidden_size=10752, moe_num_experts=16, moe_top_k=4))
    assert _ours(fields, "dbrx") == _hf_count(fields) == 131_596_523_520
    assert estimate(dict(fields, name="dbrx"), seq_len=16).to_dict()["params"]["active"] == 36_469_708_800


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("batch", [2, 1])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(DBRX))
def test_dbrx_every_validate_row_is_exact_on_real_tensors(name, attention, batch, dtype):
    """Real tensors on the CPU (the profiler's count too, eager): the fused, clamped Wqkv, the
    router's softmax and p-norm in the model's dtype (facts.router_scores_dtype) and the loop
    over the experts hit (facts.expert_dispatch "loop")."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(DBRX[name]), source=name, name=name)
    workload = Workload(seq_len=12, batch=batch, dtype=dtype, gen_tokens=2, attention=attention)
    rows = validate(cfg, workload, target="hf", device="cpu")
    assert_rows_exact(rows)


@pytest.mark.slow
def test_dbrx_decode_step_flops_equal_the_decode_tree():
    """One cached decode step of DbrxForCausalLM on real fp32 tensors (FlopCounterMode) against
    the decode tree, at three (batch, prompt, generated) points."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from torch.utils.flop_counter import FlopCounterMode

    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import run_with_cache

    config = DBRX["dbrx"]
    cfg = from_hf_config(config, name="odd")
    decode = CostModel(cfg, profile_for(cfg), phase="decode")
    torch.manual_seed(0)
    model = build_hf_from_dict(dict(config), dtype=torch.float32)
    model.eval()
    for b, n, gen in ((2, 10, 2), (1, 2, 0), (1, 3, 4)):
        cache = run_with_cache(model, family_inputs(config, b, n), gen)
        step = {"input_ids": torch.ones(b, 1, dtype=torch.long), "cache": cache, "use_cache": True}
        with FlopCounterMode(display=False) as counter:  # grad on: under no_grad the module
            model(**step)  # tracker fails on DbrxExperts' views of its weights
        measured = counter.get_total_flops()
        subs = values(cfg, Workload(seq_len=n, batch=b, dtype="fp32"))
        subs[next(s for s in subs if s.name == "c")] = n + gen + 1  # the keys it attends to
        assert measured == exact(decode.total("flops_matmul"), subs), (b, n, gen)


def test_dbrx_architectures_alone_name_the_model_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in DBRX["dbrx"].items() if k != "model_type"}
    bare["architectures"] = ["DbrxForCausalLM"]
    assert from_hf_config(bare, name="d") == from_hf_config(DBRX["dbrx"], name="d")


def _dbrx(attn=None, ffn=None, **top):
    base = DBRX["dbrx"]
    return {**base, "attn_config": dict(base["attn_config"], **(attn or {})),
            "ffn_config": dict(base["ffn_config"], **(ffn or {})), **top}


@pytest.mark.parametrize("fields, words", [
    (_dbrx(attn=dict(clip_qkv=None)), "clip_qkv is null"),
    (_dbrx(attn=dict(rope_theta=None)), "attn_config has no rope_theta"),
    (_dbrx(ffn=dict(moe_jitter_eps=-0.01)), "moe_jitter_eps must be null or at least 0"),
    (_dbrx(ffn=dict(ffn_act_fn={"name": "gelu"})), "unsupported ffn_act_fn 'gelu' for dbrx"),
    (_dbrx(resid_pdrop=0.1), "resid_pdrop"),
    (_dbrx(tie_word_embeddings=True), "tie_word_embeddings is not supported for DBRX"),
    (_dbrx(ffn=dict(moe_top_k=6)), "moe_top_k (6) is more than moe_num_experts (5)"),
    (_dbrx(attn_config=[1]), "attn_config must be an object"),
])
def test_dbrx_what_the_code_does_not_run_is_refused_in_one_line(fields, words, tmp_path, capsys):
    assert_estimate_refuses(fields, words, tmp_path, capsys)


def test_dbrx_validate_under_fake_tensors_is_one_line(tmp_path, capsys):
    """DbrxExperts loops over nonzero(), which FakeTensorMode cannot run: validate's default
    device is refused in one line that names --device cpu."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(DBRX["dbrx"]))
    code, out, err = run_main(["validate", "--config", str(path), "--seq-len", "12"], capsys)
    assert code == 2 and err.count("\n") == 1 and "use --device cpu" in err, err
