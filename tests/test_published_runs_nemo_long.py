"""NeMo's long-sequence tables among the published runs (costmodel/published_runs.json sources
"nemo-long-b200" and "nemo-long-h100", session 26): each row's With CP layout as the page prints it,
the setup train_setup builds from it, and the model FLOPs the published TFLOP/s divide."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data

# NVIDIA/NeMo docs/source/performance/performance_long_sequence.md at 19fadb67b0: sequence (K), batch
# size, TP, PP, DP, CP, TFLOP/s per GPU of the With CP columns; GPUs = TP x PP x DP x CP (the B200
# table's # of GPUs as first printed at 14d427f575: 2-256)
B200 = {8: (512, 1, 1, 2, 1, 1671), 16: (256, 1, 1, 4, 1, 1717), 32: (128, 1, 1, 4, 2, 1624),
        64: (64, 1, 1, 4, 4, 1600), 128: (32, 2, 1, 4, 4, 1588), 256: (16, 4, 1, 4, 4, 1590),
        512: (8, 4, 1, 4, 8, 1619), 1024: (4, 4, 1, 4, 16, 1608)}
H100 = {4: (1024, 1, 1, 4, 1, 768), 8: (512, 1, 2, 4, 1, 730), 16: (256, 2, 1, 8, 1, 660),
        32: (128, 2, 1, 8, 2, 610), 64: (64, 4, 1, 8, 2, 574), 128: (32, 4, 1, 8, 4, 555),
        256: (16, 4, 1, 8, 8, 549), 512: (8, 8, 1, 4, 16, 549), 1024: (4, 8, 1, 4, 32, 536)}
ROWS = {**{f"nemo-long-b200 llama3-8b {k}k {v[1] * v[2] * v[3] * v[4]}xb200": (k, v) for k, v in B200.items()},
        **{f"nemo-long-h100 llama2-7b {k}k {v[1] * v[2] * v[3] * v[4]}xh100": (k, v) for k, v in H100.items()}}


def _setup(run_id: str):
    from reports.published_runs import train_setup

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return run, train_setup(run, data["sources"][run_id.split()[0]])


@pytest.mark.parametrize("run_id", sorted(ROWS))
def test_each_long_sequence_row_is_its_printed_layout(run_id):
    """Micro-batch 1, so Batch Size / DP micro-batches; the ring CP; sequence parallelism where TP > 1;
    the vocabulary padded to 128 x TP; delayed scaling with FP8 parameters on the B200 (NeMo v2.3.0rc2's
    bf16_with_fp8_mixed) and bf16 weights with an fp32 reduce on the H100 (the 24.03.01 launcher file);
    the TP communication exposed, the parameter gathers hidden; TFLOP/s in NeMo's dense convention."""
    k, (batch, tp, pp, dp, cp, tflops) = ROWS[run_id]
    run, (estimate, hardware, options) = _setup(run_id)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    b200 = run_id.startswith("nemo-long-b200")
    assert run["published_tflops_per_gpu"] == tflops and run["gpus"] == tp * pp * dp * cp
    assert (layout.tp, layout.pp, layout.dp, layout.cp, layout.sp) == (tp, pp, dp, cp, tp > 1)
    assert (workload.seq_len, workload.batch, layout.microbatches) == (k * 1024, 1, batch // dp)
    assert (workload.recompute, layout.cp_rotate, layout.fp8, layout.zero) == ("none", "ring", "delayed", 1)
    assert (layout.fp8_param_gather, layout.grad_reduce_dtype) == ((True, "bf16") if b200 else (False, None))
    assert cfg.max_positions >= k * 1024 and hardware.name == ("b200" if b200 else "h100-sxm")
    unpadded, multiple = (128256, 128 * tp) if b200 else (32000, 128 * tp)
    assert cfg.vocab_size == -(-unpadded // multiple) * multiple
    hidden = options.pop("overlap")
    assert (hidden.tp, hidden.params, hidden.dp) == (0.0, 1.0, 2 / 3)
    # cuDNN at its 2024 release on the H100 rows (NeMo 24.03.01; kernel_facts.json "cudnn-9.1")
    assert options == {"autocast": False, "attention_kernel": "cudnn" if b200 else "cudnn-9.1"}
    assert other_runs_data()["sources"][run_id.split()[0]]["flops_convention"] == "dense"


def test_the_model_flops_are_nemos_formula():
    """NeMo's llama2/llama3 FLOPs (nemo/utils/flops_formulas.py at v2.3.0: per sample s L h^2 (12 +
    12 g/a + 18 f/h + 12 s/h) + 6 s V h, every (query, key) pair) against the step's dense model FLOPs,
    exactly at TP 1, where no padding enters the vocabulary: Llama 3 8B at 8K, batch 512, and Llama 2
    7B at 4K, batch 1,024."""
    from costmodel.layout.timing import step_time

    def nemo(batch: int, s: int, layers: int, h: int, kv_heads: int, heads: int, ffn: int, vocab: int) -> int:
        per_layer = 12 * h * h + 12 * h * h * kv_heads // heads + 18 * ffn * h + 12 * s * h
        return batch * s * (layers * per_layer + 6 * vocab * h)

    cases = {"nemo-long-b200 llama3-8b 8k 2xb200": nemo(512, 8192, 32, 4096, 8, 32, 14336, 128256),
             "nemo-long-h100 llama2-7b 4k 4xh100": nemo(1024, 4096, 32, 4096, 32, 32, 11008, 32000)}
    assert cases["nemo-long-b200 llama3-8b 8k 2xb200"] == 242_904_108_808_273_920
    for run_id, flops in cases.items():
        _, (estimate, hardware, options) = _setup(run_id)
        step = step_time(estimate, hardware, time_model="kernels", flops_convention="dense", **options).step()
        assert step["model_flops"] == flops, run_id
