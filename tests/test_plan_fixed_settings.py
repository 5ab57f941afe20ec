"""plan holds simulate's Megatron-Core settings fixed in every candidate (costmodel/layout/plan.py
SETTINGS): --fp8-param-gather, --tp-only-amax-red and --grad-reduce-dtype as Layout fields (a candidate the layout refuses,
another framework or ZeRO stage, is not one), --no-align-grad-reduce on megatron's interleaved layouts
(the others have no chunks to align). Each candidate's figures equal simulate's for the same layout
and flags; a setting no layout could take is one line before the search."""

from __future__ import annotations

import json

import pytest

import cli

PLAN = ["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100-sxm", "--framework", "megatron", "--json"]


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def plan(capsys, *flags: str) -> dict:
    code, out, _ = run(PLAN + list(flags), capsys)
    assert code == 0
    return json.loads(out)


def simulate(capsys, layout: dict, *flags: str) -> dict:
    """simulate --train of a plan entry's layout (plan's default sequence of 2,048 tokens)."""
    args = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--seq-len", "2048",
            "--batch", str(layout["batch"]), "--framework", layout["framework"], "--tp", str(layout["tp"]),
            "--pp", str(layout["pp"]), "--dp", str(layout["dp"]), "--zero", str(layout["zero"]),
            "--microbatches", str(layout["microbatches"]), "--schedule", layout["schedule"],
            "--virtual-stages", str(layout["virtual_stages"]), "--recompute", layout["recompute"],
            *(["--sp"] if layout["sp"] else []), *(["--fp8", layout["fp8"]] if layout["fp8"] else []),
            *flags, "--json"]
    code, out, _ = run(args, capsys)
    assert code == 0
    return json.loads(out)


def _key(entry: dict) -> str:
    settings = ("align_grad", "tp_only_amax_red", "fp8_param_gather", "grad_reduce_dtype")
    return json.dumps({k: v for k, v in entry["layout"].items() if k not in settings}, sort_keys=True)


def test_no_align_grad_reduce_times_the_interleaved_layouts(capsys):
    """Llama 3 8B at PP 2, TP 1 (32 layouts): the 16 interleaved ones are timed with each chunk's reduce
    unaligned (align_grad false in the entry, the step simulate --no-align-grad-reduce gives), the
    reduction under the backward (--overlap-grad-reduce); the
    1F1B ones are as without the option."""
    # (each with --overlap-grad-reduce: with Megatron-LM's default the whole reduction waits for the
    # backward, and no chunk's start has anything to move)
    unaligned = plan(capsys, "--pp", "2", "--tp", "1", "--no-align-grad-reduce", "--overlap-grad-reduce")
    aligned = plan(capsys, "--pp", "2", "--tp", "1", "--overlap-grad-reduce")
    assert unaligned["inputs"]["no_align_grad_reduce"] is True and "no_align_grad_reduce" not in aligned["inputs"]
    before = {_key(e): e["step_time"] for e in aligned["feasible"]}
    interleaved = [e for e in unaligned["feasible"] if e["layout"]["schedule"] == "interleaved"]
    assert len(unaligned["feasible"]) == 32 and len(interleaved) == 16
    for entry in unaligned["feasible"]:
        if entry["layout"]["schedule"] == "interleaved":
            assert entry["layout"]["align_grad"] is False and entry["step_time"] < before[_key(entry)]
        else:
            assert "align_grad" not in entry["layout"] and entry["step_time"] == before[_key(entry)]
    best = interleaved[0]
    assert best["step_time"] == simulate(capsys, best["layout"], "--no-align-grad-reduce",
                                         "--overlap-grad-reduce")["step"]["seconds"]


def test_fp8_parameters_in_every_layout(capsys):
    """--fp8 delayed --fp8-param-gather at TP 1, PP 1 (dp 8): only the distributed optimizer's layouts
    (ZeRO 1 and 2) are candidates, each holding FP8 parameters: a rank's weights 16,060,522,496 -
    6,979,321,856 (the linear layers at one byte) = 9,081,200,640 bytes, the step simulate's."""
    result = plan(capsys, "--tp", "1", "--pp", "1", "--fp8", "delayed", "--fp8-param-gather")
    assert result["inputs"]["fp8_param_gather"] is True
    entries = result["feasible"] + result["infeasible"]
    assert entries and all(e["layout"]["fp8_param_gather"] is True and e["layout"]["zero"] in (1, 2)
                           for e in entries)
    for entry in result["feasible"]:
        assert entry["per_rank"]["weights"] == 9_081_200_640
    best = result["feasible"][0]
    assert best["step_time"] == simulate(capsys, best["layout"], "--fp8-param-gather")["step"]["seconds"]


def test_tp_only_amax_reduction_in_every_layout(capsys):
    """--fp8 delayed --tp-only-amax-red at TP 2 (dp 4): every megatron layout all-reduces its amaxes over
    TP 2, not the 8 ranks of TP x DP: the step simulate --tp-only-amax-red gives, shorter than without."""
    only_tp, every = (plan(capsys, "--tp", "2", "--pp", "1", "--fp8", "delayed", *flags)
                      for flags in (["--tp-only-amax-red"], []))
    assert all(e["layout"]["tp_only_amax_red"] is True for e in only_tp["feasible"])
    before = {_key(e): e["step_time"] for e in every["feasible"]}
    best = only_tp["feasible"][0]
    assert best["step_time"] < before[_key(best)]
    assert best["step_time"] == simulate(capsys, best["layout"], "--tp-only-amax-red")["step"]["seconds"]


@pytest.mark.parametrize("flags, message", [
    (["--fp8-param-gather"], "error: layout: FP8 parameters (--fp8-param-gather) are modelled with --fp8 current "
                             "or delayed (Transformer Engine's per-tensor Float8Tensor); here no --fp8."),
    (["--fp8", "delayed", "--fp8-param-gather", "--framework", "fsdp2"],
     "error: layout: --fp8-param-gather under --framework fsdp2 is torchao's float8 all-gather "
     "(enable_fsdp_float8_all_gather), for --fp8 tensorwise; here --fp8 delayed."),
    (["--fp8", "current", "--tp-only-amax-red"], "error: layout: --tp-only-amax-red is Megatron-Core's amax "
                                                 "reduction group of delayed scaling (--framework megatron --fp8 delayed)."),
    (["--grad-reduce-dtype", "bf16", "--framework", "deepspeed"],
     "error: layout: the gradient reduce dtype (--grad-reduce-dtype) is Megatron-Core's grad_reduce_in_fp32 or "
     "FSDP2's reduce_dtype; add --framework megatron or fsdp2 (here deepspeed)."),
    (["--serve", "--grad-reduce-dtype", "bf16"], "error: --grad-reduce-dtype: training options, which --serve "
                                                 "ignores; a serving plan takes --batch, --prompt and --gen."),
    (["--serve", "--no-align-grad-reduce"], "error: --no-align-grad-reduce: training options, which --serve ignores; "
                                            "a serving plan takes --batch, --prompt and --gen."),
])
def test_a_setting_no_layout_takes_is_one_line(capsys, flags, message):
    code, out, err = run(["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100-sxm", *flags], capsys)
    assert (code, out, err.strip()) == (2, "", message)


def test_grad_reduce_dtype_in_every_layout(capsys):
    """--grad-reduce-dtype bf16 at TP 1, PP 1 (dp 8), every framework: the 48 megatron and fsdp2 layouts
    are the candidates (deepspeed's 48 take no reduce dtype), each reducing in bf16. Megatron's best holds
    8,030,261,248 parameters x 1.5 bytes less a rank (a bf16 main_grad, 2 bytes a parameter, not fp32's 4;
    the fp32 cast of its 1/8 shard at the step, 4 / 8), and each framework's best step is simulate's."""
    args = ["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100-sxm", "--tp", "1", "--pp", "1",
            "--json"]
    code, out, _ = run(args + ["--grad-reduce-dtype", "bf16"], capsys)
    bf16 = json.loads(out)
    code_default, out, _ = run(args, capsys)
    default = json.loads(out)
    assert (code, code_default, bf16["inputs"]["grad_reduce_dtype"]) == (0, 0, "bf16")
    entries = bf16["feasible"] + bf16["infeasible"]
    assert len(entries) == 48 and {e["layout"]["framework"] for e in entries} == {"megatron", "fsdp2"}
    assert all(e["layout"]["grad_reduce_dtype"] == "bf16" for e in entries)
    assert "grad_reduce_dtype" not in default["inputs"] and len(default["feasible"] + default["infeasible"]) == 96
    before = {_key(e): e["per_rank"]["total"] for e in default["feasible"]}
    best = bf16["feasible"][0]
    assert best["layout"]["framework"] == "megatron"
    assert before[_key(best)] - best["per_rank"]["total"] == 8_030_261_248 * 3 // 2
    for framework in ("megatron", "fsdp2"):
        entry = next(e for e in bf16["feasible"] if e["layout"]["framework"] == framework)
        step = simulate(capsys, entry["layout"], "--grad-reduce-dtype", "bf16")["step"]["seconds"]
        assert entry["step_time"] == step


def test_grad_reduce_dtype_outside_bf16_is_one_line(capsys):
    code, out, err = run(["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100-sxm", "--dtype", "fp16",
                          "--grad-reduce-dtype", "bf16"], capsys)
    assert (code, out, err.strip()) == (2, "", "error: layout: the gradient reduce dtype (--grad-reduce-dtype) is "
                                               "modelled for bf16 training, where Megatron-Core and FSDP2 choose it; "
                                               "not for fp16.")
