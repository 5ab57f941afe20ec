"""A new user's twentieth round (session 25; validate/FINDINGS.md "A new user's twentieth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic, or the figure
another command prints for the same case."""

from __future__ import annotations

import pytest

import costmodel
from costmodel.config import Workload
from costmodel.estimation import Estimate
from costmodel.presets import load_preset
from tests.cli_run import one_error_line, run_json, run_main

# 1. estimate with a layout: the whole model's memory in the precision the layout's ranks keep

LLAMA3_8B_PARAMS = 8_030_261_248  # estimate --model llama3-8b: params.total
LAYOUT_4K = ["estimate", "--model", "llama3-8b", "--seq-len", "4096", "--dp", "8"]


def test_estimate_counts_the_whole_model_in_the_layouts_precision(capsys):
    """`estimate --dp 8 --framework megatron` printed gradients 2 B/param for the model and 4 B/param
    (fp32 main gradients: 29.92 GiB) for each rank, one output; inputs.precision said mixed while the
    layout said megatron. Both are megatron's now: 2 + 4 + 12 bytes a parameter."""
    data = run_json([*LAYOUT_4K, "--framework", "megatron", "--zero", "1"], capsys)
    assert data["inputs"]["precision"] == "megatron" == data["parallel"]["precision"]
    assert data["memory"]["gradients"] == 4 * LLAMA3_8B_PARAMS == 32_121_044_992
    assert data["parallel"]["per_rank"]["gradients"] == data["memory"]["gradients"]  # zero 1 keeps them whole
    assert data["memory"]["bytes_per_param"]["gradients"] == 4


def test_fsdp2_layout_keeps_fp32_weights_but_serves_in_the_dtype(capsys):
    """FSDP2's policy keeps fp32 sharded weights (4 + 4 + 8); the whole model now counts them, and its
    inference total still reads the bf16 copy: the same 17,648,099,840 B as without a layout, at the
    layout's attention (sdpa: since session 26 eager's n x n scores count, 21,966,135,808 B)."""
    plain = run_json(["estimate", "--model", "llama3-8b", "--seq-len", "4096", "--attention", "sdpa"], capsys)["memory"]
    data = run_json([*LAYOUT_4K, "--framework", "fsdp2", "--zero", "3"], capsys)["memory"]
    assert data["weights"] == data["gradients"] == 4 * LLAMA3_8B_PARAMS
    assert data["optimizer"] == 8 * LLAMA3_8B_PARAMS
    assert data["inference_total"] == plain["inference_total"] == 17_648_099_840
    assert data["generate_total"] == plain["generate_total"]
    typed = run_json(["estimate", "--model", "llama3-8b", "--seq-len", "4096", "--precision", "fsdp2",
                      "--attention", "sdpa"], capsys)
    assert typed["memory"]["inference_total"] == 17_648_099_840  # was 33,708,622,336: fp32 weights served


def test_a_precision_the_layouts_framework_does_not_keep_is_one_error_line(capsys):
    """`--precision pure --framework fsdp2` was ignored by every rank (they keep fsdp2's) and used by
    the model's lines above them."""
    # restated by wt38_puretrain (session 38): an fsdp2 layout's ranks keep pure precision with --pure-precision
    assert one_error_line([*LAYOUT_4K, "--framework", "fsdp2", "--zero", "3", "--precision", "pure"], capsys) == (
        "error: --precision pure: a fsdp2 layout keeps fsdp2 precision in bf16 (costmodel/layout/frameworks.py); "
        "add --pure-precision for its ranks to keep pure.")
    assert one_error_line([*LAYOUT_4K, "--framework", "deepspeed", "--precision", "pure"], capsys).endswith(
        "drop --precision, or drop the layout for the whole model in pure.")
    data = run_json([*LAYOUT_4K, "--framework", "megatron", "--precision", "megatron"], capsys)
    assert data["memory"]["gradients"] == 32_121_044_992
    api = costmodel.estimate("llama3-8b", seq_len=4096, layout={"dp": 8, "framework": "megatron"}).to_dict()
    assert api["memory"]["gradients"] == 32_121_044_992 and api["inputs"]["precision"] == "megatron"


# 2. A Hub id one letter off a preset's, which the Hub cannot give: the error names the preset

def test_a_hub_id_a_letter_off_a_preset_names_it(tmp_path, monkeypatch, capsys):
    """`--model meta-lama/Llama-3.1-8B` (one l) offline said only "not in the cache"; a preset's alias
    is one letter away (difflib ratio 0.98, at least hub.TYPO_RATIO 0.95). gemma-7b (no preset) names
    none: gemma-2-27b, another model, is 0.9 away."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    line = one_error_line(["estimate", "--model", "meta-lama/Llama-3.1-8B"], capsys)
    assert line.startswith("error: model 'meta-lama/Llama-3.1-8B': its config.json is not in ")
    assert line.endswith(" A preset spelled nearly so: meta-llama/Llama-3.1-8B.")
    assert "nearly so" not in one_error_line(["estimate", "--model", "google/gemma-7b"], capsys)
    assert one_error_line(["finetune", "--model", "mistrali/Mistral-7B-v0.3"], capsys).endswith(
        "A preset spelled nearly so: mistralai/Mistral-7B-v0.3.")


# 3. Command names a user types for questions other commands answer

def test_an_unknown_command_a_user_types_names_the_one_that_answers(capsys):
    """`compare` said only "No such command"; `train` suggested train-demo (a toy on string reversal)."""
    assert one_error_line(["compare", "--models", "llama3-8b,mistral-7b"], capsys) == (
        "error: No such command 'compare': `report --models A,B --out DIR` sets models side by side (figures and "
        "tables).")
    assert "`simulate --train`" in one_error_line(["train", "--model", "llama3-8b"], capsys)
    assert "`serve --price P`" in one_error_line(["Cost"], capsys)
    assert "Did you mean" in one_error_line(["simulte"], capsys)  # click's own suggestion stays


# 4. finetune: no KV-cache warning for a training step, and a family it does not model refused first

def test_finetune_warns_of_a_window_without_a_kv_cache_line(capsys):
    """`finetune --model google/gemma-3-27b-it` warned "... Hugging Face's cache holds the whole prompt
    after the prefill and 1,024 tokens once decoding begins (see the KV cache line)": finetune prints
    no KV cache and decodes nothing. estimate keeps the clause (it prints the line)."""
    code, out, err = run_main(["finetune", "--model", "google/gemma-3-27b-it", "--method", "qlora"], capsys)
    assert code == 0 and "attention eager" in out
    assert ("warning: model 'gemma3-27b' attends within a sliding window of 1,024 tokens on 52 of its 62 layers: "
            "eager attention still computes every score (a masked full matrix).\n") in err and "KV cache" not in err
    code, _, err = run_main(["estimate", "--model", "google/gemma-3-27b-it"], capsys)
    assert code == 0 and "once decoding begins (see the KV cache line)." in err


def test_training_commands_warn_of_a_window_without_a_kv_cache_line(capsys):
    """simulate --train (one GPU and a layout) and plan for training print no KV cache either (plan: the line of
    the layouts that run eager, DeepSpeed's and FSDP2's here; Megatron's run flash, tests/test_smoke30_defects.py)."""
    window = ("model 'gemma2-9b' attends within a sliding window of 4,096 tokens on 21 of its 42 layers: eager attention still "
              "computes every score (a masked full matrix).\n")
    for args in (["simulate", "--train"], ["simulate", "--train", "--gpus", "8"], ["plan", "--gpus", "8"]):
        code, _, err = run_main([*args, "--model", "gemma2-9b", "--hardware", "h100", "--seq-len", "8192"], capsys)
        which = "deepspeed and fsdp2 layouts: " if args[0] == "plan" else ""
        assert code == 0 and f"warning: {which}{window}" in err and "KV cache" not in err, args


def test_finetune_refuses_a_family_before_warning_of_its_window(capsys):
    """`finetune --model openai/gpt-oss-20b` printed the sliding-window warning, then the refusal."""
    assert one_error_line(["finetune", "--model", "openai/gpt-oss-20b"], capsys).endswith(
        "model 'gpt-oss-20b' is gpt_oss, whose LoRA is not sized (not measured against peft); `estimate --hardware "
        "GPU` sizes its full fine-tuning, every weight trained.")  # session 41 (wt41_user2): the line says what sizes it


# 5. report and plot on a model whose class has no sdpa path, and on DeepSeek-V4

def test_report_summary_runs_the_kernel_the_class_has():
    """`report --model gemma2-9b --no-measure` ended in a ConfigError traceback: the summary asked
    every model for sdpa, which Gemma 2's class refuses. It now runs flash there (fused: no n x n
    matrix, as the summary states), eager where the class has neither (DeepSeek-V4), and says
    which in an attention column."""
    from reports.report import summary_rows

    headers, rows = summary_rows([load_preset("gemma2-9b"), load_preset("llama3-8b")], 1, "bf16")
    assert headers[-1] == "attention" and [row[-1] for row in rows] == ["flash", "sdpa"]
    gemma = dict(zip(headers, rows[0]))
    flash = Estimate(load_preset("gemma2-9b"), Workload(seq_len=8192, attention="flash")).memory_numbers()
    assert gemma["training_total_bytes"] == flash["training_total"] == 253_090_552_846


@pytest.mark.slow  # the sympy sums of V4's 43 layers and the figure: about 30 s
def test_deepseek_v4_has_a_generation_figure(tmp_path, capsys):
    """`plot generation --model deepseek-v4-flash` (and report) raised twice: the tiny member gave
    its one KV head 2 heads and kept 43 compressed layers in 2 (refused by the config), and the
    leading term's sum met floor(t / rate). The tiny member keeps one KV head and a layer of each
    kind; floor(t / rate) is taken as t / rate, as a Mamba-2 scan's ceil(t / Q) is."""
    from reports.generation import leading_terms
    from reports.measured import tiny

    small = tiny(load_preset("deepseek-v4-flash"))
    assert (small.n_kv_heads, small.n_decoder_layers, small.layer_pattern, small.csa_layers, small.hca_layers) == (
        1, 2, ("hca", "csa"), 1, 1)
    lead = leading_terms(load_preset("deepseek-v4-flash"))
    assert (lead["without_cache"]["degree"], lead["with_cache"]["degree"]) == (3, 2)
    code, out, err = run_main(["plot", "generation", "--model", "deepseek-v4-flash", "--out",
                               str(tmp_path / "g.png")], capsys)
    assert code == 0 and (tmp_path / "g.png").is_file() and "Traceback" not in err


# 6. finetune --tokens / --price / --gpus: what it does not answer, and what does

def test_finetune_names_what_it_does_not_answer(capsys):
    """`finetune --tokens 1e8` (or --price, --gpus) said click's "No such option": a user asking for
    a fine-tune's hours, dollars or GPUs learnt nothing of where they are, or are not, modelled."""
    line = one_error_line(["finetune", "--model", "llama3-8b", "--method", "qlora", "--tokens", "1e8"], capsys)
    assert line.startswith("error: --tokens: needs --hardware: the step is timed on a GPU's kernels")
    assert "`simulate --train --tokens N --price P`" in line
    assert one_error_line(["finetune", "--model", "llama3-8b", "--price", "2"], capsys).startswith("error: --price: ")
    assert "`estimate --hardware GPU --gpus N`" in one_error_line(["finetune", "--model", "llama3-8b", "--gpus", "4"],
                                                                    capsys)


# 7. simulate's inference reports say that a run does not fit before its times, as --train does

def test_simulate_inference_says_it_does_not_fit_before_its_times(capsys):
    """`simulate --model llama3-70b --hardware h100` printed a prefill and a decode rate for 141.8 GB of
    weights on an 80 GB GPU, and "does NOT fit" only in the memory line at the end (simulate --train
    says it under its title since the seventeenth round). 132.08 GiB: the weights, 70,553,706,496 x 2 B,
    and the cache and logits of a 2,175-token generation (134.54 GiB since session 26: the prefill's
    eager scores, 64 heads x 2,048^2 x 10 B, over the logits)."""
    code, out, _ = run_main(["simulate", "--model", "llama3-70b", "--hardware", "h100"], capsys)
    assert code == 0 and out.splitlines()[2] == (
        "DOES NOT FIT: batch 1 needs 134.54 GiB, more than the 70.79 GiB a GPU serves with; the times below are "
        "for a run that cannot start (memory at the end).")
    data = run_json(["simulate", "--model", "llama3-70b", "--hardware", "h100"], capsys)["memory"]
    assert not data["fits"] and data["weights"] == 2 * 70_553_706_496
    code, out, _ = run_main(["simulate", "--model", "llama3-70b", "--hardware", "h100", "--tp", "2", "--batch", "64",
                             "--prompt", "8000"], capsys)
    assert out.splitlines()[2].startswith("DOES NOT FIT: the most loaded rank needs 184.85 GiB, more than the 70.79"  # 145.09 before session 26's transients
        )
    code, out, _ = run_main(["simulate", "--model", "llama3-8b", "--hardware", "h100"], capsys)
    assert "DOES NOT FIT" not in out


# 8. estimate --gpus N --hardware: the data-parallel verdict names the code its ranks run

def test_the_data_parallel_verdict_names_its_framework_and_kernel(capsys):
    """`estimate --model llama3-8b --hardware h100 --gpus 8 --seq-len 4096` printed "training total 243.75 GiB"
    (one GPU, eager) above "Training on 8 h100-sxm GPUs (data parallel): 146.26 GiB per GPU": each rank of a
    data-parallel copy holds the whole model, and only docs/fit-and-cost.md said the ranks run DeepSpeed's sdpa."""
    args = ["estimate", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "8", "--seq-len", "4096"]
    code, out, _ = run_main(args, capsys)
    assert code == 0 and ("Training on 8 h100-sxm GPUs (data parallel, deepspeed: attention sdpa): 146.26 GiB per "
                          "GPU does NOT fit in 78.72 GiB.") in out
    code, out, _ = run_main([*args, "--attention", "eager"], capsys)  # typed: the model's eager, 243.75 GiB both
    assert "(data parallel, deepspeed: attention eager): 243.75 GiB per GPU" in out
    assert "training total       243.75 GiB" in out


# 9. --tokens as people write token counts

def test_tokens_take_the_suffixes_token_counts_are_written_with(capsys):
    """`simulate --train --tokens 15T` was click's "'15T' is not a valid float"; 15T, 300B, 2G, 50M and 10k
    are now the counts they name, in simulate, plan and (refused as before) finetune."""
    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100", "--train", "--gpus", "8", "--tokens"]
    assert run_json([*base, "15T"], capsys)["cost"] == run_json([*base, "1.5e13"], capsys)["cost"]
    assert run_json([*base, "300B"], capsys)["cost"]["tokens"] == 300_000_000_000
    assert run_json([*base, "2G"], capsys)["cost"]["tokens"] == 2_000_000_000
    assert one_error_line([*base, "15X"], capsys) == ("error: Invalid value for '--tokens': '15X' is not a token count: "
                                                     "a number (2e12) or one with k, M, B (G) or T (15T).")
    assert one_error_line([*base, "nanT"], capsys) == "error: --tokens must be positive and finite, got nan."
    plan = run_json(["plan", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "8", "--tokens", "1T", "--top",
                     "1"], capsys)
    assert plan["feasible"][0]["cost"]["tokens"] == 1e12
    assert one_error_line(["finetune", "--model", "llama3-8b", "--tokens", "1B"], capsys).startswith("error: --tokens: ")
