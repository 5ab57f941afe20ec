"""Session 33's review findings fixed (validate/FINDINGS.md, "Review of session 33's merged work"):
the A100 int4 GEMV entry matched by its die, not its preset's name; one rule for a PCIe ring call's
time in the kernel model and the serving roofline; the two offload suggesters saying which question
each answers."""

from __future__ import annotations

import pytest

from costmodel.hardware import Hardware, load_hardware
from costmodel.kernel_time import KernelTimer


def _renamed(preset: str, name: str) -> Hardware:
    """A user's copy of a preset under another name, as `hardware --show` edited or `hardware --measure
    --like PRESET` writes it (validate/hardware_file.measure_file: like.to_dict(), its name replaced)."""
    data = load_hardware(preset).to_dict()
    data["name"] = name
    return Hardware.from_dict(data, name)


def test_a_renamed_a100_keeps_the_a100s_int4_figure_and_a_renamed_a10_the_a10s():
    # kernel_facts.json weight_only_gemv, int4: the A100 entry (gemlite, 0.730 of the GEMV rate, by blocks
    # from 512: 0.833) on any Ampere file of 108 SMs; the A10's Marlin figure (0.928, no blocks) on the rest.
    for name in ("my-a100", "local"):
        timer = KernelTimer(_renamed("a100-80gb", name), "bf16")
        kernel = timer.weight_only_gemv["int4"]
        assert kernel.rate == pytest.approx(timer.gemv_bandwidth * 0.730)
        assert kernel.by_blocks[0] == (512.0, 0.833)
    a10 = KernelTimer(_renamed("a10", "my-a10"), "bf16").weight_only_gemv["int4"]
    assert a10.by_blocks == () and a10.rate == pytest.approx(KernelTimer(load_hardware("a10"), "bf16").gemv_bandwidth * 0.928)
