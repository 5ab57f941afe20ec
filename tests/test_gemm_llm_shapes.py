"""Session 33's cuBLAS rates at LLM shapes against the kernel model (wt33_gemmrate): validate/gemm_microbenchmarks.json
"cublas_llm_shapes" (each source's figures as typed, before the model's were computed) and
validate/gemm_microbenchmarks.py's comparison by source, shape class and regime. A ratio is model TFLOP/s over
published TFLOP/s (above 1: the model is fast). The figures pinned are the ones the comparison printed
(`PYTHONPATH=. python validate/gemm_microbenchmarks.py --classes`); validate/FINDINGS.md, "cuBLAS at LLM shapes"."""

from __future__ import annotations

from costmodel.hardware import load_hardware
from validate.gemm_microbenchmarks import class_summary, llm_shape_points, main, regime, shape_class, table


def test_the_sources_hold_their_figures_as_typed():
    sources = table()["cublas_llm_shapes"]["sources"]
    assert {name: len(source["rows"]) for name, source in sources.items()} == {
        "flagperf_a100": 12, "cookbook_layer_a100": 5, "vllm_h100_gemma4": 4, "torch_perf_h100_square": 8,
        "mlengineering_swiglu_h100": 2}
    flag = sources["flagperf_a100"]["rows"]
    assert ["a100-40gb", "bf16", 1, 8192, 8192, 8192, 259.2, "sustained"] in flag  # 8-card torch.mm soak
    assert ["a100-40gb", "fp16", 1, 8192, 8192, 8192, 251.5, "sustained"] in flag
    assert ["a100-80gb", "fp16", 1, 8192, 12288, 4096, 241.616, "burst"] == sources["cookbook_layer_a100"]["rows"][0]
    assert ["h100-sxm", "bf16", 1, 128, 12288, 5376, 352.560566, "burst"] == sources["vllm_h100_gemma4"]["rows"][-1]


def test_each_source_and_class_as_compared():
    """(count, median, min, max) of model / published, as first computed with the A100's fp16 sustained 0.806."""
    got = {label: (count, round(median, 3), round(low, 3), round(high, 3))
           for label, count, median, low, high in class_summary()}
    assert got == {
        "flagperf_a100 a100-40gb square zeros": (2, 0.917, 0.907, 0.927),
        "flagperf_a100 a100-40gb square sustained": (8, 0.998, 0.971, 1.127),
        "flagperf_a100 a100-40gb square burst": (2, 0.998, 0.965, 1.032),
        "cookbook_layer_a100 a100-80gb llm burst": (5, 1.119, 1.061, 1.15),
        "vllm_h100_gemma4 h100-sxm decode burst": (4, 1.001, 0.989, 1.015),
        "torch_perf_h100_square h100-sxm square burst": (8, 1.023, 0.966, 1.187),
        "mlengineering_swiglu_h100 h100-sxm llm burst": (2, 2.442, 1.995, 2.89)}


def test_fp16_soaks_below_bf16_only_with_random_data():
    """FlagPerf's A100 pairs (same GPU, harness and shape): every soak at the 400 W limit reads fp16 below bf16
    (0.970-0.990), the uninitialized-input pair does not (1.023): a power effect, which the a100 files'
    sustained fp16 rate (251.5 of 312) now carries."""
    rows = table()["cublas_llm_shapes"]["sources"]["flagperf_a100"]["rows"]
    by_key: dict[tuple, list[tuple[str, float]]] = {}
    for hw, dtype, b, m, n, k, tflops, kind in rows:
        by_key.setdefault((b, m, n, k, kind), []).append((dtype, tflops))
    soaks = [(259.2, 251.5), (265.19, 257.62), (257.12, 251.11), (227.57, 225.28)]
    for bf16, fp16 in soaks:
        assert any(("bf16", bf16) in v and ("fp16", fp16) in v for k, v in by_key.items() if k[4] == "sustained")
    assert [round(fp16 / bf16, 3) for bf16, fp16 in soaks] == [0.97, 0.971, 0.977, 0.99]
    assert round(298.34 / 291.77, 3) == 1.023 and ("fp16", 298.34) in by_key[(1, 8192, 8192, 8192, "zeros")]
    for name in ("a100-80gb", "a100-40gb"):
        held = load_hardware(name).sustained_matmul_efficiency
        assert held["fp16"] == round(251.5 / 312, 3) == 0.806 and held["bf16"] == 0.827


def test_the_model_reads_flagperf_soaks_within_three_percent_at_8192():
    points = [p for p in llm_shape_points("flagperf_a100") if regime(p) == "sustained" and p.m == 8192]
    assert sorted(round(p.ratio, 3) for p in points) == [0.971, 0.974, 0.993, 0.997]


def test_decode_shapes_on_the_h100_within_two_percent():
    """vLLM's H100 torch-bf16 GEMMs at N 12,288, K 5,376 (Gemma-4-31B), batch 1-128: the model's weight
    stream (gemv_bandwidth) and tiles give them back within 1.5%."""
    points = llm_shape_points("vllm_h100_gemma4")
    assert [shape_class(p) for p in points] == ["decode"] * 4
    assert [round(p.ratio, 3) for p in points] == [1.006, 0.989, 0.996, 1.015]


def test_the_cookbook_layer_gemms_read_below_the_sxm_burst_rate():
    """EleutherAI's cookbook (GPU unnamed, the slowest of the measured calls): 6-15% below the A100 SXM's
    burst rate at 8,192 tokens x hidden 4,096; not acted on (FINDINGS: the GPU variant and the statistic)."""
    ratios = [round(p.ratio, 3) for p in llm_shape_points("cookbook_layer_a100")]
    assert ratios == [1.119, 1.15, 1.122, 1.07, 1.061]


def test_bad_argument_exits_2(capsys):
    assert main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err
