"""simulate's time options (issue 18): CUDA graphs, quantized weights read as stored, and the
kernel-level time model behind --time-model kernels."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import Workload
from costmodel.hardware import Efficiency, Hardware, load_hardware
from costmodel.presets import load_preset
from costmodel.roofline import Roofline, simulate_inference

LLAMA_MATRICES = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # the weights a layer multiplies by


def test_cuda_graphs_remove_the_per_block_overhead_of_decode_steps_only():
    cfg, hw = load_preset("llama2-7b"), load_hardware("a100-80gb")
    eager = Roofline(cfg, hw, "bf16", kv_cache="static")
    graphed = Roofline(cfg, hw, "bf16", kv_cache="static", cuda_graphs=True)
    # Active blocks of an eager decode step: 11 a layer (two norms, QKV, RoPE, scores, softmax,
    # weighted sum, output, MLP, two residual adds), the embedding, the final norm and the head.
    blocks = 32 * 11 + 3
    assert float(eager.decode(1, 205)[1]) - float(graphed.decode(1, 205)[1]) == pytest.approx(blocks * 1e-5)
    assert float(eager.prefill(1, 5)[1]) == float(graphed.prefill(1, 5)[1])  # the prefill runs eagerly


def test_a_layouts_graphed_decode_step_pays_each_kernels_gpu_side_launch():
    """With a layout (KernelStepTime), a decode step under --cuda-graphs drops the per-block
    overhead and pays hardware.graph_kernel_s (1.3 us on an H100) for each kernel a rank launches;
    the roofline, which states no kernels, pays neither."""
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.kernel_step import KernelStepTime
    from costmodel.layout.time import StepTime

    cfg, h100 = load_preset("llama2-7b"), load_hardware("h100-sxm")
    estimate = ParallelEstimate(cfg, Workload(seq_len=205, batch=1, attention="sdpa"), Layout(tp=2), phase="decode")
    eager, graphed = KernelStepTime(estimate, h100), KernelStepTime(estimate, h100, cuda_graphs=True)
    # One rank's kernels: a layer's 14 on one GPU (test_kernel_time) and the dynamic KV cache's
    # append in the QKV leaf, 15; 32 x 15 + the embedding, the final norm and the head. Active
    # blocks: 32 x 9 + 3.
    runs = graphed.part_runs(estimate.stages[0])
    assert sum(runs[key] * n for key, n in graphed.part_kernels.items()) == 32 * 15 + 3
    saved = eager.token()["compute_seconds"] - graphed.token()["compute_seconds"]
    assert saved == pytest.approx((32 * 9 + 3) * 1e-5 - (32 * 15 + 3) * 1.3e-6)
    roof_eager, roof_graphed = StepTime(estimate, h100), StepTime(estimate, h100, cuda_graphs=True)
    assert roof_graphed.part_kernels == {}
    roof_saved = roof_eager.token()["compute_seconds"] - roof_graphed.token()["compute_seconds"]
    assert roof_saved == pytest.approx(sum(roof_eager.part_runs(estimate.stages[0])[k] * blocks
                                           for k, (_, blocks) in roof_eager.part_seconds.items()) * 1e-5)


def test_quantized_weights_are_read_as_stored():
    # int8 (LLM.int8 layout): one byte a weight and an fp32 absmax per output row, instead of 2
    # bytes a weight; the embedding and head stay bf16.
    cfg, hw = load_preset("llama2-7b"), load_hardware("a100-80gb")
    plain = Roofline(cfg, hw, "bf16", Efficiency(1.0, 1.0), kv_cache="static")
    int8 = Roofline(cfg, hw, "bf16", Efficiency(1.0, 1.0), kv_cache="static",
                    quantization={"weight_dtype": "int8"})
    rows = 32 * (3 * 4096 + 4096 + 2 * 11008 + 4096)  # output rows of q, k, v, o, gate, up, down
    saved = 2 * LLAMA_MATRICES - (LLAMA_MATRICES + 4 * rows)
    difference = plain.decode(1, 100)[0].bytes - int8.decode(1, 100)[0].bytes
    assert difference == saved


def test_simulate_takes_the_time_options_and_names_them(capsys):
    args = ["simulate", "--model", "llama2-7b", "--hardware", "A100-80GB", "--prompt", "5", "--gen", "20",
            "--kv-cache", "static", "--cuda-graphs", "--time-model", "kernels", "--weight-dtype", "int4",
            "--weight-group", "32", "--json"]
    assert cli.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    inputs = result["inputs"]
    assert inputs["cuda_graphs"] and inputs["time_model"] == "kernels" and inputs["weight_dtype"] == "int4"
    assert result["decode"]["decode_tokens_per_second"] > 0
    assert cli.main(args[:-1] + ["--weight-dtype", "int3", "--json"]) == 2
    assert "int3" in capsys.readouterr().err


def test_the_kernel_model_and_the_roofline_agree_where_both_are_bandwidth_bound():
    # A batch-1 bf16 decode step reads every weight once: both models are its bytes over the
    # achievable bandwidth, within the few kernels the roofline does not split (norms, RoPE).
    cfg, hw = load_preset("llama2-7b"), load_hardware("a100-80gb")
    roof = simulate_inference(cfg, hw, prompt=5, gen=8, batch=1, kv_cache="static", cuda_graphs=True)
    kern = simulate_inference(cfg, hw, prompt=5, gen=8, batch=1, kv_cache="static", cuda_graphs=True,
                              time_model="kernels")
    assert kern["decode"]["decode_seconds"] == pytest.approx(roof["decode"]["decode_seconds"], rel=0.02)


def test_a_given_compute_efficiency_overrides_the_measured_gemm_efficiency():
    from costmodel.kernel_time import KernelTimer

    a100 = load_hardware("a100-80gb")
    assert KernelTimer(a100, "bf16").matmul_efficiency == 0.869  # MAMF, the hardware file's
    assert KernelTimer(a100, "bf16", efficiency=Efficiency(0.5, 0.8)).matmul_efficiency == 0.5
    assert KernelTimer(a100, "fp32").matmul_efficiency == 0.7  # no fp32 measurement: efficiency.compute


def test_training_steps_run_their_gemms_at_the_sustained_efficiency_where_it_is_measured():
    """A training step keeps the GPU saturated: its GEMMs take the hardware file's sustained
    (MSMF) efficiency; where none is measured (the GB200), the burst (MAMF) one x its architecture's
    measured MSMF / MAMF (the B200's, kernel_rates.sustained_efficiency); a given --compute-efficiency
    over both. Inference keeps the burst figure."""
    from costmodel.kernel_time import KernelTimer
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.kernel_step import KernelStepTime

    h100, a100, gb200 = load_hardware("h100-sxm"), load_hardware("a100-80gb"), load_hardware("gb200")
    assert KernelTimer(h100, "bf16").matmul_efficiency == 0.803  # MAMF: a burst at the boost clock
    assert KernelTimer(h100, "bf16", sustained=True).matmul_efficiency == 0.716  # MSMF, 708.5 of 989
    assert KernelTimer(h100, "bf16", matmul_dtype="fp8", sustained=True).matmul_efficiency == 0.651
    # none measured: MAMF x the B200's one-run MSMF / MAMF
    assert KernelTimer(gb200, "bf16", sustained=True).matmul_efficiency == pytest.approx(0.729 * 1456.3 / 1770.9)
    assert KernelTimer(a100, "bf16").matmul_efficiency == 0.869  # MAMF, 271.2 of 312
    assert KernelTimer(a100, "bf16", sustained=True).matmul_efficiency == 0.827  # power-limited, 258 of 312
    assert KernelTimer(a100, "fp16", sustained=True).matmul_efficiency == 0.806  # fp16's soak, 251.5 (FlagPerf)
    assert KernelTimer(h100, "bf16", efficiency=Efficiency(0.5, 0.8), sustained=True).matmul_efficiency == 0.5
    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="flash"), Layout(dp=8))
    step = KernelStepTime(estimate, h100)
    assert step.timer.sustained and step.timer.matmul_efficiency == 0.716
    # The same layout and GEMMs on a copy of the file without the sustained figure: its GEMMs at the
    # burst rate x the H200's one-run MSMF / MAMF (0.803 x 708.5 / 841.9 = 0.676, under the file's
    # 0.716: a slower step); without an architecture too, at the burst rate: a faster step.
    unstated = {k: v for k, v in h100.to_dict().items() if k != "sustained_matmul_efficiency"}
    hopper = KernelStepTime(estimate, Hardware.from_dict(unstated, "h100-unstated"))
    assert hopper.timer.matmul_efficiency == pytest.approx(0.803 * 708.5 / 841.9)
    assert hopper.step()["seconds"] > step.step()["seconds"]
    burst = Hardware.from_dict({k: v for k, v in unstated.items() if k != "architecture"}, "h100-burst")
    assert KernelStepTime(estimate, burst).timer.matmul_efficiency == 0.803
    assert KernelStepTime(estimate, burst).step()["seconds"] < step.step()["seconds"]


def test_full_recomputation_reruns_the_forwards_tensor_parallel_collectives():
    """Megatron-LM's checkpointing re-runs each layer's forward in the backward, its
    tensor-parallel collectives with it: under full recomputation a micro-batch's exposed tensor-
    parallel time gains the row-parallel outputs' all-reduces (2 a layer), or under sequence
    parallelism their reduce-scatters and the column-parallel inputs' all-gathers; selective
    recomputation (the attention core) and no recomputation add none. Both time models."""
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.kernel_step import KernelStepTime
    from costmodel.layout.time import StepTime

    cfg, a100 = load_preset("llama2-7b"), load_hardware("a100-80gb")
    def step(recompute: str, sp: bool = False, model=StepTime):
        workload = Workload(seq_len=2048, recompute=recompute, attention="flash")
        return model(ParallelEstimate(cfg, workload, Layout(tp=4, sp=sp, framework="megatron")), a100)
    for model in (StepTime, KernelStepTime):
        full, none, selective = step("full", model=model), step("none", model=model), step("selective", model=model)
        stage = full.estimate.stages[0]
        boundary = full.estimate.numbers["boundary"]
        assert boundary == 2048 * 4096 * 2  # the layer's output, bf16
        assert full.estimate.recomputed_collectives(stage) == [("all_reduce", 2 * 32, boundary)]
        assert none.estimate.recomputed_collectives(stage) == selective.estimate.recomputed_collectives(stage) == []
        rerun = full.collective("tp", "all_reduce", 2 * 32 * boundary, 2 * 32)
        assert rerun > 0
        assert full.stage(stage)["tp"] - none.stage(stage)["tp"] == pytest.approx(rerun, rel=1e-12)
        with_sp = step("full", sp=True, model=model)
        assert with_sp.estimate.recomputed_collectives(stage) == [("reduce_scatter", 2 * 32, boundary),
                                                                  ("all_gather", 2 * 32, boundary)]


def test_autocast_moves_each_parameter_once_a_micro_batch_each_way_and_accumulates_in_fp32():
    """torch.autocast with fp32 parameters (PyTorch Lightning's precision "bf16", FlashAttention-2's
    training runs): each micro-batch casts a weight (read 4, write 2 bytes) and its gradient back
    (read 2, write 4), and the second micro-batch on adds into the fp32 .grad (read 8, write 4)."""
    from costmodel.config import ConfigError
    from costmodel.precision import autocast_bytes_per_parameter

    assert autocast_bytes_per_parameter(1, 2) == 12  # one micro-batch: the two casts only
    assert autocast_bytes_per_parameter(3, 2) == 3 * 12 + 2 * 12
    assert autocast_bytes_per_parameter(8, 2) == 180  # FlashAttention-2's 1.3B at 2k: 8 micro-batches
    assert autocast_bytes_per_parameter(16, 2) == 372  # its 2.7B at 2k: 16
    with pytest.raises(ConfigError, match="16-bit"):
        autocast_bytes_per_parameter(4, 4)  # fp32 activations: autocast casts nothing
    with pytest.raises(ConfigError, match="micro-batch"):
        autocast_bytes_per_parameter(0, 2)


@pytest.mark.parametrize("time_model", ["roofline", "kernels"])
def test_autocast_adds_its_casts_to_the_step_under_both_time_models(time_model):
    from costmodel.config import ModelConfig
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.timing import step_time

    # An odd GPT (hidden 96, 3 heads, 5 layers, vocabulary 99, 37 positions, tied, with biases):
    # 12 L d^2 + 13 L d + V d + n d + 2 d parameters.
    cfg = ModelConfig(name="odd", family="gpt", vocab_size=99, d_model=96, n_heads=3, d_ff=384,
                      n_decoder_layers=5, max_positions=37, position="learned", norm="layernorm",
                      activation="gelu", dropout=0.1)
    params = 12 * 5 * 96**2 + 13 * 5 * 96 + 99 * 96 + 37 * 96 + 2 * 96
    assert params == 572448
    estimate = ParallelEstimate(cfg, Workload(seq_len=37, batch=2, dtype="bf16", attention="flash"),
                                Layout(dp=2, zero=1, microbatches=3))
    hardware = load_hardware("a100-80gb")
    plain = step_time(estimate, hardware, time_model=time_model).step()
    cast = step_time(estimate, hardware, time_model=time_model, autocast=True).step()
    # 3 micro-batches: 60 bytes a parameter, at 0.8 of the A100's 2,039 GB/s.
    expected = params * 60 / (2.039e12 * 0.8)
    assert plain["autocast_seconds"] == 0.0
    assert cast["autocast_seconds"] == pytest.approx(expected, rel=1e-12)
    # and the embedding's zeroed dense gradient in fp32, not bf16 (costmodel/embedding_grad.py): (99 + 37) x 96 x 2 more
    # bytes each micro-batch
    embedding = 3 * (99 + 37) * 96 * 2 / (2.039e12 * 0.8)
    assert cast["seconds"] - plain["seconds"] == pytest.approx(expected + embedding, rel=1e-9)
    assert cast["compute_seconds"] == plain["compute_seconds"]


def test_flash_attention_2s_runs_cast_their_weights_as_lightning_runs_them():
    """FlashAttention-2's Table 1 runs (published_runs.json: precision bf16 under Lightning, 8
    micro-batches of 8 at 2k for the 1.3B): 1,315,737,600 parameters x 180 bytes a step."""
    from costmodel.layout.timing import step_time
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    source = data["sources"]["flash-attention-2"]
    assert source["autocast"] is True
    run = next(r for r in data["runs"] if r["id"] == "flash-attention-2 gpt3-1.3b 2k")
    estimate, hardware, options = train_setup(run, source)
    assert options == {"autocast": True} and estimate.layout.microbatches == 8
    step = step_time(estimate, hardware, time_model="kernels", **options).step()
    assert step["autocast_seconds"] == pytest.approx(1_315_737_600 * 180 / (2.039e12 * 0.8), rel=1e-12)
