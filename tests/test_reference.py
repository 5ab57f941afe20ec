"""The reference Transformer: parameter parity with Hugging Face and the seeds, structure, masks,
heads, losses and dense attention FLOPs. Sizes are tiny and odd (d 48, h 6, h_kv 2, d_ff 37,
vocab 99, d_h 10) so that a swapped dimension cannot hide."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from costmodel.config import ModelConfig
from costmodel.hf import from_hf_config
from costmodel.presets import PRESET_DIR, load_preset, preset_names
from validate.reference import IGNORE_INDEX, Transformer, build_reference, count_parameters
from validate.reference_blocks import LayerKV, RMSNorm, attention
from validate.reference_positions import RelativePositionBias

transformers = pytest.importorskip("transformers")

from tests.published import FLAGSHIPS, PUBLISHED  # noqa: E402

HF_CLASSES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "gpt2": "GPT2LMHeadModel",
    "bert": "BertModel",
    "t5": "T5ForConditionalGeneration",
}

ODD = dict(name="odd", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_ff=37, max_positions=40)


def meta_count(cfg: ModelConfig) -> int:
    with torch.device("meta"):
        return count_parameters(build_reference(cfg))


def hf_meta_count(data: dict) -> int:
    config = transformers.CONFIG_MAPPING[data["model_type"]](**data)
    with torch.device("meta"):
        model = getattr(transformers, HF_CLASSES[data["model_type"]])(config)
    return sum(p.numel() for p in model.parameters())


def expected_parameters(cfg: ModelConfig) -> int:
    """The count written out from the architecture, independently of the model code."""
    d, V, h, h_kv, d_h, d_ff = cfg.d_model, cfg.vocab_size, cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.d_ff
    norm = 2 * d if cfg.norm == "layernorm" else d
    attn = d * (h + 2 * h_kv) * d_h + cfg.qkv_bias * (h + 2 * h_kv) * d_h + h * d_h * d + cfg.out_bias * d
    n_in = 2 if cfg.gated else 1
    ffn = (n_in + 1) * d * d_ff + cfg.ffn_bias * (n_in * d_ff + d)
    embedding = (
        (cfg.max_positions * d if cfg.position == "learned" else 0)
        + cfg.token_types * d
        + (norm if cfg.embedding_norm else 0)
    )
    stack_extra = (norm if cfg.norm_position == "pre" else 0) + (
        cfg.relative_buckets * h if cfg.position == "relative" else 0
    )
    both = cfg.architecture == "encoder-decoder"
    total = 0
    if cfg.n_encoder_layers:
        total += embedding + stack_extra + cfg.n_encoder_layers * (attn + ffn + 2 * norm)
    if cfg.n_decoder_layers:
        per_layer = (2 if both else 1) * attn + ffn + (3 if both else 2) * norm
        total += embedding + stack_extra + cfg.n_decoder_layers * per_layer
    tables = 2 if both and not cfg.share_embeddings else 1
    total += tables * V * d
    if cfg.head == "lm":
        total += (0 if cfg.tie_embeddings else V * d) + cfg.lm_head_bias * V
    elif cfg.head == "pooler":
        total += d * d + d
    return total


def test_every_preset_has_a_published_count():
    # the flagships of issue 14: counted against their own classes (tests/test_presets_issue14.py)
    assert sorted({**PUBLISHED, **FLAGSHIPS}) == preset_names()


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_parameters_equal_the_published_count(name):
    assert meta_count(load_preset(name)) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_parameters_equal_the_written_out_count(name):
    assert expected_parameters(load_preset(name)) == PUBLISHED[name]


HF_PRESETS = [n for n in sorted(PUBLISHED) if "model_type" in json.loads((PRESET_DIR / f"{n}.json").read_text())]


@pytest.mark.parametrize("name", HF_PRESETS)
def test_preset_parameters_equal_hugging_face_on_meta(name):
    data = json.loads((PRESET_DIR / f"{name}.json").read_text())
    assert meta_count(load_preset(name)) == hf_meta_count(data)


ODD_HF = {
    "llama-gqa-head-dim": dict(
        model_type="llama", vocab_size=99, hidden_size=48, intermediate_size=37, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, head_dim=10, max_position_embeddings=40,
        tie_word_embeddings=False,
    ),
    "llama-biases-tied": dict(
        model_type="llama", vocab_size=99, hidden_size=48, intermediate_size=37, num_hidden_layers=3,
        num_attention_heads=6, num_key_value_heads=3, max_position_embeddings=40,
        attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
    ),
    "mistral-mqa": dict(
        model_type="mistral", vocab_size=99, hidden_size=48, intermediate_size=37,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=1, head_dim=10,
        max_position_embeddings=40, tie_word_embeddings=False,
    ),
    "qwen2-qkv-bias": dict(
        model_type="qwen2", vocab_size=99, hidden_size=48, intermediate_size=37, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, head_dim=10, max_position_embeddings=40,
        tie_word_embeddings=False,
    ),
    "gpt2": dict(model_type="gpt2", vocab_size=99, n_embd=48, n_head=6, n_inner=37, n_layer=3, n_positions=40),
    "bert": dict(
        model_type="bert", vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
        num_hidden_layers=2, max_position_embeddings=40, type_vocab_size=3,
    ),
    # No tie_word_embeddings=False case: transformers 5 ties T5's lm_head whatever the config says.
    "t5-gated": dict(
        model_type="t5", vocab_size=99, d_model=48, num_heads=6, d_kv=10, d_ff=37, num_layers=2,
        num_decoder_layers=3, relative_attention_num_buckets=7, feed_forward_proj="gated-gelu",
    ),
    "t5-relu-tied": dict(
        model_type="t5", vocab_size=99, d_model=48, num_heads=6, d_kv=10, d_ff=37, num_layers=3,
        num_decoder_layers=2, relative_attention_num_buckets=9, feed_forward_proj="relu",
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_HF))
def test_odd_hugging_face_configs_have_hugging_face_parameter_counts(case):
    data = ODD_HF[case]
    cfg = from_hf_config(data, name=case)
    ours = meta_count(cfg)
    assert ours == hf_meta_count(data)
    assert ours == expected_parameters(cfg)


ODD_CUSTOM = {
    "encdec-learned-unshared-untied-types": dict(
        n_encoder_layers=2, n_decoder_layers=3, position="learned", share_embeddings=False,
        tie_embeddings=False, lm_head_bias=True, token_types=3, embedding_norm=True,
    ),
    "encdec-unshared-tied-rms-pre-swiglu": dict(
        n_encoder_layers=1, n_decoder_layers=2, share_embeddings=False, tie_embeddings=True,
        norm="rmsnorm", norm_position="pre", activation="swiglu", d_head=10, position="rope",
    ),
    "encdec-relative-geglu-no-biases": dict(
        n_encoder_layers=2, n_decoder_layers=2, position="relative", relative_buckets=7,
        activation="geglu", qkv_bias=False, out_bias=False, ffn_bias=False, d_head=10,
    ),
    "decoder-alibi-post-ln-pooler": dict(
        n_decoder_layers=3, position="alibi", norm_position="post", head="pooler",
    ),
    "decoder-sinusoidal-gelu-tanh-none": dict(
        n_decoder_layers=2, position="sinusoidal", activation="gelu_tanh", head="none",
    ),
    "encoder-relative-silu-lm": dict(
        n_encoder_layers=3, position="relative", relative_buckets=5, activation="silu",
        tie_embeddings=False, lm_head_bias=True,
    ),
    "encoder-none-rms-pooler": dict(
        n_encoder_layers=2, position="none", norm="rmsnorm", head="pooler", token_types=2,
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_CUSTOM))
def test_odd_custom_configs_have_the_written_out_count(case):
    cfg = ModelConfig(**ODD, **ODD_CUSTOM[case])
    assert meta_count(cfg) == expected_parameters(cfg)


def test_seed_toy_structure_is_the_seeds():
    model = build_reference(load_preset("seed-toy"))
    # Separate source and target tables and an untied output Linear(64, 11) with a bias.
    assert model.encoder_embedding.tokens is not model.decoder_embedding.tokens
    assert model.head.weight is not model.decoder_embedding.tokens.weight
    assert tuple(model.head.weight.shape) == (11, 64) and tuple(model.head.bias.shape) == (11,)
    assert model.encoder.final_norm is None and model.decoder.final_norm is None  # post-LN
    layer = model.decoder.layers[0]
    assert [isinstance(m, torch.nn.LayerNorm) for m in (layer.self_attention.norm, layer.ffn.norm)] == [True, True]
    assert layer.self_attention.block.q_proj.bias is None and layer.ffn.block.up_proj.bias is not None
    assert count_parameters(layer) == 66_240 and count_parameters(model.encoder.layers[0]) == 49_728


def test_tied_and_shared_weights_are_one_parameter():
    t5 = build_reference(ModelConfig(**ODD, n_encoder_layers=1, n_decoder_layers=1, tie_embeddings=True))
    table = t5.encoder_embedding.tokens.weight
    assert t5.decoder_embedding.tokens.weight is table and t5.head.weight is table
    gpt2 = build_reference(ModelConfig(**ODD, n_decoder_layers=1, tie_embeddings=True))
    assert gpt2.head.weight is gpt2.embedding.tokens.weight
    assert sum(1 for p in gpt2.parameters() if p.shape == (99, 48)) == 1


def test_positions_and_slopes_are_buffers_not_parameters():
    for position, buffers in (("sinusoidal", {"table"}), ("rope", {"cos", "sin"}), ("alibi", {"slopes"})):
        model = build_reference(ModelConfig(**ODD, n_decoder_layers=1, position=position, d_head=10))
        names = {name.rsplit(".", 1)[-1] for name, _ in model.named_buffers()}
        assert names == buffers
        assert not any(name.rsplit(".", 1)[-1] in buffers for name, _ in model.named_parameters())
        assert not any(key.rsplit(".", 1)[-1] in buffers for key in model.state_dict())


def test_t5_keeps_one_relative_bias_per_stack():
    model = build_reference(load_preset("t5-small").replace(n_encoder_layers=2, n_decoder_layers=3))
    biases = [name for name, m in model.named_modules() if isinstance(m, RelativePositionBias)]
    assert biases == ["encoder.relative_bias", "decoder.relative_bias"]
    assert model.encoder.relative_bias.bidirectional and not model.decoder.relative_bias.bidirectional
    assert isinstance(model.decoder.final_norm, RMSNorm) and isinstance(model.encoder.final_norm, RMSNorm)
    assert model.head.scale == pytest.approx(512**-0.5)
    assert model.decoder.layers[0].self_attention.block.scale is None  # T5 does not scale scores


def test_bert_has_embedding_norm_token_types_post_ln_and_pooler():
    model = build_reference(from_hf_config(ODD_HF["bert"], name="bert"))
    assert isinstance(model.embedding.norm, torch.nn.LayerNorm)
    assert tuple(model.embedding.token_types.weight.shape) == (3, 48)
    assert model.encoder.final_norm is None
    ids = torch.randint(0, 99, (3, 7))
    out = model.eval()(ids, token_type_ids=torch.randint(0, 3, (3, 7)))
    dense = model.head.dense
    assert torch.allclose(out.pooled, torch.tanh(dense(out.hidden[:, 0])))
    assert out.logits is None and out.pooled.shape == (3, 48)


def test_pre_ln_models_have_a_final_norm_and_post_ln_models_do_not():
    pre = build_reference(ModelConfig(**ODD, n_decoder_layers=1, norm_position="pre"))
    post = build_reference(ModelConfig(**ODD, n_decoder_layers=1, norm_position="post"))
    assert pre.decoder.final_norm is not None and post.decoder.final_norm is None


def test_pre_and_post_ln_wiring():
    torch.manual_seed(0)
    for position, expect in (("pre", lambda x, s: x + s.block(s.norm(x))), ("post", lambda x, s: s.norm(x + s.block(x)))):
        model = build_reference(ModelConfig(**ODD, n_encoder_layers=1, norm_position=position)).double()
        sublayer = model.encoder.layers[0].ffn
        x = torch.randn(2, 5, 48, dtype=torch.float64)
        assert torch.allclose(sublayer(x), expect(x, sublayer))


def test_scaled_embeddings_multiply_by_sqrt_d():
    model = build_reference(ModelConfig(**ODD, n_decoder_layers=1, position="none", scale_embeddings=True))
    ids = torch.tensor([[3, 98]])
    assert torch.allclose(model.embedding(ids), model.embedding.tokens.weight[ids] * 48**0.5)


def test_loss_is_cross_entropy_over_labels_ignoring_padding():
    torch.manual_seed(0)
    model = build_reference(ModelConfig(**ODD, n_encoder_layers=1, n_decoder_layers=2))
    src, tgt = torch.randint(0, 99, (3, 7)), torch.randint(0, 99, (3, 5))
    labels = torch.randint(0, 99, (3, 5))
    labels[1, 3:] = IGNORE_INDEX
    out = model(src, tgt, labels=labels)
    keep = labels != IGNORE_INDEX
    expected = -out.logits.log_softmax(-1).gather(2, labels.clamp(min=0)[..., None])[..., 0][keep].mean()
    assert out.logits.shape == (3, 5, 99)
    assert torch.allclose(out.loss, expected)
    out.loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_invalid_calls_raise_value_errors():
    encdec = build_reference(ModelConfig(**ODD, n_encoder_layers=1, n_decoder_layers=1))
    ids = torch.randint(0, 99, (2, 5))
    with pytest.raises(ValueError, match="decoder_input_ids"):
        encdec(ids)
    with pytest.raises(ValueError, match="max_positions"):
        encdec(torch.randint(0, 99, (1, 41)), ids)
    bert = build_reference(from_hf_config(ODD_HF["bert"], name="bert"))
    with pytest.raises(ValueError, match="LM head"):
        bert(ids, labels=ids)
    with pytest.raises(ValueError, match="ModelConfig"):
        build_reference({"d_model": 48})
    with pytest.raises(ValueError, match="buckets"):
        build_reference(ModelConfig(**ODD, n_encoder_layers=1, position="relative", relative_buckets=3))


def test_the_reference_refuses_what_it_does_not_build():
    """Its activation table is config.py's ACTIVATIONS less the ones workload.py lists as not
    built, and a config using one of those, or weight-only LayerNorms, is refused, not misbuilt."""
    from costmodel.config import ACTIVATIONS as ALL_ACTIVATIONS
    from costmodel.workload import NOT_IN_REFERENCE_ACTIVATIONS
    from validate.reference_blocks import ACTIVATIONS

    assert set(ACTIVATIONS) == set(ALL_ACTIVATIONS) - set(NOT_IN_REFERENCE_ACTIVATIONS)
    base = ModelConfig(**ODD, n_decoder_layers=1)
    for cfg, field in [(base.replace(activation="xielu"), "activation xielu"),
                       (base.replace(norm_bias=False), "norm_bias")]:
        with pytest.raises(ValueError, match=field):
            build_reference(cfg)


def test_dropout_runs_only_in_training_and_only_when_configured():
    assert not any(isinstance(m, torch.nn.Dropout) for m in build_reference(ModelConfig(**ODD, n_decoder_layers=1, dropout=0.0)).modules())
    model = build_reference(ModelConfig(**ODD, n_decoder_layers=1, dropout=0.5))
    ids = torch.randint(0, 99, (2, 6))
    torch.manual_seed(1)
    a = model.train()(ids).logits
    b = model(ids).logits
    assert not torch.allclose(a, b)
    model.eval()
    assert torch.equal(model(ids).logits, model(ids).logits)


# Masks ------------------------------------------------------------------------------------


def test_causal_mask_zeroes_everything_above_the_diagonal_and_rows_sum_to_one():
    from validate.reference_blocks import additive_mask

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 5) for _ in range(3))
    _, weights = attention(q, k, v, additive_mask(7, 7, causal=True), scale=5**-0.5)
    above = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)
    assert torch.all(weights[..., above] == 0)
    assert torch.all(weights[..., ~above] > 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 7))


def test_padded_keys_get_zero_weight():
    from validate.reference_blocks import additive_mask

    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5), torch.randn(2, 3, 6, 5)
    padding = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    _, weights = attention(q, k, v, additive_mask(4, 6, causal=False, padding_mask=padding))
    assert torch.all(weights[0, :, :, 4:] == 0) and torch.all(weights[1] > 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 4))


def _with_garbage_padding(ids: torch.Tensor, real: int) -> torch.Tensor:
    """Other tokens at the first sequence's padded positions (from `real` on)."""
    other = ids.clone()
    other[0, real:] = (other[0, real:] + 17) % 99
    return other


@pytest.mark.parametrize("arch", ["encoder", "decoder", "encoder-decoder"])
def test_padding_does_not_change_outputs_at_real_positions(arch):
    torch.manual_seed(0)
    layers = {"encoder": dict(n_encoder_layers=2), "decoder": dict(n_decoder_layers=2),
              "encoder-decoder": dict(n_encoder_layers=2, n_decoder_layers=2)}[arch]
    model = build_reference(ModelConfig(**ODD, **layers, position="alibi")).double().eval()
    ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[0, 4:] = 0  # the first sequence has 4 real tokens and 3 pads at the end
    other = _with_garbage_padding(ids, 4)
    target = torch.randint(0, 99, (2, 5)) if arch == "encoder-decoder" else None
    a = model(ids, target, attention_mask=mask).logits
    b = model(other, target, attention_mask=mask).logits
    if arch == "encoder-decoder":
        assert torch.allclose(a, b)  # every target position sees only real source tokens
    else:
        assert torch.allclose(a[0, :4], b[0, :4]) and torch.allclose(a[1], b[1])
        assert not torch.allclose(a[0, 4:], b[0, 4:])  # the pads themselves did change


def test_mean_pooled_embedding_ignores_padding():
    torch.manual_seed(0)
    model = build_reference(ModelConfig(**ODD, n_encoder_layers=2, head="none")).double().eval()
    ids = torch.randint(0, 99, (2, 7))
    mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0], [1] * 7])
    a = model.sentence_embedding(ids, mask)
    b = model.sentence_embedding(_with_garbage_padding(ids, 3), mask)
    assert torch.allclose(a[0], b[0])
    assert torch.allclose(a[0], model.encode(ids[:1, :3]).mean(dim=1)[0])


# FLOPs --------------------------------------------------------------------------------------


def _matmul_flops(model: Transformer, *inputs: torch.Tensor) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    return counter.get_total_flops()


def test_decoder_flops_are_dense_with_gqa_and_swiglu():
    cfg = ModelConfig(**ODD, n_decoder_layers=3, d_head=10, position="rope", activation="swiglu")
    B, T, d, h, h_kv, d_h, d_ff, V = 2, 9, 48, 6, 2, 10, 37, 99
    per_layer = (
        2 * B * T * d * (h + 2 * h_kv) * d_h  # q, k, v projections
        + 2 * 2 * B * h * T * T * d_h  # q k^T and weights @ v over every (query, key) pair
        + 2 * B * T * h * d_h * d  # output projection
        + 3 * 2 * B * T * d * d_ff  # gate, up, down
    )
    expected = 3 * per_layer + 2 * B * T * d * V  # the vocabulary projection at every position
    assert _matmul_flops(build_reference(cfg), torch.randint(0, 99, (B, T))) == expected


def test_encoder_decoder_flops_count_cross_attention_over_the_source():
    cfg = ModelConfig(**ODD, n_encoder_layers=2, n_decoder_layers=1)
    B, S, T, d, h, h_kv, d_h, d_ff, V = 2, 7, 5, 48, 6, 2, 8, 37, 99

    def attention_block(q: int, k: int) -> int:  # q query tokens, k key tokens per sequence
        projections = 2 * B * q * d * h * d_h + 2 * 2 * B * k * d * h_kv * d_h + 2 * B * q * h * d_h * d
        return projections + 2 * 2 * B * h * q * k * d_h

    def ffn(n: int) -> int:
        return 2 * 2 * B * n * d * d_ff

    expected = (
        2 * (attention_block(S, S) + ffn(S))
        + attention_block(T, T) + attention_block(T, S) + ffn(T)
        + 2 * B * T * d * V
    )
    model = build_reference(cfg)
    assert _matmul_flops(model, torch.randint(0, 99, (B, S)), torch.randint(0, 99, (B, T))) == expected


def test_layer_kv_appends_along_the_token_axis():
    cache = LayerKV()
    k1, v1 = torch.randn(2, 2, 3, 10), torch.randn(2, 2, 3, 10)
    cache.append(k1, v1)
    k2, v2 = torch.randn(2, 2, 1, 10), torch.randn(2, 2, 1, 10)
    k, v = cache.append(k2, v2)
    assert cache.length == 4 and torch.equal(k[:, :, 3:], k2) and torch.equal(v[:, :, :3], v1)



@pytest.mark.slow
def test_llama2_7b_forward_flops_under_fake_tensors_match_the_design_number():
    """docs/design.md: Llama-2-7B forward at b=1, n=2048 counts 29,261,612,187,648 FLOPs
    = 2 n (L (4 d^2 + 3 d d_ff) + d V) + L 4 n^2 d, measured on HF's eager attention."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # docs/design.md: set the dtype before building
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            model = build_reference(load_preset("llama2-7b"))
            ids = torch.randint(0, 32000, (1, 2048))
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                out = model(ids)
            assert out.logits.dtype == torch.bfloat16  # no buffer upcasts the activations
            assert model.decoder.rotary.cos.dtype == torch.bfloat16
    finally:
        torch.set_default_dtype(previous)
    n, L, d, d_ff, V = 2048, 32, 4096, 11008, 32000
    assert counter.get_total_flops() == 2 * n * (L * (4 * d * d + 3 * d * d_ff) + d * V) + L * 4 * n * n * d
    assert counter.get_total_flops() == 29_261_612_187_648
