"""Session 39's unseen quantized-weight decoding rows (costmodel/published_runs.json sources "redhat-r1-llama-70b",
"redhat-r1-qwen-32b", "redhat-r1-llama-8b" and "redhat-r1-qwen-7b": four Neural Magic / RedHatAI model cards of the
DeepSeek-R1 distills, GuideLLM's single-stream latency against vLLM 0.7.2's server on A6000, A100 and H100, W4A16,
W8A8 and FP8-dynamic checkpoints), typed before any of their rows was computed (449fac51): each row's figure as
its card prints it, the setup the model reads, and the kernel model's ratios as first computed (ours over
published), the figures validate/FINDINGS.md quotes ("Unseen quantized decoding rows: Neural Magic's model cards
(wt39_unseend2, session 39)"). No row is refused; no model change followed."""

from __future__ import annotations

import pytest

from costmodel.serving.host_time import host_time_for_release
from tests.unseen_rows import (assert_first_computed, assert_summaries, decode_groups, decode_setup_of, ratios,
                               runs_of, source_of)

SOURCES = ("redhat-r1-llama-70b", "redhat-r1-qwen-32b", "redhat-r1-llama-8b", "redhat-r1-qwen-7b")

# Each card's 'Single-stream performance (measured with vLLM version 0.7.2)' table, the quantized rows kept:
# (GPU class, number of GPUs, checkpoint) -> Latency (s) of Code Completion 256 / 1024 and Large Summarization
# 4096 / 512 (the 8B and 7B cards: Code Completion only)
CARDS = {
    "redhat-r1-llama-70b": {("a6000", 2, "w8a8"): (60.7, 32.3), ("a6000", 2, "w4a16"): (38.9, 23.7),
                            ("a100", 2, "w8a8"): (32.4, 17.6), ("a100", 1, "w4a16"): (35.3, 21.2),
                            ("h100", 2, "fp8-dynamic"): (21.1, 11.5), ("h100", 1, "w4a16"): (31.2, 17.8)},
    "redhat-r1-qwen-32b": {("a6000", 1, "w8a8"): (54.8, 30.0), ("a6000", 1, "w4a16"): (29.7, 19.3),
                           ("a100", 1, "w8a8"): (29.0, 15.7), ("a100", 1, "w4a16"): (17.4, 10.5),
                           ("h100", 1, "fp8-dynamic"): (17.3, 9.5), ("h100", 1, "w4a16"): (16.1, 9.1)},
    "redhat-r1-llama-8b": {("a6000", 1, "w8a8"): (15.2,), ("a6000", 1, "w4a16"): (9.1,), ("a100", 1, "w8a8"): (9.0,),
                           ("a100", 1, "w4a16"): (6.4,), ("h100", 1, "fp8-dynamic"): (5.7,),
                           ("h100", 1, "w4a16"): (5.6,)},
    "redhat-r1-qwen-7b": {("a6000", 1, "w8a8"): (14.3,), ("a6000", 1, "w4a16"): (8.6,), ("a100", 1, "w8a8"): (8.6,),
                          ("a100", 1, "w4a16"): (6.1,), ("h100", 1, "fp8-dynamic"): (5.3,),
                          ("h100", 1, "w4a16"): (5.4,)},
}
MODELS = {"redhat-r1-llama-70b": ("r1-distill-llama-70b", "llama3.1-70b"),
          "redhat-r1-qwen-32b": ("r1-distill-qwen-32b", "qwen2.5-32b"),
          "redhat-r1-llama-8b": ("r1-distill-llama-8b", "llama3.1-8b"),
          "redhat-r1-qwen-7b": ("r1-distill-qwen-7b", "qwen2.5-7b")}
PROFILES = (("code completion", 256, 1024), ("large summarization", 4096, 512))
HARDWARE = {"a6000": "rtx-a6000", "a100": "a100-80gb", "h100": "h100-sxm"}
# the checkpoints' formats as the model reads them (the cards: W4A16 'symmetric per-group scheme, with group size
# 128'; W8A8 INT8 per channel, activations per token; FP8-dynamic FP8 per channel, activations per token)
QUANTIZATION = {"w4a16": {"weight_dtype": "int4", "weight_group": 128, "quant_layout": "compressed-tensors"},
                "w8a8": {"weight_dtype": "int8", "quant_layout": "compressed-tensors"},
                "fp8-dynamic": {"weight_dtype": "fp8", "fp8_gemm": "w8a8"}}


def test_the_four_cards_hold_36_rows():
    assert [len(runs_of(s)) for s in SOURCES] == [12, 12, 6, 6]


@pytest.mark.parametrize("source", SOURCES)
def test_each_cards_rows_are_its_table(source):
    model, preset = MODELS[source]
    rows = {r["id"]: r for r in runs_of(source)}
    expected = set()
    for (gpu, gpus, fmt), latencies in CARDS[source].items():
        for (profile, prompt, gen), latency in zip(PROFILES, latencies):
            run_id = f"{source} {model} {fmt} tp{gpus} {profile} {prompt}/{gen} {gpu}"
            expected.add(run_id)
            run = rows[run_id]
            assert (run["published_latency_s"], run["published_tokens_per_s"]) == (latency, round(gen / latency, 4))
            cfg, hardware, settings, quantization = decode_setup_of(run)
            assert (cfg.name, hardware.name, run["tp"]) == (preset, HARDWARE[gpu], gpus)
            assert (settings["prompt"], settings["gen"], settings["batch"]) == (prompt, gen, 1)
            assert (settings["cuda_graphs"], settings["kv_cache"], settings["attention"], settings["dtype"]) == \
                (True, "static", "flash", "bf16")
            assert quantization == QUANTIZATION[fmt]
    assert set(rows) == expected


def test_the_rows_take_vllm_0_7_2s_v0_host_time():
    """'measured with vLLM version 0.7.2': V0 (V1 the default from 0.8.0), the release rule's vllm-v0.6.0 profile."""
    for source in SOURCES:
        run = runs_of(source)[0]
        stated = source_of(source)
        assert (stated["vllm_release"], stated["vllm_engine"], stated["rate"]) == ("0.7.2", "v0", "end_to_end")
        assert host_time_for_release(stated["vllm_engine"], stated["vllm_release"]) == "vllm-v0.6.0"
        assert "guidellm" in stated["rate_source"] and run["kind"] == "decode"


# As first computed (kernel model, before any change to the model): id -> ours / published
FIRST = {
    "redhat-r1-llama-70b r1-distill-llama-70b w8a8 tp2 code completion 256/1024 a6000": 0.939,
    "redhat-r1-llama-70b r1-distill-llama-70b w4a16 tp1 code completion 256/1024 a100": 0.924,
    "redhat-r1-llama-70b r1-distill-llama-70b fp8-dynamic tp2 code completion 256/1024 h100": 1.11,
    "redhat-r1-llama-70b r1-distill-llama-70b w4a16 tp1 code completion 256/1024 h100": 1.357,
    "redhat-r1-llama-70b r1-distill-llama-70b w4a16 tp1 large summarization 4096/512 h100": 1.421,
    "redhat-r1-qwen-32b r1-distill-qwen-32b w4a16 tp1 code completion 256/1024 a6000": 0.916,
    "redhat-r1-qwen-32b r1-distill-qwen-32b w8a8 tp1 code completion 256/1024 a100": 1.152,
    "redhat-r1-qwen-32b r1-distill-qwen-32b fp8-dynamic tp1 code completion 256/1024 h100": 1.248,
    "redhat-r1-qwen-32b r1-distill-qwen-32b w4a16 tp1 code completion 256/1024 h100": 1.351,
    "redhat-r1-llama-8b r1-distill-llama-8b w8a8 tp1 code completion 256/1024 a100": 1.274,
    "redhat-r1-llama-8b r1-distill-llama-8b w4a16 tp1 code completion 256/1024 h100": 1.442,
    "redhat-r1-qwen-7b r1-distill-qwen-7b w4a16 tp1 code completion 256/1024 a6000": 1.026,
    "redhat-r1-qwen-7b r1-distill-qwen-7b w4a16 tp1 code completion 256/1024 h100": 1.477,
}
# the ratios now, where a sourced change moved them: wt39_machete's W8A8 FP8 GEMM at 1-16 rows on a 132-SM Hopper at
# vLLM's cutlass_scaled_mm's measured rate (kernel_facts.json w8a8_small_rows, vllm PR #5144 on an H100)
MOVED: dict[str, float] = {
    # wt40_customar (session 40): vLLM's custom all-reduce (collectives.custom_all_reduce, the engine's by release): 1.007 -> 1.131
    "redhat-r1-llama-70b r1-distill-llama-70b fp8-dynamic tp2 code completion 256/1024 h100": 1.131,
    "redhat-r1-qwen-32b r1-distill-qwen-32b fp8-dynamic tp1 code completion 256/1024 h100": 1.106,
    # wt39_hwholes (session 39): the GA102 boards' CUDA-graph / stream launch gap (graph_kernel_s, measured on the A40
    # by gpu-benches)
    "redhat-r1-llama-70b r1-distill-llama-70b w8a8 tp2 code completion 256/1024 a6000": 0.921,
    "redhat-r1-qwen-32b r1-distill-qwen-32b w4a16 tp1 code completion 256/1024 a6000": 0.888,
    "redhat-r1-qwen-7b r1-distill-qwen-7b w4a16 tp1 code completion 256/1024 a6000": 0.974}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and (lowest, highest): the first computation
FIRST_STATS = {"all": ((36, 10.0, 30, 18, 9), (0.902, 1.477)),
               "redhat-r1-llama-70b": ((12, 8.9, 10, 7, 3), (0.902, 1.421)),
               "redhat-r1-qwen-32b": ((12, 11.2, 10, 6, 2), (0.905, 1.395)),
               "redhat-r1-llama-8b": ((6, 18.4, 5, 3, 2), (1.03, 1.442)),
               "redhat-r1-qwen-7b": ((6, 21.6, 5, 2, 2), (1.026, 1.477))}
# wt39_machete's W8A8 rate at few rows moved the six H100 FP8-dynamic rows (1.11-1.33 -> 1.01-1.22); wt39_hwholes:
# the A6000 rows pay GA102's graph gap (1.7-5.2% slower)
# wt40_customar (session 40): vLLM's custom all-reduce (collectives.custom_all_reduce, the engine's by release): all (36, 9.5, 30, 19, 11) -> (36, 11.3, 30, 15, 8);
# redhat-r1-llama-70b (12, 6.3, 10, 9, 5) -> (12, 11.1, 10, 5, 2)
NOW_STATS = {**FIRST_STATS, "all": ((36, 11.3, 30, 15, 8), (0.886, 1.477)),
             "redhat-r1-llama-70b": ((12, 11.1, 10, 5, 2), (0.886, 1.421)),
             "redhat-r1-qwen-32b": ((12, 10.9, 10, 5, 2), (0.888, 1.395)),
             "redhat-r1-llama-8b": ((6, 15.5, 5, 3, 2), (0.974, 1.442)),
             "redhat-r1-qwen-7b": ((6, 17.3, 5, 2, 2), (0.974, 1.477))}


def _ms_a_token(every: dict[str, float], run_id: str) -> tuple[float, float]:
    """(published, ours) milliseconds a generated token, the prefill's share included (latency / gen)."""
    run = next(r for s in SOURCES for r in runs_of(s) if r["id"] == run_id)
    published = 1e3 * run["published_latency_s"] / run["gen"]
    return published, published / every[run_id]


@pytest.mark.slow  # the 36 rows computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    assert_summaries(every, decode_groups(every, SOURCES), NOW_STATS)
    assert sum(v > 1 for v in every.values()) == 24  # too fast, all but 12 A6000 / A100 rows (26, 10 before wt39_hwholes)
    # by GPU: the A6000 rows (768 GB/s, the weights' time the step) within 0.88-1.11; every H100 W4A16 row too fast
    # by more than the band (1.35-1.48); the H100 FP8 rows 1.01-1.22 (1.11-1.33 before wt39_machete)
    assert all(0.88 < v < 1.11 for k, v in every.items() if k.endswith(" a6000"))  # 0.9 before wt39_hwholes' GA102 gap
    assert all(v > 1.33 for k, v in every.items() if k.endswith(" h100") and " w4a16 " in k)
    assert all(1.0 < v < 1.22 for k, v in every.items() if " fp8-dynamic " in k)
    # the H100 W4A16 gap grows with the weights' bytes (8B < 32B < 70B), a kernel's rate short, not a per-step floor:
    # published minus ours, ms a token, Code Completion
    gaps = [float.__sub__(*_ms_a_token(every, f"{s} {m} w4a16 tp1 code completion 256/1024 h100"))
            for s, m in (("redhat-r1-llama-8b", "r1-distill-llama-8b"), ("redhat-r1-qwen-32b", "r1-distill-qwen-32b"),
                         ("redhat-r1-llama-70b", "r1-distill-llama-70b"))]
    assert gaps == sorted(gaps) and gaps[0] > 1.5 and gaps[2] > 7.5
    # published: the 70B W4A16 step on one H100 only 1.13x the A100's (34.47 / 30.47 ms), ours 1.66x
    h100 = _ms_a_token(every, "redhat-r1-llama-70b r1-distill-llama-70b w4a16 tp1 code completion 256/1024 h100")
    a100 = _ms_a_token(every, "redhat-r1-llama-70b r1-distill-llama-70b w4a16 tp1 code completion 256/1024 a100")
    assert round(a100[0] / h100[0], 2) == 1.13 and round(a100[1] / h100[1], 2) == 1.66
