"""Session 33's three decoding gaps on GeForce/Ada and over PCIe (validate/FINDINGS.md, "GeForce, Ada and PCIe
decoding (wt33_geforce, session 33)"): an Ada int4 weight-only GEMV fact (kernel_facts.json "weight_only_gemv",
gemlite's RTX 4090 figure) and the bound a one-row quantized product without one keeps (kernel_rates.unquantized_gemv);
the GeForce presets' launch costs from gpu-benches' same-die measurements; NCCL's PCIe ring latency
(collectives.pcie_ring_seconds). Each figure from its source, and the rows each moves."""

from __future__ import annotations

import copy

import pytest

from costmodel.collectives import within_node
from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware
from costmodel.hardware_presets import preset_names
from costmodel.hardware_schema import schema_problems
from costmodel.kernel_rates import kernel_facts
from costmodel.kernel_time import Gemm, KernelTimer
from reports.published_decode import decode_run
from reports.published_runs import other_runs_data

GROUP32 = 0.5 + 2 * 2 / 32  # an int4 weight's stored bytes at groups of 32: a 16-bit scale and zero a group


def _entry(architecture: str, dtype: str) -> dict:
    return next(e for e in kernel_facts()["weight_only_gemv"]
                if (e["architecture"], e["weight_dtype"]) == (architecture, dtype))


def _row(run_id: str, **changes) -> float:
    data = other_runs_data()
    run = {**next(r for r in data["runs"] if r["id"] == run_id), **changes}
    return decode_run(run, data["sources"][run_id.split()[0]], "kernels")


def test_the_ada_int4_fraction_is_gemlites_rtx_4090_figure_by_the_ampere_entrys_method():
    entry = _entry("ada", "int4")
    # tinygemm (TorchAO A16W4) over fp16 torch.matmul at batch 1 on the 4090, the SVGs' own coordinates
    assert entry["published"]["speedup_over_fp16_at_batch_1"] == {"4096": 2.94, "8192": 2.84, "16384": 2.75,
                                                                   "32768": 3.43}
    ideal = 16 / (4 + 2 * 16 / 128)  # a bf16 scale and zero a group of 128
    assert entry["published"]["ideal"] == round(ideal, 3) == 3.765
    assert entry["bandwidth_fraction"] == round(3.43 / ideal, 3) == 0.911  # the largest matrix's
    assert entry["tokens"] == 1
    assert 0.928 == _entry("ampere", "int4")["bandwidth_fraction"]  # Marlin's A10 figure, the same method


def test_a_7b_int4_gemv_on_the_4090_is_its_bytes_at_the_ada_fraction_and_faster_than_the_3090s():
    gemm = Gemm(1, 11008, 4096, weight_bytes=11008 * 4096 * GROUP32, weight_dtype="int4")
    moved = 2 * (4096 + 11008) + 11008 * 4096 * GROUP32
    ada = KernelTimer(load_hardware("rtx-4090"), "fp16").gemm_seconds(gemm)
    # no dram_kernel_startup_s on the 4090; its GEMV rate is 0.8 of 1,008 GB/s (no measured one)
    assert ada == pytest.approx(moved / (0.911 * 0.8 * 1008e9), rel=1e-12)
    assert round(ada * 1e6, 1) == 38.4  # the tile model's 64-row tiles over 128 SMs took 74.3 us (two waves)
    ampere = KernelTimer(load_hardware("rtx-3090"), "fp16").gemm_seconds(gemm)
    assert round(ampere * 1e6, 1) == 40.6 and ada < ampere  # more bandwidth, less time


def test_the_4090_decodes_7b_int4_faster_than_the_3090():
    """The defect the unseen rows found: a 7B int4 step took 9.7 ms on the 4090 against 5.8 ms on the 3090."""
    run_id = "llm-perf-bench-4bit mlc-llm llama2-7b q4f16_1 rtx4090"
    ada, ampere = _row(run_id), _row(run_id, hardware="rtx-3090")
    assert ada > ampere
    assert round(ada, 1) == 169.8 and round(ampere, 1) == 159.4  # tokens/s; the 4090 read 102.5 before


def test_a_one_row_quantized_product_without_a_kernel_is_never_slower_than_the_unquantized_gemv():
    """kernel_rates.unquantized_gemv: on a V100 in fp32 the tile model (64-row tiles at the fp32 peak) took
    145.7 us for a 4096 x 4096 int8 product, above the fp32 GEMV of the same shape (93.3 us: its bytes)."""
    timer = KernelTimer(load_hardware("v100-sxm2-32gb"), "fp32")
    int8 = Gemm(1, 4096, 4096, weight_bytes=4096 * 4096 + 2 * 4096, weight_dtype="int8")
    gemv = timer.gemm_seconds(Gemm(1, 4096, 4096))
    assert timer.gemm_seconds(int8) == gemv
    assert round(gemv * 1e6, 1) == 93.3 and round(timer.gemm_compute_seconds(int8) * 1e6, 1) == 145.7
    for name in preset_names():  # nowhere without a published kernel, whatever the architecture or dtype (a
        hardware = load_hardware(name)  # measured one may be: Hopper's tinygemm at 128 blocks, 0.53 of its rate)
        for dtype in ("bf16", "fp16", "fp32"):
            if not hardware.flops_per_s.get(dtype):
                continue
            timer = KernelTimer(hardware, dtype)
            for n, k in ((4096, 4096), (14336, 4096), (1024, 8192)):
                for wdtype, stored in (("int4", n * k * GROUP32), ("int8", n * k + 2 * n)):
                    if wdtype in timer.weight_only_gemv:
                        continue
                    quantized = timer.gemm_seconds(Gemm(1, n, k, weight_bytes=stored, weight_dtype=wdtype))
                    assert quantized <= timer.gemm_seconds(Gemm(1, n, k)), (name, dtype, n, k, wdtype)


def test_the_geforce_launch_costs_are_gpu_benches_same_die_measurements():
    """gpu-benches gpu-small-kernels (c35574e): 65,536 B a SCALE kernel, the best block size's GB/s."""
    rtx3090, rtx4090 = load_hardware("rtx-3090"), load_hardware("rtx-4090")
    assert rtx3090.overhead_s_per_block == 2 * 65536 / 32e9  # a40.txt: two launches a block (the stated count)
    assert rtx4090.overhead_s_per_block == 2 * 65536 / 40e9  # l40.txt (AD102)
    assert rtx3090.graph_kernel_s == pytest.approx(65536 / 60e9, rel=1e-4)  # a40_graph.txt
    assert rtx4090.graph_kernel_s == pytest.approx(65536 / 70e9, rel=1e-4)  # l40_graph.txt


def test_eager_exllamav2_on_the_3090_pays_the_measured_launches():
    # ExLlamaV2's own loop, eager: 10 us a block (stated) gave 122.4 tokens/s (0.70x of 175)
    assert round(_row("exllamav2-readme llama-7b gptq g128 rtx3090"), 1) == 155.0  # 0.886x


def test_a_pcie_ring_takes_nccls_latency_model():
    """NCCL tuning.cc's constants (nccl_facts.json inter_node_latency): at 16 KiB the LL protocol wins,
    6.6 us + 1.0 us a step at half the achieved link (0.8 x 32 GB/s); an all-reduce's steps 2(n - 1)."""
    a10g = load_hardware("a10g")
    assert a10g.intra_node_fabric == "pcie"
    for n, us in ((2, 9.88), (4, 14.52), (8, 22.84)):
        steps, moved = 2 * (n - 1), 16384 * 2 * (n - 1) / n
        expected = (6.6 + steps * 1.0) * 1e-6 + moved / (0.5 * 0.8 * 32e9)
        assert within_node(a10g, "all_reduce", 16384, n) == pytest.approx(expected, rel=1e-12)
        assert round(expected * 1e6, 2) == us  # the flat collective latency gave 10 us + bytes at every n
    # a large message runs Simple: 8.4 us + 5.7 us a step at the whole link
    big = 64 << 20
    assert within_node(a10g, "all_reduce", big, 8) == pytest.approx((8.4 + 14 * 5.7) * 1e-6 + big * 1.75 / 25.6e9)
    # an all-to-all keeps the flat latency; an NVLink-bridged pair (the 3090) is no PCIe node
    assert within_node(a10g, "all_to_all", 16384, 8) == pytest.approx(1e-5 + 16384 * 7 / 8 / 25.6e9)
    assert load_hardware("rtx-3090").intra_node_fabric == ""


def test_the_pcie_rows_move():
    """llm-perf-bench's MLC LLM at TP 8 over PCIe (A100): 1.70x before (10 us a call, every TP)."""
    assert round(_row("llm-perf-bench-fp16 mlc-llm llama2-70b fp16 tp8 a100x8") / 38.8, 3) == 1.512


def test_intra_node_fabric_is_pcie_or_nothing():
    data = copy.deepcopy(load_hardware("a10g").to_dict())
    assert data["interconnect"]["intra_node_fabric"] == "pcie"
    assert Hardware.from_dict(data, "test").intra_node_fabric == "pcie"
    assert not schema_problems(data)
    data["interconnect"]["intra_node_fabric"] = "nvlink"
    with pytest.raises(ConfigError, match="intra_node_fabric must be"):
        Hardware.from_dict(data, "test")
