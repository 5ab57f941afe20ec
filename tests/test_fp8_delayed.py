"""Transformer Engine's delayed scaling (--fp8 delayed; costmodel/layout/fp8.py _TE_DELAYED): each
cast takes its amax inside the cast kernel (cast_transpose.cu, atomicMaxFloat) with the scale the
last update left, where current scaling runs an amax kernel and a scale kernel first; a norm writes
FP8 itself. Exact bytes and kernel launches for one Llama-layout layer of odd sizes (37 tokens,
width 19, 7-wide K and V, FFN 23), the difference from current scaling pass by pass, the amax
histories' bytes, the commands that take the recipe and the one-line refusals."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.kernel_shapes import Gemm
from costmodel.layout.fp8 import RECIPES, scaling_state_bytes
from costmodel.layout.fp8_casts import CAST_PASSES, cast_bytes, cast_kernels

M, D, KV, FF = 37, 19, 7, 23

# one layer's FP8 linears as Megatron-Core builds them: Q/K/V and FC1 read a norm's output
# (TE's LayerNormLinear), the attention output and FC2 read a plain bf16 tensor (TE's Linear)
QKV = [Gemm(M, D, D, normed_input=True), Gemm(M, KV, D, normed_input=True), Gemm(M, KV, D, normed_input=True)]
PROJ = [Gemm(M, D, D)]
FC1 = [Gemm(M, FF, D, normed_input=True), Gemm(M, FF, D, normed_input=True)]  # gate and up
FC2 = [Gemm(M, D, FF)]
LAYER = (QKV, PROJ, FC1, FC2)
WEIGHTS = D * (D + 2 * KV) + D * D + 2 * D * FF + FF * D  # 2,299 elements
GRADS = M * (D + 2 * KV) + M * D + 2 * M * FF + M * D  # 4,329 elements
NORMED, PLAIN = 2 * M * D, M * D + M * FF  # the cast inputs: Q/K/V's and FC1's; the output's and FC2's


def layer(count, recipe: str, **options) -> tuple[float, float]:
    totals = [count(leaf, CAST_PASSES[recipe], **options) for leaf in LAYER]
    return sum(t[0] for t in totals), sum(t[1] for t in totals)


def test_the_recipe_as_data():
    recipe = RECIPES["delayed"]
    assert (recipe.peak, recipe.weight_copy_bytes, recipe.moment_bytes, recipe.amax_history_len) == ("fp8", 0, None, 1024)
    assert CAST_PASSES["delayed"].transposes == "tn_only" and CAST_PASSES["delayed"].weight_once_per_step
    assert not [p for p in CAST_PASSES["delayed"].passes if p.what in ("amax", "scale")]


def test_one_layer_on_hopper_against_current_scaling():
    """Delayed: a plain input cast + transpose in one kernel (read 2, write 1 + 1), a norm's output
    written in FP8 by the norm then transposed (read 1, write 1), the weight cast + transposed once a
    step (4 micro-batches), the gradient cast + transposed. Current: the same, each after an amax pass
    (read 2), the norm's output cast (3 + 1) after the norm took its amax. The difference is 2 bytes
    an element of every tensor cast."""
    delayed = layer(cast_bytes, "delayed", needs_tn=True, microbatches=4)
    assert delayed == (4 * PLAIN + 2 * NORMED + 4 * WEIGHTS / 4, 4 * GRADS) == (11_327.0, 17_316)
    current = layer(cast_bytes, "current", needs_tn=True, microbatches=4)
    assert current == (6 * PLAIN + 4 * NORMED + 6 * WEIGHTS / 4, 6 * GRADS) == (18_396.5, 25_974)
    assert (current[0] - delayed[0], current[1] - delayed[1]) == (2 * (PLAIN + NORMED + WEIGHTS / 4), 2 * GRADS)


def test_one_layer_on_blackwell_makes_no_transposes():
    """No column-major copies (TE's non-TN rule): delayed casts a plain input (3), nothing for a
    norm's output (the norm writes it in FP8), the weight and the gradient (3); current 5 each, 3 for
    the norm's output."""
    delayed = layer(cast_bytes, "delayed", needs_tn=False, microbatches=4)
    current = layer(cast_bytes, "current", needs_tn=False, microbatches=4)
    assert delayed == (3 * PLAIN + 3 * WEIGHTS / 4, 3 * GRADS) == (6_386.25, 12_987)
    assert current == (5 * PLAIN + 3 * NORMED + 5 * WEIGHTS / 4, 5 * GRADS) == (14_861.75, 21_645)


def test_under_sequence_parallelism_the_norm_writes_fp8_before_the_gather():
    """tp 4: the norm's output written in FP8 on the rank's tokens (no cast), its transpose made in
    backward after the FP8 all-gather (read 1, write 1 over every token), as current scaling's."""
    forward, backward = layer(cast_bytes, "delayed", needs_tn=True, microbatches=2, tp=4, sequence_parallel=True)
    assert (forward, backward) == (4 * PLAIN + 4 * WEIGHTS / 2, 2 * NORMED + 4 * GRADS) == (10_814.0, 20_128)
    current = layer(cast_bytes, "current", needs_tn=True, microbatches=2, tp=4, sequence_parallel=True)
    assert current[0] - forward == pytest.approx(2 * PLAIN + 3 * NORMED / 4 + 2 * WEIGHTS / 2, rel=1e-15)
    assert current[1] - backward == 2 * GRADS


def test_a_recomputed_forward_casts_the_inputs_again():
    """Recomputation reruns the inputs' casts and the norm output's transpose, not the cached weight."""
    assert layer(cast_bytes, "delayed", needs_tn=True, microbatches=4, rerun=True) == (4 * PLAIN + 2 * NORMED, 0)


def test_kernel_launches_of_one_layer():
    """Current: amax, scale and cast(+transpose) kernels per plain input, weight and gradient (3), a
    scale and a cast kernel per norm output (2; the amax in the norm); delayed: one cast(+transpose)
    kernel each, and one transpose kernel per norm output. Q/K/V share one input and FC1's gate and
    up another: 2 plain inputs, 2 norm outputs, 7 weights, 7 gradients."""
    assert layer(cast_kernels, "current", needs_tn=True) == (2 * 3 + 2 * 2 + 7 * 3, 7 * 3) == (31, 21)
    assert layer(cast_kernels, "delayed", needs_tn=True) == (2 + 2 + 7, 7) == (11, 7)
    # the weights' casts once a step over 7 micro-batches; no transposes on Blackwell
    assert layer(cast_kernels, "delayed", needs_tn=True, microbatches=7) == (2 + 2 + 1, 7)
    assert layer(cast_kernels, "delayed", needs_tn=False) == (2 + 7, 7)
    assert layer(cast_kernels, "current", needs_tn=False) == (2 * 3 + 2 * 2 + 7 * 3, 21)


def test_the_amax_histories_and_scales():
    """Per GEMM 3 forward and 2 backward quantizers, each a 1,024-entry fp32 history and an fp32 scale:
    20,500 bytes; a Llama layer's 4 TE modules (Q/K/V fused, output, FC1 fused, FC2) 82,000."""
    assert scaling_state_bytes(RECIPES["delayed"], 1) == 5 * 4 * 1025 == 20_500
    assert scaling_state_bytes(RECIPES["delayed"], 4) == 82_000
    assert scaling_state_bytes(RECIPES["current"], 4) == 0


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_commands_take_it_and_it_casts_less_than_current(capsys):
    seconds, memory = {}, {}
    for recipe in ("current", "delayed"):
        code, out, _ = run(["simulate", "--train", "--model", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "8",
                            "--dp", "8", "--batch", "4", "--framework", "megatron", "--fp8", recipe, "--json"], capsys)
        assert code == 0
        seconds[recipe] = json.loads(out)["step"]["compute_seconds"]
        memory[recipe] = json.loads(out)["parallel"]["per_rank"]
    assert seconds["delayed"] < seconds["current"] and memory["delayed"] == memory["current"]
    code, out, _ = run(["plan", "--model", "gpt2", "--hardware", "h100-sxm", "--gpus", "8", "--fp8", "delayed",
                        "--json"], capsys)
    assert code == 0 and {row["layout"]["fp8"] for row in json.loads(out)["feasible"]} == {"delayed"}
    # estimate: the same memory as current scaling's (no weight copy, the amax histories not counted), the
    # report the same to the byte but the recipe's name on the layout line
    printed = {}
    for recipe in ("current", "delayed"):
        code, printed[recipe], _ = run(["estimate", "--model", "gpt2", "--hardware", "h100-sxm", "--gpus", "8",
                                        "--framework", "megatron", "--fp8", recipe], capsys)
        assert code == 0
    assert "tp 1 x pp 1 x dp 8, FP8 delayed, ZeRO 0" in printed["delayed"]
    assert printed["delayed"] == printed["current"].replace("FP8 current", "FP8 delayed")


def test_bad_input_is_one_line(capsys):
    listed = "'tensorwise', 'rowwise', 'current', 'delayed', 'blockwise', 'mxfp8', 'nvfp4'"
    for command in (["simulate", "--train"], ["plan"], ["estimate"]):
        code, out, err = run(command + ["--model", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "8",
                                        "--fp8", "delay"], capsys)
        assert (code, out, err.strip()) == (2, "", f"error: Invalid value for '--fp8': 'delay' is not one of "
                                                   f"{listed}."), command


def test_megatron_core_hands_transformer_engine_the_master_weights_under_delayed(capsys):
    """optimizer_config.py: the precision-aware optimizer keeps TE's master weights where fp8_recipe
    is None or 'delayed': te-master runs with --fp8 delayed, the settings that keep Megatron-Core's
    fp32 master are refused in one line."""
    base = ["simulate", "--train", "--model", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "8", "--dp", "8",
            "--framework", "megatron", "--zero", "1", "--fp8", "delayed", "--precision-aware-optimizer"]
    assert run(base + ["te-master"], capsys)[0] == 0
    for name in ("fp32", "bf16-moments"):
        code, out, err = run(base + [name], capsys)
        assert (code, out) == (2, "") and err.strip() == (
            f"error: layout: with delayed scaling (--fp8 delayed) Megatron-Core hands Transformer Engine the master "
            f"weights (fp8_recipe 'delayed'), which {name} does not model; use --precision-aware-optimizer te-master.")
