"""EXL2's one-row product on an Ada GPU (kernel_facts.json "weight_only_gemv", the exl2 "ada" entry; wt43_exllama,
session 43). ExLlamaV2 v0.1.8 (61e3092) runs gemm_half_q_half_kernel at up to MAX_Q_GEMM_ROWS = 32 rows on every
GPU (exllamav2_ext/cuda/q_gemm.cu), its per-bits loops advancing through q_weight by the stored bits, so its time
goes with the file's bits a weight. Without an Ada entry the kernel model priced the product as a one-row
tensor-core tile, flat in the bits (9.48 ms of Llama 2 7B's weight GEMMs at 3.0 and 5.0b on the RTX 4090)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_rates import kernel_facts
from costmodel.kernel_time import Gemm, KernelTimer

# Llama 2 7B's 4096 x 4096 projection as EXL2 stores it (costmodel/exl2.py): N K B / 8 bytes of values, scales
# and groups, and 4 bytes an input row of q_perm and q_invperm
K = N = 4096
STORED = {3.0: 4096 * 4096 * 3 // 8 + 4 * 4096, 5.0: 4096 * 4096 * 5 // 8 + 4 * 4096}


def exl2_entry(architecture: str) -> dict:
    return next(e for e in kernel_facts()["weight_only_gemv"]
                if e["weight_dtype"] == "exl2" and e["architecture"] == architecture)


def test_the_stored_bytes_are_the_bits():
    assert STORED == {3.0: 6_307_840, 5.0: 10_502_144}


def test_ada_borrows_the_ampere_reading_of_the_kernel():
    ada, ampere = exl2_entry("ada"), exl2_entry("ampere")
    assert ada["bandwidth_fraction"] == ampere["bandwidth_fraction"] == 0.977
    assert "MAX_Q_GEMM_ROWS 32" in ada["source"] and "Not fitted to any row" in ada["source"]


@pytest.mark.parametrize("hardware", ["rtx-4090", "rtx-3090"])
def test_one_row_reads_the_stored_bits_at_the_kernels_rate(hardware):
    timer = KernelTimer(load_hardware(hardware), "fp16", cuda_graphs=True)
    rate = timer.gemv_bandwidth * 0.977
    assert timer.weight_only_gemv["exl2"].rate == pytest.approx(rate, rel=1e-12)
    times = {}
    for bits, stored in STORED.items():
        gemm = Gemm(1, N, K, weight_bytes=stored, weight_dtype="exl2", weight_kernel="exllamav2")
        times[bits] = timer.gemm_seconds(gemm)
        # the fp16 input row and output row, then the stored matrix, at the kernel's rate after the DRAM start
        assert times[bits] == pytest.approx(timer.dram_startup_s + (2 * (K + N) + stored) / rate, rel=1e-12)
    # the bits reach the time: 5.0b over 3.0b is the bytes' ratio (less the fixed start and the activations)
    assert times[5.0] / times[3.0] > 1.6


def test_the_4090_no_longer_prices_a_one_row_tile():
    # the fallback the RTX 4090 took before: the tile model's compute of one row padded to a tile, 18.7 us at any
    # bits, above both products' time now
    timer = KernelTimer(load_hardware("rtx-4090"), "fp16", cuda_graphs=True)
    tile = timer.gemm_compute_seconds(Gemm(1, N, K, weight_bytes=STORED[5.0], weight_dtype="exl2"))
    assert round(tile * 1e6, 1) == 18.7
    now = {bits: timer.gemm_seconds(Gemm(1, N, K, weight_bytes=b, weight_dtype="exl2", weight_kernel="exllamav2"))
           for bits, b in STORED.items()}
    assert {bits: round(t * 1e6, 1) for bits, t in now.items()} == {3.0: 8.0, 5.0: 13.4}
