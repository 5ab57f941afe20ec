"""vLLM's custom all-reduce (costmodel/collectives.custom_all_reduce and engine_all_reduce; nccl_facts.json
"custom_all_reduce"): its measured H100 latencies, where NCCL's stays, the release rule, and where the published
decode rows and the serving engines take it (reports/published_decode.decode_all_reduce, serving.api.build_replica)."""

import json

import pytest

from costmodel.collectives import collective_seconds, custom_all_reduce, engine_all_reduce, nccl_facts, node_link
from costmodel.hardware import load_hardware
from costmodel.layout import Layout
from costmodel.presets import load_preset

H100 = load_hardware("h100-sxm")


@pytest.mark.parametrize("ranks, size_bytes, microseconds", [
    # sgl-project/sglang PR #2904's 'vllm' table (float32 tensors of 512 ... 1,048,576 elements: 4 bytes each)
    (2, 2048, 9.5), (2, 16384, 8.8), (2, 131072, 8.7), (2, 1048576, 12.9), (2, 4194304, 26.6),
    (4, 16384, 8.5), (4, 2097152, 26.9), (8, 16384, 9.3), (8, 1048576, 24.1), (8, 4194304, 45.0),
])
def test_h100_latency_at_measured_sizes_is_the_sources(ranks, size_bytes, microseconds):
    assert custom_all_reduce(H100, size_bytes, ranks) == pytest.approx(microseconds * 1e-6, rel=1e-12)


def test_between_below_and_above_the_measured_sizes():
    # linear in bytes between 1 MiB (12.9 us) and 2 MiB (17.7 us) at 2 ranks: 1.5 MiB is 15.3 us
    assert custom_all_reduce(H100, 1572864, 2) == pytest.approx(15.3e-6, rel=1e-12)
    assert custom_all_reduce(H100, 16, 2) == pytest.approx(9.5e-6)  # below 2 KiB: the smallest size's time
    # above 4 MiB the last segment (2 -> 4 MiB, 17.7 -> 26.6 us) extends: 8 MiB is 44.4 us
    assert custom_all_reduce(H100, 8388608, 2) == pytest.approx(44.4e-6, rel=1e-12)
    assert custom_all_reduce(H100, 16384, 6) == custom_all_reduce(H100, 16384, 8)  # 6 ranks take the 8's curve
    assert custom_all_reduce(load_hardware("h200"), 16384, 2) == pytest.approx(8.8e-6)  # NVLink 4, as the H100's


@pytest.mark.parametrize("hardware, size_bytes, ranks", [
    ("h100-sxm", 8388608 + 16, 2),  # above the 8 MiB buffer (max_size = 8192 * 1024)
    ("h100-sxm", 16392, 2),  # not a multiple of 16 bytes (should_custom_ar)
    ("h100-sxm", 16384, 3), ("h100-sxm", 16384, 16),  # no kernel for 3 or 16 ranks (_SUPPORTED_WORLD_SIZES)
    ("mi300x", 16384, 8),  # ROCm's kernel: no latency found, RCCL kept
    ("l40s", 16384, 2), ("rtx-a6000", 16384, 2),  # no NVLink between every pair in the file
])
def test_nccl_kept_where_vllm_hands_the_call_back(hardware, size_bytes, ranks):
    chosen = load_hardware(hardware)
    assert custom_all_reduce(chosen, size_bytes, ranks) is None
    if ranks <= chosen.gpus_per_node:
        assert collective_seconds(chosen, "all_reduce", size_bytes, ranks, ranks, all_reduce="vllm-custom") == \
            collective_seconds(chosen, "all_reduce", size_bytes, ranks, ranks)


def test_other_nvlink_gpus_take_the_latency_plus_the_bytes_read():
    a100 = load_hardware("a100-80gb")
    seconds = nccl_facts()["custom_all_reduce"]["latency_curve"]["seconds"]
    # 2 ranks: one-shot, each rank reads its peer's whole 16 KiB
    assert custom_all_reduce(a100, 16384, 2) == pytest.approx(seconds["2"][0] + 16384 / node_link(a100, 2))
    # 8 ranks at 1 MiB (>= 256 KiB): two-shot, 2 x 7/8 of the payload read
    assert custom_all_reduce(a100, 1048576, 8) == pytest.approx(seconds["8"][0] + 1.75 * 1048576 / node_link(a100, 8))
    # 4 ranks below 512 KiB: one-shot, 3 x the payload
    assert custom_all_reduce(a100, 262144, 4) == pytest.approx(seconds["4"][0] + 3 * 262144 / node_link(a100, 4))
    assert custom_all_reduce(load_hardware("a100-pcie"), 16384, 2) is not None  # an NVLink-bridged pair


def test_a_tensor_parallel_step_of_calls_takes_the_custom_time():
    # llama-3-70B's 160 row-parallel all-reduces of one token (8,192 x 2 bytes) at tp 2: 160 x 8.8 us
    assert collective_seconds(H100, "all_reduce", 160 * 16384, 2, 2, calls=160, all_reduce="vllm-custom") == \
        pytest.approx(160 * 8.8e-6)
    assert collective_seconds(H100, "all_reduce", 160 * 16384, 2, 2, calls=160) > 160 * 20e-6  # NCCL's curve
    # a group spanning nodes is NCCL's whatever the choice
    assert collective_seconds(H100, "all_reduce", 16384, 16, 16, all_reduce="vllm-custom") == \
        collective_seconds(H100, "all_reduce", 16384, 16, 16)


@pytest.mark.parametrize("engine, release, disabled, expected", [
    ("vllm", "0.2.7", False, "nccl"),  # before PR #2192
    ("vllm", "0.3.0", False, "vllm-custom"),
    ("vllm", "0.3.1", False, "nccl"), ("vllm", "0.4.0.post1", False, "nccl"),  # PR #2808 to PR #4040: off
    ("vllm", "0.4.1", False, "vllm-custom"), ("vllm", "0.10.1", False, "vllm-custom"),
    ("vllm", None, False, "vllm-custom"), ("vllm", "0.6.3", True, "nccl"),  # disable_custom_all_reduce
    ("sglang", None, False, "vllm-custom"), ("tensorrt-llm", None, False, "nccl"), (None, None, False, "nccl"),
])
def test_engine_release_rule(engine, release, disabled, expected):
    assert engine_all_reduce(engine, release, disabled) == expected


def _published():
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parents[1] / "costmodel" / "published_runs.json").read_text())


def test_published_rows_take_their_engines_all_reduce():
    from reports.published_decode import decode_all_reduce

    data = _published()
    by_source = {}
    for run in data["runs"]:
        if run["kind"] == "decode" and run.get("tp", 1) > 1:
            key = run["id"].split()[0]
            by_source.setdefault(key, set()).add(decode_all_reduce(run, data["sources"][key]))
    for key in ("qwen2-speed-vllm", "evalscope-qwq-vllm", "redhat-r1-llama-70b", "vllm-pr23197-bf16",
                "vllm-perf-bench-9515", "pytorch-blog-gemlite"):
        assert by_source[key] == {"vllm-custom"}, key
    for key in ("trtllm-v0.5.0", "nemo-llama2-inference", "rkooo567-llm-benchmark", "llm-perf-bench-vllm"):
        assert by_source[key] == {"nccl"}, key  # TensorRT-LLM before 0.8.0 (its own kernel off); vLLM before v0.3.0
    assert by_source["gpt-fast"] == {"intra-node"}  # stated by its source
    source = dict(data["sources"]["evalscope-qwq-vllm"], disable_custom_all_reduce=True)
    assert decode_all_reduce({"tp": 2}, source) == "nccl"  # a source that turned it off keeps NCCL


def test_published_row_step_exactly():
    """vllm-pr23197-bf16's Llama-3.3-70B at tp 4, batch 1 (vLLM 0.10.1 on H100s): its 161 all-reduces of one
    token's 16 KiB (two a layer and the vocabulary-parallel embedding's) at 8.5 us each instead of NCCL's."""
    from reports.published_decode import decode_layout_run, decode_run

    data = _published()
    run = next(r for r in data["runs"] if r["id"] == "vllm-pr23197-bf16 llama3.3-70b bf16 tp4 batch 1 h100")
    source = data["sources"]["vllm-pr23197-bf16"]
    custom = decode_layout_run(run, source, "kernels")["token"]
    nccl = decode_layout_run(run, dict(source, disable_custom_all_reduce=True), "kernels")["token"]
    each_nccl = collective_seconds(H100, "all_reduce", 16384, 4, 4)
    assert nccl["tp_all_reduce_seconds"] - custom["tp_all_reduce_seconds"] == pytest.approx(161 * (each_nccl - 8.5e-6))
    assert custom["compute_seconds"] == nccl["compute_seconds"]
    # first computed with the custom all-reduce (session 40): 62.13 tokens/s against the published 57.35
    # (NCCL's: 49.55, 0.864x); the all-reduce 1.39 ms of a 15.64 ms step (NCCL's 5.51 of 19.77)
    assert custom["seconds_per_token"] == pytest.approx(0.015640083655840933, rel=1e-6)
    assert decode_run(run, source, "kernels") == pytest.approx(62.13460439366678, rel=1e-6)


def test_serving_engines_take_the_rule():
    from costmodel.serving.replica import build_replica, replica_all_reduce

    cfg = load_preset("llama3-70b")
    _, step, setup = build_replica(cfg, H100, tp=2)
    assert setup["all_reduce"] == "vllm-custom"
    assert step.communication_seconds(1) == pytest.approx(160 * 8.8e-6)  # 80 layers x 2 calls of 16 KiB
    _, nccl_step, nccl_setup = build_replica(cfg, H100, tp=2, all_reduce="nccl")
    assert nccl_step.communication_seconds(1) == pytest.approx(
        collective_seconds(H100, "all_reduce", 160 * 16384, 2, 2, calls=160))
    # a 2,048-token prefill chunk's 32 MiB calls are above the 8 MiB buffer: NCCL's either way
    assert step.communication_seconds(2048) == nccl_step.communication_seconds(2048)
    assert replica_all_reduce("trtllm", "none") == "nccl" and replica_all_reduce("sarathi", "none") == "nccl"
    assert replica_all_reduce("vllm-v0", "vllm==0.4.0") == "nccl"  # off by default then
    assert replica_all_reduce("vllm-v0", "vllm==0.6.3") == "vllm-custom"


def test_layout_choice_is_validated():
    from costmodel.config import ConfigError

    assert Layout(tp=2, all_reduce="vllm-custom").all_reduce == "vllm-custom"
    with pytest.raises(ConfigError):
        Layout(tp=2, all_reduce="custom")
