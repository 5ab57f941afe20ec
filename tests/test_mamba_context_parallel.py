"""Context parallelism beside Mamba-2 mixers, as Megatron-Core runs it (megatron/core/ssm/
mamba_context_parallel.py MambaContextParallel at d98e8a64dd; costmodel/layout/context.py): per mixer
and pass, five all-to-alls before the conv and scan (z, x, B, C, dt: [n / cp, b, w] -> [n, b, w / cp])
and one after (y back), payload b (n / cp) e (3 H P + 2 G N + H); only the layers that attend
exchange keys and values.

Exact integers on the odd nemotron_h sizes of tests/test_hf_nemotron_h.py (d 48; Mamba-2 6 heads of
5, state 7, 2 groups; attention 4 heads, 2 KV heads of 10), the pattern M*-M- (two Mamba layers, one
attention layer, two MLP layers), b 1, n 12, bf16, cp 2: a rank's 6 tokens.
  a mixer's pass   2 x 6 x (3 x 30 + 2 x 2 x 7 + 6) = 12 x 124 = 1,488 bytes
  the step's       2 mixers x (forward + backward) = 5,952; full recomputation's rerun + 2,976
  the attention's  its keys and values 2 x 6 x 2 x 10 x 2 = 480 bytes: all-gathered cp x 480 = 960
                   forward and 960 again backward, for its one layer (not five)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.layout import Layout, ParallelEstimate

sys.path.insert(0, str(Path(__file__).parent))
from test_hf_nemotron_h import ODD  # noqa: E402


@pytest.fixture(scope="module")
def cfg():
    return from_hf_config(dict(ODD, intermediate_size=38, hybrid_override_pattern="M*-M-"), "odd-hybrid-cp")


def _estimate(cfg, cp: int = 2, tp: int = 1, recompute: str = "none", seq: int = 12,
              framework: str = "megatron") -> ParallelEstimate:
    workload = Workload(seq_len=seq, batch=1, dtype="bf16", impl="megatron", attention="flash", recompute=recompute)
    zero = 1 if framework == "megatron" else 2
    return ParallelEstimate(cfg, workload, Layout(tp=tp, sp=tp > 1, cp=cp, dp=1, framework=framework, zero=zero))


def test_the_mixers_all_to_alls_and_the_one_attention_layers_exchange(cfg):
    estimate = _estimate(cfg)
    moved = estimate.communication(estimate.stages[0])["cp"]
    assert 2 * 6 * (3 * 6 * 5 + 2 * 2 * 7 + 6) == 1_488
    assert moved["all_to_all"] == 2 * 2 * 1_488 == 5_952
    assert moved["all_gather"] == 2 * 2 * 480 == 1_920  # one attention layer: forward and backward
    full = _estimate(cfg, recompute="full")
    assert full.communication(full.stages[0])["cp"]["all_to_all"] == 5_952 + 2 * 1_488


def test_the_mixers_exchange_is_timed_on_the_critical_path(cfg, monkeypatch):
    """The time model adds the all-to-alls to the context-parallel share, exposed: the step's cp
    time less the same step's without them is one all-to-all of 5,952 bytes over 2 ranks."""
    from costmodel.collectives import collective_seconds
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import StepTime

    hardware = load_hardware("h100-sxm")
    step = StepTime(_estimate(cfg), hardware)
    stage = step.estimate.stages[0]
    with_mixers = step.stage(stage)["cp"]
    moved = step.estimate.communication(stage)
    without = {**moved, "cp": {k: v for k, v in moved["cp"].items() if k != "all_to_all"}}
    monkeypatch.setattr(step.estimate, "communication", lambda stage: without)
    all_to_all = collective_seconds(hardware, "all_to_all", 5_952, 2, 2, 1, "nccl", "bf16")
    assert all_to_all > 0
    assert with_mixers - step.stage(stage)["cp"] == pytest.approx(all_to_all, rel=1e-9)


def test_megatrons_conditions_are_refused_in_one_sentence(cfg):
    """nheads / tp divisible by cp (6 heads: cp 4 refused, and tp 2 cp 2's 3 heads); the groups a rank
    holds divisible by cp (cp 3: 6 heads divide, 2 groups do not; Megatron's repetition of B and C
    is not modelled); Megatron-Core's only."""
    with pytest.raises(ConfigError, match="--cp 4 must divide the 6 Mamba-2 heads"):
        _estimate(cfg, cp=4, seq=16)
    with pytest.raises(ConfigError, match="--cp 2 must divide the 3 Mamba-2 heads"):
        _estimate(cfg, tp=2, seq=16)
    with pytest.raises(ConfigError, match="--cp 3 must divide the 2 Mamba-2 groups"):
        _estimate(cfg, cp=3)
    with pytest.raises(ConfigError, match="Megatron-Core's \\(MambaContextParallel\\)"):
        _estimate(cfg, framework="fsdp2")


def test_nemotron_3_nano_runs_at_cp_2(capsys):
    """The command that was refused (tests/test_mamba_tensor_parallel.py, before) now runs."""
    from tests.cli_run import run_main

    code, out, err = run_main(["simulate", "-m", "nemotron-3-nano", "--train", "--cp", "2", "--gpus", "2",
                               "--framework", "megatron", "--seq-len", "4096"], capsys)
    assert code == 0 and "error" not in err


def test_other_mixers_under_context_parallelism_are_refused_in_one_sentence():
    """Gated DeltaNet (Qwen3-Next) and LFM2's short convolutions exchange nothing in the model: their
    layers would run on n / cp tokens with no exchange, a step too fast; refused."""
    from test_hf_lfm2 import LFM2
    from test_hf_qwen_next import QWEN3_NEXT

    for config, mixer in ((QWEN3_NEXT, "deltanet"), (LFM2, "shortconv")):
        cfg = from_hf_config(config, f"odd-{mixer}")
        with pytest.raises(ConfigError, match=f"context parallelism with {mixer} mixers is not modelled"):
            _estimate(cfg, seq=8)
