"""A dozen deliberately odd-sized configs, one or more per Hugging Face family, for parity tests.

Odd sizes (d=48, h=6, h_kv=2, d_ff=37, vocab 99, head dimensions that are not d/h) make a swapped
dimension show up as a wrong count instead of hiding behind a square matrix.
"""

from __future__ import annotations

from costmodel.config import ModelConfig
from costmodel.presets import load_preset

_BASE = dict(vocab_size=99, d_model=48, n_heads=6, d_ff=37, max_positions=64)
_SMALL = dict(vocab_size=97, d_model=36, n_heads=4, d_ff=53, max_positions=40)


def odd_configs() -> list[ModelConfig]:
    llama, mistral, gpt2 = load_preset("llama2-7b"), load_preset("mistral-7b"), load_preset("gpt2")
    bert, t5 = load_preset("bert-base-uncased"), load_preset("t5-small")
    return [
        llama.replace(name="llama-gqa", **_BASE, n_kv_heads=2, n_decoder_layers=2),
        llama.replace(
            name="llama-mqa-bias", vocab_size=101, d_model=40, n_heads=5, n_kv_heads=1, d_ff=29,
            n_decoder_layers=3, qkv_bias=True, out_bias=True, ffn_bias=True, max_positions=64,
        ),
        llama.replace(name="llama-headdim-tied", **_BASE, n_kv_heads=3, d_head=10, n_decoder_layers=2,
                      tie_embeddings=True),
        mistral.replace(name="mistral-gqa", **_BASE, n_kv_heads=2, n_decoder_layers=2),
        llama.replace(name="qwen2-gqa", family="qwen2", qkv_bias=True, **_BASE, n_kv_heads=2,
                      n_decoder_layers=2),
        gpt2.replace(name="gpt2-dropout", **_BASE, n_decoder_layers=3),
        gpt2.replace(name="gpt2-nodrop", **_SMALL, n_decoder_layers=2, dropout=0.0),
        gpt2.replace(name="gpt2-wide", vocab_size=103, d_model=64, n_heads=8, d_ff=100,
                     n_decoder_layers=2, max_positions=64),
        bert.replace(name="bert-dropout", **_BASE, n_encoder_layers=2, token_types=3),
        bert.replace(name="bert-nodrop", **_SMALL, n_encoder_layers=3, dropout=0.0),
        t5.replace(name="t5-dropout", **_BASE, d_head=7, n_encoder_layers=2, n_decoder_layers=3,
                   relative_buckets=11),
        t5.replace(name="t5-gated-nodrop", **_SMALL, d_head=9, n_encoder_layers=2, n_decoder_layers=2,
                   activation="geglu_tanh", dropout=0.0),
    ]
