"""validate/decode_same_source.py (wt46_decodeout): Qwen3's speed page ran transformers 4.51.3 and SGLang 0.4.6.post1
on the same H20 96GB; at one input token the transformers step bounds the H20's weight stream from below, and
SGLang's BF16 Qwen3-32B step is longer than it (QwenLM/Qwen3 c7f51a1 speed_benchmark.md: 26.24 and 20.72 tokens/s;
wt40_unseend2 first noted it in validate/FINDINGS.md, at 1.72 TB/s on the press weights; this pins it on the tree's)."""

import pytest

from reports.published_runs import other_runs_data
from validate.decode_same_source import published_step_s, qwen3_engines


def test_the_pages_metric_inverted():
    # Speed = (tokens_prompt + tokens_generation) / time: Qwen3-32B BF16 at one input token, 2,048 generated
    data = other_runs_data()
    runs = {run["id"]: run for run in data["runs"]}
    sglang = runs["qwen3-speed-sglang qwen3-32b bf16 input 1"]
    step = published_step_s(sglang, data["sources"]["qwen3-speed-sglang"])
    assert step == pytest.approx(2049 / 20.72 / 2048, rel=1e-12)
    hf = runs["qwen3-speed-hf qwen3-32b input 1"]
    assert published_step_s(hf, data["sources"]["qwen3-speed-hf"]) == pytest.approx(2049 / 26.24 / 2048, rel=1e-12)


def test_sglangs_32b_step_is_longer_than_transformers_on_the_same_gpu():
    big, = qwen3_engines(other_runs_data(), ("32b",))
    # the decode tree's GEMM weights, 2 B each: QKV 3,355,443,200 + out 2,684,354,560 + MLP 25,165,824,000
    # + head 777,912,320
    assert big["weights_gb"] * 1e9 == pytest.approx(63_967_068_160, rel=1e-12)
    assert big["hf_ms"] == pytest.approx(38.1284, abs=1e-4)
    assert big["sglang_ms"] == pytest.approx(48.2861, abs=1e-4)
    assert big["hf_tb_s"] == pytest.approx(1.6777, abs=1e-4)  # a floor on the H20's stream under cuBLAS
    assert big["sglang_tb_s"] == pytest.approx(1.3248, abs=1e-4)
    assert big["file_tb_s"] == pytest.approx(3.7123, abs=1e-9)  # h20.json's measured copy/triad
