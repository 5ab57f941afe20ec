"""What a decoding step of transformers 4.51.3 moves per cached key (validate/context_bytes.py):
under sdpa, 4.51.3's sdpa_attention_forward repeats the cached K and V to every query head before
scaled_dot_product_attention (integrations/sdpa_attention.py lines 29-31), as 4.46's Qwen2
FlashAttention2 does; its flash_attention_2 path repeats nothing. kernel_facts.json
eager_step_copies states the 4.51 sdpa copies for Qwen3 and Qwen3-MoE."""

from types import SimpleNamespace

import pytest

from costmodel.eager_ops import step_copies
from costmodel.kernel_time import inference_subs
from costmodel.presets import load_preset
from validate import context_bytes


def test_qwen3_32b_under_4_51_sdpa_copies_36864_and_reads_28672_bytes_more_a_cached_key_and_layer():
    cfg = load_preset("qwen3-32b")
    assert (cfg.family, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_head) == ("qwen3", 64, 64, 8, 128)
    parts = step_copies(cfg, "transformers-4.51", "sdpa")["parts"]
    subs = inference_subs(cfg, "bf16", 1, 1, context=100)
    per_key = {name: int(part.bytes_per_key.xreplace(subs)) for name, part in parts.items()}
    # repeat_kv: K and V each read 8 heads and write 64 of 128 bf16; sdpa then reads 64 - 8 heads more of each
    assert per_key == {"repeat_kv": 2 * 2 * 128 * (8 + 64), "sdpa_reads_repeated": 2 * 2 * 128 * (64 - 8)}
    assert per_key == {"repeat_kv": 36_864, "sdpa_reads_repeated": 28_672}
    assert (parts["repeat_kv"].op, parts["repeat_kv"].calls) == ("clone", 2)


def test_the_4_51_copies_are_sdpa_s_and_grouped_heads_only():
    qwen3 = load_preset("qwen3-8b")
    assert step_copies(qwen3, "transformers-4.51", "flash") is None  # 4.51.3's flash path repeats nothing
    assert step_copies(qwen3, "transformers", "sdpa") is None  # 5.24's sdpa passes enable_gqa
    assert step_copies(load_preset("qwen3-30b-a3b"), "transformers-4.51", "sdpa") is not None  # Qwen3-MoE's too
    assert step_copies(SimpleNamespace(family="qwen3", n_heads=16, n_kv_heads=16), "transformers-4.51", "sdpa") is None
    assert step_copies(load_preset("llama3-8b"), "transformers-4.51", "sdpa") is None  # no family entry


def test_distinct_bytes_counts_a_broadcast_dimension_once():
    torch = pytest.importorskip("torch")
    cache = torch.zeros(1, 2, 40, 12, dtype=torch.bfloat16)
    assert context_bytes.distinct_bytes(cache) == 2 * 40 * 12 * 2
    repeated = cache[:, :, None].expand(1, 2, 2, 40, 12)  # repeat_kv's expand: 4 heads seen, 2 stored
    assert context_bytes.distinct_bytes(repeated) == 2 * 40 * 12 * 2
    assert context_bytes.distinct_bytes(repeated.reshape(1, 4, 40, 12)) == 4 * 40 * 12 * 2  # the copy


def test_the_counter_counts_a_cat_s_reads_and_writes_and_no_view():
    torch = pytest.importorskip("torch")
    cache, new = torch.zeros(1, 2, 40, 12, dtype=torch.bfloat16), torch.zeros(1, 2, 1, 12, dtype=torch.bfloat16)
    with context_bytes.ByteCounter() as mode:
        grown = torch.cat([cache, new], dim=-2)
        grown.transpose(1, 2)  # a view: nothing moved
    assert mode.bytes == (40 + 1) * 48 + 41 * 48  # read the cache and the new key, write them all
    assert dict(mode.by_op) == {"aten.cat.default": 41 * 96}

