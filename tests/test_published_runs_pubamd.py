"""AMD training rows of published_runs.json (session 27): Primus on MI325X and MI355X as the ROCm
blog's Primus projection tables print AMD's measured tokens/s per GPU, with the settings of
Primus's own multi-node commands; and the Infinity Fabric's full mesh in the collective model
(nccl_facts.json "full_mesh": a group of g of a node's 8 GPUs has g - 1 of each GPU's 7 links)."""

from __future__ import annotations

import pytest

from costmodel.collectives import collective_seconds, mesh_links
from costmodel.hardware import load_hardware
from reports.published_runs import other_runs_data, train_setup

GIB = 2**30


def _rows() -> tuple[dict, dict]:
    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("primus-projection")}
    return runs, data["sources"]


def test_the_primus_rows_are_the_tables_measured_cells():
    """rocm-blogs primus-projection at 5f2d6c1: MI325X (rocm/primus:v26.1) 8B FP8 16,224 on one node
    and 16,186 on eight, 70B FP8 1,135 and 1,726, 70B BF16 1,135 and 1,174; MI355X (v26.2) Mixtral
    8x22B BF16 3,475 on eight nodes; Primus's own copy at c8e5c09: 3,534 at batch 2."""
    runs, _ = _rows()
    assert {(r["model"], r["gpus"], r.get("fp8"), r["published_tokens_per_s_per_gpu"]) for r in runs.values()} == {
        ("llama3.1-8b", 8, "delayed", 16224), ("llama3.1-8b", 64, "delayed", 16186),
        ("llama3.1-70b", 8, "delayed", 1135), ("llama3.1-70b", 64, "delayed", 1726),
        ("llama3.1-70b", 8, None, 1135), ("llama3.1-70b", 64, None, 1174),
        ("mixtral-8x22b", 64, None, 3475), ("mixtral-8x22b", 64, None, 3534)}


@pytest.mark.parametrize("row, hardware, micro, microbatches, zero, recompute", [
    # Primus docs/02-user-guide/megatron-lm-training.md at 0c279c5: GBS 1024 on 8 nodes, MBS 2 (yaml)
    ("primus-projection llama3.1-8b fp8 64xmi325x", "mi325x", 2, 1024 // (64 * 2), 1, (None, None)),
    # the yaml of 20 Jan 2026 (17e026d): MBS 2, GBS 128
    ("primus-projection llama3.1-8b fp8 8xmi325x", "mi325x", 2, 128 // (8 * 2), 1, (None, None)),
    # --micro_batch_size 4 --global_batch_size 256 --recompute_num_layers 80, use_torch_fsdp2
    ("primus-projection llama3.1-70b fp8 fsdp 64xmi325x", "mi325x", 4, 1, 3, ("full", None)),
    # --micro_batch_size 1 --global_batch_size 256 --recompute_num_layers 12
    ("primus-projection llama3.1-70b bf16 fsdp 64xmi325x", "mi325x", 1, 4, 3, ("full", 12)),
    # the yaml of 20 Jan 2026: MBS 3, GBS 24, 80 of 80 layers recomputed
    ("primus-projection llama3.1-70b bf16 fsdp 8xmi325x", "mi325x", 3, 1, 3, ("full", None)),
    # MI355X: --micro_batch_size 1 --global_batch_size 512 PP 4, VPP 2, EP 8, --recompute_num_layers 1
    ("primus-projection mixtral-8x22b pp4 vp2 ep8 64xmi355x", "mi355x", 1, 512 // 16, 1, ("full", 1)),
    ("primus-projection-repo mixtral-8x22b mbs2 pp4 vp2 ep8 64xmi355x", "mi355x", 2, 512 // (16 * 2), 1, ("full", 1)),
])
def test_each_row_runs_the_layout_its_command_states(row, hardware, micro, microbatches, zero, recompute):
    runs, sources = _rows()
    run = runs[row]
    estimate, gpu, _ = train_setup(run, sources[row.split()[0]])
    layout, workload = estimate.layout, estimate.workload
    assert gpu.name == hardware
    assert (workload.batch, layout.microbatches, layout.zero) == (micro, microbatches, zero)
    assert (workload.recompute, workload.recompute_layers) == (recompute[0] or "none", recompute[1])
    assert layout.tp * layout.pp * layout.dp == run["gpus"]
    assert workload.seq_len == 8192 and workload.dtype == "bf16" and layout.grad_reduce_dtype == "bf16"


def test_a_pair_of_mi300x_moves_its_bytes_over_one_xgmi_link():
    """rocm-blogs mi300x-rccl-xgmi (c263176): seven xGMI links a GPU, 45-48 GB/s each, and 'with only 2
    or 4 GPUs, only a fraction of the available bandwidth on the node is utilized'. A 1 GiB all-gather
    over 2 ranks (factor 1/2) puts its 512 MiB on one link of seven: the 8-rank curve read where each
    link carries as much. The MI300X has no all-gather curve, so the curve is the all-reduce's, whose
    8 ranks put S x 2 x 7/8 / 7 = S / 4 on each link: S = 1 GiB x 1/2 x 7 / (2 x 7/8) = 2 GiB, busbw
    314.8 GB/s (the all-gather's own factor, 7/8, would read it at 4 GiB), at 1/7 of it, 45.0 GB/s;
    8 ranks read it as before."""
    mi300x = load_hardware("mi300x")
    assert mesh_links(mi300x, "all_gather", 2) == pytest.approx(1 / 7)
    assert mesh_links(mi300x, "all_gather", 4) == pytest.approx(3 / 7)
    assert mesh_links(mi300x, "send", 8) == pytest.approx(1 / 7)
    assert collective_seconds(mi300x, "all_gather", GIB, 2, 2) == pytest.approx(GIB / 2 * 7 / 314.8e9, rel=1e-12)
    # a 4-rank reduce-scatter of 64 MiB: 64 MiB x 3/4 x 7 / (3 x 7/4) = 64 MiB on the all-reduce curve's
    # point (busbw 274.33 GB/s; 292.96 at the 128 MiB the reduce-scatter's own factor reads), at 3/7 of it
    assert collective_seconds(mi300x, "reduce_scatter", 2**26, 4, 4) == pytest.approx(
        2**26 * 3 / 4 * 7 / 3 / 274.33e9, rel=1e-12)
    assert collective_seconds(mi300x, "all_gather", GIB, 8, 8) == pytest.approx(GIB * 7 / 8 / 312.97e9, rel=1e-12)


def test_the_mesh_scales_the_curveless_line_and_leaves_switches_alone():
    """The MI325X (no rccl-tests curve): a 64 MiB pipeline send within the node at one link's share of
    the 448 GB/s line, 448e9 x 0.8 / 7 = 51.2 GB/s, plus its 10 us; an H100 node (NVSwitch) has no mesh."""
    mi325x, h100 = load_hardware("mi325x"), load_hardware("h100-sxm")
    assert collective_seconds(mi325x, "send", 2**26, 2, 2) == pytest.approx(2**26 / 51.2e9 + 1e-5, rel=1e-12)
    assert mesh_links(h100, "all_gather", 2) == 1.0
    assert mesh_links(load_hardware("mi250x"), "all_gather", 2) == 1.0  # Frontier's GCDs: not a uniform mesh
