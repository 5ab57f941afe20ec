"""HybridEP's dispatch and combine at NVIDIA's measured rates (costmodel/layout/hybridep_rates.py): the
figures as deepseek-ai/DeepEP docs/README_Hybrid-EP.md prints them, the bytes its benchmark divides
(tests/test_hybrid_ep.py: a rank's received tokens inside an NVLink domain, a token's distinct nodes
across nodes), where the rates apply and where the link rule stays."""

from __future__ import annotations

import math

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_rates import kernel_facts
from costmodel.layout import Layout
from costmodel.layout.experts import check_dispatcher_peers, flex_copies, flex_seconds

# docs/README_Hybrid-EP.md (stored at 41cad94449), 'Torch API' columns 'Dispatch (BF16)' and 'Combine', GB/s:
H100_IB_16_SMS = {16: (54.47, 53.35), 32: (47.36, 52.53), 64: (41.24, 46.57)}  # 'H100 Platform', SM Count 16
B200_NVL_16_SMS = {8: (535.94, 530.86)}  # 'B200 Platform', HybridEP, Torch API, 16 SMs
GB200_NVL_32_SMS = {8: (545.71, 568.94), 16: (523.48, 521.55), 24: (507.32, 483.76), 32: (484.22, 464.54),
                    36: (479.02, 447.89)}  # 'GB200 Platform', SM Count 32
ONE_WAY = 4096 * 7168 * 2  # the README's 4,096 tokens of hidden 7,168 in BF16


def _layout(ep: int, dispatcher: str = "hybridep") -> Layout:
    return Layout(dp=ep, ep=ep, framework="megatron", zero=1, ep_dispatcher=dispatcher)


def test_the_fact_is_the_readme_tables():
    fact = kernel_facts()["hybridep_measured"]
    tables = [(fact["internode"]["h100-sxm"], H100_IB_16_SMS), (fact["nvlink_domain"]["b200"], B200_NVL_16_SMS),
              (fact["nvlink_domain"]["gb200"], GB200_NVL_32_SMS)]
    for entry, table in tables:
        assert {int(r) for r in entry["dispatch_bytes_per_s"]} == set(table)
        for ranks, (dispatch, combine) in table.items():
            assert entry["dispatch_bytes_per_s"][str(ranks)] == pytest.approx(dispatch * 1e9, rel=1e-12)
            assert entry["combine_bytes_per_s"][str(ranks)] == pytest.approx(combine * 1e9, rel=1e-12)
    assert (fact["internode"]["h100-sxm"]["nic_bytes_per_s"], fact["internode"]["h100-sxm"]["sms"]) == (50e9, 16)
    assert (fact["nvlink_domain"]["b200"]["sms"], fact["nvlink_domain"]["gb200"]["sms"]) == (16, 32)


@pytest.mark.parametrize("ep", [16, 32, 64])
def test_h100_across_nodes_takes_the_readme_time(ep):
    """The README's H100 setting (4,096 tokens, 8 local experts a rank, top-8, uniform routing, 8 ranks a
    node): one dispatch and one combine take the IB bytes (a token's distinct nodes, its own included, x
    hidden x 2) over each measured rate, plus the link rule's one latency."""
    hardware = load_hardware("h100-sxm")
    rates = check_dispatcher_peers(_layout(ep), hardware)
    copies = flex_copies(8 * ep, 8, 1, 1, ep, 8)
    seconds = flex_seconds(hardware, 2 * ONE_WAY, 8 * ep, 8, 1, 1, ep, ep, rates)
    dispatch, combine = H100_IB_16_SMS[ep]
    counted = float(copies.nodes) * ONE_WAY
    assert seconds == pytest.approx(counted / (dispatch * 1e9) + counted / (combine * 1e9)
                                    + hardware.collective_latency_s)
    if ep == 16:  # 2 nodes of 64 experts: 2 x (1 - C(64, 8) / C(128, 8)) nodes a token
        assert float(copies.nodes) == pytest.approx(2 * (1 - math.comb(64, 8) / math.comb(128, 8)))
        assert float(copies.nodes) == pytest.approx(1.99381, abs=1e-5)
        assert seconds * 1e3 == pytest.approx(4.354, abs=0.001)  # 117.1 MB at 54.47, then at 53.35 GB/s


@pytest.mark.parametrize("gpu, ep, table", [("b200", 8, B200_NVL_16_SMS), ("gb200", 8, GB200_NVL_32_SMS),
                                            ("gb200", 32, GB200_NVL_32_SMS)])
def test_inside_an_nvlink_domain_takes_the_received_bytes(gpu, ep, table):
    """Inside one NVLink domain the bytes are what a rank receives: a token once per distinct rank it
    reaches, its own included; no latency is added (the measured time holds it)."""
    hardware = load_hardware(gpu)
    rates = check_dispatcher_peers(_layout(ep), hardware)
    copies = flex_copies(8 * ep, 8, 1, 1, ep, ep)
    seconds = flex_seconds(hardware, 2 * ONE_WAY, 8 * ep, 8, 1, 1, ep, ep, rates)
    dispatch, combine = table[ep]
    received = float(copies.ranks) * ONE_WAY
    assert seconds == pytest.approx(received / (dispatch * 1e9) + received / (combine * 1e9))
    if ep == 8:  # 8 x (1 - C(56, 8) / C(64, 8)) ranks a token
        assert float(copies.ranks) == pytest.approx(8 * (1 - math.comb(56, 8) / math.comb(64, 8)))


def test_between_and_beyond_the_measured_ranks():
    """Log-linear in the ranks (GB200) or the nodes (H100) between the measured points; the end values
    beyond (GB200 at EP 64 takes 36 ranks' figures; H100 at 128 ranks, 64's)."""
    gb200 = load_hardware("gb200")
    rates = check_dispatcher_peers(_layout(64), gb200)
    assert (rates["dispatch_bytes_per_s"], rates["combine_bytes_per_s"]) == (479.02e9, 447.89e9)
    rates = check_dispatcher_peers(_layout(12), gb200)  # 12 ranks: between 8 and 16
    assert rates["dispatch_bytes_per_s"] == pytest.approx(
        (545.71 + (523.48 - 545.71) * math.log(12 / 8) / math.log(2)) * 1e9)
    h100 = load_hardware("h100-sxm")
    assert check_dispatcher_peers(_layout(128), h100)["combine_bytes_per_s"] == 46.57e9
    rates = check_dispatcher_peers(_layout(24), h100)  # 3 nodes: between 2 and 4
    assert rates["dispatch_bytes_per_s"] == pytest.approx((54.47 + (47.36 - 54.47) * math.log(1.5) / math.log(2)) * 1e9)


def test_where_the_link_rule_stays():
    """A GPU or group the README does not time keeps the link rule: H100 inside one node, H200 and GB300,
    DeepEP and the all-to-all dispatcher."""
    assert check_dispatcher_peers(_layout(8), load_hardware("h100-sxm")) is None
    assert check_dispatcher_peers(_layout(16), load_hardware("h200")) is None
    assert check_dispatcher_peers(_layout(8), load_hardware("gb300")) is None
    assert check_dispatcher_peers(_layout(8, "deepep"), load_hardware("b200")) is None
    assert check_dispatcher_peers(_layout(8, "alltoall"), load_hardware("gb200")) is None
    h100 = load_hardware("h100-sxm")
    other_card = h100.replace(inter_node_bandwidth_bytes_per_s=25e9)
    assert check_dispatcher_peers(_layout(16), other_card) is None
    assert check_dispatcher_peers(_layout(16), h100) is not None


@pytest.mark.slow
def test_two_published_rows_step_with_the_measured_rates(monkeypatch):
    """`python cli.py published`'s 26.04.01 Qwen3-30B-A3B rows: on 16 H100 (EP 16 across two nodes, HybridEP)
    11,217.5 tokens/s a GPU (1.25x of 8,960), 10,446.8 (1.17x) on the link rule; on 8 GB200 (EP 8 in the rack)
    30,375.2 (1.16x of 26,112), 32,127.9 (1.23x) on the link rule (the rates dropped: hybridep_rates -> None)."""
    from costmodel.layout import hybridep_rates
    from reports.published_runs import other_runs_data, train_tokens

    data = other_runs_data()
    runs, source = {r["id"]: r for r in data["runs"]}, data["sources"]["megatron-bridge-moe"]
    h100, gb200 = (runs[f"megatron-bridge-moe 26.04.01 qwen3-30b-a3b {name}"] for name in ("fp8 16xh100", "mxfp8 8xgb200"))
    assert (h100["ep_dispatcher"], gb200["ep_dispatcher"]) == ("hybridep", "hybridep")
    # 11,217.5, 30,375.2, 10,446.8 and 32,127.9 before session 43's one QKV GEMM for Megatron's linear_qkv (wt43_review)
    assert round(train_tokens(h100, source, "kernels"), 1) == 11247.5
    assert round(train_tokens(gb200, source, "kernels"), 1) == 30392.7
    monkeypatch.setattr(hybridep_rates, "hybridep_rates", lambda layout, hardware, local: None)
    assert round(train_tokens(h100, source, "kernels"), 1) == 10472.9
    assert round(train_tokens(gb200, source, "kernels"), 1) == 32147.5
