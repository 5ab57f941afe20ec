"""TensorRT-LLM's performance overview of release 0.17 (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md
at commit 258c7540c03517def55d9a5aadfa9288af474e1b: "All data in the table below was generated using version 0.17
and presents token throughput in tokens/second"): trtllm-bench on TensorRT engines (the C++ runtime, before the
PyTorch backend of the v1.0 page that published_trtllm_bench.py's TRTLLM_BENCH rows come from), every request at once
("a local inference client is fed requests at an infinite rate"), the page's $num_requests per shape.

Kept (chosen before any was computed, for the hardware and models few published serving figures here cover): the
A100-SXM4-80GB FP16 column of Llama 3.1 8B at TP 1 and of Mixtral 8x7B at TP 2, and Mixtral 8x7B at TP 2 on the
H100 80GB HBM3 in FP8; the 5000/500 and 20000/2000 shapes of each are left out (their prompts are longer than the
engine's token budget, which the trtllm scheduler does not chunk), so 7 shapes each, 21 figures. Then, after those
were computed and before these were: Llama 3.1 70B at TP 4 and Mixtral 8x22B at TP 8 on the A100 in FP16, Mixtral
8x22B at TP 8 on the H100 in FP8 (21 more).

The page's commands: `prepare_dataset.py ... token-norm-dist --input-stdev=0 --output-stdev=0` (every request at
the shape's lengths), `trtllm-bench --model M build --tp_size TP --quantization FP8 --dataset D` (FP16: without
--quantization; the build's max_batch_size and max_num_tokens from the dataset by its tuning heuristic), then
`trtllm-bench --model M throughput --dataset D --engine_dir E`, "In majority of cases ... --kv_cache_free_gpu_mem_
fraction 0.95". The figure: the page's "token throughput in tokens/second", the example output's "Token Throughput
(tokens/sec)", which at its 3,000 requests of 128 + 128 is 23,405.9 = 3,000 x 128 / 16.406 s: output tokens over
the run.

    python benchmarks/serve_published.py trtllm-v017
"""

from __future__ import annotations

TRTLLM_V017_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (commit 258c7540, release 0.17), "
                      "'Throughput Measurements': trtllm-bench on TensorRT engines, token throughput (tokens/s)")
# The page's $num_requests of the kept shapes (its v0.17 table of them).
TRTLLM_V017_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (500, 2000): 3000,
                        (1000, 1000): 3000, (2048, 128): 3000, (2048, 2048): 1500}
# One table per (model, GPU column): its preset, hardware, tp, the bytes of a weight and of a KV value (FP16 2, FP8
# 1: trtllm-bench's BYTES_PER_ELEM by quantization), and the rows (input, output, published tokens/s).
TRTLLM_V017 = [
    {"model": "llama3.1-8b", "published_model": "LLaMA v3.1 8B", "hardware": "a100-80gb",
     "gpu": "A100-SXM4-80GB TP1 (FP16)", "tp": 1, "bytes": 2,
     "rows": [(128, 128, 6627.27), (128, 2048, 5255.99), (128, 4096, 3453.79), (500, 2000, 4276.58),
              (1000, 1000, 3786.83), (2048, 128, 799.61), (2048, 2048, 2424.16)]},
    {"model": "mixtral-8x7b", "published_model": "Mixtral 8x7B", "hardware": "a100-80gb",
     "gpu": "A100-SXM4-80GB TP2 (FP16)", "tp": 2, "bytes": 2,
     "rows": [(128, 128, 5541.47), (128, 2048, 4169.78), (128, 4096, 2608.05), (500, 2000, 3446.37),
              (1000, 1000, 3154.52), (2048, 128, 649), (2048, 2048, 2056.58)]},
    {"model": "mixtral-8x7b", "published_model": "Mixtral 8x7B", "hardware": "h100-sxm",
     "gpu": "H100 80GB HBM3 TP2 (FP8)", "tp": 2, "bytes": 1,
     "rows": [(128, 128, 27451.13), (128, 2048, 22830.08), (128, 4096, 14237.01), (500, 2000, 17036.04),
              (1000, 1000, 15770.89), (2048, 128, 3333.68), (2048, 2048, 10685.85)]},
    # Added after the three tables above were computed, before any of these was (TRTLLM_V017_ASSUMED holds for
    # them too): the A100 FP16 column of Llama 3.1 70B at TP 4 and of Mixtral 8x22B at TP 8, and Mixtral 8x22B at
    # TP 8 on the H100 in FP8, the same seven shapes.
    {"model": "llama3.1-70b", "published_model": "LLaMA v3.1 70B", "hardware": "a100-80gb",
     "gpu": "A100-SXM4-80GB TP4 (FP16)", "tp": 4, "bytes": 2,
     "rows": [(128, 128, 2733.48), (128, 2048, 2811.27), (128, 4096, 1976.49), (500, 2000, 2275.79),
              (1000, 1000, 1921.77), (2048, 128, 325.15), (2048, 2048, 1393.64)]},
    {"model": "mixtral-8x22b", "published_model": "Mixtral 8x22B", "hardware": "a100-80gb",
     "gpu": "A100-SXM4-80GB TP8 (FP16)", "tp": 8, "bytes": 2,
     "rows": [(128, 128, 6381.95), (128, 2048, 6685.99), (128, 4096, 4789.13), (500, 2000, 5648.46),
              (1000, 1000, 4549.46), (2048, 128, 761.56), (2048, 2048, 3521.98)]},
    {"model": "mixtral-8x22b", "published_model": "Mixtral 8x22B", "hardware": "h100-sxm",
     "gpu": "H100 80GB HBM3 TP8 (FP8)", "tp": 8, "bytes": 1,
     "rows": [(128, 128, 21876.08), (128, 2048, 25150.03), (128, 4096, 18387.4), (500, 2000, 21421.86),
              (1000, 1000, 16573.24), (2048, 128, 2794.97), (2048, 2048, 12244.93)]},
]
TRTLLM_V017_ASSUMED = (
    "decided before any row was computed: the A100-SXM4-80GB as the a100-80gb preset and the H100 80GB HBM3 as "
    "h100-sxm; LLaMA v3.1 8B, 70B, Mixtral 8x7B and 8x22B as the llama3.1-8b, llama3.1-70b, mixtral-8x7b and "
    "mixtral-8x22b presets (Mixtral v0.1's architectures; the page names no checkpoint); the engine's "
    "max_batch_size and max_num_tokens from trtllm-bench's tuning heuristic as "
    "published_trtllm_bench.trtllm_bench_settings reimplements it (tensorrt_llm/bench/build/tuning.py, "
    "read at a later commit, 04cba88, whose BYTES_PER_ELEM gives FP16 2 bytes and FP8 1: v0.17's own file is not "
    "stored here), the GPU's whole memory and our tree's parameter count, 0.95 of memory; the run as serve's trtllm "
    "scheduler (GUARANTEED_NO_EVICT, generation first, whole prompts; max_num_tokens raised to the prompt plus the "
    "batch where it is shorter, as session 25's rows) with its CUDA graphs as graphs.py has the trtllm engine's (a "
    "TensorRT engine launches its fused kernels from C++; neither its own launch cost nor v0.17's chunked-context "
    "default is modelled apart); FP16: fp16 weights, activations and KV cache; FP8: FP8 weights in W8A8 GEMMs at "
    "the FP8 peak and an FP8 KV cache (the page: 'If you specify FP8 quantization, the KV cache will automatically "
    "be set to FP8 as well'), the attention core in fp16; Mixtral's experts at TP 2 split as the model splits a "
    "tensor-parallel MoE layer (TensorRT-LLM's default moe_tp_size = tp, no expert parallelism), every routed "
    "token's two experts with a balanced load; the all-reduces as NCCL's curves of each preset; TensorRT-LLM's "
    "fused kernels (its MoE GEMMs among them) at the kernel time model's rates; host time not modelled; the figure "
    "as output tokens over the span from 0 (every request at once) to the last token")
