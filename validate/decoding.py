"""Inference with the reference Transformer: a KV cache, greedy decoding, beam search, sampling.

The KV cache holds, per decoder layer, the self-attention keys and values of every token seen so
far (appended each step) and, for an encoder-decoder, the cross-attention keys and values of the
encoder output (computed once, at the prefill). Only the KV heads are held: each tensor is
(B, h_kv, t, d_h), so KVCache.nbytes() is what the cost model's KV-cache formula predicts.

Every decoder takes `input_ids`: the prompt of a decoder-only model, or the source of an
encoder-decoder (whose decoder starts from `decoder_start_id`, the seeds' <bos> = 0, unless
`decoder_input_ids` gives a target prefix). It returns only the new tokens, (B, max_new_tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .reference import Transformer
from .reference_blocks import LayerKV

BOS = 0  # the seeds' <bos>, the decoder's first token in an encoder-decoder


@dataclass
class KVCache:
    """Every decoder layer's LayerKV, in order."""

    layers: list[LayerKV]

    @classmethod
    def empty(cls, model: Transformer) -> "KVCache":
        if model.decoder is None:
            raise ValueError(f"model {model.cfg.name!r} has no decoder, so no KV cache.")
        return cls([LayerKV() for _ in model.decoder.layers])

    @property
    def length(self) -> int:
        """Tokens whose self-attention keys and values are held."""
        return self.layers[0].length

    def tensors(self) -> list[Tensor]:
        """Every key and value tensor held (self- and cross-attention), each (B, h_kv, t, d_h)."""
        return [t for layer in self.layers for t in layer.tensors()]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows `index` (beam search: each beam's parent)."""
        for layer in self.layers:
            for name in ("keys", "values", "cross_keys", "cross_values"):
                tensor = getattr(layer, name)
                if tensor is not None:
                    setattr(layer, name, tensor.index_select(0, index))


@dataclass
class DecodingState:
    """What a step needs besides the new token: the cache and, for an encoder-decoder, the
    encoder output and its padding mask."""

    model: Transformer
    cache: KVCache
    memory: Tensor | None = None
    memory_mask: Tensor | None = None
    tokens: list[Tensor] = field(default_factory=list)  # the decoder's tokens so far, (B, 1) each

    def reorder(self, index: Tensor) -> None:
        self.cache.reorder(index)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, index)
        if self.memory_mask is not None:
            self.memory_mask = self.memory_mask.index_select(0, index)
        self.tokens = [t.index_select(0, index) for t in self.tokens]


def _check_lm(model: Transformer) -> None:
    if model.decoder is None or model.cfg.head != "lm":
        raise ValueError(
            f"model {model.cfg.name!r} cannot generate: it needs a decoder and an LM head."
        )


def _decoder_prompt(
    model: Transformer, input_ids: Tensor, decoder_input_ids: Tensor | None, decoder_start_id: int
) -> Tensor:
    if model.encoder is None:
        if decoder_input_ids is not None:
            raise ValueError("a decoder-only model takes its prompt as input_ids, not decoder_input_ids.")
        return input_ids
    if decoder_input_ids is not None:
        return decoder_input_ids
    return torch.full((input_ids.shape[0], 1), decoder_start_id, dtype=torch.long, device=input_ids.device)


@torch.no_grad()
def prefill(
    model: Transformer,
    input_ids: Tensor,
    *,
    attention_mask: Tensor | None = None,
    decoder_input_ids: Tensor | None = None,
    decoder_start_id: int = BOS,
) -> tuple[DecodingState, Tensor]:
    """Run the prompt (and the encoder) once, filling the cache; returns the state and the logits
    at the last prompt position, (B, V). For a decoder-only model attention_mask is not supported
    here (prompts of one length); for an encoder-decoder it is the source padding."""
    _check_lm(model)
    if model.encoder is None and attention_mask is not None:
        raise ValueError("cached decoding of a decoder-only model takes unpadded prompts of one length.")
    prompt = _decoder_prompt(model, input_ids, decoder_input_ids, decoder_start_id)
    state = DecodingState(model, KVCache.empty(model), tokens=list(prompt.split(1, dim=1)))
    if model.encoder is not None:
        state.memory = model.encode(input_ids, attention_mask)  # (B, S, d)
        state.memory_mask = attention_mask
    hidden = model.decode(prompt, state.memory, state.memory_mask, cache=state.cache.layers)
    # Logits at every prompt position, as in a forward (the project's FLOP convention), so a
    # prefill costs exactly a forward over the prompt.
    return state, model.head(hidden)[:, -1]  # (B, V)


@torch.no_grad()
def step(state: DecodingState, token: Tensor) -> Tensor:
    """Feed one token per sequence, (B,); its keys and values join the cache. Returns (B, V)."""
    token = token.reshape(-1, 1)  # (B, 1)
    state.tokens.append(token)
    model = state.model
    hidden = model.decode(token, state.memory, state.memory_mask, cache=state.cache.layers)
    return model.head(hidden)[:, 0]  # (B, V)


@torch.no_grad()
def recompute_logits(state: DecodingState) -> Tensor:
    """The next-token logits from a full forward over every token so far (no cache, causal mask):
    what cached decoding must equal. (B, V)."""
    model = state.model
    tokens = torch.cat(state.tokens, dim=1)  # (B, t)
    hidden = model.decode(tokens, state.memory, state.memory_mask)
    return model.head(hidden)[:, -1]


def _next_logits(state: DecodingState, token: Tensor, use_cache: bool) -> Tensor:
    if use_cache:
        return step(state, token)
    state.tokens.append(token.reshape(-1, 1))
    return recompute_logits(state)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    input_ids: Tensor,
    max_new_tokens: int,
    *,
    attention_mask: Tensor | None = None,
    decoder_input_ids: Tensor | None = None,
    decoder_start_id: int = BOS,
    eos_id: int | None = None,
    use_cache: bool = True,
) -> Tensor:
    """The most probable token at every step, (B, max_new_tokens); after eos_id, eos_id again.
    use_cache=False recomputes the whole prefix every step (the check of the cache)."""
    _check_positive("max_new_tokens", max_new_tokens)
    state, logits = prefill(
        model, input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
        decoder_start_id=decoder_start_id,
    )
    done = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    out = []
    for i in range(max_new_tokens):
        token = logits.argmax(dim=-1)  # (B,)
        if eos_id is not None:
            token = torch.where(done, torch.full_like(token, eos_id), token)
            done |= token == eos_id
        out.append(token)
        if i + 1 < max_new_tokens:
            logits = _next_logits(state, token, use_cache)
    return torch.stack(out, dim=1)


@torch.no_grad()
def sample(
    model: Transformer,
    input_ids: Tensor,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    attention_mask: Tensor | None = None,
    decoder_input_ids: Tensor | None = None,
    decoder_start_id: int = BOS,
) -> Tensor:
    """Sample each token from softmax(logits / temperature), restricted to the top_k most probable
    tokens when top_k is given. Reproducible with a seeded torch.Generator. (B, max_new_tokens)."""
    _check_positive("max_new_tokens", max_new_tokens)
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}.")
    if top_k is not None:
        _check_positive("top_k", top_k)
    state, logits = prefill(
        model, input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
        decoder_start_id=decoder_start_id,
    )
    out = []
    for i in range(max_new_tokens):
        logits = logits / temperature
        if top_k is not None and top_k < logits.shape[-1]:
            kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
            logits = logits.masked_fill(logits < kth, float("-inf"))
        token = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)[:, 0]  # (B,)
        out.append(token)
        if i + 1 < max_new_tokens:
            logits = step(state, token)
    return torch.stack(out, dim=1)


@dataclass
class BeamResult:
    """The best hypothesis of each sequence: tokens (B, T), its total log-probability (B,),
    its length-normalised score (B,) and its length up to and including eos (B,)."""

    tokens: Tensor
    log_prob: Tensor
    score: Tensor
    length: Tensor


def length_normalised(log_prob: Tensor, length: Tensor, length_penalty: float) -> Tensor:
    """log P / length^alpha: alpha = 0 ranks by total log-probability, 1 by the per-token mean."""
    return log_prob / length.to(log_prob.dtype) ** length_penalty


@torch.no_grad()
def beam_search(
    model: Transformer,
    input_ids: Tensor,
    max_new_tokens: int,
    *,
    beam_size: int = 4,
    length_penalty: float = 1.0,
    attention_mask: Tensor | None = None,
    decoder_input_ids: Tensor | None = None,
    decoder_start_id: int = BOS,
    eos_id: int | None = None,
) -> BeamResult:
    """Keep the beam_size prefixes of highest total log-probability at every step; a finished
    hypothesis (it produced eos_id) keeps its score and pads with eos_id. Among the final beams
    the one with the best length-normalised score wins (without eos_id every beam has the same
    length, so that is the most probable beam)."""
    _check_positive("max_new_tokens", max_new_tokens)
    _check_positive("beam_size", beam_size)
    B = input_ids.shape[0]
    k = beam_size
    expand = lambda t: None if t is None else t.repeat_interleave(k, dim=0)  # noqa: E731
    state, logits = prefill(
        model, expand(input_ids), attention_mask=expand(attention_mask),
        decoder_input_ids=expand(decoder_input_ids), decoder_start_id=decoder_start_id,
    )
    V = logits.shape[-1]
    device = logits.device
    total = torch.full((B, k), float("-inf"), device=device)
    total[:, 0] = 0.0  # the k copies of one start: only the first may grow at step one
    length = torch.zeros(B, k, dtype=torch.long, device=device)
    done = torch.zeros(B, k, dtype=torch.bool, device=device)
    tokens = torch.zeros(B, k, 0, dtype=torch.long, device=device)
    for i in range(max_new_tokens):
        log_probs = logits.double().log_softmax(dim=-1).view(B, k, V)  # (B, k, V)
        if eos_id is not None:  # a finished beam can only repeat eos_id, at no cost
            finished = torch.full((V,), float("-inf"), dtype=log_probs.dtype, device=device)
            finished[eos_id] = 0.0
            log_probs = torch.where(done[..., None], finished, log_probs)
        candidates = (total[..., None] + log_probs).view(B, k * V)  # (B, k*V)
        total, flat = candidates.topk(k, dim=-1)  # (B, k)
        parent, token = flat // V, flat % V  # (B, k)
        tokens = torch.cat([tokens.gather(1, parent[..., None].expand(-1, -1, i)), token[..., None]], 2)
        length = length.gather(1, parent) + (~done.gather(1, parent)).long()
        done = done.gather(1, parent) | (token == eos_id if eos_id is not None else False)
        if i + 1 < max_new_tokens:
            rows = (parent + torch.arange(B, device=device)[:, None] * k).view(-1)  # (B*k,)
            state.reorder(rows)
            logits = step(state, token.view(-1))
    score = length_normalised(total, length, length_penalty)  # (B, k)
    best = score.argmax(dim=-1, keepdim=True)  # (B, 1)
    return BeamResult(
        tokens=tokens.gather(1, best[..., None].expand(-1, -1, tokens.shape[-1]))[:, 0],
        log_prob=total.gather(1, best)[:, 0],
        score=score.gather(1, best)[:, 0],
        length=length.gather(1, best)[:, 0],
    )


@torch.no_grad()
def sequence_log_prob(
    model: Transformer,
    input_ids: Tensor,
    new_tokens: Tensor,
    *,
    attention_mask: Tensor | None = None,
    decoder_start_id: int = BOS,
) -> Tensor:
    """The total log-probability the model gives new_tokens (B, T) after the prompt (or, for an
    encoder-decoder, after decoder_start_id given the source), by one full forward. (B,)."""
    _check_lm(model)
    prompt = _decoder_prompt(model, input_ids, None, decoder_start_id)
    sequence = torch.cat([prompt, new_tokens], dim=1)  # (B, t + T)
    memory = model.encode(input_ids, attention_mask) if model.encoder is not None else None
    hidden = model.decode(sequence[:, :-1], memory, attention_mask)
    log_probs = model.head(hidden).double().log_softmax(dim=-1)[:, prompt.shape[1] - 1 :]  # (B, T, V)
    return log_probs.gather(2, new_tokens[..., None])[..., 0].sum(dim=1)


@torch.no_grad()
def kv_cache_bytes(
    model: Transformer,
    input_ids: Tensor,
    gen_tokens: int,
    *,
    attention_mask: Tensor | None = None,
    decoder_input_ids: Tensor | None = None,
) -> dict[str, int]:
    """KV-cache bytes after the prefill (n prompt tokens of a decoder-only model, or the source
    plus the n tokens of decoder_input_ids of an encoder-decoder, default n = 1: <bos>), and after
    gen_tokens decode steps that each feed one more (greedy) token, so the cache then holds n + T
    tokens. Returns {"prefill": bytes, "generated": bytes, "prefill_tokens": n,
    "cached_tokens": n + T}."""
    if gen_tokens < 0:
        raise ValueError(f"gen_tokens must be at least 0, got {gen_tokens}.")
    state, logits = prefill(
        model, input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids
    )
    after_prefill, n = state.cache.nbytes(), state.cache.length
    for _ in range(gen_tokens):
        logits = step(state, logits.argmax(dim=-1))
    return {
        "prefill": after_prefill,
        "generated": state.cache.nbytes(),
        "prefill_tokens": n,
        "cached_tokens": state.cache.length,
    }


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
