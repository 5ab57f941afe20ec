"""FP8 training recipes (costmodel/layout/fp8.py) as the frameworks run them: Megatron's blockwise FP8
keeps fp8 weights and bf16 moments, the linear layers run at the FP8 peak (and need one), torchao's
float8 keeps nothing beyond bf16 (split from tests/test_frontier_layouts.py)."""

from __future__ import annotations

import math

import cli
from costmodel.config import Workload
from tests.test_frontier_layouts import LLAMA2_7B, parallel


LLAMA2_7B_LINEAR = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)  # Q, K, V, O and the SwiGLU FFN


def test_fp8_blockwise_keeps_fp8_weights_and_bf16_moments():
    base = dict(dp=1, zero=0, framework="megatron")
    bf16 = parallel("llama2-7b", Workload(seq_len=8), **base).per_rank
    fp8 = parallel("llama2-7b", Workload(seq_len=8), fp8="blockwise", **base).per_rank
    # DeepSeek-V3: one FP8 byte a linear parameter and one fp32 scale a 128 x 128 block.
    assert fp8["weights"] - bf16["weights"] == math.ceil(LLAMA2_7B_LINEAR * (1 + 4 / 128**2))
    assert (bf16["optimizer"], fp8["optimizer"]) == (12 * LLAMA2_7B, 8 * LLAMA2_7B)  # moments fp32 -> bf16
    tensorwise = parallel("llama2-7b", Workload(seq_len=8), fp8="tensorwise", **base).per_rank
    assert tensorwise == bf16  # torchao casts per product and keeps nothing


def test_fp8_runs_the_linear_layers_at_the_fp8_peak_and_needs_one(capsys):
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import StepTime

    workload = Workload(seq_len=4096, attention="flash")
    h800 = load_hardware("h800")
    bf16 = StepTime(parallel("llama2-7b", workload, pp=2, microbatches=4), h800)
    fp8 = StepTime(parallel("llama2-7b", workload, pp=2, microbatches=4, fp8="rowwise"), h800)
    head = next(k for k in bf16.part_seconds if k == "head")
    layer = next(k for k in bf16.part_seconds if k.startswith("layer"))
    assert fp8.part_seconds[head][0] == bf16.part_seconds[head][0]  # the output head stays bf16
    assert fp8.part_seconds[layer][0] < 0.75 * bf16.part_seconds[layer][0]
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--train", "--pp", "2",
                     "--fp8", "rowwise"]) == 2
    assert 'no FP8 peak (flops_per_s["fp8"])' in capsys.readouterr().err
    assert cli.main(["estimate", "--model", "llama2-7b", "--dp", "2", "--fp8", "rowwise", "--dtype", "fp16"]) == 2
    assert "use --dtype bf16" in capsys.readouterr().err
