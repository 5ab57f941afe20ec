"""OpenAI's gpt-oss (model_type "gpt_oss", costmodel/hf_gpt_oss.py) against transformers 5.24's
GptOssForCausalLM: parameters of odd configs and of GptOssConfig()'s defaults (the 120b shape)
on the meta device, every validate row on odd configs, the clamped SwiGLU's pointwise ops in a
real forward, the presets against the model card's Table 1, and the configs it refuses.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_configs import assert_rows_exact, hf_meta_count as _hf_count
from tests.published import FLAGSHIPS, GPT_OSS_CARD, PUBLISHED_ACTIVE

#: A small, odd gpt-oss: 3 layers (0 and 2 slide, GptOssConfig's default layer_types), a window
#: of 5 under a prompt of 12, 6 query heads and 2 KV heads of 10, 5 experts of 24 (a multiple of
#: 8: the experts' grouped_mm in bf16), top 2.
ODD = dict(model_type="gpt_oss", vocab_size=99, hidden_size=48, num_attention_heads=6,
           num_key_value_heads=2, head_dim=10, intermediate_size=24, num_hidden_layers=3,
           max_position_embeddings=64, num_local_experts=5, num_experts_per_tok=2,
           sliding_window=5, pad_token_id=None)  # its default pad 199999 is past this vocabulary

#: Variations: every layer full without attention biases; one KV head (MQA) with the window on
#: the last two layers; the mapped name num_experts.
VARIANTS = {
    "odd": ODD,
    "full_no_bias": dict(ODD, layer_types=["full_attention"] * 3, attention_bias=False),
    "mqa": dict(ODD, num_key_value_heads=1,
                layer_types=["full_attention", "sliding_attention", "sliding_attention"]),
    "num_experts": dict({k: v for k, v in ODD.items() if k != "num_local_experts"}, num_experts=7),
}


def _ours(fields: dict) -> dict:
    from costmodel import estimate

    return estimate(dict(fields, name="gpt_oss"), seq_len=16).to_dict()["params"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_parameters_equal_hugging_face(variant):
    pytest.importorskip("transformers")
    fields = VARIANTS[variant]
    assert _ours(fields)["total"] == _hf_count(fields)


def test_default_config_is_the_120b_shape_and_equals_hugging_face():
    """GptOssConfig()'s to_dict() (36 layers of 2880, 128 experts): 116,829,156,672, the count
    validate/hf_survey.py's meta model gives, and the gpt-oss-120b preset's."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("gpt_oss").to_dict()
    assert _ours(fields)["total"] == _hf_count({"model_type": "gpt_oss"}) == 116_829_156_672
    assert _ours({"model_type": "gpt_oss"})["total"] == FLAGSHIPS["gpt-oss-120b"]


def test_reader_takes_each_part_of_the_layer():
    """The fields that shape the blocks: sinks, the router's bias and top-k softmax, expert biases,
    the clamped SwiGLU, the window on layers 0 and 2, q/k/v/o biases, no shared expert."""
    from costmodel.hf import from_hf_config

    cfg = from_hf_config(ODD, name="g")
    assert (cfg.attention_sinks, cfg.router, cfg.router_bias, cfg.expert_bias) == \
        (True, "topk_softmax", True, True)
    assert (cfg.swiglu_limit, cfg.swiglu_alpha) == (7.0, 1.702)
    assert cfg.layer_pattern == ("sliding", "full", "sliding") and cfg.sliding_window == 5
    assert cfg.qkv_bias and cfg.out_bias and not cfg.ffn_bias and cfg.d_shared == 0
    assert (cfg.n_experts, cfg.top_k, cfg.d_expert) == (5, 2, 24)
    assert from_hf_config(VARIANTS["full_no_bias"], name="g").sliding_window is None
    from costmodel.workload import reference_unsupported

    assert {"attention_sinks", "n_experts"} <= set(reference_unsupported(cfg))  # the reference refuses it
    bare = {k: v for k, v in ODD.items() if k != "model_type"}
    assert from_hf_config(dict(bare, architectures=["GptOssForCausalLM"]), name="g") == cfg


@pytest.mark.parametrize("change, words", [
    (dict(sliding_window=None), "sliding_window null is not modelled"),
    (dict(layer_types=["full_attention"]), "layer_types must list"),
    (dict(layer_types=["sliding_attention", "chunked", "full_attention"]), "layer_types must list"),
    (dict(swiglu_limit=0), "swiglu_limit must be a positive number"),
    (dict(num_hidden_layers=0), "num_hidden_layers"),
])
def test_a_config_it_does_not_model_is_one_line(change, words, tmp_path, capsys):
    """A null window (GptOssModel builds its sliding mask whatever layer_types says, and fails
    without one: transformers' own ValueError), a malformed layer_types or a zero clamp: one
    error line, exit 2."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(ODD, **change)))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error:") and words in err


def test_sdpa_is_refused_as_transformers_refuses_it(tmp_path, capsys):
    """GptOssPreTrainedModel._supports_sdpa is False (fact sdpa_supported): --attention sdpa is one
    line naming the way out, exit 2; eager and flash answer."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ODD))
    code, out, err = run_main(["estimate", "--config", str(path), "--attention", "sdpa"], capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[-1].startswith("error:") and "scaled_dot_product_attention" in err
    for attention in ("eager", "flash"):
        code, out, _ = run_main(["estimate", "--config", str(path), "--attention", attention, "--json"], capsys)
        assert code == 0 and json.loads(out)["params"]["total"] == 87_357
    pytest.importorskip("transformers")
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssPreTrainedModel

    assert GptOssPreTrainedModel._supports_sdpa is False


def _tree_elements(fields: dict, batch: int, seq: int) -> dict:
    """The cost tree's forward elements per op kind (inference, one batch)."""
    from costmodel import symbols as S
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel

    cfg = from_hf_config(fields, name="g")
    values = {getattr(S, name): value for name, value in cfg.dimensions().items()}
    values.update({S.b: batch, S.n: seq, S.T: 0, S.e: 4})
    counts = CostModel(cfg, phase="prefill").element_counts()
    return {kind: int(count.subs(values)) for kind, count in counts.items()}


def _hf_elements(fields: dict, batch: int, seq: int, ops: tuple[str, ...]) -> dict:
    """Output elements of these aten ops in one eager fp32 forward of the real class."""
    import torch
    import transformers
    from torch.utils._python_dispatch import TorchDispatchMode

    counts = dict.fromkeys(ops, 0)

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in counts:
                counts[name] += out.numel()
            return out

    config = transformers.AutoConfig.for_model(**fields)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad(), Count():
        model(input_ids=torch.arange(batch * seq).reshape(batch, seq) % fields["vocab_size"])
    return counts


def test_clamped_swiglu_and_sinks_are_the_ops_the_class_runs():
    """The validate rows see no clamp or sigmoid: the elements GptOssExperts._apply_gate clamps
    (gate and up, 2 S d_x a layer) and passes through the sigmoid (S d_x), with S = b n k routed
    slots, are the tree's "clamp" and "sigmoid" elements; the softmax elements (every score, the
    sink column, the router's softmax over its k chosen logits) are aten._softmax's."""
    pytest.importorskip("transformers")
    batch, seq = 2, 9
    hf = _hf_elements(ODD, batch, seq, ("clamp", "sigmoid", "_softmax"))
    tree = _tree_elements(ODD, batch, seq)
    slots_hidden = 3 * batch * seq * 2 * 24  # layers x tokens x top_k x d_x
    # aten.clamp runs on both; the tree prices the gate's (max only) as one compare, up's as two
    assert hf["clamp"] == tree["clamp"] + tree["clamp_max"] == 2 * slots_hidden
    assert tree["clamp"] == tree["clamp_max"] == slots_hidden
    assert hf["sigmoid"] == tree["sigmoid"] == slots_hidden
    rows = 3 * batch * 6 * seq  # layers x b x h x n
    assert hf["_softmax"] == tree["softmax"] == rows * (seq + 1) + 3 * batch * seq * 2


@pytest.mark.parametrize("name", sorted(GPT_OSS_CARD))
def test_presets_agree_with_the_model_card_table_1(name):
    """The presets' active parameters less the embedding table (the card counts the unembedding
    towards active, not the embeddings), and Table 1's MLP (router and experts), attention (q, k,
    v, o with biases and the sinks) and embedding + unembedding rows, each within the card's
    rounding to 0.01B."""
    from costmodel import estimate

    params = estimate(name, seq_len=8).to_dict()["params"]
    card = GPT_OSS_CARD[name]
    blocks = params["by_block"]

    def summed(*names: str) -> int:
        return sum(value for path, value in blocks.items() if path.rsplit(".", 1)[-1] in names)

    assert params["active"] == PUBLISHED_ACTIVE[name]
    assert abs(params["active"] - params["embeddings"] - card["active"]) < 0.01e9
    assert abs(summed("router", "experts") - card["mlp"]) < 0.01e9
    assert abs(summed("qkv", "softmax", "out") - card["attention"]) < 0.01e9
    assert abs(params["embeddings"] + params["head"] - card["embeddings"]) < 0.01e9


@pytest.mark.slow
def test_odd_config_is_exact_on_every_validate_row():
    """bf16 under FakeTensorMode, b 2, n 12 (past the window of 5), 2 decode steps."""
    pytest.importorskip("transformers")
    from tests.family_configs import odd_config_rows

    rows = odd_config_rows(ODD, "gpt_oss")
    assert_rows_exact(rows, also=frozenset({"softmax elements"}))


@pytest.mark.slow
@pytest.mark.parametrize("variant, dtype, batch, device", [
    ("full_no_bias", "fp32", 2, "cpu"),
    ("mqa", "bf16", 1, "fake"),
])
def test_variants_are_exact_on_every_validate_row(variant, dtype, batch, device):
    """fp32 on real CPU tensors (the profiler's second FLOP count too), and multi-query attention
    at b = 1 (repeat_kv's view) with attention dropout on the probabilities, which drops out
    the scores after the sink column is sliced off."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    fields = dict(VARIANTS[variant], attention_dropout=0.1 if variant == "mqa" else 0.0)
    cfg = config_from_dict(fields, source=variant, name="gpt_oss")
    rows = validate(cfg, Workload(seq_len=7, batch=batch, dtype=dtype, gen_tokens=3), target="hf",
                    device=device)
    assert "bytes saved for backward" in {row.quantity for row in rows}
    assert [row for row in rows if row.difference != 0] == []


# =============================================================================================
# MXFP4 (costmodel/quantization.py): the released checkpoints' routed experts, the rest bf16

#: The gpt-oss model card's Table 1 checkpoint sizes (GiB, printed to 0.1): the MXFP4 experts and
#: the bf16 rest.
CHECKPOINT_GIB = {"gpt-oss-20b": 12.8, "gpt-oss-120b": 60.8}


def test_mxfp4_bytes_of_one_matrix_are_blocks_of_32_with_a_byte_scale():
    """R rows of C columns: R C / 2 bytes of packed E2M1 values and one E8M0 byte per block of 32
    columns of a row, a partial block rounded up (3 x 40: 60 data bytes, 3 x 2 scales)."""
    import sympy as sp

    from costmodel.blocks import quantized_bytes
    from costmodel.quantization import weight_format

    fmt = weight_format("mxfp4")
    assert (fmt.bits, fmt.group, fmt.layout, fmt.scope) == (4, 32, "mx", "experts")
    parts = quantized_bytes(((sp.Integer(3), sp.Integer(40), sp.Integer(5)),), fmt)
    assert parts == {"data": 5 * 60, "scales": 5 * 6, "zeros": 0, "tables": 0}
    whole = quantized_bytes(((sp.Integer(2880), sp.Integer(2880), sp.Integer(1)),), fmt)
    assert 4 * 8 * (whole["data"] + whole["scales"]) == 17 * 2880 * 2880  # 4.25 = 17 / 4 bits a weight


@pytest.mark.parametrize("name", sorted(CHECKPOINT_GIB))
def test_mxfp4_weights_of_the_presets_are_the_released_checkpoints(name):
    """--weight-dtype mxfp4 stores the routed experts' matrices in MXFP4 and everything else (the
    attention, sinks, router, norms, expert biases, embeddings and head) in bf16: 65,248,815,744
    bytes for gpt-oss-120b (60.77 GiB) and 13,761,264,768 for gpt-oss-20b (12.82 GiB), Table 1's
    60.8 and 12.8 GiB within their rounding."""
    from costmodel import estimate

    params = estimate(name, seq_len=8, dtype="bf16").to_dict()["params"]
    stored = estimate(name, seq_len=8, dtype="bf16",
                      weight_dtype="mxfp4").to_dict()["memory"]["quantized_weights"]
    cfg_layers, experts = {"gpt-oss-20b": (24, 32), "gpt-oss-120b": (36, 128)}[name]
    expert_values = cfg_layers * experts * 3 * 2880 * 2880
    assert stored["data"] == expert_values // 2 and stored["scales"] == expert_values // 32
    assert stored["unquantized"] == 2 * (params["total"] - expert_values)
    assert stored["total"] == {"gpt-oss-20b": 13_761_264_768, "gpt-oss-120b": 65_248_815_744}[name]
    assert abs(stored["total"] / 2**30 - CHECKPOINT_GIB[name]) < 0.05


@pytest.mark.parametrize("change, words", [
    (dict(model="llama3-8b"), "quantizes routed experts only"),
    (dict(weight_group=64), "mxfp4 scales blocks of 32"),
])
def test_mxfp4_refuses_what_it_does_not_store(change, words):
    """vLLM's MXFP4 quantizes the experts only: a model without them is refused, and so is another
    block size."""
    from costmodel import estimate
    from costmodel.config import ConfigError

    kwargs = dict(dict(model="gpt-oss-20b"), **change)
    model = kwargs.pop("model")
    with pytest.raises(ConfigError, match=words):
        estimate(model, seq_len=8, weight_dtype="mxfp4", **kwargs).to_dict()
