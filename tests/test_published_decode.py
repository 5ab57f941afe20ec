"""The published batch-1 decoding runs (issue 18): every decode row of published_runs.json typed
here from its source, as reports/published_decode.decode_setup expresses it, and the defect the
Mixtral int8 rows showed (routed experts read unquantized) fixed and pinned."""

from __future__ import annotations

import pytest

from reports.published_decode import decode_setup
from reports.published_runs import other_runs_data

# id: (tokens/s as published, the preset it runs, tp, weight dtype, group, fp8 GEMM, hardware,
#      power cap in W, CUDA graphs, dtype, prompt tokens)
A100_330W = ("a100-80gb", 330)
GPT_FAST = {
    # pytorch-labs/gpt-fast README.md at 32971d3: 'Benchmarks', 'Tensor Parallelism' and
    # 'Tensor Parallelism + Quantization' tables (8x A100-80GB at 330 W, batch 1, 5-token prompt)
    "gpt-fast llama2-7b bf16": (104.9, "llama2-7b", 1, None, None),
    "gpt-fast llama2-7b int8": (155.58, "llama2-7b", 1, "int8", None),
    "gpt-fast llama2-7b int4 g32": (196.8, "llama2-7b", 1, "int4", 32),
    "gpt-fast llama2-7b tp2": (168.84, "llama2-7b", 2, None, None),
    "gpt-fast llama2-7b tp4": (254.02, "llama2-7b", 4, None, None),
    "gpt-fast llama2-7b tp8": (328.43, "llama2-7b", 8, None, None),
    "gpt-fast llama2-70b int8": (19.13, "llama2-70b", 1, "int8", None),
    "gpt-fast llama2-70b int4 g32": (25.25, "llama2-70b", 1, "int4", 32),
    "gpt-fast llama2-70b tp2": (21.32, "llama2-70b", 2, None, None),
    "gpt-fast llama2-70b tp4": (38.01, "llama2-70b", 4, None, None),
    "gpt-fast llama2-70b tp8": (62.50, "llama2-70b", 8, None, None),
    "gpt-fast llama2-70b int8 tp8": (80.44, "llama2-70b", 8, "int8", None),
    "gpt-fast llama2-70b int4 g32 tp8": (90.77, "llama2-70b", 8, "int4", 32),
    "gpt-fast llama3.1-8b bf16": (93.89, "llama3-8b", 1, None, None),
    "gpt-fast llama3.1-8b int8": (137.64, "llama3-8b", 1, "int8", None),
    "gpt-fast llama3.1-8b tp2": (149.10, "llama3-8b", 2, None, None),
    "gpt-fast llama3.1-8b tp4": (217.21, "llama3-8b", 4, None, None),
    "gpt-fast llama3.1-8b tp8": (276.01, "llama3-8b", 8, None, None),
    "gpt-fast llama3.1-70b int8": (18.04, "llama3-70b", 1, "int8", None),
    "gpt-fast llama3.1-70b tp2": (16.03, "llama3-70b", 2, None, None),
    "gpt-fast llama3.1-70b tp4": (37.45, "llama3-70b", 4, None, None),
    "gpt-fast llama3.1-70b tp8": (58.78, "llama3-70b", 8, None, None),
    "gpt-fast llama3.1-70b int8 tp8": (75.58, "llama3-70b", 8, "int8", None),
    "gpt-fast llama3.1-405b int8 tp8": (15.60, "llama3.1-405b", 8, "int8", None),
    # gpt-fast mixtral-moe/README.md at 48328fb (unchanged at 32971d3): the same machine
    "gpt-fast-mixtral mixtral-8x7b tp2": (96.67, "mixtral-8x7b", 2, None, None),
    "gpt-fast-mixtral mixtral-8x7b tp4": (155.35, "mixtral-8x7b", 4, None, None),
    "gpt-fast-mixtral mixtral-8x7b tp8": (227.82, "mixtral-8x7b", 8, None, None),
    "gpt-fast-mixtral mixtral-8x7b int8": (97.92, "mixtral-8x7b", 1, "int8", None),
    "gpt-fast-mixtral mixtral-8x7b int8 tp2": (155.03, "mixtral-8x7b", 2, "int8", None),
    "gpt-fast-mixtral mixtral-8x7b int8 tp4": (216.87, "mixtral-8x7b", 4, "int8", None),
    "gpt-fast-mixtral mixtral-8x7b int8 tp8": (279.35, "mixtral-8x7b", 8, "int8", None),
}
STATED = {run_id: (*row, None, *A100_330W, True, "bf16", 5) for run_id, row in GPT_FAST.items()}
STATED.update({
    # pytorch/ao torchao/quantization/README.md at b4d0768 (one A100-80GB, no cap stated) and
    # torchao/_models/llama/benchmark_results.txt there (the eager rows: generate.py without --compile)
    "torchao llama2-7b bf16": (107.38, "llama2-7b", 1, None, None, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama2-7b int8wo": (170.83, "llama2-7b", 1, "int8", None, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama2-7b int4wo-64": (201.14, "llama2-7b", 1, "int4", 64, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama3-8b bf16": (95.64, "llama3-8b", 1, None, None, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama3-8b int8wo": (153.03, "llama3-8b", 1, "int8", None, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama3-8b int4wo-64": (180.80, "llama3-8b", 1, "int4", 64, None, "a100-80gb", None, True, "bf16", 6),
    "torchao llama2-7b bf16 eager": (22.97, "llama2-7b", 1, None, None, None, "a100-80gb", None, False, "bf16", 6),
    "torchao llama2-7b fp32 eager": (26.75, "llama2-7b", 1, None, None, None, "a100-80gb", None, False, "fp32", 6),
    "torchao llama3-8b bf16 eager": (23.67, "llama3-8b", 1, None, None, None, "a100-80gb", None, False, "bf16", 6),
    "torchao llama3-8b fp32 eager": (26.54, "llama3-8b", 1, None, None, None, "a100-80gb", None, False, "fp32", 6),
    # the same README at 92dd5f5: Llama 3.1 8B on one H100, taken as the PyTorch team's own H100s
    # (torchtitan docs/performance.md: 96 GB of HBM2e at 2.4 TB/s, 500 W; test below)
    "torchao-h100 llama3.1-8b bf16": (126.90, "llama3-8b", 1, None, None, None, "h100-sxm", 500, True, "bf16", 6),
    "torchao-h100 llama3.1-8b int8wo": (198.85, "llama3-8b", 1, "int8", None, None, "h100-sxm", 500, True, "bf16", 6),
    "torchao-h100 llama3.1-8b int4wo-64": (241.39, "llama3-8b", 1, "int4", 64, None, "h100-sxm", 500, True,
                                           "bf16", 6),
    "torchao-h100 llama3.1-8b float8wo": (178.46, "llama3-8b", 1, "fp8", None, "w8a16", "h100-sxm", 500, True,
                                          "bf16", 6),
    "torchao-h100 llama3.1-8b float8dq-tensor": (116.40, "llama3-8b", 1, "fp8", None, "w8a8", "h100-sxm", 500, True,
                                                 "bf16", 6),
    # gpt-fast README.md, 'AMD' (9ac48bc to 32971d3): one GCD of an MI-250x, no cap stated
    "gpt-fast-amd llama2-7b bf16": (76.33, "llama2-7b", 1, None, None, None, "mi250x", None, True, "bf16", 5),
    "gpt-fast-amd llama2-7b int8": (101.86, "llama2-7b", 1, "int8", None, None, "mi250x", None, True, "bf16", 5),
})
# ROCm/rocm-blogs int8-quantization/README.md at 59e4bc9: gpt-fast on one MI210, no cap stated, eager
# (no --compile), compile, compile + int8 (tests/test_published_runs_rocm_int8.py: the table and its bytes)
for _model, _rates in {"llama2-7b": (33.29, 88.54, 112.45), "llama3-8b": (32.52, 76.88, 110.35),
                       "mistral-7b": (32.68, 81.44, 117.05), "llama2-13b": (21.36, 44.79, 59.62)}.items():
    STATED[f"rocm-int8 {_model} bf16 eager"] = (_rates[0], _model, 1, None, None, None, "mi210", None, False, "bf16", 6)
    STATED[f"rocm-int8 {_model} bf16"] = (_rates[1], _model, 1, None, None, None, "mi210", None, True, "bf16", 6)
    STATED[f"rocm-int8 {_model} int8"] = (_rates[2], _model, 1, "int8", None, None, "mi210", None, True, "bf16", 6)


#: Sources whose quantize step replaces every nn.Linear, the output head included (their quantize_head_source).
HEAD_QUANTIZED = ("gpt-fast", "gpt-fast-mixtral", "gpt-fast-amd", "torchao", "torchao-h100", "rocm-int8")
#: How each source's code stores int8 and int4 (their quant_layout_source; tests/test_quant_layout.py).
STORED_AS = {"gpt-fast": "gpt-fast", "gpt-fast-mixtral": "gpt-fast", "gpt-fast-amd": "gpt-fast",
             "torchao": "torchao", "torchao-h100": "torchao", "rocm-int8": "gpt-fast"}


def test_every_decode_run_is_typed_here_from_its_source():
    """AMD's own vLLM rows (batch 1-128, 2,048 tokens generated) are typed in
    tests/test_published_runs_amd.py, torchao's long-cache rows and Qwen's speed benchmarks in
    tests/test_published_runs_pubdec.py, TensorRT-LLM v0.6.1's static batches in
    tests/test_session30_unseen_rows.py, LMDeploy TurboMind v0.1.0's and the IBM blog's in tests/test_session31_unseen_rows.py,
    session 32's DeepSpeed, FasterTransformer, EvalScope, torchchat and 'GPT, Fast' blog rows in
    tests/test_session32_unseen_decode.py, session 33's llm-perf-bench, LMDeploy w4a16, premAI, llama.cpp, ExLlamaV2 and
    TensorRT-LLM v0.9.0 rows in tests/test_session33_unseen_decode.py, session 34's NeMo, TensorRT-LLM v0.8.0, AutoAWQ,
    TinyChat and llama.cpp rows in tests/test_session34_unseen_decode.py, session 35's optimum GPTQ, ExLlama v1,
    llama.cpp, Model Optimizer, AutoAWQ docs and TensorRT-LLM blog rows in tests/test_session35_unseen_decode.py, its
    second batch (llm-perf-bench PR #1, NIM, vLLM's perf benchmark, AutoGPTQ, the MLC blog) in
    tests/test_session35_unseen_decode2.py, session 36's (TensorRT-LLM v0.5.0, the GemLite blog, SGLang's EAGLE-3 page,
    the SageMaker TGI benchmark, bitsandbytes' benchmark) in tests/test_session36_unseen_decode.py, its second batch
    (premAI's v2 tables, rkooo567/llm_benchmark, AutoAWQ's RTX 3090 README, Lit-GPT's quantize tutorial) in
    tests/test_session36_unseen_decode2.py, session 37's (llama.cpp on eight GPUs, Hamel Husain's A6000 table,
    Oracle's MI300X table, Model Optimizer v0.15's H100 table) in tests/test_session37_unseen_decode.py, its second
    batch (ROCm/vllm's MI300X table at vLLM 0.7.3, Qwen2's vLLM 0.4.2 table) in tests/test_session37_unseen_decode2.py,
    session 38's (calm's RTX 4090 table, ROCm's torch.compile blog, PyTorch CI's gpt-fast target) in
    tests/test_session38_unseen_decode.py, session 38's quantized rows (oobabooga's RTX 3090 comparison, vLLM PR
    #26051, AutoAWQ PRs #320 and #365) in tests/test_session38_unseen_decode_quant.py, session 39's (Neural Magic's
    DeepSeek-R1-distill model cards, vLLM 0.7.2) in tests/test_session39_unseen_decode_quant.py, session 39's (vLLM PRs
    #53060 and #23197) in tests/test_session39_unseen_decode.py, session 40's (ROCm/vllm's MI300X table at vLLM 0.6.6,
    0.8.5 and 0.9.1) in tests/test_session40_unseen_decode.py, session 40's second (llama.cpp PR #12183, the Qwen pages'
    SGLang and vLLM tables) in tests/test_session40_unseen_decode2.py, session 41's (TensorRT-LLM v0.8.0's and
    v0.9.0's first-token tables, llama.cpp's December 2023 LLaMA 2 table, ExLlama's README of May 2023) in
    tests/test_session41_unseen_decode.py, session 42's second (llama.cpp PR #16834, vLLM issue #1805 and PRs #2542,
    #3240, #4002) in tests/test_session42_unseen_decode2.py, session 43's (ExLlamaV2's README at 61e3092,
    optimum-benchmark's running-llamas, -vicunas and -mistrals reports) in tests/test_session43_unseen_decode.py, session 44's
    (AutoAWQ's benchmark.py in issues #276 and #645 and PR #656) in tests/test_session44_unseen_decode.py, session 45's
    (SGLang and vLLM on B200s, AccelMark's interactive TPOTs, InferenceBench's H100 loops) in
    tests/test_session45_unseen_decode.py; every other decode row here."""
    data = other_runs_data()
    elsewhere = ("amd-vllm ", "torchao-kv-long ", "qwen2.5-speed-hf ", "qwen3-speed-hf ", "trtllm-v0.6.1 ",
                 "lmdeploy-v0.1.0 ", "ibm-compile-llama2 ", "hf-bloom-ds-inference ", "fastertransformer-gpt ",
                 "evalscope-qwq-hf ", "evalscope-qwq-vllm ", "torchchat-blog ", "gpt-fast-blog ",
                 "llm-perf-bench-4bit ", "llm-perf-bench-fp16 ", "llm-perf-bench-vllm ", "lmdeploy-w4a16 ", "premai-a100 ",
                 "premai-a100-vllm ", "llamacpp-pr4766 ", "exllamav2-readme ", "trtllm-v0.9.0 ",
                 "nemo-llama2-inference ", "trtllm-v0.8.0 ", "autoawq-v0.1.6 ", "tinychat-b76fab6 ", "llamacpp-pr6017 ",
                 "llamacpp-issue2641 ", "optimum-gptq-bench ", "exllama-v1 ", "llamacpp-pr6766 ", "llamacpp-issue6763 ",
                 "modelopt-v0.11 ", "modelopt-v0.21 ", "autoawq-docs ", "trtllm-blog-h200launch ",
                 "trtllm-blog-falcon180b-h200 ", "llm-perf-bench-pr1 ", "nim-bench-llm-1.0.0 ", "vllm-perf-bench-9515 ",
                 "autogptq-readme ", "mlc-blog-multigpu-2023 ", "trtllm-v0.5.0 ", "pytorch-blog-gemlite ",
                 "sglang-docs-eagle3 ", "hf-blog-llama2-sagemaker ", "bnb-benchmarking-0.45 ", "premai-v2 ",
                 "rkooo567-llm-benchmark ", "autoawq-d6ac3be ", "litgpt-quantize ", "xiongjiedai-llamacpp ",
                 "hamel-latency-2023 ", "hamel-latency-2023-hf ", "oracle-mi300x-405b ", "modelopt-v0.15 ",
                 "amd-vllm-0.7.3 ", "qwen2-speed-vllm ", "calm-readme ", "rocm-torch-compile ", "pytorch-gpt-fast-ci ",
                 "oobabooga-quant-2023 ", "vllm-pr26051-rtn ", "autoawq-pr320 ", "autoawq-pr365 ",
                 "redhat-r1-llama-70b ", "redhat-r1-qwen-32b ", "redhat-r1-llama-8b ", "redhat-r1-qwen-7b ",
                 "vllm-pr53060-h100pcie ", "vllm-pr53060-a100pcie ", "vllm-pr23197-bf16 ", "amd-vllm-0.6.6 ",
                 "amd-vllm-0.8.5 ", "amd-vllm-0.9.1 ",
                 "llamacpp-pr12183 ", "qwen3-speed-sglang ", "qwen2.5-speed-vllm ", "trtllm-v0.8.0-ttft ",
                 "trtllm-v0.9.0-ttft ", "xiongjiedai-llamacpp-2023 ", "exllama-2562100 ", "trtllm-v0.5.0-ttft ",
                 "llm-perf-bench-4bit-multi ", "llamacpp-pr16834 ", "vllm-issue1805 ", "vllm-pr2542 ", "vllm-pr3240 ",
                 "vllm-pr4002 ", "exllamav2-readme-61e3092 ", "optimum-benchmark-llamas ",
                 "optimum-benchmark-vicunas ", "optimum-benchmark-mistrals ", "autoawq-issue276 ",
                 "autoawq-issue276-fp16 ", "autoawq-issue645 ", "autoawq-pr656 ", "sglang-b200-gist ",
                 "vultr-b200-vllm ", "accelmark-a ", "accelmark-f ", "accelmark-d ", "accelmark-b ", "accelmark-g ",
                 "accelmark-vllm020 ", "inferencebench-qwen72b-h100 ", "inferencebench-llama8b-h100 ",
                 "amd-vllm-0.9.0.1 ", "amd-vllm-0.8.5-0513 ", "amd-vllm-0.7.3-0410 ", "inferencex-gptoss-h100 ",
                 "inferencex-dsr1-h200 ")
    decode = {r["id"] for r in data["runs"] if r["kind"] == "decode" and not r["id"].startswith(elsewhere)}
    assert decode == set(STATED)


@pytest.mark.parametrize("run_id", sorted(STATED))
def test_each_decode_run_is_expressed_as_its_source_states_it(run_id):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    source = data["sources"][run_id.split()[0]]
    published, preset, tp, weight_dtype, group, fp8_gemm, hardware, watts, graphs, dtype, prompt = STATED[run_id]
    assert run["published_tokens_per_s"] == pytest.approx(published, abs=0.005)
    cfg, hw, settings, quantization = decode_setup(run, source)
    assert run.get("preset", run["model"]) == preset and run["tp"] == tp
    head = weight_dtype is not None and run_id.split()[0] in HEAD_QUANTIZED  # (tests/test_quantize_head.py)
    stored = STORED_AS.get(run_id.split()[0]) if weight_dtype in ("int8", "int4") else None
    assert quantization == {k: v for k, v in (("weight_dtype", weight_dtype), ("weight_group", group),
                                              ("fp8_gemm", fp8_gemm), ("quantize_head", head or None),
                                              ("quant_layout", stored))
                            if v is not None}
    assert hw.name == hardware and hw.power_limit_watts == (watts or hw.power_limit_watts)
    if watts is None:  # no cap stated: the preset's own board power
        assert "power_limit_watts" not in source
    assert (settings["cuda_graphs"], settings["dtype"], settings["prompt"]) == (graphs, dtype, prompt)
    assert (settings["gen"], settings["batch"], settings["kv_cache"]) == (200, 1, "static")
    # the code each source ran: gpt-fast's Transformer (torchao's copy too), or its Mixtral
    assert settings["implementation"] == ("gpt-fast-mixtral" if run_id.startswith("gpt-fast-mixtral") else "gpt-fast")
    if run_id.startswith("gpt-fast-mixtral") and tp == 1:  # the code is a simulate choice: the run is timed
        from reports.published_decode import decode_run

        assert decode_run(run, source, "kernels") > 0


def test_the_torchao_h100_rows_run_on_the_h100s_torchtitan_states():
    """torchao's H100 table names no variant; the rows run on the H100 the PyTorch team states for
    its benchmarks (torchtitan docs/performance.md): 96 GB of HBM2e at 2.4 TB/s under a 500 W cap,
    and no one-row rate carried over from the 80 GB HBM3 part's measurement."""
    data = other_runs_data()
    source = data["sources"]["torchao-h100"]
    run = next(r for r in data["runs"] if r["id"] == "torchao-h100 llama3.1-8b bf16")
    _, hw, _, _ = decode_setup(run, source)
    assert (hw.bandwidth_bytes_per_s, hw.memory_bytes, hw.power_limit_watts) == (2.4e12, 96 * 2**30, 500)
    assert hw.gemv_bandwidth_bytes_per_s == 0.0


def test_the_llama_3_1_rows_run_presets_of_their_sizes():
    """Llama 3.1 8B and 70B as the llama3-8b and llama3-70b presets: the sizes Meta's configs give
    (hidden 4,096 / 8,192, 32 / 80 layers, 8 KV heads, FFN 14,336 / 28,672, vocabulary 128,256)."""
    from costmodel.presets import load_preset

    for name, (d, layers, d_ff) in {"llama3-8b": (4096, 32, 14336), "llama3-70b": (8192, 80, 28672)}.items():
        cfg = load_preset(name)
        assert (cfg.d_model, cfg.n_decoder_layers, cfg.d_ff, cfg.n_kv_heads, cfg.vocab_size) == \
            (d, layers, d_ff, 8, 128256)


def _mixtral_experts(quantization: dict):
    from costmodel.hardware import load_hardware
    from costmodel.kernel_time import KernelTimer, inference_subs
    from costmodel.presets import load_preset
    from costmodel.roofline import Roofline

    cfg, hardware = load_preset("mixtral-8x7b"), load_hardware("a100-80gb")
    roof = Roofline(cfg, hardware, "bf16", None, "sdpa", "static", True, quantization)
    leaf = next(x for x in roof.decoder_tree().leaves if x.path == "decoder.layer.ffn.experts")
    return leaf, inference_subs(cfg, "bf16", 1, 1, context=105), KernelTimer(hardware, "bf16", "sdpa", cuda_graphs=True)


def test_a_decode_step_reads_its_two_experts_int8_weights_as_stored():
    """Mixtral 8x7B, one token, int8 weight-only in the model's int8 format (an fp32 scale per output
    row; gpt-fast's quantize.py keeps bf16 ones: 131,072 bytes fewer of these 352,788,480): the step reads the 2
    experts its token is routed to, each 3 x 4,096 x 14,336 int8 values and 2 x 14,336 + 4,096 row
    scales, and moves its activations in bf16 (2 slots x (2 x 4,096 + 3 x 14,336) x 2 bytes). Before
    the fix the routed experts kept bf16 weight bytes (704,643,072 + the same activations)."""
    leaf, subs, _ = _mixtral_experts({"weight_dtype": "int8"})
    d, d_x = 4096, 14336
    expected = 2 * 3 * d * d_x + 2 * 4 * (2 * d_x + d) + 2 * (2 * d + 3 * d_x) * 2
    assert float(leaf.matmul_bytes_as_stored().xreplace(subs)) == expected == 352_788_480
    bf16, subs, _ = _mixtral_experts({})
    assert float(bf16.matmul_bytes_as_stored().xreplace(subs)) == 2 * 2 * 3 * d * d_x + 2 * (2 * d + 3 * d_x) * 2


def test_a_decode_step_runs_each_chosen_experts_matrices_as_a_weight_only_gemv():
    """The kernel model: the 2 chosen experts' gate_up (4,096 -> 2 x 14,336) and down (14,336 ->
    4,096) products, one token each, each matrix kind one grouped launch over both experts
    (expert_kernels.grouped_gemms), each expert reading its int8 matrix and row scales (the dense
    layers' weight-only GEMV), then the memory-bound SiLU and product."""
    from costmodel.kernel_time import Gemm, Pointwise, leaf_kernels

    leaf, subs, timer = _mixtral_experts({"weight_dtype": "int8"})
    kernels = leaf_kernels(leaf, subs, timer.fused_attention)
    gemms = [k for k in kernels if isinstance(k, Gemm)]
    assert [(g.m, g.n, g.k, g.count) for g in gemms] == [(1, 28672, 4096, 2), (1, 4096, 14336, 2)]
    assert [g.weight_bytes for g in gemms] == [28672 * 4096 + 4 * 28672, 4096 * 14336 + 4 * 4096]
    assert all(g.weight_dtype == "int8" for g in gemms)
    assert [type(k) for k in kernels[len(gemms):]] == [Pointwise]


def test_a_step_with_more_slots_than_experts_reads_every_expert():
    """With many more slots than experts (a decode step of 64 sequences: 128 slots over 8 experts)
    every expert is read but for a share (3/4)^64 = 1.0e-8 (blocks/experts.py experts_touched: each
    token's top-2 of 8 misses an expert with probability 3/4): the quantized traffic is all 8
    experts' int8 matrices times 1 - (3/4)^64 (the worst case, min(8, 128), read them all)."""
    import sympy as sp

    from costmodel import symbols as S

    leaf, subs, _ = _mixtral_experts({"weight_dtype": "int8"})
    batch = {**subs, S.b: 64}
    share = 1 - sp.Rational(3, 4) ** 64
    assert leaf.cost.matrix_read_share.xreplace(batch) == share and 0 < 1 - float(share) < 1.01e-8
    d, d_x = 4096, 14336
    weights = 8 * share * (3 * d * d_x + 4 * (2 * d_x + d))
    activations = 128 * (2 * d + 3 * d_x) * 2
    assert leaf.matmul_bytes_as_stored().xreplace(batch) == weights + activations
