"""vLLM's host time a step (costmodel/serving/host_time.json / .py): the profiled points' line, the
parts' shares per version, the one rule a step takes, and the event loop adding it."""

from __future__ import annotations

import numpy as np
import pytest

import cli
from costmodel.config import ConfigError
from costmodel.serving.engine import simulate
from costmodel.serving.host_time import host_time, line_through
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.vllm_v0 import VLLMV0Scheduler
from costmodel.serving.workload import Request


def test_v054_line_through_wuklabs_bars():
    # WukLab's Figure 5 (vLLM v0.5.4, Llama 3 8B, A6000): 'Schedule' 10.64 ms at 128 requests, 24.61 at 512,
    # 42.15 at 1,024; least squares: 6.3211 ms + 35.118 us a sequence
    fixed, per_sequence = line_through([[128, 10.64], [512, 24.61], [1024, 42.15]])
    assert (fixed, per_sequence) == pytest.approx((6.321081081081079, 0.03511824324324325), rel=1e-12)
    v054 = host_time("vllm-v0.5.4")
    assert (v054.fixed_s, v054.per_sequence_s) == pytest.approx((6.321081081081079e-3, 3.511824324324325e-5),
                                                                rel=1e-12)
    # a step of 256 sequences (max_num_seqs' default): 6.3211 + 8.9903 = 15.3114 ms of host time, every part serial
    assert v054.seconds(256) == pytest.approx(15.311351351351351e-3, rel=1e-12)
    assert (v054.serial, v054.decision, v054.overlapped) == (1.0, 0.0, 0.0)
    assert v054.step(0.018, 256) == pytest.approx(0.018 + 15.311351351351351e-3, rel=1e-12)


def test_small_batches_from_issue_6913():
    # vLLM issue 6913: _process_model_outputs (the outputs part) 0.2 ms a step at batch 1; outputs are 7.607 of the
    # profile's 22.396 ms, so H(1) = 0.2 x 22396 / 7607 = 0.58883 ms (the line's extrapolation gave 6.3562 ms)
    v054 = host_time("vllm-v0.5.4")
    assert v054.seconds(1) == pytest.approx(0.2e-3 * 22396 / 7607, rel=1e-12)
    assert v054.seconds(1) == pytest.approx(0.5888260812409623e-3, rel=1e-12)
    # the line from the lowest profiled point up: H(128) = 6.3211 + 128 x 0.035118 = 10.81622 ms, unchanged
    h128 = 6.321081081081079e-3 + 128 * 3.511824324324325e-5
    assert v054.seconds(128) == pytest.approx(h128, rel=1e-12)
    assert v054.seconds(128) == pytest.approx(10.816216216216219e-3, rel=1e-12)
    # straight between: H(44) = 0.58883 + 43/127 x (10.81622 - 0.58883) = 4.05164 ms (issue 6854's ~4 ms bubble)
    assert v054.seconds(44) == pytest.approx(0.5888260812409623e-3 + (h128 - 0.5888260812409623e-3) * 43 / 127,
                                             rel=1e-12)
    assert [round(v054.seconds(b) * 1e3, 4) for b in (1, 8, 32, 64, 127)] == [0.5888, 1.1525, 3.0853, 5.6623,
                                                                               10.7357]
    # vllm-v0.6.0 takes v0.5.4's costs, small batch included; V1 has none (through the origin at every b)
    assert host_time("vllm-v0.6.0").seconds(1) == v054.seconds(1)
    assert host_time("vllm-v0.6.0").describe()["host_small_batch"] == [1, 0.5888, 128]
    assert host_time("vllm-v1").seconds(1) == pytest.approx(21.484375e-6, rel=1e-12)
    assert "host_small_batch" not in host_time("vllm-v1").describe()


def test_v060_shares_from_the_breakdown():
    # WukLab's Figure 4 breakdown (22.396 ms): schedule 3.937 + inputs 9.324 once a decision, outputs 7.607
    # overlapped (asynchronous output processing), engine loop 1.528 every step
    v060 = host_time("vllm-v0.6.0")
    assert (v060.fixed_s, v060.per_sequence_s) == (host_time("vllm-v0.5.4").fixed_s,
                                                   host_time("vllm-v0.5.4").per_sequence_s)
    assert (v060.serial, v060.decision, v060.overlapped) == pytest.approx((1528 / 22396, 13261 / 22396,
                                                                           7607 / 22396), rel=1e-12)
    host = v060.seconds(256)  # 15.3114 ms
    # one step deciding, its 18 ms of kernels hiding the 5.2006 ms of outputs: 18 + 0.6603 x 15.3114 ms
    assert v060.step(0.018, 256) == pytest.approx(0.018 + host * 14789 / 22396, rel=1e-12)
    # 2 ms of kernels do not hide them: the step waits for the rest
    assert v060.step(0.002, 256) == pytest.approx(host * 14789 / 22396 + host * 7607 / 22396, rel=1e-12)
    # a window of 3: the decision's 9.0660 ms on its first step only, the engine loop's 1.0446 ms on each
    window = v060.window([0.018, 0.018, 0.018], 256)
    assert window == pytest.approx([0.018 + host * 14789 / 22396] + [0.018 + host * 1528 / 22396] * 2, rel=1e-12)


def test_v1_gap_through_the_origin():
    # vLLM issue 10634: a V1 (AsyncLLM) decode gap of 5-6 ms at bs 256; 5.5 / 256 = 21.484375 us a sequence
    v1 = host_time("vllm-v1")
    assert (v1.fixed_s, v1.per_sequence_s * 1e6) == (0.0, pytest.approx(21.484375, rel=1e-12))
    assert v1.seconds(256) == pytest.approx(5.5e-3, rel=1e-12)
    assert host_time("none") is None and host_time(None) is None
    # sarathi-serve listed since wt41_hostv1 (Vidur's profile of Sarathi-Serve's engine)
    with pytest.raises(ConfigError, match="--host-time must be none, one of vllm-v0.5.4, vllm-v0.6.0, vllm-v1, sarathi-serve or vllm==RELEASE"):
        host_time("vllm-0.7")


def test_the_event_loop_adds_it():
    # two requests (prompt 10, output 7) on vllm-v0 with 3-step windows, 10 ms of kernels a step: the prefill step
    # decides (10 + 0.6603 x H(2)); each window's first step takes the decision, the others the engine loop only
    v060 = host_time("vllm-v0.6.0")
    requests = [Request(0, 0.0, 10, 7), Request(1, 0.0, 10, 7)]
    steps = lambda query, keys, emitting: 0.010  # noqa: E731
    timeline = simulate(requests, VLLMV0Scheduler(BlockPool(100, 16), 4, 2048, num_scheduler_steps=3), steps,
                        512, host=v060)
    # H(2) below the profiled 128: a 127th of the way from H(1) = 0.58883 ms to H(128) = 10.81622 ms: 0.66936 ms
    h2 = 0.6693567122250194e-3
    decided, looped = 0.010 + h2 * 14789 / 22396, 0.010 + h2 * 1528 / 22396
    assert [s.seconds for s in timeline.steps] == pytest.approx([decided, decided, looped, looped, decided, looped,
                                                                 looped], rel=1e-12)
    assert timeline.sequences[0].token_times[-1] == pytest.approx(3 * decided + 4 * looped, rel=1e-12)
    # without host time, the same steps at 10 ms
    plain = simulate(requests, VLLMV0Scheduler(BlockPool(100, 16), 4, 2048, num_scheduler_steps=3), steps, 512)
    assert [s.seconds for s in plain.steps] == [0.010] * 7


def test_steady_runs_add_it_each_step():
    # single-step steady decoding (decode_run several steps at once): every step decides
    v054 = host_time("vllm-v0.5.4")
    requests = [Request(0, 0.0, 10, 40), Request(1, 0.0, 10, 40)]
    run = lambda keys, count: np.full(count, 0.010)  # noqa: E731
    timeline = simulate(requests, VLLMV0Scheduler(BlockPool(100, 16), 4, 2048), lambda q, k, e: 0.010, 512,
                        decode_run=run, host=v054)
    assert {round(s.seconds, 12) for s in timeline.steps} == {round(0.010 + v054.seconds(2), 12)}
    assert len(timeline.steps) == 40


def test_serve_option(capsys):
    base = ["serve", "--model", "llama3.1-8b", "--rate", "20", "--requests", "20"]
    assert cli.main(base + ["--host-time", "vllm-0.7"]) == 2
    assert ("error: --host-time must be none, one of vllm-v0.5.4, vllm-v0.6.0, vllm-v1, sarathi-serve or vllm==RELEASE "
            "(host_time.json's release rules), got 'vllm-0.7'.") \
        in capsys.readouterr().err
    assert cli.main(base + ["--scheduler", "trtllm", "--host-time", "vllm-v1"]) == 2
    # each version names its engine's schedulers since wt41_hostv1 (host_time.json "schedulers")
    assert ("error: --host-time vllm-v1 is the host time a step of vllm and vllm-v0's engine, not trtllm's."
            in capsys.readouterr().err)
    assert cli.main(base + ["--scheduler", "vllm", "--host-time", "sarathi-serve"]) == 2
    assert ("error: --host-time sarathi-serve is the host time a step of sarathi and vllm-v0's engine, not vllm's."
            in capsys.readouterr().err)
    # the setup's line names the line's range and the small batch below it
    assert cli.main(base + ["--scheduler", "vllm-v0", "--host-time", "vllm-v0.6.0"]) == 0
    printed = capsys.readouterr().out
    assert ("host time a step: vllm-v0.6.0 (6.3211 ms + 35.1182 us a sequence from 128 sequences, below it straight "
            "from 0.5888 ms at 1; shares serial 0.0682, once a decision 0.5921, overlapped 0.3397") in printed


def test_a_named_release_takes_its_engines_profile():
    # host_time.json "releases": V0 before 0.6.0 runs every host part serially (v0.5.4's loop); V0 from 0.6.0 has
    # multi-step scheduling and asynchronous output processing (vllm-v0.6.0); V1 takes none
    from costmodel.serving.host_time import host_time_for_release

    assert [host_time_for_release("v0", r) for r in ("0.4.2", "v0.5.4", "0.5.5", "0.6.0", "v0.6.4", "0.7.3",
                                                     "0.10.1")] == ["vllm-v0.5.4"] * 3 + ["vllm-v0.6.0"] * 4
    assert [host_time_for_release("v1", r) for r in ("0.8.5", "0.9.2", "0.13.0")] == ["none"] * 3
    with pytest.raises(ConfigError, match="numbers joined by dots"):
        host_time_for_release("v0", "latest")
    with pytest.raises(ConfigError, match="no host-time rule covers vLLM '0.11.0' on engine 'v0'"):
        host_time_for_release("v0", "0.11.0")


def test_sarathi_serve_is_vidurs_profile_of_its_engine():
    """host_time.json sarathi-serve (wt41_hostv1): each point the sum of the four host parts Vidur charges
    (schedule, sampler_e2e, prepare_inputs_e2e, process_model_outputs), their MEDIAN columns in ms, in
    microsoft/vidur data/profiling/a100/cpu_overheads.csv rows 36-43 (CodeLlama-34B, tp 2, batch 8-64)."""
    from costmodel.serving.host_time import host_time_facts, host_time_schedulers

    csv = {8: (0.17464480005914534, 1.1422494778455083, 0.6872888492350837, 1.0335500338349635),
           16: (0.2996917292909348, 1.2080404245688643, 1.0843703836591938, 1.8645126544600101),
           24: (0.4069761073074159, 1.298227129265518, 1.5174019651526234, 2.5934779627540068),
           32: (0.508138756660952, 1.2904610853311713, 1.917456785292084, 3.2837954287484448),
           40: (0.6983739185921765, 1.6112328946234806, 2.3419871623412503, 4.1495503307401576),
           48: (1.0439373878446458, 1.905986486065466, 2.883485637110713, 5.39245126488446),
           56: (1.165324455711684, 1.7878248148271279, 3.2576298584274874, 6.10434066775168),
           64: (1.188865579208785, 1.8645126544600101, 3.6876888540052732, 6.732860804094767)}
    entry = host_time_facts()["sarathi-serve"]
    assert entry["points_ms"] == [[b, sum(parts)] for b, parts in csv.items()]
    assert list(entry["parts_ms"].values()) == list(csv[8]) and set(entry["modes"].values()) == {"serial"}
    assert host_time_schedulers("sarathi-serve") == ("sarathi", "vllm-v0")
    assert host_time_schedulers("vllm-v0.6.0") == ("vllm", "vllm-v0")
    sarathi = host_time("sarathi-serve")
    # the least-squares line through the eight points: 1.28134 ms + 194.013 us a sequence, every part serial
    assert 1e3 * sarathi.fixed_s == pytest.approx(1.2813360846017758, rel=1e-12)
    assert 1e6 * sarathi.per_sequence_s == pytest.approx(194.0126655116003, rel=1e-12)
    assert (sarathi.serial, sarathi.decision, sarathi.overlapped) == (1.0, 0.0, 0.0)
    # Table 2's steps hold 1 and 4 sequences, below the profile's 8: the line stands there, an assumption the file
    # states with its figures (wt41_review: it was unstated); no small batch is measured
    assert "small_batch" not in entry and sarathi.small_sequences == 0 and sarathi.profiled_from == 8
    assert ("Assumed below the profile's 8 sequences" in entry["points_source"]
            and f"H(1) = {1e3 * sarathi.seconds(1):.4f} ms and H(4) = {1e3 * sarathi.seconds(4):.4f} ms"
            in entry["points_source"])
    # a step of 4 sequences whose kernels take 30 ms takes 30 + 1.28134 + 4 x 0.194013 ms
    assert sarathi.step(0.030, 4) == pytest.approx(0.030 + 2.057386746648177e-3, rel=1e-12)


def test_unpriced_measurements_say_why_and_their_rows_take_none():
    """host_time.json "unpriced" (wt41_hostv1): each measured host time no version prices names its engine,
    releases, figure, source, exposure and why; the SGLang decode rows (releases from v0.4, the overlap
    scheduler's: no GPU idle in the v0.4 blog's Nsight profile) take no host time a step."""
    import json
    from pathlib import Path

    from costmodel.serving.host_time import host_time_file
    from reports.published_decode import vllm_host_time

    unpriced = host_time_file()["unpriced"]["measurements"]
    assert [m["engine"] for m in unpriced] == ["SGLang", "SGLang", "TensorRT-LLM", "vLLM V1"]
    assert all(set(m) == {"engine", "releases", "figure", "source", "exposed", "priced"} for m in unpriced)
    assert "'~580 us/iter of host overhead as GPU idle'" in unpriced[2]["figure"]  # TensorRT-LLM issue 13957
    data = json.loads((Path(__file__).resolve().parent.parent / "costmodel" / "published_runs.json").read_text())
    sglang = [run for run in data["runs"] if run["id"].split()[0] in ("qwen3-speed-sglang", "pytorch-blog-gemlite")]
    assert len(sglang) == 21
    assert all(vllm_host_time(run, data["sources"][run["id"].split()[0]]) is None for run in sglang)
