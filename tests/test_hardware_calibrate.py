"""`hardware --measure --out` (issue 18): a device measured into a hardware file of the schema,
run here on the CPU so that the path a GPU takes is tested."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.hardware import load_hardware

pytest.importorskip("torch")


def test_measuring_the_cpu_writes_a_hardware_file_that_loads(tmp_path, capsys):
    path = tmp_path / "this-cpu.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick"]) == 0
    assert capsys.readouterr().out.strip() == str(path)
    hw = load_hardware(str(path))
    data = json.loads(path.read_text())
    assert hw.name == "this-cpu" and hw.flops_per_s["fp32"] > 0 and hw.bandwidth_bytes_per_s > 0
    assert "measured" in hw.source and "torch" in hw.source
    assert data["_measurements"]["gemm"]["fp32"] and data["_measurements"]["attention"]
    assert hw.flops_per_s["fp32"] == max(r["flops_per_s"] for r in data["_measurements"]["gemm"]["fp32"])
    # The fastest shape held under full load (settle, then a timed window): a training step's rate.
    sustained = data["_measurements"]["sustained_gemm"]["fp32"]
    assert (sustained["m"], sustained["n"], sustained["k"]) in [(r["m"], r["n"], r["k"])
                                                                for r in data["_measurements"]["gemm"]["fp32"]]
    assert sustained["flops_per_s"] > 0 and 0 < hw.sustained_matmul_efficiency["fp32"] <= 1
    assert hw.sustained_matmul_efficiency["fp32"] == min(1.0, sustained["flops_per_s"] / hw.flops_per_s["fp32"])


def test_like_a_preset_keeps_its_peaks_and_records_efficiencies(tmp_path, capsys):
    path = tmp_path / "mine.json"
    assert cli.main(["hardware", "--measure", "--out", str(path), "--device", "cpu", "--quick",
                     "--like", "a100-80gb"]) == 0
    hw, a100 = load_hardware(str(path)), load_hardware("a100-80gb")
    assert hw.flops_per_s == a100.flops_per_s and hw.gpus_per_node == 8
    assert 0 < hw.matmul_efficiency["fp32"] <= 1 and 0 < hw.efficiency["memory"] <= 1
    assert 0 < hw.sustained_matmul_efficiency["fp32"] <= 1


def test_a_missing_device_is_one_line(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["hardware", "--measure", "--out", str(tmp_path / "x.json"), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cuda" in err
