"""AMD's gpt-fast rows on one MI210 (published_runs.json "rocm-int8"): ROCm/rocm-blogs
blogs/artificial-intelligence/int8-quantization/README.md at 59e4bc9 (2024-10-03), 'Benchmark Results',
four models in eager, torch.compile and torch.compile + INT8 modes; the mi210 hardware file they run on
(AnandTech's launch table of the datasheet figures; gpu-benches' MI210 stream and graph figures)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from reports.published_decode import decode_run, decode_setup
from reports.published_runs import other_runs_data

#: The blog's table: model -> (Tokens/Second, Memory BW (GB/s)) for eager, compile, compile + INT8.
TABLE = {
    "llama2-7b": ((33.29, 439.97), (88.54, 1170.01), (112.45, 743.31)),
    "llama3-8b": ((32.52, 488.06), (76.88, 1154.01), (110.35, 828.50)),
    "mistral-7b": ((32.68, 464.77), (81.44, 1158.20), (117.05, 832.67)),
    "llama2-13b": ((21.36, 549.01), (44.79, 1151.30), (59.62, 766.58)),
}
MODES = ("bf16 eager", "bf16", "int8")

#: gpt-fast's _get_model_size (the blog's src/generate.py): every child's parameters and buffers but the
#: embedding's, before setup_caches: bf16 (eager and compile) and gpt-fast's int8 layout (int8 weights
#: and a bf16 scale a row on every Linear, the head too; norms bf16).
SIZE_BYTES = {
    "llama2-7b": (13_214_687_232, 6_610_393_600),
    "llama3-8b": (15_009_849_344, 7_508_199_936),
    "mistral-7b": (14_221_320_192, 7_113_742_848),
    "llama2-13b": (25_704_048_640, 12_856_762_880),
}


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"] if r["id"].startswith("rocm-int8 ")}, data["sources"]["rocm-int8"]


def test_every_row_of_the_blogs_table_is_kept_as_published():
    runs, source = _runs()
    assert set(runs) == {f"rocm-int8 {m} {mode}" for m in TABLE for mode in MODES}
    for model, rows in TABLE.items():
        for mode, (tokens_per_s, _) in zip(MODES, rows):
            run = runs[f"rocm-int8 {model} {mode}"]
            assert run["published_tokens_per_s"] == tokens_per_s and run["model"] == model and run["tp"] == 1
            assert run.get("cuda_graphs", True) is (mode != "bf16 eager")
            assert run.get("weight_dtype") == ("int8" if mode == "int8" else None)
    assert (source["hardware"], source["prompt"], source["gen"], source["rate"]) == ("mi210", 6, 200, "end_to_end")


@pytest.mark.parametrize("model", sorted(TABLE))
def test_the_bandwidth_column_is_the_models_bytes_but_the_embedding(model):
    """The blog's Memory BW = gpt-fast's model size x tokens/s / 1e9; the model's weight bytes less the
    bf16 embedding (vocab x d x 2) give every column within the tokens/s rounding (0.005 x the size)."""
    from costmodel.roofline import simulate_inference

    runs, source = _runs()
    for mode, (tokens_per_s, bandwidth) in zip(MODES, TABLE[model]):
        cfg, hardware, s, quantization = decode_setup(runs[f"rocm-int8 {model} {mode}"], source)
        weights = simulate_inference(cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=1, dtype="bf16",
                                     kv_cache="static", cuda_graphs=s["cuda_graphs"], quantization=quantization,
                                     implementation="gpt-fast")["memory"]["weights"]
        size = weights - cfg.vocab_size * cfg.d_model * 2
        assert size == SIZE_BYTES[model][mode == "int8"], mode
        assert size * tokens_per_s / 1e9 == pytest.approx(bandwidth, abs=0.005 * size / 1e9 + 0.005), mode


def test_the_mi210_file_holds_the_launch_tables_figures():
    """AnandTech's table (2022-03-22), MI210 column: 104 CUs at 1700 MHz, FP16 and INT8 matrix 181, FP32
    matrix 45.3, FP32 vector 22.6, 3.2 Gbps HBM2E on 4096 bits (1,638.4 GB/s), 64 GB, 300 W; the
    gpu-benches MI210 read rate and graph kernel that mi250x.json borrows from this GPU."""
    gpu = load_hardware("mi210")
    assert gpu.flops_per_s == {"fp32": 45.3e12, "bf16": 181e12, "fp16": 181e12, "int8": 181e12}
    assert (gpu.vector_flops_per_s, gpu.bandwidth_bytes_per_s) == (22.6e12, 3.2e9 * 4096 / 8)
    assert (gpu.memory_bytes, gpu.sm_count, gpu.clock_mhz, gpu.power_watts) == (64 * 2**30, 104, 1700, 300)
    assert (gpu.gemv_bandwidth_bytes_per_s, gpu.graph_kernel_s) == (1366e9, 2.048e-6)
    assert gpu.gemv_bandwidth_bytes_per_s == load_hardware("mi250x").gemv_bandwidth_bytes_per_s
    assert gpu.dispatch_s_per_op is None  # no per-op host time is published for this host: see the eager rows


@pytest.mark.parametrize("model, layers", [("llama2-7b", 32), ("llama3-8b", 32), ("mistral-7b", 32), ("llama2-13b", 40)])
def test_a_compiled_token_is_the_stream_rate_plus_the_graphs_kernel_gaps(model, layers):
    """The kernel model's compiled bf16 token on the MI210: the roofline's bytes at 0.8 x 1,638.4 GB/s
    moved at 1,366 GB/s instead, plus 2.048 us for each of the token's layers x 10 + 3 kernels (gpt-fast's
    wqkv: Q, K and V one GEMM, kernel_facts.json fused_projections; torch.compile's, session 39: each layer's two
    RMSNorms inside the residual adds' kernels, layers x 12 + 3 eager kernels replayed before). The roofline, which has
    no torch.compile, reads the row uncompiled. The
    prefill is eager (gpt-fast's generate.py compiles decode_one_token; the prefill only with
    --compile_prefill): its layers x 126 + 36 ops at the host time the mi210 file borrows (it states
    none: kernel_facts.json eager_host_op_default, the project's H200 host's 6.545 us)."""
    from costmodel.roofline import simulate_inference

    runs, source = _runs()
    run = runs[f"rocm-int8 {model} bf16"]
    gen, prefill = {}, {}
    assert run["compiled"] and run["eager_prefill"]
    for time_model in ("roofline", "kernels"):
        row = run if time_model == "kernels" else dict(run, compiled=False, eager_prefill=False)
        cfg, hardware, s, quantization = decode_setup(row, source)
        prefill[time_model] = simulate_inference(
            cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=1, dtype="bf16", kv_cache="static",
            cuda_graphs=True, quantization=quantization, implementation="gpt-fast", compiled=s["compiled"],
            eager_prefill=s["eager_prefill"], time_model=time_model)["prefill"]["seconds"]
        gen[time_model] = s["gen"] / decode_run(row, source, time_model) - prefill[time_model]  # the 199 steps
    assert prefill["kernels"] == (layers * 126 + 36) * 6.545241752576789e-06
    assert gen["kernels"] == pytest.approx(gen["roofline"] * 0.8 * 1638.4 / 1366 + 199 * (layers * 10 + 3) * 2.048e-6,
                                           rel=0.0005)


def test_gpt_fasts_mistral_issues_llamas_ops():
    """gpt-fast runs Mistral-7B as one more ModelArgs of its one Transformer (transformer_configs
    'Mistral-7B'), with no window code: Llama's 126 ops a layer and 36 a step in bf16 (113 and 34 in
    fp32), 32 layers, for v0.1 (a 4,096-token window) and v0.3 (none) alike."""
    from costmodel.eager_ops import step_ops
    from costmodel.presets import load_preset

    for name in ("mistral-7b", "mistral-7b-v0.3"):
        cfg = load_preset(name)
        assert step_ops(cfg, "gpt-fast", "bf16", "sdpa", "static") == 32 * 126 + 36 == 4068
        assert step_ops(cfg, "gpt-fast", "fp32", "sdpa", "static") == 32 * 113 + 34 == 3650


def test_the_eager_rows_each_rules_figure_an_op():
    """validate/eager_rows.py: every eager row's ops (Llama-2-13B: 40 x 126 + 36 = 5,076) and the
    seconds an op the overlapped rule (published / ops) and the serial rule ((published - the
    kernel model's CUDA-graph step) / ops) ask of its host; the MI210 file states none itself."""
    from validate.eager_rows import eager_rows

    rows = {r["run"]: r for r in eager_rows()}
    assert {r for r in rows if r.startswith("rocm-int8 ")} == {f"rocm-int8 {m} bf16 eager" for m in TABLE}
    assert rows["rocm-int8 llama2-13b bf16 eager"]["ops"] == 40 * 126 + 36 == 5076
    for model, (eager, _, _) in TABLE.items():
        row = rows[f"rocm-int8 {model} bf16 eager"]
        assert row["published_s"] == 1 / eager[0] and row["dispatch_s_per_op"] is None
        assert row["overlapped_s_per_op"] == pytest.approx(1 / eager[0] / row["ops"], rel=1e-12)
        assert row["serial_s_per_op"] == pytest.approx((1 / eager[0] - row["kernels_s"]) / row["ops"], rel=1e-12)
    assert rows["torchao llama2-7b bf16 eager"]["overlapped_s_per_op"] == pytest.approx(1 / 22.97 / 4068)
    assert rows["torchao llama2-7b fp32 eager"]["ops"] == 3650
