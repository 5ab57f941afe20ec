"""TensorRT-LLM's own all-reduce (nccl_facts.json "trtllm_custom_all_reduce"; costmodel/collectives.custom_all_reduce
with kernel "trtllm-custom" and engine_all_reduce "tensorrt-llm"), added by session 41 (wt41_trtar): each fact equals
its source, the release rule, the plugin's limits, and one published row's step exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.collectives import collective_seconds, custom_all_reduce, engine_all_reduce, nccl_facts  # noqa: E402
from costmodel.hardware import load_hardware  # noqa: E402

H100 = load_hardware("h100-sxm")
FACTS = nccl_facts()["trtllm_custom_all_reduce"]


def test_the_facts_are_their_sources():
    # plugin.py CustomAllReduceHelper.max_workspace_size_auto: 16_000_000 at tp <= 2, else 8_000_000
    assert FACTS["max_bytes"] == {"2": 16_000_000, "other": 8_000_000}
    # allreducePlugin.cpp selectImplementation: <= 4 ranks one-shot below 1 * 1000 * 1000 bytes, above 500 * 1000
    assert FACTS["one_shot_below_bytes"] == {"4": 1_000_000, "8": 500_000}
    assert FACTS["world_sizes"] == [2, 4, 6, 8]  # isCustomAllReduceSuported: even, <= MAX_RANKS_PER_NODE (8)
    assert (FACTS["releases"]["first"], FACTS["releases"]["knob_removed"]) == ("0.8.0", "0.12.0")
    # sglang PR #2904's 'custom allreduce' table (ms at 512 ... 1048576 float32 elements, tp 2/4/8)
    curve = FACTS["latency_curve"]
    assert curve["sizes_bytes"] == [4 * n for n in (512, 4096, 32768, 262144, 524288, 1048576)]
    table = [(0.0037, 0.0048, 0.0059), (0.0039, 0.0037, 0.0057), (0.0045, 0.0048, 0.0078),
             (0.0079, 0.0139, 0.0167), (0.0125, 0.0202, 0.0221), (0.0199, 0.0311, 0.0338)]
    for column, ranks in enumerate(("2", "4", "8")):
        assert curve["seconds"][ranks] == pytest.approx([row[column] * 1e-3 for row in table], abs=1e-12)
    assert curve["hardware"] == ["h100-sxm", "h200"]


@pytest.mark.parametrize("release, disabled, expected", [
    ("0.5.0", False, "nccl"), ("0.6.1", False, "nccl"), ("0.7.1", False, "nccl"),  # --use_custom_all_reduce store_true
    ("0.8.0", False, "trtllm-custom"), ("0.9.0", False, "trtllm-custom"), ("0.11.0", False, "trtllm-custom"),
    ("0.12.0", False, "nccl"), ("0.9.0", True, "nccl"), (None, False, "nccl"),  # AUTO strategy not modelled
])
def test_the_release_rule(release, disabled, expected):
    assert engine_all_reduce("tensorrt-llm", release, disabled) == expected


def test_the_plugin_limits():
    # the measured curve: 2 MiB on 8 H100s at 22.1 us (vLLM's kernel 30.4 us, NCCL's curve ~57 us)
    assert custom_all_reduce(H100, 2097152, 8, "trtllm-custom") == pytest.approx(22.1e-6)
    assert custom_all_reduce(H100, 2097152, 8) == pytest.approx(30.4e-6)
    # its workspace: 16 MB at 2 ranks (vLLM's buffer is 8 MiB), 8 MB above
    assert custom_all_reduce(H100, 12_000_000, 2, "trtllm-custom") is not None
    assert custom_all_reduce(H100, 12_000_000, 2) is None
    assert custom_all_reduce(H100, 8_000_000, 4, "trtllm-custom") is not None
    assert custom_all_reduce(H100, 8_000_016, 4, "trtllm-custom") is None
    assert custom_all_reduce(H100, 2097152, 3, "trtllm-custom") is None  # an odd world size
    # a PCIe node keeps NCCL's time (the plugin of 0.8-0.11 ran there too; no latency of it found)
    assert custom_all_reduce(load_hardware("l40s"), 2097152, 8, "trtllm-custom") is None
    # off the curve (A100): the 2-rank 2 KiB time plus the bytes each rank reads; one-shot below 1 MB at 4 ranks
    a100 = load_hardware("a100-80gb")
    from costmodel.collectives import node_link

    assert custom_all_reduce(a100, 999_984, 4, "trtllm-custom") == pytest.approx(4.8e-6 + 3 * 999_984 / node_link(a100, 4))
    assert custom_all_reduce(a100, 1_000_000, 4, "trtllm-custom") == \
        pytest.approx(4.8e-6 + 1.5 * 1_000_000 / node_link(a100, 4))


def _published():
    return json.loads((Path(__file__).resolve().parents[1] / "costmodel" / "published_runs.json").read_text())


def test_the_rows_take_their_release():
    from reports.published_decode import decode_all_reduce

    data = _published()
    by_source = {}
    for run in data["runs"]:
        key = run["id"].split()[0]
        if run["kind"] == "decode" and run.get("tp", 1) > 1 and key.startswith("trtllm"):
            by_source.setdefault(key, set()).add(decode_all_reduce(run, data["sources"][key]))
    assert by_source == {"trtllm-v0.5.0": {"nccl"}, "trtllm-v0.6.1": {"nccl"}, "trtllm-blog-h200launch": {"nccl"},
                         "trtllm-v0.8.0": {"trtllm-custom"}, "trtllm-v0.9.0": {"trtllm-custom"},
                         "trtllm-v0.8.0-ttft": {"trtllm-custom"}, "trtllm-v0.9.0-ttft": {"trtllm-custom"},
                         "trtllm-v0.5.0-ttft": {"nccl"}}  # session 42's first tokens of release 0.5.0


def test_one_rows_prefill_exactly():
    """trtllm-v0.8.0-ttft's Llama 2 70B first token at tp 8 on H100s, 128 tokens: its 161 all-reduces of 2 MiB
    (two a layer and the vocabulary-parallel embedding's) at 22.1 us each instead of NCCL's."""
    from reports.published_decode import decode_run

    data = _published()
    run = next(r for r in data["runs"] if r["id"] == "trtllm-v0.8.0-ttft llama2-70b fp8 tp8 batch 1 128/1 h100")
    source = data["sources"]["trtllm-v0.8.0-ttft"]
    ours, nccl = decode_run(run, source, "kernels"), decode_run(run, dict(source, disable_custom_all_reduce=True),
                                                                "kernels")
    each_nccl = collective_seconds(H100, "all_reduce", 2097152, 8, 8)
    assert 1 / nccl - 1 / ours == pytest.approx(161 * (each_nccl - 22.1e-6), rel=1e-9)
    # first computed with NCCL (wt41_unseend): 0.784 of the published 17.0 ms; now 16.09 ms, 1.057
    assert 1 / ours == pytest.approx(0.016090243877060973, rel=1e-6)
    assert ours / run["published_tokens_per_s"] == pytest.approx(1.057, abs=5e-4)
