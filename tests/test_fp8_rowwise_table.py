"""torchao's rowwise float8 linear against bf16, by shape: the kernel model's speedup of one linear's
forward and backward (its three GEMMs and the recipe's casts, costmodel/layout/fp8.py) beside the
table torchao publishes for H100 (pytorch/ao fdddb2cfa, docs/static/fp8-rowwise-perf.png, linked
from torchao/float8/README.md "Rowwise scaling": "Speedup observed vs bfloat16 for LayerNorm ->
Linear -> Sigmoid fwd + bwd by forward M, K, N", dynamic row-wise scaling, PyTorch 2.8.0a0).

The table's cells include the LayerNorm and the sigmoid, which run in both precisions and pull its
ratios towards 1; the model's here leave them out. Stated tolerance: 15% of the table's cell at
each shape. Without the backward GEMMs' rescale passes (fp8.py _TORCHAO_ROWWISE) the model is 28%
over the table at M 16384, K 4096, N 1024 and 19% over at M 32768, K 4096, N 2048."""

from __future__ import annotations

import pytest

#: (M, K, N): the table's speedup (two decimals, as printed).
TORCHAO_ROWWISE = {
    (16384, 4096, 1024): 0.57, (16384, 4096, 2048): 0.79, (16384, 1024, 4096): 0.73,
    (16384, 2048, 4096): 0.90, (16384, 4096, 4096): 1.02, (16384, 8192, 8192): 1.33,
    (16384, 16384, 16384): 1.42, (32768, 4096, 1024): 0.59, (32768, 4096, 2048): 0.81,
    (32768, 1024, 4096): 0.77, (32768, 2048, 4096): 0.91, (32768, 8192, 8192): 1.41,
}


def model_speedup(m: int, k: int, n: int) -> float:
    """bf16 over rowwise seconds of one linear's fwd + bwd on the torchtitan H100 (500 W cap),
    both at the sustained (training) GEMM rate."""
    from costmodel.kernel_time import Gemm, KernelTimer
    from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes
    from reports.published_runs import train_setup
    from tests.test_published_runs import _runs

    runs, sources = _runs()
    run = runs["torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile float8 rowwise 64 GPUs"]
    _, hardware, _ = train_setup(run, sources["torchtitan-asynctp"])
    bf16 = KernelTimer(hardware, "bf16", "flash", compiled=True, sustained=True)
    fp8 = KernelTimer(hardware, "bf16", "flash", compiled=True, sustained=True, matmul_dtype="fp8")
    gemms = [Gemm(m, n, k), Gemm(m, k, n), Gemm(k, n, m)]  # forward, dgrad, wgrad
    forward, backward = cast_bytes([gemms[0]], CAST_PASSES["rowwise"], needs_tn=True)
    seconds_fp8 = sum(fp8.gemm_seconds(g) for g in gemms) + (forward + backward) / bf16.bandwidth
    return sum(bf16.gemm_seconds(g) for g in gemms) / seconds_fp8


@pytest.mark.parametrize("shape", sorted(TORCHAO_ROWWISE))
def test_rowwise_linear_speedup_within_15_percent_of_torchaos_table(shape):
    published = TORCHAO_ROWWISE[shape]
    assert model_speedup(*shape) == pytest.approx(published, rel=0.15), shape
