"""serve's --attention-backend (kernel_facts.json "serving_attention_backends"): a backend times the step's
attention call at its kernel's published figures (flash-attn2: FlashAttention-2's, the default; flash-attn3:
FlashAttention-3's, Hopper only); a backend with no published kernel rate (flashinfer, xformers) is refused in one
line, as is a kernel's rate under the roofline."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import cli
from costmodel.api import load_model
from costmodel.attention_kernels import serving_kernel
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_rates import kernel_facts
from costmodel.kernel_shapes import AttentionCall
from costmodel.serving.replica import build_replica
from costmodel.serving.steptime import StepTime

BACKENDS = kernel_facts()["serving_attention_backends"]["backends"]


def test_each_backend_names_its_kernel_or_is_refused():
    assert {name: e["kernel"] for name, e in BACKENDS.items()} == {
        "flash-attn2": "flash2", "flash-attn3": "flash3", "flashinfer": None, "xformers": None}
    assert serving_kernel(BACKENDS, "flash-attn3") == "flash3"
    for name in ("flashinfer", "xformers"):
        with pytest.raises(ConfigError, match=f"--attention-backend {name}: no published kernel rate"):
            serving_kernel(BACKENDS, name)
    with pytest.raises(ConfigError, match="must be one of flash-attn2, flash-attn3, flashinfer, xformers"):
        serving_kernel(BACKENDS, "flash_attn")


def test_flash_attn3_times_a_prefill_at_its_published_rate():
    # Llama 2 70B (FP8 weights, as Krai's runs) on an H200, a 4,096-token prompt in one step: the attention
    # call's compute at FlashAttention-3's
    # 579 TFLOP/s against FlashAttention-2's 319 at 4k (kernel_facts.json attention_efficiency, hopper: the FA-3
    # paper's causal head-128 forward figures), 80 layers; the rest of the step is the same.
    cfg, h200 = load_model("llama2-70b"), load_hardware("h200")
    _, fa2, setup2 = build_replica(cfg, h200, scheduler="vllm-v0", weight_dtype="fp8")
    _, fa3, setup3 = build_replica(cfg, h200, scheduler="vllm-v0", weight_dtype="fp8",
                                   attention_backend="flash-attn3")
    assert (setup2["attention_backend"], setup3["attention_backend"]) == ("flash-attn2", "flash-attn3")
    assert fa3.timer.attention_efficiency(4096) / fa2.timer.attention_efficiency(4096) == pytest.approx(579 / 319)
    call = AttentionCall(batch=1, heads=64, n_q=4096, n_kv=4096, head_dim=128, kv_heads=8)  # a layer's call
    compute2, compute3 = fa2.timer.attention_terms(call)[0], fa3.timer.attention_terms(call)[0]
    assert compute3 / compute2 == pytest.approx(319 / 579)
    assert fa2.seconds([4096], [4096]) - fa3.seconds([4096], [4096]) == pytest.approx(80 * (compute2 - compute3))


@pytest.mark.parametrize("args, message", [
    (["--hardware", "h200", "--attention-backend", "xformers"], "error: --attention-backend xformers: no published"),
    (["--hardware", "h200", "--attention-backend", "flashinfer"], "error: --attention-backend flashinfer: no published"),
    (["--hardware", "a100-80gb", "--attention-backend", "flash-attn3"],
     "error: attention kernel 'flash3' has no published figures on ampere; it has on: hopper."),
    (["--hardware", "h200", "--attention-backend", "flash-attn3", "--time-model", "roofline"],
     "error: --attention-backend flash-attn3 names a kernel's published rates"),
    # the backend is the attention kernel: --attention sdpa beside it had been timed at FA-3's rates silently
    (["--hardware", "h200", "--attention-backend", "flash-attn3", "--attention", "sdpa"],
     "error: --attention-backend flash-attn3 runs its own flashattention kernel; --attention sdpa names another"),
    # an empty value is refused, not read as the default (it was: `attention_backend or flash-attn2`)
    (["--hardware", "h200", "--attention-backend", ""],
     "error: --attention-backend must be one of flash-attn2, flash-attn3, flashinfer, xformers, got ''."),
])
def test_cli_refuses_in_one_line(args, message):
    result = CliRunner().invoke(cli.cli, ["serve", "--model", "llama2-7b", "--rate", "1", "--requests", "4", *args])
    assert result.exit_code == 2 and message in result.output.lower() and len(result.output.strip().splitlines()) == 1


def test_the_default_is_flash_attn2_and_moves_nothing():
    cfg, h200 = load_model("llama2-7b"), load_hardware("h200")
    (_, named, setup), (_, plain, _) = (build_replica(cfg, h200, attention_backend="flash-attn2"),
                                        build_replica(cfg, h200))
    assert setup["attention_backend"] == "flash-attn2"
    assert named.seconds([1, 300], [1000, 300]) == plain.seconds([1, 300], [1000, 300])
