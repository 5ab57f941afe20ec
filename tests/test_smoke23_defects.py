"""A new user's twenty-third round (session 26; validate/FINDINGS.md "A new user's twenty-third round"):
serving and paying for GPUs, with hand-written hardware files and request-length files. Each test failed
before its fix; the numbers are exact, or the figure another command prints for the same case."""

from __future__ import annotations

import json
import math

import pytest

from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware
from tests.cli_run import one_error_line, run_json


def _file(tmp_path, preset: str, keep_network: bool = False, **fields) -> str:
    """A hand-written hardware file: `hardware --show PRESET`'s fields, edited; network_of (which
    `--show` writes) dropped unless kept, as a user typing the file does not write it."""
    data = load_hardware(preset).to_dict()
    if not keep_network:
        data.pop("network_of")
    data.update(fields)
    path = tmp_path / f"{data['name'].replace(' ', '_')}.json"
    path.write_text(json.dumps(data))
    return str(path)


# 1. a hand-written file named as --hardware reads names (any case, an alias) is that preset's network

TP8 = ["simulate", "--model", "llama3-70b", "--tp", "8", "--prompt", "2048", "--gen", "128"]


@pytest.mark.parametrize("name", ["H100-SXM", "h100", "NVIDIA H100 80GB HBM3"])
def test_a_hand_written_file_named_in_any_case_keeps_the_presets_collectives(name, tmp_path, capsys):
    """`--hardware H100-SXM` is h100-sxm, but a file named "H100-SXM" (or "h100", its alias) timed
    tp 8's all-reduces at the link bandwidth instead of nccl_facts.json's measured h100-sxm curves:
    Llama 3 70B decoded at 16.0 ms a token against the preset's 20.78 ms (22% fast)."""
    preset = run_json([*TP8, "--hardware", "h100-sxm"], capsys)["token"]
    typed = run_json([*TP8, "--hardware", _file(tmp_path, "h100-sxm", name=name)], capsys)["token"]
    # since wt27_tphost the eager step is its hosts' (generate's 6,136 ops x 6.545 us): the all-reduces are
    # in the rank's kernels, which with their 80 x 9 + 3 = 723 launches x 10 us are the 20.78 ms pinned (less, since
    # wt38_sweep, the GPU-side launch cost the kernels keep: 1,207 kernels x 1.3 us, graph_kernel_s)
    assert round((preset["host"]["kernels_seconds"] + 723 * 1e-5 - 1207 * 1.3e-6) * 1e3, 2) == 20.78
    assert preset["seconds_per_token"] == 6136 * 6.545241752576789e-06
    assert typed == preset
    typed_file = {key: value for key, value in load_hardware("h100").to_dict().items() if key != "network_of"}
    assert Hardware.from_dict(dict(typed_file, name=name), "typed").network_of == "h100-sxm"


def test_network_of_in_any_case_is_the_preset(tmp_path):
    """network_of 'H100-SXM' was "not a preset" (one error line listing h100-sxm itself)."""
    data = dict(load_hardware("h100-sxm").to_dict(), name="my-h100", network_of="H100-SXM")
    assert Hardware.from_dict(data, "typed").to_dict()["network_of"] == "h100-sxm"
    with pytest.raises(ConfigError, match="network_of 'h100-foo' is not a preset"):
        Hardware.from_dict(dict(data, network_of="h100-foo"), "typed")


def test_a_file_that_kept_the_presets_name_with_its_bandwidth_edited_is_refused(tmp_path, capsys):
    """The check on a copy's measured GEMV rate (a copy's bandwidth edited, the preset's 3.017 TB/s
    Dot rate kept) skipped a copy that kept the preset's name: h100-sxm at 6.7 TB/s decoded Llama 3
    8B (512 + 128) at 9.24 ms a step against the preset's 9.27 ms, its GEMMs still read at 3.017 TB/s."""
    path = _file(tmp_path, "h100-sxm", keep_network=True, bandwidth_bytes_per_s=6.7e12)
    line = one_error_line(["simulate", "--model", "llama3-8b", "--hardware", path], capsys)
    assert "bandwidth_bytes_per_s is 6.7e+12, not h100-sxm's 3.35e+12" in line
    assert "gemv_bandwidth_bytes_per_s is still h100-sxm's measured 3.017e+12" in line


# 2. vLLM's batch defaults: "a100" in the device name, lowercased as vLLM lowercases it

def test_vllm_budgets_on_an_a100_named_in_capitals(tmp_path, capsys):
    """vLLM's EngineArgs.get_batch_defaults gives 8192 tokens / 1024 sequences on >= 70 GiB GPUs but
    the A100, testing "a100" in current_platform.get_device_name().lower(); a file named
    "A100-80GB" (or the driver's "NVIDIA A100-SXM4-80GB") got the H100's 8192 / 1024."""
    for name in ("A100-80GB", "NVIDIA A100-SXM4-80GB"):
        path = _file(tmp_path, "a100-80gb", name=name)
        setup = run_json(["serve", "--model", "llama3-8b", "--hardware", path, "--rate", "5", "--requests", "4"],
                         capsys)["setup"]
        assert (setup["max_num_seqs"], setup["max_batched_tokens"]) == (256, 2048)
    renamed = _file(tmp_path, "a100-80gb", keep_network=True, name="lab-gpu-3")  # network_of a100-80gb
    setup = run_json(["serve", "--model", "llama3-8b", "--hardware", renamed, "--rate", "5", "--requests", "4"],
                     capsys)["setup"]
    assert (setup["max_num_seqs"], setup["max_batched_tokens"]) == (256, 2048)


def test_deepep_over_the_nvl72_domain_on_a_renamed_gb200_copy():
    """kernel_facts.json's DeepEP rates at EP 32 were looked up by the file's own name, so a renamed
    copy of gb200 (network_of gb200) was refused; now by network_name, as the collectives: 6.014 ms
    (tests/test_ep_dispatcher.py's figure on the preset)."""
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import StepTime
    from costmodel.presets import load_preset

    layout = Layout(dp=32, ep=32, framework="megatron", zero=1, ep_dispatcher="deepep")
    estimate = ParallelEstimate(load_preset("deepseek-v3"), Workload(seq_len=4096, batch=1, dtype="bf16",
                                                                     impl="megatron", attention="flash"), layout)
    copy = Hardware.from_dict(dict(load_hardware("gb200").to_dict(), name="rack-7-gb200"), "typed")
    assert copy.network_name == "gb200"
    assert round(StepTime(estimate, copy).flex_dispatch(2 * 2 * 4096 * 7168 * 2) * 1e3, 3) == 6.014


# 3. a power or clock limit without the figure it caps

@pytest.mark.parametrize("dropped, limit", [("power_watts", {"power_limit_watts": 300}),
                                            ("clock_mhz", {"clock_limit_mhz": 1000})])
def test_a_limit_without_what_it_caps_is_one_error_line(dropped, limit, tmp_path, capsys):
    """An H100 file with a 300 W cap but no power_watts ran at the full 989.4 TFLOP/s without a word
    (clock_scale needs both); with power_watts 700 it runs at (300/700)^(1/3) of it."""
    data = load_hardware("h100-sxm").to_dict()
    data.pop(dropped)
    path = tmp_path / "capped.json"
    path.write_text(json.dumps({**data, **limit}))
    line = one_error_line(["simulate", "--model", "llama3-8b", "--hardware", str(path)], capsys)
    assert f"{next(iter(limit))} needs {dropped}" in line
    capped = Hardware.from_dict({**load_hardware("h100-sxm").to_dict(), "power_limit_watts": 300}, "typed")
    assert capped.flops_per_s["bf16"] == pytest.approx(989.4e12 * (300 / 700) ** (1 / 3), rel=1e-12)


# 4. a request-length histogram file

@pytest.mark.parametrize("histogram", [
    {"values": [100.5, 200], "weights": [1, 1]},            # read as 100
    {"values": [True, 200], "weights": [1, 1]},             # read as 1 token
    {"values": ["100", 200], "weights": [1, 1]},            # read as 100
    {"values": [100, 200], "weights": [math.inf, 1]},       # numpy: Probabilities contain NaN
    {"values": [100, 200], "weights": [1e308, 1e308]},      # numpy: Probabilities do not sum to 1
])
def test_a_histogram_of_odd_values_or_weights_is_one_error_line(histogram, tmp_path, capsys):
    path = tmp_path / "lengths.json"
    path.write_text(json.dumps(histogram))
    line = one_error_line(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "20",
                           "--prompt", f"histogram:{path}"], capsys)
    assert "a length histogram needs whole, positive values (tokens)" in line


def test_a_histogram_of_whole_values_draws_only_them(tmp_path):
    from costmodel.serving.workload import Lengths

    path = tmp_path / "lengths.json"
    path.write_text(json.dumps({"values": [100, 200], "weights": [1, 3]}))
    import numpy as np

    drawn = Lengths.parse(f"histogram:{path}").sample(np.random.default_rng(0), 4000)
    assert set(drawn.tolist()) == {100, 200} and 0.7 < (drawn == 200).mean() < 0.8
    with pytest.raises(ConfigError, match="finite"):
        Lengths("histogram", values=(100,), weights=(math.nan,))


# 5. a file's extension in capitals

def test_a_hardware_or_model_file_ending_in_capital_json_is_a_file(tmp_path, monkeypatch, capsys):
    """`--hardware MyGPU.JSON` (no directory) was "unknown hardware 'MyGPU.JSON'. Known: a10, ..."
    and `--model Tiny.JSON` "unknown model": the path test read ".json" in lower case only."""
    monkeypatch.chdir(tmp_path)
    data = load_hardware("h100-sxm").to_dict()
    (tmp_path / "MyGPU.JSON").write_text(json.dumps(dict(data, name="my-h100", power_limit_watts=350)))
    (tmp_path / "Tiny.JSON").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000, "max_position_embeddings": 2048}))
    out = run_json(["simulate", "--model", "Tiny.JSON", "--hardware", "MyGPU.JSON", "--prompt", "64", "--gen", "2"],
                   capsys)
    assert out["inputs"]["hardware"] == "my-h100"
    # the 350 W cap: 989.4 TFLOP/s x (350 / 700)^(1/3) = 785.29
    assert load_hardware("MyGPU.JSON").flops_per_s["bf16"] == pytest.approx(989.4e12 * 0.5 ** (1 / 3), rel=1e-12)
    assert "no such file" in one_error_line(["simulate", "--model", "Nope.JSON"], capsys)
    assert "'Nope.JSON' does not exist" in one_error_line(["simulate", "--model", "llama3-8b", "--hardware",
                                                           "Nope.JSON"], capsys)


# 6. a short run's duration

def test_a_run_under_a_second_says_its_milliseconds(tmp_path, capsys):
    """One request of 10 + 5 tokens: the text said "over 0.0 s" beside 31.39 req/s."""
    from tests.cli_run import run_main

    trace = tmp_path / "one.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5}\n')
    duration = run_json(["serve", "--model", "llama3-8b", "--trace", str(trace)], capsys)["duration_s"]
    code, out, _ = run_main(["serve", "--model", "llama3-8b", "--trace", str(trace)], capsys)
    assert code == 0 and f"req/s, 157 output tokens/s, 470 tokens/s over {1e3 * duration:.1f} ms" in out  # 471 before V1's sampler
    assert round(5 / duration) == 157 and f"{1e3 * duration:.1f}" == "31.9"
