"""torch's context-parallel ring under torch.compile (StepTime.traced_ring, layout/context.py): a traced
functional collective is waited at once (torch/distributed/_functional_collectives.py _maybe_wrap_tensor:
`if _are_we_tracing(): return wait_tensor(self)`), so the key and value gradients' sends
(permute_tensor -> all_to_all_single) are exposed like the all-gather; eager, the sends hide under the
ring's attention calls."""

from __future__ import annotations

import pytest

from costmodel.layout.kernel_step import KernelStepTime
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup

ROW = "torchtitan llama3.1-8b fsdp1 cp8 262144 compile float8 8 GPUs"


def _timer(row: str, **changes):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row)
    estimate, hardware, options = train_setup(run, data["sources"]["torchtitan"])
    return estimate, step_time(estimate, hardware, time_model="kernels", **{**options, **changes})


def test_a_compiled_torch_ring_exposes_its_sends():
    """The 8B at 262,144 tokens on 8 GPUs (CP 8, compiled): a micro-batch's all-gathers 0.9983 s and the fp32
    gradient sends 0.5700 s, all exposed (1.5683 s), where eager timing would hide the sends under the
    attention; the step 43.844 s -> 44.357 s (the sends' share of the hidden-collective slowdown gone), 44.370 s
    with session 31's loss traffic (blocks/head.py fused_loss_bytes)."""
    estimate, timer = _timer(ROW)
    assert isinstance(timer, KernelStepTime) and timer.traced_ring
    stage = estimate.stages[0]
    cp, m = estimate.communication(stage)["cp"], estimate.layout.microbatches
    gathered = timer.collective("cp", "all_gather", cp["all_gather"] / m)
    sent = timer.collective("cp", "send", cp["send"] / m)
    assert (gathered, sent) == (pytest.approx(0.9983, abs=1e-4), pytest.approx(0.5700, abs=1e-4))
    assert timer.stage(stage)["cp"] == pytest.approx(gathered + sent, rel=1e-12)
    assert timer.step()["seconds"] == pytest.approx(44.372, abs=1e-3)  # 44.370 before wt46_mgsoftmax (rerun launches)


def test_an_eager_ring_hides_its_sends():
    estimate, timer = _timer(ROW, compiled=False)
    assert not timer.traced_ring
    stage = estimate.stages[0]
    cp, m = estimate.communication(stage)["cp"], estimate.layout.microbatches
    assert timer.stage(stage)["cp"] == pytest.approx(timer.collective("cp", "all_gather", cp["all_gather"] / m), rel=1e-12)
