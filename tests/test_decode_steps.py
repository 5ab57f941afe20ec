"""A generation of `gen` new tokens runs the prefill and gen - 1 decode steps (issue 18): the
prefill's logits give the first token, and the step that gives token k + 1 feeds token k against
prompt + k keys (transformers' generate, gpt-fast's and torchao's generate.py, vLLM). simulate,
simulate with a layout and serve's engines count the same steps; every published decoding row is
compared with the quantity its source's script measures (its source's "rate")."""

import re

import pytest

from costmodel import roofline as sim
from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout
from costmodel.presets import load_preset
from reports.published_decode import DECODE_RATES, decode_run, decode_setup
from reports.published_runs import other_runs_data


def _llama(gen: int, **options):
    return sim.simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=37, gen=gen,
                                  batch=3, time_model="roofline", **options)


def test_one_new_token_is_the_prefill_alone():
    result = _llama(1)
    d = result["decode"]
    assert (d["decode_steps"], d["decode_seconds"], d["decode_tokens_per_second"]) == (0, 0.0, None)
    assert d["end_to_end_seconds"] == result["prefill"]["seconds"]
    assert d["end_to_end_tokens_per_second"] == 3 / result["prefill"]["seconds"]
    assert result["generation_table"] == [] and "first_token" not in d


def test_two_new_tokens_are_one_step_at_the_prompt_plus_one():
    result = _llama(2)
    d, table = result["decode"], result["generation_table"]
    roof = sim.Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"))
    step = float(roof.decode(3, 38)[1])  # feeds token 1 against the 37 prompt keys and its own
    assert [(row["step"], row["context"]) for row in table] == [(1, 38)]
    assert d["decode_steps"] == 1 and d["decode_seconds"] == pytest.approx(step, rel=1e-12)
    assert d["decode_tokens_per_second"] == pytest.approx(3 / step, rel=1e-12)
    assert d["end_to_end_tokens_per_second"] == pytest.approx(6 / (result["prefill"]["seconds"] + step), rel=1e-12)


def test_n_new_tokens_are_n_minus_1_steps_at_contexts_prompt_plus_1_to_prompt_plus_n_minus_1():
    result = _llama(50)
    roof = sim.Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"))
    with_cache, _ = sim.stepwise_generation_seconds(roof, 3, 38, 86)  # 49 steps
    d = result["decode"]
    assert d["decode_steps"] == 49 and d["decode_seconds"] == pytest.approx(with_cache, rel=1e-12)
    assert (result["generation_table"][-1]["step"], result["generation_table"][-1]["context"]) == (49, 86)
    assert d["last_token"]["seconds"] == pytest.approx(float(roof.decode(3, 86)[1]), rel=1e-12)
    assert d["decode_tokens_per_second"] == pytest.approx(3 * 49 / with_cache, rel=1e-12)
    assert d["end_to_end_seconds"] == pytest.approx(result["prefill"]["seconds"] + with_cache, rel=1e-12)
    assert d["end_to_end_tokens_per_second"] == pytest.approx(3 * 50 / d["end_to_end_seconds"], rel=1e-12)


@pytest.mark.parametrize("time_model", ["roofline", "kernels"])
def test_simulate_and_serves_engine_time_one_request_alike(time_model):
    """One 2,048 + 128 request, alone on an H100, eager, flash attention, a preallocated cache:
    serve's E2E (its vLLM engine: the prefill's token, then 127 steps) equals simulate's prefill +
    generation. (With CUDA graphs they part: serve replays vLLM's piecewise graphs, attention and
    the LM head eager, simulate the whole step; costmodel/serving/graphs.py.)"""
    from costmodel.serving.api import serve

    cfg, hw = load_preset("llama3-8b"), load_hardware("h100-sxm")
    run = serve(cfg, hw, concurrency=1, requests=1, prompt="2048", output="128", time_model=time_model,
                cuda_graphs="off", sampling=None)  # the forward alone: simulate has no engine's sampler
    ours = sim.simulate_inference(cfg, hw, prompt=2048, gen=128, batch=1, attention="flash", kv_cache="static",
                                  time_model=time_model)
    served = run.requests.iloc[0]
    assert len(run.steps) == 128  # its engine's steps: the prefill, then 127 decode steps
    assert served["ttft_s"] == pytest.approx(ours["prefill"]["seconds"], rel=1e-12)
    assert served["e2e_s"] == pytest.approx(ours["decode"]["end_to_end_seconds"], rel=1e-12)


def test_a_layouts_generation_counts_the_same_steps():
    """simulate with a layout: gen - 1 steps, step k timed as a workload of k + 1 generated tokens
    (its last step at context prompt + k); at 9 tokens all 8 steps are timed, so the sum is exact."""
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.layout.timing import simulate_decode, step_time

    cfg, hw = load_preset("llama2-7b"), load_hardware("a100-80gb")
    layout = Layout(tp=2, framework="deepspeed")
    workload = Workload(seq_len=37, gen_tokens=9, batch=3, precision="pure")
    result = simulate_decode(cfg, workload, layout, hw, time_model="roofline")
    steps = [step_time(ParallelEstimate(cfg, Workload(seq_len=37, gen_tokens=k + 1, batch=3, precision="pure"), layout,
                                        phase="decode"), hw, None, "roofline").token()["seconds_per_token"]
             for k in range(1, 9)]
    g = result["generation"]
    assert g["decode_steps"] == 8 and g["decode_seconds"] == pytest.approx(sum(steps), rel=1e-12)
    assert g["end_to_end_tokens_per_second"] == pytest.approx(27 / (result["prefill"]["seconds"] + sum(steps)),
                                                              rel=1e-12)
    one = simulate_decode(cfg, Workload(seq_len=37, gen_tokens=1, batch=3, precision="pure"), layout, hw,
                          time_model="roofline")["generation"]
    assert (one["decode_steps"], one["decode_seconds"]) == (0, 0.0)


def _decode_sources():
    data = other_runs_data()
    names = sorted({run["id"].split()[0] for run in data["runs"] if run["kind"] == "decode"})
    return data, names


#: Each decode source's script, as its rate_source reads it: the file and the commit.
SCRIPTS = {"gpt-fast": ("generate.py", "32971d3"), "gpt-fast-amd": ("generate.py", "32971d3"),
           "gpt-fast-mixtral": ("mixtral-moe/generate.py", "32971d3"),
           "torchao": ("torchao/_models/llama/generate.py", "b4d0768"),
           "torchao-h100": ("torchao/_models/llama/generate.py", "92dd5f5"),
           "amd-vllm": ("benchmarks/benchmark_latency.py", "00db020"),
           "rocm-int8": ("int8-quantization/src/generate.py", "59e4bc9"),
           "torchao-kv-long": ("torchao/_models/llama/generate.py", "b4d0768"),
           "qwen2.5-speed-hf": ("examples/speed-benchmark/speed_benchmark_transformers.py", "8205ba2"),
           "qwen3-speed-hf": ("docs/source/getting_started/speed_benchmark.md", "c7f51a1"),
           "trtllm-v0.6.1": ("cpp/benchmarks/gptSessionBenchmark.cpp", "23bc5b7"),
           "lmdeploy-v0.1.0": ("benchmark/profile_generation.py", "379a2d5a6"),
           "hf-bloom-ds-inference": ("bloom-inference-scripts/bloom-ds-inference.py", "132d99d"),
           "fastertransformer-gpt": ("docs/gpt_guide.md", "07fdd2f"),
           "evalscope-qwq-hf": ("evalscope/perf/utils/db_util.py", "01ee08c"),
           "evalscope-qwq-vllm": ("evalscope/perf/utils/db_util.py", "01ee08c"),
           "torchchat-blog": ("torchchat/generate.py", "c0be124"),
           "gpt-fast-blog": ("generate.py", "32971d3"),
           # session 33's unseen rows (wt33_unseend); None: the script read names no commit
           "llm-perf-bench-vllm": ("benchmarks/benchmark_latency.py", None),
           "premai-a100": ("bench_pytorch/bench.py", "004a252"),
           "premai-a100-vllm": ("bench_vllm/bench.py", "004a252"),
           "trtllm-v0.9.0": ("gptSessionBenchmark", None),
           # session 34's unseen rows (wt34_unseend)
           "nemo-llama2-inference": ("Average Latency", None),
           "trtllm-v0.8.0": ("gptSessionBenchmark", None),
           # session 35's unseen rows (wt35_unseend)
           "optimum-gptq-bench": ("tests/benchmark/benchmark_gptq.py", "043bbe2f"),
           "modelopt-v0.11": ("benchmarks/gpt_benchmark.py", "06a15538"),  # wt37_trtllm: its own Python benchmark
           "modelopt-v0.21": ("trtllm-bench", None),
           "trtllm-blog-h200launch": ("gptSessionBenchmark", None),
           "trtllm-blog-falcon180b-h200": ("gptSessionBenchmark", None),
           # session 35's second batch (wt35_unseend2)
           "vllm-perf-bench-9515": ("benchmarks/benchmark_latency.py", None),
           "autogptq-readme": ("examples/benchmark/generation_speed.py", "37a8cd37"),
           # session 36's unseen rows (wt36_unseend)
           "trtllm-v0.5.0": ("gptSessionBenchmark", None),
           "sglang-docs-eagle3": ("the EAGLE repository's evaluation", None),
           "hf-blog-llama2-sagemaker": ("router/src/server.rs", None),
           # session 36's second batch (wt36_unseend2)
           "premai-v2": ("common/base.py _benchmark_cuda at fb72782", None),
           "rkooo567-llm-benchmark": ("benchmark_vllm.py at 6597835", None),
           "litgpt-quantize": ("generate/base.py at 982abcbc and d16f924d", None),
           # session 37's unseen rows (wt37_unseend): Hamel Husain's scripts (hamelsmu/llama-inference), Oracle's table
           "hamel-latency-2023": ("time.perf_counter() around one request", None),
           "hamel-latency-2023-hf": ("hf/bench.py", None),
           "oracle-mi300x-405b": ("benchmarks/benchmark_latency.py", None),
           "modelopt-v0.15": ("gptSessionBenchmark", None),
           # session 37's second batch (wt37_unseend2): ROCm/vllm's table at vLLM 0.7.3, Qwen2's vLLM 0.4.2 table
           "amd-vllm-0.7.3": ("benchmarks/benchmark_latency.py", "00db020"),
           "qwen2-speed-vllm": ("speed_benchmark_vllm.py", "8205ba2"),
           # session 38's unseen rows (wt38_unseend): ROCm's torch.compile blog, PyTorch CI's gpt-fast benchmark
           "rocm-torch-compile": ("generate_simp.py", None),
           "pytorch-gpt-fast-ci": ("generate.py run_experiment", None),
           # session 38's quantized rows (wt38_unseend2): vLLM PR #26051's `vllm bench latency`
           "vllm-pr26051-rtn": ("benchmark_latency.py", None),
           # session 39's quantized rows (wt39_unseend2): Neural Magic's model cards, GuideLLM against vLLM 0.7.2's server
           "redhat-r1-llama-70b": ("guidellm", None), "redhat-r1-qwen-32b": ("guidellm", None),
           "redhat-r1-llama-8b": ("guidellm", None), "redhat-r1-qwen-7b": ("guidellm", None),
           # session 39's unseen rows (wt39_unseend): vLLM PR #23197's BF16 baseline, the same command
           "vllm-pr23197-bf16": ("benchmark_latency.py", None),
           # session 40's unseen rows (wt40_unseend): ROCm/vllm's MI300X table at vLLM 0.6.6, 0.8.5 and 0.9.1
           "amd-vllm-0.6.6": ("benchmarks/benchmark_latency.py", "00db020"),
           "amd-vllm-0.8.5": ("benchmarks/benchmark_latency.py", "00db020"),
           "amd-vllm-0.9.1": ("benchmarks/benchmark_latency.py", "00db020"),
           # session 46's unseen rows (wt46_unseend): the same MI300X table at vLLM 0.9.0.1, 0.8.5 (20250513) and 0.7.3
           # (20250410)
           "amd-vllm-0.9.0.1": ("benchmarks/benchmark_latency.py", "00db020"),
           "amd-vllm-0.8.5-0513": ("benchmarks/benchmark_latency.py", "00db020"),
           "amd-vllm-0.7.3-0410": ("benchmarks/benchmark_latency.py", "00db020"),
           # session 40's unseen rows (wt40_unseend2): the Qwen pages' SGLang and vLLM tables
           "qwen3-speed-sglang": ("Speed = (tokens_prompt + tokens_generation) / time", None),
           "qwen2.5-speed-vllm": ("speed_benchmark_vllm.py", "8205ba2"),
           # session 41's unseen rows (wt41_unseend): TensorRT-LLM v0.8.0's and v0.9.0's first-token tables
           "trtllm-v0.8.0-ttft": ("gptSessionBenchmark", None), "trtllm-v0.9.0-ttft": ("gptSessionBenchmark", None),
           # session 42's unseen rows (wt42_unseend): TensorRT-LLM v0.5.0's first-token tables
           "trtllm-v0.5.0-ttft": ("gptSessionBenchmark", None),
           # session 42's second batch (wt42_unseend2): vLLM's benchmark_latency in an issue and three fused-MoE PRs
           "vllm-issue1805": ("benchmark_latency.py", None), "vllm-pr2542": ("benchmark_latency.py", None),
           "vllm-pr3240": ("benchmark_latency.py", None), "vllm-pr4002": ("benchmark_latency.py", None),
           # session 43's unseen rows (wt43_unseend): optimum-benchmark's generate throughput (its reports' definition)
           "optimum-benchmark-vicunas": ("optimum_benchmark/benchmarks/inference", None),
           "optimum-benchmark-mistrals": ("optimum_benchmark/benchmarks/inference", None)}
#: The sources whose figure is the decode steps' own rate (the prefill's token apart), and the words of their
#: rate_source that name what was read: the IBM blog's median latency; ExLlamaV2's test_inference.py (its own
#: README and llm-perf-bench's 4-bit table), MLC's benchmark (not read: the rate assumed), LMDeploy's
#: profile_generation.py (the tokens after the first), llama-bench's tg128.
DECODE_STEPS_ONLY = {"ibm-compile-llama2": "median latency", "llm-perf-bench-4bit": "test_inference.py",
                     "llm-perf-bench-fp16": "mlc_chat.cli.benchmark", "lmdeploy-w4a16": "profile_generation.py",
                     "llamacpp-pr4766": "llama-bench", "exllamav2-readme": "test_inference.py",
                     "autoawq-v0.1.6": "examples/benchmark.py at 5c7e368", "tinychat-b76fab6": "ms/token",
                     "llamacpp-pr6017": "llama-bench", "llamacpp-issue2641": "eval time",
                     "exllama-v1": "test_benchmark_inference.py", "llamacpp-pr6766": "eval time",
                     "llamacpp-issue6763": "eval tokens per second", "autoawq-docs": "examples/benchmark.py",
                     "llm-perf-bench-pr1": "test_benchmark_inference", "nim-bench-llm-1.0.0": "ITL",
                     "mlc-blog-multigpu-2023": "llm-perf-bench-4bit", "pytorch-blog-gemlite": "gen throughput",
                     "bnb-benchmarking-0.45": "optimum-benchmark's latency scenario",
                     "autoawq-d6ac3be": "examples/benchmark.py", "xiongjiedai-llamacpp": "eval time",
                     "calm-readme": "src/run.c",
                     # session 38's quantized rows (wt38_unseend2): oobabooga's 800 / (evaluation time), AutoAWQ's
                     # benchmark.py in PRs #320 and #365
                     "oobabooga-quant-2023": "800 / (evaluation time)", "autoawq-pr320": "examples/benchmark.py",
                     "autoawq-pr365": "examples/benchmark.py",
                     # session 39's unseen rows (wt39_unseend): vLLM PR #53060's TPOT of a prefix-cached decode phase
                     "vllm-pr53060-h100pcie": "TPOT", "vllm-pr53060-a100pcie": "TPOT",
                     # session 40's unseen rows (wt40_unseend2): llama.cpp PR #12183's generation phase
                     "llamacpp-pr12183": "Gen phase tok/sec",
                     # session 41's unseen rows (wt41_unseend): llama.cpp's eval time (December 2023), ExLlama's
                     # script at 2562100
                     "xiongjiedai-llamacpp-2023": "eval time", "exllama-2562100": "test_benchmark_inference.py",
                     # session 42's unseen rows (wt42_unseend): llm-perf-bench's multi-GPU 4-bit MLC column
                     "llm-perf-bench-4bit-multi": "mlc_chat.cli.benchmark",
                     # session 42's second batch (wt42_unseend2): llama.cpp PR #16834's llama-bench tgN
                     "llamacpp-pr16834": "llama-bench",
                     # session 43's unseen rows (wt43_unseend): ExLlamaV2's test_inference.py -s after CUDA graphs,
                     # optimum-benchmark's short report (batch x (new_tokens - 1) / Decode Latency)
                     "exllamav2-readme-61e3092": "test_inference.py", "optimum-benchmark-llamas": "Decode Throughput",
                     # session 44's unseen rows (wt44_unseend): AutoAWQ's benchmark.py in issues #276 and #645 and
                     # PR #656 (the median decode step; --pretrained's steps one-token forwards with no cache)
                     "autoawq-issue276": "examples/benchmark.py", "autoawq-issue276-fp16": "examples/benchmark.py",
                     "autoawq-issue645": "examples/benchmark.py", "autoawq-pr656": "examples/benchmark.py",
                     # session 45's unseen rows (wt45_unseend): the serving benchmarks' TPOT at a concurrency (SGLang's
                     # bench_serving, vLLM's bench serve, AccelMark's interactive loadgen, InferenceBench's closed loop)
                     "sglang-b200-gist": "TPOT", "vultr-b200-vllm": "TPOT", "accelmark-a": "tpot_ms_p50",
                     "accelmark-f": "tpot_ms_p50", "accelmark-d": "tpot_ms_p50", "accelmark-b": "tpot_ms_p50",
                     "accelmark-g": "tpot_ms_p50", "accelmark-vllm020": "tpot_ms_p50",
                     "inferencebench-qwen72b-h100": "tpot_p50_ms", "inferencebench-llama8b-h100": "tpot_p50_ms",
                     # session 46's unseen rows (wt46_unseend): InferenceX's benchmark_serving.py mean TPOT at a
                     # concurrency (its per-request (latency - ttft) / (output_len - 1))
                     "inferencex-gptoss-h100": "mean_tpot_ms", "inferencex-dsr1-h200": "mean_tpot_ms"}
#: The sources whose tokens/s counts the prompt's tokens too (Qwen3's docs: (prompt + generation) / time; premAI's
#: bench.py: len(output[0]) / delta, the prompt's ids among the output's).
PROMPT_COUNTED = ("qwen3-speed-hf", "qwen3-speed-sglang", "premai-a100", "hamel-latency-2023-hf")  # the last: hf/bench.py's
# generated_ids.shape[1]


def test_every_decode_source_states_the_rate_its_script_measures():
    """gpt-fast's and torchao's generate.py divide the new tokens by the time of generate(), the
    prefill included (AMD's blog's copy too); vLLM's benchmark_latency.py times llm.generate; Qwen's
    speed benchmark times generate(): end to end, all but Qwen3's tables, which count the prompt too, and the
    IBM blog's median latency a token, the decode steps' own rate (no script of its stated commit read)."""
    data, names = _decode_sources()
    assert names == sorted(SCRIPTS.keys() | set(DECODE_STEPS_ONLY))
    for name in names:
        source = data["sources"][name]
        if name in DECODE_STEPS_ONLY:
            assert source["rate"] == "decode" and DECODE_STEPS_ONLY[name] in source["rate_source"]
            continue
        expected = "prompt_and_generation" if name in PROMPT_COUNTED else "end_to_end"
        assert source["rate"] in DECODE_RATES and source["rate"] == expected
        path, commit = SCRIPTS[name]
        assert path in source["rate_source"]
        assert commit is None or re.search(commit + "[0-9a-f]*", source["rate_source"])


@pytest.mark.parametrize("run_id", ["gpt-fast llama2-7b bf16", "gpt-fast llama2-7b tp2",
                                    "amd-vllm llama3.1-70b fp8 tp8 batch 8"])
def test_a_decode_rows_rate_is_its_sources_quantity(run_id):
    """The row's end-to-end rate is gen tokens over the prefill and gen - 1 steps (a sequence's);
    the same row read as a decode rate is gen - 1 tokens over the steps alone."""
    from costmodel.layout.timing import generation_decode_seconds, simulate_decode

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    source = data["sources"][run_id.split()[0]]
    cfg, hw, s, quantization = decode_setup(run, source)
    gen = s["gen"]
    # gpt-fast's rows are compiled (session 39: torch.compile replayed from CUDA graphs, the prefill eager), which the
    # kernel model alone times; the vLLM row keeps the roofline
    model, compiled = ("kernels", {"compiled": True, "eager_prefill": True}) if s["compiled"] else ("roofline", {})
    if run["tp"] == 1:
        result = sim.simulate_inference(cfg, hw, prompt=s["prompt"], gen=gen, batch=s["batch"], dtype=s["dtype"],
                                        attention=s["attention"], kv_cache=s["kv_cache"], cuda_graphs=s["cuda_graphs"],
                                        quantization=quantization, time_model=model,
                                        implementation=s["implementation"], **compiled)
        prefill, steps = result["prefill"]["seconds"], result["decode"]["decode_seconds"]
    else:
        from reports.published_decode import decode_layout

        workload = Workload(seq_len=s["prompt"], gen_tokens=gen, batch=s["batch"], dtype=s["dtype"],
                            attention=s["attention"], precision="pure", kv_cache=s["kv_cache"], **quantization)
        layout = decode_layout(run, source)
        prefill = simulate_decode(cfg, workload, layout, hw, cuda_graphs=s["cuda_graphs"], time_model=model,
                                  implementation=s["implementation"], **compiled)["prefill"]["seconds"]
        steps = generation_decode_seconds(cfg, workload, layout, hw, None, model, s["cuda_graphs"], bool(compiled),
                                          s["implementation"])
    assert decode_run(run, source, model) == pytest.approx(gen / (prefill + steps), rel=1e-12)
    assert decode_run(run, dict(source, rate="decode"), model) == pytest.approx((gen - 1) / steps, rel=1e-12)
