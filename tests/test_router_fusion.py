"""Megatron-Core's router without --moe-router-fusion (costmodel/layout/router_fusion.py): its eager kernels,
counted by running Megatron-Core's unfused router lines on the CPU (validate/router_fusion_ops.py), priced as
launches and bytes on the GPU and as forward calls on the host (kernel_facts.json megatron_router_unfused)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from costmodel.layout import router_fusion
from costmodel.layout.host_syncs import stage_calls
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup

GUIDE_01 = "megatron-lm-dsv3-gb200 01 baseline mxfp8 256xgb200"


def _cfg(router: str, experts: int, k: int, groups: int = 1, per_token: int = 1) -> SimpleNamespace:
    return SimpleNamespace(router=router, n_experts=experts, top_k=k, expert_groups=groups,
                           expert_groups_per_token=per_token)


@pytest.mark.parametrize("cfg, kwargs", [
    (_cfg("sigmoid", 24, 6, 4, 2), dict(score_function="sigmoid", groups=4, group_topk=2, scaling_factor=2.5,
                                        expert_bias=True)),
    (_cfg("sigmoid", 30, 4, 5, 4), dict(score_function="sigmoid", groups=5, group_topk=4, scaling_factor=2.5,
                                        expert_bias=True)),
    (_cfg("sigmoid", 36, 5), dict(score_function="sigmoid", scaling_factor=5.0, expert_bias=True)),
    (_cfg("softmax", 20, 3), dict(score_function="softmax")),
])
def test_the_counts_are_megatrons_unfused_router_measured(cfg, kwargs):
    """At odd sizes (37 tokens), the kernels Megatron-Core's unfused router launches and their bytes equal
    kernel_facts' counts and coefficients: a wrong count or coefficient fails here."""
    pytest.importorskip("torch")
    from validate.router_fusion_ops import unfused_router_kernels

    for part, aux_loss in (("with_aux_loss", True), ("router", False)):
        ops = unfused_router_kernels(37, cfg.n_experts, cfg.top_k, aux_loss=aux_loss, **kwargs)
        counted = router_fusion.variant(cfg)[part]
        for side in ("forward", "backward"):
            assert len(ops[side]) == counted[f"{side}_kernels"]
            assert sum(b for _, b in ops[side]) == router_fusion.unfused_bytes(counted[f"{side}_bytes"], cfg, 37)


def test_deepseek_v3s_router_at_the_guides_shapes():
    """DeepSeek-V3 (E 256, k 8, 8 groups, 4 a token) at 4,096 tokens: 36 forward and 23 backward kernels,
    166,534,156 + 120,721,416 bytes (what validate/router_fusion_ops.py prints); beside the 3 + 3 fused
    kernels, 53 launches of 10 us / 2 and the bytes at 8 TB/s x 0.8 (the GB200 file): 309.88 us a layer."""
    data = other_runs_data()
    run = dict(next(r for r in data["runs"] if r["id"] == GUIDE_01))
    estimate, hardware, options = train_setup(run, data["sources"]["megatron-lm-dsv3-gb200"])
    counted = router_fusion.variant(estimate.cfg)["with_aux_loss"]
    assert router_fusion.router_tokens(estimate) == 4096
    assert router_fusion.unfused_bytes(counted["forward_bytes"], estimate.cfg, 4096) == 166_534_156
    assert router_fusion.unfused_bytes(counted["backward_bytes"], estimate.cfg, 4096) == 120_721_416
    assert router_fusion.extra_calls(estimate) == (33, -2)
    seconds = router_fusion.layer_seconds(estimate, hardware, 8e12 * 0.8)
    assert seconds == pytest.approx(53 * 5e-6 + 287_255_572 / 6.4e12, rel=1e-12)


def test_the_guides_baseline_rank_gains_its_router_kernels_and_calls():
    """Row 01's slowest rank runs 6 MoE layers a micro-batch: 178 -> 376 forward host calls (6 x 33), 112 ->
    100 backward (6 x -2), and its compute grows by 6 layers x 309.88 us; the sync windows stay GPU-bound."""
    data = other_runs_data()
    source = data["sources"]["megatron-lm-dsv3-gb200"]
    run = next(r for r in data["runs"] if r["id"] == GUIDE_01)
    assert run["moe_router_fusion"] is False
    times = {}
    for fused in (True, False):
        estimate, hardware, options = train_setup(dict(run, moe_router_fusion=fused), source)
        timed = step_time(estimate, hardware, time_model="kernels", host_syncs=(), **options)
        stage = estimate.stages[timed.step()["slowest_stage"]]
        times[fused] = (stage_calls(estimate, stage, ()), timed.stage(stage))
    assert times[True][0] == (178, 112) and times[False][0] == (376, 100)
    added = times[False][1]["compute"] - times[True][1]["compute"]
    assert added == pytest.approx(6 * (53 * 5e-6 + 287_255_572 / 6.4e12), rel=1e-9)
    assert times[False][1]["host"] == 0.0


def test_a_moe_router_graph_captures_the_unfused_calls():
    """Under --cuda-graph-scope moe_router the router's calls, fused or not, are one replay."""
    data = other_runs_data()
    source = data["sources"]["megatron-lm-dsv3-gb200"]
    run = next(r for r in data["runs"] if r["id"] == GUIDE_01)
    calls = []
    for fused in (True, False):
        estimate, _, _ = train_setup(dict(run, moe_router_fusion=fused), source)
        calls.append(stage_calls(estimate, estimate.stages[3], ("moe_router",)))
    assert calls[0] == calls[1]


def _simulate(*extra):
    from click.testing import CliRunner

    import cli

    args = ["simulate", "--model", "qwen3-30b-a3b", "--train", "--hardware", "gb200", "--dp", "8", "--ep", "8",
            "--seq-len", "256", "--batch", "1", "--framework", "megatron", *extra]
    return CliRunner().invoke(cli.cli, args)


def test_simulate_no_moe_router_fusion_on_a_host_bound_step():
    """Qwen3 30B-A3B on 8 GB200 at 1 x 256 tokens (host-bound windows, tests/test_host_syncs.py): its softmax
    router off its fusion adds 48 layers x (18 - 3) forward calls less 48 x 2 backward, 624 x 37.08 us."""
    steps = []
    for extra in ((), ("--no-moe-router-fusion",)):
        result = _simulate(*extra, "--json")
        assert result.exit_code == 0, result.output
        steps.append(json.loads(result.output[result.output.index("{"):])["step"])
    assert steps[1]["seconds"] - steps[0]["seconds"] == pytest.approx(624 * 37.08e-6, rel=1e-9)
    text = _simulate("--no-moe-router-fusion", "--moe-router-load-balancing-type", "none")
    assert text.exit_code == 0 and "(ep 8 of dp), the MoE router unfused (no aux loss), ZeRO 0" in text.output
    # without the aux loss: 48 x (8 - 1) forward calls less 48 x 1 backward, 288 calls over the fused step
    result = _simulate("--no-moe-router-fusion", "--moe-router-load-balancing-type", "none", "--json")
    no_aux = json.loads(result.output[result.output.index("{"):])["step"]
    assert no_aux["seconds"] - steps[0]["seconds"] == pytest.approx(288 * 37.08e-6, rel=1e-9)


def test_bad_input_is_one_line():
    """Another framework, a dense model, an inference layout: one error line, exit 2."""
    other = _simulate("--no-moe-router-fusion")  # on Megatron-Core: runs
    assert other.exit_code == 0
    from click.testing import CliRunner

    import cli

    base = ["simulate", "--train", "--hardware", "gb200", "--dp", "8", "--no-moe-router-fusion"]
    deepspeed = CliRunner().invoke(cli.cli, base + ["--model", "qwen3-30b-a3b", "--ep", "8"])
    assert deepspeed.exit_code == 2 and "Megatron-Core's router without its fused kernels" in deepspeed.output
    dense = CliRunner().invoke(cli.cli, base + ["--model", "llama2-7b", "--framework", "megatron"])
    assert dense.exit_code == 2 and "no routed experts" in dense.output
    inference = CliRunner().invoke(cli.cli, ["simulate", "--model", "qwen3-30b-a3b", "--tp", "8",
                                             "--no-moe-router-fusion"])
    assert inference.exit_code == 2 and "--[no-]moe-router-fusion: training layout options" in inference.output
