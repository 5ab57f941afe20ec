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


def test_the_pair_and_past_the_host_are_as_before():
    """TP 2 stays on the bridge; a group past the host keeps the hierarchical rule (the file without the field)."""
    hardware = load_hardware("a100-pcie")
    as_nodes = dataclasses.replace(hardware, gpus_per_host=0)
    assert collective_seconds(hardware, "all_reduce", MIB16, 2, 2) == collective_seconds(as_nodes, "all_reduce", MIB16, 2, 2)
    assert collective_seconds(hardware, "all_reduce", MIB16, 8, 8) == collective_seconds(as_nodes, "all_reduce", MIB16, 8, 8)
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
