"""A hardware file's `cluster`: collectives measured across one named cluster's nodes (nccl_facts.json
"cluster_busbw": the Ultra-Scale Playbook's 8x H100 EFA cluster, all-reduce, all-gather and
reduce-scatter busbw at 1-64 nodes at 256 MB) cap a call of that shape and at most that size."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.collectives import cluster_busbw, collective_seconds, nccl_facts
from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware

MIB256 = 268_435_456


def on_cluster(preset: str = "h100-sxm") -> Hardware:
    return Hardware.from_dict(dict(load_hardware(preset).to_dict(), cluster="hf-h100-efa"), "test")


def test_the_figures_as_the_book_plots_them():
    """The medians of 'Communication Bandwidth by Number of Nodes (size=256MB)' (plotly data, GB/s): the
    all-reduce's printed labels, the others to 0.1; one node's all-reduce is ml-engineering's 8x H200
    all_reduce_bench figure at 256 MiB (436.15), the check that the book plots busbw."""
    hf = nccl_facts()["cluster_busbw"]["hf-h100-efa"]
    assert (hf["nodes"], hf["payload_bytes"], hf["gpus_per_node"]) == ([1, 2, 4, 8, 16, 32, 64], MIB256, 8)
    assert hf["all_reduce"] == [436.0, 361.7, 160.1, 99.6, 84.7, 64.9, 32.9]
    assert hf["all_gather"] == [249.8, 184.6, 119.0, 69.0, 55.0, 28.0, 11.0]
    assert hf["reduce_scatter"] == [249.7, 181.6, 115.8, 68.6, 54.5, 27.9, 11.1]
    node = dict(next(c for c in nccl_facts()["all_reduce_busbw"] if "h100-sxm" in c["hardware"])["points_bytes_gbps"])
    assert (node[MIB256], hf["all_reduce"][0]) == (436.15, 436.0)  # the plot data 435.967, labelled 436.0


def test_a_call_of_the_measured_shape_takes_the_measured_busbw():
    """256 MiB over 64 nodes x 8: the all-gather 24.36 ms (11.0 GB/s where the model's own crossing gives
    97.6), the all-reduce 16.29 ms (32.9); past 64 nodes the last point; at 3 nodes the all-gather's busbw
    is read between 2 and 4 nodes in log2: 184.6 + (119.0 - 184.6) x (log2 3 - 1) = 146.2 GB/s."""
    h100, hf = load_hardware("h100-sxm"), on_cluster()
    gather = collective_seconds(hf, "all_gather", MIB256, 512, 512)
    assert gather == pytest.approx(MIB256 * 511 / 512 / 11.0e9) and round(gather * 1e3, 2) == 24.36
    assert round(MIB256 * 511 / 512 / collective_seconds(h100, "all_gather", MIB256, 512, 512) / 1e9, 1) == 97.6
    assert round(collective_seconds(hf, "all_reduce", MIB256, 512, 512) * 1e3, 2) == 16.29
    assert collective_seconds(hf, "all_gather", MIB256, 1024, 1024) == pytest.approx(MIB256 * 1023 / 1024 / 11.0e9)
    assert round(cluster_busbw(hf, "all_gather", 24, 8, MIB256) / 1e9, 1) == 146.2
    # a smaller call reaches no more than the measured busbw: 16 MiB over 64 nodes at 11.0 GB/s
    assert collective_seconds(hf, "all_gather", 2**24, 512, 512) == pytest.approx(2**24 * 511 / 512 / 11.0e9)


def test_where_the_model_is_slower_or_the_call_is_not_the_measured_one_the_model_stands():
    """Two nodes' 256 MiB all-reduce: the model's 215.5 GB/s lies below the measured 361.7, so its time
    stands; a call over 256 MiB, a group of 2 ranks a node (fewer ring steps than the measured 8), a
    send and an all-to-all (not measured) keep the model's time."""
    h100, hf = load_hardware("h100-sxm"), on_cluster()
    assert round(MIB256 * 2 * 15 / 16 / collective_seconds(hf, "all_reduce", MIB256, 16, 16) / 1e9, 1) == 215.5
    for args in (("all_gather", 2 * MIB256, 512, 512), ("all_reduce", MIB256, 128, 512), ("send", MIB256, 2, 16),
                 ("all_to_all", MIB256, 512, 512)):
        assert collective_seconds(hf, *args) == collective_seconds(h100, *args)
    assert cluster_busbw(hf, "all_reduce", 512, 2, MIB256) == cluster_busbw(h100, "all_gather", 512, 8, 1) == float("inf")
    # a group over a partial node (12 ranks: one node and half of another; 100: 12.5 nodes) is not the measured
    # shape: the model's 0.671 ms and 1.777 ms stand (the cap read at 1.5 and 12.5 nodes gave 1.163 and 4.430 ms)
    for ranks, model_ms in ((12, 0.671), (100, 1.777)):
        assert collective_seconds(hf, "all_gather", MIB256, ranks, ranks) == collective_seconds(h100, "all_gather", MIB256, ranks, ranks)
        assert round(collective_seconds(hf, "all_gather", MIB256, ranks, ranks) * 1e3, 3) == model_ms
    assert cluster_busbw(hf, "all_gather", 12, 8, MIB256) == float("inf")


def test_the_field_round_trips_and_bad_names_are_one_line(tmp_path, capsys):
    assert on_cluster().to_dict()["cluster"] == "hf-h100-efa" and "cluster" not in load_hardware("h100-sxm").to_dict()
    bad = dict(load_hardware("h100-sxm").to_dict(), name="mine", cluster="no-such-cluster")
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code = cli.main(["simulate", "--model", "llama2-7b", "--hardware", str(tmp_path / "bad.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cluster 'no-such-cluster' is not a measured cluster" in err
    # measured on H100 nodes: an A100 file naming it is refused as it is read, whatever its calls (it ran
    # before under TP 8 or DP 64, where no call had the measured shape, and failed only under TP 16)
    with pytest.raises(ConfigError, match="cluster hf-h100-efa was measured on h100-sxm nodes, not a100-80gb's"):
        on_cluster("a100-80gb")
    a100 = dict(load_hardware("a100-80gb").to_dict(), name="mine-a100", cluster="hf-h100-efa")
    (tmp_path / "a100.json").write_text(json.dumps(a100))
    for layout in (["--tp", "8"], ["--train", "--dp", "64"], ["--tp", "16"]):
        code = cli.main(["simulate", "--model", "llama2-7b", "--hardware", str(tmp_path / "a100.json"), *layout])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "measured on h100-sxm nodes, not a100-80gb's" in err
    # an H100 file of another name keeps the cluster through network_of (hardware --show writes it)
    assert on_cluster().to_dict()["network_of"] == "h100-sxm"
    mine = dict(load_hardware("h100-sxm").to_dict(), name="mine", cluster="hf-h100-efa")
    assert Hardware.from_dict(mine, "mine").cluster == "hf-h100-efa"
    with pytest.raises(ConfigError, match="not mine's"):
        Hardware.from_dict({k: v for k, v in mine.items() if k != "network_of"}, "mine")
    # nodes of 4 naming a cluster measured on nodes of 8: no call would have the measured shape
    four = dict(mine, interconnect=dict(mine["interconnect"], gpus_per_node=4))
    with pytest.raises(ConfigError, match="measured on nodes of 8 GPUs; this file's interconnect has 4 a node"):
        Hardware.from_dict(four, "mine")


def test_the_nanotron_rows_run_on_the_books_cluster():
    """The source states the cluster; of its 26 cells only the 80B's TP 16 over two nodes has calls of
    the measured shape (8 ranks a node, 134 MB sequence-parallel gathers): 226.9 -> 214.5 TFLOP/s a GPU
    (240.3 -> 226.5 with the gradient reduction hidden as before session 28's exposed ZeRO-1 reduction: Overlap
    dp 2/3, stated, since session 29's Megatron default reduces after the backward where nothing is stated),
    with a flat ZeRO-1's reduce-scatter; as the row states it since session 30, nanotron's whole-gradient
    all-reduce (zero_optimizer nanotron, tests/test_zero_optimizer.py), 203.2 -> 193.2 (214.0 -> 202.9 hidden);
    each 0.1-0.3 lower since session 31's loss passes (nanotron's sharded_cross_entropy, Layout.unfused_loss)."""
    from reports.published_runs import other_runs_data, train_run

    data = other_runs_data()
    source = data["sources"]["nanotron-playbook"]
    assert source["hardware_overrides"] == {"cluster": "hf-h100-efa"}
    row = next(r for r in data["runs"] if r["id"] == "nanotron-playbook llama-80b dp32 tp16 pp1 gas4 mbs2 zero1 512xh100")
    bare = {k: v for k, v in source.items() if k != "hardware_overrides"}
    # (226.8, 214.4, 240.3, 226.4) and (203.2, 193.2, 213.9, 202.9) before Megatron's one QKV GEMM and its dense passes
    # (wt43_review, wt44_review; the playbook's rows type impl megatron)
    for run, figures in (({**row, "zero_optimizer": "flat"}, (228.1, 215.6, 241.5, 227.5)), (row, (204.2, 194.1, 214.9, 203.7))):
        hidden = {**run, "overlap": {**run["overlap"], "dp": 2 / 3}}
        assert tuple(round(train_run(r, s, "kernels"), 1) for r in (run, hidden) for s in (bare, source)) == figures


def test_what_the_code_and_docs_name_in_collectives_exists():
    """The cluster field's notes named a `collectives.cluster_rate` that never existed and described the
    rejected per-GPU reading (busbw / 8 a GPU with the in-node steps on top): every `collectives.NAME`
    the package and docs cite is a name of costmodel/collectives.py, and the note states the floor."""
    import re
    from pathlib import Path

    import costmodel.collectives as collectives

    root = Path(__file__).resolve().parent.parent
    files = [*(root / "costmodel").rglob("*.py"), *(root / "costmodel").rglob("*.json"), *(root / "docs").glob("*.md")]
    cited = {(p.name, m.group(1)) for p in files for m in re.finditer(r"collectives\.([a-z_]\w*)", p.read_text())}
    assert [c for c in sorted(cited) if c[1] != "py" and not hasattr(collectives, c[1])] == []
    note = nccl_facts()["cluster_busbw"]["_note"]
    assert "max(the model's hierarchical time, bytes x ring factor / busbw(N))" in note and "cluster_busbw" in note
