"""What a new user's round 44 turned up (wt44_user): README, docs/commands.md, serving, layouts and
fine-tuning run as an ML engineer types them, through the commands and the Python API. Each test runs
the command or the call as typed and checks the answer or the one error line; each failed before its fix.
"""

from __future__ import annotations

import re

import pytest

import costmodel
from costmodel.config import ConfigError
from tests.cli_run import one_error_line, run_json, run_main


def test_estimate_with_a_layout_field_as_a_keyword_names_layout():
    # simulate(..., tp=4) says "--tp is a layout's field: layout={'tp': 4}"; estimate(..., tp=8), the same mistake
    # as `estimate --tp 8` typed in Python, read "unknown keyword 'tp': a workload takes ..." and nothing on layout.
    with pytest.raises(ConfigError, match=re.escape("unknown keyword 'tp': --tp is a layout's field: layout={'tp': 8, "
                                                    "'zero': 1}; a workload takes seq_len, batch,")):
        costmodel.estimate("llama3.1-8b", seq_len=4096, tp=8, zero=1)
    with pytest.raises(ConfigError, match=re.escape("unknown keyword 'gpus': the GPUs are a layout's tp x pp x dp: "
                                                    "layout={'dp': 8}; a workload takes")):
        costmodel.estimate("llama3.1-8b", gpus=8)
    with pytest.raises(ConfigError, match=re.escape("unknown keyword 'foo': a workload takes seq_len")):
        costmodel.estimate("llama3.1-8b", foo=1)  # no layout field: no layout word
    assert costmodel.estimate("llama3.1-70b", seq_len=4096, layout={"tp": 8}).to_dict()["parallel"]["layout"]["tp"] == 8


def test_plan_with_the_gpu_count_as_text_says_to_give_the_number():
    # plan(m, "8", "h100") read "--gpus must be positive whole numbers, got '8'.": 8 is one, and nothing said the
    # trouble is the quotes.
    with pytest.raises(ConfigError, match=re.escape("got '8'. '8' is text: in Python give the number, gpus=8 (the "
                                                    "command line's --gpus reads the text).")):
        costmodel.plan("llama3.1-8b", "8", "h100")
    with pytest.raises(ConfigError, match=re.escape("'8, 16' is text: in Python give a list of numbers, gpus=[8, 16]")):
        costmodel.plan("llama3.1-8b", "8, 16", "h100")


@pytest.mark.parametrize("name, said", [
    ("dp", "data parallelism is replicas behind a router: replicas=N (--replicas N), each of tp x pp GPUs."),
    ("gpus", "a deployment's GPUs are replicas x tp x pp: give tp, pp and replicas (--tp, --pp, --replicas)."),
    ("ep", "expert parallelism (vLLM's --enable-expert-parallel) is not modelled by serve: a replica splits every "
           "expert over its tp ranks, as vLLM does without it (`simulate --dp N --ep N` times one expert-parallel "
           "generation)."),
])
def test_serve_refuses_a_training_layouts_words_saying_what_a_replica_takes(name, said, capsys):
    # `serve --dp 2` read click's "No such option '--dp'. (Did you mean one of: '--dtype', '--pp', '--tp'?)", `--ep 2`
    # "Did you mean ... '--help'", and serve(..., ep=2) "unknown keyword 'ep' (did you mean step?)".
    assert one_error_line(["serve", "--model", "mixtral-8x7b", "--hardware", "h100", "--rate", "1", f"--{name}", "2"],
                          capsys) == f"error: --{name} 2: serve takes no --{name}: {said}"
    with pytest.raises(ConfigError, match=re.escape(f"serve: unknown keyword {name!r}: {said}")):
        costmodel.serve("mixtral-8x7b", "h100", rate=1, requests=5, **{name: 2})


def test_an_fp16_lora_step_moves_the_bytes_a_bf16_one_does(capsys):
    # fp16 and bf16 run the same eager ops at the same element sizes (validate.eager_op_counts prints the same bytes
    # for both), and an H100's fp16 and bf16 peaks are equal; the fp16 step found no measured entry and kept the
    # tree's one-fused-kernel bytes: 0.142 s against bf16's 0.171 s.
    from costmodel.eager_ops import eager_training_implementation

    cfg = costmodel.load_model("llama3.1-8b")
    steps = {}
    for dtype in ("bf16", "fp16"):
        workload, _ = costmodel.make_workload(cfg, 2048, holds_cache=False, attention="sdpa", dtype=dtype)
        assert eager_training_implementation(cfg, workload)["name"] == "transformers-llama-sdpa-training"
        steps[dtype] = run_json(["finetune", "--model", "llama3.1-8b", "--method", "lora", "--hardware", "h100",
                                 "--dtype", dtype, "--json"], capsys)["time"]
    assert steps["fp16"]["step_seconds"] == steps["bf16"]["step_seconds"]
    assert round(steps["fp16"]["step_seconds"], 3) == 0.171


def test_a_measured_local_below_a_gb_per_s_loads_and_a_refused_one_is_said(tmp_path, monkeypatch, capsys):
    # `hardware --measure` on a 2-core machine shared by other jobs measured its decode chain at 0.51 GB/s; the schema's
    # unit floor, 1 GB/s ("below any GPU's or CPU's"), refused the file it had just written, and the list it printed
    # then said "(local: not measured yet; `python cli.py hardware --measure`)", the command just run.
    import json

    from costmodel.hardware import load_hardware

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    local = tmp_path / "transformer-costmodel" / "local.json"
    local.parent.mkdir()
    measured = {"name": "local", "architecture": "cpu", "description": "this machine", "default_dtype": "fp32",
                "flops_per_s": {"fp32": 12449243901.4}, "vector_flops_per_s": 337497992.2,
                "bandwidth_bytes_per_s": 508372717.9, "memory_bytes": 25276182528}
    local.write_text(json.dumps(measured))
    assert load_hardware("local").bandwidth_bytes_per_s == 508372717.9
    local.write_text(json.dumps({**measured, "bandwidth_bytes_per_s": 4.8}))  # a unit slip is still one line
    with pytest.raises(ConfigError, match=re.escape("bandwidth_bytes_per_s must be at least 1,000,000, got 4.8")):
        load_hardware("local")
    code, out, _ = run_main(["hardware"], capsys)
    assert code == 0 and out.rstrip().endswith("(local: measured, but its file does not load: `--hardware local` says "
                                               "why; `python cli.py hardware --measure` measures again)")

    import validate.calibrate

    monkeypatch.setattr(validate.calibrate, "calibrate", lambda dtypes: None)  # the 15 s measurement: the file above
    code, out, err = run_main(["hardware", "--measure"], capsys)
    progress, line = err.strip().splitlines()  # the measurement's progress line, then one error line
    assert (code, out) == (2, "") and progress.startswith("measuring matmul")
    assert line.startswith("error: hardware --measure: measured and cached, but the file is refused: ")
    assert "bandwidth_bytes_per_s must be at least 1,000,000, got 4.8" in line


@pytest.mark.parametrize("quantity, near", [("kv_cache", "kv_cache_bytes"), ("activations", "saved_bytes"),
                                            ("flops", "flops_matmul, flops_other, flops_matmul_backward, "
                                                      "flops_other_backward")])
def test_formulas_with_estimates_word_for_a_quantity_names_the_formulas_one(quantity, near, capsys):
    # `formulas --quantity kv_cache` (estimate's JSON key) or `activations` (its Memory line) read "unknown quantity"
    # and the twenty names, the one meant among them unsaid.
    line = one_error_line(["formulas", "--model", "llama3.1-8b", "--block", "attention", "--quantity", quantity], capsys)
    assert line.startswith(f"error: unknown quantity {quantity!r} (did you mean {near}?); use one of params, ")


def test_serve_with_the_rate_as_text_says_to_give_the_number():
    # serve(m, "h100", rate="5") read "--rate must be a positive number of requests per second, got '5'.": 5 is one.
    with pytest.raises(ConfigError, match=re.escape("got '2.5': text; in Python give the number, rate=2.5.")):
        costmodel.serve("llama3.1-8b", "h100", rate="2.5", requests=3)
    with pytest.raises(ConfigError, match=re.escape("per second, got 'fast'.")):
        costmodel.serve("llama3.1-8b", "h100", rate="fast", requests=3)
