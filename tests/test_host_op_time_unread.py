"""simulate --host-op-time where nothing weighs the host: one `error:` line saying why, as the roofline
already was (test_host_op_default.py). Before, these runs printed the same figures with and without the
option: one GPU's training (the roofline), --compile, a CPU file, and the steps whose eager ops are not
counted (gpt-fast's Mixtral, a quantized gpt-fast step, a family generate's count leaves out, Megatron's
training step). Where the host is weighed the option is read, and one GPU's JSON now says so for the
prefill too (prefill.host: eager even under --cuda-graphs)."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json

HEAD = "error: --host-op-time is the host's time per eager op, which nothing here weighs: "
NOT_COUNTED = ("no step here runs code whose eager ops are counted (kernel_facts.json eager_step_ops: Hugging "
               "Face generate's and gpt-fast's unquantized decoding of the families counted; eager_training_ops: "
               "one GPU's eager Hugging Face training step; not this model, code or framework); drop it.")
DECODE = ["--hardware", "h100-sxm", "--prompt", "64", "--gen", "8"]
#: kernel_facts.json eager_step_ops, transformers' generate of Llama-2-7B in bf16 (32 layers): its decode step
LLAMA2_7B_GENERATE_OPS = 3023


@pytest.mark.parametrize("args,why", [
    (["--model", "llama2-7b", *DECODE, "--compile"],
     "--compile runs every step compiled, with no eager op for the host to issue; drop it."),
    (["--model", "mixtral-8x7b", *DECODE, "--decode-code", "gpt-fast-mixtral"], NOT_COUNTED),
    (["--model", "llama2-7b", *DECODE, "--decode-code", "gpt-fast", "--weight-dtype", "int8"], NOT_COUNTED),
    (["--model", "deepseek-v2-lite", *DECODE], NOT_COUNTED),
    (["--model", "gpt2", "--hardware", "h100-sxm", "--train", "--seq-len", "512"],
     "training on one GPU is timed by the roofline, which counts no ops (give a layout, e.g. --dp 1); drop it."),
    (["--model", "llama2-7b", "--hardware", "h100-sxm", "--train", "--seq-len", "512", "--tp", "2",
      "--framework", "megatron"], NOT_COUNTED),
])
def test_unread_host_op_time_is_one_error_line(args, why, capsys):
    assert one_error_line(["simulate", *args, "--host-op-time", "1e-5"], capsys, warnings=True) == HEAD + why


def test_a_cpu_file_is_named(tmp_path, capsys):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"name": "cpu", "flops_per_s": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10,
                                "memory_bytes": 2**34, "gemm_efficiency_by_rows": {"fp32": {"1": 0.1, "8": 0.5}}}))
    for extra in ([], ["--train", "--seq-len", "128", "--dp", "1"]):
        args = ["simulate", "--model", "gpt2", "--hardware", str(path), "--dtype", "fp32", "--host-op-time", "1e-5"]
        if not extra:
            args += ["--prompt", "64", "--gen", "8"]
        assert one_error_line([*args, *extra], capsys) == HEAD + (
            "cpu is a CPU, which runs each op in the thread that issues it: its steps pay the file's per-block "
            "launch overhead (--launch-overhead), not a host op time; drop it.")


def test_read_where_the_host_is_weighed(capsys):
    """Eager generate on an H100: the decode step's and the prefill's 3,023 ops at 10 us; under --cuda-graphs
    the decode steps replay (no host entry) and the prefill, eager, still reads it."""
    eager = run_json(["simulate", "--model", "llama2-7b", *DECODE, "--host-op-time", "1e-5"], capsys)
    assert eager["decode"]["host"]["ops_per_step"] == eager["prefill"]["host"]["ops_per_step"] == LLAMA2_7B_GENERATE_OPS
    assert eager["prefill"]["host"]["seconds_per_step"] == LLAMA2_7B_GENERATE_OPS * 1e-5
    assert eager["decode"]["host"]["op_time_borrowed"] is False
    graphed = run_json(["simulate", "--model", "llama2-7b", *DECODE, "--cuda-graphs", "--host-op-time", "1e-5"], capsys)
    assert "host" not in graphed["decode"] and graphed["prefill"]["host"]["seconds_per_step"] == 3023 * 1e-5
    assert graphed["prefill"]["host"]["bound"] is (graphed["prefill"]["seconds"] == 3023 * 1e-5)
    layout = run_json(["simulate", "--model", "gpt2", "--hardware", "h100-sxm", "--train", "--seq-len", "512",
                       "--dp", "1", "--host-op-time", "1e-5"], capsys)
    assert layout["step"]["host"]["ops_per_step"] == 2544
