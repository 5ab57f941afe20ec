"""validate/time_breakdown.py: where the kernel model spends a published decode step (issue 18)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from reports.published_runs import other_runs_data
from tests.cli_run import run_script
from validate.time_breakdown import decode_step_split

SCRIPT = Path(__file__).resolve().parents[1] / "validate" / "time_breakdown.py"


def _run(run_id: str) -> tuple[dict, dict]:
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return run, data["sources"]["gpt-fast"]


def test_batch_one_bf16_decoding_reads_the_weights_at_the_achievable_bandwidth():
    run, source = _run("gpt-fast llama2-7b bf16")
    split = decode_step_split(run, source, context=105)
    # a100-80gb: the GEMVs' bytes at BabelStream's Dot rate, 1,586.9 GB/s (the GEMVs' activations,
    # 0.04% of the bytes, move too); CUDA graphs: no per-block launches, but each of the step's
    # 32 x 10 + 3 kernels keeps the A100's 1.34 us floor (compiled since session 39: each layer's two RMSNorms inside
    # the residual adds' kernels; 32 x 12 + 3 as eager kernels replayed before), and each of its 32 x 6 + 1 GEMMs and
    # attention calls (gpt-fast's model.py: wqkv, wo, w1, w3, w2 and the attention a layer, the head;
    # kernel_facts.json fused_projections) its 1.96 us DRAM start.
    assert split["weights GB/s"] == pytest.approx(1586.906, rel=1e-3)
    assert split["weights GB/s"] < 1586.906
    assert split["launches"] == pytest.approx(323 * 1.34e-6)
    assert split["DRAM startups"] == pytest.approx(193 * 1.96e-6)
    total = sum(v for k, v in split.items() if k != "weights GB/s")
    assert split["weight GEMMs"] > 0.87 * total


def test_int4_weights_at_batch_one_move_at_the_int4_kernels_published_fraction():
    """Once a 1-row int4 GEMM was bound by whole 64-row tiles (weights at 994 GB/s,
    below 0.7 x 0.8 x 2,039); then the int4 matrices moved at the A10's published 0.928 of the GEMV
    rate; now at the A100's (kernel_facts.json "weight_only_gemv": gemlite's A100 figures, 0.730 of
    it by thread blocks, N / 8): gpt-fast's fused wqkv (N = 12,288) at 0.683, wo and w2 (4,096) at
    0.608, w1 and w3 (11,008) at 0.671, the head as gpt-fast quantizes it (32,000; quantize_head,
    tests/test_quantize_head.py) at 0.729: their bytes (all groups of 32, the same bytes an element)
    move at 1,038.9 GB/s together (within 0.2%: the norms' small reads), not at the tile's rate."""
    rates = {12288: 0.730 * (0.876 + 0.102 * math.log2(1536 / 1024)), 4096: 0.730 * 0.833,
             11008: 0.730 * (0.876 + 0.102 * math.log2(1376 / 1024)),
             32000: 0.730 * (0.978 + 0.022 * math.log2(4000 / 2048))}
    elements = {12288: 32 * 12288 * 4096, 4096: 32 * 4096 * (4096 + 11008), 11008: 64 * 11008 * 4096, 32000: 32000 * 4096}
    together = sum(elements.values()) / sum(e / rates[n] for n, e in elements.items()) * 1586.906
    assert together == pytest.approx(1038.87, rel=1e-4)
    run, source = _run("gpt-fast llama2-7b int4 g32")
    split = decode_step_split(run, source, context=105)
    assert split["weights GB/s"] == pytest.approx(together, rel=0.002)
    assert split["weights GB/s"] > 994


def test_a_compiled_rows_step_is_its_compiled_kernels():
    """Review (wt38_review): a decode row stating compiled (torch.compile's kernels, no graphs: simulate --compile)
    was split as an eager step: the MI210's 26.63 ms of eager ops a token beside 12.6 ms of kernels, where the row's
    own figure (decode_run) is 12.0 ms a token; and validate/eager_rows.py listed it as an eager row. Now the split
    is the compiled step's (no host term; the layer norms inside the residual adds' kernels: fewer launches), and
    adds up to the row's figure (its 8-token prefill within 1%: eager since session 39, as generate_simp.py compiles
    decode_one_token alone, 26.6 ms of host-bound ops in a 2.4 s run; within 0.5% while it was priced compiled)."""
    from reports.published_runs import decode_run
    from validate.eager_rows import eager_rows

    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("rocm-torch-compile")}
    source = data["sources"]["rocm-torch-compile"]
    compiled = runs["rocm-torch-compile open-llama-7b bf16 compile default mi210"]
    eager = runs["rocm-torch-compile open-llama-7b bf16 eager mi210"]
    split = decode_step_split(compiled, source, context=8 + 100)
    assert "host (eager ops, alongside)" not in split
    assert split["launches"] < decode_step_split(eager, source, context=108)["launches"]
    step = sum(v for k, v in split.items() if k != "weights GB/s")
    assert step == pytest.approx(1 / decode_run(compiled, source, "kernels"), rel=0.01)
    assert [r["run"] for r in eager_rows() if r["run"] in runs] == [eager["id"]]


def test_a_training_step_splits_into_its_kernels():
    """--training (issue 18, fourth round): Narayanan et al.'s 7.5B row, its first stage's kernels
    over the step add up to the step's compute less the launches, and its GEMMs run at the A100's
    sustained (power-limited) fp16 efficiency, 0.806 (FlagPerf's fp16 soak; bf16's is 0.827), or below,
    their bytes bounding the attention's."""
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout, ParallelEstimate
    from reports.published_runs import gpt
    from validate.time_breakdown import train_step_kernels

    layout = Layout(tp=4, dp=32, microbatches=1, framework="megatron")
    workload = Workload(seq_len=2048, batch=16, dtype="fp16", impl="megatron", recompute="full")
    step, rows = train_step_kernels(ParallelEstimate(gpt("gpt-7.5b", 32, 4096, 36), workload, layout),
                                    load_hardware("a100-80gb"))
    kernels = sum(seconds for _, seconds, _ in rows)
    assert 0.99 * step["compute_seconds"] < kernels < step["compute_seconds"]  # launches: 0.013 s
    gemms = {label: efficiency for label, _, efficiency in rows if label.startswith("GEMM")}
    assert gemms["GEMM 32768x4096x4096"] == pytest.approx(0.806, abs=0.003)  # 0.869 at the burst MAMF
    assert all(0.5 < e <= 0.806 + 1e-9 for e in gemms.values())
    assert gemms["GEMM 2048x2048x128 x128"] < 0.7  # attention's batched products: their bytes
    assert "memory-bound kernels" in dict((label, s) for label, s, _ in rows)


def test_every_pipelined_published_row_prints_its_split(capsys):
    """--training also prints each pipelined row of Narayanan et al.'s Table 1 (6) and
    Korthikanti et al.'s Table 5 (3 models, two settings each), with its pipeline exchange."""
    from validate.time_breakdown import pipelined_splits

    pipelined_splits()
    lines = capsys.readouterr().out.splitlines()
    steps = [line for line in lines if " step " in line]
    exchanges = [line for line in lines if line.startswith("  pp = sends ")]
    assert len(steps) == len(exchanges) == 12
    assert sum(line.startswith("Narayanan ") for line in steps) == 6
    assert all("gradient accumulation" in line for line in steps)
    # sequence parallelism sends its shard and gathers nothing
    present = [exchange for step, exchange in zip(steps, exchanges) if " present " in step]
    assert len(present) == 3 and all(" + gathers 0.000 " in line for line in present)


def test_the_script_prints_one_line_for_every_published_run(capsys):
    """`python validate/time_breakdown.py` walks every run of published_runs.json: one line each,
    the GPU-hours rows in hours (they have no tokens/s figure; the script stopped at them)."""
    from reports.published_runs import other_runs_data
    from validate.time_breakdown import main

    main()
    lines = capsys.readouterr().out.strip().splitlines()
    runs = other_runs_data()["runs"]
    assert [line.split(": published")[0] for line in lines] == [run["id"] for run in runs]
    lightning = [line for line in lines if line.startswith("megatron-bridge-moe 26.08 nemotron-3.5-lightning")]
    # 38,906 before session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv, wt43_review)
    assert lightning and "ours 38,941 (kernel model)" in lightning[0]  # its preset since session 24 (40,527 before
    # session 41's HybridEP at its README's GB200 rates, layout/hybridep_rates.py; 40,020
    # before session 27's in-node all-to-all ceiling, 39,444 before session 30's Mamba projections in MXFP8,
    # 41,877 before session 31's loss traffic, 41,230 before session 34's per-expert MXFP8 casts)
    assert not [line for line in lines if "not expressible" in line and line.startswith("megatron-bridge-moe")]
    v4 = [line for line in lines if line.startswith("megatron-bridge-moe 26.08 deepseek-v4-flash mxfp8 128xgb200")]
    assert v4 and "ours 6,415 (kernel model)" in v4[0]  # its preset and recipe since session 24 (6,637 before
    # session 41's HybridEP rates; 6,718
    # before the in-node all-to-all ceiling, 6,654 before session 31's loss traffic)
    mxfp8 = [line for line in lines if line.startswith("megatron-bridge-moe 26.08 deepseek-v3 mxfp8 256xgb200")]
    assert mxfp8 and "not expressible" not in mxfp8[0]  # --fp8 mxfp8 (costmodel/layout/fp8.py)
    hours = [line for line in lines if line.startswith("gpu-hours-llama2 7b")]
    assert hours and "published 184,320 GPU-hours" in hours[0]


def test_one_published_row_prints_its_published_step_beside_the_split(capsys):
    """--row ID: the row's published step (global batch x sequence over the GPUs, over the
    published tokens a second a GPU) above the kernel model's split. GPT-OSS 120B 26.04.01 on 64
    GB200: 1,280 x 4,096 / 64 = 81,920 tokens a GPU a step at 16,640 a second, 4.923 s; the recipe's
    moe_a2a_overlap hides the all-to-all of the combined 1F1B's paired steps: with no pipeline the
    first forward and the last backward of its 5 micro-batches run alone, a fifth exposed, and in the
    paired layers the compute beside HybridEP's kernels runs on 116 of GB200's 148 SMs (ep 0.137 s
    of 0.42 exposed; 0.122 of 0.37 before the NVLink all-to-all's 640 GB/s ceiling, nccl_facts.json). The same recipe's 64 B200 row (EP 8, eight nodes) publishes 81,920 / 13,568 = 6.038
    s, and the model exposes all its all-to-all there."""
    from validate.time_breakdown import published_step_seconds, row_breakdowns

    gb200, b200 = ("megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xgb200",
                   "megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xb200")
    data = other_runs_data()
    runs = {run["id"]: run for run in data["runs"]}
    step = {key: published_step_seconds(runs[key], data["sources"][key.split()[0]])
            for key in (gb200, b200, "llama3 405b 8k GPUs")}
    assert step[gb200] == 81920 / 16640
    assert step[b200] == 81920 / 13568
    assert step["llama3 405b 8k GPUs"] is None  # published in TFLOP/s
    row_breakdowns([gb200, b200])
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if "; published step " in line]
    assert [line.split(":")[0] for line in heads] == [gb200, b200]
    assert heads[0].endswith("tp 1 pp 1 dp 64 ep 64, micro-batch 4 x 5, gb200; published step 4.923 s")
    assert heads[1].endswith("tp 1 pp 1 dp 64 ep 8, micro-batch 4 x 5, b200; published step 6.038 s")
    splits = [line for line in lines if " step " in line and " = compute " in line]
    assert len(splits) == 2 and " ep 0.137 " in splits[0] and " ep 0.372 " in splits[1]


def test_an_unknown_row_is_one_sentence_and_exit_status_2(monkeypatch, capsys):
    from costmodel.config import ConfigError
    from validate.time_breakdown import row_breakdowns

    with pytest.raises(ConfigError, match="no published training or decoding row is named 'nope'"):
        row_breakdowns(["nope"])
    for arguments in (["--row", "nope"], ["--row"]):
        code, _, err = run_script(SCRIPT, arguments, monkeypatch, capsys)
        assert code == 2 and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_a_row_read_every_layer_splits_its_windows():
    """Review (wt40_review): lit-gpt d16f924d's row (a GPU read in every layer, wt40_litgpt) printed its host as
    'alongside' the step (the one-window rule: max(kernels, host), 18.46 ms) where the row is timed a window a layer
    (generate_windows.layer_windows_seconds): 18.69 ms a step, what `published` computes (53.52 tokens/s). The
    split now names the rule and carries the windowed step; 982abcbc (no read in the forward) keeps 'alongside'."""
    from reports.published_runs import decode_run

    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("litgpt-quantize")}
    source = data["sources"]["litgpt-quantize"]
    read = runs["litgpt-quantize d16f924d falcon-7b bf16 a100-40gb"]
    split = decode_step_split(read, source, context=5 + 128)
    assert "host (eager ops, alongside)" not in split
    assert split["host (eager ops, a window a layer)"] == pytest.approx(2600 * 7.1e-6)  # 32 x 80 + 40 ops
    assert split["step (its windows)"] == pytest.approx(1 / decode_run(read, source, "kernels"), rel=1e-3)
    assert split["step (its windows)"] > split["host (eager ops, a window a layer)"]
    plain = decode_step_split(runs["litgpt-quantize 982abcbc falcon-7b bf16 a100-40gb"], source, context=5 + 128)
    assert "host (eager ops, alongside)" in plain and "step (its windows)" not in plain


def test_a_decoding_row_prints_its_step_split(capsys):
    """--row took training rows only (session 37's brief named it for decoding rows): a decoding row prints its line
    of the listing. optimum's cuda-old row at batch 16: the int4 weight read once a row (AutoGPTQ v0.4.2's grid z =
    batch, tests/test_gptq_linear_ops.py), 16 x its one-row GEMMs, and the host's 5,167 ops at the A100's 7.1 us
    (4,879 under transformers 5.24's count until wt41_hfgen counted the source's assumed 4.32.1: 34.64 -> 36.69 ms)."""
    from validate.time_breakdown import row_breakdowns

    row_breakdowns(["optimum-gptq-bench llama2-13b gptq-cuda-old batch 16 512/512 a100"])
    line = capsys.readouterr().out.strip()
    assert line.startswith("optimum-gptq-bench llama2-13b gptq-cuda-old batch 16 512/512 a100: published 192.48 ms")
    assert "weight GEMMs 110.73 ms" in line and "host (eager ops, alongside) 36.69 ms" in line


def test_help_and_an_unknown_option_print_the_usage_instead_of_the_whole_report(monkeypatch, capsys):
    """--help printed nothing of its own and ran every published run's report; an unknown option
    did the same. Now: the usage line, exit 0 for --help and 2 for a mistyped option."""
    code, out, _ = run_script(SCRIPT, ["--help"], monkeypatch, capsys)
    assert code == 0 and out.startswith("usage: python validate/time_breakdown.py")
    code, out, err = run_script(SCRIPT, ["--trainig"], monkeypatch, capsys)
    # restated in session 39 (wt39_user2): the option it did not know first, then the usage
    assert code == 2 and err.startswith("unknown option '--trainig'. usage:") and out == ""


def test_a_gpu_hours_row_prints_its_mean_rate_beside_ours(capsys):
    """--row on a GPU-hours row raised KeyError (published_tflops_per_gpu) before session 38 (wt38_unseent2): it now
    prints the published hours' mean rate, tokens / (GPU-hours x 3,600) a GPU, beside the kernel model's. Olmo 3 7B:
    5.93e12 / (234,000 x 3,600) = 7,039 tokens/s a GPU; ours/published is the row's published hours over ours."""
    from validate.time_breakdown import row_breakdowns

    row_breakdowns(["gpu-hours-olmo3 7b 5.93T tokens"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gpu-hours-olmo3 7b 5.93T tokens: tp 1 pp 1 dp 256 ep 1, micro-batch 2 x 1, h100-sxm"
    assert lines[1].startswith("gpu-hours-olmo3 7b 5.93T tokens: published 7,039 tokens/s per GPU (the published "
                               "GPU-hours' mean), ours 10,236 (1.45x); step ")


def test_a_rows_breakdown_prices_its_tp_overlap_as_published_does(capsys):
    """--row printed MLPerf GPT-3 rows 5-8% faster than `published` before session 40 (wt40_unseent): train_setup's
    flat Overlap.tp 1 hid the TP collectives whole, where `published` prices the recipe's tp_comm_overlap as TE's
    userbuffers ops (layout/ub_overlap.py). Both now take reports.published_runs.kernel_options: the line's figure is
    train_tokens' (MLPerf v3.0's 512-GPU GPT-3: 787 tokens/s a GPU, 1.16x, with TP 0.277 s exposed; 842, 1.24x, before)."""
    from reports.published_runs import train_tokens
    from validate.time_breakdown import row_breakdowns

    run_id = "mlperf-v3.0-nvidia gpt3-175b 512xh100"
    run, source = _run(run_id)[0], other_runs_data()["sources"]["mlperf-v3.0-nvidia"]
    row_breakdowns([run_id])
    line = capsys.readouterr().out.splitlines()[1]
    ours = train_tokens(run, source, "kernels")
    # 787, 1.16x before session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv, wt43_review)
    assert line.startswith(f"{run_id}: published 677.97 tokens/s per GPU, ours {ours:,.0f} (1.17x)")
    assert "ours 791 (1.17x)" in line and " + tp 0.277 + " in line


def test_leaves_split_a_rows_kernels_by_leaf_and_a_mixers_ssd_kernels_by_name(monkeypatch, capsys):
    """--row ID --leaves (session 45, wt45_hybrid): the same first-stage kernels by leaf path, a Mamba-2 mixer's
    one-pass SSD kernels each under its name. Nemotron 3 Nano 26.04.01 on 8 GB200 (micro-batch 2 x 32, 23 Mamba-2
    layers): _state_passing_fwd runs in the forward on the fp32 chunk states, 128 chunks x 4,096 x 128 =
    67,108,864 values read (4 bytes) and written (2), plus the final fp32 state (2 x 4,096 x 128 x 4), 406,847,488
    bytes, and again in the backward's recomputation with fp32 out, 541,065,216: 947,912,704 bytes a layer and
    micro-batch, x 23 x 32 over the GB200's sustained 6.4 TB/s (0.8 x 8), 0.109 s. The leaves and the FP8 casts sum to
    the kernels' total the split prints."""
    from validate.time_breakdown import row_breakdowns

    row_id = "megatron-bridge-moe 26.04.01 nemotron-3-nano mxfp8 8xgb200"
    row_breakdowns([row_id], leaves=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("micro-batch 2 x 32, gb200; published step 16.000 s")
    start = lines.index("  by leaf (the kernels above, the FP8 casts apart):")
    leaves = {line[14:]: float(line[:10]) for line in lines[start + 1:]}
    assert round(947_912_704 * 23 * 32 / 6.4e12, 3) == 0.109
    assert leaves["decoder.mamba_layer.mamba.mamba _state_passing_fwd"] == 0.109
    assert {"decoder.moe_layer.moe.experts", "decoder.mamba_layer.mamba.mamba", "head.lm_head"} <= set(leaves)
    total = float(next(line for line in lines if line.startswith("  kernels ")).split()[1])
    casts = float(next(line for line in lines if line.endswith("  FP8 casts")).split()[0])
    assert abs(sum(leaves.values()) + casts - total) < 0.03
    code, out, err = run_script(SCRIPT, ["--leaves"], monkeypatch, capsys)
    assert code == 2 and out == "" and err.startswith("--leaves splits the rows --row names: name one.")


def test_leaves_on_a_decoding_row_is_refused(monkeypatch, capsys):
    """--leaves splits a training step's kernels; on a decoding row it was ignored (the row's step printed, exit 0)."""
    code, out, err = run_script(SCRIPT, ["--row", "gpt-fast llama2-7b bf16", "--leaves"], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.startswith("--leaves splits a training row's kernels by leaf; 'gpt-fast llama2-7b bf16' is a decoding "
                          "row: drop --leaves for its step's split.")
