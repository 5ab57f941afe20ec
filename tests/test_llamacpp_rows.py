"""Every llama.cpp decoding row of costmodel/published_runs.json runs without CUDA graphs (wt34_llamacpp, session 34).

llama.cpp captured a token's kernels in one CUDA graph only from ggml-org/llama.cpp pull request #6766 (opened
2024-04-19, issue #6763), after every build these rows ran: llm-perf-bench's 9476b01 (10/2023), #4766's builds
(01/2024), #6017's (03/2024) and issue #2641's build 992 (08/2023). The rows were typed with cuda_graphs true
("launches hidden"); they now run eager: the host keeps ahead (#6766's author: "llama.cpp already does a good job
of pre-launching all kernels ... CPU-side launch overheads are not the issue", the graphs cut the GPU-side gaps),
so the tensorrt-llm code (ops not counted, no host term) pays the hardware file's overhead_s_per_block a leaf
instead of graph_kernel_s a kernel. Each row's ratio (ours / published) as first computed (graphs) and now."""

from __future__ import annotations

from costmodel.roofline import simulate_inference
from tests.unseen_rows import decode_setup_of, ratios, runs_of, source_of

SOURCES = ("llm-perf-bench-4bit", "llamacpp-pr4766", "llamacpp-pr6017", "llamacpp-issue2641")

# id -> (as first computed with cuda_graphs true, now): the kernel model's tokens/s over the published
BEFORE_AFTER = {"llm-perf-bench-4bit llama.cpp llama2-7b q4_0 rtx4090": (1.124, 1.021),
                "llm-perf-bench-4bit llama.cpp llama2-13b q4_0 rtx4090": (1.032, 0.968),
                "llamacpp-pr4766 codellama-7b f16 tg128 rtx4090": (0.975, 0.942),
                "llamacpp-pr4766 codellama-7b q8_0 tg128 rtx4090": (0.987, 0.933),
                "llamacpp-pr4766 llama-7b f16 tg128 rtx3090": (1.137, 1.090),
                "llamacpp-pr4766 llama-7b q4_0 tg128 rtx3090": (1.319, 1.174),
                "llamacpp-pr6017 llama-7b f16 tg128 a100-pcie": (1.413, 1.128),
                "llamacpp-issue2641 llama-7b q4_1 main n128 a100": (2.801, 1.857)}


def _llamacpp_runs() -> list[dict]:
    return [r for s in SOURCES for r in runs_of(s) if s.startswith("llamacpp") or " llama.cpp " in r["id"]]


def test_the_eight_llamacpp_rows_are_every_row_that_ran_llama_cpp():
    assert sorted(r["id"] for r in _llamacpp_runs()) == sorted(BEFORE_AFTER)


def test_every_llamacpp_row_runs_eager_under_the_tensorrt_llm_code():
    for run in _llamacpp_runs():
        _, _, settings, _ = decode_setup_of(run)
        assert settings["cuda_graphs"] is False, run["id"]
        assert settings["implementation"] == "tensorrt-llm", run["id"]
    # the same source's other engines keep theirs: MLC LLM built --use-cuda-graph, ExLlamaV2 eager
    others = {r["id"].split()[1]: decode_setup_of(r)[2]["cuda_graphs"] for r in runs_of("llm-perf-bench-4bit")}
    assert others == {"mlc-llm": True, "exllamav2": False, "llama.cpp": False}


def test_each_source_cites_the_pull_request_that_brought_cuda_graphs():
    for name in SOURCES:
        assumed = source_of(name)["assumed"]
        assert "#6766" in assumed and "2024-04-19" in assumed and "CORRECTED (wt34_llamacpp" in assumed, name


def test_the_ratios_before_and_after():
    every = ratios(SOURCES)
    assert {k: round(every[k], 3) for k in BEFORE_AFTER} == {k: v[1] for k, v in BEFORE_AFTER.items()}


def test_with_graphs_the_rows_read_their_first_computed_ratios():
    """The only change is the flag: set back to true, each row gives its first-computed ratio."""
    for run in _llamacpp_runs():
        cfg, hardware, s, quantization = decode_setup_of(run)
        result = simulate_inference(cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=s["batch"],
                                    dtype=s["dtype"], attention=s["attention"], kv_cache=s["kv_cache"],
                                    cuda_graphs=True, quantization=quantization, time_model="kernels",
                                    implementation=s["implementation"], decode_kernel=s["decode_kernel"])
        ratio = result["decode"]["decode_tokens_per_second"] / run["published_tokens_per_s"]
        assert round(ratio, 3) == BEFORE_AFTER[run["id"]][0], run["id"]
