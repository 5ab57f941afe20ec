"""What a new user's round 43 turned up (wt43_user): README, docs/commands.md, serving, layouts and
fine-tuning run as an ML engineer types them, through the commands and the Python API. Each test runs
the command or the call as typed and checks the answer or the one error line; each failed before its fix.
"""

from __future__ import annotations

import re

import pytest

import costmodel
from costmodel.config import ConfigError
from tests.cli_run import one_error_line, run_main


def test_plan_with_the_gpu_second_says_the_argument_order():
    # simulate and serve take (model, hardware); plan takes (model, gpus, hardware). plan("llama3.1-70b", "h100")
    # read "--gpus must be positive whole numbers, got 'h100'." and plan(..., "h100", gpus=32) raised Python's
    # TypeError "got multiple values for argument 'gpus'".
    with pytest.raises(ConfigError, match=re.escape(
            "--gpus must be positive whole numbers, got 'h100'. 'h100' is a GPU: plan's arguments are (model, gpus, "
            "hardware), as costmodel.plan(model, 8, 'h100') or costmodel.plan(model, gpus=8, hardware='h100').")):
        costmodel.plan("llama3.1-70b", "h100")
    with pytest.raises(ConfigError, match=re.escape(
            "plan: multiple values for argument 'gpus' (its arguments in order: model, gpus, hardware; the others "
            "by keyword).")):
        costmodel.plan("llama3.1-70b", "h100", gpus=32)
    with pytest.raises(ConfigError, match=re.escape("--gpus must be positive whole numbers, got '8x'.")):
        costmodel.plan("llama3.1-70b", "8x")  # not a GPU: no word on one


def test_serve_and_simulate_take_the_commands_other_names_of_the_output_length():
    # `serve --gen 64` is serve's --output (its help: "--gen: simulate's and plan's name") and `simulate --output`
    # simulate's --gen; costmodel.serve(..., gen=64) was "unknown keyword 'gen'; a replica takes scheduler, ..."
    # (nothing on output) and simulate(..., output=64) "unknown keyword 'output'".
    run = costmodel.serve("llama3.1-8b", "h100", rate=2, requests=5, gen=64)
    assert set(run.requests["output_tokens"]) == {64}
    assert run.to_dict()["setup"]["output"] == costmodel.serve("llama3.1-8b", "h100", rate=2, requests=5,
                                                              output=64).to_dict()["setup"]["output"] == "64"
    assert costmodel.simulate("llama3.1-8b", "h100", prompt=100, output=7).to_dict()["inputs"]["gen"] == 7
    with pytest.raises(ConfigError, match=re.escape("serve: gen and output are one keyword (the command's --gen is "
                                                    "its --output); give output once.")):
        costmodel.serve("llama3.1-8b", "h100", rate=2, requests=5, gen=64, output=32)


def test_a_capacity_named_by_an_ambiguous_gpu_or_a_bad_hardware_file_says_what_is_wrong(tmp_path):
    # finetune_verdict(cfg, workload, tune, "a100") read "capacity: the GPU's bytes ... got 'a100'", where every
    # command says which A100 to give; a hardware file with a typo read the same line, its problem unsaid.
    from costmodel.finetune import FineTune
    from costmodel.finetune_verdict import finetune_verdict

    cfg = costmodel.load_model("llama2-7b")
    workload, _ = costmodel.make_workload(cfg, 2048, holds_cache=False, attention="sdpa")
    tune = FineTune(method="qlora", targets="q_proj,v_proj")
    with pytest.raises(ConfigError, match=re.escape("hardware 'a100' comes as 40 or 80 GB SXM4 and as 80 GB PCIe: "
                                                    "give a100-40gb, a100-80gb or a100-pcie.")):
        finetune_verdict(cfg, workload, tune, "a100")
    bad = tmp_path / "my-gpu.json"
    bad.write_text('{"name": "x"')
    with pytest.raises(ConfigError, match=r"my-gpu\.json: not JSON \(Expecting ','"):
        finetune_verdict(cfg, workload, tune, str(bad))
    with pytest.raises(ConfigError, match=re.escape("capacity: the GPU's bytes, a positive number")):
        finetune_verdict(cfg, workload, tune, "80GB")  # no hardware: the capacity's own line, as before
    assert finetune_verdict(cfg, workload, tune, "rtx-4090")["capacity"] == 25232932864  # docs/finetuning.md


def test_sweeps_length_step_takes_a_length_as_its_bounds_do(capsys):
    # `sweep --seq-len 4k:16k:+4k`: "cannot read '4k:16k:+4k'; use ... start:stop:+step", though its help says each
    # is a length as users write them (4k:128k:x2); a factor stays a plain number.
    from reports.sweep import parse_values

    assert parse_values("4k:16k:+4k", "--seq-len", lengths=True) == [4096, 8192, 12288, 16384]
    assert parse_values("4k:16k:4k", "--seq-len", lengths=True) == [4096, 8192, 12288, 16384]
    assert parse_values("4k:16k:x2", "--seq-len", lengths=True) == [4096, 8192, 16384]
    code, out, _ = run_main(["sweep", "--model", "llama3.1-8b", "--seq-len", "4k:8k:+2k", "--batch", "1"], capsys)
    assert code == 0 and [line.split(",")[1] for line in out.splitlines()[1:]] == ["4096", "6144", "8192"]
    assert "cannot read '4k:64k:x2k'" in one_error_line(["sweep", "--model", "llama3.1-8b", "--seq-len", "4k:64k:x2k"],
                                                         capsys)


@pytest.mark.parametrize("command", [["plan", "--model", "llama3.1-70b", "--seq-len", "8192"],
                                     ["simulate", "--model", "llama3.1-70b", "--train"],
                                     ["estimate", "--model", "llama3.1-70b"]])
def test_gpus_given_as_nodes_names_the_gpu_count(command, capsys):
    # --gpus "4 nodes": plan said "give a whole number, or several separated by commas", simulate and estimate
    # click's "'4 nodes' is not a valid integer range"; a node's GPUs are the hardware file's gpus_per_node
    line = one_error_line([*command, "--hardware", "b200", "--gpus", "4 nodes"], capsys)
    assert line.endswith("--gpus counts GPUs, not nodes; 4 nodes of b200 (8 GPUs a node: its hardware file's "
                         "interconnect.gpus_per_node) are --gpus 32.")


def test_reports_layout_labels_name_context_parallelism():
    # `report --tp 8 --pp 2 --hardware b200 --seq-len 8k` on 16 GPUs labelled plan's best "tp 8 x pp 1 x dp 1, ...":
    # 8 GPUs, its cp 2 dropped (plan's own table reads "8 x 1 x 1 (cp 2)")
    from reports.report import _layout_label

    best = costmodel.plan("llama3.1-8b", 16, "b200", seq_len=8192, global_batch=1, tp=8, pp=1, framework="deepspeed",
                          zero=0, sp=True, recompute="none").best
    assert best["layout"]["cp"] == 2
    # DeepSpeed's cp is Ulysses' all-to-all (wt43_etpfix: its rotation by default), and the label names it
    assert _layout_label(best["layout"]) == "tp 8 x pp 1 x dp 1 (cp 2 a2a), deepspeed ZeRO 0 SP, b 1 x 1, none"


def test_hardware_shows_several_gpus_side_by_side(capsys):
    # `hardware h100 a100-80gb` was click's "Got unexpected extra argument (a100-80gb)", `hardware h100,a100-80gb`
    # "--hardware 'h100,a100-80gb': one GPU here; several ... are compared by plan --serve --rate only" (an option
    # this command has not, and a command that does not list GPUs)
    import json

    for typed in (["h100", "A100-80GB"], ["h100,a100-80gb"]):
        code, out, _ = run_main(["hardware", *typed], capsys)
        assert code == 0
        assert [line.split()[0] for line in out.splitlines()[2:4]] == ["h100-sxm", "a100-80gb"]
        assert [line.split(":")[0] for line in out.splitlines()[4:]] == ["source (h100-sxm)", "source (a100-80gb)"]
    code, out, _ = run_main(["hardware", "h100", "mi300x", "--json"], capsys)
    assert [row["name"] for row in json.loads(out)] == ["h100-sxm", "mi300x"]
    code, out, _ = run_main(["hardware", "NVIDIA", "H100", "80GB", "HBM3"], capsys)  # one driver name, unquoted
    assert code == 0 and out.splitlines()[2].split()[0] == "h100-sxm" and out.splitlines()[3].startswith("source: ")
    assert one_error_line(["hardware", "h100", "--show", "h200"], capsys) == (
        "error: hardware h100: a NAME shows that hardware, which --show does not take; leave out one of them.")


def test_models_takes_several_words(capsys):
    # `models mixtral qwen3-30` was click's "Got unexpected extra argument (qwen3-30)"
    code, out, _ = run_main(["models", "mixtral", "qwen3-30"], capsys)
    assert code == 0 and [line.split()[0] for line in out.splitlines()[2:]] == ["mixtral-8x22b", "mixtral-8x7b",
                                                                              "qwen3-30b-a3b"]
    assert one_error_line(["models", "zzz,yyy"], capsys).startswith(
        "error: models zzz,yyy: no preset's name, family or alias contains 'zzz' or 'yyy';")


def test_a_trace_line_with_other_field_names_says_the_format(tmp_path, capsys):
    # a trace written {"arrival", "prompt", "output"} read "tr.jsonl:1: missing prompt_tokens, output_tokens." and
    # nothing of the form a line takes (docs/serving.md's table)
    trace = tmp_path / "tr.jsonl"
    trace.write_text('{"arrival": 0, "prompt": 2000, "output": 10}\n')
    line = one_error_line(["serve", "--model", "llama3.1-8b", "--trace", str(trace)], capsys)
    assert line == (f'error: {trace}:1: missing prompt_tokens, output_tokens; a trace line is {{"arrival": seconds, '
                    '"prompt_tokens": N, "output_tokens": N} (optional "prefix", "prefix_tokens"), this one has '
                    'arrival, prompt, output.')


def test_lora_targets_are_read_in_any_case_and_checked_against_the_models_layers(capsys):
    # `--lora-targets Q_PROJ,V_PROJ` was refused ("'Q_PROJ' is not one of q_proj, ..."), where every name the
    # commands take is read in any case (docs/commands.md); `--lora-targets q_proj,foo` on Llama listed every
    # family's names (query_key_value, dense, dense_h_to_4h, qkv_proj, gate_up_proj...), none of them Llama's
    import json

    code, out, _ = run_main(["finetune", "--model", "llama3.1-8b", "--lora-targets", "Q_PROJ,V_proj", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["targets"] == ["q_proj", "v_proj"]
    assert json.loads(out)["memory"]["trainable_params"] == 6_815_744  # peft: 32 x (16 x 4096 + 4096 x 16 + 16 x 4096 + 1024 x 16)
    assert one_error_line(["finetune", "--model", "llama3.1-8b", "--lora-targets", "q_proj,foo"], capsys) == (
        "error: --lora-targets: 'foo' is not a linear layer of llama (q_proj, k_proj, v_proj, o_proj, gate_proj, "
        "up_proj, down_proj, or all-linear).")
    from costmodel.finetune import FineTune

    assert FineTune(targets="Q_PROJ, ALL-LINEAR".split(",")[0]).targets == ("q_proj",)
    assert FineTune(targets="ALL-LINEAR").targets == ("all-linear",)


def test_a_length_given_as_the_command_lines_text_says_the_number_in_python():
    # costmodel.simulate(..., gen="1k") raised Python's TypeError "'<' not supported between instances of 'str' and
    # 'int'"; prompt="4k" read "workload: seq_len must be an integer, got '4k'", a keyword not typed
    with pytest.raises(ConfigError, match=re.escape("simulate: gen: a number of tokens, got the text '1k': the command "
                                                    "line reads spellings such as 4k (4,096); in Python give gen=1024.")):
        costmodel.simulate("llama3.1-8b", "h100", prompt=100, gen="1k")
    with pytest.raises(ConfigError, match=re.escape("simulate: prompt: a number of tokens, got the text '4k'")):
        costmodel.simulate("llama3.1-8b", "h100", prompt="4k")
    with pytest.raises(ConfigError, match=re.escape("estimate: seq_len: a number of tokens, got the text '128k': the "
                                                    "command line reads spellings such as 4k (4,096); in Python give "
                                                    "seq_len=131072.")):
        costmodel.estimate("llama3.1-8b", "128k")
    with pytest.raises(ConfigError, match=re.escape("plan: seq_len: a number of tokens, got the text '4k'")):
        costmodel.plan("llama3.1-8b", 8, seq_len="4k")
    # serve's prompt and output are length mixes, strings, as before
    assert costmodel.serve("llama3.1-8b", "h100", rate=1, requests=5,
                           prompt="uniform:1k:2k").to_dict()["setup"]["prompt"] == "uniform:1024:2048"


def test_an_inference_layouts_attention_fallback_names_no_training_framework(capsys):
    # `simulate --model gemma2-9b --tp 2 --prompt 4k` (serving on two GPUs) said "deepspeed's default sdpa gives way to
    # eager": DeepSpeed is the training layouts' default framework, nothing this run runs
    code, _, err = run_main(["simulate", "--model", "gemma2-9b", "--hardware", "l4", "--tp", "2", "--prompt", "1024",
                             "--gen", "16"], capsys)
    assert code == 0 and err.splitlines()[0] == (
        "note: attention eager: gemma2's Hugging Face class has no sdpa path in transformers 5.24, so an inference "
        "layout's default sdpa gives way to eager, what transformers picks for it when none is requested; "
        "--attention picks another.")
    code, _, err = run_main(["simulate", "--model", "gemma2-9b", "--hardware", "l4", "--tp", "2", "--train",
                             "--seq-len", "1024"], capsys)  # training: DeepSpeed's layout it is
    assert "so deepspeed's default sdpa gives way to eager" in err.splitlines()[0]


def test_formulas_says_a_tied_head_holds_its_weights_in_the_embedding(capsys):
    # `formulas --model gemma2-9b --block head --quantity params` read "... has a non-zero params: it is 0 in each."
    # and nothing of why (estimate says "tied to the embeddings: counted once, above"); --json an empty list alone
    import json

    line = "the output head of gemma2-9b is tied to its token embedding: its V*d weights are counted once, in " \
           "embedding.tokens (--block embedding)"
    code, out, _ = run_main(["formulas", "--model", "gemma2-9b", "--block", "head", "--quantity", "params"], capsys)
    assert code == 0 and out.strip() == ("no block of gemma2-9b whose path contains 'head' has a non-zero params: it "
                                         f"is 0 in each; {line}.")
    code, out, _ = run_main(["formulas", "--model", "gemma2-9b", "--block", "lm_head", "--quantity", "params",
                             "--json"], capsys)
    assert json.loads(out)["blocks"] == [] and json.loads(out)["note"] == line
    code, out, _ = run_main(["formulas", "--model", "llama3.1-8b", "--block", "head", "--quantity", "params"], capsys)
    assert out.splitlines()[1] == "  params = V*d"  # untied: the head's own row, no note
