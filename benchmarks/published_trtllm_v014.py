"""TensorRT-LLM's performance overview of release 0.14 (docs/source/performance/perf-overview.md as the fork
arthurrasmusson/TensorRT-LLM stores it at commit e00d4e6564921307dd264b61fe1d46f116095e0e: "All data in the table below
was generated using version 0.14.0 and presents token throughput in tokens/second"): trtllm-bench on TensorRT engines
(`trtllm-bench build --tp_size $tp_size [--quantization FP8] --dataset $dataset_file`, then `trtllm-bench throughput`),
"a local inference client is fed requests at an infinite rate (no delay between messages)", every request at the
shape's lengths (`--input-stdev=0 --output-stdev=0`), the page's $num_requests per shape. Not used before session 43
(wt43_unseens): the page's online table of the same release is trtllm-online's, and trtllm-v017 types release 0.17's
throughput page.

Kept (chosen before any was computed, for the GPUs the typed serving tables cover least under continuous batching):
the A100-PCIE-80GB FP16 column and the L40S FP8 column, of LLaMA v3.1 8B at TP 1 and LLaMA v3.1 70B at TP 4, the
seven shapes trtllm-v017 keeps (its 5000/500 and 20000/2000 left out for the same reason), 28 figures. Left out: the
H200, H100 and A100-SXM columns (typed tables of 0.17, 0.20 and v1.0 hold those GPUs under the same workflow), the TP 2
and TP 8 rows (to keep the set small; none for its error), LLaMA v3 70B (the same architecture as v3.1 70B at these
lengths), Mistral 7B, Mixtral 8x7B and 8x22B.

Ours: trtllm-v017's replica (published_trtllm_bench.trtllm_v017_options: the trtllm scheduler with trtllm-bench's
engine-settings heuristic, FP16 as fp16 weights and cache, FP8 as W8A8 weights and an FP8 cache, 0.95 of memory),
every request at 0, output tokens over the span. Printed by `python benchmarks/serve_published.py trtllm-v014`.
"""

from __future__ import annotations

from benchmarks.published_trtllm_bench import print_bench_rows, trtllm_v017_options
from benchmarks.published_trtllm_v017 import TRTLLM_V017_REQUESTS

TRTLLM_V014_SOURCE = ("NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as stored in the fork "
                      "arthurrasmusson/TensorRT-LLM at e00d4e65 (the 0.14.0 page), 'Throughput Measurements': "
                      "trtllm-bench on TensorRT engines, token throughput (tokens/second)")
# The page's $num_requests of the kept shapes: its table lists the same counts as 0.17's for these seven.
TRTLLM_V014_REQUESTS = dict(TRTLLM_V017_REQUESTS)
TRTLLM_V014_ASSUMED = (
    "decided and committed before any figure was computed: the 'A100-PCIE-80GB' as the a100-pcie preset (its "
    "interconnect as the preset holds it: NVLink bridges in pairs, PCIe Gen4 between pairs; the page names no "
    "system) and the 'L40S' as the l40s preset (PCIe Gen4 between GPUs, no NVLink); LLaMA v3.1 8B and 70B as the "
    "llama3.1-8b and llama3.1-70b presets; the engine's max_batch_size and max_num_tokens from trtllm-bench's "
    "tuning heuristic as published_trtllm_bench.trtllm_bench_settings reimplements it (read at a later commit, "
    "04cba88, as trtllm-v017 assumes for 0.17: 0.14's own tuning.py is not stored here), the GPU's whole memory and "
    "our tree's parameter count, FP16 2 bytes a value and FP8 1, 0.95 of memory for every row (the page: 'In "
    "majority of cases, we also use a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95'; "
    "which rows did not is not stated); the run as serve's trtllm scheduler (GUARANTEED_NO_EVICT, whole prompts, "
    "chunked context off) with its CUDA graphs as graphs.py has the trtllm engine's; FP16: fp16 weights, activations "
    "and KV cache; FP8: FP8 weights in W8A8 GEMMs at the preset's FP8 peak and an FP8 KV cache (the page: 'If you "
    "specify FP8 quantization, the KV cache will automatically be set to FP8 as well'), activations in fp16; the "
    "all-reduces as NCCL's curves of each preset (TensorRT-LLM's own all-reduce kernels not modelled); host time "
    "not modelled; the figure as output tokens over the span from 0 (every request at once) to the last token")
# One table per (model, GPU column) of the page, as TRTLLM_V017's; rows: (input, output, published tokens/s).
TRTLLM_V014 = [
    {"model": "llama3.1-8b", "published_model": "LLaMA v3.1 8B", "hardware": "a100-pcie",
     "gpu": "A100-PCIE-80GB TP1 (FP16)", "tp": 1, "bytes": 2,
     "rows": [(128, 128, 5338.0166), (128, 2048, 4250.6391), (128, 4096, 2568.5398), (500, 2000, 3374.7133),
              (1000, 1000, 3165.3542), (2048, 128, 611.8446), (2048, 2048, 2011.1215)]},
    {"model": "llama3.1-8b", "published_model": "LLaMA v3.1 8B", "hardware": "l40s",
     "gpu": "L40S TP1 (FP8)", "tp": 1, "bytes": 1,
     "rows": [(128, 128, 8639.7933), (128, 2048, 5101.6652), (128, 4096, 2774.5363), (500, 2000, 4065.3921),
              (1000, 1000, 3726.7552), (2048, 128, 986.9134), (2048, 2048, 2018.303)]},
    {"model": "llama3.1-70b", "published_model": "LLaMA v3.1 70B", "hardware": "a100-pcie",
     "gpu": "A100-PCIE-80GB TP4 (FP16)", "tp": 4, "bytes": 2,
     "rows": [(128, 128, 1272.6755), (128, 2048, 1435.236), (128, 4096, 1212.5416), (500, 2000, 1176.418),
              (1000, 1000, 989.4082), (2048, 128, 150.6795), (2048, 2048, 823.4777)]},
    {"model": "llama3.1-70b", "published_model": "LLaMA v3.1 70B", "hardware": "l40s",
     "gpu": "L40S TP4 (FP8)", "tp": 4, "bytes": 1,
     "rows": [(128, 128, 1438.0446), (128, 2048, 1763.522), (128, 4096, 1280.3778), (500, 2000, 1470.0826),
              (1000, 1000, 1161.4814), (2048, 128, 169.0386), (2048, 2048, 876.2254)]},
]


def print_trtllm_v014() -> None:
    print(f"\nTensorRT-LLM 0.14 trtllm-bench, all requests at once. Source: {TRTLLM_V014_SOURCE}\n")
    print(f"Assumed: {TRTLLM_V014_ASSUMED}\n")
    print_bench_rows("trtllm-v014", TRTLLM_V014, TRTLLM_V014_REQUESTS, trtllm_v017_options, "tok/s")
