"""MiniMax's linear-attention hybrids (costmodel/hf_minimax.py: model_type "minimax";
costmodel/blocks/lightning.py) against transformers 5.24's MiniMaxForCausalLM built from the same
config dict on the CPU: parameters and buffers (layer_types patterns, head_dim given or derived,
experts and top-k, a tied head, the class default and MiniMax-Text-01's shape on the meta device),
the training forward's and the training step's matmul FLOPs (FlopCounterMode: the lightning
attention's block loop, blocks shorter and longer than the sequence), a cached decode step's and a
prefill's, the cache after a prefill (each full layer's keys and values, each lightning layer's
state in MiniMaxCache.linear_cache), the bytes saved for backward (eager and sdpa, fp32 and bf16,
one sequence or several), and the configs refused. Not compared: other ops' elements (what the
lightning attention runs besides its matmuls is not modelled: workload's warning).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_configs import (assert_cache_after_prefill_exact, assert_decode_flops_exact,
                                  assert_prefill_flops_exact, buffer_bytes_both, estimated_total, hf_meta_count)

pytestmark = pytest.mark.filterwarnings("ignore:model .* lightning-attention layers")

#: Odd sizes no dimension shares: d 48, 4 heads of 10 (not d / h = 12), 2 KV heads, 5 experts of 24,
#: the top 2, vocabulary 99, blocks of 4 tokens, 4 layers, one of them full attention.
MINIMAX = dict(model_type="minimax", vocab_size=99, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
               num_key_value_heads=2, head_dim=10, intermediate_size=24, num_local_experts=5, num_experts_per_tok=2,
               block_size=4, layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"])
VARIANTS = {
    "minimax": MINIMAX,
    # no layer_types: MiniMaxConfig's alternation (full on even layers); head_dim d / h = 12; a tied head;
    # blocks of 3; 3 experts, the top 1, under attribute_map's num_experts; residual scalings (no parameters)
    "minimax_default_pattern": dict({k: v for k, v in MINIMAX.items() if k not in ("layer_types", "head_dim",
                                                                                  "num_local_experts")},
                                    tie_word_embeddings=True, block_size=3, num_experts=3, num_experts_per_tok=1,
                                    linear_attn_alpha_factor=0.5, mlp_beta_factor=2.0),
    "minimax_all_lightning": dict(MINIMAX, num_hidden_layers=3, layer_types=["linear_attention"] * 3, block_size=5),
    "minimax_all_full": dict(MINIMAX, num_hidden_layers=2, layer_types=["full_attention"] * 2),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_parameters_equal_the_class(name):
    assert estimated_total(VARIANTS[name], "x") == hf_meta_count(VARIANTS[name])


@pytest.mark.parametrize("name,expected", [("minimax", 640), ("minimax_default_pattern", 304),
                                           ("minimax_all_lightning", 904), ("minimax_all_full", 40)])
def test_buffers_equal_the_class(name, expected):
    """The rotary tables (fp32, head_dim / 2 each) and each lightning layer's decays in the model's
    dtype: slope_rate h, query_decay and key_decay h Q, diagonal_decay h Q^2 (bf16: 2 h (1 + Q)^2)."""
    ours, theirs = buffer_bytes_both(VARIANTS[name], name)
    assert ours == theirs == expected


def test_class_default_exact_integer():
    """MiniMaxConfig() on the meta device (transformers 5.24: d 4,096, 32 layers alternating full and
    lightning attention, 8 KV heads, 8 experts of 14,336, vocabulary 32,000, untied): 47,373,946,880."""
    default = {"model_type": "minimax"}
    assert estimated_total(default, "x") == hf_meta_count(default) == 47_373_946_880


def test_minimax_text_01_shape_exact_integer():
    """MiniMax-Text-01's shape (config.json: d 6,144, 64 heads of 128, 8 KV heads, 80 layers with
    full attention every 8th, 32 experts of 9,216, the top 2, vocabulary 200,064): 456,089,655,296,
    the meta model's count (MiniMax's report: 456B in all)."""
    fields = dict(model_type="minimax", hidden_size=6144, num_attention_heads=64, num_key_value_heads=8, head_dim=128,
                  num_hidden_layers=80, intermediate_size=9216, num_local_experts=32, num_experts_per_tok=2,
                  vocab_size=200064, layer_types=(["linear_attention"] * 7 + ["full_attention"]) * 10)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == 456_089_655_296


ROWS = ("minimax", "minimax_default_pattern", "minimax_all_lightning")


@pytest.mark.parametrize("name", ROWS)
@pytest.mark.parametrize("b,n", [(2, 9), (1, 4), (3, 1), (1, 8)])
def test_training_forward_and_step_flops(name, b, n):
    """The class's own training forward (its default use_cache: a fresh MiniMaxCache, so the block
    path) and the step with the backward: a sequence of whole blocks, one with a short last block,
    one shorter than a block; each token's top k experts only."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    fields = VARIANTS[name]
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(fields, b, n, use_cache=None)


def test_training_flops_exact_integers():
    """The tiny MiniMax at b 2, n 9 (blocks of 4, 4 and 1): 2,589,120 forward FLOPs, 7,738,560 for
    the step."""
    from validate.hf_mamba1 import causal_lm_flops_both

    assert causal_lm_flops_both(MINIMAX, 2, 9, use_cache=None) == (2_589_120, 7_738_560)


def test_lightning_block_flops_on_the_module():
    """MiniMaxLightningAttention alone (no cache, fp32, h 4 of P 10, blocks of 4) at b 1, n 5 (blocks
    of 4 and 1): forward 2 n (48 x 120 + 48 x 40 + 40 x 48) + 4 h P (16 + 1) + 4 h P^2 n = 106,720;
    the backward's bmm 8 h P 17 + 2 h P^2 (5 + 1) + 4 h P^2 4 = 16,640 (the state update of the last
    block, which only the cache would keep, and block 0's zero state get no gradient)."""
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    from costmodel import symbols as S
    from costmodel.blocks.lightning import block_backward_flops, block_flops
    from costmodel.evaluate import exact

    config = transformers.MiniMaxConfig(**{k: v for k, v in MINIMAX.items() if k != "model_type"})
    module = MiniMaxLightningAttention(config, 0)
    x = torch.randn(1, 5, 48, requires_grad=True)
    with FlopCounterMode(display=False) as forward:
        out, _ = module(x, None, None)
    with FlopCounterMode(display=False) as backward:
        out.sum().backward()
    sizes = {S.h: 4, S.d_h: 10, S.Q_m: 4}
    assert forward.get_total_flops() == 2 * 5 * 9600 + exact(block_flops(1, 5), sizes) == 106_720
    bmm = {str(op): count for op, count in backward.get_flop_counts()["Global"].items()}["aten.bmm"]
    assert bmm == exact(block_backward_flops(1, 5), sizes) == 16_640


@pytest.mark.parametrize("name", ROWS)
def test_decode_and_prefill_flops(name):
    """A decode step's recurrent branch (k^T v and q kv per token and head, 4 h P^2), a prefill's
    block path."""
    assert_decode_flops_exact(VARIANTS[name], name)
    assert_prefill_flops_exact(VARIANTS[name], name)


@pytest.mark.parametrize("name", [*ROWS, "minimax_all_full"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Per full layer its keys and values; per lightning layer its state (b, h, P, P) in the model's
    dtype (MiniMaxCache.linear_cache)."""
    assert_cache_after_prefill_exact(VARIANTS[name], name, dtype)


@pytest.mark.parametrize("fields,message", [
    (dict(MINIMAX, layer_types=["linear_attention", "sliding_attention", "full_attention", "full_attention"]),
     "layer_types"),
    (dict(MINIMAX, layer_types=["linear_attention", "full_attention"]), "layer_types"),
    (dict(MINIMAX, hidden_act="gelu"), "hidden_act"),
    (dict(MINIMAX, sliding_window=4), "sliding_window"),
    (dict(MINIMAX, router_jitter_noise=0.1), "router_jitter_noise"),
    (dict(MINIMAX, output_router_logits=True), "output_router_logits"),
    (dict(MINIMAX, block_size=0), "block_size"),
    (dict(MINIMAX, num_local_experts=0), "num_local_experts"),
])
def test_refused_configs(fields, message):
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(MINIMAX, sliding_window=4)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "sliding_window" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    named = {k: v for k, v in MINIMAX.items() if k != "model_type"}
    assert from_hf_config(dict(named, architectures=["MiniMaxForCausalLM"]), name="x").family == "minimax"


def test_tensor_parallel_and_an_engine_cache_are_refused(tmp_path, capsys):
    """No tensor-parallel split of the lightning attention and no engine cache for its states are
    modelled: one sentence each, and `plan --tp 2` exits 2 with one line."""
    import json

    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache
    from tests.cli_run import run_main

    cfg = from_hf_config(dict(MINIMAX), "minimax")
    assert "lightning attention" in tensor_split_error(cfg, 2, inference=False)
    assert tensor_split_error(cfg, 1, inference=False) is None
    with pytest.raises(ConfigError, match="lightning-attention states"):
        check_engine_cache(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MINIMAX))
    code, out, err = run_main(["plan", "--config", str(path), "--gpus", "2", "--tp", "2"], capsys)
    assert code == 2 and "lightning attention" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_main(["serve", "--config", str(path), "--hardware", "h100", "--rate", "2"], capsys)
    assert code == 2 and "lightning-attention states" in err and len(err.strip().splitlines()) == 1


def test_through_the_cli(tmp_path, capsys):
    """estimate answers for a MiniMax config, its warning naming the lightning-attention layers."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(MINIMAX))
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == hf_meta_count(MINIMAX)
    assert "3 lightning-attention layers" in err


@pytest.mark.parametrize("name", ["minimax", "minimax_default_pattern"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 5), (3, 1), (3, 2)])
def test_bytes_saved_for_backward(name, dtype, attention, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks) against the
    tree's activations: the lightning attention's (blocks/lightning.saved_bytes_torch: the silu
    output's views for one sequence or one token, else each 4D matmul's copies of q, k and v), and
    the attention, experts and norms as the families' facts say (fp32 RMSNorm, softmax and loss).
    Not here: a model with no full-attention layer, whose rotary cos and sin nothing keeps (the
    tree counts them: hf_minimax's docstring)."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(VARIANTS[name], name, dtype, b, n, attention=attention)


def test_bytes_saved_exact_integer():
    """The tiny MiniMax at b 2, n 9 (fp32): 381,804 bytes saved for backward."""
    from costmodel import estimate

    ours = estimate(dict(MINIMAX, name="minimax"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert ours["memory"]["activations"] == 381_804


@pytest.mark.parametrize("name", ["minimax", "minimax_default_pattern"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_validate_rows_exact(name, attention):
    """validate's rows (validate/hf_minimax.py writes the config.json back; bf16 under FakeTensorMode,
    b 2, n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs, the bytes saved
    for backward and the cache (keys, values and lightning states: validate/measure/memory.py)."""
    from tests.family_configs import assert_rows_exact, odd_config_rows

    assert_rows_exact(odd_config_rows(VARIANTS[name], name, attention))


def test_validate_writer_refuses_what_the_class_cannot_build():
    from costmodel.hf import from_hf_config
    from validate.hf_config_dict import config_dict

    cfg = from_hf_config(dict(MINIMAX), "minimax")
    with pytest.raises(ValueError, match="lightning or full attention"):
        config_dict(cfg.replace(layer_pattern=("lightning", "mlp", "attention", "moe") * 2))
