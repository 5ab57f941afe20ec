"""serve --max-capture-len: vLLM v0's max_seq_len_to_capture (EngineArgs default 8,192; Krai's MLPerf commands set
1,024), the longest sequence a decode step may hold and still replay its CUDA graph (graphs.py CudaGraphs.plan,
ModelInputForGPUBuilder._use_captured_graph): a decode step past it runs eagerly, to the float of --cuda-graphs
off; one at it replays the graph as under the default. A bad value is one error line."""

from __future__ import annotations

import pytest
import cli
from costmodel.api import load_model
from costmodel.hardware import load_hardware
from costmodel.serving.replica import build_replica


@pytest.fixture(scope="module")
def steps():
    cfg, h200 = load_model("llama2-7b"), load_hardware("h200")
    built = {name: build_replica(cfg, h200, scheduler="vllm-v0", **options) for name, options in (
        ("capped", {"max_capture_len": 1024}), ("default", {}), ("eager", {"cuda_graphs": "off"}))}
    return {name: (step, setup) for name, (_, step, setup) in built.items()}


def test_the_setup_names_the_limit(steps):
    assert steps["capped"][1]["max_capture_len"] == 1024 and steps["default"][1]["max_capture_len"] == 8192
    assert "max_seq_len_to_capture 1024;" in steps["capped"][1]["cuda_graphs_source"]
    assert "max_capture_len" not in steps["eager"][1]


def test_a_decode_step_past_the_limit_runs_eagerly(steps):
    """Eight sequences decoding, the longest at 1,024 keys: graphed under both limits; at 1,025: eager under
    1,024 (the float of --cuda-graphs off), still graphed under 8,192."""
    capped, default, eager = (steps[name][0] for name in ("capped", "default", "eager"))
    query, keys = [1] * 8, [1024] + [300] * 7
    assert capped.seconds(query, keys) == default.seconds(query, keys) < eager.seconds(query, keys)
    keys = [1025] + [300] * 7
    assert capped.seconds(query, keys) == eager.seconds(query, keys) > default.seconds(query, keys)


@pytest.mark.parametrize("args, message", [
    # session 40: a length option reads 128k as 131,072 (costmodel/sizes.py), and its own type refuses 0 and x
    # before the serving check (which still guards the Python API's max_capture_len=0)
    (["--max-capture-len", "0"], "error: Invalid value for '--max-capture-len': '0' is not a length of at least 1: "
     "a whole number of tokens (131072) or one with k or M (128k = 131,072, 1M = 1,048,576: k = 1,024)."),
    (["--max-capture-len", "x"], "error: Invalid value for '--max-capture-len': 'x' is not a length: a whole number "
     "of tokens (131072) or one with k or M (128k = 131,072, 1M = 1,048,576: k = 1,024)."),
    (["--max-capture-len", "1024", "--scheduler", "vllm"], "error: --max-capture-len is vLLM v0's "
     "max_seq_len_to_capture, read by its decode graphs (--scheduler vllm-v0); the vllm scheduler's engine has no "
     "such limit."),
    (["--max-capture-len", "1024", "--cuda-graphs", "off"], "error: --max-capture-len sets which decode steps "
     "replay a CUDA graph; --cuda-graphs off runs none: drop one of them."),
])
def test_a_bad_value_is_one_line(capsys, args, message):
    code = cli.main(["serve", "--model", "llama2-7b", "--hardware", "h200", "--rate", "1", "--requests", "4",
                     *args, *([] if "--scheduler" in args else ["--scheduler", "vllm-v0"])])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err.strip()) == (2, "", message)
