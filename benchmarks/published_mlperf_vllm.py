"""MLPerf Inference v5.0 and v5.1, open division, Krai's vLLM submissions: Llama 2 70B (v5.0) and Llama 3.1 70B
(v5.1, on the Llama 2 task's OpenOrca samples) served by vLLM with dynamic FP8 quantization on 8 x H200, 8 x H100
and 8 x MI300X, every engine argument stated in the submission's measurements/ README (the `axs byquery` command
of its Performance run): tp, dp (the number of engines), max_num_seqs, max_num_batched_tokens,
gpu_memory_utilization, quantization=fp8, block_size where given; the vLLM version in the system's name (v5.0) or
the docker image tag (v5.1). The figures are each run's LoadGen summary
(results/<system>/<model>/<scenario>/performance/run_1/mlperf_log_summary.txt): Offline "Tokens per second";
Server "Completed tokens per second", the 99.00 percentile first-token latency and time to output token, at the
run's "Scheduled samples per second".

Sources (GitHub mirrors of mlcommons/inference_results_v5.0 and _v5.1, as the search tool stores them):
- v5.0: ntuhpc/mlperf_inference_results_v5.0 at cf354115915ea369f05db424b051da8c5bf957dc, open/Krai/.
- v5.1: ntuhpc/inference_results_v5.1 at a634ab772637c2d940cfef45fae86553211f525b, open/Krai/.

These are vLLM runs, where the earlier MLPerf rows (benchmarks/published_mlperf.json) are TensorRT-LLM's or AMD's
own harness: the same dataset and metric with the engine the simulator's schedulers copy.

Ours: mlperf-style runs on `replicas` = dp replicas of `serve`'s vllm-v0 scheduler (vLLM 0.6.4 and 0.7.3: the V0
engine, chunked prefill off below a 32k context) or vllm scheduler (0.9.x: V1), the stated budgets, FP8 weights in
W8A8 GEMMs, a 16-bit KV cache, the dataset's prompts (benchmarks/mlperf_llama2_70b_lengths.json), 294 output
tokens each. Every choice the submissions leave open is in KRAI_ASSUMED, written before any figure was computed.
The Server figures are read as LoadGen reads them (loadgen_server_figures: its percentile, per-sample TPOT); a
second table sets each Server run's own load (Little's law on its summary) beside our step at that load.

    python benchmarks/serve_published.py mlperf-vllm
"""

from __future__ import annotations

KRAI_V50_SOURCE = ("ntuhpc/mlperf_inference_results_v5.0 (commit cf354115), a mirror of mlcommons/inference_results_v5.0: "
                   "open/Krai/measurements/<system>/llama2-70b-fp8_dyn/{offline,server}/README.md (settings) and "
                   "open/Krai/results/<system>/llama2-70b-fp8_dyn/{offline,server}/performance/run_1/mlperf_log_summary.txt")
KRAI_V51_SOURCE = ("ntuhpc/inference_results_v5.1 (commit a634ab77), a mirror of mlcommons/inference_results_v5.1: "
                   "open/Krai/measurements/<system>/llama3_1-70b-fp8_dyn/{offline,server}/README.md (settings) and "
                   "open/Krai/results/<system>/llama3_1-70b-fp8_dyn/{offline,server}/performance/run_1/"
                   "mlperf_log_summary.txt (the Quark run's model folder: llama2-70b-fp8_quark)")
KRAI_SERVER_REQUESTS = 9000  # simulated per Server run, as the 8-engine rows of published_mlperf.json
KRAI_SAMPLES = 24576  # Offline: the dataset's samples, each once (performance_sample_count 24576)

# One entry per system. offline / server: the engine arguments of that scenario's Performance command
# (max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, block_size where stated) and the summary's figures.
# server["rate"]: "Scheduled samples per second"; p99s in seconds from the summary's nanoseconds.
KRAI_SYSTEMS = [
    {"system": "xd670_h200_x8_vllm_064", "round": "v5.0", "name": "HPE Cray XD670, 8 x H200-SXM-141GB, vLLM v0.6.4",
     "hardware": "h200", "model": "llama2-70b", "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 1024, "max_batched_tokens": 8192, "gpu_memory_utilization": 0.95,
                 "samples_per_s": 53.6459, "tokens_per_s": 15906.1},
     "server": {"max_num_seqs": 256, "max_batched_tokens": 16384, "gpu_memory_utilization": 0.95, "rate": 48.02,
                "tokens_per_s": 13716.75, "p99_ttft_s": 0.709786558, "p99_tpot_s": 0.138964966}},
    {"system": "xd670_h200_x8_vllm_064_flashinfer", "round": "v5.0",
     "name": "HPE Cray XD670, 8 x H200-SXM-141GB, vLLM v0.6.4 with the FlashInfer backend",
     "hardware": "h200", "model": "llama2-70b", "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 1024, "max_batched_tokens": 8192, "gpu_memory_utilization": 0.95,
                 "samples_per_s": 72.0235, "tokens_per_s": 21372.3},
     "server": {"max_num_seqs": 1024, "max_batched_tokens": 8192, "gpu_memory_utilization": 0.95, "rate": 70.04,
                "tokens_per_s": 19618.09, "p99_ttft_s": 1.384060585, "p99_tpot_s": 0.197063553}},
    {"system": "xd670_h200_x8_vllm_073", "round": "v5.0", "name": "HPE Cray XD670, 8 x H200-SXM-141GB, vLLM v0.7.3",
     "hardware": "h200", "model": "llama2-70b", "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 1024, "max_batched_tokens": 8192, "gpu_memory_utilization": 0.95,
                 "samples_per_s": 54.7354, "tokens_per_s": 16229.0},
     "server": {"max_num_seqs": 256, "max_batched_tokens": 16384, "gpu_memory_utilization": 0.95, "rate": 50.03,
                "tokens_per_s": 14426.38, "p99_ttft_s": 1.860893791, "p99_tpot_s": 0.143059840}},
    {"system": "xe9680_mi300x_x8_vllm_064", "round": "v5.0", "name": "Dell PowerEdge XE9680, 8 x MI300X, vLLM v0.6.4 (ROCm)",
     "hardware": "mi300x", "model": "llama2-70b", "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 2048, "max_batched_tokens": 65536, "gpu_memory_utilization": 0.95,
                 "samples_per_s": 61.6499, "tokens_per_s": 18561.4},
     "server": {"max_num_seqs": 512, "max_batched_tokens": 65536, "gpu_memory_utilization": 0.99, "rate": 48.02,
                "tokens_per_s": 13916.25, "p99_ttft_s": 0.943870960, "p99_tpot_s": 0.181515102}},
    {"system": "xe9680_mi300x_x8_vllm_073", "round": "v5.0", "name": "Dell PowerEdge XE9680, 8 x MI300X, vLLM v0.7.3 (ROCm)",
     "hardware": "mi300x", "model": "llama2-70b", "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 2048, "max_batched_tokens": 65536, "gpu_memory_utilization": 0.97,
                 "samples_per_s": 57.5959, "tokens_per_s": 17128.9},
     "server": {"max_num_seqs": 512, "max_batched_tokens": 65536, "gpu_memory_utilization": 0.99, "rate": 45.02,
                "tokens_per_s": 12989.02, "p99_ttft_s": 0.792110466, "p99_tpot_s": 0.182182442}},
    {"system": "xd670_h200_x8_vllm_092", "round": "v5.1", "name": "HPE Cray XD670, 8 x H200-SXM-141GB, vLLM v0.9.2",
     "hardware": "h200", "model": "llama3.1-70b", "dtype": "bf16", "engine": "vllm", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 1232, "max_batched_tokens": 8121, "gpu_memory_utilization": 0.95,
                 "samples_per_s": 104.369, "tokens_per_s": 30893.1},
     "server": {"max_num_seqs": 858, "max_batched_tokens": 36498, "gpu_memory_utilization": 0.95, "rate": 93.45,
                "tokens_per_s": 26903.40, "p99_ttft_s": 0.534348754, "p99_tpot_s": 0.135300614}},
    {"system": "xe9680_h100_x8_vllm_092", "round": "v5.1", "name": "Dell PowerEdge XE9680, 8 x H100 (4 engines of tp 2), "
     "vLLM v0.9.2 (vllm/vllm-openai:v0.9.2)",
     "hardware": "h100-sxm", "model": "llama3.1-70b", "dtype": "bf16", "engine": "vllm", "tp": 2, "replicas": 4,
     "offline": {"max_num_seqs": 3264, "max_batched_tokens": 14768, "gpu_memory_utilization": 0.90,
                 "samples_per_s": 77.6951, "tokens_per_s": 22819.6},
     "server": {"max_num_seqs": 2476, "max_batched_tokens": 12140, "gpu_memory_utilization": 0.90, "rate": 75.48,
                "tokens_per_s": 21433.25, "p99_ttft_s": 0.522673060, "p99_tpot_s": 0.133753662}},
    {"system": "xe9680_mi300x_x8_vllm_091", "round": "v5.1", "name": "Dell PowerEdge XE9680, 8 x MI300X, vLLM v0.9.1 "
     "(rocm/vllm:rocm6.4.1_vllm_0.9.1_20250715)",
     "hardware": "mi300x", "model": "llama3.1-70b", "dtype": "bf16", "engine": "vllm", "tp": 1, "replicas": 8,
     "offline": {"max_num_seqs": 1866, "max_batched_tokens": 17338, "gpu_memory_utilization": 0.96, "block_size": 32,
                 "samples_per_s": 62.6401, "tokens_per_s": 18558.9},
     "server": {"max_num_seqs": 1866, "max_batched_tokens": 17338, "gpu_memory_utilization": 0.99, "rate": 55.35,
                "tokens_per_s": 15863.67, "p99_ttft_s": 0.806522953, "p99_tpot_s": 0.187457837}},
]
# Typed after the eight above were computed and before this one was (its own assumed, KRAI_QUARK_ASSUMED): the v5.1
# MI300X run of AMD's MLPerf v5.0 vLLM image on AMD's Quark FP8 Llama 2 70B, Offline only (no Server run submitted).
KRAI_SYSTEMS.append(
    {"system": "xe9680_mi300x_x8_vllm_065", "round": "v5.1", "name": "Dell PowerEdge XE9680, 8 x MI300X, AMD's MLPerf "
     "v5.0 vLLM 0.6.5 image (mlperf_inference_submission:5.0), Quark FP8", "hardware": "mi300x", "model": "llama2-70b",
     "dtype": "fp16", "engine": "vllm-v0", "tp": 1, "replicas": 8, "kv_dtype": "fp8",
     "offline": {"max_num_seqs": 1275, "max_batched_tokens": 38890, "gpu_memory_utilization": 0.96, "block_size": 32,
                 "num_scheduler_steps": 12, "samples_per_s": 91.2433, "tokens_per_s": 27185.5},
     "server": None})
KRAI_QUARK_ASSUMED = (
    "decided before its figure was computed, beside KRAI_ASSUMED's choices that apply: the checkpoint "
    "(mlperf5.0_AMD/llama2-70b-chat-hf/fp8_quantized, AMD's Quark export for its v5.0 submission) as FP8 weights and "
    "activations (W8A8) and an FP8 KV cache, as AMD's own MLPerf vLLM runs used (published_mlperf.json's AMD v4.1 "
    "entry); the image's vLLM 0.6.5 fork as the vllm-v0 scheduler with the command's num_scheduler_steps=12 (V0's "
    "multi-step decoding); block_size 32, 1,275 sequences, 38,890 batched tokens, 0.96 of memory as stated; the "
    "fp16 activations of the Llama 2 checkpoint")
KRAI_ASSUMED = (
    "decided before any figure was computed: quantization=fp8 as vLLM's dynamic FP8 (per-tensor FP8 weights, "
    "activations quantized per step: W8A8 GEMMs at the FP8 peak) with the KV cache in the model's 16-bit dtype "
    "(kv_cache_dtype not given: vLLM's 'auto'; Llama 2 70B's checkpoint fp16, Llama 3.1 70B's bf16); vLLM 0.6.4 and "
    "0.7.3 as the vllm-v0 scheduler (their default V0 engine; chunked prefill not enabled for a 4,096 context: "
    "prefill-first steps within max_num_batched_tokens; one scheduler step) and 0.9.1 / 0.9.2 as the vllm scheduler "
    "(V1, chunked prefill, prefix caching on: random samples share no prefix blocks); CUDA / HIP graphs as graphs.py "
    "has each engine's (max_seq_len_to_capture covers every sample; amended in session 28 to each V0 command's "
    "stated value, KRAI_CAPTURE_LENS); the attention kernel as serve's default for "
    "the GPU (the FlashInfer system's backend not modelled apart: the same figures as the 0.6.4 system's engine at "
    "its budgets); block size 16 unless the scenario states one (block_size=32: the v5.1 MI300X Offline); the "
    "presets h200 (700 W), h100-sxm and mi300x; dp engines as that many replicas with requests split round-robin "
    "(Offline) or by serve's router (Server), no cross-engine collectives; Offline: the 24,576 samples once each "
    "in serve_published's seeded shuffle, all at 0, tokens over the span to the last token (the run repeated "
    "samples to 39,600-66,000 over 10 minutes); Server: 9,000 Poisson arrivals at the scheduled rate, seed 0 "
    "(the runs lasted 10 minutes); 294 output tokens a sample for both models (the reference's; the summaries' "
    "tokens / samples are 293.7-301.1); Llama 3.1 70B's prompts as the Llama 2 tokenizer's lengths of the same "
    "samples (the stored histogram; Llama 3's tokenizer gives fewer tokens, not stored); the OpenAI client, the "
    "API server's tokenization and streaming not modelled (no figure given)")


# Amended after the figures above were computed (session 27, wt27_backend): the attention backend each system's vLLM
# version selects on its GPU with the stated settings, read from vLLM's code, not an open choice. kv_cache_dtype
# is not in any command ('auto': the 16-bit cache), so vLLM's CUDA selector keeps FLASH_ATTN (its FP8-cache,
# block-size, sliding-window and head-size checks pass: vllm/attention/selector.py which_attn_to_use in 0.6.x,
# vllm/platforms/cuda.py get_attn_backend_cls in 0.7.x, XFORMERS only when one fails); within FLASH_ATTN the kernel
# is FlashAttention-2 before vLLM 0.7.0 and FlashAttention-3 on Hopper from 0.7.0, V0 and V1 (vllm-project/vllm
# pull request 12093, get_flash_attn_version 'if hopper default to FA3'; pull request 15231: 'On Hopper, Flash
# Attention 3 is enabled by default (since the v0.7.0 release)'). kernel_facts.json serving_attention_backends.
# The FlashInfer system's backend has no published kernel rate there: it keeps FlashAttention-2's figures, as its
# assumed said; the ROCm systems keep serve's default (vLLM's ROCm backends are not typed).
KRAI_ATTENTION_BACKENDS = {"xd670_h200_x8_vllm_064": "flash-attn2", "xd670_h200_x8_vllm_073": "flash-attn3",
                           "xd670_h200_x8_vllm_092": "flash-attn3", "xe9680_h100_x8_vllm_092": "flash-attn3"}

# Amended after the figures above were computed (session 28, wt28_krai): each Performance command's
# max_seq_len_to_capture (the measurement READMEs' text, e.g. xd670_h200_x8_vllm_064 server: "...,max_num_seqs=256,
# max_seq_len_to_capture=1024,max_num_batched_tokens=16384,..."), where KRAI_ASSUMED had read the engine's default
# (8,192) as covering every sample. Stated, so not an open choice. vLLM V0 runs a decode step eagerly when its
# longest sequence passes it (graphs.py vllm_v0_graphs, serve --max-capture-len): passed for the vllm-v0 systems.
# The V1 systems (0.9.x) state it too, but V1's piecewise graphs leave attention outside the graph, so no context
# sends a step eager there (graphs.py check_capture_len; serve refuses the option for the vllm scheduler): typed,
# not passed. The MI300X 2,048s cover every sample (the longest prompt, 1,021, plus 294 outputs: 1,315), as the
# default did; the Quark command states none.
KRAI_CAPTURE_LENS = {
    ("xd670_h200_x8_vllm_064", "offline"): 1024, ("xd670_h200_x8_vllm_064", "server"): 1024,
    ("xd670_h200_x8_vllm_064_flashinfer", "offline"): 1024, ("xd670_h200_x8_vllm_064_flashinfer", "server"): 1024,
    ("xd670_h200_x8_vllm_073", "offline"): 1024, ("xd670_h200_x8_vllm_073", "server"): 1024,
    ("xe9680_mi300x_x8_vllm_064", "offline"): 2048, ("xe9680_mi300x_x8_vllm_064", "server"): 1024,
    ("xe9680_mi300x_x8_vllm_073", "offline"): 2048, ("xe9680_mi300x_x8_vllm_073", "server"): 2048,
    ("xd670_h200_x8_vllm_092", "offline"): 1024, ("xd670_h200_x8_vllm_092", "server"): 1024,
    ("xe9680_h100_x8_vllm_092", "offline"): 1024, ("xe9680_h100_x8_vllm_092", "server"): 1024,
    ("xe9680_mi300x_x8_vllm_091", "server"): 1024}


# Amended after the figures above were computed (session 29): vLLM's host time a step by the release each system
# names (costmodel/serving/host_time.json "releases", the rule the Lambda, v0.6.0-post and SGLang-vLLM figures take):
# the V0 systems (0.6.4, 0.6.5, 0.7.3) run V0's multi-step / asynchronous-output loop as vllm-v0.6.0; the V1 systems
# (0.9.1, 0.9.2) take none. KRAI_ASSUMED had left it out for want of a figure; the figure exists since session 28.
# A /tmp trial in session 28 had shown the V0 Offline rows' move (FINDINGS "(wt28_vllmhost, session 28)").
KRAI_RELEASES = {"xd670_h200_x8_vllm_064": "0.6.4", "xd670_h200_x8_vllm_064_flashinfer": "0.6.4",
                 "xd670_h200_x8_vllm_073": "0.7.3", "xe9680_mi300x_x8_vllm_064": "0.6.4",
                 "xe9680_mi300x_x8_vllm_073": "0.7.3", "xd670_h200_x8_vllm_092": "0.9.2",
                 "xe9680_h100_x8_vllm_092": "0.9.2", "xe9680_mi300x_x8_vllm_091": "0.9.1",
                 "xe9680_mi300x_x8_vllm_065": "0.6.5"}


def krai_host_time(system: dict) -> str:
    """The host_time.json version a system's runs take: its named release on the engine its scheduler models, as
    `serve --scheduler ENGINE --host-time vllm==RELEASE` takes it (host_time.profile_for)."""
    from costmodel.serving.host_time import RELEASE_PREFIX, profile_for

    return profile_for(RELEASE_PREFIX + KRAI_RELEASES[system["system"]], system["engine"])


def capture_len(system: dict, scenario: str) -> dict:
    """build_replica's max_capture_len for a scenario: the command's max_seq_len_to_capture where it states one and
    the engine is V0 (vllm-v0), else nothing (the engine's default)."""
    stated = KRAI_CAPTURE_LENS.get((system["system"], scenario))
    return {"max_capture_len": stated} if stated is not None and system["engine"] == "vllm-v0" else {}


def krai_options(system: dict, scenario: str) -> dict:
    """build_replica's options for one scenario of a system: its engine, tp, the scenario's stated budgets and
    memory fraction (block size and scheduler steps where stated), FP8 weights in W8A8 GEMMs, the KV cache in the
    model dtype (kv_dtype None) unless the system names one, the attention backend its vLLM version selects on an
    NVIDIA GPU (KRAI_ATTENTION_BACKENDS), the command's max_seq_len_to_capture on a V0 engine (KRAI_CAPTURE_LENS), the
    host time a step of its release (krai_host_time)."""
    stated = system[scenario]
    return {"scheduler": system["engine"], "tp": system["tp"], "max_num_seqs": stated["max_num_seqs"],
            "max_batched_tokens": stated["max_batched_tokens"],
            "gpu_memory_utilization": stated["gpu_memory_utilization"], "block_size": stated.get("block_size", 16),
            "dtype": system["dtype"], "weight_dtype": "fp8", "fp8_gemm": "w8a8", "kv_dtype": system.get("kv_dtype"),
            **({"num_scheduler_steps": stated["num_scheduler_steps"]} if "num_scheduler_steps" in stated else {}),
            **({"attention_backend": KRAI_ATTENTION_BACKENDS[system["system"]]}
               if system["system"] in KRAI_ATTENTION_BACKENDS else {}), **capture_len(system, scenario),
            "host_time": krai_host_time(system)}


def krai_offline(system: dict, lengths, samples: int = KRAI_SAMPLES) -> float:
    """Our Offline output tokens per second: the first `samples` of the dataset's shuffled samples at 0 over the
    system's engines, 294 output tokens each, over the span to the last token."""
    from benchmarks.published_mlperf import MLPERF_OUTPUT, mlperf_prompts, span_at_once
    from costmodel.serving.workload import Request

    requests = [Request(i, 0.0, n, MLPERF_OUTPUT) for i, n in enumerate(mlperf_prompts(lengths, samples))]
    span = span_at_once(system["model"], system["hardware"], requests, system["replicas"],
                        **krai_options(system, "offline"))
    return len(requests) * MLPERF_OUTPUT / span


def krai_server(system: dict, lengths, requests: int = KRAI_SERVER_REQUESTS) -> dict:
    """Our Server figures at the scheduled rate: completed output tokens/s, p99 TTFT and p99 TPOT (seconds), each
    as LoadGen reports it (loadgen_server_figures)."""
    from benchmarks.published_mlperf import MLPERF_OUTPUT
    from costmodel.serving.api import serve

    run = serve(system["model"], system["hardware"], rate=system["server"]["rate"], requests=requests, prompt=lengths,
                output=str(MLPERF_OUTPUT), seed=0, replicas=system["replicas"], **krai_options(system, "server"))
    return loadgen_server_figures(run)


# LoadGen's Server figures (mlcommons/inference loadgen/, commit b66003e1): each sample's TTFT is its
# FirstTokenComplete time less its query's scheduled time (loadgen.cc TokenComplete: sched.delta(complete_begin_time))
# and its TPOT (its QuerySamplesComplete latency - its TTFT) / (n_tokens - 1) (logging.cc RecordSampleCompletion),
# what serve's request frame holds (ttft_s, tpot_s: (last - first token) / (tokens - 1), arrival = scheduled time);
# a percentile is the sorted samples' value at index floor(count x percentile), not interpolated (results.cc
# ProcessTokenLatencies: time_per_output_token_arr[sample_count * percentile]); completed tokens per second are the
# tokens over the time to the last sample's completion (results.cc: token_count / final_query_all_samples_done_time;
# serve's throughput counts from the first arrival, one Poisson gap later: the same to 0.01%).
LOADGEN_PERCENTILE = 0.99


def loadgen_percentile(values, fraction: float = LOADGEN_PERCENTILE) -> float:
    """LoadGen's percentile of per-sample latencies: sorted, the one at index floor(count x fraction)."""
    ordered = sorted(values)
    return float(ordered[int(len(ordered) * fraction)])


def loadgen_server_figures(run) -> dict:
    """A serve run's Server figures as LoadGen's summary states them: completed output tokens/s, and the p99 of the
    per-request TTFT and TPOT by LoadGen's percentile (the request frame's values, not summary()'s interpolated
    percentiles)."""
    requests = run.requests
    return {"tokens_per_s": run.summary()["throughput"]["output_tokens_per_s"],
            "p99_ttft_s": loadgen_percentile(requests["ttft_s"]),
            "p99_tpot_s": loadgen_percentile(requests["tpot_s"].dropna())}


SERVER_METRICS = (("tokens_per_s", "completed output tok/s", 1, ",.0f"), ("p99_ttft_s", "p99 TTFT (ms)", 1e3, ",.0f"),
                  ("p99_tpot_s", "p99 TPOT (ms)", 1e3, ",.1f"))


def server_rows(cells: str, server: dict, ours: dict, fed: tuple[str, str] | None = None) -> list[str]:
    """An MLPerf Server run's three table rows after `cells` (completed output tokens/s, p99 TTFT
    and p99 TPOT): the published figure, ours and their ratio; fed: (source, row) under which each
    comparison is recorded for reports/serving_published.py (None: not fed)."""
    from reports.serving_published import record

    for metric, name, _, _ in SERVER_METRICS if fed else ():
        record(*fed, name, server[metric], ours[metric])
    return [f"{cells} | {name} | {server[metric] * scale:{fmt}} | {ours[metric] * scale:{fmt}} "
            f"| {ours[metric] / server[metric]:.2f} |" for metric, name, scale, fmt in SERVER_METRICS]


def print_mlperf_vllm(path=None) -> None:
    from pathlib import Path

    from benchmarks.published_lengths import MLPERF_LENGTHS, mlperf_input_lengths

    from reports.serving_published import record

    lengths = mlperf_input_lengths(Path(path or MLPERF_LENGTHS), at_least=KRAI_SAMPLES)
    print(f"\nMLPerf Inference v5.0 / v5.1 open, Krai's vLLM runs. Sources: {KRAI_V50_SOURCE}; {KRAI_V51_SOURCE}\n")
    print("| round | system (ours) | engines x tp | scenario | metric | published | ours | ours / published |")
    print("|---|---|---|---|---|---|---|---|")
    for system in KRAI_SYSTEMS:
        head = (f"| {system['round']} | {system['name']} ({system['model']}, {system['hardware']}, {system['engine']}) "
                f"| {system['replicas']} x {system['tp']}")
        ours, published = krai_offline(system, lengths), system["offline"]["tokens_per_s"]
        record("mlperf-vllm", f"{system['system']} Offline", "output tok/s", published, ours)
        print(f"{head} | Offline | output tok/s | {published:,.0f} | {ours:,.0f} | {ours / published:.2f} |")
        if system["server"] is None:  # an Offline-only submission
            continue
        print("\n".join(server_rows(f"{head} | Server, {system['server']['rate']} req/s", system["server"],
                                     krai_server(system, lengths), ("mlperf-vllm", f"{system['system']} Server"))))
    print_load_table(lengths)


# Each Server summary's own load figures (the same mlperf_log_summary.txt files): "Completed samples per second",
# "Mean latency (ns)" (scheduled time to the last token), and the 50.00 percentile time to output token (ns).
# Little's law over the run: completed samples/s x mean latency = the requests in the system, over the engines.
KRAI_SERVER_LOAD = {
    "xd670_h200_x8_vllm_064": (46.48, 36395205952, 125250782),
    "xd670_h200_x8_vllm_064_flashinfer": (66.49, 50493386946, 179609432),
    "xd670_h200_x8_vllm_073": (48.36, 38222843278, 131454414),
    "xe9680_mi300x_x8_vllm_064": (46.41, 47413121236, 162851673),
    "xe9680_mi300x_x8_vllm_073": (43.77, 45037595300, 157890374),
    "xd670_h200_x8_vllm_092": (90.89, 32269245537, 112915517),
    "xe9680_h100_x8_vllm_092": (72.97, 30935337828, 108496267),
    "xe9680_mi300x_x8_vllm_091": (53.56, 43400796609, 149221905)}


def published_concurrency(system: dict) -> float:
    """The requests an engine held on average during the published Server run (Little's law on its summary)."""
    completed, mean_latency_ns, _ = KRAI_SERVER_LOAD[system["system"]]
    return completed * mean_latency_ns * 1e-9 / system["replicas"]


def step_at_published_load(system: dict, mean_prompt: float) -> dict:
    """Our step at the published run's load, to locate where its TPOT goes: a decode step of as many sequences as
    the run held (published_concurrency, rounded), each at the mean prompt plus half the 294 outputs; the share of
    an engine's time its prefills take at the scheduled rate (one mean prompt a step, as V0 runs them at these
    rates); and the TPOT those two make (decode / (1 - prefill share)). Each step with its release's host time
    (a V0 system's vllm-v0.6.0, one scheduling decision a step; since session 29)."""
    import costmodel
    from benchmarks.published_mlperf import MLPERF_OUTPUT
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    _, step, _ = build_replica(costmodel.load_model(system["model"]), load_hardware(system["hardware"]),
                               **krai_options(system, "server"))
    sequences, prompt = round(published_concurrency(system)), round(mean_prompt)
    decode = step.seconds([1] * sequences, [prompt + MLPERF_OUTPUT // 2] * sequences)
    prefill = step.seconds([prompt], [prompt])
    host = getattr(step, "host_time", None)  # the release's host time a step (krai_host_time), one decision a step
    if host is not None:
        decode, prefill = float(host.step(decode, sequences)), float(host.step(prefill, 1))
    prefill_share = system["server"]["rate"] / system["replicas"] * prefill
    return {"sequences": sequences, "decode_s": decode, "prefill_share": prefill_share,
            "tpot_s": decode / (1 - prefill_share)}


def print_load_table(lengths) -> None:
    print("\nThe Server runs' own load (Little's law on each summary) and our step at that load: published median "
          "TPOT against our decode step of as many sequences, stretched by our prefills' share of the time (V0's "
          "separate prefill steps; V1 runs its prompts as chunks inside the decode steps, so its TPOT lies between "
          "the two ratios).\n")
    print("| system | completed req/s | mean latency (s) | sequences an engine | published median TPOT (ms) "
          "| our decode step (ms) | our prefill share | our TPOT at that load (ms) | published / ours "
          "| published / our decode step |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    mean_prompt = sum(v * w for v, w in zip(lengths.values, lengths.weights)) / sum(lengths.weights)
    for system in KRAI_SYSTEMS:
        if system["system"] not in KRAI_SERVER_LOAD:
            continue
        completed, mean_latency_ns, median_tpot_ns = KRAI_SERVER_LOAD[system["system"]]
        ours = step_at_published_load(system, mean_prompt)
        print(f"| {system['name']} | {completed} | {mean_latency_ns * 1e-9:.1f} | {published_concurrency(system):.0f} "
              f"| {median_tpot_ns * 1e-6:.1f} | {ours['decode_s'] * 1e3:.1f} | {ours['prefill_share']:.2f} "
              f"| {ours['tpot_s'] * 1e3:.1f} | {median_tpot_ns * 1e-9 / ours['tpot_s']:.2f} "
              f"| {median_tpot_ns * 1e-9 / ours['decode_s']:.2f} |")
