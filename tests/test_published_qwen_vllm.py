"""benchmarks/published_qwen_vllm.py: Qwen2.5's vLLM 0.6.3 speed tables on an A100 typed as the docs print them,
the engine settings the docs and the script state, and ours as one request alone on a replica."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import published_qwen_vllm as qv  # noqa: E402


def test_tables_are_the_docs():
    # QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst at a912d23, the '(vLLM)' tables, BF16, default settings
    rows = qv.qwen_vllm_rows()
    assert len(rows) == 25 and qv.QWEN_VLLM_INPUTS == (1, 6144, 14336, 30720)
    assert [(r["model"], r["tp"], r["input"], r["published"]) for r in rows if r["model"] in (
        "qwen2.5-7b-instruct", "qwen2.5-32b-instruct", "qwen2.5-72b-instruct")] == [
        ("qwen2.5-7b-instruct", 1, 1, 84.28), ("qwen2.5-7b-instruct", 1, 6144, 80.70),
        ("qwen2.5-7b-instruct", 1, 14336, 77.69), ("qwen2.5-7b-instruct", 1, 30720, 70.33),
        ("qwen2.5-32b-instruct", 2, 30720, 31.82),
        ("qwen2.5-72b-instruct", 4, 1, 31.37), ("qwen2.5-72b-instruct", 4, 6144, 29.90),
        ("qwen2.5-72b-instruct", 4, 14336, 30.10), ("qwen2.5-72b-instruct", 4, 30720, 27.53)]
    assert sum(r["published"] for r in rows if r["model"] == "qwen2.5-0.5b") == pytest.approx(311.55 + 304.79 + 290.28 + 264.51)
    assert (qv.QWEN_VLLM_OUTPUT, qv.QWEN_VLLM_MAX_MODEL_LEN, qv.QWEN_VLLM_MEMORY, qv.QWEN_VLLM_MAX_NUM_SEQS) == (
        2048, 32768, 0.9, 256)


def test_ours_is_the_output_over_the_last_tokens_time():
    """One request: 2,048 tokens, the first from the prefill; a longer prompt is slower (a longer prefill,
    longer steps, and past 8,192 tokens of context vLLM v0's eager decode steps). At one sequence the host waits
    14,789 / 22,396 of H(1) = 0.58883 ms a step (host_time.json's small batch, issue 6913), not of the line's 6.3562
    ms: 532.56 tok/s against the published 311.55 (157.33 before; 536.96 before session 34's sampler)."""
    short, long = (qv.qwen_vllm_tokens_per_s("qwen2.5-0.5b", 1, prompt) for prompt in (1, 30720))
    assert (short, long) == pytest.approx((532.55834, 251.31635), rel=1e-6)


def test_every_choice_is_written():
    for words in ("vllm-v0", "32,768", "max_seq_len_to_capture 8,192", "v0.6.0", "a100-80gb", "before any figure"):
        assert words in qv.QWEN_VLLM_ASSUMED
