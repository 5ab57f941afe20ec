"""DeepEP's internode normal kernels at DeepSeek's measured rates (costmodel/layout/deepep_internode.py):
the figures as deepseek-ai/DeepEP docs/legacy.md prints them, the bytes its test divides (the distinct
nodes a token's experts are on, its own included), where the rule applies and where the link rule stays,
and the published rows it moves, before -> after."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_rates import kernel_facts
from costmodel.layout import Layout
from costmodel.layout.deepep_internode import internode_rates
from costmodel.layout.experts import check_dispatcher_peers, flex_copies, flex_seconds
from reports.published_runs import other_runs_data, train_gpu_hours, train_tokens

# DeepEP docs/legacy.md, 'Normal kernels with NVLink and RDMA forwarding', internode rows:
# EP: (dispatch, combine) bottleneck bandwidth in GB/s (RDMA), H800 + CX7 400 Gb/s (~50 GB/s).
README = {16: (43, 43), 32: (58, 57), 64: (51, 50)}


def test_the_fact_is_the_readme_table():
    fact = kernel_facts()["deepep_internode"]
    assert fact["nic_bytes_per_s"] == 50e9
    for ep, (dispatch, combine) in README.items():
        assert fact["dispatch_bytes_per_s"][str(ep)] == dispatch * 1e9
        assert fact["combine_bytes_per_s"][str(ep)] == combine * 1e9


@pytest.mark.parametrize("ep", [16, 32, 64])
def test_the_readme_setting_takes_the_readme_time(ep):
    """DeepSeek-V3's pretraining setting as the README runs it (4,096 tokens of 7,168, 256 experts,
    top-8, top-4 groups, 8 ranks a node; DeepEP's test groups the experts by node, so groups = nodes):
    one dispatch and one combine of bf16 tokens take the test's bytes (distinct nodes x tokens x hidden
    x 2) over each measured rate, plus the link rule's one latency."""
    hardware = load_hardware("h800")
    layout = Layout(dp=ep, ep=ep, framework="megatron", zero=1, ep_dispatcher="deepep")
    rates = check_dispatcher_peers(layout, hardware)
    nodes = ep // 8
    copies = flex_copies(256, 8, nodes, min(4, nodes), ep, 8)
    one_way = 4096 * 7168 * 2
    seconds = flex_seconds(hardware, 2 * one_way, 256, 8, nodes, min(4, nodes), ep, ep, rates)
    dispatch, combine = README[ep]
    counted = float(copies.nodes) * one_way
    assert seconds == pytest.approx(counted / (dispatch * 1e9) + counted / (combine * 1e9)
                                    + hardware.collective_latency_s)
    if ep == 32:  # 4 nodes, no group limit there: 4 x (1 - C(192, 8) / C(256, 8)) nodes a token
        assert float(copies.nodes) == pytest.approx(3.6142, abs=1e-4)
        assert seconds * 1e3 == pytest.approx(7.39, abs=0.01)  # 212 MB at 58, then at 57 GB/s


def test_between_and_beyond_the_measured_nodes():
    """Log-linear in the group's nodes between 2, 4 and 8; the end values beyond."""
    hardware = load_hardware("b200")
    rates = internode_rates(Layout(dp=256, ep=128, framework="megatron", zero=1, ep_dispatcher="deepep"),
                            hardware, 8)
    assert (rates["dispatch_bytes_per_s"], rates["combine_bytes_per_s"]) == (51e9, 50e9)
    # 24 ranks of 8 a node: 3 nodes, between 2 (43) and 4 (58): 43 + 15 log(3/2) / log 2
    rates = internode_rates(Layout(dp=24, ep=24, framework="megatron", zero=1, ep_dispatcher="deepep"), hardware, 8)
    assert rates["dispatch_bytes_per_s"] == pytest.approx(51.774e9, rel=1e-4)


def test_where_the_link_rule_stays():
    """Inside one node, on HybridEP or the all-to-all dispatcher, and on a GPU whose card is not the
    measured 400 Gb/s one (GB300's 800 Gb/s ConnectX-8): no measured rate, the link rule."""
    b200, gb300 = load_hardware("b200"), load_hardware("gb300")
    assert check_dispatcher_peers(Layout(dp=8, ep=8, framework="megatron", zero=1, ep_dispatcher="deepep"), b200) is None
    assert check_dispatcher_peers(Layout(dp=32, ep=32, framework="megatron", zero=1, ep_dispatcher="hybridep"),
                                  b200) is None
    assert internode_rates(Layout(dp=256, ep=256, framework="megatron", zero=1, ep_dispatcher="deepep"), gb300,
                           8) is None


def _row(row_id: str) -> tuple[dict, dict]:
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == row_id)
    return run, data["sources"][row_id.split()[0]]


@pytest.mark.parametrize("row_id, before, after", [
    # kernel model, tokens/s a GPU (`python cli.py published`): before this rule -> after
    ("megatron-bridge-moe 26.04.01 deepseek-v3 mxfp8 256xb200", 3174.9, 3858.9),  # 3178.2, 3862.5 before wt46_mgsoftmax's recomputed launches
    ("automodel-moe deepseek-v3 pp4 vp8 ep64 256xh100", 756.6, 883.9),  # 757.5, 885.3 before wt46_mgsoftmax's recomputed launches
    ("automodel-moe gpt-oss-120b ep64 64xh100", 6055.4, 6914.7),  # 6049.2, 6906.6 before session 43 (wt43_review)
])
def test_rows_moved(row_id, before, after, monkeypatch):
    run, source = _row(row_id)
    assert train_tokens(run, source, "kernels") == pytest.approx(after, abs=0.1)
    # before: the link rule, the measured rates taken away (session 36 compared two typed constants here)
    from costmodel.layout import deepep_internode

    monkeypatch.setattr(deepep_internode, "internode_rates", lambda layout, hardware, local: None)
    assert train_tokens(run, source, "kernels") == pytest.approx(before, abs=0.1)


def test_gpu_hours_row_moved():
    run, source = _row("gpu-hours-deepseek-v3 671b 14.8T tokens")
    assert train_gpu_hours(run, source, "kernels") == pytest.approx(3_125_280, rel=1e-6)  # was 3,192,804; 3,123,608 before wt46_mgsoftmax's recomputed launches
