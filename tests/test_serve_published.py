"""benchmarks/serve_published.py: its rows are computed by the simulator from the published setups
(the script passes each source's exact model, hardware, parallelism, precision, batch cap and
lengths), not typed in; and the published figures are the sources' own numbers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import run_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "serve_published.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("serve_published", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mlperf():
    """benchmarks/published_mlperf.py: MLPerf's closed-division rows and runners (and span_at_once)."""
    import benchmarks.published_mlperf as module
    return module


def test_mlperf_figures_are_the_loadgen_summaries(mlperf):
    # the mlperf_log_summary.txt files and NVIDIA's config classes benchmarks/published_mlperf.py's docstring names
    azure, dgx, gh200, h200, h200_v40, h200_cts, amd = mlperf.MLPERF
    # prompts: the dataset's histogram and its mean rounded to a token (mlperf_llama2_70b_lengths.json, below)
    assert (mlperf.MLPERF_MODEL, mlperf.MLPERF_OUTPUT) == ("llama2-70b", 294)
    assert mlperf.mlperf_mean_prompt(mlperf.mlperf_input_lengths()) == 222
    assert (azure["hardware"], azure["tp"], azure["replicas"]) == ("h100-nvl", 2, 1)
    # max_num_tokens=16384: LLAMA2EngineBuilderOp's default in inference_results_v4.0's builder.py (commit
    # 9201484); v4.1's builder is not stored, so that system keeps vLLM's default (None here)
    assert (azure["max_batched_tokens"], dgx["max_batched_tokens"]) == (16384, None)
    assert azure["offline"] == {"samples": 24576, "max_num_seqs": 1300, "tokens_per_s": 3900.33}
    assert azure["server"] == {"rate": 11.97, "requests": 7200, "max_num_seqs": 640, "tokens_per_s": 3458.96,
                               "p99_ttft_s": 0.662330280, "p99_tpot_s": 0.171915314}
    assert (dgx["hardware"], dgx["tp"], dgx["replicas"]) == ("h100-sxm", 2, 4)
    assert dgx["offline"] == {"samples": 24576, "max_num_seqs": 896, "tokens_per_s": 24524.9}
    assert dgx["server"] == {"rate": 75.10, "requests": 9000, "max_num_seqs": 1024, "tokens_per_s": 21605.79,
                             "p99_ttft_s": 0.461278089, "p99_tpot_s": 0.175354317}
    # session 25's two v4.1 systems: GH200_144GB_aarch64x1 (gpu_batch_size 806 in both scenarios, tp 1) and
    # H200_SXM_141GBx8 (806 Offline, 896 Server, tp 1 from H200_SXM_141GBx1), their summaries' figures
    assert (gh200["hardware"], gh200["tp"], gh200["replicas"], gh200["max_batched_tokens"]) == (
        "gh200-144gb", 1, 1, None)
    assert gh200["offline"] == {"samples": 24576, "max_num_seqs": 806, "tokens_per_s": 4067.52}
    assert gh200["server"] == {"rate": 13.43, "requests": 7200, "max_num_seqs": 806, "tokens_per_s": 3883.67,
                               "p99_ttft_s": 0.579347528, "p99_tpot_s": 0.192598630}
    assert (h200["hardware"], h200["tp"], h200["replicas"], h200["max_batched_tokens"]) == ("h200", 1, 8, None)
    assert h200["offline"] == {"samples": 24576, "max_num_seqs": 806, "tokens_per_s": 31302.7}
    assert h200["server"] == {"rate": 101.25, "requests": 9000, "max_num_seqs": 896, "tokens_per_s": 29228.22,
                              "p99_ttft_s": 0.452744202, "p99_tpot_s": 0.146040006}
    # v4.0's H200_SXM_141GBx8 (configs at 8121a81: the same batch sizes), the v4.0 builder's 16,384 tokens
    assert (h200_v40["hardware"], h200_v40["tp"], h200_v40["replicas"], h200_v40["max_batched_tokens"]) == (
        "h200", 1, 8, 16384)
    assert h200_v40["offline"] == {"samples": 24576, "max_num_seqs": 806, "tokens_per_s": 27738.3}
    assert h200_v40["server"] == {"rate": 91.24, "requests": 9000, "max_num_seqs": 896, "tokens_per_s": 26485.43,
                                  "p99_ttft_s": 0.753113481, "p99_tpot_s": 0.194987874}
    # v4.1's H200_SXM_141GB_CTSx8 (1,000 W boards): 784 Offline (the x8 class's own), 1,024 Server
    assert (h200_cts["hardware"], h200_cts["tp"], h200_cts["replicas"]) == ("h200", 1, 8)
    assert h200_cts["offline"] == {"samples": 24576, "max_num_seqs": 784, "tokens_per_s": 34864.2}
    assert h200_cts["server"] == {"rate": 113.70, "requests": 9000, "max_num_seqs": 1024, "tokens_per_s": 32789.74,
                                  "p99_ttft_s": 0.510351435, "p99_tpot_s": 0.181533810}
    # session 26: AMD's v4.1 8xMI300X_2xEPYC-9374F (99%): test_VllmFp8 scripts' TP=1 DP=8, Offline --enforce-eager
    assert (amd["hardware"], amd["tp"], amd["replicas"], amd["max_batched_tokens"]) == ("mi300x", 1, 8, None)
    assert amd["offline"] == {"samples": 24576, "max_num_seqs": 256, "tokens_per_s": 23514.8, "cuda_graphs": "off"}
    assert amd["server"] == {"rate": 73.66, "requests": 9000, "max_num_seqs": 256, "tokens_per_s": 21028.23,
                             "p99_ttft_s": 1.604171041, "p99_tpot_s": 0.197873909}
    assert mlperf.mlperf_options(amd, 256, "off")["cuda_graphs"] == "off"
    assert mlperf.mlperf_options(dgx, 896)["cuda_graphs"] == "auto"


# Each system's hardware, engines and Offline sequence cap, typed from the sources (not read from
# mlperf.MLPERF): Azure's NC_H100_v5_TRT.json (2 x H100 NVL) and NVIDIA's class H100_NVL_94GB_TP2x1
# (gpu_batch_size 1300, one engine of tp 2); DGX H100's class H100_SXM_80GB_TP2x4 (gpu_batch_size 896,
# four engines of tp 2 on 8 x H100 SXM).
@pytest.mark.parametrize("index, hardware, max_num_seqs, replicas", [(0, "h100-nvl", 1300, 1),
                                                                     (1, "h100-sxm", 896, 4)])
def test_mlperf_offline_passes_the_published_setup(mlperf, monkeypatch, index, hardware, max_num_seqs, replicas):
    import costmodel.serving.api as api

    system = mlperf.MLPERF[index]
    seen = {}
    real_build, real_run = mlperf.build_replica, api.run_replicas

    def build(cfg, hardware, **options):
        seen.update(model=cfg.name, hardware=hardware.name, **options)
        return real_build(cfg, hardware, **options)

    def run(requests, replica, step, replicas, *args, **kwargs):
        seen["lengths"] = {(r.prompt_tokens, r.output_tokens) for r in requests}
        seen["arrivals"] = {r.arrival_s for r in requests}
        seen["count"], seen["replicas"] = len(requests), replicas
        return real_run(requests, replica, step, replicas, *args, **kwargs)

    monkeypatch.setattr(mlperf, "build_replica", build)
    monkeypatch.setattr(api, "run_replicas", run)
    ours = mlperf.mlperf_offline(system, 300, samples=40)
    assert seen["hardware"] == hardware and seen["model"].lower().startswith("llama2-70b")
    assert {k: seen[k] for k in ("scheduler", "tp", "max_num_seqs", "weight_dtype", "kv_dtype",
                                 "gpu_memory_utilization", "max_batched_tokens")} == {
        "scheduler": "vllm", "tp": 2, "max_num_seqs": max_num_seqs, "weight_dtype": "fp8",
        "kv_dtype": "fp8", "gpu_memory_utilization": 0.90, "max_batched_tokens": system["max_batched_tokens"]}
    assert seen["lengths"] == {(300, 294)} and seen["arrivals"] == {0.0} and seen["count"] == 40
    assert seen["replicas"] == replicas
    # the figure is the run's: 40 x 294 tokens over the simulated span, which longer prompts lengthen
    assert 0 < ours and mlperf.mlperf_offline(system, 1000, samples=40) < ours


def test_mlperf_server_passes_the_published_rate(mlperf, served):
    system = mlperf.MLPERF[1]
    seen, real_serve = served, served["_real"]
    ours = mlperf.mlperf_server(system, 200, requests=40)
    assert {k: seen[k] for k in ("model", "hardware", "rate", "requests", "prompt", "output", "replicas", "tp",
                                 "max_num_seqs", "weight_dtype", "kv_dtype", "scheduler", "max_batched_tokens")} == {
        "model": "llama2-70b", "hardware": "h100-sxm", "rate": 75.10, "requests": 40, "prompt": "200",
        "output": "294", "replicas": 4, "tp": 2, "max_num_seqs": 1024, "weight_dtype": "fp8", "kv_dtype": "fp8",
        "scheduler": "vllm", "max_batched_tokens": None}
    run = real_serve("llama2-70b", "h100-sxm", rate=75.10, requests=40, prompt="200", output="294", seed=0,
                     replicas=4, scheduler="vllm", tp=2, max_num_seqs=1024, dtype="bf16", weight_dtype="fp8",
                     kv_dtype="fp8", gpu_memory_utilization=0.90,
                     all_reduce="nccl")  # mlperf_options': TensorRT-LLM's, not vLLM's custom all-reduce (wt40_customar)
    assert seen["all_reduce"] == "nccl"
    # LoadGen's p99 of 40 samples (results.cc: the sorted values at index floor(40 x 0.99) = 39): the largest
    assert ours == {"tokens_per_s": run.summary()["throughput"]["output_tokens_per_s"],
                    "p99_ttft_s": run.requests["ttft_s"].max(), "p99_tpot_s": run.requests["tpot_s"].max()}
    assert ours["p99_ttft_s"] > run.summary()["ttft"]["p99"]  # numpy's interpolated p99 lies below the largest


# The dataset's prompt lengths (benchmarks/mlperf_llama2_70b_lengths.json): 24,576 samples (processorca.py
# n_samples), each under 1,024 tokens (its filter tok_input_length < --seqlen_limit 1024), and the statistics of
# openshift-psap/performance-dashboard's mlperf-data/summaries/llama2-70b-99.csv (commit 7cd1065), input_length:
# mean 222.33, median 152, min 48, max 1,021, typed here from that file rather than read from the JSON.
def test_mlperf_lengths_reproduce_the_dataset(mlperf):
    lengths = mlperf.mlperf_input_lengths()
    data = json.loads(mlperf.MLPERF_LENGTHS.read_text())
    assert data["stated"] == {"samples": 24576, "below": 1024, "mean": 222.33, "median": 152, "min": 48, "max": 1021}
    assert data["source"]["repo"] == "openshift-psap/performance-dashboard"
    assert data["source"]["commit"] == "7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb"
    assert lengths.kind == "histogram" and sum(lengths.weights) == 24576 and len(lengths.values) == 879
    prompts = mlperf.mlperf_prompts(lengths)
    assert len(prompts) == 24576 and sorted(prompts) == sorted(mlperf.mlperf_prompts(lengths))
    assert round(sum(prompts) / len(prompts), 2) == 222.33 and max(prompts) == 1021 and min(prompts) < 128
    assert round(sum(prompts) / len(prompts)) == mlperf.mlperf_mean_prompt(lengths)
    # shuffled (LoadGen issues samples in a seeded random order), and the same order each call
    assert prompts == mlperf.mlperf_prompts(lengths) and prompts != sorted(prompts)
    assert mlperf.mlperf_prompts(lengths, 40) == prompts[:40]


def _corrupt(data, change):
    data = json.loads(json.dumps(data))
    change(data)
    return data


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("stated"), "needs an object"),
    (lambda d: d["stated"].pop("mean"), "stated needs numbers"),
    (lambda d: d["values"].__setitem__(0, 48.5), "whole numbers"),
    (lambda d: d["weights"].__setitem__(3, -1), "non-negative weights"),
    (lambda d: d["values"].__setitem__(1, 48), "increasing"),
    (lambda d: d["weights"].__setitem__(0, d["weights"][0] + 1), "samples"),
    (lambda d: d["stated"].__setitem__("mean", 222.34), "mean"),
    (lambda d: d["stated"].__setitem__("median", 153), "median"),
    (lambda d: d["stated"].__setitem__("below", 1021), "cap"),
    (lambda d: d["stated"].__setitem__("below", True), "stated needs numbers"),  # JSON true is not a number here
])
def test_a_malformed_mlperf_histogram_is_one_line(mlperf, tmp_path, change, words):
    from costmodel.config import ConfigError

    bad = tmp_path / "lengths.json"
    bad.write_text(json.dumps(_corrupt(json.loads(mlperf.MLPERF_LENGTHS.read_text()), change)))
    with pytest.raises(ConfigError) as error:
        mlperf.mlperf_input_lengths(bad)
    assert words in str(error.value) and "lengths.json" in str(error.value) and "\n" not in str(error.value)


def test_the_script_stops_on_a_bad_histogram_with_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "lengths.json"
    bad.write_text("{not json")
    code, out, err = run_script(SCRIPT, ["mlperf", str(bad)], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: cannot read the MLPerf length histogram")


def test_mlperf_offline_runs_each_sample_of_the_histogram(mlperf, monkeypatch):
    import costmodel.serving.api as api

    seen, real_run = {}, api.run_replicas

    def run(requests, *args, **kwargs):
        seen["prompts"] = [r.prompt_tokens for r in requests]
        seen["outputs"] = {r.output_tokens for r in requests}
        return real_run(requests, *args, **kwargs)

    monkeypatch.setattr(api, "run_replicas", run)
    lengths = mlperf.mlperf_input_lengths()
    assert mlperf.mlperf_offline(mlperf.MLPERF[0], lengths, samples=60) > 0
    assert seen["prompts"] == mlperf.mlperf_prompts(lengths, 60) and seen["outputs"] == {294}


def test_mlperf_server_draws_prompts_from_the_histogram(mlperf, served):
    lengths = mlperf.mlperf_input_lengths()
    mlperf.mlperf_server(mlperf.MLPERF[0], lengths, requests=30)
    assert served["prompt"] is lengths and served["output"] == "294" and served["max_batched_tokens"] == 16384


def test_vllm_post_figures_are_the_charts_bars(script):
    """The post's setup (_posts/2024-09-05-perf-update.md: 500 prompts, the datasets' mean lengths,
    8B on 1 H100 and 70B on 4) and the six bars of overall_throughput.png, read from the stored
    pixel rows: 3 datasets x 2 models, in the chart's order."""
    assert script.VLLM_REQUESTS == 500
    assert script.VLLM_DATASETS == {"ShareGPT": (202, 179), "decode-heavy": (462, 256), "prefill-heavy": (462, 16)}
    assert script.VLLM_TP == {"llama3-8b": 1, "llama3-70b": 4}
    assert list(script.VLLM_CHART) == [(model, dataset) for model in ("llama3-8b", "llama3-70b")
                                       for dataset in ("ShareGPT", "decode-heavy", "prefill-heavy")]
    readings = [script.chart_reading(*panel) for panel in script.VLLM_CHART.values()]
    assert readings == [36.9, 31.0, 59.1, 17.3, 15.4, 25.2]
    for gridlines, top_row in script.VLLM_CHART.values():
        rows, labels = list(gridlines), list(gridlines.values())
        assert labels[-1] == 0 and max(rows) == rows[-1] and top_row < rows[-1]  # the x axis is the lowest row
        above = [label for row, label in gridlines.items() if row <= top_row]  # gridlines the bar does not reach
        below = [label for row, label in gridlines.items() if row > top_row]
        assert (min(above) if above else float("inf")) >= script.chart_reading(gridlines, top_row) >= max(below)
        gaps = [(b - a) / (la - lb) for a, b, la, lb in zip(rows, rows[1:], labels, labels[1:])]
        assert max(gaps) - min(gaps) < 1.5 / min(la - lb for la, lb in zip(labels, labels[1:]))  # evenly spaced


def test_chart_reading_is_the_gridlines_line_at_the_bar_top(script):
    # labels 7, 4, 1 at rows 10, 40, 70: 0.1 per pixel downwards, 8 at row 0
    assert script.chart_reading({10: 7, 40: 4, 70: 1}, 25) == 5.5
    assert script.chart_reading({10: 7, 40: 4, 70: 1}, 0) == 8.0
    assert script.chart_reading({100: 20, 200: 10, 300: 0}, 300) == 0.0


def test_vllm_rows_pass_the_posts_setup(script, served, monkeypatch):
    """Every request at time 0 with the dataset's mean lengths (their means are the post's), vLLM
    v0's scheduler with v0.6.0's defaults and the post's 10 scheduler steps, the model's GPUs as
    tp, on h100-sxm in bf16; the figure is the run's requests per second."""
    import costmodel.serving.api as api

    seen, made = served, []
    real_serve, real_make = served["_real"], api.make_requests

    def make_requests(*args, **kwargs):
        made.append(real_make(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(api, "make_requests", make_requests)
    ours = script.vllm_throughput("llama3-70b", "decode-heavy", requests=24)
    assert {k: seen[k] for k in ("model", "hardware", "requests", "prompt", "output", "scheduler", "tp",
                                 "max_num_seqs", "max_batched_tokens", "dtype", "gpu_memory_utilization",
                                 "num_scheduler_steps", "host_time")} == {
        "model": "llama3-70b", "hardware": "h100-sxm", "requests": 24, "prompt": "462", "output": "256",
        "scheduler": "vllm-v0", "tp": 4, "max_num_seqs": 256, "max_batched_tokens": 8192, "dtype": "bf16",
        "gpu_memory_utilization": 0.90, "num_scheduler_steps": 10, "host_time": "vllm-v0.6.0"}
    chosen = made[0]
    assert seen["rate"] == float("inf") and {r.arrival_s for r in chosen} == {0.0} and len(chosen) == 24
    assert sum(r.prompt_tokens for r in chosen) / 24 == 462 and sum(r.output_tokens for r in chosen) / 24 == 256
    direct = real_serve("llama3-70b", "h100-sxm", rate=float("inf"), requests=24, prompt="462", output="256", seed=0,
                        **script.vllm_options(4)).summary()
    assert ours == direct["throughput"]["requests_per_s"]
    # the dataset picks the lengths: ShareGPT's shorter prompts and outputs finish sooner than decode-heavy's
    assert script.vllm_throughput("llama3-70b", "ShareGPT", requests=24) > ours


def test_the_vllm_selector_prints_the_posts_table_alone():
    """`serve_published.py vllm`: the six rows of the post's table, nothing of the other tables. Run in
    a fresh interpreter, as a user runs it (the error paths below run in this one: run_script)."""
    run = subprocess.run([sys.executable, str(SCRIPT), "vllm"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stderr == ""
    rows = [line for line in run.stdout.splitlines() if line.startswith("| llama3-")]
    assert [tuple(cell.strip() for cell in row.split("|")[1:4]) for row in rows] == [
        (model, tp, dataset) for model, tp in (("llama3-8b", "1"), ("llama3-70b", "4"))
        for dataset in ("ShareGPT", "ShareGPT", "decode-heavy", "prefill-heavy")]
    # each ShareGPT bar twice: at the post's means, fixed, then with the sampled requests' own lengths
    assert [row.split("|")[4].strip() for row in rows[:2]] == ["202 / 179 (means, fixed)",
                                                               "each request's own (means 202 / 214)"]
    assert "MLPerf" not in run.stdout and "NIM" not in run.stdout and "Sarathi" not in run.stdout


def test_sharegpt_lengths_are_vllms_sample(script):
    """sharegpt_vllm_lengths.json: the first 500 rows of JonnyKong/vidur's sharegpt_v3_filtered.csv
    (vLLM's sample_sharegpt_requests, Llama 3.1's tokenizer), paired; its statistics reproduced, the
    prompts' mean the post's 202, every request inside vLLM's filter."""
    pairs = script.sharegpt_lengths()
    data = json.loads(script.VLLM_SHAREGPT.read_text())
    assert data["source"]["repo"] == "JonnyKong/vidur"
    assert data["source"]["commit"] == "941a76c34cc3135db0dd13250252e4b23f7ea103"
    assert data["source"]["path"] == "data/processed_traces/sharegpt_v3_filtered.csv"
    assert data["stated"]["prompt"] == {"samples": 500, "mean": 201.79, "median": 76.0, "min": 4, "max": 933}
    assert data["stated"]["output"] == {"samples": 500, "mean": 213.92, "median": 173.0, "min": 4, "max": 806}
    assert len(pairs) == script.VLLM_REQUESTS == 500
    prompts, outputs = zip(*pairs)
    assert round(sum(prompts) / 500) == script.VLLM_DATASETS["ShareGPT"][0] == 202
    assert pairs[:3] == [(13, 120), (25, 770), (27, 233)]  # the source file's first rows, paired as there
    assert min(prompts) >= 4 and min(outputs) >= 4 and max(prompts) <= 1024 and max(p + o for p, o in pairs) <= 2048


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("outputs"), "needs an object"),
    (lambda d: d["stated"]["prompt"].pop("mean"), "stated needs"),
    (lambda d: d["stated"].pop("max_total"), "stated needs"),
    (lambda d: d["prompts"].__setitem__(0, 13.5), "whole numbers"),
    (lambda d: d["outputs"].pop(), "one of each"),
    (lambda d: d["stated"]["prompt"].__setitem__("mean", 201.8), "mean"),
    (lambda d: d["stated"]["output"].__setitem__("median", 174.0), "median"),
    (lambda d: d["stated"]["output"].__setitem__("max", 807), "max"),
    (lambda d: d["stated"].__setitem__("max_total", 1500), "filter"),
    (lambda d: d["stated"].__setitem__("min_tokens", 5), "filter"),
    (lambda d: d["stated"].__setitem__("min_tokens", True), "stated needs"),  # read as 1 before: the run went on
])
def test_a_malformed_sharegpt_file_is_one_line(script, tmp_path, change, words):
    from costmodel.config import ConfigError

    bad = tmp_path / "sharegpt.json"
    bad.write_text(json.dumps(_corrupt(json.loads(script.VLLM_SHAREGPT.read_text()), change)))
    with pytest.raises(ConfigError) as error:
        script.sharegpt_lengths(bad)
    assert words in str(error.value) and "sharegpt.json" in str(error.value) and "\n" not in str(error.value)


def test_the_script_stops_on_a_bad_sharegpt_file_with_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "sharegpt.json"
    bad.write_text("[]")
    code, out, err = run_script(SCRIPT, ["vllm", str(bad)], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "sharegpt.json" in err


def test_vllm_sharegpt_rows_run_each_requests_own_lengths(script, mlperf, monkeypatch):
    """With pairs, every request arrives at 0 with its own prompt and output, in the file's order,
    under the post's setup (vllm_options, the model's tp); the figure is the requests over the span."""
    import costmodel.serving.api as api
    import costmodel.serving.replica as replica

    seen, real_run, real_build = {}, api.run_replicas, replica.build_replica

    def build(cfg, hardware, **options):
        seen.update(hardware=hardware.name, **options)
        return real_build(cfg, hardware, **options)

    def run(requests, *args, **kwargs):
        seen["requests"] = requests
        rows, steps, itl = real_run(requests, *args, **kwargs)
        seen["end"] = max(r["finish_s"] for r in rows)
        return rows, steps, itl

    monkeypatch.setattr(mlperf, "build_replica", build)  # span_at_once's (benchmarks/published_mlperf.py)
    monkeypatch.setattr(api, "run_replicas", run)
    pairs = script.sharegpt_lengths()
    ours = script.vllm_throughput("llama3-8b", "ShareGPT", requests=40, pairs=pairs)
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in seen["requests"]] == [(0.0, p, o) for p, o in pairs[:40]]
    assert {k: seen[k] for k in script.vllm_options(1)} == script.vllm_options(1) and "h100" in seen["hardware"].lower()
    assert ours == 40 / seen["end"]
    # the spread matters: the same 40 requests at their mean lengths, fixed, finish sooner
    at_means = script.vllm_throughput("llama3-8b", "ShareGPT", requests=40)
    assert at_means > ours
    from costmodel.config import ConfigError
    with pytest.raises(ConfigError, match="fewer than the 501"):
        script.vllm_throughput("llama3-8b", "ShareGPT", requests=501, pairs=pairs)


def test_sglang_vllm_tables_are_the_readmes(script):
    """sgl-project/sglang benchmark/benchmark_vllm_060/README.md (commit 120affb), the vLLM rows, typed
    here from the page: offline (5,000 prompts, "inf") request and output token throughput; online
    (RPS, prompts) median E2E latency, TTFT, TPOT and ITL in ms."""
    small, large = script.SGLANG_VLLM
    assert (small["model"], small["hardware"], small["tp"], small["gpus"]) == ("llama3.1-8b", "a100-80gb", 1,
                                                                               "1 x A100 80G")
    assert (large["model"], large["hardware"], large["tp"], large["gpus"]) == ("llama3.1-70b", "h100-sxm", 4,
                                                                               "4 x H100 80G")
    assert small["offline"] == {"requests": 5000, "requests_per_s": 21.27, "output_tokens_per_s": 4132.37}
    assert large["offline"] == {"requests": 5000, "requests_per_s": 19.04, "output_tokens_per_s": 3700.64}
    assert small["online"] == [(4, 1200, 1691.97, 100.48, 14.14, 129.32), (8, 2400, 2137.16, 120.39, 17.09, 158.63)]
    assert large["online"] == [(4, 1200, 2915.60, 179.15, 23.58, 231.23), (8, 2400, 3752.38, 207.12, 29.15, 275.32)]
    # the output throughput over the request throughput: 194.3 generated tokens a request, both models
    assert round(4132.37 / 21.27, 1) == 194.3 and round(3700.64 / 19.04, 1) == 194.4


def test_sglang_vllm_lengths_extend_the_vllm_sample(script):
    """The 5,000 pairs are the vidur CSV's first 5,000 rows (vLLM's sampler, seed 0): its first 500 are
    sharegpt_vllm_lengths.json's; the stated statistics are reproduced by the loader."""
    pairs = script.sharegpt_lengths(script.SGLANG_VLLM_LENGTHS, at_least=5000)
    assert len(pairs) == 5000 and pairs[:500] == script.sharegpt_lengths()
    prompts, outputs = zip(*pairs)
    assert (round(sum(prompts) / 5000, 2), round(sum(outputs) / 5000, 2)) == (220.82, 200.92)
    assert (max(prompts), max(outputs)) == (1021, 1853)


def test_sglang_vllm_rows_pass_the_readmes_setup(script, monkeypatch):
    """vLLM v0.6.0 as started there: vllm-v0, 256 sequences, 0.90 of memory, bf16, 10 scheduler steps,
    max_model_len 4,096 and so a 4,096-token budget; Poisson arrivals at the row's rate (seed 0), the
    first N pairs in order; offline all at 0."""
    import numpy as np

    import costmodel.serving.api as api

    seen = []

    def run_replicas(requests, replica, step, replicas, max_model_len, record=True, **_):
        seen.append((requests, replica, max_model_len))
        return [{"finish_s": 2.0, "output_tokens": r.output_tokens, "e2e_s": 1.0, "ttft_s": 0.1, "tpot_s": 0.01}
                for r in requests], None, None

    monkeypatch.setattr(api, "run_replicas", run_replicas)
    assert script.sglang_vllm_options(script.SGLANG_VLLM[1]) == {
        "scheduler": "vllm-v0", "tp": 4, "max_num_seqs": 256, "max_batched_tokens": 4096, "dtype": "bf16",
        "gpu_memory_utilization": 0.90, "num_scheduler_steps": 10, "host_time": "vllm-v0.6.0",
        "sampling": "greedy"}  # sglang.bench_serving asks temperature 0
    pairs = [(10 + i, 5 + i % 3) for i in range(30)]
    ours = script.sglang_vllm_online(script.SGLANG_VLLM[0], 4, 20, pairs)
    requests, (cls, blocks, block_size, seqs, tokens), max_model_len = seen[-1]
    assert (seqs, tokens, max_model_len) == (256, 4096, 4096)
    gaps = np.random.default_rng(0).exponential(0.25, size=20)
    assert [r.arrival_s for r in requests] == pytest.approx(list(np.cumsum(gaps)), rel=1e-12)
    assert [(r.prompt_tokens, r.output_tokens) for r in requests] == pairs[:20]
    assert ours == {"e2e_ms": 1000.0, "ttft_ms": 100.0, "tpot_ms": 10.0}
    offline = script.sglang_vllm_offline({**script.SGLANG_VLLM[0], "offline": {"requests": 30}}, pairs)
    assert {r.arrival_s for r in seen[-1][0]} == {0.0}
    assert offline == {"requests_per_s": 15.0, "output_tokens_per_s": sum(o for _, o in pairs) / 2.0}


def _restated(data: dict, column: list[int]) -> dict:
    """A length file's stated statistics recomputed for a changed column (samples, min, max, median, mean)."""
    import numpy as np

    stated = dict(data)
    stated.update(samples=len(column), min=int(min(column)), max=int(max(column)),
                  median=float(np.median(column)), mean=round(float(np.mean(column)), 2))
    return stated


def test_the_mlperf_rows_state_the_loaded_files_mean(mlperf, tmp_path, monkeypatch, capsys):
    """`mlperf OTHER.json`: the label's mean and the fixed row's prompt are that file's, not the default's."""
    import numpy as np

    data = json.loads(mlperf.MLPERF_LENGTHS.read_text())
    data["values"] = [v - 10 for v in data["values"]]  # every prompt 10 tokens shorter: mean 212.33
    counts = np.repeat(data["values"], data["weights"])
    data["stated"] = _restated(data["stated"], counts.tolist())
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    seen = []
    monkeypatch.setattr(mlperf, "mlperf_offline", lambda system, prompt: seen.append(prompt) or 1.0)
    monkeypatch.setattr(mlperf, "mlperf_server", lambda system, prompt: seen.append(prompt) or
                        {"tokens_per_s": 1.0, "p99_ttft_s": 1.0, "p99_tpot_s": 1.0})
    mlperf.print_mlperf(other)
    out = capsys.readouterr().out
    assert "mean 212.33" in out and "222" not in out and "| 212, fixed |" in out
    assert 212 in seen and 222 not in seen
    # the default file's: its mean, 222.33, and the fixed row at 222
    assert mlperf.mlperf_mean_prompt(mlperf.mlperf_input_lengths()) == 222


def test_a_sharegpt_file_short_of_the_posts_requests_stops_before_any_row(script, tmp_path, monkeypatch, capsys):
    """`vllm FILE` with fewer than the 500 requests the post sends: one line naming the file, exit 2,
    no table printed."""
    data = json.loads(script.VLLM_SHAREGPT.read_text())
    data["prompts"], data["outputs"] = data["prompts"][:100], data["outputs"][:100]
    data["stated"]["prompt"] = _restated(data["stated"]["prompt"], data["prompts"])
    data["stated"]["output"] = _restated(data["stated"]["output"], data["outputs"])
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data))
    assert len(script.sharegpt_lengths(short)) == 100  # a valid file, only short
    code, out, err = run_script(SCRIPT, ["vllm", str(short)], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "short.json" in err and "100" in err and "500" in err


def test_a_mlperf_file_short_of_offlines_samples_stops_before_any_row(mlperf, tmp_path, monkeypatch, capsys):
    """`mlperf FILE` with fewer samples than Offline runs: one line naming the file, exit 2, no table."""
    data = {"source": {}, "values": [100, 300], "weights": [3, 1]}
    data["stated"] = dict(_restated({}, [100, 100, 100, 300]), below=1024)
    short = tmp_path / "few.json"
    short.write_text(json.dumps(data))
    assert sum(mlperf.mlperf_input_lengths(short).weights) == 4  # a valid file, only short
    code, out, err = run_script(SCRIPT, ["mlperf", str(short)], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "few.json" in err and "24576" in err


@pytest.mark.parametrize("argv, words", [
    (["bogus"], "'bogus'"),
    (["nim", "extra"], "'extra'"),
    (["vllm", "a.json", "b.json"], "'b.json'"),
    (["mlperf", "a.json", "b.json"], "'b.json'"),
    (["lmdeploy", "a.json"], "'a.json'"),
    (["amd-vllm", "a.json"], "'a.json'"),
    (["trtllm-v017", "a.json"], "'a.json'"),
    (["trtllm-online", "a.json"], "'a.json'"),
    (["mlperf-vllm", "a.json", "b.json"], "'b.json'"),
    (["lambda-vllm", "a.json", "b.json"], "'b.json'"),
    (["qwen-vllm", "a.json"], "'a.json'"),
    (["qwen3-sglang", "a.json"], "'a.json'"),
])
def test_an_unknown_selector_or_extra_argument_is_one_line(argv, words, monkeypatch, capsys):
    code, out, err = run_script(SCRIPT, argv, monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err
    assert all(name in err for name in ("nim", "trtllm-bench", "sglang-vllm", "vllm", "mlperf", "torchao-vllm",
                                               "lmdeploy", "amd-vllm", "trtllm-v017",
                                               "trtllm-online", "mlperf-vllm", "lambda-vllm", "qwen-vllm", "qwen3-sglang"))
