"""Published training runs added from Megatron-LM's own README (Megatron-Core r0.8.0's weak-scaling
table on H100, the 2021 GPT-3 175B example) and NeMo AutoModel's performance summary (issue 18):
each row is its source's figures and layout, and the command a user types gives its number."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import Workload
from reports.published_runs import other_runs_data


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


# Megatron-LM README's weak-scaling table of Megatron-Core r0.8.0 on H100 (images/model_table.png at
# f2e5db40, 2024-07-15), typed from the image: (heads, hidden, layers, TP, PP, DP, GPUs, batch,
# per-GPU teraFLOP/s, MFU %, the 'Model size' column in billions); vocabulary 131,072, sequence 4,096.
MEGATRON_CORE_R080 = {
    "megatron-core-r0.8.0 gpt-1.7b 48xh100": (16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 41, 1.7),
    "megatron-core-r0.8.0 gpt-7.1b 96xh100": (32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 47, 7.1),
    "megatron-core-r0.8.0 gpt-16b 192xh100": (48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 49, 16),
    "megatron-core-r0.8.0 gpt-32b 384xh100": (56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 46, 32),
    "megatron-core-r0.8.0 gpt-70b 768xh100": (64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 42, 70),
    "megatron-core-r0.8.0 gpt-119b 1536xh100": (80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 43, 119),
    "megatron-core-r0.8.0 gpt-177b 2304xh100": (96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 44, 177),
    "megatron-core-r0.8.0 gpt-314b 3072xh100": (128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 48, 314),
    "megatron-core-r0.8.0 gpt-462b 6144xh100": (144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 47, 462),
}


@pytest.mark.parametrize("run_id", sorted(MEGATRON_CORE_R080))
def test_each_megatron_core_r080_row_is_the_readmes_table(run_id):
    """The row holds the table's figures and layout; the built model is a GPT of its sizes with an
    untied output layer, whose parameter count is the table's 'Model size' within 3.5% and nearer
    it than the tied one's (1.75B and 1.49B for '1.7B', 7.13B and 6.60B for '7.1B'); the TFLOP/s are model FLOPs of the 989
    TFLOP/s bf16 peak (the MFU column); the pipelined rows interleave one layer a chunk."""
    from costmodel.estimation import Estimate
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources["megatron-core-r0.8.0"]
    heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu, billions = MEGATRON_CORE_R080[run_id]
    assert (run["published_tflops_per_gpu"], run["published_mfu_percent"]) == (tflops, mfu)
    assert round(100 * tflops / 989) == mfu
    estimate, hardware, options = train_setup(run, source)
    cfg, layout, workload = estimate.cfg, estimate.layout, estimate.workload
    assert (cfg.n_heads, cfg.d_model, cfg.n_layers, cfg.vocab_size, cfg.tie_embeddings) == (
        heads, hidden, layers, 131072, False)
    assert (layout.tp, layout.pp, layout.dp, layout.gpus, layout.zero, layout.sp) == (tp, pp, dp, gpus, 1, tp > 1)
    assert workload.batch * layout.microbatches * layout.dp == batch and workload.seq_len == 4096
    assert (layout.schedule, layout.virtual_stages) == (("interleaved", layers // pp) if pp > 1 else ("1f1b", 1))
    assert layout.microbatches % pp == 0  # r0.8.0's interleaved schedule requires it
    assert (options["overlap"].tp, options["overlap"].pp, options["overlap"].params, hardware.name) == (
        1.0, 1.0, 1.0, "h100-sxm")
    params = Estimate(cfg, Workload(seq_len=8)).total("params")
    tied = Estimate(cfg.replace(tie_embeddings=True), Workload(seq_len=8)).total("params")
    assert params - tied == 131072 * hidden
    assert params == pytest.approx(billions * 1e9, rel=0.035)
    assert abs(params - billions * 1e9) < abs(tied - billions * 1e9)


@pytest.mark.parametrize("run_id", ["megatron-core-r0.8.0 gpt-177b 2304xh100", "megatron-core-r0.8.0 gpt-1.7b 48xh100"])
def test_a_megatron_core_r080_row_is_its_cli_command(run_id, capsys, tmp_path):
    """The row's TFLOP/s, under both time models, are the MFU x peak of the command a user types
    (a ModelConfig file for the untied GPT, the layout and the overlaps of the README's flags)."""
    from costmodel.config import ModelConfig
    from costmodel.hardware import load_hardware
    from reports.published_runs import train_run

    runs, sources = _runs()
    run, source = runs[run_id], sources["megatron-core-r0.8.0"]
    heads, hidden, layers, tp, pp, dp, gpus, batch, *_ = MEGATRON_CORE_R080[run_id]
    config = tmp_path / "gpt.json"
    config.write_text(json.dumps(ModelConfig(
        name=run["model"], family="gpt", vocab_size=131072, d_model=hidden, n_heads=heads, d_ff=4 * hidden,
        n_decoder_layers=layers, max_positions=4096, position="learned", norm="layernorm", activation="gelu",
        dropout=0.1, tie_embeddings=False).to_dict()))
    command = (f"--config {config} --hardware h100-sxm --train --seq-len 4096 --batch 1 --dtype bf16 "
               f"--attention flash --impl megatron --framework megatron --zero 1 --tp {tp} --pp {pp} --dp {dp} "
               f"--global-batch {batch} --param-gather-overlap 1 --overlap-grad-reduce "
               f"--optimizer-step megatron-lm").split()
    if tp > 1:  # (an overlap of a collective the layout lacks is refused: tests/test_smoke32_defects.py)
        command += ["--sp"]
    if pp > 1:
        command += ["--schedule", "interleaved", "--virtual-stages", str(layers // pp), "--pp-overlap", "1"]
    peak = load_hardware("h100-sxm").peak("bf16") / 1e12
    for model in ("roofline", "kernels"):
        # --tp-comm-overlap: the kernel model prices TE's userbuffers op by op (TE's defaults: the README's
        # Megatron-LM names no config); the roofline hides the TP share (costmodel/layout/ub_overlap.py)
        tp_overlap = ([] if tp == 1 else ["--tp-comm-overlap", "te"] if model == "kernels" else ["--tp-overlap", "1"])
        assert cli.main(["simulate", *command, *tp_overlap, "--time-model", model, "--json"]) == 0
        step = json.loads(capsys.readouterr().out)["step"]
        assert train_run(run, source, model) == pytest.approx(step["mfu"] * peak, rel=1e-12)


def test_megatron_lms_gpt3_175b_example_is_its_script():
    """README 'GPT-3 Example' at 152aab30 and examples/pretrain_gpt3_175B.sh: TP 8, PP 16 on 1,024
    A100s (DP 8), micro-batch 1, global batch 1,536, fp16, --checkpoint-activations, Megatron's
    local DDP (gradients reduced after the backward); 'around 32 seconds' an iteration: 96 tokens/s
    a GPU; its 138 teraFLOPs count the recomputed forward (Narayanan's formula gives 137.7)."""
    from costmodel.estimation import Estimate
    from costmodel.published import narayanan_parameters
    from reports.published_runs import train_setup, train_tokens

    runs, sources = _runs()
    run, source = runs["megatron-lm-gpt3 175b 1024 GPUs"], sources["megatron-lm-gpt3"]
    assert run["published_tokens_per_s_per_gpu"] == pytest.approx(1536 * 2048 / (32 * 1024), abs=1e-9)
    hardware_flops = 96 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
    assert round(hardware_flops / 32 / 1024 / 1e12) == run["published_hardware_tflops_per_gpu"]
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.dp, layout.zero, layout.sp, layout.schedule) == (8, 16, 8, 0, False, "1f1b")
    assert (workload.batch, layout.microbatches, workload.dtype, workload.recompute) == (1, 192, "fp16", "full")
    assert (options["overlap"].dp, hardware.name, estimate.cfg.vocab_size) == (0.0, "a100-80gb", 51200)
    params = Estimate(estimate.cfg, Workload(seq_len=8)).total("params")
    assert params == pytest.approx(narayanan_parameters(96, 12288), rel=1e-3)
    assert train_tokens(run, source, "kernels") > 0


def test_automodels_llama3_70b_row_is_its_page_and_its_cli_command(capsys):
    """NeMo AutoModel's performance summary (2013a4dd): Llama3 70B on 64 DGX-H100s, GBS 128, MBS 1,
    GA 4, sequence 8,192, TP 1 PP 1 CP 2, FSDP 32, 18.90 s a step, 866.77 tokens/s a GPU, 389
    model TFLOP/s. The row is `simulate --train ... --dp 32 --cp 2 --compile` (the kernel model
    alone: torch.compile), and the page's 389 is the causal FLOP convention: ours, at its 18.90 s, 389."""
    from reports.published_runs import train_setup, train_tokens

    runs, sources = _runs()
    run, source = runs["automodel llama3.1-70b fsdp32 cp2 compile 64xh100"], sources["automodel"]
    # 18.90 s is rounded to 0.01 s: 866.77 tokens/s is 18.9024 s
    assert run["published_tokens_per_s_per_gpu"] == pytest.approx(128 * 8192 / (18.90 * 64), rel=3e-4)
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.dp, layout.cp, layout.gpus, layout.framework, layout.zero) == (
        1, 1, 32, 2, 64, "fsdp2", 3)
    assert (workload.batch, layout.microbatches, workload.seq_len, workload.recompute) == (1, 4, 8192, "full")
    assert options["compiled"] and hardware.name == "h100-sxm"
    command = ("--model llama3.1-70b --hardware h100-sxm --train --seq-len 8192 --batch 1 --dtype bf16 --attention flash "
               "--impl hf --recompute full --framework fsdp2 --zero 3 --dp 32 --cp 2 --global-batch 128 --compile "
               "--flops-convention causal --json").split()
    assert cli.main(["simulate", *command]) == 0
    step = json.loads(capsys.readouterr().out)["step"]
    assert train_tokens(run, source, "kernels") == pytest.approx(step["tokens_per_second"] / 64, rel=1e-12)
    causal_tflops = step["model_flops"] / (18.90 * 64) / 1e12
    assert round(causal_tflops) == run["published_model_tflops_per_gpu"]
