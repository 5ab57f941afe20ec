"""The all-to-all's ceiling inside a node (nccl_facts.json all_to_all_peak_busbw): NVIDIA GTC25
S72583 slide 13, nccl-tests alltoall busbw on 8 GPUs (A100 210, H100 320, B200 640 GB/s; GB200
NVL72 640 on 32), reproduced in ml-engineering network/README.md at 744d01e. An all-to-all runs no
NVLS, so it takes no more than these from the node's all-reduce curve (H100: 482 GB/s with NVLS)
or from the link x 0.8 (B200: 720)."""

import pytest

from costmodel.collectives import all_to_all_ceiling, collective_seconds, within_node
from costmodel.hardware import load_hardware

GIB = 2**30


@pytest.mark.parametrize("name, gbps", [("h100-sxm", 320), ("h200", 320), ("h20", 320), ("a100-80gb", 210), ("a100-40gb", 210),
                                        ("b200", 640), ("gb200", 640), ("b300", 640), ("gb300", 640)])
def test_the_slide_figures_cap_an_in_node_all_to_all(name, gbps):
    hardware = load_hardware(name)
    assert all_to_all_ceiling(hardware) == gbps * 1e9
    # 1 GiB over 8 ranks: 7/8 of it at the ceiling (the curve's H100/A100 points lie above it at 1 GiB;
    # the B200's and the H20's link path (no curve) adds its 10 us a call; the H20 had run at its link x 0.8,
    # 360 GB/s, above the H100 node's measured 320 on the same NVLink 4 fabric)
    latency = 0.0 if name in ("h100-sxm", "h200", "a100-80gb", "a100-40gb") else 1e-5
    assert within_node(hardware, "all_to_all", GIB, 8) == pytest.approx(GIB * 7 / 8 / (gbps * 1e9) + latency,
                                                                         rel=1e-12)


def test_other_collectives_and_other_gpus_are_unchanged():
    h100 = load_hardware("h100-sxm")
    # the all-reduce keeps NVLS's curve: 16 GiB at 482.26 GB/s busbw (2 x 7/8 of the payload)
    assert within_node(h100, "all_reduce", 16 * GIB, 8) == pytest.approx(16 * GIB * 2 * 7 / 8 / 482.26e9, rel=1e-12)
    # a small all-to-all stays on the curve below the ceiling: 32 MiB at 275.84 GB/s
    assert within_node(h100, "all_to_all", 32 * 2**20, 8) == pytest.approx(32 * 2**20 * 7 / 8 / 275.84e9, rel=1e-12)
    # no figure for the MI300X or the H800 (NVLink at 200 GB/s a direction): the link x 0.8 as before
    assert all_to_all_ceiling(load_hardware("mi300x")) is None
    h800 = load_hardware("h800")
    assert all_to_all_ceiling(h800) is None
    assert within_node(h800, "all_to_all", GIB, 8) == pytest.approx(GIB * 7 / 8 / 160e9 + 1e-5, rel=1e-12)


def test_the_slides_inter_node_figures_are_not_used_but_agree():
    """The same slide's 32-GPU figures (DGX H100 48 GB/s, DGX A100 24) against the model's off-node
    share at inter_node_efficiency 0.73: 45.6 and 22.9 GB/s busbw (P x 31/32 / t), within 6%."""
    for name, slide in (("h100-sxm", 48), ("a100-80gb", 24)):
        seconds = collective_seconds(load_hardware(name), "all_to_all", GIB, 32, 32)
        busbw = GIB * 31 / 32 / seconds / 1e9
        assert round(busbw, 1) == {"h100-sxm": 45.6, "a100-80gb": 22.9}[name]
        assert abs(busbw / slide - 1) < 0.06


def test_a_user_file_takes_the_network_facts_by_the_preset_it_names(tmp_path):
    # docs/time.md: a file named like a preset (any case) is that preset's network: the all-to-all's
    # ceiling (320 GB/s), the full mesh's share of links and NCCL's LL128 come with the name; a
    # renamed copy without network_of has none of them: its link x 0.8 (360 GB/s), Simple and LL only.
    import json

    from costmodel.collectives import mesh_links, ring_protocols
    from costmodel.hardware import HARDWARE_DIR, load_hardware_file

    def user_file(preset, name, **changes):
        data = json.loads((HARDWARE_DIR / f"{preset}.json").read_text())
        data.update(name=name, **changes)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return load_hardware_file(path)

    named, renamed = user_file("h100-sxm", "H100-SXM"), user_file("h100-sxm", "my-h100")
    assert (named.network_name, renamed.network_name) == ("h100-sxm", "my-h100")
    assert (all_to_all_ceiling(named), all_to_all_ceiling(renamed)) == (320e9, None)
    assert within_node(renamed, "all_to_all", GIB, 8) == pytest.approx(GIB * 7 / 8 / 360e9 + 1e-5, rel=1e-12)
    assert (ring_protocols(named), ring_protocols(renamed)) == (("simple", "ll128", "ll"), ("simple", "ll"))
    # the MI300X's mesh by its rocm-smi name (an alias, session 27): a group of 4 of 8 on 3 of 7 links
    assert mesh_links(user_file("mi300x", "mi300x-oam"), "all_to_all", 4) == 3 / 7
    assert mesh_links(user_file("mi300x", "my-mi300x"), "all_to_all", 4) == 1.0
