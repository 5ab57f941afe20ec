"""DeepSeek-V4 (deepseek_v4, costmodel/hf_deepseek_v4.py, costmodel/blocks/deepseek_v4.py):
hyper-connections, one shared key = value head with sinks in a sliding window, compressed sparse
(CSA, with its indexer) and heavily compressed (HCA) attention, the grouped output projection, experts
on every layer (hash-routed first). Parameters equal to DeepseekV4ForCausalLM on the meta device
(odd configs and DeepseekV4Config's defaults, V4-Flash's shapes); forward and backward matmul FLOPs
equal to FlopCounterMode (fp32, eager attention) at prompts that are and are not multiples of the
compression rates; the fields the class ignores or the tree cannot run refused in one line."""

from __future__ import annotations

import json
import re

import pytest

from tests.family_configs import estimated_total as _ours
from tests.family_configs import hf_meta_count as _hf_count

_BASE = dict(model_type="deepseek_v4", vocab_size=101, hidden_size=48, moe_intermediate_size=40,
             pad_token_id=None, bos_token_id=None, eos_token_id=None, max_position_embeddings=64)

#: Tiny, odd configs. "deepseek_v4": one layer of each kind and a second CSA (sliding window 7,
#: CSA every 4 tokens, HCA every 8), 6 heads of 24 (RoPE on 6), a query rank of 20, 3 output groups
#: of 14, an indexer of 5 x 12, 3 streams, top 2 of 5 experts, the first hash-routed.
#: "deepseek_v4-legacy": compress_ratios (HCA, sliding, CSA) with rates 5 and 3 from the legacy
#: scalar fields, 2 streams, 2 groups of 9, a tied head, 4 heads of 20 (RoPE on 4).
CONFIGS = {
    "deepseek_v4": dict(_BASE, num_hidden_layers=4, num_attention_heads=6, head_dim=24, q_lora_rank=20,
                        partial_rotary_factor=0.25, n_routed_experts=5, num_experts_per_tok=2, o_groups=3,
                        o_lora_rank=14, index_n_heads=5, index_head_dim=12, index_topk=3, sliding_window=7,
                        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
                        layer_types=["sliding_attention", "compressed_sparse_attention",
                                     "heavily_compressed_attention", "compressed_sparse_attention"],
                        mlp_layer_types=["hash_moe", "moe", "moe", "moe"], hc_mult=3),
    "deepseek_v4-legacy": dict(_BASE, num_hidden_layers=3, num_attention_heads=4, head_dim=20, q_lora_rank=11,
                               partial_rotary_factor=0.2, n_routed_experts=6, num_experts_per_tok=3, o_groups=2,
                               o_lora_rank=9, index_n_heads=3, index_head_dim=8, index_topk=2, sliding_window=5,
                               compress_ratios=[128, 0, 4], compress_rate_csa=3, compress_rate_hca=5,
                               num_hash_layers=2, hc_mult=2, tie_word_embeddings=True),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_hugging_face(name):
    pytest.importorskip("transformers")
    expected = {"deepseek_v4": 223_356, "deepseek_v4-legacy": 151_858}[name]
    assert _ours(CONFIGS[name], name) == _hf_count(CONFIGS[name]) == expected


def test_default_config_parameters_equal_hugging_face(tmp_path, capsys):
    """DeepseekV4Config's defaults (V4-Flash: 43 layers of hidden 4096, 2 HCA then CSA/HCA
    alternating, 64 heads of 512, 256 experts of 2048 top 6 and one shared): 284,325,869,015
    parameters on the meta device; `estimate --config` of a bare config.json says the same."""
    pytest.importorskip("transformers")
    from tests.cli_run import run_main

    assert _ours({"model_type": "deepseek_v4"}, "v4") == _hf_count({"model_type": "deepseek_v4"}) == 284_325_869_015
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "deepseek_v4"}))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == 284_325_869_015


def _measured(fields, b, n, backward=False):
    import torch

    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import matmul_flops

    model = build_hf_from_dict(dict(fields), dtype=torch.float32)
    return matmul_flops(model, family_inputs(fields, b, n, labels=backward), backward=backward)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("n", [5, 8, 13])
def test_forward_flops_equal_flop_counter(name, n):
    """Forward matmul FLOPs at b = 2 (fp32, eager attention, FlopCounterMode): the scores and the
    weighted sum over n + floor(n / rate) keys on compressed layers (n on sliding ones), the CSA
    indexer's scores over floor(n / m_c) compressed keys; n = 5 and 13 are no multiple of any rate."""
    pytest.importorskip("transformers")
    from tests.golden.hf_families import estimate

    fields = CONFIGS[name]
    tree = estimate(fields, 2, n, "fp32").total("flops_matmul")
    assert _measured(fields, 2, n).forward == tree
    if name == "deepseek_v4":
        assert tree == {5: 3_153_120, 8: 5_187_072, 13: 8_764_704}[n]


def test_backward_flops_equal_flop_counter():
    """Backward matmul FLOPs at b = 2, n = 13: 2x each forward product with gradients, none through
    the CSA indexer (its output is top-k indices)."""
    pytest.importorskip("transformers")
    from tests.golden.hf_families import estimate

    fields = CONFIGS["deepseek_v4"]
    assert _measured(fields, 2, 13, backward=True).backward == \
        estimate(fields, 2, 13, "fp32").total("flops_matmul_backward") == 16_713_216


def test_validate_under_fake_tensors_is_refused_in_one_line(capsys):
    """The class cannot be built under FakeTensorMode (validate's default device): one line."""
    from tests.cli_run import run_main

    code, out, err = run_main(["validate", "--model", "deepseek-v4-flash", "--seq-len", "8"], capsys)
    last = err.strip().splitlines()[-1]  # after the estimate's warnings
    assert code == 2 and last.startswith("error:") and "Traceback" not in err, err
    assert "FakeTensorMode cannot run; use --device cpu" in last, err


@pytest.mark.parametrize("change, words", [
    (dict(n_shared_experts=2), "n_shared_experts 2"),
    (dict(mlp_bias=True), "mlp_bias"),
    (dict(o_groups=5), "o_groups (5)"),
    (dict(hidden_act="gelu"), "hidden_act"),
    (dict(hc_sinkhorn_iters=10), "hc_sinkhorn_iters 10"),
    (dict(layer_types=["sliding_attention"] * 3), "layer_types"),
])
def test_refused_in_one_line(change, words, tmp_path, capsys):
    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(CONFIGS["deepseek_v4"], **change)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert words in err, err


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kv_cache_equals_what_the_class_holds(name):
    """The cache after a prefill of n and t decode steps (the estimate's generation of t + 1, n + t
    positions), bf16 and fp32, n below, at and past the rates: the window's keys (twice on a sliding
    layer, whose DynamicSlidingWindowLayer copies key and value; once on a compressed layer, K = V),
    every compressed entry, the unclosed window's kv and gate (after the prefill, slices of the whole
    prompt's projections), CSA's overlap kv and fp32 gate, the indexer's own. Measured by
    validate.measure.kv_cache_bytes (each storage once)."""
    pytest.importorskip("transformers")
    import torch

    from tests.golden.hf_families import estimate
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure.memory import kv_cache_bytes

    fields = CONFIGS[name]
    for dtype, torch_dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        model = build_hf_from_dict(dict(fields), dtype=torch_dtype).eval()
        for n in (3, 9, 16):
            for steps in (0, 1, 5):
                measured = kv_cache_bytes(model, family_inputs(fields, 2, n), steps)
                assert measured == estimate(fields, 2, n, dtype, steps + 1).memory_numbers()["kv_cache"], \
                    (dtype, n, steps)
    if name == "deepseek_v4":  # layer by layer: 2 x 1,248 + 2 x (1,248 + 9,648) + 1,248 + 2,592 (bf16)
        assert estimate(fields, 2, 13, "bf16", 1).memory_numbers()["kv_cache"] == 28_128


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_flops_equal_flop_counter(name):
    """One cached decode step (fp32, FlopCounterMode) after prompts of 2 to 15 and 0 to 4 steps: the
    new token against min(c, w) window keys plus floor(c / rate) compressed entries, CSA's scorer
    against floor(c / m_c) indexer keys."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import matmul_flops, run_with_cache

    config = CONFIGS[name]
    cfg = from_hf_config(config, name=name)
    decode = CostModel(cfg, profile_for(cfg), phase="decode")
    model = build_hf_from_dict(dict(config), dtype=torch.float32).eval()
    for b, n, steps in ((2, 10, 2), (1, 2, 0), (1, 3, 4), (2, 15, 1)):
        cache = run_with_cache(model, family_inputs(config, b, n), steps)
        step = {"input_ids": torch.ones(b, 1, dtype=torch.long), "cache": cache, "use_cache": True}
        subs = values(cfg, Workload(seq_len=n, batch=b, dtype="fp32"))
        subs[next(s for s in subs if s.name == "c")] = n + steps + 1  # the keys it attends to
        assert matmul_flops(model, step).forward == exact(decode.total("flops_matmul"), subs), (b, n, steps)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_validate_row_is_exact(name):
    """`validate` (b 2, n 12, bf16, 2 generated tokens, eager): parameters, forward, backward and
    profiler matmul FLOPs, softmax (the attention's with its sink column, one per compressor window
    over its rate or CSA's twice-its-rate slots, the hyper-connections' H_c x H_c), log-softmax, silu,
    relu (CSA's scorer) elements, the KV cache and the bytes saved for backward exact."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    workload = Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2)
    rows = {row.quantity: row for row in validate(cfg, workload, target="hf", device="cpu")}
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs", "softmax elements",
            "KV-cache bytes", "bytes saved for backward"} <= set(rows)
    assert [row for row in rows.values() if row.difference != 0] == []


#: Bytes saved for backward at b = 2 (eager), measured with validate.measure.saved_activation_bytes
#: (parameters, buffers and what the loss cannot reach, CSA's indexer, left out).
SAVED = {("deepseek_v4", "fp32"): {4: 525_220, 5: 654_532, 13: 1_736_252},
         ("deepseek_v4", "bf16"): {4: 438_980, 5: 547_812, 13: 1_467_684},
         ("deepseek_v4-legacy", "fp32"): {4: 317_300, 5: 399_620, 13: 1_054_084},
         ("deepseek_v4-legacy", "bf16"): {4: 243_540, 5: 307_236, 13: 818_932}}


@pytest.mark.parametrize("name, dtype", sorted(SAVED))
def test_saved_bytes_equal_the_class(name, dtype):
    """The tree's bytes saved for backward equal the class's, term by term as blocks/deepseek_v4.py
    states them (hyper-connections with the Sinkhorn loop's 39 divisions, the projections' fp32
    norms, the compressors' windows, the grouped output; the attention's fp32 softmax with its sink
    column; the sqrt-softplus router and the clamped SwiGLU): n = 4 closes no HCA window (rate 8,
    or 5) and one CSA window, 5 and 13 are no multiple of any rate."""
    pytest.importorskip("transformers")
    import torch

    from tests.golden.hf_families import estimate
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure.saved import saved_activation_bytes

    fields = CONFIGS[name]
    model = build_hf_from_dict(dict(fields), dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    for n, expected in SAVED[(name, dtype)].items():
        measured = saved_activation_bytes(model, family_inputs(fields, 2, n, labels=True)).total_bytes
        assert measured == estimate(fields, 2, n, dtype).total("saved_bytes") == expected, n


def test_router_hyper_connection_and_clamp_elements_equal_the_class():
    """Output elements of aten ops at b = 2, n = 13, fp32 (validate.measure.other_op_elements) beside
    the tree's element kinds: sigmoid 1,326 (the hyper-connections' pre and post, 2 x 26 x 3 each of
    8, and the head's 26 x 3; the router has none), softplus and sqrt 520 each (the router's
    sqrt(softplus) over 26 tokens x 5 experts in 4 layers), clamp 24,960 (the gate's clamp_max and
    up's clamp, 52 slots and 26 shared-expert rows of 40 in 4 layers)."""
    pytest.importorskip("transformers")
    import torch

    from tests.golden.hf_families import estimate
    from validate import measure
    from validate.hf_families import build_hf_from_dict, family_inputs

    fields = CONFIGS["deepseek_v4"]
    model = build_hf_from_dict(dict(fields), dtype=torch.float32)
    measured = measure.other_op_elements(model, family_inputs(fields, 2, 13, labels=True))
    tree = estimate(fields, 2, 13, "fp32").flops()["other_elements"]
    assert measured["aten.sigmoid"] == tree["sigmoid"] == 1_326
    assert measured["aten.softplus"] == tree["softplus"] == measured["aten.sqrt"] == tree["sqrt"] == 520
    assert measured["aten.clamp"] == tree["clamp"] + tree["clamp_max"] == 24_960


@pytest.mark.parametrize("field, value, words", [
    ("partial_rotary_factor", [], "field 'partial_rotary_factor' must be a number, got []"),
    ("partial_rotary_factor", float("inf"), "partial_rotary_factor must be a finite number, got inf"),
    ("qk_rope_head_dim", [], "field 'qk_rope_head_dim' must be an integer, got []"),
    ("attention_dropout", [], "field 'attention_dropout' must be a number, got []"),
    ("compress_ratios", [[1], 0, 4, 128], "compress_ratios must be a list of 0, 4 and 128"),
])
def test_a_malformed_field_is_one_config_error(field, value, words):
    """The full run's random configs (tests/test_robustness.py) found partial_rotary_factor [] a
    TypeError traceback (int() of a list); each malformed field is now one sentence naming it."""
    from costmodel.config import ConfigError
    from costmodel.presets import config_from_dict

    data = {"model_type": "deepseek_v4", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
            "head_dim": 32, "q_lora_rank": 16, "o_lora_rank": 16, "o_groups": 2, "n_routed_experts": 4,
            "num_experts_per_tok": 2, "moe_intermediate_size": 32, "index_n_heads": 2, "index_head_dim": 16,
            "vocab_size": 100, field: value}
    with pytest.raises(ConfigError, match=re.escape(words)):
        config_from_dict(data, name="odd", source="config.json")
