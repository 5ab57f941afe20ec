"""validate/grouped_gemm_published.py: the model's routed-expert grouped GEMMs beside published
grouped-GEMM microbenchmarks (TransformerEngine PR #2045 on H100, torchao's README on B200, DeepGEMM
issue #107 on H200), and kernel_facts.json "grouped_gemm_efficiency" (session 30)."""

from __future__ import annotations

from pathlib import Path

from costmodel.hardware import load_hardware
from costmodel.kernel_time import Gemm, KernelTimer, kernels_seconds
from validate.grouped_gemm_published import rows, sets
from tests.cli_run import run_script

ROOT = Path(__file__).resolve().parents[1]


def test_the_sets_as_typed():
    data = {entry["id"]: entry for entry in sets()}
    assert sorted(data) == ["deepgemm-issue107-wgrad", "te-pr2045", "torchao-bf16-grouped-mm", "torchao-mxfp8-breakdown"]
    assert data["te-pr2045"]["libraries"]["TE 2.7 multi-stream cuBLAS"] == [[8, 4096, 768, 2048, 627.903], [16, 2048, 768, 2048, 553.945]]
    assert data["torchao-bf16-grouped-mm"]["libraries"]["torch._grouped_mm"][7] == [8, 16000, 2048, 7168, 14966.8]
    assert data["torchao-mxfp8-breakdown"]["libraries"]["torch._scaled_grouped_mm (MXFP8)"][2] == [8, 2048, 7168, 16384, 2103.3]
    assert sum(len(v) for e in sets() for v in e["libraries"].values()) == 24


def test_the_spread_by_set():
    """Model / published, burst rates. H100 BF16, Transformer Engine 2.7's default multi-stream
    grouped GEMM: 1.00 at both shapes (the points kernel_facts.json "grouped_gemm_efficiency" reads;
    before it the model read 733.96 TFLOP/s, 1.17x and 1.33x); TE 2.2 1.24-1.39x, the CUTLASS grouped
    kernel 0.87-0.97x. B200: torch._grouped_mm BF16 forward+backward 2.00-2.45x (torch 2.10a), the
    MXFP8 scaled grouped GEMM 1.49-1.50x (forward, input gradient) and 1.87x (weight gradient). H200:
    DeepGEMM's k-grouped FP8 weight gradient 1.65-1.78x. No set on Blackwell or in FP8 is from the
    library Megatron-Core's rows run (Transformer Engine), so none of those enters the model."""
    got: dict[str, list[float]] = {}
    for set_id, library, *_, published, model in rows():
        got.setdefault(f"{set_id}: {library}", []).append(model / published)
    spread = {key: (round(min(v), 2), round(max(v), 2)) for key, v in got.items()}
    assert spread == {
        "te-pr2045: TE 2.2 multi-stream cuBLAS": (1.24, 1.39),
        "te-pr2045: Cutlass-Opt-V1 (PR, first version)": (1.04, 1.11),
        "te-pr2045: TE 2.7 multi-stream cuBLAS": (1.0, 1.0),
        "te-pr2045: TE 2.7 CUTLASS grouped": (0.87, 0.97),
        "torchao-bf16-grouped-mm: torch._grouped_mm": (2.0, 2.45),
        "torchao-mxfp8-breakdown: torch._scaled_grouped_mm (MXFP8)": (1.49, 1.87),
        "deepgemm-issue107-wgrad: DeepGEMM k-grouped wgrad (78d8362)": (1.65, 1.78),
    }


def test_the_grouped_share_on_hopper_bf16_only():
    """A grouped GEMM's tile time / 0.7547 at 2,048 rows an expert, / 0.8555 at 4,096, log-linear
    between (0.8051 at 2,896), the end values beyond; its backward GEMMs take the forward's rows; a
    dense GEMM (grouped_rows 0), FP8 products and Blackwell keep the tile model."""
    h100 = KernelTimer(load_hardware("h100"), "bf16")
    def share(m: int, timer: KernelTimer = h100) -> float:  # the tiles bind at these shapes, not the bytes
        return (timer.gemm_seconds(Gemm(m, 768, 2048, 16)) - timer.dram_startup_s) / \
            (timer.gemm_seconds(Gemm(m, 768, 2048, 16, grouped_rows=m)) - timer.dram_startup_s)
    assert [round(share(m), 4) for m in (1024, 2048, 2896, 4096, 16384)] == [0.7547, 0.7547, 0.8051, 0.8555, 0.8555]
    fp8 = KernelTimer(load_hardware("h100"), "bf16", matmul_dtype="fp8")
    b200 = KernelTimer(load_hardware("b200"), "bf16")
    assert share(2048, fp8) == share(2048, b200) == 1.0
    dense, grouped = Gemm(2048, 768, 2048, 16), Gemm(2048, 768, 2048, 16, grouped_rows=2048)
    backward = kernels_seconds([grouped], h100, True) - kernels_seconds([grouped], h100)
    assert round(backward / (kernels_seconds([dense], h100, True) - kernels_seconds([dense], h100)), 3) == 1.321  # 1 / 0.7547 on the tiles, the two DRAM starts unscaled


def test_the_script_and_its_bad_option(monkeypatch, capsys):
    script = ROOT / "validate" / "grouped_gemm_published.py"
    code, out, _ = run_script(script, [], monkeypatch, capsys)
    assert code == 0 and "| te-pr2045 | TE 2.7 multi-stream cuBLAS | 16 | 2,048 | 768 | 2,048 | 554 | 556 | 1.00 |" in out
    code, out, err = run_script(script, ["--nope"], monkeypatch, capsys)
    assert code == 2 and err.startswith("error: ") and out == ""
