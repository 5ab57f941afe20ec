"""BitNet (costmodel/hf_llama_variants.py: model_type "bitnet") against transformers 5.24's
BitNetForCausalLM built from the same config dict with from_config (plain nn.Linear layers: only
from_pretrained with quant_method "bitnet" swaps them for BitLinear): parameters (the odd configs
and the class default), validate's rows under eager and sdpa attention (matmul FLOPs forward and
backward, other ops' elements, bytes saved for backward with attn_sub_norm before o_proj and
ffn_sub_norm before down_proj, the KV cache), a cached decode step's and a prefill's FLOPs, the
cache after a prefill, and the configs refused in one line.
"""

from __future__ import annotations

import pytest

from tests.family_checks import family_checks, refused_in_one_line
from tests.family_configs import assert_rows_exact, estimated_total, hf_meta_count

_BASE = dict(model_type="bitnet", vocab_size=99, hidden_size=48, num_attention_heads=6,
             num_key_value_heads=2, intermediate_size=37, num_hidden_layers=3, max_position_embeddings=64,
             bos_token_id=None, eos_token_id=None)

CONFIGS = {
    # the class's layout: GQA, relu2 (a gated squared ReLU), an untied head
    "bitnet": _BASE,
    # biases on q, k, v and o, one KV head, a tied head, another FFN width
    "bitnet-bias-tied": dict(_BASE, attention_bias=True, num_key_value_heads=1, tie_word_embeddings=True,
                             intermediate_size=29),
    # silu (a gated SiLU with the same sub-norms), three KV heads, two layers
    "bitnet-silu": dict(_BASE, hidden_act="silu", num_key_value_heads=3, num_hidden_layers=2),
}


CHECKS = family_checks(CONFIGS, ids={"bytes_saved_for_backward": ("dtype", "name", "attention")})
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and BitNetConfig()'s (d 2,560, 30 layers, 20 heads, 5 KV heads,
    d_ff 6,912, vocabulary 128,256, untied: bitnet-b1.58-2B-4T's shape), the meta models'
    (transformers 5.24). Each layer holds 2,560 + 6,912 sub-norm weights beside Llama's."""
    transformers = pytest.importorskip("transformers")
    counts = [hf_meta_count(CONFIGS[name]) for name in sorted(CONFIGS)]
    assert counts == [estimated_total(CONFIGS[name], name) for name in sorted(CONFIGS)]
    assert counts == [44_511, 34_311, 34_394]
    default = transformers.AutoConfig.for_model("bitnet").to_dict()
    assert estimated_total(default, "x") == hf_meta_count({"model_type": "bitnet"}) == 2_741_155_840


# validate's rows (validate/hf_llama_variants.py writes the config.json back; bf16 under FakeTensorMode, b 2,
# n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs, other ops' elements, bytes saved
# for backward and the KV cache.
test_validate_rows_exact = CHECKS.validate_rows_exact


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bitnet", "bitnet-bias-tied"])
def test_validate_rows_exact_on_real_tensors_in_fp32(name):
    """fp32 on the CPU's real tensors, with torch.profiler's second count of the matmul FLOPs."""
    from tests.family_configs import assert_fp32_rows_exact

    assert_fp32_rows_exact(CONFIGS[name], name)


# A cached decode step at three cache lengths and a prefill, against the decode tree.
test_decode_and_prefill_flops = CHECKS.decode_and_prefill_flops


test_cache_after_prefill = CHECKS.cache_after_prefill


# The class's training forward with its loss against the tree's activations: each sub-norm keeps its input (in
# fp32 the tensor itself, shared with sdpa's kept output where the kernel keeps o_proj's input; narrower, its
# fp32 copy) and its output, the next projection's input; relu2 keeps relu's output once (relu's and the
# square's), the product its two factors.
test_bytes_saved_for_backward = CHECKS.bytes_saved_for_backward


#: estimate's bytes saved for backward, which test_bytes_saved_for_backward proves equal to the class's.
BYTES_SAVED = {"fp32": 203_332, "bf16": 138_784}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_bytes_saved_exact_integer(dtype):
    """The first odd config at b 2, n 9, eager attention."""
    from costmodel import estimate

    ours = estimate(dict(CONFIGS["bitnet"], name="x"), seq_len=9, batch=2, dtype=dtype,
                    attention="eager").to_dict()
    assert ours["memory"]["activations"] == BYTES_SAVED[dtype]


def test_sub_norms_add_their_leaves():
    """The tree holds BitNet's two sub-norms as leaves of their own, registered after o_proj and
    down_proj: h*d_h (the reader checks it is hidden_size) and d_ff wide."""
    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    model = CostModel(from_hf_config(CONFIGS["bitnet"], name="x"))
    names = [leaf.path for leaf in model.leaves if leaf.sublayer]
    width = {leaf.path: leaf.cost.params for leaf in model.leaves}
    assert names.index("decoder.layer.self_attention.sub_norm") == names.index("decoder.layer.self_attention.out") + 1
    assert names.index("decoder.layer.ffn.sub_norm") == names.index("decoder.layer.ffn.mlp") + 1
    assert (width["decoder.layer.self_attention.sub_norm"], width["decoder.layer.ffn.sub_norm"]) == (S.h * S.d_h, S.d_ff)


test_refused_in_one_line = refused_in_one_line(CONFIGS["bitnet"], [
    (dict(quantization_config={"quant_method": "bitnet", "linear_class": "bitlinear"}),
     "quantization_config is not modelled for bitnet"),
    (dict(hidden_act="gelu"), "unsupported hidden_act 'gelu' for bitnet"),
    (dict(head_dim=10), "attn_sub_norm"),
])


def test_tensor_parallelism_is_refused(tmp_path, capsys):
    """A sub-norm over the heads' output and d_ff needs the whole row, which tp ranks split."""
    import json

    from tests.cli_run import run_main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["bitnet"]))
    code, out, err = run_main(["estimate", "--config", str(path), "--tp", "2"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "BitNet's sub-norms" in errors[0], err


def test_sub_norms_refused_beside_experts():
    from costmodel.config import ConfigError
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(CONFIGS["bitnet"], name="x")
    with pytest.raises(ConfigError, match="sub_norms .* dense attention and FFN layers only"):
        cfg.replace(n_experts=4, top_k=2, activation="swiglu")


def test_architectures_name_the_type():
    from costmodel.hf import from_hf_config

    bare = {k: v for k, v in CONFIGS["bitnet"].items() if k != "model_type"}
    bare["architectures"] = ["BitNetForCausalLM"]
    assert from_hf_config(bare, name="x") == from_hf_config(CONFIGS["bitnet"], name="x")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gated_squared_relu_in_the_reference_model(dtype):
    """relu2_glu without the sub-norms, in the seeds' reference model (validate/reference_blocks.py:
    relu(gate x)^2 * up x): validate's rows equal the reference profile's tree, b 2, n 12."""
    from costmodel.config import ModelConfig, Workload
    from validate.compare import validate

    cfg = ModelConfig(name="odd", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_ff=37, max_positions=40,
                      n_decoder_layers=3, d_head=10, position="rope", norm="rmsnorm", norm_position="pre",
                      activation="relu2_glu")
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2), target="reference")
    assert_rows_exact(rows, frozenset({"relu elements"}))
    saved = {row.quantity: row.measured for row in rows}["bytes saved for backward"]
    assert saved == {"fp32": 239_812, "bf16": 120_098}[dtype]


def test_the_reference_model_refuses_the_sub_norms():
    from costmodel.hf import from_hf_config
    from costmodel.workload import reference_unsupported

    assert "sub_norms" in " ".join(reference_unsupported(from_hf_config(CONFIGS["bitnet"], name="x")))
