"""Every torch block of the reference model against its plain-numpy formula (validate/numpy_reference),
in float64 on tiny odd sizes (d 48, h 6, h_kv 2, d_h 10, d_ff 37, vocab 99), as the seeds do."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from costmodel.config import ModelConfig
from validate import numpy_reference as npr
from validate.reference import AttentionInputs, DecoderLayer, EncoderLayer, Embeddings, build_reference
from validate.reference_blocks import (
    FeedForward,
    MultiHeadAttention,
    RMSNorm,
    Sublayer,
    TokenEmbedding,
    additive_mask,
    attention,
    make_norm,
)
from validate.reference_positions import (
    AlibiBias,
    LearnedPositions,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositions,
    alibi_slopes,
    apply_rotary,
    relative_bucket,
)

ODD = dict(name="odd", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_head=10, d_ff=37, max_positions=40)
B, T, S = 3, 7, 5


@pytest.fixture(autouse=True)
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(previous)


def cfg(**changes) -> ModelConfig:
    return ModelConfig(**{**ODD, "n_encoder_layers": 1, "n_decoder_layers": 1, **changes})


def randomise(module: torch.nn.Module) -> torch.nn.Module:
    """Random weights everywhere, norms and biases included, so that no term hides behind a 0 or 1."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if p.dim() == 1 else 0.0))
    return module.eval()


def close(torch_value: torch.Tensor, numpy_value: np.ndarray) -> bool:
    return np.allclose(torch_value.detach().numpy(), numpy_value, rtol=1e-9, atol=1e-11)


def x_of(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


# Embeddings and positions -------------------------------------------------------------------


@pytest.mark.parametrize("scale", [False, True])
def test_token_embedding(scale):
    block = randomise(TokenEmbedding(cfg(scale_embeddings=scale)))
    ids = torch.randint(0, 99, (B, T))
    assert close(block(ids), npr.embedding(ids.numpy(), npr.numpy_params(block)["weight"], scale))


def test_sinusoidal_positions():
    block = SinusoidalPositions(cfg(d_model=47, n_heads=1, n_kv_heads=1, d_head=None))
    x = x_of(B, T, 47)
    table = npr.sinusoid_table(40, 47)
    assert close(block(x, start=3), x.numpy() + table[3 : 3 + T])
    # PE(pos=1, 0) = sin(1) and PE(pos=1, 1) = cos(1) (Vaswani et al., section 3.5)
    assert block.table[1, 0].item() == pytest.approx(np.sin(1.0)) and block.table[1, 1].item() == pytest.approx(np.cos(1.0))


def test_learned_positions():
    block = randomise(LearnedPositions(cfg(position="learned")))
    x = x_of(B, T, 48)
    assert close(block(x, start=2), x.numpy() + npr.numpy_params(block)["weight"][2 : 2 + T])


def test_embeddings_with_token_types_and_norm():
    c = cfg(position="learned", token_types=3, embedding_norm=True, scale_embeddings=True)
    block = randomise(Embeddings(c, TokenEmbedding(c)))
    ids, types = torch.randint(0, 99, (B, T)), torch.randint(0, 3, (B, T))
    p = npr.numpy_params(block)
    x = npr.embedding(ids.numpy(), p["tokens.weight"], True) + p["positions.weight"][:T] + p["token_types.weight"][types.numpy()]
    assert close(block(ids, types), npr.layer_norm(x, p["norm.weight"], p["norm.bias"]))


def test_rope_rotation():
    rotary = RotaryEmbedding(cfg(position="rope"))
    x = x_of(B, 6, T, 10)
    cos, sin = rotary(4, T)
    assert close(apply_rotary(x, cos, sin), npr.rope(x.numpy(), np.arange(4, 4 + T)))
    # A rotation keeps each pair's norm, and position 0 is the identity.
    assert torch.allclose(apply_rotary(x, cos, sin).norm(dim=-1), x.norm(dim=-1))
    assert torch.allclose(apply_rotary(x[:, :, :1], *rotary(0, 1)), x[:, :, :1])


def test_alibi_slopes_and_bias():
    # Press et al. 2022: 8 heads -> 1/2, 1/4, ..., 1/256; 6 heads -> the 4-head slopes then the
    # odd-numbered slopes of 8 heads: 1/4, 1/16, 1/64, 1/256, 1/2, 1/8.
    assert alibi_slopes(8) == [2.0**-k for k in range(1, 9)]
    assert alibi_slopes(6) == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    assert np.allclose(npr.alibi_slopes(6), alibi_slopes(6))
    block = AlibiBias(cfg(position="alibi"))
    assert close(block(2, T, 2 + T), npr.alibi_bias(6, 2, T, 2 + T))


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_relative_bias(bidirectional):
    block = randomise(RelativePositionBias(cfg(position="relative", relative_buckets=32), bidirectional))
    table = npr.numpy_params(block)["table.weight"]
    # 200 keys reach past max_distance = 128, so the logarithmic and the clamped buckets are used.
    assert close(block(150, 3, 200), npr.relative_bias(table, bidirectional, 150, 3, 200))
    # Buckets of offsets -1, -20, -200, +5 from T5's own code (transformers 5.24,
    # T5Attention._relative_position_bucket, 32 buckets, max_distance 128).
    offsets = (-1, -20, -200, 5)
    assert [npr.t5_bucket(r, True, 32) for r in offsets] == [1, 10, 15, 21]
    assert [npr.t5_bucket(r, False, 32) for r in offsets] == [1, 17, 31, 0]


@pytest.mark.parametrize("n_buckets", [4, 7, 32])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_equal_hugging_face(n_buckets, bidirectional):
    transformers_t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    offsets = torch.arange(-300, 300)
    theirs = transformers_t5.T5Attention._relative_position_bucket(offsets, bidirectional, n_buckets, 128)
    assert torch.equal(relative_bucket(offsets, bidirectional, n_buckets, 128), theirs)


# Attention ----------------------------------------------------------------------------------


@pytest.mark.parametrize("masked", ["none", "causal", "padding"])
def test_scaled_dot_product_attention(masked):
    q, k, v = x_of(B, 6, T, 10), x_of(B, 6, T, 10), x_of(B, 6, T, 10)
    padding = torch.ones(B, T, dtype=torch.long)
    padding[0, 5:] = 0
    mask, allowed = None, None
    if masked == "causal":
        mask, allowed = additive_mask(T, T, causal=True), npr.causal_allowed(T, T)
    elif masked == "padding":
        mask = additive_mask(T, T, causal=False, padding_mask=padding)
        allowed = padding.numpy().astype(bool)[:, None, None, :]
    out, weights = attention(q, k, v, mask, scale=10**-0.5)
    expected_out, expected_weights = npr.attention(q.numpy(), k.numpy(), v.numpy(), allowed, scale=10**-0.5)
    assert close(out, expected_out) and close(weights, expected_weights)


@pytest.mark.parametrize("h_kv", [6, 2, 1])
@pytest.mark.parametrize("position", ["none", "rope", "alibi"])
def test_multi_head_attention_with_grouped_query_heads(h_kv, position):
    c = cfg(n_kv_heads=h_kv, position=position, qkv_bias=True, out_bias=True)
    block = randomise(MultiHeadAttention(c))
    x = x_of(B, T, 48)
    inputs = AttentionInputs(mask=additive_mask(T, T, causal=True))
    bias, positions = None, None
    if position == "rope":
        inputs.rotary, positions = RotaryEmbedding(c)(0, T), np.arange(T)
    if position == "alibi":
        inputs.bias, bias = AlibiBias(c)(0, T, T), npr.alibi_bias(6, 0, T, T)
    expected = npr.multi_head_attention(
        x.numpy(), npr.numpy_params(block), c, allowed=npr.causal_allowed(T, T), bias=bias, positions=positions
    )
    assert close(block(x, inputs=inputs), expected)


def test_cross_attention_reads_keys_from_the_memory_and_t5_does_not_scale():
    c = cfg(family="t5", attention_scale=1.0, qkv_bias=False, out_bias=False)
    block = randomise(MultiHeadAttention(c, cross=True))
    x, memory = x_of(B, T, 48), x_of(B, S, 48)
    padding = torch.tensor([[1, 1, 1, 0, 0], [1] * 5, [1, 1, 1, 1, 0]])
    mask = additive_mask(T, S, causal=False, padding_mask=padding)
    allowed = padding.numpy().astype(bool)[:, None, None, :]
    expected = npr.multi_head_attention(x.numpy(), npr.numpy_params(block), c, memory.numpy(), allowed)
    assert close(block(x, memory, AttentionInputs(mask=mask)), expected)


# Feed-forward and norms -------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["relu", "relu2", "gelu", "gelu_tanh", "silu", "swiglu", "geglu"])
@pytest.mark.parametrize("bias", [True, False])
def test_feed_forward(activation, bias):
    block = randomise(FeedForward(cfg(activation=activation, ffn_bias=bias)))
    x = x_of(B, T, 48)
    assert close(block(x), npr.feed_forward(x.numpy(), npr.numpy_params(block), activation))
    assert (block.gate_proj is not None) == (activation in ("swiglu", "geglu"))


def test_layer_norm_and_rms_norm():
    x = x_of(B, T, 48) * 3 + 1
    layer = randomise(make_norm(cfg(norm="layernorm")))
    p = npr.numpy_params(layer)
    assert close(layer(x), npr.layer_norm(x.numpy(), p["weight"], p["bias"]))
    rms = randomise(make_norm(cfg(norm="rmsnorm")))
    assert isinstance(rms, RMSNorm) and close(rms(x), npr.rms_norm(x.numpy(), npr.numpy_params(rms)["weight"]))


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_add_and_norm(norm_position, norm):
    c = cfg(norm=norm, norm_position=norm_position)
    block = randomise(Sublayer(c, FeedForward(c)))
    x = x_of(B, T, 48)
    p = npr.numpy_params(block)
    expected = npr.add_norm(
        x.numpy(), lambda y: npr.feed_forward(y, npr.sub(p, "block"), c.activation), npr.sub(p, "norm"), c
    )
    assert close(block(x), expected)


# Layers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        dict(norm_position="post", activation="relu"),  # the seeds
        dict(norm="rmsnorm", norm_position="pre", activation="swiglu", position="rope"),
        dict(position="relative", relative_buckets=9, activation="geglu", family="t5", attention_scale=1.0),
    ],
)
def test_encoder_layer(changes):
    c = cfg(**changes)
    layer = randomise(EncoderLayer(c))
    x = x_of(B, T, 48)
    padding = torch.tensor([[1] * 5 + [0] * 2, [1] * 7, [1] * 6 + [0]])
    inputs = AttentionInputs(mask=additive_mask(T, T, causal=False, padding_mask=padding))
    bias, positions = None, None
    if c.position == "rope":
        inputs.rotary, positions = RotaryEmbedding(c)(0, T), np.arange(T)
    if c.position == "relative":
        table = randomise(RelativePositionBias(c, bidirectional=True))
        inputs.bias = table(0, T, T)
        bias = npr.relative_bias(npr.numpy_params(table)["table.weight"], True, 0, T, T)
    allowed = padding.numpy().astype(bool)[:, None, None, :]
    expected = npr.encoder_layer(x.numpy(), npr.numpy_params(layer), c, allowed, bias, positions)
    assert close(layer(x, inputs), expected)


@pytest.mark.parametrize("cross", [True, False])
@pytest.mark.parametrize("changes", [dict(norm_position="post"), dict(norm="rmsnorm", norm_position="pre", activation="swiglu", position="rope")])
def test_decoder_layer(cross, changes):
    c = cfg(**changes)
    layer = randomise(DecoderLayer(c, cross=cross))
    x, memory = x_of(B, T, 48), x_of(B, S, 48) if cross else None
    inputs = AttentionInputs(mask=additive_mask(T, T, causal=True))
    positions = None
    if c.position == "rope":
        inputs.rotary, positions = RotaryEmbedding(c)(0, T), np.arange(T)
    memory_inputs = AttentionInputs(mask=additive_mask(T, S, causal=False)) if cross else None
    expected = npr.decoder_layer(
        x.numpy(), npr.numpy_params(layer), c, None if memory is None else memory.numpy(), positions=positions
    )
    assert close(layer(x, inputs, memory, memory_inputs), expected)


def test_whole_seed_style_model_from_numpy_layers():
    """The seeds' encoder-decoder end to end: embeddings, 2 + 2 post-LN layers, output projection."""
    c = cfg(n_encoder_layers=2, n_decoder_layers=2, scale_embeddings=True, tie_embeddings=False,
            share_embeddings=False, lm_head_bias=True, position="sinusoidal", qkv_bias=False, out_bias=False,
            norm_position="post", activation="relu")
    model = randomise(build_reference(c))
    p = npr.numpy_params(model)
    src, tgt = torch.randint(0, 99, (B, S)), torch.randint(0, 99, (B, T))
    table = npr.sinusoid_table(40, 48)
    x = npr.embedding(src.numpy(), p["encoder_embedding.tokens.weight"], True) + table[:S]
    for i in range(2):
        x = npr.encoder_layer(x, npr.sub(p, f"encoder.layers.{i}"), c)
    y = npr.embedding(tgt.numpy(), p["decoder_embedding.tokens.weight"], True) + table[:T]
    for i in range(2):
        y = npr.decoder_layer(y, npr.sub(p, f"decoder.layers.{i}"), c, x)
    logits = y @ p["head.weight"].T + p["head.bias"]
    assert close(model(src, tgt).logits, logits)
