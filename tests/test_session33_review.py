"""Fixes from the review of session 33's merged work (wt33_review; validate/FINDINGS.md, "Review of session 33's
merged work"): the PCIe ring latency (collectives.pcie_ring_seconds) reaches every preset whose own interconnect
source says its GPUs meet over PCIe only, the A10 included, which wt33_geforce's list had left on the flat 10 us."""

from __future__ import annotations

import json

import pytest

from costmodel.collectives import within_node
from costmodel.hardware import load_hardware
from costmodel.hardware_presets import HARDWARE_DIR


def _pcie_only_presets() -> list[str]:
    """Presets whose interconnect source opens with 'no NVLink' or 'no NVSwitch' (their own words)."""
    names = []
    for path in sorted(HARDWARE_DIR.glob("*.json")):
        source = (json.loads(path.read_text()).get("interconnect") or {}).get("source", "")
        if source.startswith(("no NVLink", "no NVSwitch")):
            names.append(path.stem)
    return names


def test_every_pcie_only_preset_takes_the_pcie_ring_model():
    names = _pcie_only_presets()
    assert names == ["a10", "a10g", "h100-pcie", "l4", "l40", "l40s", "rtx-4090", "t4", "v100-pcie-16gb",
                     "v100-pcie-32gb"]
    assert [n for n in names if load_hardware(n).intra_node_fabric != "pcie"] == []
    # NVLink-bridged pairs stay off it: their rings run over the bridge
    for bridged in ("rtx-3090", "a40", "rtx-a6000", "a100-pcie", "h100-nvl"):
        assert load_hardware(bridged).intra_node_fabric == ""


def test_the_a10_times_a_small_all_reduce_as_nccls_pcie_ring():
    """A 16 KiB all-reduce over 2 A10s: LL, 6.6 us + 2 steps x 1.0 us, its 16,384 B at half of 0.8 x 32 GB/s
    (9.88 us); before the fix the flat 10 us + 16,384 B at 25.6 GB/s (10.64 us)."""
    a10 = load_hardware("a10")
    expected = (6.6 + 2 * 1.0) * 1e-6 + 16384 / (0.5 * 0.8 * 32e9)
    assert within_node(a10, "all_reduce", 16384, 2) == pytest.approx(expected, rel=1e-12)
    assert round(expected * 1e6, 2) == 9.88
