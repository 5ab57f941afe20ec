"""AMD's vLLM throughput rows on 8 MI300X (session 34, wt34_amdserve): the MI300X facts their steps read, each
pinned to its source, and the per-step split (validate/amd_vllm_steps.py) that locates their gap, so that a change
to any fact or rule the rows take shows here. Nothing moved in session 34: the sourced facts checked hold, and no
source was found for what would close the 1.40-2.67x (validate/FINDINGS.md, "AMD vLLM on the MI300X"). Session 37
read the column as output tokens/s, from the page's own latency table (1.26-1.48x since)."""

from __future__ import annotations

import sys

import pytest

from costmodel.hardware import load_hardware


def test_the_mi300x_facts_the_steps_read_are_their_sources():
    """Datasheet peaks (5.3 TB/s; 2,614.9 TFLOP/s dense FP8), the weight GEMVs at BabelStream's Dot rate from AMD's
    acceptance guide (3,878,410.495 MB/s), the FP8 GEMMs at AMD's measured MAF (ROCm Blogs, 'Measuring
    Max-Achievable FLOPs - Part 2', Table 1: 1,273 TFLOP/s, hipBLASLt)."""
    hardware = load_hardware("mi300x")
    assert hardware.bandwidth_bytes_per_s == 5.3e12
    assert hardware.flops_per_s["fp8"] == 2614.9e12
    assert hardware.gemv_bandwidth_bytes_per_s == 3_878_410_495_000.0
    assert hardware.matmul_efficiency["fp8"] == round(1273 / 2614.9, 3) == 0.487


def _split(model, sequences, context, query=1):
    from validate.amd_vllm_steps import step_split

    return step_split(model, sequences, context, query)


def test_the_70b_decode_step_at_1500_sequences_splits_as_found():
    """The 2,048 / 2,048 row's decode step at mid-generation (1,500 x 3,072 keys), one rank: eager (vLLM V1's
    largest captured batch is 512), FP8 GEMMs 27.50 ms at the MAF, 160 RCCL all-reduces of 24.6 MB 33.85 ms,
    the FP8 cache's 94.4 GB read at 4.07 TB/s (0.77 of the datasheet) 23.17 ms, V1's sampler (cast, temperature, softmax, noise, argmax over 1,500 x 128,256 logits, each
    rank) 3.01 ms since session 34: 99.78 ms in all (96.76 before), where the
    published figure read as total tokens/s implies about 375 ms a step and read as output tokens/s about 177."""
    split = _split("llama3.1-70b", 1500, 3072)
    assert not split["graphed"]
    assert split["ms"] == pytest.approx(99.78, abs=0.01)
    assert split["sampler_ms"] == pytest.approx(3.01, abs=0.01)
    assert split["gemm_ms"] == pytest.approx(27.50, abs=0.01)
    assert split["allreduce_ms"] == pytest.approx(33.85, abs=0.01)
    assert split["attention_ms"] == pytest.approx(23.17, abs=0.01)
    assert split["kv_gb"] == pytest.approx(1500 * 3072 * 80 * 1 * 128 * 2 / 1e9)
    assert split["kv_tb_per_s"] == pytest.approx(4.07, abs=0.01)


def test_a_405b_step_of_500_sequences_replays_its_graph():
    """500 sequences fit vLLM V1's captured sizes (8..512 by 8: padded to 504), so the 405B's 2,048 / 2,048 row
    decodes from graphs: 110.29 ms a step at 3,072 keys (109.26 before session 34's
    sampler, 1.03 ms), GEMMs 47.78 ms of it."""
    split = _split("llama3.1-405b", 500, 3072)
    assert split["graphed"]
    assert split["ms"] == pytest.approx(110.29, abs=0.01)
    assert split["gemm_ms"] == pytest.approx(47.78, abs=0.01)


def test_a_prefill_step_of_the_pages_budget_is_gemms_and_all_reduces():
    """64 whole 2,048-token prompts (131,072 tokens, --max-num-batched-tokens) on the 70B: 2,086.10 ms of FP8
    GEMMs and 1,910.09 ms of all-reduces (160 of 2.1 GB each, RCCL's large-message busbw) of 4,528.93 ms; the
    attention (Triton's prefix-prefill kernel in the page's build, timed at FlashAttention-2's rates) 70.34."""
    split = _split("llama3.1-70b", 64, 2048, query=2048)
    assert split["ms"] == pytest.approx(4529.10, abs=0.01)  # 4,528.93 + the sampler's 64 rows, 0.17
    assert split["gemm_ms"] == pytest.approx(2086.10, abs=0.01)
    assert split["allreduce_ms"] == pytest.approx(1910.09, abs=0.01)
    assert split["attention_ms"] == pytest.approx(70.34, abs=0.01)


def test_two_rows_stand_where_docs_serving_puts_them():
    """Two of the eight (docs/serving.md's amd-vllm table): 405B 2,048 / 2,048 at 5,474 total tok/s (2.52x the
    published 2,174.1; 2,737 output tok/s, 1.26x since session 37) and 70B 128 / 2,048 at 20,999 (1.57x 13,383.3;
    19,763, 1.48x); 5,505 and 21,860 total before session 34's sampler."""
    sys.path.insert(0, "benchmarks")
    from published_amd_vllm_throughput import amd_vllm_tokens_per_s

    assert amd_vllm_tokens_per_s("llama3.1-405b", 2048, 2048, 500, 500) == pytest.approx(5473.72, abs=0.01)
    assert amd_vllm_tokens_per_s("llama3.1-70b", 128, 2048, 3200, 3200) == pytest.approx(20998.67, abs=0.01)
    # As output tokens/s, the reading since session 37: the same spans, prompts x output over them (1.26x, 1.48x).
    assert amd_vllm_tokens_per_s("llama3.1-405b", 2048, 2048, 500, 500, tokens="output") == pytest.approx(
        5473.72 / 2, abs=0.01)
    assert amd_vllm_tokens_per_s("llama3.1-70b", 128, 2048, 3200, 3200, tokens="output") == pytest.approx(
        20998.67 * 2048 / 2176, abs=0.01)


def test_the_pages_latency_table_rules_out_total_tokens():
    """Why the column reads as output tokens/s (AMD_VLLM_READING): as total tokens/s, 500 prompts of 2,048 + 2,048
    on the 405B would take 942.0 s, longer than four successive batch-128 runs of the same page's latency script
    (4 x 125.471 = 501.9 s), and the 70B's 1,500 812.6 s against 12 x 52.394 = 628.7 s; as output tokens/s every
    row with a latency row of its shape (both models' 128 / 2,048 and 2,048 / 2,048) is under its bound."""
    sys.path.insert(0, "benchmarks")
    from published_amd_vllm_throughput import AMD_VLLM_THROUGHPUT, latency_bound_s, published_span_s

    assert latency_bound_s("llama3.1-405b", 2048, 2048, 500) == pytest.approx(501.884)
    assert latency_bound_s("llama3.1-70b", 2048, 2048, 1500) == pytest.approx(628.728)
    assert latency_bound_s("llama3.1-70b", 128, 2048, 3200) == pytest.approx(25 * 46.484)
    assert latency_bound_s("llama3.1-70b", 500, 2000, 2000) is None
    assert published_span_s(2048, 2048, 500, 2174.1, "total") == pytest.approx(941.999, abs=0.001)
    assert published_span_s(2048, 2048, 500, 2174.1, "output") == pytest.approx(470.999, abs=0.001)
    over = {"total": [], "output": []}
    for table in AMD_VLLM_THROUGHPUT:
        for prompt, output, prompts, _, published in table["rows"]:
            bound = latency_bound_s(table["model"], prompt, output, prompts)
            for tokens in over:
                if bound is not None and published_span_s(prompt, output, prompts, published, tokens) > bound:
                    over[tokens].append((table["model"], prompt))
    assert over == {"total": [("llama3.1-70b", 2048), ("llama3.1-405b", 2048)], "output": []}


def test_the_split_script_refuses_a_partial_line(capsys):
    """Bad CLI input: one line, exit 2."""
    from validate.amd_vllm_steps import main

    assert main(["llama3.1-70b", "1500"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("argv", [["llama3.1-70b", "x", "3072"], ["llama3.1-70b", "1500", "0"],
                                  ["llama3.1-70b", "1.5", "3072"], ["no-such-model", "1500", "3072"]])
def test_the_split_script_refuses_bad_numbers_and_models(argv, capsys):
    """Bad CLI input (not a whole number >= 1, an unknown model): one line on stderr, exit 2, no traceback."""
    from validate.amd_vllm_steps import main

    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_split_reads_the_cache_bytes_from_the_replicas_sizing():
    """The cache bytes a decode step reads are the replica's own sizing (kv_cache.kv_bytes_per_token: 70B 80 layers x
    1 KV head a rank x 128 x K and V x 1 FP8 byte = 20,480; 405B 126 layers = 32,256), not a copy of the rule."""
    assert _split("llama3.1-70b", 32, 1152)["kv_gb"] == pytest.approx(32 * 1152 * 20_480 / 1e9)
    assert _split("llama3.1-405b", 32, 1152)["kv_gb"] == pytest.approx(32 * 1152 * 32_256 / 1e9)
