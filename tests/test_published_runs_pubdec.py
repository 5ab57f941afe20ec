"""Unseen decoding rows of session 29. torchao's long-cache rows: Llama-3.1-8B on an A100, eager, with a
static KV cache of 8,192 to 131,072 tokens (bf16, int8, int8 with the linear causal mask), typed from
pytorch/ao torchao/_models/llama/benchmark_results.txt's 'KV CACHE QUANTIZATION' section at b4d0768;
every step attends the whole allocated cache, which simulate_inference's cache_size expresses (session
37; before, each row was kept as not expressible). Qwen's speed benchmarks: Qwen2.5 on an A100 under
transformers 4.46 and Qwen3 on an H20 under 4.51, eager generate at batch 1, 2,048 new tokens after
1 to 30,720 prompt tokens, BF16 on one GPU."""

from __future__ import annotations

import pytest

from reports.published_decode import decode_run, decode_setup, sequence_rate
from reports.published_runs import other_runs_data

# cache_size: tokens/s with a bf16 cache, an int8 cache, an int8 cache and --linear_causal_mask
# (benchmark_results.txt at b4d0768, runs of 2024-08-26; the README's table gives their peak memory)
KV_LONG = {8192: (19.71, 13.52, 13.30), 16384: (12.54, 10.67, 10.57), 32768: (7.11, 6.33, 6.20),
           65536: (3.72, 3.32, 3.31), 131072: (1.95, 1.73, 1.73)}
SUFFIXES = ("", " kv int8", " kv int8 linear mask")


def _runs() -> dict[str, dict]:
    return {r["id"]: r for r in other_runs_data()["runs"] if r["id"].startswith("torchao-kv-long ")}


def test_every_row_of_the_section_is_kept_as_published():
    runs = _runs()
    stated = {f"torchao-kv-long llama3.1-8b cache {cache}{suffix}": (rate, cache, bool(suffix), "linear" in suffix)
              for cache, rates in KV_LONG.items() for suffix, rate in zip(SUFFIXES, rates)}
    assert len(runs) == 15 and set(runs) == set(stated)
    for run_id, (rate, cache, int8, linear) in stated.items():
        run = runs[run_id]
        assert (run["published_tokens_per_s"], run["cache_size"], run["preset"], run["tp"]) == (rate, cache, "llama3-8b", 1)
        assert (run.get("kv_dtype") == "int8", run.get("linear_causal_mask", False)) == (int8, linear)


def test_the_source_states_an_eager_a100_run_of_200_tokens_after_a_6_token_prompt():
    source = other_runs_data()["sources"]["torchao-kv-long"]
    assert (source["hardware"], source["prompt"], source["gen"], source["batch"]) == ("a100-80gb", 6, 200, 1)
    assert (source["cuda_graphs"], source["implementation"], source["rate"]) == (False, "gpt-fast", "end_to_end")
    assert "prefill's attention over the whole cache" in source["not_modelled"]
    assert "--cache-size" in source["assumed"] and "59.27 GB" in source["assumed"]


@pytest.mark.parametrize("model", ["roofline", "kernels"])
def test_a_cache_longer_than_the_context_is_attended_whole(model):
    """Session 37: each row's cache_size is simulate_inference's (every step attends the whole cache);
    before, a cache longer than prompt + gen was not expressible (ConfigError)."""
    from costmodel.roofline import simulate_inference

    data = other_runs_data()
    source = data["sources"]["torchao-kv-long"]
    run = _runs()["torchao-kv-long llama3.1-8b cache 32768 kv int8"]
    cfg, hardware, s, quantization = decode_setup(run, source)
    assert s["cache_size"] == 32768
    ours = simulate_inference(cfg, hardware, prompt=6, gen=200, batch=1, attention="sdpa", kv_cache="static",
                              implementation="gpt-fast", quantization={"kv_dtype": "int8"}, time_model=model,
                              cache_size=32768)["decode"]["end_to_end_tokens_per_second"]
    assert decode_run(run, source, model) == pytest.approx(ours, rel=1e-12)
    at_context = dict(run, cache_size=None)  # the tokens so far: faster
    assert decode_run(at_context, source, model) > ours


def test_a_cache_within_the_context_carries_its_kv_dtype():
    """kv_dtype is a decode row's quantization key (DECODE_QUANTIZATION): with the cache no longer
    than prompt + gen (206), the row is the model's usual eager gpt-fast step with an int8 cache."""
    data = other_runs_data()
    run = dict(_runs()["torchao-kv-long llama3.1-8b cache 8192 kv int8"], cache_size=206)
    cfg, hardware, settings, quantization = decode_setup(run, data["sources"]["torchao-kv-long"])
    assert (cfg.n_decoder_layers, cfg.n_kv_heads) == (32, 8)
    assert quantization == {"kv_dtype": "int8"} and settings["kv_cache"] == "static"
    assert hardware.name == "a100-80gb"


# Qwen2.5's speed benchmark (QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst at a912d23): one A100 80GB,
# transformers 4.46.0, FA 2.5.8, BF16, batch 1, 2,048 new tokens; model: tokens/s at 1, 6144, 14336, 30720 input tokens
QWEN25 = {
    "Qwen2.5-0.5B-Instruct": (47.4, 47.45, 47.11, 47.16),
    "Qwen2.5-1.5B-Instruct": (39.68, 40.88, 40.43, 38.59),
    "Qwen2.5-3B-Instruct": (30.8, 32.2, 31.72, 25.37),
    "Qwen2.5-7B-Instruct": (40.38, 38.76, 29.78, 18.83),
    "Qwen2.5-14B-Instruct": (24.74, 20.51, 13.92, 8.2),
    "Qwen2.5-32B-Instruct": (17.54, 12.49, 8.95, 5.59),
}
# Qwen3's (QwenLM/Qwen3 docs/source/getting_started/speed_benchmark.md at c7f51a1): one H20 96GB, transformers 4.51.3,
# FA 2.7.4, BF16, batch 1, 2,048 new tokens, Speed = (prompt + generation) / time
QWEN3 = {
    "Qwen3-0.6B": (58.57, 154.82, 168.48, 175.93),
    "Qwen3-1.7B": (59.83, 238.53, 352.59, 418.13),
    "Qwen3-4B": (45.94, 159.95, 195.31, 217.97),
    "Qwen3-8B": (45.32, 146.12, 183.29, 208.98),
    "Qwen3-14B": (40.66, 108.52, 136.36, 155.38),
    "Qwen3-32B": (26.24, 51.41, 62.41, 69.16),
    "Qwen3-30B-A3B": (1.89, 7.45, 14.47, 27.03),
}
INPUTS = (1, 6144, 14336, 30720)
PRESETS_25 = {"0.5b": "qwen2.5-0.5b", "1.5b": "qwen2.5-1.5b-instruct", "3b": "qwen2.5-3b", "7b": "qwen2.5-7b-instruct",
              "14b": "qwen2.5-14b", "32b": "qwen2.5-32b-instruct"}


def test_qwen_speed_rows_are_kept_as_published():
    runs = {r["id"]: r for r in other_runs_data()["runs"] if r["id"].startswith(("qwen2.5-speed-hf ", "qwen3-speed-hf "))}
    stated = {}
    for model, rates in QWEN25.items():
        size = model.split("-")[1].lower()
        for prompt, rate in zip(INPUTS, rates):
            stated[f"qwen2.5-speed-hf qwen2.5-{size}-instruct input {prompt}"] = (rate, prompt, PRESETS_25[size])
    for model, rates in QWEN3.items():
        for prompt, rate in zip(INPUTS, rates):
            stated[f"qwen3-speed-hf {model.lower()} input {prompt}"] = (rate, prompt, model.lower())
    assert len(runs) == 52 and set(runs) == set(stated)
    for run_id, (rate, prompt, preset) in stated.items():
        run = runs[run_id]
        assert (run["published_tokens_per_s"], run["prompt"], run.get("preset", run["model"]), run["tp"]) == (rate, prompt, preset, 1)


def test_the_qwen_sources_state_eager_transformers_with_flash_attention():
    sources = other_runs_data()["sources"]
    a100, h20 = sources["qwen2.5-speed-hf"], sources["qwen3-speed-hf"]
    for source in (a100, h20):
        assert (source["gen"], source["batch"], source["cuda_graphs"]) == (2048, 1, False)
        assert (source["attention"], source["kv_cache"]) == ("flash", "dynamic")
    # each source's transformers release (tests/test_hf_moe_loop.py: 4.51's Qwen3-MoE block loops over every expert;
    # tests/test_hf_repeat_kv_446.py: 4.46's Qwen2 FlashAttention2 repeats the cached heads)
    assert (a100["implementation"], h20["implementation"]) == ("transformers-4.46", "transformers-4.51")
    assert (a100["hardware"], a100["rate"]) == ("a100-80gb", "end_to_end")
    assert (h20["hardware"], h20["rate"]) == ("h20", "prompt_and_generation")


def test_the_prompt_and_generation_rate_counts_the_prompt_over_the_same_seconds():
    """Qwen3's Speed = (tokens_prompt + tokens_generation) / time: 2,048 new tokens at 10 tokens/s end
    to end took 204.8 s, so 6,144 + 2,048 tokens over them is 40 tokens/s; the other rates are read as given."""
    generation = {"end_to_end_tokens_per_second": 10.0, "decode_tokens_per_second": 12.5}
    assert sequence_rate(generation, "prompt_and_generation", 6144, 2048, 1) == 40.0
    assert sequence_rate(generation, "end_to_end", 6144, 2048, 1) == 10.0
    assert sequence_rate({"end_to_end_tokens_per_second": 30.0}, "prompt_and_generation", 1, 2048, 3) == 10.0 * 2049 / 2048


def test_the_qwen_steps_issue_the_counted_ops_of_transformers_generate():
    """transformers 5.24's counted ops a decoding step (eager_step_ops), per layer times the layers plus the
    step's own, under flash attention and the dynamic cache; the Qwen3 dense rows take 4.51.3's own (99 a layer,
    110 a step sampled: kernel_facts.json eager_step_ops and generate_windows, tests/test_generate_windows.py), the
    Qwen2.5 rows 4.46's (tests/test_hf_repeat_kv_446.py)."""
    from costmodel.eager_ops import step_ops
    from costmodel.presets import load_preset

    counts = {name: step_ops(load_preset(name), "transformers", "bf16", "flash", "dynamic")
              for name in ("qwen2.5-0.5b", "qwen2.5-7b-instruct", "qwen2.5-32b-instruct", "qwen3-8b", "qwen3-32b")}
    assert counts == {"qwen2.5-0.5b": 1880, "qwen2.5-7b-instruct": 2184, "qwen2.5-32b-instruct": 4920,
                      "qwen3-8b": 3368, "qwen3-32b": 5944}
    assert step_ops(load_preset("qwen3-8b"), "transformers-4.51", "bf16", "flash", "dynamic",
                    sampling="sampled") == 36 * 99 + 110 == 3674
