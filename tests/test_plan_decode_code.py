"""plan --serve --decode-code: one rule (decode_codes.serving_code) for the code that decodes, with and without
--rate: the code typed, else the engine's (without --rate Hugging Face generate's, as simulate's default; with
--rate the search's vllm scheduler's). Each figure below is the code's cache (decode_codes.json)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.plan import plan
from costmodel.config import ConfigError
from costmodel.decode_codes import serving_code

LLAMA = ["--model", "llama3.1-8b", "--hardware", "h100-sxm", "--serve", "--kv-dtype", "fp8", "--json"]


def run(*args: str) -> dict:
    result = CliRunner().invoke(plan, [*LLAMA, *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_one_rule_names_the_code():
    assert serving_code(None) == "transformers"  # plan --serve's layouts, as simulate's default
    assert serving_code("vllm") == "vllm" and serving_code("trtllm") == "tensorrt-llm"
    assert serving_code("static", "tensorrt-llm") == "tensorrt-llm"  # TensorRT-LLM's static batches
    assert serving_code(None, "gpt-fast") == "gpt-fast"
    with pytest.raises(ConfigError, match="decode code must be one of"):
        serving_code("vllm", "no-such-code")


@pytest.mark.slow
def test_layouts_take_the_code_typed():
    """Llama 3.1 8B, 32 sequences of 2,048 + 128 tokens, an FP8 cache on one H100: transformers' code reads it
    dequantized (2 bytes an element), TensorRT-LLM's as stored (1): the decode steps' cache reads halve."""
    base = ["--gpus", "1", "--batch", "32", "--prompt", "2048", "--gen", "128"]
    generate, engine = run(*base), run(*base, "--decode-code", "tensorrt-llm")
    assert (generate["inputs"]["decode_code"], engine["inputs"]["decode_code"]) == ("transformers", "tensorrt-llm")
    first, second = generate["feasible"][0], engine["feasible"][0]
    assert first["per_rank"]["total"] == second["per_rank"]["total"]  # the same cache held
    assert 1e3 * first["time_per_output_token"] == pytest.approx(16.28, abs=0.01)
    assert 1e3 * second["time_per_output_token"] == pytest.approx(13.37, abs=0.01)


@pytest.mark.slow
def test_the_capacity_search_takes_the_same_option():
    base = ["--rate", "2", "--slo-ttft", "1", "--slo-tpot", "0.1", "--requests", "20", "--tp", "1"]
    assert run(*base)["decode_code"] == "vllm"  # the search's scheduler's engine
    assert run(*base, "--decode-code", "transformers")["decode_code"] == "transformers"


def test_a_training_plan_refuses_it():
    result = CliRunner().invoke(plan, ["--model", "llama3.1-8b", "--gpus", "8", "--decode-code", "tensorrt-llm"])
    assert result.exit_code == 2 and "--decode-code" in result.output
