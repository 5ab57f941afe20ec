"""What benchmarks/sweep_anomalies.py found and what was fixed: an eager decoding step bound by its GPU
kept none of its kernels' GPU-side launch cost, so replaying it from a CUDA graph (which pays
graph_kernel_s a kernel) came out slower; and a small part of the sweep itself, which must find nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import costmodel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import sweep_anomalies  # noqa: E402


def _tpot(layout, graphs: bool) -> float:
    d = costmodel.simulate("llama3-8b", "h100-sxm", prompt=8192, gen=32, batch=32, attention="sdpa",
                           cuda_graphs=graphs, layout=layout).to_dict()
    return (d.get("generation") or d["decode"])["time_per_output_token"]


@pytest.mark.parametrize("layout", [None, {"tp": 2}])
def test_graphs_never_slower_than_a_gpu_bound_eager_step(layout):
    """Batch 32 at an 8k context on an H100: the eager step waits on its GPU, not its host (2,488 ops at
    6.55 us, 16.3 ms, against 44 ms of kernels), so a CUDA graph, which removes only the host's launches,
    gains nothing: both steps are the kernels plus 1.3 us a kernel (h100-sxm.json graph_kernel_s). Before the
    fix the eager step dropped those 1.3 us (eager_ops.eager_step_seconds took every launch off) and the
    graphed one was 0.63 ms (tp 1: 44.175 against 44.803 ms) slower."""
    eager, graphed = _tpot(layout, False), _tpot(layout, True)
    assert graphed <= eager
    assert graphed == pytest.approx(eager, rel=1e-12)


def test_host_bound_eager_step_unchanged():
    """Batch 1, a 128-token prompt: the host bounds the eager step (2,488 ops x 6.55 us = 16.28 ms, the kernels
    about 6 ms), so the kernels' GPU-side cost does not show; the graphed step (no host term) is the faster."""
    d = costmodel.simulate("llama3-8b", "h100-sxm", prompt=128, gen=32, batch=1, attention="sdpa").to_dict()
    host = d["decode"]["host"]
    assert host["bound"] and d["decode"]["time_per_output_token"] == pytest.approx(2488 * host["op_seconds"], rel=1e-12)
    graphed = costmodel.simulate("llama3-8b", "h100-sxm", prompt=128, gen=32, batch=1, attention="sdpa",
                                 cuda_graphs=True).to_dict()["decode"]["time_per_output_token"]
    assert graphed < 0.4 * d["decode"]["time_per_output_token"]


@pytest.mark.slow
def test_quick_sweep_finds_nothing(capsys):
    """The sweep's --quick grid (3 models' training, 6 models' decoding): every invariant holds."""
    code = sweep_anomalies.main(["--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert ", 0 violations" in out
