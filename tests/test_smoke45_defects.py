"""What a new user's round 45 turned up (wt45_user): the README and docs/ run as an ML engineer types them,
through the commands and the Python API, with the mistakes such a user makes. Each test runs the command or
the call as typed and checks the answer or the one error line; each failed before its fix.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import costmodel
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from tests.cli_run import one_error_line, run_main

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("args, said", [
    (["plan", "--model", "llama3-70b", "--serve", "--rate", "2", "--hardware", "h100", "--slo-ttft", "500ms",
      "--slo-tpot", "0.05"], "'--slo-ttft': '500ms' is not a number: --slo-ttft is in seconds; give --slo-ttft 0.5."),
    (["serve", "--model", "llama3-8b", "--rate", "5", "--slo-tpot", "50ms"],
     "'--slo-tpot': '50ms' is not a number: --slo-tpot is in seconds; give --slo-tpot 0.05."),
    (["serve", "--model", "llama3-8b", "--rate", "5/s"],
     "'--rate': '5/s' is not a number: --rate is in requests per second; give --rate 5."),
    (["simulate", "--model", "llama3-8b", "--train", "--tokens", "1T", "--price", "$2.5"],
     "'--price': '$2.5' is not a number: --price is in dollars per GPU-hour; give --price 2.5."),
    (["finetune", "--model", "llama3-8b", "--hardware", "h100", "--tokens", "1B", "--price", "2.5/h"],
     "'--price': '2.5/h' is not a number: --price is in dollars per GPU-hour; give --price 2.5."),
    (["plan", "--model", "llama3-8b", "--gpus", "8", "--tokens", "1T", "--price", "cheap"],
     "'--price': 'cheap' is not a number: --price is in dollars per GPU-hour; a number such as --price 2.5."),
])
def test_a_number_typed_with_its_unit_names_the_number_to_give(args, said, capsys):
    # click's "'500ms' is not a valid float." (and '$2.5', '2.5/h', '5/s', left by round 44) said neither the unit
    # the option is in nor the number meant; a plain number still runs (test_plan, test_serving, test_cost).
    assert one_error_line(args, capsys) == f"error: Invalid value for {said}"


def test_simulates_advice_names_a_hardware_file_by_its_path(tmp_path, capsys):
    # A copy of h100 as `hardware --show` writes it, renamed "my-h100": simulate's "does NOT fit" advice read
    # "`plan --hardware my-h100 --gpus 8` ranks the layouts that fit", and that command is "unknown hardware 'my-h100'".
    data = load_hardware("h100").to_dict()
    data["name"] = "my-h100"
    path = tmp_path / "my-h100.json"
    path.write_text(json.dumps(data))
    code, out, _ = run_main(["simulate", "--model", "llama3-8b", "--hardware", str(path), "--train", "--dp", "8"], capsys)
    assert code == 0
    assert out.rstrip().splitlines()[-1] == (
        f"The most loaded rank does NOT fit in 78.72 GiB: `plan --hardware {path} --gpus 8` ranks the layouts that "
        f"fit; `estimate --hardware {path}` with this layout says what to change.")
    assert one_error_line(["plan", "--model", "llama3-8b", "--hardware", "my-h100", "--gpus", "8"], capsys).startswith(
        "error: unknown hardware 'my-h100'")  # the name alone is no hardware a command reads
    result = costmodel.simulate("llama3-8b", hardware=str(path), train=True, layout={"dp": 8}).to_dict()
    assert (result["inputs"]["hardware"], result["inputs"]["hardware_file"]) == ("my-h100", str(path))
    assert "hardware_file" not in costmodel.simulate("llama3-8b", hardware="h100", train=True,
                                                     layout={"dp": 8}).to_dict()["inputs"]  # a preset: its name


@pytest.mark.parametrize("layout, said", [
    ({"tpp": 2}, "layout: unknown field 'tpp' (did you mean tp?); a layout takes dp, tp, pp, sp, zero, microbatches,"),
    ({"dp": 8, "zro": 1}, "layout: unknown field 'zro' (did you mean zero?); a layout takes dp, tp, pp,"),
    ({"gpus": 8}, "layout: gpus is no field of a layout: the GPUs are its tp x pp x dp (x cp); give layout={'dp': 8}"),
])
def test_a_layout_dict_with_an_unknown_field_names_the_field(layout, said):
    # layout={'tpp': 2} read "layout: Layout.__init__() got an unexpected keyword argument 'tpp'.": a class the
    # caller never called, the field meant unsaid.
    for call in (lambda: costmodel.estimate("llama3-8b", layout=layout),
                 lambda: costmodel.simulate("llama3-8b", train=True, layout=layout)):
        with pytest.raises(ConfigError, match="^" + re.escape(said)):
            call()


def test_the_hardware_files_bandwidth_floor_is_the_one_docs_state(tmp_path):
    # The floor went from 1e9 to 1e6 in session 44 (hardware_schema.FLOOR), but docs/time.md's schema table kept
    # "a bandwidth under 1 GB/s ... a `flops_per_s` peak under 1 GFLOP/s is one error line" and the schema's own
    # field text "at least 1 GB/s": a file at 0.5 GB/s, which the docs said is refused, loads.
    from costmodel.hardware_schema import FLOOR, SCHEMA

    data = {"name": "slow-cpu", "flops_per_s": {"fp32": 5e8}, "bandwidth_bytes_per_s": 5e8, "memory_bytes": 2**34}
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    assert load_hardware(str(path)).bandwidth_bytes_per_s == 5e8
    assert FLOOR == 1e6
    text = " ".join((ROOT / "docs" / "time.md").read_text(encoding="utf-8").split())
    assert "a bandwidth under 1 MB/s (1e6), a capacity under 1 GiB or a `flops_per_s` peak under 1 MFLOP/s (1e6)" in text
    assert "under 1 GB/s" not in text and "under 1 GFLOP/s" not in text
    assert SCHEMA["bandwidth_bytes_per_s"].meaning.startswith("memory bandwidth, bytes/s (at least 1,000,000:")


@pytest.mark.parametrize("prompt, said", [(0, "simulate: prompt must be at least 1, got 0."),
                                          (2048.5, "simulate: prompt must be an integer, got 2048.5.")])
def test_simulate_names_the_prompt_it_was_given(prompt, said):
    # costmodel.simulate(m, prompt=0) read "workload: seq_len must be at least 1, got 0.": simulate's inference
    # takes prompt (seq_len is train=True's, refused there), as `simulate --prompt 0` names --prompt.
    with pytest.raises(ConfigError, match="^" + re.escape(said) + "$"):
        costmodel.simulate("llama3-8b", prompt=prompt)
    assert costmodel.simulate("llama3-8b", prompt=512, gen=2).to_dict()["inputs"]["prompt"] == 512


@pytest.mark.parametrize("model, hardware, said", [
    ("llama3-70b", "rtx-4090", "  No single change, nor full recomputation, makes it fit: even `--recompute full "
                               "--seq-len 1` needs 37.29 GiB;"),
    ("mixtral-8x7b", "a100-40gb", "  No single change makes it fit (full recomputation is not modelled for a mixture "
                                  "of experts): even `--seq-len 1` needs 85.25 GiB;"),
])
def test_a_qlora_run_that_fits_nowhere_is_not_offered_qlora(model, hardware, said, capsys):
    # `finetune --method qlora` read "No single change, nor QLoRA with full recomputation, makes it fit" (and, for a
    # mixture of experts, "nor QLoRA (...)"), as if the run were not QLoRA already; the figures are the least the
    # verdict computes (the LoRA wording, with --method qlora in the change, is test_smoke38b's and 40b's).
    code, out, _ = run_main(["finetune", "--model", model, "--method", "qlora", "--hardware", hardware], capsys)
    assert code == 0 and said in out and "nor QLoRA" not in out


def test_a_runs_tokens_read_as_tokens_are_counted(capsys):
    # `simulate --train --tokens 1.5B` printed "time to train ... on 1.50 G tokens" (si's FLOP prefixes; left by round
    # 44): the B the user typed came back as G. Now reports.text.tokens, the suffixes --tokens reads (k, M, B, T).
    code, out, _ = run_main(["simulate", "--model", "gpt2", "--hardware", "h100", "--train", "--tokens", "1.5B"], capsys)
    assert code == 0 and re.search(r"time to train +\S+ \S+ +on 1\.50 B tokens, 1 GPU\n", out) and " G tokens" not in out
    code, out, _ = run_main(["plan", "--model", "gpt2", "--gpus", "1", "--tokens", "15T", "--top", "1"], capsys)
    assert code == 0 and "To train on 15.00 T tokens (" in out


def test_a_length_with_a_space_before_its_suffix_is_read_as_a_token_total_is(capsys):
    # `--tokens "15 T"` is 15,000,000,000,000 (float() strips the space), but `--seq-len "128 k"` was "'128 k' is not
    # a length" (left by round 43): one parser, two rules. Now both read the space; a serve mix records the integers.
    from costmodel.sizes import parse_length, parse_total, spelled_out

    assert (parse_length("128 k"), parse_length("1 M"), parse_total("15 T")) == (131_072, 1_048_576, 1.5e13)
    assert spelled_out("uniform:1 k:4 k") == "uniform:1024:4096"
    code, out, err = run_main(["estimate", "--model", "llama3-8b", "--seq-len", "4 k", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["seq_len"] == 4096 and "note: --seq-len 4 k = 4,096 tokens" in err
    assert one_error_line(["estimate", "--model", "llama3-8b", "--seq-len", "12 q"], capsys).startswith(
        "error: Invalid value for '--seq-len' / '-n': '12 q' is not a length")


def test_plot_and_serve_write_the_same_figure_files(tmp_path, capsys):
    # `plot` took .png and .svg in any case, `serve --plot` .png, .svg and .pdf in lower case only: `plot --out f.pdf`
    # read "the figure file must end in .png or .svg" and `serve --plot t.PNG` "--plot must name a .png, .svg or .pdf
    # file", each a format the other command writes. One list now (reports/output.FIGURE_FORMATS).
    pdf, png = tmp_path / "flops.pdf", tmp_path / "timeline.PNG"
    code, out, _ = run_main(["plot", "flops", "--model", "gpt2", "--out", str(pdf)], capsys)
    assert code == 0 and pdf.read_bytes().startswith(b"%PDF-")
    code, out, _ = run_main(["serve", "--model", "gpt2", "--rate", "2", "--requests", "5", "--plot", str(png)], capsys)
    assert code == 0 and png.read_bytes().startswith(b"\x89PNG")
    for args, option in ((["plot", "flops", "--model", "gpt2", "--out"], "--out"),
                         (["serve", "--model", "gpt2", "--rate", "2", "--requests", "5", "--plot"], "--plot")):
        path = str(tmp_path / "f.jpg")
        assert one_error_line([*args, path], capsys) == f"error: {option} {path!r}: a figure file ends in .png, .svg or .pdf."
