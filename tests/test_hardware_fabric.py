"""A hardware file's interconnect intra_node_fabric "pcie" beside an NVLink bandwidth (validate/FINDINGS.md,
wt33_review item 5): refused in one line, exit 2, not read as a PCIe node at NVLink speed. A "pcie" node faster than
any PCIe link (PCIe 7.0 x16, 256 GB/s a direction) is refused by the schema; a copy of a PCIe preset edited faster
than the preset's own link, with the preset's "pcie" kept, is refused where the file is read
(hardware_schema.copied_fabric_problem). Dropping the field, or a PCIe rate at or below the preset's, loads."""

from __future__ import annotations

import copy
import json

import pytest
from costmodel.collectives import within_node
from costmodel.config import ConfigError
from costmodel.hardware import Hardware, load_hardware, schema_problems
from costmodel.hardware_presets import HARDWARE_DIR
from costmodel.hardware_schema import PCIE_MAX_BYTES_PER_S
from reports.published_runs import other_runs_data, run_hardware
from tests.cli_run import one_error_line


def _copy(preset: str, bandwidth: float | None = None, **changes) -> dict:
    """`hardware --show preset` (network_of names it) with the in-node link and top-level fields edited."""
    data = copy.deepcopy(load_hardware(preset).to_dict())
    assert data["network_of"] == preset
    if bandwidth is not None:
        data["interconnect"]["intra_node_bandwidth_bytes_per_s"] = bandwidth
    return {**data, **changes}


def _refused(tmp_path, capsys, data: dict) -> tuple[str, str]:
    """(`hardware FILE`'s one error line, exit 2, the file's path)."""
    path = tmp_path / "card.json"
    path.write_text(json.dumps(data))
    return one_error_line(["hardware", str(path)], capsys), str(path)


def test_the_bound_is_pcie_7s_x16_link():
    """128 GT/s a lane x 16 lanes / 8 bits = 256 GB/s a direction (PCI-SIG's PCIe 7.0: 512 GB/s both ways)."""
    assert PCIE_MAX_BYTES_PER_S == 128e9 * 16 / 8 == 256e9
    # every PCIe preset is well under it: Gen3 16, Gen4 32, Gen5 64 GB/s a direction
    pcie = {p.stem: load_hardware(p.stem).intra_node_bandwidth_bytes_per_s for p in sorted(HARDWARE_DIR.glob("*.json"))
            if load_hardware(p.stem).intra_node_fabric == "pcie"}
    assert sorted(set(pcie.values())) == [16e9, 32e9, 64e9] and len(pcie) == 10


def test_a_pcie_node_at_an_nvlink_bandwidth_is_one_line_and_exit_2(tmp_path, capsys):
    """h100-pcie edited to an NVLink-bridged pair's 300 GB/s (h100-nvl's), "pcie" kept."""
    line, path = _refused(tmp_path, capsys, _copy("h100-pcie", 300e9))
    assert line == (
        f"error: {path}: not a valid hardware file: interconnect.intra_node_fabric is \"pcie\" but "
        "intra_node_bandwidth_bytes_per_s (3e+11) is faster than any PCIe link (PCIe 7.0 x16: 2.56e+11 a direction): "
        "drop intra_node_fabric where NVLink (a bridge or a switch) joins the GPUs, or state the PCIe link's bandwidth.")
    # the schema alone says it too (no network_of: a file written by hand)
    data = _copy("h100-pcie", 300e9)
    del data["network_of"]
    assert [p for p in schema_problems(data) if "intra_node_fabric" in p] != []
    # at the bound itself (a PCIe 7.0 x16 link) the schema takes it
    data["interconnect"]["intra_node_bandwidth_bytes_per_s"] = PCIE_MAX_BYTES_PER_S
    assert schema_problems(data) == []
    data["interconnect"]["intra_node_bandwidth_bytes_per_s"] = PCIE_MAX_BYTES_PER_S * 1.0001
    with pytest.raises(ConfigError, match="faster than any PCIe link"):
        Hardware.from_dict(data, "hand-written")


def test_a_copy_of_a_pcie_preset_edited_faster_than_its_link(tmp_path, capsys):
    """An RTX 4090 copy at an RTX 3090 NVLink bridge's 56.25 GB/s: under PCIe 7.0, above the 4090's Gen4 x16."""
    line, _ = _refused(tmp_path, capsys, _copy("rtx-4090", 56.25e9, name="my-4090"))
    # (the path as show() prints it, shortened where long)
    assert line.startswith("error: hardware file '") and line[line.index(": intra_node") + 2:] == (
        "intra_node_bandwidth_bytes_per_s is 5.625e+10, above rtx-4090's PCIe link "
        "(3.2e+10 a direction), but intra_node_fabric is still rtx-4090's \"pcie\": drop intra_node_fabric where "
        "NVLink (a bridge or a switch) joins the GPUs, or state a PCIe rate no faster than rtx-4090's.")


def test_what_loads(tmp_path):
    """The fabric dropped at the bridge's rate: an NVLink node (the flat collective latency); a measured PCIe
    rate below the preset's link: still a PCIe node, its rings on NCCL's PCIe model; the preset's own rate."""
    def load(data: dict, name: str) -> Hardware:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return load_hardware(str(path))

    bridged = _copy("h100-pcie", 300e9)
    del bridged["interconnect"]["intra_node_fabric"]
    nvlink, slower, same = load(bridged, "bridged"), load(_copy("h100-pcie", 25e9), "slower"), load(_copy("h100-pcie"), "same")
    assert (nvlink.intra_node_fabric, slower.intra_node_fabric, same.intra_node_fabric) == ("", "pcie", "pcie")
    # a 16 KiB all-reduce over 2: LL's 6.6 us + 2 x 1.0 us at half of 0.8 x 25 GB/s on the PCIe copy; the flat
    # 10 us + 16 KiB at 0.8 x 300 GB/s on the bridged one
    assert within_node(slower, "all_reduce", 16384, 2) == pytest.approx((6.6 + 2.0) * 1e-6 + 16384 / (0.5 * 0.8 * 25e9))
    assert within_node(nvlink, "all_reduce", 16384, 2) == pytest.approx(1e-5 + 16384 / (0.8 * 300e9))


def test_every_sources_hardware_still_loads():
    """Every published source's hardware with its overrides loads; its PCIe nodes are the RTX 4090 sources' (session
    34's AutoAWQ README and session 35's among them), the H100 PCIe of llama.cpp issue 6763 and
    llm-perf-bench's A100 PCIe node at 32 GB/s (its override: "all numbers are based on PCIe, not NVLink")."""
    data = other_runs_data()
    pcie = {name: (h.name, h.intra_node_bandwidth_bytes_per_s) for name, h in
            ((name, run_hardware(source)) for name, source in data["sources"].items()) if h.intra_node_fabric == "pcie"}
    assert pcie == {"exllamav2-readme": ("rtx-4090", 32e9), "llamacpp-pr4766": ("rtx-4090", 32e9),
                    "llm-perf-bench-4bit": ("rtx-4090", 32e9), "lmdeploy-w4a16": ("rtx-4090", 32e9),
                    "llm-perf-bench-fp16": ("a100-pcie", 32e9), "llm-perf-bench-vllm": ("a100-pcie", 32e9),
                    "autoawq-v0.1.6": ("rtx-4090", 32e9),
                    # session 35's unseen decoding rows: wt35_unseend's ExLlama v1, llama.cpp and AutoAWQ docs (the H100
                    # PCIe at its Gen5 link), wt35_unseend2's llm-perf-bench PR 1 and the MLC blog's two RTX 4090s
                    "exllama-v1": ("rtx-4090", 32e9), "llamacpp-pr6766": ("rtx-4090", 32e9),
                    "llamacpp-issue6763": ("h100-pcie", 64e9), "autoawq-docs": ("rtx-4090", 32e9),
                    "llm-perf-bench-pr1": ("rtx-4090", 32e9), "mlc-blog-multigpu-2023": ("rtx-4090", 32e9),
                    # session 36's SageMaker benchmark: g5.12xlarge's four A10Gs (no NVLink)
                    "hf-blog-llama2-sagemaker": ("a10g", 32e9),
                    # session 37's llama.cpp rows: the source's default GPU (each run names its own, one GPU each)
                    "xiongjiedai-llamacpp": ("rtx-4090", 32e9),
                    # session 38's calm rows: one RTX 4090 (its PCIe fabric unused at one GPU)
                    "calm-readme": ("rtx-4090", 32e9),
                    # session 38's quantized rows: AutoAWQ PR #365's RTX 4090 (oobabooga's RTX 3090 has NVLink)
                    "autoawq-pr365": ("rtx-4090", 32e9),
                    # session 39's vLLM PR #53060 rows on one H100 PCIe (its fabric unused at one GPU)
                    "vllm-pr53060-h100pcie": ("h100-pcie", 64e9),
                    # session 39's SmolLM2-70M card: one L40S (a PCIe card; its fabric unused at one GPU)
                    "smollm2-70m-card": ("l40s", 32e9),
                    # session 40's llama.cpp PR #12183 rows: one RTX 4090 (its fabric unused at one GPU)
                    "llamacpp-pr12183": ("rtx-4090", 32e9),
                    # session 41's llama.cpp (December 2023) and ExLlama (May 2023) rows: one GPU each, the RTX 4090
                    # the sources' default (every llama.cpp row names its own GPU)
                    "xiongjiedai-llamacpp-2023": ("rtx-4090", 32e9), "exllama-2562100": ("rtx-4090", 32e9),
                    # session 42's MLC multi-GPU 4-bit rows: the page's PCIe node as llm-perf-bench-fp16's (the A10G
                    # and RTX 4090 rows name their own GPU)
                    "llm-perf-bench-4bit-multi": ("a100-pcie", 32e9),
                    # session 42's second batch: llama.cpp PR #16834's one RTX 4090 (its fabric unused), vLLM issue
                    # #1805's g5.12xlarge: four A10Gs over PCIe (no NVLink)
                    "llamacpp-pr16834": ("rtx-4090", 32e9), "vllm-issue1805": ("a10g", 32e9),
                    # session 43's unseen rows: ExLlamaV2's README at 61e3092, one RTX 4090 (its fabric unused)
                    "exllamav2-readme-61e3092": ("rtx-4090", 32e9),
                    # session 44's unseen rows: AutoAWQ PR #656's one RTX 4090 (its fabric unused)
                    "autoawq-pr656": ("rtx-4090", 32e9)}
