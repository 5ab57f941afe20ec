"""LongCat-Flash (costmodel/hf_more_types.py `_longcat_flash`: model_type "longcat_flash") against
transformers 5.24's LongcatFlashForCausalLM built from the same config dict: parameters and buffers
(LongcatFlashConfig's defaults and three odd configs), validate's rows on the CPU's real tensors (matmul
FLOPs forward and backward, the profiler's second count, other ops' elements, bytes saved for backward,
the latent cache) under eager and sdpa in bf16 and fp32, a cached decode step's and a prefill's FLOPs,
the cache after a prefill, the FLOPs under the class's own routing, and the configs refused in one line.

The routing convention: the tree counts every one of a token's moe_topk slots on a real expert (none on
the zero_expert_num identity experts, which cost no matmul): the most a token can cost. Every
measurement but the last test runs the class under that routing (validate/hf_longcat_flash.py
counted_routing: the zero experts' score-correction bias below any score); the last runs the class's
own routing and finds its FLOPs short of the tree's by exactly the slots that landed on identity experts
times one expert's FLOPs."""

from __future__ import annotations

import pytest

from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks, refused_in_one_line
from tests.family_configs import assert_rows_exact, buffer_bytes_both, estimated_total

_BASE = dict(model_type="longcat_flash", vocab_size=99, hidden_size=48, max_position_embeddings=64,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # 2 layers (4 of the tree's), 4 heads of 6 + 4 against values of 7, query rank 20, latent 12; top 3 of
    # 5 experts of 16 beside 2 zero experts; MLPs of 37
    "longcat_flash": dict(_BASE, num_attention_heads=4, num_layers=2, ffn_hidden_size=37, q_lora_rank=20,
                          kv_lora_rank=12, qk_nope_head_dim=6, qk_rope_head_dim=4, head_dim=4, v_head_dim=7,
                          moe_topk=3, n_routed_experts=5, zero_expert_num=2, expert_ffn_hidden_size=16),
    # no zero experts, one layer, tied, dropout on the probabilities (sdpa's math path), top 2 of 4
    "longcat_flash-no-zero": dict(_BASE, num_attention_heads=3, num_layers=1, ffn_hidden_size=24, q_lora_rank=16,
                                  kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=6, head_dim=6, v_head_dim=5,
                                  moe_topk=2, n_routed_experts=4, zero_expert_num=0, expert_ffn_hidden_size=8,
                                  tie_word_embeddings=True, attention_dropout=0.1),
    # more zero experts than real ones (6 beside 3, top 2), 3 layers, the mapped names of the sizes
    "longcat_flash-mostly-zero": dict(_BASE, num_attention_heads=2, num_layers=3, intermediate_size=29,
                                      q_lora_rank=12, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=2,
                                      head_dim=2, v_head_dim=6, num_experts_per_tok=2, num_local_experts=3,
                                      zero_expert_num=6, moe_intermediate_size=24),
}

# bytes saved: eager here; sdpa's (the CPU's math path: the value heads are narrower than the query and
# key heads) in the validate rows, which estimate as measured on the CPU
CHECKS = family_checks(CONFIGS, ids={"bytes_saved_for_backward": ("dtype", "name")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts, the meta models' (transformers 5.24). The first's shortcut MoE: a classifier of
    7 x 48, gate_up of 7 x 32 x 48 (the 2 zero experts' rows allocated, never run), down 5 x 48 x 16."""
    assert_counts_exact(CONFIGS, [79_216, 120_792, 23_392])


def test_class_defaults():
    """LongcatFlashConfig() (28 layers of d 6,144, 512 experts of 2,048 beside 256 zero experts, top 12):
    741,053,585,408 parameters, ours and the meta model's; of them 256 x 2 x 2,048 x 6,144 x 28 =
    180,388,626,432 are gate_up rows of the zero experts, which the class allocates and never runs:
    560,664,958,976 without them, the card's 560B. Active, a token's 12 slots all on real experts (the
    counted routing): 32,182,654,976, the card's most (31.3B) with the 805,306,368 embeddings beside."""
    from costmodel import estimate

    assert_class_default_total("longcat_flash", 741_053_585_408)
    active = estimate({"model_type": "longcat_flash", "name": "x"}, seq_len=16).to_dict()["params"]["active"]
    assert active == 32_182_654_976


@pytest.mark.parametrize("name,expected", [("longcat_flash", 44), ("longcat_flash-no-zero", 32),
                                           ("longcat_flash-mostly-zero", 62)])
def test_buffers_equal_the_class(name, expected):
    """The rotary inverse frequencies (qk_rope_head_dim / 2, fp32, twice) and each MoE layer's
    score-correction bias over the experts and zero experts (bf16 in a bf16 model)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == expected


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_validate_rows_exact_on_real_tensors(name, attention, dtype):
    """validate's rows (b 2, n 12, 2 generated tokens) on the CPU's real tensors under the counted routing,
    with torch.profiler's count of the training matmul FLOPs under eager."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(CONFIGS[name]), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2, attention=attention),
                    target="hf", device="cpu")
    assert_rows_exact(rows, frozenset({"training matmul FLOPs (profiler)"}) if attention == "eager" else frozenset())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_and_prefill_flops(name):
    """A cached decode step at three cache lengths (real fp32 tensors) and a prefill, against the trees."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_decode_flops_exact, assert_prefill_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name, real=True)
    assert_prefill_flops_exact(CONFIGS[name], name)


# Every attention sublayer's latent and RoPE key after a prefill (two cache layers a LongCat layer).
test_cache_after_prefill = CHECKS.cache_after_prefill

# The class's training forward with its loss against the tree's activations, eager, b 2, n 9.
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_flops_under_the_class_routing(name):
    """The class's own routing (random weights, no bias): its forward matmul FLOPs equal the tree's less
    2 x 3 d d_x for every slot that landed on a zero expert (counted from each router's top-k indices)."""
    pytest.importorskip("transformers")
    import torch
    import transformers

    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from costmodel.hf import from_hf_config
    from validate.measure import matmul_flops

    config = CONFIGS[name]
    torch.manual_seed(1)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).train()
    routed = config.get("n_routed_experts", config.get("num_local_experts"))
    picks: list[torch.Tensor] = []
    for module in model.modules():
        if type(module).__name__ == "LongcatFlashTopkRouter":
            module.register_forward_hook(lambda mod, args, out: picks.append(out[2]))
    ids = torch.randint(0, config["vocab_size"], (2, 12))
    measured = matmul_flops(model, {"input_ids": ids}).forward
    identity = sum(int((p >= routed).sum()) for p in picks)
    cfg = from_hf_config(config, name="x")
    tree = Estimate(cfg, Workload(seq_len=12, batch=2, dtype="fp32")).total("flops_matmul")
    assert measured == tree - identity * 2 * 3 * cfg.d_model * cfg.d_expert
    assert identity > 0 if config["zero_expert_num"] else identity == 0


def test_validate_under_fake_tensors_is_one_line(tmp_path, capsys):
    """The experts' loop over nonzero() cannot run under FakeTensorMode: one line naming --device cpu."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["longcat_flash"]))
    code, _, err = run_main(["validate", "--config", str(path), "--seq-len", "12"], capsys)
    # beside the model's warning (whose weights: test_longcat_engine_weights.py)
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("warning:"))
    assert code == 2 and err.count("\n") == 1 and "use --device cpu" in err, err


test_refused_in_one_line = refused_in_one_line(CONFIGS["longcat_flash"], [
    ({"q_lora_rank": None}, "q_lora_rank null is not what longcat_flash's class builds"),
    ({"head_dim": 6}, "head_dim (RoPE's width) must equal qk_rope_head_dim"),
    ({"qk_head_dim": 11}, "qk_head_dim"),
    ({"zero_expert_num": -1}, "zero_expert_num"),
    ({"hidden_act": "gelu"}, "experts are modelled as SwiGLU FFNs"),
])


def test_expert_parallelism_refused_in_one_line(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["longcat_flash"]))
    code, _, err = run_main(["estimate", "--config", str(path), "--ep", "5", "--dp", "5"], capsys)
    assert code == 2 and err.count("\n") == 1 and "zero-compute experts (zero_experts)" in err, err


def test_architectures_alone_name_the_model_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["longcat_flash"].items() if k != "model_type"}
    cfg = from_hf_config(dict(bare, architectures=["LongcatFlashForCausalLM"]), name="x")
    assert (cfg.family, cfg.n_decoder_layers, cfg.zero_experts) == ("longcat_flash", 4, 2)
    assert estimated_total(CONFIGS["longcat_flash"], "x") == 79_216
