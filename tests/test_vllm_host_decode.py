"""vLLM's host time a step on `published`'s static decoding rows (reports/published_decode.py vllm_host_time,
hosted_generation): a row whose source or own entry states its vLLM release and engine takes the host time a step
serve's published vLLM runs take (costmodel/serving/host_time.py host_time_for_release, HostTime.step), on its
prefill's step and each decode step; a row that states none stays as it was. The pins are the rule's own source
figures (host_time.json): vLLM issue 6913's 0.2 ms of output processing at batch 1 over that part's share of the
WukLab v0.5.4 profile (7.607 of 22.396 ms)."""

from __future__ import annotations

import pytest

import reports.published_decode as decode
import reports.published_runs as published
from costmodel.config import ConfigError
from costmodel.serving.host_time import host_time
from tests.unseen_rows import runs_of

H1_S = 0.2e-3 * 22.396 / 7.607  # H(1): issue 6913's 0.2 ms / the outputs' share of WukLab's Figure 4
WAITED_V060 = (3.937 + 9.324 + 1.528) / 22.396  # v0.6.0: scheduling, inputs (each step a decision) and the loop


def _row(source: str, ending: str) -> tuple[dict, dict]:
    run = next(r for r in runs_of(source) if r["id"].endswith(ending))
    return run, published.other_runs_data()["sources"][source]


def _seconds(run: dict, source: dict, model: str, hosted: bool, monkeypatch) -> float:
    """The row's end-to-end seconds (gen / its tokens/s at batch 1), with or without the host time."""
    if not hosted:
        monkeypatch.setattr(decode, "vllm_host_time", lambda run, source: None)
    seconds = 2048 / decode.decode_run(run, source, model)
    monkeypatch.undo()
    return seconds


@pytest.mark.parametrize("model", ["kernels", "roofline"])
def test_a_vllm_0_4_2_row_waits_h1_on_each_of_its_2048_steps(model, monkeypatch):
    # vLLM 0.4.2 (V0 before 0.6.0: vllm-v0.5.4, every part serial): the prefill and 2,047 decode steps
    run, source = _row("qwen2-speed-vllm", "qwen2-0.5b-instruct bf16 tp1 input 1")
    assert decode.vllm_host_time(run, source).version == "vllm-v0.5.4"
    added = _seconds(run, source, model, True, monkeypatch) - _seconds(run, source, model, False, monkeypatch)
    assert added == pytest.approx(2048 * H1_S, rel=1e-9)  # 1.2059 s of 2048 steps' 0.5888 ms


def test_a_vllm_0_6_3_tensor_parallel_row_waits_its_serial_and_decision_parts(monkeypatch):
    # vLLM 0.6.3 (vllm-v0.6.0): the outputs (0.2 ms) overlap the next step's 30-ms GPU work, the rest is waited
    run, source = _row("evalscope-qwq-vllm", "tp2 input 1")
    assert decode.vllm_host_time(run, source).version == "vllm-v0.6.0"
    added = _seconds(run, source, "kernels", True, monkeypatch) - _seconds(run, source, "kernels", False, monkeypatch)
    assert added == pytest.approx(2048 * H1_S * WAITED_V060, rel=1e-9)


def test_rows_that_state_no_v0_release_take_none():
    v1, v1_source = _row("amd-vllm", "llama3.1-70b fp8 tp8 batch 1")  # vLLM v0.10.0's V1 engine: the rule's none
    assert (v1_source["vllm_release"], v1_source["vllm_engine"]) == ("0.10.0", "v1")
    assert decode.vllm_host_time(v1, v1_source) is None
    for source in ("oracle-mi300x-405b", "vllm-perf-bench-9515", "llm-perf-bench-vllm", "rkooo567-llm-benchmark",
                   "hamel-latency-2023"):  # no release stated (a main-branch build, a commit between releases)
        for run in runs_of(source):
            assert decode.vllm_host_time(run, published.other_runs_data()["sources"][source]) is None, run["id"]


def test_the_stated_releases():
    data = published.other_runs_data()
    stated = {}
    for run in data["runs"]:
        version = decode.vllm_host_time(run, data["sources"][run["id"].split()[0]])
        if version is not None:
            stated[run["id"].split()[0]] = stated.get(run["id"].split()[0], set()) | {version.version}
    assert stated == {"qwen2-speed-vllm": {"vllm-v0.5.4"}, "premai-v2": {"vllm-v0.5.4"},
                      "premai-a100-vllm": {"vllm-v0.5.4"}, "evalscope-qwq-vllm": {"vllm-v0.6.0"},
                      "amd-vllm-0.7.3": {"vllm-v0.6.0"},
                      # session 39 (wt39_unseend2): Neural Magic's model cards, 'measured with vLLM version 0.7.2' (V0)
                      "redhat-r1-llama-70b": {"vllm-v0.6.0"}, "redhat-r1-qwen-32b": {"vllm-v0.6.0"},
                      "redhat-r1-llama-8b": {"vllm-v0.6.0"}, "redhat-r1-qwen-7b": {"vllm-v0.6.0"},
                      # session 40 (wt40_unseend): ROCm/vllm's MI300X pages at vLLM 0.6.6 and 0.8.5 (V0; 0.9.1's is V1)
                      "amd-vllm-0.6.6": {"vllm-v0.6.0"}, "amd-vllm-0.8.5": {"vllm-v0.6.0"},
                      # session 40 (wt40_unseend2): the Qwen2.5 page's vLLM tables, 'vLLM 0.6.3' (V0)
                      "qwen2.5-speed-vllm": {"vllm-v0.6.0"},
                      # session 42 (wt42_unseend2): vLLM 0.2.0, 0.2.7, 0.3.3 and 0.4.0 from GitHub threads (V0, the
                      # earliest host time on file, as premai-v2's 0.4.0 rows)
                      "vllm-issue1805": {"vllm-v0.5.4"}, "vllm-pr2542": {"vllm-v0.5.4"},
                      "vllm-pr3240": {"vllm-v0.5.4"}, "vllm-pr4002": {"vllm-v0.5.4"},
                      # session 45 (wt45_unseend): AccelMark's runner at vLLM 0.7.3 (V0)
                      "accelmark-a": {"vllm-v0.6.0"}, "accelmark-b": {"vllm-v0.6.0"}, "accelmark-d": {"vllm-v0.6.0"},
                      "accelmark-f": {"vllm-v0.6.0"}, "accelmark-g": {"vllm-v0.6.0"},
                      # session 46 (wt46_unseend): ROCm/vllm's MI300X pages at vLLM 0.9.0.1, 0.8.5 and 0.7.3 (V0)
                      "amd-vllm-0.9.0.1": {"vllm-v0.6.0"}, "amd-vllm-0.8.5-0513": {"vllm-v0.6.0"},
                      "amd-vllm-0.7.3-0410": {"vllm-v0.6.0"}}
    assert sum(decode.vllm_host_time(r, data["sources"][r["id"].split()[0]]) is not None
               for r in data["runs"]) == 21 + 4 + 1 + 4 + 24 + 36 + 24 + 12 + 21 + 33 + 36  # + session 39's 36 model-card rows, +
    # session 40's 24 V0 MI300X rows (wt40_unseend) and 12 Qwen2.5 vLLM 0.6.3 rows (wt40_unseend2), + session 42's 21
    # (wt42_unseend2: 1 + 7 + 7 + 6), + session 45's 33 AccelMark vLLM 0.7.3 rows (wt45_unseend: 9 + 4 + 6 + 10 + 4), +
    # session 46's 36 V0 MI300X rows (wt46_unseend: 3 x 12)


def test_an_overlapped_part_longer_than_the_shortest_step_is_refused():
    host = host_time("vllm-v0.6.0")
    overlapped = host.seconds(1) * host.overlapped  # 0.2 ms
    prefill, decode = host.static_run(0.01, 1.0, 10, overlapped, 1)  # fits exactly: each step waits its serial part
    assert decode == pytest.approx(1.0 + 10 * H1_S * WAITED_V060, rel=1e-12)
    assert prefill == pytest.approx(0.01 + H1_S * WAITED_V060, rel=1e-12)
    with pytest.raises(ConfigError, match="exceeds the shortest decode step"):
        host.static_run(0.01, 1.0, 10, overlapped * 0.99, 1)


def test_time_breakdown_prints_the_rows_host_time_beside_its_kernels(capsys):
    from validate.time_breakdown import row_breakdowns

    row_breakdowns(["qwen2-speed-vllm qwen2-0.5b-instruct bf16 tp1 input 1", "amd-vllm llama3.1-70b fp8 tp8 batch 1"])
    qwen, amd = capsys.readouterr().out.strip().splitlines()
    assert qwen.endswith("; + vLLM 0.4.2's host time a step (vllm-v0.5.4) at 1 sequences: 0.589 ms, 0.589 waited, "
                         "0.000 beside the next step's kernels")
    assert "host time" not in amd  # V1: none
