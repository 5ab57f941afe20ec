"""The FP8 recipes' casts beside each linear (costmodel/layout/fp8.py CAST_PASSES, cast_bytes):
exact bytes for one linear of odd sizes (M = 37 tokens, K = 19 inputs, N = 23 outputs), each pass
as its recipe's code runs it (the sources beside CAST_PASSES)."""

from __future__ import annotations

import pytest

from costmodel.kernel_shapes import Gemm
from costmodel.layout.fp8 import RECIPES
from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes

M, K, N = 37, 19, 23


def test_every_recipe_states_its_casts_or_says_none_is_known():
    assert set(CAST_PASSES) == set(RECIPES)
    assert CAST_PASSES["blockwise"] is None  # DeepSeek-V3's kernels: no source states their passes


def test_torchao_tensorwise_one_linear():
    """Forward: the input's and the weight's amax (read 2 bytes) and cast (read 2, write 1);
    backward: the output gradient's amax and cast, and the column-major copies _scaled_mm needs
    (the weight, the gradient, the saved FP8 input: read 1, write 1 each). Every GPU (torch's rule)."""
    casts = CAST_PASSES["tensorwise"]
    for needs_tn in (True, False):
        forward, backward = cast_bytes([Gemm(M, N, K)], casts, needs_tn=needs_tn, microbatches=4)
        assert forward == 5 * M * K + 5 * K * N
        assert backward == 7 * M * N + 2 * M * K + 2 * K * N
    # a recomputed forward casts the input and the weight again
    assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, rerun=True) == (5 * M * K + 5 * K * N, 0)


def test_torchao_rowwise_casts_each_operand_again_in_backward():
    """Backward: each operand cast again (5 bytes an element), the column-major copies (2), and
    dgrad's M x K and wgrad's K x N outputs rescaled after cuBLAS (read 2, write 2: slow accum)."""
    forward, backward = cast_bytes([Gemm(M, N, K)], CAST_PASSES["rowwise"], needs_tn=True)
    assert forward == 5 * M * K + 5 * K * N
    assert backward == (5 + 2 + 4) * M * K + (5 + 2 + 4) * K * N + (10 + 2) * M * N


def test_torchao_rowwise_rescales_every_backward_gemm_output():
    """The rescale is per GEMM: Q, K and V share one cast input but each writes its own M x K
    grad_input, so three rescales of it; tensorwise has none (cuBLAS applies scalar scales)."""
    qkv = [Gemm(M, N, K), Gemm(M, 7, K), Gemm(M, 7, K)]
    _, rowwise = cast_bytes(qkv, CAST_PASSES["rowwise"], needs_tn=True)
    _, tensorwise = cast_bytes(qkv, CAST_PASSES["tensorwise"], needs_tn=True)
    recast = 5 * M * K + 5 * K * (N + 14) + 5 * M * (N + 14)  # the second cast of each operand
    assert rowwise - tensorwise == recast + 4 * 3 * M * K + 4 * K * (N + 14)


def test_one_cast_per_distinct_input():
    """Q, K and V read one input (cast once); each has its own weight and output gradient."""
    qkv = [Gemm(M, N, K), Gemm(M, 7, K), Gemm(M, 7, K)]
    forward, backward = cast_bytes(qkv, CAST_PASSES["tensorwise"], needs_tn=True)
    assert forward == 5 * M * K + 5 * K * (N + 14)
    assert backward == 7 * M * (N + 14) + 2 * M * K + 2 * K * (N + 14)
    # a batched GEMM (count 3: three experts) casts three inputs
    forward, _ = cast_bytes([Gemm(M, N, K, count=3)], CAST_PASSES["tensorwise"], needs_tn=True)
    assert forward == 3 * (5 * M * K + 5 * K * N)


def test_transformer_engine_current_scaling_on_hopper():
    """An input a norm writes: the amax inside the norm, cast + transpose in one kernel (read 2,
    write 1 + 1); any other input: amax, then cast + transpose; the weight's amax and cast +
    transpose once a step (here over 4 micro-batches); the gradient's amax, cast + transpose."""
    casts = CAST_PASSES["current"]
    normed = Gemm(M, N, K, normed_input=True)
    assert cast_bytes([normed], casts, needs_tn=True, microbatches=4) == (4 * M * K + 6 * K * N / 4, 6 * M * N)
    assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, microbatches=4) == (6 * M * K + 6 * K * N / 4,
                                                                                 6 * M * N)
    # recomputation reruns the input's cast only (the weight stays cached)
    assert cast_bytes([normed], casts, needs_tn=True, microbatches=4, rerun=True) == (4 * M * K, 0)


def test_transformer_engine_makes_no_transposes_on_blackwell():
    casts = CAST_PASSES["current"]
    normed = Gemm(M, N, K, normed_input=True)
    assert cast_bytes([normed], casts, needs_tn=False, microbatches=4) == (3 * M * K + 5 * K * N / 4, 5 * M * N)


def test_transformer_engine_quantizes_a_norms_output_before_the_sequence_parallel_gather():
    """Under sequence parallelism (tp 4): the norm's output cast on the rank's quarter of the
    tokens, row-major only; its transpose made in backward after the gather (read 1, write 1)."""
    casts = CAST_PASSES["current"]
    normed = Gemm(M, N, K, normed_input=True)
    forward, backward = cast_bytes([normed], casts, needs_tn=True, microbatches=2, tp=4, sequence_parallel=True)
    assert forward == pytest.approx(3 * M * K / 4 + 6 * K * N / 2, rel=1e-15)
    assert backward == 2 * M * K + 6 * M * N
    # an input no norm writes is cast where the GEMM reads it, as without sequence parallelism
    assert cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, microbatches=2, tp=4, sequence_parallel=True) == \
        cast_bytes([Gemm(M, N, K)], casts, needs_tn=True, microbatches=2)
