"""torchao's long-cache decoding rows (session 29): Llama-3.1-8B on an A100, eager, with a static
KV cache of 8,192 to 131,072 tokens (bf16, int8, int8 with the linear causal mask), typed from
pytorch/ao torchao/_models/llama/benchmark_results.txt's 'KV CACHE QUANTIZATION' section at
b4d0768; every step attends the whole allocated cache, which the model does not express, so each
row is kept and reported as not expressible, with the reason."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from reports.published_runs import decode_run, decode_setup, other_runs_data

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
    assert "repeat_interleave" in source["not_modelled"] and "k_cache * k_cache_scale" in source["not_modelled"]


@pytest.mark.parametrize("model", ["roofline", "kernels"])
def test_a_cache_longer_than_the_context_is_not_expressible(model):
    data = other_runs_data()
    run = data["runs"][[r["id"] for r in data["runs"]].index("torchao-kv-long llama3.1-8b cache 8192")]
    with pytest.raises(ConfigError, match=r"static cache of 8,192 tokens .* 6 \+ 200 tokens at most"):
        decode_run(run, data["sources"]["torchao-kv-long"], model)


def test_a_cache_within_the_context_carries_its_kv_dtype():
    """kv_dtype is a decode row's quantization key (DECODE_QUANTIZATION): with the cache no longer
    than prompt + gen (206), the row is the model's usual eager gpt-fast step with an int8 cache."""
    data = other_runs_data()
    run = dict(_runs()["torchao-kv-long llama3.1-8b cache 8192 kv int8"], cache_size=206)
    cfg, hardware, settings, quantization = decode_setup(run, data["sources"]["torchao-kv-long"])
    assert (cfg.n_decoder_layers, cfg.n_kv_heads) == (32, 8)
    assert quantization == {"kv_dtype": "int8"} and settings["kv_cache"] == "static"
    assert hardware.name == "a100-80gb"
