"""validate/ep_dispatch_table.py: the model's EP dispatch beside arXiv:2603.07685 Table 7 (session 25;
validate/FINDINGS.md "The MoE rows' host time: the sources searched again")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from costmodel.hardware import load_hardware
from costmodel.layout.experts import check_dispatcher_peers, flex_seconds
from costmodel.layout.spec import Layout
from validate.ep_dispatch_table import model_us, rows, table

ROOT = Path(__file__).resolve().parents[1]


def test_the_table_is_the_reports_sixteen_rows():
    data = table()
    assert (data["hidden"], data["tokens"], data["experts"], data["top_k"]) == (7168, 4096, 256, 8)
    assert data["us"]["gb200"]["hybridep"]["dispatch"] == [391, 578, 612, 675]
    assert data["us"]["h100-sxm"]["alltoall"]["combine"] == [1277, 5628, 7815, 8727]
    assert len(rows()) == 16


def test_the_models_exchange_times():
    # tokens x top-k x hidden x 2 bytes = 4,096 x 8 x 7,168 x 2 = 469,762,048 bytes an all-to-all
    data = table()
    assert data["tokens"] * data["top_k"] * data["hidden"] * data["bytes_per_element"] == 469_762_048
    got = {(gpu, dispatcher, ep): round(model) for gpu, dispatcher, ep, _, _, model in rows()}
    # in-node at nccl-tests' alltoall busbw (nccl_facts.json all_to_all_peak_busbw: H100 320, GB200 640 GB/s;
    # before it, the H100 node's NVLS all-reduce curve gave 918 and 439 us at EP 8, GB200's link 581 and 269):
    # the H100 all-to-all at EP 8 is now 1,285 us against the report's 1,265 / 1,277
    # HybridEP at the rates the kernel model takes (session 41's review: the script had kept the link rule after
    # layout/hybridep_rates.py gave flex_dispatch HybridEP's measured rates; at the link rule GB200 301, 469, 596,
    # 675 and H100 583, 2,416, 4,602, 6,300 us)
    assert got == {
        ("gb200", "hybridep", 8): 383, ("gb200", "hybridep", 16): 600,
        ("gb200", "hybridep", 32): 817, ("gb200", "hybridep", 64): 933,
        ("gb200", "alltoall", 8): 652, ("gb200", "alltoall", 16): 698,
        ("gb200", "alltoall", 32): 721, ("gb200", "alltoall", 64): 733,
        ("h100-sxm", "hybridep", 8): 583, ("h100-sxm", "hybridep", 16): 2108,
        ("h100-sxm", "hybridep", 32): 3462, ("h100-sxm", "hybridep", 64): 4882,
        ("h100-sxm", "alltoall", 8): 1285, ("h100-sxm", "alltoall", 16): 7087,
        ("h100-sxm", "alltoall", 32): 9984, ("h100-sxm", "alltoall", 64): 11432,
    }
    # inside one NVLink domain HybridEP sends each token once per reached rank, fewer bytes than the
    # all-to-all's top-k copies, but at its README's measured GB200 rates (545.7 GB/s at 8 ranks down to 484.2 at
    # 32, algorithm bandwidth) against NCCL's 640 GB/s all-to-all: faster in the model at EP 8 and 16, slower at
    # 32 and 64, where Table 7 has it faster (612 / 646 against 769 / 758 us at EP 32): two NVIDIA measurements of
    # one kernel that disagree, left as measured (validate/FINDINGS.md, wt41_review)
    assert [model_us("gb200", "hybridep", ep) < model_us("gb200", "alltoall", ep) for ep in (8, 16, 32, 64)] == [
        True, True, False, False]
    # the exchange takes the rates flex_dispatch takes: HybridEP's measured ones on GB200 and across H100 nodes,
    # the link rule inside one H100 node (none measured there)
    data = table()
    payload = data["tokens"] * data["hidden"] * data["bytes_per_element"]
    for gpu, ep, copies in (("gb200", 32, "ranks"), ("h100-sxm", 32, "nodes"), ("h100-sxm", 8, None)):
        hardware = load_hardware(gpu)
        rates = check_dispatcher_peers(Layout(dp=ep, ep=ep, framework="megatron", zero=1, ep_dispatcher="hybridep"),
                                       hardware)
        assert (rates or {}).get("copies") == copies
        assert model_us(gpu, "hybridep", ep) == flex_seconds(hardware, payload, 256, 8, 8, 4, ep, ep, rates) * 1e6


def test_the_script_prints_every_row():
    out = subprocess.run([sys.executable, "validate/ep_dispatch_table.py"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert out.count("\n| gb200 |") == 8 and out.count("\n| h100-sxm |") == 8
    assert "| h100-sxm | alltoall | 16 | 5,774 | 5,628 | 7,087 | 0.81 | 0.79 |" in out
    assert "| h100-sxm | alltoall | 8 | 1,265 | 1,277 | 1,285 | 0.98 | 0.99 |" in out
