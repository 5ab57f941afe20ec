"""The host term of an eager training step: the ops one step of a Hugging Face model issues
(kernel_facts.json "eager_training_ops", counted again here with validate/training_ops.py), and
the kernel model's rule that an eager step on a GPU takes the longer of its kernels and those ops
at the hardware's measured op time (layout/kernel_step.KernelStepTime.step,
kernel_time.host_bound_seconds's rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodel.config import Workload
from costmodel.eager_ops import training_step_ops
from costmodel.hardware import load_hardware
from costmodel.kernel_time import kernel_facts
from costmodel.layout.spec import Layout
from costmodel.layout.timing import simulate_training
from costmodel.presets import load_preset

H200_MEASURED = Path(__file__).resolve().parents[1] / "benchmarks" / "h200-measured.json"


def _stated(family: str, attention: str, dtype: str) -> dict:
    entry = next(e for e in kernel_facts()["eager_training_ops"]["implementations"]
                 if (e["family"], e["attention"], e["dtype"]) == (family, attention, dtype))
    return entry["ops"]


def _workload(batch: int, seq_len: int = 128, dtype: str = "fp32", attention: str = "eager") -> Workload:
    return Workload(seq_len=seq_len, batch=batch, dtype=dtype, impl="hf", attention=attention, precision="pure")


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("family", ["gpt2", "llama", "bert"])
def test_the_stated_training_ops_are_what_a_step_dispatches(family, attention):
    """Counted again (fp32 and bf16, batch 1 and 2: per layer two layers less one, the step's own)."""
    pytest.importorskip("transformers")
    from validate.training_ops import counts

    for dtype in ("fp32", "bf16"):
        assert counts(family, attention, dtype) == _stated(family, attention, dtype)


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert"])
def test_the_count_of_a_deeper_wider_model_is_per_layer_times_layers_plus_the_steps(family):
    """training_step_ops at three layers, width 80 and 13 tokens (batch 1 and 3) is the count of that model's step."""
    pytest.importorskip("transformers")
    from validate.training_ops import step_count, tiny_config

    cfg = tiny_config(family, 3, 80)
    for batch in (1, 3):
        assert training_step_ops(cfg, _workload(batch, 13)) == step_count(family, 3, "eager", "fp32", batch, 13, 80)


def test_adamw_foreach_issues_one_op_per_list_and_two_scalar_reads_per_tensor():
    """torch.optim.AdamW(foreach=True)'s second step: 9 foreach ops, the step increment's scalar,
    2 profiler ops, and 2 _local_scalar_dense per parameter (its host-side step counters), so 12 +
    2 x tensors; the single-tensor loop (a CPU's default) 2 + 10 x tensors."""
    torch = pytest.importorskip("torch")
    from validate.gpt_fast_ops import DispatchCounter

    def step_ops(tensors: int, foreach: bool) -> int:
        params = [torch.nn.Parameter(torch.randn(3, 5)) for _ in range(tensors)]
        optimizer = torch.optim.AdamW(params, foreach=foreach)
        for _ in range(2):
            for p in params:
                p.grad = torch.ones_like(p)
            with DispatchCounter() as counter:
                optimizer.step()
        return counter.count

    assert [step_ops(t, True) for t in (1, 4, 10)] == [12 + 2 * 1, 12 + 2 * 4, 12 + 2 * 10]
    assert [step_ops(t, False) for t in (1, 4, 10)] == [2 + 10 * 1, 2 + 10 * 4, 2 + 10 * 10]


def test_gpt2_and_bert_counts_from_the_data():
    """GPT-2 (12 layers): 188 x 12 + 93 at batch 1, 190 x 12 + 95 above; BERT-base 212 x 12 + 74, 217 x 12 + 75;
    Llama-2-7B (32 layers) 268 x 32 + 108. Llama-2-70B's 8 KV heads (repeat_kv: not counted) and an fp16 step: none."""
    gpt2, bert, llama = load_preset("gpt2"), load_preset("bert-base-uncased"), load_preset("llama2-7b")
    assert training_step_ops(gpt2, _workload(1)) == 188 * 12 + 93 == 2349
    assert training_step_ops(gpt2, _workload(8)) == 190 * 12 + 95
    assert training_step_ops(bert, _workload(1)) == 212 * 12 + 74
    assert training_step_ops(bert, _workload(16)) == 217 * 12 + 75
    assert training_step_ops(llama, _workload(1)) == 268 * 32 + 108
    assert training_step_ops(load_preset("llama2-70b"), _workload(1)) is None
    assert training_step_ops(gpt2, _workload(1, dtype="fp16")) is None


def _step(cfg, workload, hardware, **options):
    return simulate_training(cfg, workload, options.pop("layout", Layout(dp=1)), hardware, time_model="kernels",
                             **options)["step"]


def test_an_eager_step_on_the_h200_takes_the_longer_of_kernels_and_host():
    """GPT-2 at 1 x 128 (fp32, eager) on the measured H200: 2,349 ops x module_s_per_op (6.55 us)
    = 15.37 ms, over the kernels' 3.9 ms: host-bound. At 8 x 992 the kernels' 179 ms win."""
    hardware = load_hardware(str(H200_MEASURED))
    gpt2 = load_preset("gpt2")
    small = _step(gpt2, _workload(1), hardware)
    assert small["host"]["ops_per_step"] == 2349
    assert small["host"]["seconds_per_step"] == pytest.approx(2349 * hardware.module_s_per_op, rel=1e-12)
    assert small["seconds"] == small["host"]["seconds_per_step"] > small["host"]["kernels_seconds"]
    assert small["host"]["bound"] and small["host"]["without_host_seconds"] < small["seconds"]
    large = _step(gpt2, _workload(8, 992), hardware)
    assert not large["host"]["bound"] and large["seconds"] == large["host"]["kernels_seconds"]
    # the kernels less their per-block launches: the host's term stands for them
    assert large["seconds"] < large["host"]["without_host_seconds"]


def test_no_host_term_where_the_step_is_not_a_counted_eager_one():
    """Compiled, a GQA model: as before (several GPUs: tests/test_training_host_layouts.py). The h200 preset, whose file states no op's
    time, borrows the measured H200 host's (kernel_facts.json eager_host_op_default) and says so:
    GPT-2's 2,349 ops at 6.545 us, as on the measured file."""
    measured = load_hardware(str(H200_MEASURED))
    gpt2 = load_preset("gpt2")
    assert "host" not in _step(gpt2, _workload(1), measured, compiled=True)
    borrowed = _step(gpt2, _workload(1), load_hardware("h200"))["host"]
    assert borrowed["seconds_per_step"] == 2349 * 6.545241752576789e-06 and borrowed["op_time_borrowed"] is True
    assert _step(gpt2, _workload(1), measured)["host"]["op_time_borrowed"] is False
    assert "host" not in _step(load_preset("llama2-70b").replace(n_decoder_layers=2), _workload(1), measured)


def test_the_findings_table_has_the_18_recorded_training_rows_and_the_small_ones_are_host_bound():
    """validate/training_host_table.py (validate/FINDINGS.md): 6 rows x 3 files; every batch-1 row
    host-bound at h200-measured.json's 6.55 us an op, every larger row bound by its kernels."""
    from validate.training_host_table import table

    rows = [line.split(" | ") for line in table().splitlines()[2:]]
    assert len(rows) == 18
    assert all(row[11] == ("host" if row[2].startswith("1x") else "kernels") for row in rows)
    gpt2 = next(row for row in rows if row[0] == "| _fp32" and row[1] == "gpt2" and row[2] == "1x128")
    assert gpt2[6:9] == ["2,349", "15.4 ms", "15.4 ms"]


#: one micro-batch of GPT-2's training step launches 12 x 18 (a layer) + 3 (embedding) + 1 (final norm) + 2 (head)
#: = 222 kernels a pass (KernelStepTime.part_kernels), 3 passes (forward, backward: KernelStepTime's convention)
GPT2_TRAIN_KERNELS = 3 * (12 * 18 + 3 + 1 + 2)
H200_GRAPH_KERNEL_S = 1.0863289485375085e-06  # benchmarks/h200-measured.json graph_kernel_s


@pytest.mark.parametrize("microbatches", [1, 2])
def test_the_kernels_side_is_the_step_less_its_per_block_launches(microbatches):
    """kernels_seconds is the step without the host term, less every micro-batch's launches (the same step on a
    hardware with no per-block overhead), plus what each kernel keeps on the GPU's side: the file's graph_kernel_s
    a kernel (KernelTimer.stream_seconds, the rule an eager decoding step takes since session 38; before session
    39 a training step dropped it, so its CUDA graph would have been slower than it)."""
    import dataclasses

    hardware = load_hardware(str(H200_MEASURED))
    assert hardware.graph_kernel_s == H200_GRAPH_KERNEL_S
    quiet = dataclasses.replace(hardware, overhead_s_per_block=0.0)
    gpt2, layout = load_preset("gpt2"), Layout(dp=1, microbatches=microbatches)
    with_launches = _step(gpt2, _workload(4, 512), hardware, layout=layout)
    without = _step(gpt2, _workload(4, 512), quiet, layout=layout)["host"]
    stream = microbatches * GPT2_TRAIN_KERNELS * H200_GRAPH_KERNEL_S  # 0.7235 ms a micro-batch
    assert with_launches["host"]["kernels_seconds"] == pytest.approx(without["without_host_seconds"] + stream,
                                                                     rel=1e-12)
    assert with_launches["host"]["without_host_seconds"] > without["without_host_seconds"]
    # GPU-bound: the step is those kernels, and its parts still add up to it
    assert not with_launches["host"]["bound"] and with_launches["seconds"] == with_launches["host"]["kernels_seconds"]
    assert with_launches["host_wait_seconds"] == 0.0
    assert with_launches["compute_seconds"] == pytest.approx(
        without["without_host_seconds"] + stream - with_launches["optimizer_seconds"]
        - with_launches["gradient_accumulation_seconds"], rel=1e-12)


def test_a_host_bound_training_step_is_its_host_s_ops_whatever_its_kernels_keep():
    """GPT-2 at 1 x 128 on the measured H200 is host-bound: its seconds are its 2,349 ops at 6.545 us, as before
    session 39 (its kernels' GPU-side launch cost, 222 x 3 x 1.086 us, only lengthens the kernels' side)."""
    hardware = load_hardware(str(H200_MEASURED))
    small = _step(load_preset("gpt2"), _workload(1), hardware)
    assert small["host"]["bound"] and small["seconds"] == 2349 * hardware.module_s_per_op
    assert small["host_wait_seconds"] == pytest.approx(small["seconds"] - small["host"]["kernels_seconds"], rel=1e-12)


def test_simulate_says_when_an_eager_training_step_is_host_bound():
    """`simulate --train --dp 1` on an A100 file (dispatch_s_per_op 7.1 us): GPT-2 at 1 x 128 in
    fp32 under sdpa issues 197 x 12 + 70 = 2,434 ops, 17.3 ms on the host, over its kernels."""
    from click.testing import CliRunner

    import cli

    args = ["simulate", "--model", "gpt2", "--train", "--dp", "1", "--hardware", "a100-80gb", "--seq-len", "128",
            "--batch", "1", "--dtype", "fp32"]
    result = CliRunner().invoke(cli.cli, args)
    assert result.exit_code == 0, result.output
    assert "host (eager ops)         17.3 ms   (2,434 ops issued on the busiest rank's host" in result.output
    assert "host-bound: 5.28 ms past the kernels)" in result.output  # a part of the step since session 32
    # (6.07 ms before session 33's embedding dense gradient lengthened the kernels: costmodel/embedding_grad.py;
    # 5.98 ms before session 39's kernels kept their GPU-side launch cost, a100-80gb.json's graph_kernel_s 1.34 us
    # a kernel, 3 passes: KernelTimer.stream_seconds)
