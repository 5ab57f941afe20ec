"""Inference with the reference model: the KV cache equals full recomputation for every decoder
variant, holds only the KV heads, and greedy / beam search / sampling do what they claim.
Tiny odd sizes (d 48, h 6, h_kv 2, d_h 10, d_ff 37, vocab 99), float64."""

from __future__ import annotations

import itertools

import pytest
import torch

from costmodel.config import ModelConfig
from validate.decoding import (
    KVCache,
    beam_search,
    greedy_decode,
    kv_cache_bytes,
    prefill,
    recompute_logits,
    sample,
    sequence_log_prob,
    step,
)
from validate.reference import build_reference

ODD = dict(name="odd", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_head=10, d_ff=37, max_positions=40)

DECODERS = {
    "gpt2-like learned": dict(position="learned", activation="gelu_tanh"),
    "seeds sinusoidal post-ln": dict(position="sinusoidal", norm_position="post", activation="relu"),
    "llama-like rope gqa": dict(position="rope", norm="rmsnorm", activation="swiglu"),
    "rope multi-query": dict(position="rope", n_kv_heads=1),
    "alibi": dict(position="alibi", activation="geglu"),
    "relative": dict(position="relative", relative_buckets=9),
    "no positions": dict(position="none"),
}
ENCODER_DECODERS = {
    "seeds": dict(position="sinusoidal", norm_position="post", activation="relu", scale_embeddings=True, share_embeddings=False),
    "t5-like relative": dict(position="relative", relative_buckets=7, norm="rmsnorm", family="t5", tie_embeddings=True,
                             attention_scale=1.0, scale_lm_head_input=True),
    "rope gqa": dict(position="rope", n_kv_heads=3),
    "learned multi-query": dict(position="learned", n_kv_heads=1),
}


def model_of(layers: dict, **changes) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_reference(ModelConfig(**{**ODD, **layers, **changes})).double().eval()


def decoder(**changes):
    return model_of(dict(n_decoder_layers=2), **changes)


def encoder_decoder(**changes):
    return model_of(dict(n_encoder_layers=2, n_decoder_layers=2), **changes)


def _check_cache_equals_recomputation(model, input_ids, **prefill_args):
    state, logits = prefill(model, input_ids, **prefill_args)
    assert torch.allclose(logits, recompute_logits(state), rtol=1e-10, atol=1e-10)
    generator = torch.Generator().manual_seed(1)
    for _ in range(6):
        token = torch.randint(0, 99, (input_ids.shape[0],), generator=generator)
        cached = step(state, token)
        assert torch.allclose(cached, recompute_logits(state), rtol=1e-10, atol=1e-10)
    return state


@pytest.mark.parametrize("variant", sorted(DECODERS))
def test_cached_decoding_equals_full_recomputation_decoder(variant):
    model = decoder(**DECODERS[variant])
    prompt = torch.randint(0, 99, (3, 5))
    state = _check_cache_equals_recomputation(model, prompt)
    # ... and equals the plain forward of the whole sequence.
    tokens = torch.cat(state.tokens, dim=1)
    assert torch.allclose(model(tokens).logits[:, -1], recompute_logits(state))


@pytest.mark.parametrize("variant", sorted(ENCODER_DECODERS))
def test_cached_decoding_equals_full_recomputation_encoder_decoder(variant):
    model = encoder_decoder(**ENCODER_DECODERS[variant])
    source = torch.randint(0, 99, (3, 8))
    mask = torch.ones(3, 8, dtype=torch.long)
    mask[1, 6:] = 0
    _check_cache_equals_recomputation(model, source, attention_mask=mask)
    state = _check_cache_equals_recomputation(model, source, decoder_input_ids=torch.randint(0, 99, (3, 4)))
    tokens = torch.cat(state.tokens, dim=1)
    assert torch.allclose(model(source, tokens).logits[:, -1], recompute_logits(state))


def test_cache_holds_only_the_kv_heads_and_counts_its_bytes():
    model = decoder(position="rope")  # float64 after .double(): 8 bytes per element
    prompt = torch.randint(0, 99, (3, 7))
    state, _ = prefill(model, prompt)
    assert [tuple(t.shape) for t in state.cache.tensors()] == [(3, 2, 7, 10)] * 4  # 2 layers x (K, V)
    # 2 (K and V) x L 2 x b 3 x h_kv 2 x d_h 10 x 8 bytes = 1,920 bytes per cached token.
    assert kv_cache_bytes(model, prompt, 3) == {
        "prefill": 7 * 1920, "generated": 10 * 1920, "prefill_tokens": 7, "cached_tokens": 10,
    }
    model32 = decoder(position="rope").float()
    assert kv_cache_bytes(model32, prompt, 0)["prefill"] == 7 * 960


def test_encoder_decoder_cache_adds_the_cross_attention_keys_once():
    model = encoder_decoder(n_kv_heads=3)
    source = torch.randint(0, 99, (2, 9))
    state, _ = prefill(model, source)
    cross_before = [layer.cross_keys for layer in state.cache.layers]
    step(state, torch.tensor([4, 5]))
    assert all(layer.cross_keys is k for layer, k in zip(state.cache.layers, cross_before))
    # self: 2 x L 2 x b 2 x h_kv 3 x d_h 10 x 8 = 1,920 bytes per target token;
    # cross: the same per source token, 9 source tokens, held from the prefill on.
    result = kv_cache_bytes(model, source, 4, decoder_input_ids=torch.randint(0, 99, (2, 3)))
    assert result == {"prefill": (3 + 9) * 1920, "generated": (7 + 9) * 1920, "prefill_tokens": 3, "cached_tokens": 7}


def test_kv_cache_reorder_keeps_the_chosen_rows():
    model = decoder()
    state, _ = prefill(model, torch.randint(0, 99, (3, 4)))
    keys = state.cache.layers[1].keys.clone()
    state.cache.reorder(torch.tensor([2, 2, 0]))
    assert torch.equal(state.cache.layers[1].keys, keys[[2, 2, 0]])
    with pytest.raises(ValueError, match="no decoder"):
        KVCache.empty(model_of(dict(n_encoder_layers=1)))


# Greedy ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder"])
def test_greedy_takes_the_argmax_of_the_full_forward_at_every_step(arch):
    model = decoder(position="rope") if arch == "decoder" else encoder_decoder(position="relative", relative_buckets=7)
    prompt = torch.randint(0, 99, (3, 5))
    tokens = greedy_decode(model, prompt, 6)
    assert tokens.shape == (3, 6)
    assert torch.equal(tokens, greedy_decode(model, prompt, 6, use_cache=False))
    start = prompt if arch == "decoder" else torch.zeros(3, 1, dtype=torch.long)
    for i in range(6):
        sequence = torch.cat([start, tokens[:, :i]], dim=1)
        logits = model(sequence).logits if arch == "decoder" else model(prompt, sequence).logits
        assert torch.equal(tokens[:, i], logits[:, -1].argmax(-1))


def test_greedy_repeats_eos_once_a_sequence_ends():
    model = decoder()
    prompt = torch.randint(0, 99, (4, 3))
    free = greedy_decode(model, prompt, 5)
    eos = int(free[0, 1])  # the token greedy picks second for the first sequence
    tokens = greedy_decode(model, prompt, 5, eos_id=eos)
    assert torch.all(tokens[0, 1:] == eos)
    assert torch.equal(tokens[:, :1], free[:, :1])


# Beam search -------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder"])
def test_beam_of_one_is_greedy(arch):
    model = decoder(position="alibi") if arch == "decoder" else encoder_decoder()
    prompt = torch.randint(0, 99, (3, 5))
    greedy = greedy_decode(model, prompt, 6)
    beam = beam_search(model, prompt, 6, beam_size=1)
    assert torch.equal(beam.tokens, greedy)
    assert torch.allclose(beam.log_prob, sequence_log_prob(model, prompt, greedy))


@pytest.mark.parametrize("seed", range(4))
def test_wider_beams_never_lose_to_greedy_on_two_tokens(seed):
    """True for every k: with two new tokens the greedy sequence's prefix (the argmax) is always in
    the beam, so the beam's best total log-probability is at least greedy's."""
    model = model_of(dict(n_decoder_layers=2), vocab_size=13, position="rope")
    prompt = torch.randint(0, 13, (4, 3), generator=torch.Generator().manual_seed(seed))
    greedy = sequence_log_prob(model, prompt, greedy_decode(model, prompt, 2))
    for k in (2, 3, 5):
        beam = beam_search(model, prompt, 2, beam_size=k, length_penalty=0.0)
        assert torch.all(beam.log_prob >= greedy - 1e-12)
        assert torch.allclose(beam.log_prob, sequence_log_prob(model, prompt, beam.tokens))


def test_a_beam_as_wide_as_every_prefix_finds_the_most_probable_sequence():
    """With k >= V^(T-1) no prefix is ever dropped, so beam search is exhaustive: its result is the
    most probable of all V^T continuations (found here by brute force), never below greedy."""
    V, T = 5, 3
    model = model_of(dict(n_encoder_layers=1, n_decoder_layers=2), vocab_size=V, position="relative", relative_buckets=7)
    source = torch.randint(0, V, (2, 4), generator=torch.Generator().manual_seed(3))
    every = torch.tensor(list(itertools.product(range(V), repeat=T)))  # (125, 3)
    for row in range(2):
        sources = source[row : row + 1].expand(len(every), -1)
        best = sequence_log_prob(model, sources, every).max()
        beam = beam_search(model, source[row : row + 1], T, beam_size=V ** (T - 1))
        greedy = sequence_log_prob(model, source[row : row + 1], greedy_decode(model, source[row : row + 1], T))
        assert torch.allclose(beam.log_prob, best.reshape(1)) and beam.log_prob >= greedy - 1e-12


def test_beam_scores_are_length_normalised_with_eos():
    model = model_of(dict(n_decoder_layers=2), vocab_size=7, position="learned")
    prompt = torch.randint(0, 7, (3, 4), generator=torch.Generator().manual_seed(0))
    for alpha in (0.0, 1.0, 2.0):
        beam = beam_search(model, prompt, 6, beam_size=4, eos_id=2, length_penalty=alpha)
        assert torch.allclose(beam.score, beam.log_prob / beam.length.double() ** alpha)
        for row in range(3):
            tokens = beam.tokens[row].tolist()
            if 2 in tokens:  # finished: eos repeated after the first one, length up to it
                first = tokens.index(2)
                assert tokens[first:] == [2] * (6 - first) and beam.length[row] == first + 1
            else:
                assert beam.length[row] == 6


def test_invalid_decoding_arguments_raise():
    model = decoder()
    prompt = torch.randint(0, 99, (1, 3))
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, prompt, 3, beam_size=0)
    with pytest.raises(ValueError, match="temperature"):
        sample(model, prompt, 3, temperature=0.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_decode(model, prompt, 0)
    with pytest.raises(ValueError, match="cannot generate"):
        greedy_decode(model_of(dict(n_encoder_layers=1)), prompt, 2)


# Sampling ----------------------------------------------------------------------------------


def test_sampling_is_reproducible_and_stays_in_the_top_k():
    model = decoder(position="rope")
    prompt = torch.randint(0, 99, (4, 3))
    draw = lambda seed, **kw: sample(model, prompt, 5, generator=torch.Generator().manual_seed(seed), **kw)  # noqa: E731
    assert torch.equal(draw(7, top_k=3, temperature=1.5), draw(7, top_k=3, temperature=1.5))
    assert not torch.equal(draw(7), draw(8))
    assert torch.equal(draw(7, top_k=1), greedy_decode(model, prompt, 5))
    tokens = draw(11, top_k=3, temperature=5.0)
    for i in range(5):
        logits = model(torch.cat([prompt, tokens[:, :i]], dim=1)).logits[:, -1]
        top3 = logits.topk(3, dim=-1).indices
        assert torch.all((top3 == tokens[:, i : i + 1]).any(dim=1))
