"""Session 29's 36 unseen training rows (InternLM's 7B scaling table 18, FlagPerf's Megatron tables 18:
Llama-3 8B on A800 and H100, Llama-3 70B, Llama-2 70B on H800, a Qwen1.5-MoE on A800) as docs/time.md and
validate/FINDINGS.md summarise them, counted as `published`'s summary counts (exact ratios: our speed
over the published one, error |ratio - 1|, kernel model). The honest estimate for unseen published
training runs: these rows apart from the set the model has seen."""

from __future__ import annotations

from tests.rows_summary import ratios as source_ratios, stats

SOURCES = ("internlm-train", "flagperf-llama3", "flagperf-llama3-a800", "flagperf-llama2-70b-h800",
           "flagperf-qwen-moe-bf16", "flagperf-qwen-moe-fp16")


def ratios() -> dict[str, float]:
    return source_ratios(SOURCES)


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%), as first computed (wt29_pubtrain):
# 36 rows (15.1, 31, 6, 2), InternLM (16.2, 15, 0, 0), FlagPerf (11.5, 16, 6, 2), the small rows 1.038-1.209.
# After wt29_bias (FlashAttention-2's A100 backward from its paper's forward+backward figure; Megatron-Core
# 0.6's unfused fp32 loss on FlagPerf's Llama 3 rows, Layout.unfused_loss; InternLM's norms of an fp32 copy,
# checkpointed, Layout.fp32_norm_input): (12.0, 31, 14, 4), InternLM (13.4, 15, 1, 0), FlagPerf (7.3, 16, 13, 4).
# After wt29_seqmlp (FlagPerf's Qwen1.5-MoE script runs Megatron-Core's SequentialMLP, Layout.moe_grouped_gemm
# False: 1.463 -> 1.326, 1.395 -> 1.269), asserted below:
SUMMARY = (36, 12.0, 33, 14, 4)
INTERN = (18, 13.4, 15, 1, 0)
FLAG = (18, 7.3, 18, 13, 4)
SMALL_RANGE = (1.028, 1.184)


def test_the_36_rows_as_the_docs_state_them():
    every = ratios()
    assert stats(list(every.values())) == SUMMARY
    intern = [r for name, r in every.items() if name.startswith("internlm")]
    flag = [r for name, r in every.items() if name.startswith("flagperf")]
    assert stats(intern) == INTERN and stats(flag) == FLAG
    # every row but the 8 above 128 GPUs (InternLM's scaling) and the MoE pair is 1.03-1.18x too fast
    small = [r for name, r in every.items() if "moe" not in name and not any(f" {g}x" in name for g in (256, 512, 1024))]
    assert (round(min(small), 3), round(max(small), 3)) == SMALL_RANGE
    assert all(r > 1 for r in every.values())
