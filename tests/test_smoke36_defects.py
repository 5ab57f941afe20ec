"""Defects a new user hit in session 36 (wt36_user): each test failed before its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import costmodel
from costmodel.errors import ConfigError
from costmodel.serving.workload import Lengths
from tests.cli_run import one_error_line, run_json, run_main

FORMS = ("use N, uniform:LOW:HIGH, lognormal:MEDIAN:SIGMA[:LOW:HIGH] or histogram:FILE.json.")


@pytest.mark.parametrize("text", ["uniform:128:1024:512", "fixed:512:9", "lognormal:512:0.8:100:2000:7"])
def test_a_length_distribution_with_a_field_too_many_is_refused(text, capsys):
    """`serve --prompt uniform:128:1024:512` ran as uniform 128..1024, the 512 dropped unread (so did
    fixed:512:9's 9 and a lognormal's fifth bound)."""
    with pytest.raises(ConfigError, match=re.escape(f"length distribution {text!r}: {FORMS}")):
        Lengths.parse(text)
    line = one_error_line(["serve", "--model", "llama3.1-8b", "--rate", "5", "--requests", "10", "--prompt", text],
                          capsys)
    assert line == f"error: --prompt: length distribution {text!r}: {FORMS}"
    # the forms as documented still read
    assert Lengths.parse("uniform:128:1024") == Lengths("uniform", low=128, high=1024)
    assert Lengths.parse("lognormal:512:0.8:100:2000") == Lengths("lognormal", mean=512, sigma=0.8, low=100, high=2000)
    assert Lengths.parse("fixed:512") == Lengths("fixed", mean=512)


@pytest.mark.parametrize("layout", ["tp=2", 2, ("tp", 2)])
def test_the_apis_layout_that_is_neither_a_layout_nor_a_dict_is_one_config_error(layout):
    """README's API takes a Layout or a dict of its fields; `costmodel.estimate("llama2-7b", layout="tp=2")`
    raised AttributeError: 'str' object has no attribute 'framework'."""
    with pytest.raises(ConfigError, match=re.escape("layout: a costmodel.layout.Layout or a dict of its fields "
                                                    f"(tp, pp, dp, ...), got {layout!r}.")):
        costmodel.estimate("llama2-7b", layout=layout)
    assert costmodel.estimate("llama2-7b", layout={"tp": 2}).layout.tp == 2


@pytest.mark.parametrize("gpus", [8.0, True, None])
def test_plans_gpu_count_of_another_type_is_one_config_error(gpus):
    """`costmodel.plan("llama3-8b", 8.0)` raised TypeError: 'float' object is not iterable."""
    with pytest.raises(ConfigError, match=re.escape(f"--gpus must be positive whole numbers, got {gpus!r}.")):
        costmodel.plan("llama3-8b", gpus, "h100-sxm")


def test_numpys_whole_numbers_are_gpu_counts():
    """A sweep's np.int64(8) or np.array([16, 8]) read "--gpus must be positive whole numbers, got 8" (session 36's
    isinstance(c, int)); a dict, a float in a list and a bool in one are still one line."""
    import numpy as np

    from costmodel.planning import _counts

    assert _counts(np.int64(8)) == [8] and _counts(np.array([16, 8, 8])) == [8, 16] and _counts(range(8, 17, 8)) == [8, 16]
    assert all(type(c) is int for c in _counts(np.array([16, 8])))
    for bad in ({8: 1}, [8, 16.0], [8, True], [], "8", [0]):
        with pytest.raises(ConfigError, match="--gpus must be positive whole numbers"):
            _counts(bad)


def test_plans_unknown_dtype_is_named_unknown():
    """`costmodel.plan("llama3-8b", 8, dtype="bf17")` said "h100-sxm has no bf17 peak (Hopper); use --dtype
    bf16.", as if bf17 were a real dtype the H100 lacks; Workload's own sentence now."""
    with pytest.raises(ConfigError, match=re.escape("plan: unknown dtype 'bf17'; use one of fp32, fp16, bf16 "
                                                    "(or float32, float16, bfloat16).")):
        costmodel.plan("llama3-8b", 8, "h100-sxm", dtype="bf17")
    with pytest.raises(ConfigError, match=re.escape("workload: unknown dtype 'bf17'")):
        costmodel.estimate("llama3-8b", dtype="bf17")


def test_a_hardware_file_named_like_a_preset_shows_its_own_row(tmp_path, capsys):
    """`hardware --show h100-sxm > f.json`, its bandwidth edited: `hardware f.json` listed the preset's
    aliases (h100, hgx-h100, ...) beside the file's figures; a file with no source printed "source: "."""
    code, out, _ = run_main(["hardware", "--show", "h100-sxm"], capsys)
    data = json.loads(out)
    data["bandwidth_bytes_per_s"] = 2.0e12
    data["gemv_bandwidth_bytes_per_s"] = 0.0
    edited = tmp_path / "h100-slow.json"
    edited.write_text(json.dumps(data))
    code, out, _ = run_main(["hardware", str(edited)], capsys)
    assert code == 0 and "2.00 TB/s" in out and "hgx-h100" not in out
    assert "hgx-h100" in run_main(["hardware", "h100"], capsys)[1]  # the preset keeps its aliases
    bare = tmp_path / "mygpu.json"
    bare.write_text(json.dumps({"name": "mygpu", "flops_per_s": {"bf16": 2.25e15, "fp32": 75e12},
                                "bandwidth_bytes_per_s": 8e12, "memory_bytes": 192e9}))
    code, out, _ = run_main(["hardware", str(bare)], capsys)
    assert code == 0 and out.rstrip().endswith("source: none stated (the file has no source field)")


def test_the_price_of_an_hour_and_of_a_million_tokens_keep_their_figures(capsys):
    """`simulate --model llama3.1-8b --prompt 128 --gen 8 --price 2000`: "$1.192e+04 per million generated tokens
    ... (1 GPU x $2000 an hour = $2,000.00/h)" (',.4g'; serve's line used reports/text.significant since session
    35) -> "$11,923 ... (1 GPU x $2,000 an hour = $2,000/h)"; `--price 0.0001` read "$0.0001 an hour = $0.00/h"
    in simulate and serve, as if the GPU were free."""
    args = ["simulate", "--model", "llama3.1-8b", "--prompt", "128", "--gen", "8"]
    per_million = run_json([*args, "--price", "2000"], capsys)["cost"]["dollars_per_million_output_tokens"]
    assert per_million > 10_000  # five figures before the point: ',.4g' wrote an exponent
    out = run_main([*args, "--price", "2000"], capsys)[1]
    assert f"${per_million:,.0f}   per million generated tokens" in out and "e+0" not in out
    assert "(1 GPU x $2,000 an hour = $2,000/h)" in out
    assert "(1 GPU x $0.0001 an hour = $0.0001/h)" in run_main([*args, "--price", "0.0001"], capsys)[1]
    code, out, _ = run_main(["serve", "--model", "llama3.1-8b", "--rate", "2", "--requests", "10",
                             "--price", "0.0001"], capsys)
    assert code == 0 and "cost: 1 GPU x $0.0001 an hour = $0.0001/h; " in out  # was "1 GPU(s)" before round 46
    code, out, _ = run_main(["serve", "--model", "llama3.1-8b", "--rate", "2", "--requests", "10",
                             "--price", "2"], capsys)
    assert code == 0 and "cost: 1 GPU x $2 an hour = $2.00/h; " in out  # was "1 GPU(s)" before round 46 (simulate's "1 GPU")


def test_a_block_typo_in_formulas_names_the_words_it_may_mean(capsys):
    """`formulas --model llama2-7b --block atention` said only "no block of llama2-7b has 'atention' in its
    path."; model and hardware typos name what they may mean."""
    assert one_error_line(["formulas", "--model", "llama2-7b", "--block", "atention"], capsys) == (
        "error: no block of llama2-7b has 'atention' in its path. Did you mean self_attention?")
    line = one_error_line(["formulas", "--model", "llama2-7b", "--block", "xyzzy"], capsys)
    assert line.startswith("error: no block of llama2-7b has 'xyzzy' in its path. Its paths' words: decoder, ")


def test_the_readme_says_a_mixture_of_experts_finetune_is_not_timed(capsys):
    """README: "`finetune`: ... with `--hardware` its time (`--tokens`, `--price` ...) (..., and Mixtral/Qwen/
    OLMoE/Granite MoEs with adapters on the attention)", but `finetune --model mixtral-8x7b --method qlora
    --hardware h200 --tokens 1M` is refused (costmodel/lora_time.py times no router or grouped experts)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    bullet = next(line for line in readme.splitlines() if line.startswith("- `finetune`:"))
    assert "a mixture of experts' step (router, grouped experts) is not timed, so `--tokens` is refused" in bullet
    line = one_error_line(["finetune", "--model", "mixtral-8x7b", "--method", "qlora", "--hardware", "h200",
                           "--tokens", "1M"], capsys)
    assert "its time is not modelled" in line


def test_a_serving_plan_that_fits_nowhere_names_a_serving_plan(capsys):
    """`plan --model llama3.1-8b --serve --gpus 2 --batch 100000` (12.99 TiB a GPU) said "On 512 GPUs it fits:
    tp 8 x pp 2 x dp 32, 53.54 GiB per GPU (`plan --gpus 512`)": that command plans training, and at the default
    batch of 32. The named command now gives the row it quotes (rank 1, 53.54 GiB)."""
    code, out, _ = run_main(["plan", "--model", "llama3.1-8b", "--serve", "--gpus", "2", "--batch", "100000"], capsys)
    assert code == 1 and out.rstrip().endswith(
        "On 512 GPUs it fits: tp 8 x pp 2 x dp 32, 53.54 GiB per GPU (`plan --serve --gpus 512 --batch 100000`).")
    rows = run_json(["plan", "--model", "llama3.1-8b", "--serve", "--gpus", "512", "--batch", "100000"],
                    capsys)["feasible"]
    assert (rows[0]["layout"]["tp"], rows[0]["layout"]["pp"], rows[0]["layout"]["dp"]) == (8, 2, 32)


def test_a_report_layout_on_hardware_without_a_link_is_one_line(tmp_path, capsys):
    """`report --model llama3.1-8b --out DIR --no-measure --tp 2 --hardware mygpu.json` (peaks, bandwidth and
    memory, no interconnect) drew the layout figure with the asked layout alone under a caption naming "the
    fastest layouts `plan` finds" (plan set all 9 aside, unsupported), where plan and simulate refuse such a file
    in one line (session 35). Now that line, exit 2, and no output folder made."""
    bare = tmp_path / "mygpu.json"
    bare.write_text(json.dumps({"name": "mygpu", "flops_per_s": {"bf16": 2.25e15, "fp32": 75e12},
                                "bandwidth_bytes_per_s": 8e12, "memory_bytes": 192e9}))
    out = tmp_path / "report"
    line = one_error_line(["report", "--model", "llama3.1-8b", "--out", str(out), "--no-measure", "--tp", "2",
                           "--hardware", str(bare)], capsys)
    assert line.startswith("error: hardware mygpu: no interconnect bandwidth for a group of 2 GPUs")
    assert not out.exists()


def test_a_report_layout_figure_says_when_no_plan_layout_fits():
    """Llama 2 7B trained on 2 x RTX 4090 at 2,048 tokens: no layout fits (the asked tp 2 needs 58.08 GiB a rank),
    and the memory figure's caption still promised "the fastest layouts `plan` finds" beside the asked one."""
    from costmodel import load_model
    from costmodel.config import Workload
    from costmodel.layout import Layout
    from reports.report import make_layouts

    made = make_layouts(load_model("llama2-7b"), Workload(seq_len=2048, batch=1, dtype="bf16"), Layout(tp=2),
                        "rtx-4090")
    assert [m.name for m in made] == ["layout-memory-llama2-7b"] and len(made[0].rows) == 1
    assert made[0].rows[0][-1] == 62_367_834_636  # 58.08 GiB, the asked layout's rank
    assert "the fastest layouts `plan` finds for the same 2 GPUs (none of its layouts fits), n = 2048" in made[0].caption
