"""NVLink-bridged pairs inside one PCIe host (interconnect gpus_per_host, session 44 wt44_denseout): a group past the
pair but inside the host runs NCCL's one ring through its GPUs, whose PCIe hops carry the whole ring payload
(costmodel/collectives.collective_seconds). The a100-pcie preset: pairs (gpus_per_node 2) in a host of 4."""

from __future__ import annotations

import dataclasses

import pytest

from costmodel.collectives import collective_seconds
from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware

MIB16 = 16 * 2**20


def test_a_tp4_all_reduce_is_one_pcie_ring():
    """16 MiB over 4 GPUs: 2 x 3/4 of it, 25,165,824 bytes, at 0.8 (nccl_facts' link efficiency) of PCIe Gen4's
    32 GB/s = 983.04 us, plus NCCL's Simple ring latency on PCIe, 8.4 us + 6 steps x 5.7 us = 42.6 us (tuning.cc's
    figures in nccl_facts.json): 1,025.64 us; LL (6.6 + 6 x 1.0 us at half the bandwidth, 1,978.68 us) is slower."""
    hardware = load_hardware("a100-pcie")
    assert (hardware.gpus_per_node, hardware.gpus_per_host) == (2, 4)
    assert collective_seconds(hardware, "all_reduce", MIB16, 4, 4) == pytest.approx(1025.64e-6, rel=1e-12)
    # an all-gather: 3 steps, 3/4 of the payload: 491.52 + 8.4 + 17.1 us
    assert collective_seconds(hardware, "all_gather", MIB16, 4, 4) == pytest.approx(517.02e-6, rel=1e-12)
    # a small call takes LL: 16 KiB x 1.5 at 12.8 GB/s = 1.92 us + 6.6 + 6 x 1.0 us
    assert collective_seconds(hardware, "all_reduce", 16384, 4, 4) == pytest.approx(14.52e-6, rel=1e-12)


def test_the_pair_is_as_before():
    """TP 2 stays on the bridge (the file without the field prices it the same)."""
    hardware = load_hardware("a100-pcie")
    as_nodes = dataclasses.replace(hardware, gpus_per_host=0)
    assert collective_seconds(hardware, "all_reduce", MIB16, 2, 2) == collective_seconds(as_nodes, "all_reduce", MIB16, 2, 2)
    # inside the host, the pairs' old pricing put a third of the ring's PCIe bytes on PCIe: faster than the ring
    assert collective_seconds(as_nodes, "all_reduce", MIB16, 4, 4) < 0.6 * collective_seconds(hardware, "all_reduce", MIB16, 4, 4)
    # sends and all-to-alls are not rings: unchanged
    for kind in ("send", "all_to_all"):
        assert collective_seconds(hardware, kind, MIB16, 4, 4) == collective_seconds(as_nodes, kind, MIB16, 4, 4)


def test_the_field_round_trips_and_is_checked():
    hardware = load_hardware("a100-pcie")
    assert hardware.to_dict()["interconnect"]["gpus_per_host"] == 4
    assert "gpus_per_host" not in load_hardware("a100-80gb").to_dict()["interconnect"]
    data = hardware.to_dict()
    data["interconnect"]["gpus_per_host"] = 2  # not more than a node
    with pytest.raises(ConfigError, match="gpus_per_host"):
        Hardware.from_dict(data, "a test")


def test_past_the_host_the_hosts_are_the_nodes():
    """TP 8 over two hosts of 4 (session 45, wt45_denseout): NCCL's nodes are the hosts, so each host runs its PCIe
    ring (a reduce-scatter and an all-gather over its 4 GPUs, 517.02 us each, as in the first test) and the hosts
    exchange each rank's quarter, 4,194,304 bytes, in a ring of 2 nodes: 2 x 1/2 of it at the inter-node link
    (32 GB/s x nccl_facts' 0.73 = 23.36 GB/s) = 179.5507 us, plus 2 network steps each of 3 in-host steps at NCCL's
    PCI ring latency (5.7 us, the host's ring crossing PCIe) and the network's 14 us: 62.2 us. 1,275.79 us in all,
    above TP 4's 1,025.64; before, the pairs were the nodes (NVLink inside, half the payload over PCIe) and TP 8
    was priced at 733.0 us, below TP 4."""
    hardware = load_hardware("a100-pcie")
    crossing = 4 * 2**20 * 2 * (1 / 2) / (32e9 * 0.73) + 2 * (3 * 5.7 + 14.0) * 1e-6
    assert collective_seconds(hardware, "all_reduce", MIB16, 8, 8) == pytest.approx(2 * 517.02e-6 + crossing, rel=1e-12)
    assert collective_seconds(hardware, "all_reduce", MIB16, 8, 8) == pytest.approx(1275.7907e-6, rel=1e-6)
    as_nodes = dataclasses.replace(hardware, gpus_per_host=0)
    assert collective_seconds(as_nodes, "all_reduce", MIB16, 8, 8) == pytest.approx(733.0e-6, rel=1e-3)  # the old price
    # more GPUs never make a call cheaper: TP 2 < 4 < 8 < 16, for every ring collective
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        times = [collective_seconds(hardware, kind, MIB16, ranks, ranks) for ranks in (2, 4, 8, 16)]
        assert times == sorted(times) and len(set(times)) == 4
    # a strided group inside each host (DP 4 over 8 GPUs, TP 2 inside the pairs) crosses PCIe inside the host too:
    # its 2 ranks a host span 4 GPUs, so their in-host calls are PCIe rings, not the bridge's
    assert collective_seconds(hardware, "all_reduce", MIB16, 4, 8) > collective_seconds(hardware, "all_reduce", MIB16, 2, 4)
