"""What a new user's fifth round (published runs typed as CLI commands, issue 18) turned up: each
test runs the command as a user typed it and checks the answer or the one error line.
"""

from __future__ import annotations

import json
from pathlib import Path

import costmodel
from tests.cli_run import run_main

H100 = Path(costmodel.__file__).parent / "hardware" / "h100-sxm.json"


def _capped_h100(tmp_path: Path) -> str:
    # torchtitan's H100s (docs/performance.md at eaea6f6): 96 GB of HBM2e at 2.4 TB/s, 'the
    # default 500W power limit': the preset's file with those three fields changed, as a user writes it.
    data = json.loads(H100.read_text())
    # The SXM's measured GEMV rate (3.02 TB/s) goes with its bandwidth: above 2.4 TB/s it is refused
    # (test_smoke6_defects), so the copy says none was measured, as published_runs' torchao-h100 does.
    data.update(name="h100-96gb-500w", bandwidth_bytes_per_s=2.4e12, memory_bytes=96 * 2**30,
                power_limit_watts=500, gemv_bandwidth_bytes_per_s=0.0)
    del data["device_memory_bytes"]  # the SXM's reported total is not this card's (none measured: memory_bytes)
    path = tmp_path / "h100-500w.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_simulate_applies_a_hardware_files_power_limit_once(tmp_path, capsys):
    # simulate rebuilt the loaded hardware with dataclasses.replace (for --launch-overhead /
    # --graph-kernel-gap, even when neither was given); __post_init__ scaled the already capped
    # peaks again: 989.4 x (500/700)^(2/3) = 790.6 TFLOP/s where `plan` and `hardware --show` use
    # 989.4 x (500/700)^(1/3) = 884.4 (docs/time.md: a power cap scales the peaks by its cube root).
    path = _capped_h100(tmp_path)
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", path, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["hardware"]["peak_flops_per_s"] == 989.4e12 * (500 / 700) ** (1 / 3)  # 884.43e12
    # the same with a launch option given (the replace that changes a field)
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", path, "--launch-overhead", "0", "--json"],
                              capsys)
    assert code == 0, err
    assert json.loads(out)["hardware"]["peak_flops_per_s"] == 989.4e12 * (500 / 700) ** (1 / 3)


def test_simulate_train_on_a_capped_file_is_the_published_harness_step(tmp_path, capsys):
    # torchtitan's Llama 3.1 70B, FSDP 32 x TP 8, compile + Float8, 256 GPUs (published_runs.json
    # "torchtitan llama3.1-70b fsdp32 tp8 compile float8 256 GPUs": 740.6 tokens/s a GPU with DTensor's copy around
    # each sequence-sharded TP collective (session 32, layout/dtensor_copies.py); 820.6 before it, with torchtitan's
    # foreach AdamW and clipping (session 31, --optimizer-step torch-foreach); 821.0 before it; 821.3 before session 31's
    # loss traffic, blocks/head.py fused_loss_bytes; 826.0 before FSDP2's
    # copies and exposed edges, session 28; 826.7 before FSDP2's
    # per-unit calls, session 27; docs/checked.md) under the
    # kernel model, the harness building the same capped H100 from the preset, its measured GEMV
    # rate zeroed with its bandwidth; 898.7 while the harness kept the SXM's 3.02 TB/s Dot). Typed as a command
    # on the user's file named h100-sxm (the NCCL curves are the preset's by name), the CLI gave
    # 19.5 s and 214,612 tokens/s (838.3 a GPU): the compute at the twice-capped peak, 15.4 s
    # where the harness has 14.1 s. Now the same step to the token.
    data = json.loads(Path(_capped_h100(tmp_path)).read_text())
    data["name"] = "h100-sxm"
    path = tmp_path / "named.json"
    path.write_text(json.dumps(data))
    code, out, err = run_main(["simulate", "--train", "--model", "llama3-70b", "--hardware", str(path),
                               "--gpus", "256", "--tp", "8", "--sp", "--seq-len", "8192", "--batch", "16",
                               "--global-batch", "512", "--framework", "fsdp2", "--zero", "3",
                               "--recompute", "full", "--attention", "flash", "--compile", "--fp8", "tensorwise",
                               "--optimizer-step", "torch-foreach", "--json"], capsys)  # the source's (session 31)
    assert code == 0, err
    step = json.loads(out)["step"]
    from reports.published_runs import other_runs_data, train_setup
    from costmodel.layout.timing import step_time

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "torchtitan llama3.1-70b fsdp32 tp8 compile float8 256 GPUs")
    estimate, hardware, options = train_setup(run, data["sources"]["torchtitan"])
    harness = step_time(estimate, hardware, time_model="kernels", **options).step()
    assert step["tokens_per_second"] == harness["tokens_per_second"]
    assert round(step["tokens_per_second"] / 256, 1) == 749.6  # 740.6 before wt45_megatron's FP8 GEMM operands at 1 B; 749.8 before wt46_mgsoftmax's recomputed launches


def test_simulate_train_prints_tokens_a_gpu_beside_the_steps(capsys):
    # torchtitan, llm-foundry, Megatron-Bridge and NeMo publish tokens/s a GPU; the step line gave
    # only the step's, 8 to 512 times the published figure of the runs this round typed. Now both:
    # gpt2 on 8 A100s: 32 sequences of 1,024 tokens in 22.9 ms, 1,429,428 tokens/s, 178,679 a GPU (22.3 ms, 1,468,044
    # before session 39's GPU-bound eager kernels kept their GPU-side launch cost, a100-80gb.json's graph_kernel_s
    # 1.34 us a kernel in each of 3 passes, KernelTimer.stream_seconds; 1,471,227 before
    # session 33's embedding dense gradient, costmodel/embedding_grad.py; 21.6 ms,
    # 1,519,808 before session 31's loss traffic over the 50,257-word vocabulary, blocks/head.py fused_loss_bytes; 21.2 ms,
    # 1,542,299 before session 29's FlashAttention-2 A100 backward from its paper's figure): the eager
    # step's host term on a layout (session 28: its 2,570 ops run ahead of 21.2 ms of kernels, which then pay
    # no per-block launches; 25.0 ms, 1,309,347 before it); 22.8 ms,
    # 1,435,643 before FSDP2's copies and exposed edges, session 28; 22.4 ms,
    # 1,463,703 before FSDP2's collectives were issued one per unit, session 27: 25 all-gathers, 13 reduce-scatters).
    args = ["simulate", "--train", "--model", "gpt2", "--hardware", "a100-80gb", "--gpus", "8", "--seq-len", "1024",
            "--batch", "4", "--framework", "fsdp2", "--zero", "3"]
    code, out, err = run_main(args + ["--json"], capsys)
    assert code == 0, err
    tokens = json.loads(out)["step"]["tokens_per_second"]
    assert round(tokens) == 1429428 and round(tokens / 8) == 178679
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    assert "   1,429,428 tokens/s (178,679 a GPU); MFU 48.9% (dense model FLOPs over the bf16 datasheet peak)" \
        in out.splitlines()[2]


def test_serve_help_says_a_hardware_file_is_taken(tmp_path, capsys):
    # serve --help said "A hardware preset." where it takes a file as simulate and plan do; a user
    # with torchtitan's 500 W H100s wrote one for simulate and could not tell serve would read it.
    code, out, err = run_main(["serve", "--help"], capsys)
    assert code == 0, err
    assert "or a path to a hardware file" in " ".join(out.split())
    path = _capped_h100(tmp_path)
    code, out, err = run_main(["serve", "--model", "gpt2", "--hardware", path, "--concurrency", "1", "--requests",
                               "1", "--prompt", "16", "--output", "4", "--json"], capsys)
    assert code == 0, err


def test_plan_says_the_fp8_recipe_it_trains_every_layout_with(capsys):
    # `plan --fp8 tensorwise` (torchtitan's Float8 rows) timed every layout in FP8 but neither its
    # header ("llama3.1-8b on 8 x h100-sxm, bf16: ...") nor its JSON inputs said so; simulate's
    # layout line does ("FP8 tensorwise, ZeRO 3"). The step is simulate's to the digit either way.
    args = ["--model", "llama3.1-8b", "--gpus", "8", "--seq-len", "8192", "--global-batch", "16", "--batch", "2",
            "--framework", "fsdp2", "--recompute", "torchtitan-op", "--attention", "flash", "--fp8", "tensorwise"]
    code, out, err = run_main(["plan", *args], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == ("llama3.1-8b on 8 x h100-sxm, bf16, FP8 tensorwise: global batch 16 of 8,192 "
                                   "tokens; time model kernels")
    code, out, err = run_main(["plan", *args, "--zero", "3", "--json"], capsys)
    assert code == 0, err
    planned = json.loads(out)
    assert planned["inputs"]["fp8"] == "tensorwise"
    code, out, err = run_main(["simulate", "--train", *args, "--zero", "3", "--json"], capsys)
    assert code == 0, err
    assert planned["feasible"][0]["mfu"] == json.loads(out)["step"]["mfu"]
    code, out, err = run_main(["plan", *args[:-2], "--json"], capsys)
    assert json.loads(out)["inputs"]["fp8"] is None


def test_an_unknown_gpu_name_suggests_the_preset_whose_words_it_holds(capsys):
    # "H200 SXM 141GB" (NVIDIA's product name) suggested gh200-144gb and two V100s, never h200:
    # difflib over the full name ranks the short preset below longer near-spellings.
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "H200 SXM 141GB"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: unknown hardware 'H200 SXM 141GB'. Did you mean h200, gh200-144gb, v100-sxm2-16gb? "
                   "A path to a hardware file (.json) is also taken.\n")
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "H100 SXM 80GB"], capsys)
    assert "Did you mean h100-sxm, " in err
    code, out, err = run_main(["simulate", "--model", "gpt2", "--hardware", "mi300"], capsys)
    assert "Did you mean mi300x, b300, mi210?" in err  # difflib's own order where no preset is held (b300 and mi210: the nearest spellings)


def test_a_hub_name_without_its_organization_resolves(capsys):
    # `--model Llama-3.1-8B-Instruct` (the name every model card and vLLM log shows) was unknown,
    # though meta-llama/Llama-3.1-8B-Instruct is an alias of llama3.1-8b and `Llama-3.1-8B` resolved
    # (a preset's own name, loosely). Now the Hub id's name part resolves where one preset has it.
    from costmodel.presets import resolve_name

    assert resolve_name("Llama-3.1-8B-Instruct") == resolve_name("llama-3.1-8b-instruct") == "llama3.1-8b"
    assert resolve_name("Mixtral-8x7B-Instruct-v0.1") == "mixtral-8x7b"
    assert resolve_name("Kimi-K2-Instruct") == "kimi-k2"
    assert resolve_name("Llama-3.1-405B-Instruct-FP8") is None  # no such alias: not guessed
    code, out, err = run_main(["estimate", "--model", "Llama-3.1-8B-Instruct", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == 8_030_261_248  # llama3.1-8b's
