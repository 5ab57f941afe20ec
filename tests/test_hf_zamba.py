"""Zyphra's Zamba and Zamba2 (costmodel/hf_zamba.py; the shared blocks: costmodel/shared_block.py,
blocks/shared.py) against transformers 5.24's ZambaForCausalLM and Zamba2ForCausalLM built from the
same config dict on the CPU: parameters (the blocks counted once, tied or, untied, once a use; the
classes' defaults on the meta device), the training forward's and step's matmul FLOPs
(FlopCounterMode, validate/hf_mamba1.py), a prefill's and a cached decode step's, the cache after a
prefill (each use's own keys and values, the mixers' states), the bytes saved for backward, every
validate row but the Mamba mixers' silu elements (not modelled: estimate's note), and the configs,
layouts and engines refused in one line.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks, refused_in_one_line
from tests.family_configs import odd_config_rows

#: zamba: hidden 40 (the shared block reads 80), 4 heads of 20 on 2 KV heads, MLP 37, vocabulary 99,
#: 7 layers, hybrid at 2, 4, 6 (ZambaConfig's rule at attn_layer_period 2, offset 1), one Mamba head
#: (inner 80, state 6, conv 3, dt rank 5).
ZAMBA = dict(model_type="zamba", vocab_size=99, hidden_size=40, num_hidden_layers=7, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=37, n_mamba_heads=1, mamba_d_state=6, mamba_d_conv=3,
             mamba_dt_rank=5, attn_layer_period=2, attn_layer_offset=1, tie_word_embeddings=True)
#: zamba2: MHA of 4 heads, 5 uses of 2 blocks in turn, adapters of rank 3 on q, k, v and gate_up,
#: 5 Mamba-2 heads of 16 (state 6, one group, chunk 4).
ZAMBA2 = dict(model_type="zamba2", vocab_size=99, hidden_size=40, num_hidden_layers=7, num_attention_heads=4,
              num_key_value_heads=4, intermediate_size=37, n_mamba_heads=5, mamba_d_state=6, mamba_ngroups=1,
              chunk_size=4, num_mem_blocks=2, adapter_rank=3, use_shared_attention_adapter=True,
              tie_word_embeddings=True,
              layers_block_type=["linear_attention", "hybrid", "hybrid", "linear_attention", "hybrid", "hybrid", "hybrid"])
CONFIGS = {
    "zamba": ZAMBA,
    # untied: transformers ties no block (each use its own copy); 2 Mamba heads, biases, tanh GELU
    "zamba_untied_two_heads": dict(ZAMBA, tie_word_embeddings=False, n_mamba_heads=2, mamba_proj_bias=True,
                                   mamba_conv_bias=False, hidden_act="gelu_pytorch_tanh",
                                   layers_block_type=["hybrid", "mamba", "hybrid", "hybrid", "mamba", "mamba", "hybrid"]),
    "zamba2_adapters": ZAMBA2,
    # RoPE on q and k, 2 KV heads, one block, MLP adapters of rank 5, biases, 4 Mamba heads in 2 groups
    "zamba2_rope_gqa_biases": dict(ZAMBA2, use_mem_rope=True, num_key_value_heads=2, use_shared_attention_adapter=False,
                                   num_mem_blocks=1, add_bias_linear=True, n_mamba_heads=4, mamba_ngroups=2,
                                   mamba_d_conv=3, adapter_rank=5),
    # untied with a block a use (num_mem_blocks 5 >= 3 uses), SwiGLU
    "zamba2_untied": dict(ZAMBA2, tie_word_embeddings=False, num_mem_blocks=5, hidden_act="silu",
                          use_shared_attention_adapter=False, num_hidden_layers=6,
                          layers_block_type=["hybrid", "linear_attention", "hybrid", "linear_attention",
                                             "linear_attention", "hybrid"]),
}
#: The configs whose bytes saved for backward the tree models: all of them since session 28 (zamba's
#: per-head copies, blocks/mamba1.py head_split_bytes).
SAVED = dict(CONFIGS)
CHECKS = family_checks(CONFIGS)
SAVED_CHECKS = family_checks(SAVED)

test_parameters_equal_the_class = CHECKS.parameters_equal_the_class
test_cache_after_prefill = CHECKS.cache_after_prefill
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops
test_bytes_saved_for_backward = SAVED_CHECKS.bytes_saved_for_backward


def test_counts_exact_integers():
    """zamba 115,880 = embeddings 99 x 40 (head tied) + final norm 40 + 7 Mamba-1 layers x 12,360 (norm
    40, in_proj 40 x 160, conv 80 x 3 + 80, x_proj 80 x 17, dt_proj 5 x 80 + 80, A_log 80 x 6, D 80,
    out_proj 80 x 40) + 3 linears 40^2 + the block ONCE, 20,560 (norm 80, q 80 x 80, k and v 80 x 40,
    o 80 x 40, norm 40, MLP 3 x 40 x 37); untied, each of the 4 uses holds its own block."""
    assert 99 * 40 + 40 + 7 * 12_360 + 3 * 40 ** 2 + 20_560 == 115_880
    assert_counts_exact(CONFIGS, [115_880, 150_955, 115_996, 159_916, 183_960])  # sorted names


@pytest.mark.parametrize("model_type, total", [("zamba", 7_232_490_496), ("zamba2", 2_481_848_336)])
def test_class_defaults(model_type, total):
    """ZambaConfig() (13 uses of one block) and Zamba2Config() (9 uses of one block, MLP adapters of
    rank 128 each use): the meta models' counts, validate/FINDINGS.md session 26."""
    assert_class_default_total(model_type, total)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_training_matmul_flops(name):
    """Forward with the loss, and forward plus backward (b 2, n 9, fp32): every use's attention, MLP,
    adapters and linear, the Mamba mixers' matmuls, conv and scan."""
    pytest.importorskip("transformers")
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops_both

    ours = estimate(dict(CONFIGS[name], name=name), seq_len=9, batch=2, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(CONFIGS[name], 2, 9)


def test_flops_and_cache_exact_integers():
    """zamba at b 2, n 9, fp32: 5,736,000 forward FLOPs and 17,208,000 for the step (FlopCounterMode);
    the cache 57,600 bytes = 3 uses x K and V x 2 x 2 KV heads x 9 x 20 x 4 (each use caches its own)
    + 7 Mamba layers x 2 x 80 x (conv 3 + state 6) x 4."""
    from costmodel import estimate

    ours = estimate(dict(ZAMBA, name="z"), seq_len=9, batch=2, dtype="fp32").to_dict()
    assert (ours["flops"]["forward"], ours["flops"]["training"]) == (5_736_000, 17_208_000)
    assert ours["memory"]["kv_cache"] == 3 * 2 * 2 * 2 * 9 * 20 * 4 + 7 * 2 * 80 * 9 * 4 == 57_600


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_weights_gradients_and_optimizer_count_each_block_once(name):
    """fp32 weights and gradients 4 bytes a parameter, AdamW's states 8, over the parameters as the
    class holds them (a tied block once)."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS[name], name=name), seq_len=9, batch=2, dtype="fp32").to_dict()
    params = ours["params"]["total"]
    memory = ours["memory"]
    assert (memory["weights"], memory["gradients"], memory["optimizer"]) == (4 * params, 4 * params, 8 * params)


@pytest.mark.parametrize("name", ["zamba", "zamba2_untied", "zamba2_rope_gqa_biases", "zamba_untied_two_heads"])
def test_batch_one_saved_bytes(name):
    """At b 1, n 5 as well, fp32 and bf16: zamba's x_proj keeps a copy of its input there too
    (facts.mamba1_x_proj_copied: its per-head bmm; MambaMixer's mm reads a view at b 1)."""
    pytest.importorskip("transformers")
    from tests.family_configs import assert_saved_bytes_exact

    for dtype in ("fp32", "bf16"):
        assert_saved_bytes_exact(CONFIGS[name], name, dtype, b=1, n=5)


@pytest.mark.parametrize("name", sorted(SAVED))
def test_validate_rows_exact_but_the_mixers_silu(name):
    """validate's rows (b 2, n 12, bf16, 2 generated tokens, eager): all exact but the silu elements,
    which the tree leaves out of the Mamba mixers (more measured than counted)."""
    pytest.importorskip("transformers")
    rows = {row.quantity: row for row in odd_config_rows(CONFIGS[name], name)}
    assert {q for q, row in rows.items() if row.difference != 0} == {"silu elements"}
    assert rows["silu elements"].measured > rows["silu elements"].formula


BAD_ZAMBA2 = dict(ZAMBA2, num_key_value_heads=2)
test_refused_in_one_line = refused_in_one_line(ZAMBA, [
    (dict(attention_hidden_size=120), "attention_hidden_size 120"),
    (dict(hidden_act="relu"), "hidden_act 'relu'"),
    (dict(hidden_mamba_act="gelu"), "hidden_mamba_act 'gelu'"),
    (dict(n_mamba_heads=3), "n_mamba_heads (3)"),
    (dict(layers_block_type=["mamba"] * 6 + ["attention"]), "layers_block_type"),
    (dict(layers_block_type=["mamba", "hybrid"]), "layers_block_type has 2 layers, num_hidden_layers 7"),
    (dict(ZAMBA2, num_hidden_layers=10, layers_block_type=None), "default layers_block_type has 54 layers"),
    (dict(BAD_ZAMBA2), "use_shared_attention_adapter with num_key_value_heads (2)"),
    (dict(ZAMBA2, tie_word_embeddings=False), "tie_word_embeddings false with num_mem_blocks (2)"),
    (dict(ZAMBA2, n_mamba_heads=3), "n_mamba_heads (3)"),
])


def test_layouts_and_engines_refused_in_one_line():
    """No tensor-parallel split of the shared blocks, no pipeline stage holding them, no context
    parallelism and no engine cache are modelled: one sentence each."""
    from costmodel.hf import from_hf_config
    from costmodel.layout.spec import Layout, tensor_split_error
    from costmodel.serving.kvcache import check_engine_cache

    cfg = from_hf_config(dict(ZAMBA2), "z2")
    assert "Zamba's shared attention-and-MLP blocks" in tensor_split_error(cfg, 2, inference=False)
    with pytest.raises(ConfigError, match="pipeline parallelism of model 'z2''s shared blocks is not modelled"):
        Layout(pp=2, microbatches=2).check(cfg)
    with pytest.raises(ConfigError, match="context parallelism with mamba1, shared mixers"):
        Layout(cp=2).check(from_hf_config(dict(ZAMBA), "z1"))
    with pytest.raises(ConfigError, match="shared attention-and-MLP blocks; an engine's cache"):
        check_engine_cache(cfg)


def test_through_the_cli(tmp_path, capsys):
    """estimate names what is counted once and what each use; plan answers without pp or tp."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(ZAMBA2))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0 and "runs 2 shared attention-and-MLP block(s) at 5 layers" in err
    code, out, err = run_main(["plan", "--config", str(path), "--hardware", "h100-sxm", "--gpus", "4"], capsys)
    assert code == 0, err
    code, out, err = run_main(["formulas", "--config", str(path), "--block", "shared"], capsys)
    assert code == 0 and "shared_attention.qkv  (x L_sh, weights held x B_sh)" in out
    assert "shared.linear  (x L_sh):" in out and "params = 12*d*r_sh" in out  # q, k, v adapters: 3 x (2d r + r 2d)


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    for fields, cls in ((ZAMBA, "ZambaForCausalLM"), (ZAMBA2, "Zamba2ForCausalLM")):
        named = {k: v for k, v in fields.items() if k != "model_type"}
        assert from_hf_config(dict(named, architectures=[cls]), name="x").family == fields["model_type"]


#: ZAMBA with n_mamba_heads heads (7 Mamba layers of inner 80, state 6, dt rank 5: R + 2N = 17): the class's
#: saved bytes minus the one-head model's, as measured (validate's saved-tensor hooks, eager), and what
#: head_split_bytes gives, a layer: e T (H - 1) 17 + [bf16] 4 T 6 (H - 1) + [b > 1] (e b 80 (17 + 5) + e T 80).
@pytest.mark.parametrize("heads,b,n,dtype,extra", [
    (2, 2, 9, "fp32", 7 * (4 * 18 * 17 + 4 * 2 * 80 * 22 + 4 * 18 * 80)),  # 147,448
    (4, 2, 9, "fp32", 7 * (4 * 18 * 3 * 17 + 4 * 2 * 80 * 22 + 4 * 18 * 80)),  # 164,584
    (2, 1, 9, "fp32", 7 * 4 * 9 * 17),  # 4,284: at b 1 the broadcast weights stay views
    (4, 3, 4, "bf16", 7 * (2 * 12 * 3 * 17 + 4 * 12 * 6 * 3 + 2 * 3 * 80 * 22 + 2 * 12 * 80)),  # 72,072
    (2, 2, 9, "bf16", 7 * (2 * 18 * 17 + 4 * 18 * 6 + 2 * 2 * 80 * 22 + 2 * 18 * 80)),  # 76,748
])
def test_multi_head_mamba_saved_bytes(heads, b, n, dtype, extra):
    pytest.importorskip("transformers")
    from costmodel import estimate
    from tests.family_configs import assert_saved_bytes_exact

    fields = dict(ZAMBA, n_mamba_heads=heads)
    assert_saved_bytes_exact(fields, "zamba", dtype, b=b, n=n)
    one = estimate(dict(ZAMBA, name="z"), seq_len=n, batch=b, dtype=dtype, attention="eager").to_dict()
    split = estimate(dict(fields, name="z"), seq_len=n, batch=b, dtype=dtype, attention="eager").to_dict()
    assert split["memory"]["activations"] - one["memory"]["activations"] == extra
    assert split["params"]["total"] == one["params"]["total"]  # the heads split the same weights


def test_mamba1_heads_refused_where_they_do_not_apply():
    from costmodel.hf import from_hf_config

    with pytest.raises(ConfigError, match="n_mamba_heads"):
        from_hf_config(dict(ZAMBA, n_mamba_heads=3), name="z")  # 80 is not a multiple of 3
    cfg = from_hf_config(dict(ZAMBA, n_mamba_heads=4), name="z")
    assert cfg.mamba1_heads == 4
    with pytest.raises(ConfigError, match="mamba1_heads"):
        cfg.replace(mamba1_heads=3)
