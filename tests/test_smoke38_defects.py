"""Defects a new user hit in session 38 (wt38_user): each test failed before its fix."""

from __future__ import annotations

import re

import pytest

import costmodel
from costmodel.errors import ConfigError
from costmodel.layout.spec import Layout
from costmodel.lora_adapters import FineTune
from costmodel.workload import Workload
from tests.cli_run import one_error_line, run_json


# ---------------------------------------------------------------------------------------------
# 1. the API's choice keywords in any case, as the commands take them (spec.KEYWORD_CHOICES)

def test_workload_layout_and_finetune_take_their_choices_in_any_case():
    """Workload(dtype="BF16") and the rest were refused ("attention must be one of eager, sdpa, flash; got
    'SDPA'") while `--attention SDPA` runs: spec.spell_fields, called first by each owner's check."""
    workload = Workload(dtype="BF16", attention="SDPA", impl="HF", recompute="Full", optimizer="AdamW",
                        precision="Mixed", weight_dtype="INT4", kv_dtype="FP8", kv_cache="Static", mla="Absorbed")
    assert (workload.dtype, workload.attention, workload.impl, workload.recompute, workload.optimizer,
            workload.precision, workload.weight_dtype, workload.kv_dtype, workload.kv_cache, workload.mla) == (
        "bf16", "sdpa", "hf", "full", "adamw", "mixed", "int4", "fp8", "static", "absorbed")
    layout = Layout(framework="Megatron", schedule="1F1B", tp=2)
    assert (layout.framework, layout.schedule) == ("megatron", "1f1b")
    tune = FineTune(method="QLoRA", optimizer="AdamW8bit", adapter_dtype="BF16")
    assert (tune.method, tune.optimizer, tune.adapter_dtype) == ("qlora", "adamw8bit", "bf16")
    with pytest.raises(ConfigError, match="attention must be one of eager, sdpa, flash; got 'sdpx'"):
        Workload(attention="sdpx")  # a typo is still one line naming the choices


def test_estimate_in_any_case_is_the_lower_case_estimate():
    """costmodel.estimate("llama2-7b", dtype="BF16", attention="SDPA", recompute="Selective") raised; now it
    is the lower-case call's numbers (Llama 2 7B's 6,738,415,616 parameters, LlamaForCausalLM's count)."""
    upper = costmodel.estimate("llama2-7b", seq_len=1024, dtype="BF16", attention="SDPA", recompute="Selective",
                               impl="HF").to_dict()
    lower = costmodel.estimate("llama2-7b", seq_len=1024, dtype="bf16", attention="sdpa", recompute="selective",
                               impl="hf").to_dict()
    assert upper == lower and upper["params"]["total"] == 6738415616


@pytest.mark.parametrize("keywords", [{"weight_dtype": "INT4"}, {"kv_dtype": "FP8"}, {"attention": "SDPA"},
                                      {"decode_code": "GPT-FAST"}, {"kv_cache": "Static"}])
def test_simulate_inference_takes_each_choice_in_any_case(keywords):
    """simulate's weight_dtype, kv_dtype, attention and decode_code were case-sensitive (wt37_api spelled dtype
    and kv_cache alone, in simulate_api.py): now the API's door, plain_arguments, spells each."""
    lower = {name: value.lower() for name, value in keywords.items()}
    assert (costmodel.simulate("llama2-7b", "h100-sxm", prompt=512, gen=8, **keywords).to_dict()
            == costmodel.simulate("llama2-7b", "h100-sxm", prompt=512, gen=8, **lower).to_dict())


def test_simulate_training_and_plan_take_recompute_impl_framework_in_any_case():
    upper = costmodel.simulate("llama2-7b", "h100-sxm", train=True, seq_len=1024, recompute="FULL", impl="Megatron",
                               layout={"tp": 2, "framework": "Megatron"}).to_dict()
    lower = costmodel.simulate("llama2-7b", "h100-sxm", train=True, seq_len=1024, recompute="full", impl="megatron",
                               layout={"tp": 2, "framework": "megatron"}).to_dict()
    assert upper == lower
    plan = costmodel.plan("llama2-7b", 8, "h100-sxm", seq_len=2048, global_batch=64, recompute="Selective",
                          framework="Megatron", rank_by="Cost")
    assert plan.to_dict() == costmodel.plan("llama2-7b", 8, "h100-sxm", seq_len=2048, global_batch=64,
                                            recompute="selective", framework="megatron", rank_by="cost").to_dict()


@pytest.mark.parametrize("keywords", [{"scheduler": "VLLM"}, {"dtype": "BF16"}, {"weight_dtype": "FP8"},
                                      {"kv_dtype": "FP8"}, {"attention": "FLASH"}, {"cuda_graphs": "On"},
                                      {"time_model": "Roofline"}, {"replicas": 2, "router": "Round-Robin"}])
def test_serve_takes_each_choice_in_any_case(keywords):
    """costmodel.serve(..., scheduler="VLLM") read "--scheduler must be one of vllm, ..." while `serve
    --scheduler VLLM` runs."""
    lower = {name: value.lower() if isinstance(value, str) else value for name, value in keywords.items()}
    run = costmodel.serve("llama3-8b", "h100-sxm", rate=2, requests=6, **keywords).to_dict()
    assert run == costmodel.serve("llama3-8b", "h100-sxm", rate=2, requests=6, **lower).to_dict()


# ---------------------------------------------------------------------------------------------
# 2. cuda_graphs="off" replayed graphs (a non-empty string is truthy)

@pytest.mark.parametrize(("value", "replayed"), [("off", False), ("auto", False), ("on", True), ("On", True),
                                                 (False, False), (True, True)])
def test_simulate_and_plan_read_cuda_graphs_words_as_the_command_does(value, replayed):
    """costmodel.simulate(..., cuda_graphs="off") timed graph replays (bool("off") is True); `simulate
    --cuda-graphs off` ran eager. errors.graphs_replayed is the one rule, the command's callback too."""
    run = costmodel.simulate("llama2-7b", "h100-sxm", prompt=512, gen=8, cuda_graphs=value).to_dict()
    assert run["inputs"]["cuda_graphs"] is replayed
    plan = costmodel.plan("llama2-7b", 1, "h100-sxm", serve=True, prompt=512, gen=8, cuda_graphs=value).to_dict()
    assert plan["inputs"]["cuda_graphs"] is replayed


def test_cuda_graphs_other_words_are_one_line(capsys):
    with pytest.raises(ConfigError, match="cuda_graphs must be true, false, 'on', 'off' or 'auto', got 'yes'"):
        costmodel.simulate("llama2-7b", "h100-sxm", cuda_graphs="yes")
    assert run_json(["simulate", "--model", "llama2-7b", "--cuda-graphs", "OFF"], capsys)["inputs"]["cuda_graphs"] is False
    assert run_json(["simulate", "--model", "llama2-7b", "--cuda-graphs"], capsys)["inputs"]["cuda_graphs"] is True
    assert "'yes' is not one of 'auto', 'on', 'off'" in one_error_line(["simulate", "--model", "llama2-7b", "--cuda-graphs", "yes"], capsys)


# ---------------------------------------------------------------------------------------------
# 3. finetune's --price and --tokens were checked only where the step fits

@pytest.mark.parametrize(("args", "line"), [
    (["--price", "-5", "--tokens", "1e8"], "--price must be a positive number of dollars per GPU-hour, got -5.0."),
    (["--price", "5"], "--price costs a run of --tokens tokens: add --tokens (e.g. 1e12)."),
    (["--tokens", "0"], "--tokens must be positive and finite, got 0.0."),
])
def test_finetunes_run_inputs_are_checked_whether_or_not_the_step_fits(args, line, capsys):
    """`finetune --model mixtral-8x7b --method qlora --hardware h100 --price -5 --tokens 1e8` exited 0 ("not
    timed": 102 GiB does not fit in 79), as --price alone did; on a step that fits the same input was refused.
    Now cost.check_run_inputs (simulate's and plan's one check) runs first, for both."""
    for model in ("mixtral-8x7b", "llama2-7b"):
        assert one_error_line(["finetune", "--model", model, "--method", "qlora", "--hardware", "h100", *args],
                              capsys) == f"error: {line}"


# ---------------------------------------------------------------------------------------------
# 4. docs/finetuning.md's Python API: make_workload's (workload, warnings) into finetune_memory

def _python_block(path: str, after: str) -> str:
    import re
    from pathlib import Path

    text = Path(path).read_text()
    return re.search(r"```python\n(.*?)```", text[text.index(after):], re.S).group(1)


def test_finetunings_documented_python_api_runs_and_prints_what_it_says():
    """docs/finetuning.md said "`workload` from `costmodel.make_workload`", which returns (workload, warnings):
    passed as told, finetune_memory raised AttributeError "'tuple' object has no attribute 'attention'". The doc
    now shows the call (its figures: `finetune --model llama2-7b --method qlora --json`'s memory.total, 15,085,100,428
    B, under transformers' sdpa), and a tuple is one ConfigError."""
    code = _python_block("docs/finetuning.md", "The Python API: `costmodel.finetune.finetune_memory")
    lines = code.splitlines()
    namespace: dict = {}
    exec("\n".join(line for line in lines if not line.startswith(("finetune_memory(", "finetune_verdict("))), namespace)
    assert [eval(line.split("  #")[0], namespace) for line in lines
            if line.startswith(("finetune_memory(", "finetune_verdict("))] == [15085100428, True, 25232932864]
    # the third line since session 42 (wt42_user2): a hardware name as the capacity, the RTX 4090's 23.50 GiB
    from costmodel.finetune import finetune_memory

    cfg = namespace["cfg"]
    with pytest.raises(ConfigError, match=r"workload: a costmodel Workload, got tuple \(costmodel.make_workload returns"):
        finetune_memory(cfg, costmodel.make_workload(cfg, 2048), namespace["tune"])


@pytest.mark.parametrize("capacity", ["24GB", -1, 0, True, float("nan")])
def test_finetune_verdicts_capacity_that_is_not_bytes_is_one_config_error(capacity):
    """finetune_verdict(cfg, workload, tune, "24GB") raised TypeError ('<=' not supported); -1, 0 and True
    answered "does not fit" (True: a capacity of one byte)."""
    from costmodel.finetune_verdict import finetune_verdict

    cfg = costmodel.load_model("llama2-7b")
    workload, _ = costmodel.make_workload(cfg, 2048, holds_cache=False, attention="sdpa")
    with pytest.raises(ConfigError, match=r"capacity: the GPU's bytes, a positive number \(24 GiB is 24 \* 2\*\*30\)"):
        finetune_verdict(cfg, workload, FineTune(method="qlora"), capacity)


# ---------------------------------------------------------------------------------------------
# 5. formulas, the one command of stdout text without --json

def test_formulas_prints_its_expressions_as_json_too(capsys):
    """`formulas --model llama2-7b --block scores --json`: "No such option '--json'" where every other command
    that prints to stdout takes it. Now costmodel/formulas.py owns the selection (the command had it), the text is
    unchanged and --json prints the same rows: the scores' forward FLOPs 2 b d_h h n^2 (4,096 x 2,048^2 x 2 at
    b 1 = 1.10 T a layer x 32 in estimate's table) and its count L_dec."""
    data = run_json(["formulas", "--model", "llama2-7b", "--block", "scores"], capsys)
    (row,) = data["blocks"]
    assert (row["path"], row["count"], row["formulas"]["flops_matmul"]) == (
        "decoder.layer.self_attention.scores", "L_dec", "2*b*d_h*h*n**2")
    assert data["symbols"]["h_kv"] == "key/value heads"
    latex = run_json(["formulas", "--model", "llama2-7b", "--block", "scores", "--latex"], capsys)
    assert latex["blocks"][0]["formulas"]["flops_matmul"] == r"2 b d_{h} h n^{2}"
    assert one_error_line(["formulas", "--model", "llama2-7b", "--block", "atn", "--json"], capsys).startswith(
        "error: no block of llama2-7b has 'atn' in its path.")


# ---------------------------------------------------------------------------------------------
# 6. an unknown keyword of estimate and sweep named Workload.__init__

@pytest.mark.parametrize(("call", "keyword", "hint"), [
    ("estimate", {"hardware": "h100"}, "a GPU's time and memory are costmodel.simulate(model, hardware)'s; "),
    ("estimate", {"gen": 16}, "did you mean gen_tokens? "),
    ("estimate", {"attn": "sdpa"}, "did you mean attention? "),
    ("sweep", {"layout": {"tp": 2}}, "a layout is estimate's and simulate's, not sweep's; "),
])
def test_an_unknown_workload_keyword_is_one_config_error_naming_the_fields(call, keyword, hint):
    """costmodel.estimate("llama2-7b", hardware="h100") (the command's --hardware) and estimate(..., gen=16) (the
    command's --gen) raised "TypeError: Workload.__init__() got an unexpected keyword argument", naming a class the
    caller never called; sweep(..., layout=...) the same. api.check_workload_keywords, in make_workload."""
    run = {"estimate": lambda: costmodel.estimate("llama2-7b", **keyword),
           "sweep": lambda: costmodel.sweep("llama2-7b", seq_len=[512], **keyword)}[call]
    name = next(iter(keyword))
    with pytest.raises(ConfigError, match=r"^unknown keyword '%s': %s" % (name, re.escape(hint))) as error:
        run()
    assert "a workload takes seq_len, batch, dtype, tgt_len, gen_tokens, impl, attention" in str(error.value)


def test_an_unknown_serve_keyword_is_one_config_error_naming_the_replicas_keywords():
    """costmodel.serve(..., max_num_seq=8) raised "TypeError: build_replica() got an unexpected keyword argument",
    naming a function the caller never called (serving/api.check_replica_keywords)."""
    with pytest.raises(ConfigError, match=r"^serve: unknown keyword 'max_num_seq' \(did you mean max_num_seqs\?\); "
                                          r"a replica takes scheduler, max_num_seqs, max_batched_tokens"):
        costmodel.serve("llama3-8b", "h100-sxm", rate=1, requests=3, max_num_seq=8)


# ---------------------------------------------------------------------------------------------
# 7. printing a serve run

def test_printing_a_serve_run_is_the_commands_text(capsys):
    """print(costmodel.serve(...)) printed the dataclass (two DataFrames' reprs and the setup dict) where a printed
    estimate, simulation or plan is its command's text; and the text said "Poisson 5 req/s" from Python, "5.0" from
    the command (reports/serving.load_source: the rate as :g)."""
    from tests.cli_run import run_main

    run = costmodel.serve("llama3-8b", "h100-sxm", rate=5, requests=20, seed=3)
    code, out, _ = run_main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "5",
                             "--requests", "20", "--seed", "3"], capsys)
    assert code == 0 and repr(run) == out.rstrip("\n")
    assert "requests: 20 from Poisson 5 req/s (seed 3); prompt 512, output 128 tokens" in out
    assert run._repr_html_().startswith("<pre>llama3-8b on 1 replica")  # was "1 replica(s)" before round 46


def test_a_sweep_axis_in_the_commands_text_form_says_the_python_form():
    """costmodel.sweep("llama2-7b", seq_len="128:4096:x2") (the command's --seq-len) read only "values must be
    whole numbers, got '128:4096:x2'"; it now gives the list that form stands for."""
    with pytest.raises(ConfigError, match=re.escape("sweep: seq_len values must be whole numbers, got '128:4096:x2' "
                                                    "(the command's text forms, 128:4096:x2 or 512,1024, are Python's "
                                                    "[2**k for k in range(7, 13)] or [512, 1024]).")):
        costmodel.sweep("llama2-7b", seq_len="128:4096:x2")
    assert len(costmodel.sweep("llama2-7b", seq_len=[2**k for k in range(7, 13)])) == 6  # 128..4096
