"""The AMD runs of published_runs.json (issue 18): gpt-fast's Llama-2-7B rows on one GCD of an
MI250X, as its README states them, and the measured kernel-level rates the AMD hardware files
time them with (costmodel/hardware/mi250x.json, mi300x.json: their sources)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from reports.published_decode import decode_run, decode_setup
from reports.published_runs import other_runs_data


def _amd_runs() -> tuple[dict, dict]:
    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("gpt-fast-amd ")}
    return runs, data["sources"]["gpt-fast-amd"]


def test_gpt_fasts_amd_bandwidth_column_is_the_models_weight_bytes():
    """The README's Memory Bandwidth column is the model's bytes x its tokens/s: Llama-2-7B's bf16
    weights (6,738,415,616 parameters x 2 bytes) x 76.33 = 1,028.69 GB/s, published 1,028.70 (the
    tokens/s rounded to 0.01: +-0.07 GB/s). The rows' settings: tests/test_published_decode.py."""
    from costmodel.roofline import simulate_inference

    runs, source = _amd_runs()
    cfg, hardware, settings, _ = decode_setup(runs["gpt-fast-amd llama2-7b bf16"], source)
    weights = simulate_inference(cfg, hardware, prompt=settings["prompt"], gen=settings["gen"], batch=1,
                                 dtype="bf16", kv_cache="static", cuda_graphs=True,
                                 implementation="gpt-fast")["memory"]["weights"]
    assert weights == 13_476_831_232
    assert weights * runs["gpt-fast-amd llama2-7b bf16"]["published_tokens_per_s"] / 1e9 == \
        pytest.approx(1028.70, abs=0.07)


def test_the_mi250x_gcd_decodes_at_its_measured_stream_rate_and_graph_gap():
    """The kernel model's bf16 token on one MI250X GCD: the roofline's weight bytes at 0.8 x 1.6 TB/s
    moved instead at gpu-benches' MI210 read rate (1,366 GB/s, the same gfx90a die), plus the HIP
    graph's 2.048 us a kernel (mi210_graph.txt) for each of the token's 32 x 10 + 3 kernels (gpt-fast's
    wqkv: Q, K and V one GEMM, kernel_facts.json fused_projections; compiled, session 39: each layer's two
    RMSNorms inside the residual adds' kernels, 32 x 12 + 3 replayed eager before); no DRAM startup (none resolved
    by that run)."""
    runs, source = _amd_runs()
    run = runs["gpt-fast-amd llama2-7b bf16"]
    gcd = load_hardware("mi250x")
    assert (gcd.gemv_bandwidth_bytes_per_s, gcd.graph_kernel_s, gcd.dram_kernel_startup_s) == (1366e9, 2.048e-6, 0.0)
    (roofline, _), (kernels, prefill) = _steps(run, source, "roofline"), _steps(run, source, "kernels")
    assert kernels == pytest.approx(roofline * (0.8 * 1600) / 1366 + 199 * 323 * 2.048e-6, rel=0.002)
    assert prefill == (32 * 126 + 36) * 6.545241752576789e-06  # eager, at the host time the mi250x borrows


def _steps(run: dict, source: dict, time_model: str) -> tuple[float, float]:
    """A row's 199 decode steps' seconds and its prefill's: gpt-fast compiles decode_one_token and the
    prefill only with --compile_prefill, so the prefill is eager, its 4,068 ops at the host time the
    file states or borrows (kernel_facts.json eager_host_op_default: the project's H200 host's). The roofline, which
    has no torch.compile, reads the row uncompiled (its bytes: the weights'), the kernel model as the row states it
    (compiled, session 39: the steps' fused kernels replayed from the graph, the prefill eager)."""
    from costmodel.roofline import simulate_inference

    if time_model == "roofline":
        source = dict(source, compiled=False, eager_prefill=False)
    cfg, hardware, s, quantization = decode_setup(run, source)
    result = simulate_inference(cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=1, dtype=s["dtype"],
                                attention=s["attention"], kv_cache=s["kv_cache"], cuda_graphs=s["cuda_graphs"],
                                quantization=quantization, time_model=time_model,
                                implementation=s["implementation"], compiled=s["compiled"],
                                eager_prefill=s["eager_prefill"])
    prefill = result["prefill"]["seconds"]
    return s["gen"] / decode_run(run, source, time_model) - prefill, prefill


def test_the_mi300x_moves_a_gemvs_bytes_at_its_babelstream_dot_rate():
    """AMD's MI300X acceptance guide's BabelStream Dot, 3,878,410.495 MB/s, in place of 0.8 x 5.3 TB/s:
    a bf16 Llama-2-7B token (no graph gap is known for this GPU) takes the roofline's time x 4,240 / 3,878."""
    runs, source = _amd_runs()
    on_mi300x = dict(source, hardware="mi300x")
    run = runs["gpt-fast-amd llama2-7b bf16"]
    (roofline, _), (kernels, prefill) = _steps(run, on_mi300x, "roofline"), _steps(run, on_mi300x, "kernels")
    assert load_hardware("mi300x").gemv_bandwidth_bytes_per_s == 3_878_410_495_000
    assert kernels == pytest.approx(roofline * (0.8 * 5300) / 3878.410495, rel=0.002)
    assert prefill == (32 * 126 + 36) * 6.545241752576789e-06


# AMD's own vLLM rows: ROCm/vllm docs/dev-docker/README.md at 040de12d, 'Latency Measurements'
# (8 MI300X, vLLM v0.10.0, ROCm 6.4.1, FP8 weights and activations, --dtype float16, input 128,
# output 2048): id: (latency in s as published, the preset it runs, batch)
AMD_VLLM = {
    "amd-vllm llama3.1-405b fp8 tp8 batch 1": (48.453, "llama3.1-405b", 1),
    "amd-vllm llama3.1-405b fp8 tp8 batch 8": (54.226, "llama3.1-405b", 8),
    "amd-vllm llama3.1-405b fp8 tp8 batch 32": (68.901, "llama3.1-405b", 32),
    "amd-vllm llama3.1-405b fp8 tp8 batch 128": (117.027, "llama3.1-405b", 128),
    "amd-vllm llama3.1-70b fp8 tp8 batch 1": (17.236, "llama3-70b", 1),
    "amd-vllm llama3.1-70b fp8 tp8 batch 8": (19.677, "llama3-70b", 8),
    "amd-vllm llama3.1-70b fp8 tp8 batch 32": (24.932, "llama3-70b", 32),
    "amd-vllm llama3.1-70b fp8 tp8 batch 128": (46.484, "llama3-70b", 128),
}


def test_every_amd_vllm_row_is_typed_here():
    data = other_runs_data()
    assert {r["id"] for r in data["runs"] if r["id"].startswith("amd-vllm ")} == set(AMD_VLLM)


@pytest.mark.parametrize("run_id", sorted(AMD_VLLM))
def test_each_amd_vllm_row_is_expressed_as_its_table_states_it(run_id):
    """A sequence's 2,048 output tokens over the table's latency; 8 MI300X at tp 8, FP8 weights and
    activations (Quark's w_fp8_a_fp8), float16 elsewhere, HIP graphs, 128 prompt tokens."""
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    source = data["sources"]["amd-vllm"]
    latency, preset, batch = AMD_VLLM[run_id]
    assert run["published_latency_s"] == latency
    assert run["published_tokens_per_s"] == pytest.approx(2048 / latency, abs=0.0005)
    cfg, hardware, settings, quantization = decode_setup(run, source)
    assert run.get("preset", run["model"]) == preset and run["tp"] == 8 and hardware.name == "mi300x"
    assert quantization == {"weight_dtype": "fp8", "fp8_gemm": "w8a8"}
    assert (settings["prompt"], settings["gen"], settings["batch"]) == (128, 2048, batch)
    assert (settings["dtype"], settings["cuda_graphs"], settings["attention"]) == ("fp16", True, "flash")


def test_the_405b_step_at_batch_1_pays_rccls_measured_all_reduces():
    """Each of the 405B's 126 layers all-reduces twice a step, 16,384 fp16 values (32 KiB) at batch 1,
    and the vocabulary-parallel embedding once more: 253 calls at the rccl-tests curve's 32 KiB point
    (1.29 GB/s busbw, 44.45 us), 11.2 ms of the step, where alpha + beta charged 10.16 us each; and
    one all-gather of the 128,256 fp16 logits (its busbw interpolated at 256 KB, 29.3 us)."""
    from costmodel.collectives import collective_seconds
    runs = {r["id"]: r for r in other_runs_data()["runs"]}
    source = other_runs_data()["sources"]["amd-vllm"]
    from reports.published_decode import decode_layout_run

    token = decode_layout_run(runs["amd-vllm llama3.1-405b fp8 tp8 batch 1"], source, "kernels")["token"]
    logits = collective_seconds(load_hardware("mi300x"), "all_gather", 128256 * 2, 8, 8)
    assert logits == pytest.approx(29.3e-6, abs=0.05e-6)
    assert token["tp_all_reduce_seconds"] == pytest.approx(253 * 32768 * 1.75 / 1.29e9 + logits, rel=1e-9)
