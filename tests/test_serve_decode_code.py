"""serve --decode-code: the option simulate and plan take (one definition, reports/options.py), reaching
the one rule of a serving path's code (decode_codes.serving_code), named in serve's JSON and text, and
refused in one line where it cannot apply. Each figure is the code's (decode_codes.json, kernel_facts.json
"eager_step_ops") on Llama 2 7B, one A100 80GB: batch 1, prompt 512, 128 tokens."""

from __future__ import annotations

import json

import pytest

from cli import cli, main
from costmodel.api import load_model
from costmodel.config import ConfigError
from costmodel.decode_codes import runs_classes, serving_code
from costmodel.serving.replica import replica_profile
from costmodel.spec import DECODE_CODES
from reports.options import DECODE_CODE_HELP

STATIC = ["serve", "--model", "llama2-7b", "--hardware", "a100-80gb", "--rate", "0.05", "--requests", "3",
          "--scheduler", "static", "--max-num-seqs", "1", "--output", "128"]


def serve_json(capsys, *args: str) -> dict:
    assert main([*STATIC, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_option_in_the_three_commands():
    """simulate, plan and serve take --decode-code from one definition: the same choices, the same words."""
    for name in ("simulate", "plan", "serve"):
        option = next(p for p in cli.commands[name].params if p.name == "decode_code")
        assert tuple(option.type.choices) == tuple(DECODE_CODES), name
        assert DECODE_CODE_HELP in option.help and DECODE_CODES.described() in option.help, name
    defaults = {name: next(p for p in cli.commands[name].params if p.name == "decode_code").default
                for name in ("simulate", "plan", "serve")}
    assert defaults == {"simulate": "transformers", "plan": None, "serve": None}  # None: serving_code's rule


def test_static_generate_counts_the_codes_ops(capsys):
    """Hugging Face generate's static batch under --decode-code gpt-fast: each eager step takes the longer of its
    kernels and gpt-fast's 4,068 counted ops at the A100's 7.1 us (28.8828 ms), as simulate --decode-code gpt-fast
    --attention flash times the same decode step. Before, serve counted transformers' 2,488 ops (17.66 ms) whatever
    the code."""
    generate = serve_json(capsys)
    fast = serve_json(capsys, "--decode-code", "gpt-fast")
    assert (generate["setup"]["decode_code"], fast["setup"]["decode_code"]) == ("transformers", "gpt-fast")
    assert generate["tpot"]["mean"] == pytest.approx(2488 * 7.1e-6, rel=1e-9)
    assert fast["tpot"]["mean"] == pytest.approx(4068 * 7.1e-6, rel=1e-9)
    assert main(["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--batch", "1", "--prompt", "512",
                 "--gen", "128", "--attention", "flash", "--decode-code", "gpt-fast", "--json"]) == 0
    decode = json.loads(capsys.readouterr().out)["decode"]
    assert decode["host"]["ops_per_step"] == 4068
    assert decode["time_per_output_token"] == pytest.approx(fast["tpot"]["mean"], rel=1e-9)


def test_text_names_the_code(capsys):
    assert main([*STATIC, "--decode-code", "gpt-fast"]) == 0
    text = capsys.readouterr().out
    assert "decode code: gpt-fast (--decode-code, on the static scheduler's schedule" in text
    assert "gpt-fast's decoding loop's counted ops at 7.10 us each" in text
    assert main(["serve", "--model", "llama2-7b", "--hardware", "a100-80gb", "--rate", "1", "--requests", "3"]) == 0
    assert "decode code: vllm (the vllm scheduler's engine's" in capsys.readouterr().out


def test_the_engine_code_is_the_default_and_a_typed_one_is_taken(capsys):
    base = ["serve", "--model", "llama2-7b", "--hardware", "a100-80gb", "--rate", "1", "--requests", "3", "--json"]
    assert main([*base, "--scheduler", "trtllm"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["decode_code"] == "tensorrt-llm"
    assert main([*base, "--decode-code", "tensorrt-llm"]) == 0  # the vllm schedule, TensorRT-LLM's cache
    assert json.loads(capsys.readouterr().out)["setup"]["decode_code"] == "tensorrt-llm"


@pytest.mark.parametrize("args, words", [
    (["--scheduler", "hf-fifo", "--decode-code", "gpt-fast"], "the hf-fifo scheduler is transformers' continuous"),
    (["--scheduler", "hf-prefill-first", "--decode-code", "transformers-4.46"], "runs its own code (transformers"),
    (["--decode-code", "vllm"], "'vllm' is not one of"),  # not among simulate's and plan's choices either
])
def test_refused_in_one_line(capsys, args, words):
    assert main(["serve", "--model", "llama2-7b", "--rate", "1", "--requests", "3", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_code_whose_step_parts_serve_does_not_time_is_refused(capsys):
    """transformers 4.51's Qwen3-MoE loop syncs the host once an expert; 4.46's Qwen2 flash path copies the
    cached K/V heads: simulate times both (roofline.py), a serving step neither, so serve says so."""
    assert main(["serve", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--rate", "1", "--requests", "3",
                 "--scheduler", "static", "--decode-code", "transformers-4.51"]) == 2
    assert "host syncs for qwen3-30b-a3b are timed by simulate" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="copies of the cache for qwen2.5-7b"):
        from costmodel.serving import serve
        serve("qwen2.5-7b", "h100-sxm", rate=1, requests=3, scheduler="static", decode_code="transformers-4.46")


def test_transformers_releases_run_the_classes():
    """A transformers release (a code whose base is transformers) runs the classes as they are: Llama 4's
    experts take every token (Profile.routed_experts False), as under transformers; before, any code other
    than the name "transformers" was routed."""
    # session 41 (wt41_hfgen) added the releases the HF generate rows name (4.31-4.39): transformers' classes too
    assert [code for code in DECODE_CODES if runs_classes(code)] == ["transformers", "transformers-4.31",
                                                                      "transformers-4.32", "transformers-4.34",
                                                                      "transformers-4.36", "transformers-4.39",
                                                                      "transformers-4.46", "transformers-4.51"]
    cfg = load_model("llama4-maverick")
    assert [replica_profile(cfg, "static", decode_code=code).routed_experts
            for code in ("transformers", "transformers-4.46", "gpt-fast")] == [False, False, True]
    assert serving_code("hf-fifo", "transformers") == "transformers"


def test_generates_static_batch_keeps_a_dynamic_cache(capsys):
    """Hugging Face generate's static batch keeps generate's DynamicCache (decode_codes.serving_cache: each
    step's keys and values concatenated onto the layer's cache), as simulate's default: Llama 3.1 8B, fp8 weights
    (no counted host ops, so the kernels show), one H100, 128 tokens after 512: serve's TPOT is simulate's mean
    decode step, 6.5568 ms (before: 6.111 ms, the cache written in place; 6.1671 ms before wt39_machete's W8A8 GEMM
    at 1-16 rows at vLLM's cutlass_scaled_mm's measured rate, kernel_facts.json w8a8_small_rows). gpt-fast's and
    TensorRT-LLM's caches are preallocated: static."""
    from costmodel.decode_codes import serving_cache

    base = ["serve", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--rate", "0.02", "--requests", "3",
            "--scheduler", "static", "--max-num-seqs", "1", "--prompt", "512", "--output", "128",
            "--weight-dtype", "fp8", "--json"]
    assert main(base) == 0
    tpot = json.loads(capsys.readouterr().out)["tpot"]["mean"]
    assert main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--batch", "1", "--prompt", "512",
                 "--gen", "128", "--attention", "flash", "--weight-dtype", "fp8", "--json"]) == 0
    decode = json.loads(capsys.readouterr().out)["decode"]
    assert tpot == pytest.approx(decode["time_per_output_token"], rel=1e-12)
    assert 1e3 * tpot == pytest.approx(6.5568, abs=1e-4)
    assert [serving_cache("static", code) for code in ("transformers", "transformers-4.46", "gpt-fast",
                                                       "tensorrt-llm")] == ["dynamic", "dynamic", "static", "static"]
    assert {serving_cache(s, "transformers") for s in ("hf-fifo", "vllm", "trtllm")} == {"static"}


def test_the_codes_one_qkv_gemm_reaches_serves_steps(capsys):
    """TensorRT-LLM's and gpt-fast's code run Q, K and V as one GEMM (kernel_facts.json fused_projections), which
    simulate's steps take; serve's kernel steps ran three (LeafKernels without fused_qkv). Llama 3.1 8B, fp8 weights,
    8 sequences of 512 + 128 on one H100, static schedule, tensorrt-llm: 6.6163 ms a token in both (before, serve
    6.3510 ms; 6.2252 ms before wt39_machete's W8A8 GEMM at 1-16 rows, kernel_facts.json w8a8_small_rows)."""
    assert main(["serve", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--rate", "inf", "--requests", "8",
                 "--scheduler", "static", "--max-num-seqs", "8", "--prompt", "512", "--output", "128",
                 "--weight-dtype", "fp8", "--decode-code", "tensorrt-llm", "--json"]) == 0
    tpot = json.loads(capsys.readouterr().out)["tpot"]["mean"]
    assert main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--batch", "8", "--prompt", "512",
                 "--gen", "128", "--attention", "flash", "--kv-cache", "static", "--weight-dtype", "fp8",
                 "--decode-code", "tensorrt-llm", "--json"]) == 0
    decode = json.loads(capsys.readouterr().out)["decode"]
    assert tpot == pytest.approx(decode["time_per_output_token"], rel=1e-12)
    assert 1e3 * tpot == pytest.approx(6.6163, abs=1e-4)


@pytest.mark.parametrize("command", [["serve", "--model", "llama2-7b", "--rate", "1"],
                                     ["simulate", "--model", "llama2-7b"],
                                     ["plan", "--model", "llama2-7b", "--serve", "--gpus", "1"],
                                     ["estimate", "--model", "llama2-7b"]])
def test_a_weight_group_below_one_names_the_option(capsys, command):
    """--weight-group 0 said "workload: weight_group must be at least 1" (the Python field) in every command."""
    assert main([*command, "--weight-dtype", "int4", "--weight-group", "0"]) == 2
    err = capsys.readouterr().err
    assert "'--weight-group': 0 is not in the range x>=1" in err and err.count("\n") == 1
