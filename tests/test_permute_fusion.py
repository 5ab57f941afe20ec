"""Megatron-Core's all-to-all dispatcher without --moe-permute-fusion (costmodel/layout/permute_fusion.py):
its permute, chunk sorts and unpermute as eager torch ops, counted by running Megatron-Core's lines on the CPU
(validate/permute_fusion_ops.py), priced as launches and the bytes beyond the fused path's on the GPU and as
forward calls on the host (kernel_facts.json megatron_permute_unfused)."""

from __future__ import annotations

import json

import pytest

from costmodel.layout import permute_fusion
from reports.published_runs import other_runs_data, train_setup

GUIDE_01 = "megatron-lm-dsv3-gb200 01 baseline mxfp8 256xgb200"


@pytest.mark.parametrize("dtype, element", [("bfloat16", 2), ("float32", 4)])
@pytest.mark.parametrize("tokens, hidden, experts, k, chunks", [(37, 24, 12, 3, 6), (29, 40, 20, 4, 10)])
def test_the_counts_are_megatrons_unfused_permutations_measured(dtype, element, tokens, hidden, experts, k, chunks):
    """At odd sizes, in bf16 and fp32, the kernels and bytes of Megatron-Core's unfused permute, chunk sorts and
    unpermute equal kernel_facts' counts and coefficients (the measurement reads scatter_add_'s expanded
    index as 8 S d bytes, the model 8 S)."""
    torch = pytest.importorskip("torch")
    from validate.permute_fusion_ops import unfused_permute_kernels

    ops = unfused_permute_kernels(tokens, hidden, experts, k, chunks, dtype=getattr(torch, dtype))
    facts = permute_fusion.facts()
    slots = tokens * k
    for side in ("forward", "backward"):
        assert len(ops[side]) == facts["unfused"][f"{side}_kernels"]
        counted = permute_fusion.layer_bytes(facts["unfused"][f"{side}_bytes"], element, tokens, hidden, experts, slots)
        assert sum(b for _, b in ops[side]) == counted + facts["expanded_index_bytes"] * slots * hidden


def test_deepseek_v3s_permutations_at_the_guides_shapes():
    """DeepSeek-V3 at 4,096 tokens (S 32,768, d 7,168, E 256, bf16): 7 + 5 kernels beyond the fused 4 + 4, and
    beyond the fused e d (2T + 6S) a direction: forward 2 e T d + 24 T E + 52 S = 144,310,272 bytes, backward
    e (2 T d + S d) + 24 T E + 40 S = 613,679,104; at 5 us a launch and 6.4 TB/s, 178.44 us a layer."""
    data = other_runs_data()
    run = dict(next(r for r in data["runs"] if r["id"] == GUIDE_01), moe_permute_fusion=False)
    estimate, hardware, _ = train_setup(run, data["sources"]["megatron-lm-dsv3-gb200"])
    assert 2 * 2 * 4096 * 7168 + 24 * 4096 * 256 + 52 * 32768 == 144_310_272
    assert 2 * (2 * 4096 * 7168 + 32768 * 7168) + 24 * 4096 * 256 + 40 * 32768 == 613_679_104
    seconds = permute_fusion.layer_seconds(estimate, hardware, 6.4e12)
    assert seconds == pytest.approx(12 * 5e-6 + (144_310_272 + 613_679_104) / 6.4e12, rel=1e-12)
    assert permute_fusion.extra_calls() == (7, -4)


def _simulate(*extra):
    from click.testing import CliRunner

    import cli

    return CliRunner().invoke(cli.cli, ["simulate", "--model", "qwen3-30b-a3b", "--train", "--hardware", "gb200",
                                        "--dp", "8", "--ep", "8", "--seq-len", "256", "--batch", "1", *extra])


def test_simulate_no_moe_permute_fusion_on_a_host_bound_step():
    """Qwen3 30B-A3B on 8 GB200 at 1 x 256 tokens (host-bound windows): 48 layers x (11 - 4) forward calls less
    48 x 4 backward, 144 x 37.08 us; the layout line says so."""
    steps = []
    for extra in ((), ("--no-moe-permute-fusion",)):
        result = _simulate("--framework", "megatron", "--json", *extra)
        assert result.exit_code == 0, result.output
        steps.append(json.loads(result.output[result.output.index("{"):])["step"])
    assert steps[1]["seconds"] - steps[0]["seconds"] == pytest.approx(144 * 37.08e-6, rel=1e-9)
    text = _simulate("--framework", "megatron", "--no-moe-permute-fusion")
    assert "(ep 8 of dp), the permutations unfused, ZeRO 0" in text.output


def test_bad_input_is_one_line():
    """Another framework or dispatcher, one expert a rank: one error line, exit 2."""
    deepspeed = _simulate("--no-moe-permute-fusion")
    assert deepspeed.exit_code == 2 and "dropless all-to-all dispatcher" in deepspeed.output
    flex = _simulate("--framework", "megatron", "--ep-dispatcher", "hybridep", "--no-moe-permute-fusion")
    assert flex.exit_code == 2 and "dropless all-to-all dispatcher" in flex.output
    from click.testing import CliRunner

    import cli

    one = CliRunner().invoke(cli.cli, ["simulate", "--model", "qwen3-30b-a3b", "--train", "--hardware", "gb200",
                                       "--dp", "128", "--ep", "128", "--framework", "megatron",
                                       "--no-moe-permute-fusion"])
    assert one.exit_code == 2 and "more than one expert a rank" in one.output
