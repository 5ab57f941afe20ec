"""validate/qwen_speed_context.py: flash-attn's split-KV count as its code picks it, and the Qwen
speed rows' cost per cached key derived from the published figures (session 37, wt37_qwenspeed)."""

import pytest

from validate.qwen_speed_context import key_costs, num_splits


def test_num_splits_as_flash_attn_274_picks_them():
    # flash_api.cpp v2.7.4.post1 lines 263-317, by hand. Qwen3 under 4.51.3 (GQA swapped: 8 CTAs) on
    # an H20 (78 SMs, 156 slots) at 31,744 keys (248 blocks of 128): one wave up to 19 splits; the best
    # eligible efficiency is 144/156 = 0.923 (18 splits; 39 and 78 would fill waves but are not
    # eligible: ceil(248/39) == ceil(248/38)); the first eligible split at >= 0.85 * 0.923 is
    # 16 (128/156 = 0.821; 15 gives 0.769).
    assert num_splits(8, 78, 248) == 16
    # Qwen2.5-32B under 4.46.0 (repeat_kv: 40 CTAs) on an A100 (108 SMs, 216 slots): 16 splits fill
    # 640/648 = 0.988 of three waves; 5 splits one wave at 200/216 = 0.926 >= 0.84, 4 at 0.741 not.
    assert num_splits(40, 108, 248) == 5
    # 0.8 of the slots or more already: one split
    assert num_splits(173, 108, 248) == 1
    assert num_splits(172, 108, 248) > 1


@pytest.mark.slow
def test_qwen3_32b_cost_per_key_from_the_published_rows():
    rows = {(r["source"], r["model"]): r for r in key_costs()}
    assert len(rows) == 12  # 6 dense Qwen2.5 and 6 dense Qwen3 models; Qwen3-30B-A3B left out
    r = rows[("qwen3-speed-hf", "qwen3-32b")]
    # (30720 + 2048) / 69.16 - (14336 + 2048) / 62.41 = 473.800 - 262.522 = 211.278 s, over 2,048 steps,
    # 64 layers and 16,384 more keys: 98.38 ns
    assert r["ns_per_key_layer"] == pytest.approx(98.38, abs=0.01)
    assert r["own_bytes"] == 6 * 8 * 128 * 2 == 12288
    assert r["repeat_kv_bytes"] == (6 * 8 + 4 * 64) * 128 * 2 == 77824
    assert r["splits"] == 16
    # the kernel model's own cost a key, prefill difference included, is well under the published one
    assert r["ours_ns_per_key_layer"] < r["ns_per_key_layer"] / 4
    q25 = rows[("qwen2.5-speed-hf", "qwen2.5-32b-instruct")]
    # 2048 / 5.59 - 2048 / 8.95 = 366.369 - 228.827 = 137.542 s: 64.0 ns over 2,048 x 64 x 16,384
    assert q25["ns_per_key_layer"] == pytest.approx(64.04, abs=0.01)
    assert q25["own_bytes"] == q25["repeat_kv_bytes"] == (6 * 8 + 4 * 40) * 128 * 2
