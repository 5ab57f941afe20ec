"""The figures the README and docs/ quote beside a command are the figures that command prints.

Each test reads the command and its figures from the doc itself (never a copy here), runs the
command in-process and asserts each quoted figure appears in what it prints, so a change that moves
a figure fails here until the doc is re-run. The code blocks of docs/fit-and-cost.md and
docs/finetuning.md that follow their command are checked line by line in
tests/test_new_user_defects.py; the published tables in tests/test_published_summary.py and
tests/test_serving_published_summary.py. Commands over ~2 s in-process are marked slow.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_run import run_main

ROOT = Path(__file__).parent.parent


def doc(name: str) -> str:
    """A doc's text with its lines joined (a quoted command or sentence may wrap)."""
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def p99_lines(out: str, *names: str) -> dict[str, str]:
    """serve's p99 figure (its line's last column) for each metric line named (TTFT, TPOT, E2E)."""
    return {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.split()[:1] and line.split()[0] in names}


def quoted(text: str, pattern: str) -> re.Match:
    """The one place the doc says it: a doc that no longer says it fails here, not silently."""
    found = list(re.finditer(pattern, text))
    assert len(found) == 1, (pattern, len(found))
    return found[0]


def test_the_readme_python_example_prints_the_parameters_it_quotes():
    import costmodel

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    call = quoted(text, r"result = (costmodel\.estimate\([^)]*\))").group(1)
    figure = quoted(text, r'result\.to_dict\(\)\["params"\]\["total"\]\s+# (\d+);').group(1)
    result = eval(call, {"costmodel": costmodel})  # the README's own call, as typed there
    assert result.to_dict()["params"]["total"] == int(figure)


def test_the_usable_memory_the_docs_quote_for_an_h100_is_what_estimate_prints(capsys):
    # commands.md and fit-and-cost.md: "78.72 and 70.79 GiB on an H100 SXM" (training, inference).
    for name in ("docs/commands.md", "docs/fit-and-cost.md"):
        train, serve = quoted(doc(name), r"([\d.]+) and ([\d.]+) GiB on an H100 SXM").groups()
        code, out, err = run_main(["estimate", "--model", "llama3-8b", "--hardware", "h100-sxm"], capsys)
        assert code in (0, 1), err
        verdicts = [line for line in out.splitlines() if " GPU" in line and "fit" in line]
        assert any(f"in {train} GiB" in line and line.startswith("Training") for line in verdicts), verdicts
        assert any(f"in {serve} GiB" in line and line.startswith("Inference") for line in verdicts), verdicts


def test_the_lora_verdict_finetuning_md_quotes_in_its_prose_is_printed(capsys):
    """docs/finetuning.md names `finetune --model llama3-70b --hardware h100 ...` in a sentence, then
    shows its verdict in a block: both the sentence's figures and the block's lines are printed."""
    text = (ROOT / "docs" / "finetuning.md").read_text(encoding="utf-8")
    match = quoted(" ".join(text.split()), r"\(`(finetune --model llama3-70b --hardware h100 [^`]*)`\) needs "
                                           r"([\d.]+) GiB; neither change alone fits, both together leave ([\d.]+) GiB")
    command, needs, leaves = match.groups()
    after = text.split(command, 1)[1].split("```")[1]  # the block after the sentence
    shown = [line for line in after.strip().splitlines() if line.strip()]
    code, out, err = run_main(command.split(), capsys)
    assert code == 0, err  # a verdict, not an error, as estimate's
    assert shown and [line for line in shown if line not in out.splitlines()] == []
    assert f"total on the GPU     {needs} GiB" in out and f"    {leaves} GiB   together" in out


@pytest.mark.slow
def test_the_mfu_of_a_capped_a100_time_md_quotes_is_printed(tmp_path, capsys):
    """docs/time.md: a 250 W A100 file against the 400 W preset (Llama-2-7B, 8 GPUs, FSDP2 ZeRO 3):
    the step seconds and MFU each prints."""
    from costmodel.hardware import load_hardware

    text = doc("docs/time.md")
    match = quoted(text, r"a 250 W A100 file: ([\d.]+) s and ([\d.]+)% against the 400 W preset's ([\d.]+) s and "
                         r"([\d.]+)%, Llama-2-7B, 8 GPUs, FSDP2 ZeRO 3, `(simulate --train [^`]*)`")
    capped_s, capped_mfu, preset_s, preset_mfu, command = match.groups()
    path = tmp_path / "a100-250w.json"
    path.write_text(json.dumps(dict(load_hardware("a100-80gb").to_dict(), name="a100-250w", power_limit_watts=250.0)))
    for hardware, seconds, mfu in ((str(path), capped_s, capped_mfu), ("a100-80gb", preset_s, preset_mfu)):
        code, out, err = run_main([*command.split(), "--hardware", hardware], capsys)
        assert code == 0, err
        step = next(line for line in out.splitlines() if line.strip().startswith("step "))
        assert re.search(rf"\s{re.escape(seconds)} s\s", step) and f"MFU {mfu}%" in step, (hardware, step)


@pytest.mark.slow
def test_the_serving_answer_serving_md_quotes_is_printed(capsys):
    # "p99 TTFT and TPOT at 5 req/s for Llama-3-8B on one H100 with vLLM's scheduler"
    text = doc("docs/serving.md")
    match = quoted(text, r"`python cli\.py (serve --model llama3-8b --hardware h100-sxm --rate 5 --scheduler vllm)` "
                         r"\(1,000 Poisson requests, seed 0, 512 prompt \+ 128 output tokens, bf16\): "
                         r"p99 TTFT ([\d.]+) ms, p99 TPOT ([\d.]+) ms; KV cache ([\d,]+) blocks of 16 tokens "
                         r"\(([\d,]+) bytes per token\)")
    command, ttft, tpot, blocks, per_token = match.groups()
    code, out, err = run_main(command.split(), capsys)
    assert code == 0, err
    p99 = p99_lines(out, "TTFT", "TPOT")
    assert p99 == {"TTFT": ttft, "TPOT": tpot}, p99
    assert f"KV cache per replica: {blocks} blocks of 16 tokens ({per_token} B per token" in out


@pytest.mark.slow
def test_the_fewest_h100s_plan_serve_finds_is_the_one_serving_md_quotes(capsys):
    text = doc("docs/serving.md")
    match = quoted(text, r"`python cli\.py (plan --serve --model llama3-70b [^`]*)` \(300 simulated requests per "
                         r"point\): the fewest H100s is \*\*(\d+)\*\* \(tp (\d+), one replica, max-num-seqs (\d+), "
                         r"token budget ([\d,]+): p99 TTFT ([\d.]+) ms, p99 TPOT ([\d.]+) ms; tp (\d+) on (\d+) "
                         r"GPUs, ([\d.]+)\s+and ([\d.]+) ms\)")
    command, gpus, tp, seqs, tokens, ttft, tpot, tp2, gpus2, ttft2, tpot2 = match.groups()
    code, out, err = run_main(command.split(), capsys)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.split()[1:2] == ["h100-sxm"]]
    assert rows[0] == [gpus, "h100-sxm", tp, "1", "1", seqs, tokens.replace(",", ""), ttft, tpot, "-", "-"], rows[0]
    # the next count's best row (session 40: tp 4 on 4 GPUs, one replica)
    best = next(row for row in rows if row[0] == gpus2)
    assert best[2:5] == [tp2, "1", "1"] and best[7:9] == [ttft2, tpot2], best


DISAGGREGATION = {"2 colocated": ["--replicas", "2"], "1 prefill + 1 decode": ["--disaggregate", "1:1"],
                  "4 colocated": ["--replicas", "4"], "1 prefill + 3 decode": ["--disaggregate", "1:3"],
                  "2 prefill + 2 decode": ["--disaggregate", "2:2"]}


@pytest.mark.slow
@pytest.mark.parametrize("layout", DISAGGREGATION)
def test_the_disaggregation_table_is_what_serve_prints(layout, capsys):
    text = doc("docs/serving.md")
    command = quoted(text, r"`python cli\.py (serve --model llama3-8b --rate 30 [^`]*) --replicas 2` or "
                           r"`--disaggregate 1:1`").group(1)
    row = quoted(text, rf"\| \d \| {re.escape(layout)} \| ([\d,]+) \| ([\d.]+) \| ([\d,]+) \| ([\d.]+) \|").groups()
    code, out, err = run_main([*command.split(), *DISAGGREGATION[layout]], capsys)
    assert code == 0, err
    p99 = p99_lines(out, "TTFT", "TPOT", "E2E")
    rate = re.search(r"throughput: ([\d.]+) req/s", out).group(1)
    printed = (f"{float(p99['TTFT']):,.0f}", p99["TPOT"], f"{float(p99['E2E']):,.0f}", f"{float(rate):.1f}")
    assert printed == row, (printed, row)


@pytest.mark.slow
def test_one_requests_seconds_serving_md_quotes_are_what_simulate_prints(capsys):
    """docs/serving.md: Llama 3 8B, 2,048 + 128 on an H100, one request alone, eager, under both time
    models, and simulate's whole-step graphs under the roofline."""
    text = doc("docs/serving.md")
    roofline, kernels = quoted(text, r"Llama 3 8B, 2,048 \+ 128 on an H100, ([\d.]+) s under the roofline and "
                                     r"([\d.]+) s under the kernel model in both").groups()
    graphs = quoted(text, r"simulate's `--cuda-graphs` replays the whole step \([\d.]+ s against ([\d.]+) s "
                          r"under the roofline\)").group(1)
    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--prompt", "2048", "--gen", "128",
            "--attention", "flash", "--kv-cache", "static"]
    for extra, figure in ((["--cuda-graphs", "off", "--time-model", "roofline"], f"{roofline} s"),
                          (["--cuda-graphs", "off", "--time-model", "kernels"], f"{kernels} s"),
                          (["--cuda-graphs", "on", "--time-model", "roofline"], f"{float(graphs) * 1000:.0f} ms")):
        code, out, err = run_main([*base, *extra], capsys)
        assert code == 0, err
        line = next(line for line in out.splitlines() if line.strip().startswith("prefill + generation"))
        assert line.split()[3:5] == figure.split(), (extra, line)


def test_the_decode_codes_times_commands_md_quotes_are_what_plan_serve_prints(capsys):
    """docs/commands.md, plan --serve's --decode-code: Llama 3.1 8B, 32 x 2,048 + 128, FP8 cache, one H100."""
    text = doc("docs/commands.md")
    batch, prompt, gen, transformers, trtllm = quoted(
        text, r"Llama 3\.1 8B, (\d+) x ([\d,]+) \+ (\d+) with an FP8 cache on one H100: ([\d.]+) ms a token under "
              r"transformers, ([\d.]+) ms under `tensorrt-llm`").groups()
    for code_name, figure in (("transformers", transformers), ("tensorrt-llm", trtllm)):
        code, out, err = run_main(["plan", "--serve", "--model", "llama3.1-8b", "--hardware", "h100-sxm", "--gpus", "1",
                                   "--batch", batch, "--prompt", prompt.replace(",", ""), "--gen", gen,
                                   "--kv-dtype", "fp8", "--decode-code", code_name, "--json"], capsys)
        assert code == 0, err
        seconds = json.loads(out)["feasible"][0]["time_per_output_token"]
        assert f"{seconds * 1000:.2f}" == figure, (code_name, seconds)


@pytest.mark.slow
def test_the_sweeps_quantized_and_fp8_cache_bytes_commands_md_quotes_are_what_it_writes(capsys):
    """docs/commands.md, sweep: gpt-oss-20b's inference bytes at n = 2048 with the checkpoint's MXFP4 and
    with --weight-dtype none, and Llama-2-7B's KV cache at n = 1,024 in bf16 and fp8 (each sweep
    lambdifies its tree: ~4 s)."""
    import csv
    import io

    text = doc("docs/commands.md")
    mxfp4, none = quoted(text, r"\(gpt-oss-20b: MXFP4 experts, ([\d.]+) GiB at n = 2048 where `--weight-dtype none` "
                               r"gives ([\d.]+) GiB\)").groups()
    bf16, fp8 = quoted(text, r"\(Llama-2-7B at n = 1,024, b = 1: ([\d,]+) B in bf16, ([\d,]+) in fp8\)").groups()

    def swept(*args: str) -> dict:
        code, out, err = run_main(["sweep", *args, "--batch", "1"], capsys)
        assert code == 0, err
        return next(csv.DictReader(io.StringIO(out)))

    for extra, figure in (([], mxfp4), (["--weight-dtype", "none"], none)):
        row = swept("--model", "gpt-oss-20b", "--seq-len", "2048", *extra)
        assert f"{int(row['inference_bytes']) / 2**30:.2f}" == figure, (extra, row["inference_bytes"])
    for extra, figure in (([], bf16), (["--kv-dtype", "fp8"], fp8)):
        assert swept("--model", "llama2-7b", "--seq-len", "1024", *extra)["kv_cache_bytes"] == figure.replace(",", "")


def test_the_published_rows_checked_md_quotes_in_prose_are_its_tables_cells():
    """docs/checked.md names a row's command in prose with the kernel model's figure beside it; the
    table's cell (regenerated from `python cli.py published` with every run) is the printed figure,
    so the prose must be the cell (it had kept 1.02x, 1,473 and 4,766 after the table moved)."""
    text = doc("docs/checked.md")

    def cell(row: str) -> tuple[str, str]:  # the kernel model's (figure, ratio) of a table row
        figure, ratio = quoted(text, re.escape(row) + r" \| tokens/s per GPU[^|]*\| [\d,.]+ \| [^|]+ \| "
                                                      r"([\d,.]+) \(([\d.]+)x\) \|").groups()
        return figure, ratio

    automodel = quoted(text, r"64 DGX-H100s, torch\.compile and full checkpointing, as the page and its config "
                             r"state: ([\d.]+)x").group(1)
    assert automodel == cell("NeMo AutoModel Llama 3 70B, FSDP2 32 x CP 2, compiled, recomputed, 64 DGX-H100")[1]
    llama, mixtral = quoted(text, r"--framework megatron --time-model kernels` \(([\d,]+) a GPU\) and `--model "
                                  r"mixtral-8x22b --hardware mi355x .*? \(([\d,]+): the interleaved sends "
                                  r"hidden").groups()
    for prose, row in ((llama, "the same, FSDP2 64, 12 layers recomputed, GBS 256 MBS 1, 64 MI325X"),
                       (mixtral, "AMD Primus Mixtral 8x22B, BF16, PP 4 VP 2 DP 16, EP 8, GBS 512 MBS 1, 64 MI355X")):
        assert prose == f"{float(cell(row)[0].replace(',', '')):,.0f}", (prose, row)


def test_the_readmes_gpt_oss_120b_fits_one_80_gb_gpu_as_estimate_says(capsys):
    # README: "gpt-oss: MXFP4 experts, so gpt-oss-120b fits one 80 GB GPU" (the checkpoint's format by default).
    assert "so gpt-oss-120b fits one 80 GB GPU" in doc("README.md")
    code, out, err = run_main(["estimate", "--model", "gpt-oss-120b", "--hardware", "h100-sxm"], capsys)
    assert code == 0, err
    verdict = next(line for line in out.splitlines() if line.startswith("Inference on 1 h100-sxm GPU: "))
    assert " fits in " in verdict and "NOT" not in verdict, verdict


def test_every_documented_device_measurement_is_a_command_hardware_accepts(monkeypatch, capsys):
    """README's `hardware --measure --device cuda --like h200` (how benchmarks/h200-measured.json was
    written) was refused: --device and --like are read only with --out FILE. Each such command the docs
    print reaches the measurement with its file, device and preset (the measurement itself stubbed:
    it needs the GPU)."""
    import sys

    import cli  # noqa: F401  (loads cli.hardware)

    module = sys.modules["cli.hardware"]
    calls = []
    monkeypatch.setattr(module, "measure_hardware_file", lambda out, device, like, dtypes, quick:
                        calls.append((out, device, like)))
    typed = [" ".join(match.split()) for name in ("README.md", "docs/time.md", "docs/commands.md")
             for match in re.findall(r"`python cli\.py (hardware --measure [^`]*--device cuda[^`]*)`",
                                     (ROOT / name).read_text(encoding="utf-8"))]
    assert len(typed) >= 2, typed
    for command in typed:
        code, out, err = run_main(command.split(), capsys)
        args = command.split()
        assert code == 0 and err == "", (command, err)
        assert calls[-1] == (args[args.index("--out") + 1], "cuda", args[args.index("--like") + 1])


# The fit verdicts' examples in prose: (doc, the sentence with the suggested change and its GiB as groups,
# the command it describes). The change must be a suggestion line of what the command prints, at that memory.
VERDICT_EXAMPLES = [
    ("docs/fit-and-cost.md", r"Llama-3-70B on H100s, `(--gpus 2 --tp 2)` at ([\d.]+) GiB each",
     "estimate --model llama3-70b --hardware h100-sxm"),
    ("docs/fit-and-cost.md",
     r"Llama 2 70B's full fine-tune on 8 A100 40GB at 4,096 tokens: `([^`]+)`, ([\d.]+) GiB a GPU",
     "estimate --model llama2-70b --hardware a100-40gb --gpus 8 --seq-len 4096"),
    ("docs/fit-and-cost.md", r"QLoRA of Llama 3 8B at 16 x 2,048 on an RTX 4090: `(--batch \d+)`, ([\d.]+) GiB",
     "finetune --model llama3-8b --method qlora --hardware rtx-4090 --batch 16 --seq-len 2048"),
    ("docs/fit-and-cost.md", r"Llama 3 8B on 2 x RTX 4090: `(--zero 3 --offload params)`, ([\d.]+) GiB",
     "estimate --model llama3-8b --hardware rtx-4090 --gpus 2"),
    ("docs/finetuning.md", r"LoRA of Llama 3\.1 8B at 2,048 tokens on a 16 GB T4 was offered `--seq-len 78` alone; "
                           r"now `(--method qlora --recompute full)`, ([\d.]+) GiB, first",
     "finetune --model llama3.1-8b --hardware t4 --seq-len 2048"),
    ("docs/fit-and-cost.md", r"at 60,000\s+tokens on an RTX 4090: `(--recompute full --seq-len \d+)`, ([\d.]+) GiB",
     "finetune --model llama3.1-8b --method qlora --lora-targets all-linear --lora-rank 32 --attention flash "
     "--adapter-dtype bf16 --seq-len 60000 --hardware rtx-4090"),
]


@pytest.mark.parametrize("name, sentence, command", VERDICT_EXAMPLES,
                         ids=[" ".join(example[2].split()[:3]) + f" {i}" for i, example in enumerate(VERDICT_EXAMPLES)])
def test_a_fit_verdicts_example_in_prose_is_a_suggestion_it_prints(name, sentence, command, capsys):
    change, gib = quoted(doc(name), sentence).groups()
    code, out, err = run_main(command.split(), capsys)
    assert code == 0, err
    suggestions = [line.split() for line in out.splitlines() if line.startswith("    --")]
    # a suggestion line: the change's options, then its memory (`--batch 9` is printed `--recompute full --batch 9`)
    assert any(" ".join(words).split(f" {gib} GiB")[0].endswith(change) and f"{gib}" in words
               for words in suggestions), (change, gib, suggestions)


def test_the_frontier_table_layouts_md_prints_is_what_published_prints():
    """docs/layouts.md's two frontier rows (roofline, its ratio, kernel model, its ratio) as `published`
    prints them (reports/published_frontier.py; the table had kept 231,585 / 233,096 and 398 / 385)."""
    from reports.published_frontier import frontier

    text = doc("docs/layouts.md")
    shown = [quoted(text, rf"\| {start}[^|]*\| [^|]+\| ([\d,]+) \| ([\d.]+) \| ([\d,]+) \| ([\d.]+) \|").groups()
             for start in ("DeepSeek-V3 671B: EP64", "Llama 3 405B at 131,072 tokens")]
    printed = [(f"{row['ours']:,.0f}", f"{row['ratio']:.2f}", f"{row['kernels']:,.0f}", f"{row['kernels_ratio']:.2f}")
               for row in frontier()]
    assert printed == shown


def test_the_preset_counts_the_readme_and_commands_md_give_are_what_hardware_and_models_list():
    """README "GPUs: 34 presets" and "Models: 106 presets", commands.md "`hardware` (34 presets)" and its list
    of them, which had left out the A100 PCIe and the MI210."""
    from costmodel.hardware_presets import preset_names as hardware_presets
    from costmodel.presets import preset_names

    readme, commands = doc("README.md"), doc("docs/commands.md")
    gpus = {quoted(readme, r"GPUs: (\d+) presets").group(1), quoted(commands, r"`hardware` \((\d+) presets\)").group(1)}
    assert gpus == {str(len(hardware_presets()))}
    assert quoted(readme, r"Models: (\d+) presets").group(1) == str(len(preset_names()))
    listed = quoted(commands, r"`hardware` \(\d+ presets\): (.*?) \(datasheet dense peaks").group(1)
    for named in ("A100 80GB PCIe", "MI210", "MI250X", "GH200"):
        assert named in listed


def test_design_mds_reference_numbers_are_what_estimate_gives():
    """docs/design.md "Reference numbers": each model's parameters (`gpt2 / -medium` names gpt2-medium) and
    Llama-2-7B's forward FLOPs at b = 1, n = 2048, as `estimate --json` gives them."""
    import costmodel

    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([a-z0-9][^|]*?) \| [^|]+ \| ([\d,/ ]+) \|$", text, flags=re.MULTILINE)
    checked = {}
    for names, figures in rows:
        first, *others = [name.strip() for name in names.split("(")[0].split("/")]
        models = [first] + [first.split("-")[0] + name if name.startswith("-") else name for name in others]
        for model, figure in zip(models, figures.split("/"), strict=True):
            checked[model] = int(figure.strip().replace(",", ""))
    assert len(checked) == 12, checked
    assert {model: costmodel.estimate(model).to_dict()["params"]["total"] for model in checked} == checked
    flops = quoted(" ".join(text.split()), r"Llama-2-7B forward at b = 1, n = 2048, measured with FlopCounterMode "
                                         r"\(eager attention\): ([\d,]+) FLOPs").group(1)
    forward = costmodel.estimate("llama2-7b", seq_len=2048, batch=1).to_dict()["flops"]["forward"]
    assert forward == int(flops.replace(",", ""))


def test_checked_mds_llama2_7b_figures_are_what_estimate_gives():
    import costmodel

    params, flops, eager, sdpa = quoted(
        doc("docs/checked.md"), r"Llama-2-7B at b = 1, n = 2048 \(bf16\): ([\d,]+) parameters, ([\d,]+) forward FLOPs, "
                                r"([\d,]+) bytes saved for backward with eager attention \(([\d,]+) with sdpa\)").groups()
    for attention, saved in (("eager", eager), ("sdpa", sdpa)):
        data = costmodel.estimate("llama2-7b", seq_len=2048, batch=1, dtype="bf16", attention=attention).to_dict()
        figures = (data["params"]["total"], data["flops"]["forward"], data["memory"]["activations"])
        assert figures == tuple(int(figure.replace(",", "")) for figure in (params, flops, saved)), attention


@pytest.mark.slow
def test_the_pipelined_serving_example_serving_md_quotes_is_what_serve_gives():
    """docs/serving.md, `--pp`: Llama-3-70B at 2 req/s on 4 GPUs (tp 4) and 8 (tp 4, pp 2)."""
    import costmodel

    text = doc("docs/serving.md")
    ttft, tpot, ttft2, tpot2, blocks = quoted(
        text, r"seed=1\)`\): 4 GPUs \(tp 4\) p99 TTFT ([\d.]+) ms, TPOT ([\d.]+) ms; 8 GPUs \(tp 4, pp 2\) ([\d.]+) ms "
              r"and ([\d.]+) ms, ([\d.]+)x the KV blocks").groups()
    runs = [costmodel.serve("llama3-70b", rate=2, requests=100, tp=4, pp=pp, seed=1).summary() for pp in (1, 2)]
    printed = [f"{run[name]['p99'] * 1000:.1f}" for run in runs for name in ("ttft", "tpot")]
    assert printed == [ttft, tpot, ttft2, tpot2]
    assert f"{runs[1]['setup']['num_blocks'] / runs[0]['setup']['num_blocks']:.1f}" == blocks
