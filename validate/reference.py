"""The seeds' Transformer as a real PyTorch model, built from one ModelConfig.

build_reference(cfg) gives an encoder-decoder (Vaswani et al. 2017, T5), a decoder-only model
(GPT-2, Llama, Mistral, Qwen2) or an encoder-only model (BERT) whose parameter count equals the
Hugging Face class's (tied weights counted once, buffers never). It is the measured side of the
cost model: its module paths follow the cost tree (costmodel/tree.py):

    encoder_embedding | embedding      tokens, positions, token_types, norm
    encoder.layers.<i>                 self_attention (.norm, .block), ffn (.norm, .block)
    decoder_embedding | embedding
    decoder.layers.<i>                 self_attention, cross_attention, ffn
    encoder|decoder.relative_bias      T5's bias table, one per stack; .final_norm (pre-LN only)
    head                               LMHead (logits at every position) or Pooler

The blocks live in reference_blocks.py and reference_positions.py; this module wires them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from costmodel.config import ModelConfig

from .reference_blocks import (
    AttentionInputs,
    FeedForward,
    LayerKV,
    LMHead,
    MultiHeadAttention,
    Pooler,
    Sublayer,
    TokenEmbedding,
    additive_mask,
    dropout_module,
    make_norm,
    mean_pool,
)
from .reference_positions import (
    AlibiBias,
    LearnedPositions,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositions,
)

IGNORE_INDEX = -100  # labels with this value add nothing to the loss (padding)


class Embeddings(nn.Module):
    """One stack's input: token embedding (maybe shared with another stack), added positions
    (sinusoidal or learned), token types (BERT), an embedding norm (BERT), then dropout."""

    def __init__(self, cfg: ModelConfig, tokens: TokenEmbedding):
        super().__init__()
        self.tokens = tokens
        added = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}.get(cfg.position)
        self.positions = added(cfg) if added else None
        self.token_types = nn.Embedding(cfg.token_types, cfg.d_model) if cfg.token_types else None
        self.norm = make_norm(cfg) if cfg.embedding_norm else None
        self.dropout = dropout_module(cfg)

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None, start: int = 0) -> Tensor:
        x = self.tokens(ids)  # (B, T, d)
        if self.positions is not None:
            x = self.positions(x, start)
        if self.token_types is not None:
            types = token_type_ids if token_type_ids is not None else torch.zeros_like(ids)
            x = x + self.token_types(types)
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)


class EncoderLayer(nn.Module):
    """Bidirectional self-attention, then the FFN, each inside Add & Norm."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attention = Sublayer(cfg, MultiHeadAttention(cfg))
        self.ffn = Sublayer(cfg, FeedForward(cfg))

    def forward(self, x: Tensor, inputs: AttentionInputs) -> Tensor:
        x = self.self_attention(x, inputs=inputs)  # (B, S, d)
        return self.ffn(x)


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder output (encoder-decoder only), FFN."""

    def __init__(self, cfg: ModelConfig, cross: bool):
        super().__init__()
        self.self_attention = Sublayer(cfg, MultiHeadAttention(cfg))
        self.cross_attention = Sublayer(cfg, MultiHeadAttention(cfg, cross=True)) if cross else None
        self.ffn = Sublayer(cfg, FeedForward(cfg))

    def forward(
        self,
        x: Tensor,
        inputs: AttentionInputs,
        memory: Tensor | None = None,
        memory_inputs: AttentionInputs | None = None,
        cache: LayerKV | None = None,
    ) -> Tensor:
        x = self.self_attention(x, inputs=inputs, cache=cache)  # (B, T, d)
        if self.cross_attention is not None:
            x = self.cross_attention(x, memory, memory_inputs, cache)  # (B, T, d)
        return self.ffn(x)


class Stack(nn.Module):
    """A stack of layers and what they share: the mask, the position bias or RoPE tables, and
    (pre-LN) a final norm. T5's relative bias table lives here, once per stack."""

    def __init__(self, cfg: ModelConfig, causal: bool, cross: bool = False):
        super().__init__()
        self.causal = causal
        self.rotary = RotaryEmbedding(cfg) if cfg.position == "rope" else None
        self.alibi = AlibiBias(cfg) if cfg.position == "alibi" else None
        relative = cfg.position == "relative"
        self.relative_bias = RelativePositionBias(cfg, bidirectional=not causal) if relative else None
        n_layers = cfg.n_decoder_layers if causal else cfg.n_encoder_layers
        self.layers = nn.ModuleList(
            DecoderLayer(cfg, cross) if causal else EncoderLayer(cfg) for _ in range(n_layers)
        )
        self.final_norm = make_norm(cfg) if cfg.norm_position == "pre" else None

    def attention_inputs(self, x: Tensor, start: int, padding_mask: Tensor | None) -> AttentionInputs:
        T = x.shape[1]
        S = start + T  # keys: every cached token and the new ones
        mask = additive_mask(
            T, S, causal=self.causal, start=start, padding_mask=padding_mask, dtype=x.dtype,
            device=x.device,
        )  # (B or 1, 1, T, S)
        bias = None
        if self.alibi is not None:
            bias = self.alibi(start, T, S).to(x.dtype)  # (h, T, S)
        elif self.relative_bias is not None:
            bias = self.relative_bias(start, T, S)  # (h, T, S)
        rotary = self.rotary(start, T) if self.rotary is not None else None
        return AttentionInputs(mask, bias, rotary)

    def finish(self, x: Tensor) -> Tensor:
        return self.final_norm(x) if self.final_norm is not None else x


class Encoder(Stack):
    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg, causal=False)

    def forward(self, x: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        inputs = self.attention_inputs(x, 0, attention_mask)
        for layer in self.layers:
            x = layer(x, inputs)  # (B, S, d)
        return self.finish(x)


class Decoder(Stack):
    def __init__(self, cfg: ModelConfig, cross: bool):
        super().__init__(cfg, causal=True, cross=cross)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        attention_mask: Tensor | None = None,
        cache: list[LayerKV] | None = None,
    ) -> Tensor:
        """x: (B, T, d) embedded tokens at positions start.. (start = tokens already cached);
        memory: (B, S, d) the encoder output; attention_mask: (B, start + T) decoder padding."""
        start = cache[0].length if cache else 0
        inputs = self.attention_inputs(x, start, attention_mask)
        memory_inputs = None
        if memory is not None:
            memory_inputs = AttentionInputs(
                additive_mask(
                    x.shape[1], memory.shape[1], causal=False, padding_mask=memory_mask,
                    dtype=x.dtype, device=x.device,
                )  # (B or 1, 1, T, S)
            )
        for i, layer in enumerate(self.layers):
            x = layer(x, inputs, memory, memory_inputs, cache[i] if cache else None)  # (B, T, d)
        return self.finish(x)


@dataclass
class ReferenceOutput:
    """hidden: the last stack's output (B, T, d); logits (B, T, V) with an LM head; pooled (B, d)
    with a pooler; loss: mean cross-entropy over labels that are not IGNORE_INDEX."""

    hidden: Tensor
    logits: Tensor | None = None
    pooled: Tensor | None = None
    loss: Tensor | None = None


class Transformer(nn.Module):
    """Encoder-decoder, decoder-only or encoder-only, as the config's layer counts say."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        first = TokenEmbedding(cfg)
        last = first
        if cfg.architecture == "encoder-decoder":
            last = first if cfg.share_embeddings else TokenEmbedding(cfg)
            self.encoder_embedding = Embeddings(cfg, first)
            self.encoder = Encoder(cfg)
            self.decoder_embedding = Embeddings(cfg, last)
            self.decoder = Decoder(cfg, cross=True)
        else:
            self.embedding = Embeddings(cfg, first)
            self.encoder = Encoder(cfg) if cfg.architecture == "encoder" else None
            self.decoder = Decoder(cfg, cross=False) if cfg.architecture == "decoder" else None
        heads = {"lm": lambda: LMHead(cfg, last), "pooler": lambda: Pooler(cfg), "none": lambda: None}
        self.head = heads[cfg.head]()
        for p in self.parameters():  # the seeds' initialisation: Glorot for every matrix
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def _embedding(self, side: str) -> Embeddings:
        if self.cfg.architecture == "encoder-decoder":
            return self.encoder_embedding if side == "encoder" else self.decoder_embedding
        return self.embedding

    def encode(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
    ) -> Tensor:
        """The encoder's output (B, S, d); attention_mask (B, S) is 1 for real tokens, 0 for padding."""
        if self.encoder is None:
            raise ValueError(f"model {self.cfg.name!r} has no encoder.")
        x = self._embedding("encoder")(input_ids, token_type_ids)  # (B, S, d)
        return self.encoder(x, attention_mask)

    def decode(
        self,
        input_ids: Tensor,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        attention_mask: Tensor | None = None,
        cache: list[LayerKV] | None = None,
        token_type_ids: Tensor | None = None,
    ) -> Tensor:
        """The decoder's output (B, T, d) for tokens that follow the `cache`'s tokens (if any)."""
        if self.decoder is None:
            raise ValueError(f"model {self.cfg.name!r} has no decoder.")
        if (memory is None) != (self.encoder is None):
            raise ValueError(
                "an encoder-decoder's decoder needs the encoder output (memory); "
                "a decoder-only model takes none."
            )
        start = cache[0].length if cache else 0
        x = self._embedding("decoder")(input_ids, token_type_ids, start)  # (B, T, d)
        return self.decoder(x, memory, memory_mask, attention_mask, cache)

    def forward(
        self,
        input_ids: Tensor,
        decoder_input_ids: Tensor | None = None,
        *,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> ReferenceOutput:
        """A full forward. Encoder-decoder: input_ids are the source, decoder_input_ids the
        (shifted) target, attention_mask the source padding. labels: (B, T) targets at each
        position (already shifted; IGNORE_INDEX to skip), giving the cross-entropy loss."""
        if self.cfg.architecture == "encoder-decoder":
            if decoder_input_ids is None:
                raise ValueError("an encoder-decoder needs decoder_input_ids (the shifted target).")
            memory = self.encode(input_ids, attention_mask, token_type_ids)  # (B, S, d)
            hidden = self.decode(decoder_input_ids, memory, memory_mask=attention_mask)
        elif decoder_input_ids is not None:
            raise ValueError(f"a {self.cfg.architecture}-only model takes no decoder_input_ids.")
        elif self.decoder is not None:
            hidden = self.decode(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        else:
            hidden = self.encode(input_ids, attention_mask, token_type_ids)
        return self.apply_head(hidden, labels)  # hidden: (B, T, d)

    def apply_head(self, hidden: Tensor, labels: Tensor | None = None) -> ReferenceOutput:
        if labels is not None and self.cfg.head != "lm":
            raise ValueError(f"labels need an LM head; model {self.cfg.name!r} has head {self.cfg.head!r}.")
        if self.cfg.head == "pooler":
            return ReferenceOutput(hidden, pooled=self.head(hidden))  # pooled: (B, d)
        if self.cfg.head == "none":
            return ReferenceOutput(hidden)
        logits = self.head(hidden)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX
            )
        return ReferenceOutput(hidden, logits=logits, loss=loss)

    def sentence_embedding(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """The mean-pooled output of the encoder (or of a decoder-only model), (B, d)."""
        if self.encoder is not None:
            hidden = self.encode(input_ids, attention_mask)
        else:
            hidden = self.decode(input_ids, attention_mask=attention_mask)
        return mean_pool(hidden, attention_mask)


def build_reference(cfg: ModelConfig) -> Transformer:
    """The reference model of a config. Build it under `with torch.device("meta"):` to count the
    parameters of a full-size model without memory, or under FakeTensorMode to run it."""
    if not isinstance(cfg, ModelConfig):
        raise ValueError(f"build_reference needs a ModelConfig, got {type(cfg).__name__}.")
    from . import reference_unsupported

    missing = reference_unsupported(cfg)
    if missing:
        raise ValueError(f"model {cfg.name!r}: the reference model does not implement "
                         f"{', '.join(missing)}; use --target hf.")
    return Transformer(cfg)


def count_parameters(model: nn.Module) -> int:
    """Unique parameters (a tied weight once), buffers excluded: the project's convention."""
    return sum(p.numel() for p in model.parameters())
