"""Published decoding runs beside the model (costmodel/published_runs.json's decoding rows): each row's
setup as its source states it (decode_setup: model, hardware, settings, quantization), its tokens/s a
sequence under its source's rate (decode_run: simulate_inference on one GPU, the layout model's
simulate_decode under tensor parallelism, vLLM's host time where a row states its release), and the
tensor-parallel run itself (decode_layout_run). Split from reports/published_runs.py (the training
rows, the tables and the summaries), which lists these rows with the others (other_runs)."""

from __future__ import annotations

from typing import Any

from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.layout import Layout

from .published_rows import run_hardware, run_model, stated


def decode_layout(run: dict[str, Any], source: dict[str, Any]) -> Layout:
    """The layout of a tensor-parallel decode run: its tp, its all-reduce (decode_all_reduce), and whether
    its code splits the embedding and head by the vocabulary (gpt-fast's tp.py does not: "vocab_parallel": false)."""
    return Layout(tp=run["tp"], all_reduce=decode_all_reduce(run, source),
                  vocab_parallel=source.get("vocab_parallel", True))


def decode_all_reduce(run: dict[str, Any], source: dict[str, Any]) -> str:
    """Whose all-reduce a decode run's tensor-parallel group runs (spec.ALL_REDUCES): the one its source
    names (gpt-fast: ENABLE_INTRA_NODE_COMM=1, "intra-node"), else its engine's at its release by the one
    rule (costmodel/collectives.engine_all_reduce: vLLM's custom all-reduce from v0.4.1, "vllm-custom"), the
    engine a row states as "vllm_release" (vLLM) or "engine" (vLLM's main branch, SGLang), off where the
    source says disable_custom_all_reduce; TensorRT-LLM's own ("trtllm-custom") where a row states a
    "trtllm_release" whose trtllm-build enabled it by default (0.8 to 0.11); NCCL's for every other row."""
    from costmodel.collectives import engine_all_reduce

    named = stated(run, source, "all_reduce")
    if named is not None:
        return named
    disabled = bool(stated(run, source, "disable_custom_all_reduce"))
    if (trtllm := stated(run, source, "trtllm_release")) is not None:
        return engine_all_reduce("tensorrt-llm", trtllm, disabled)
    release = stated(run, source, "vllm_release")
    engine = "vllm" if release is not None else stated(run, source, "engine")
    return engine_all_reduce(engine, release, disabled)


#: What a decode run may state for itself over its source's setup (a table's eager row beside its
#: compiled ones: cuda_graphs false; an fp32 row: dtype), and the quantization keys it may carry
#: (kv_dtype: a quantized KV cache, torchao's --kv_cache_quantization as int8). decode_kernel: the
#: kernel a decode step's attention runs where the source's engine states one from its code
#: (kernel_facts.json "decode_attention_kernels": TensorRT-LLM v0.6.1's masked MHA); none: the fused one.
#: sampling: how the loop picks its token (costmodel/generate_windows.SAMPLINGS; one GPU's simulate only: a
#: tensor-parallel run stating another than greedy is refused, decode_layout_run); none: greedy.
#: mla: latent attention's form in the decode steps (spec.MLA_FORMS; decode_mla: its engine's where none is stated).
DECODE_SETTINGS = ("prompt", "gen", "batch", "attention", "kv_cache", "cuda_graphs", "dtype", "implementation",
                   "decode_kernel", "sampling", "compiled", "eager_prefill", "mla")


def decode_mla(run: dict[str, Any], source: dict[str, Any]) -> str:
    """Latent attention's form (spec.MLA_FORMS) a decode run's steps take: the one it or its source states, else
    "absorbed" where SGLang runs it (its "engine"), else transformers' naive form (spec.DEFAULT_MLA, simulate's).
    SGLang's DeepSeek attention (sgl-project/sglang python/sglang/srt/models/deepseek_v2.py at 00114aef19,
    DeepseekV2AttentionMLA.dispatch_attn_forward_method) takes AttnForwardMethod.MLA ('Use absorbed multi-latent
    attention') for every decode batch on CUDA under each of its backends (flashinfer, fa3, triton; MHA only for
    a prefill without cached prefix), and forward_absorb_prepare / forward_absorb_core fold W_UK into the queries
    (bmm with w_kc), attend the cached latents as one KV head of kv_lora_rank + qk_rope_head_dim (attn_mqa) and
    fold W_UV after it (bmm with w_vc): the absorbed form (docs/serving.md, 'Latent attention'). Only a model with
    latent attention reads it."""
    from costmodel.spec import DEFAULT_MLA, DEFAULT_SERVE_MLA

    named = stated(run, source, "mla")
    if named is not None:
        return named
    return DEFAULT_SERVE_MLA if stated(run, source, "engine") == "sglang" else DEFAULT_MLA
DECODE_QUANTIZATION = ("weight_dtype", "weight_group", "weight_bits", "fp8_gemm", "kv_dtype")


def decode_setup(run: dict[str, Any], source: dict[str, Any]) -> tuple[ModelConfig, Any, dict[str, Any], dict[str, Any]]:
    """One decode run as the model sees it: its model (published_rows.run_model: the run's "preset" where the
    source's model has the sizes of a preset under another name, Llama 3.1 8B as llama3-8b, with the run's
    config_changes: AutoAWQ's fused cache as a window), its hardware, its
    settings (DECODE_SETTINGS: the run's own, else its source's; dtype bf16 where neither states
    one) and its quantization (weight dtype, group, fp8 GEMM, KV dtype; the head too where the source
    says quantize_head; int8 and int4 in the layout the source's code stores, the run's or its source's quant_layout). A run's
    cache_size (torchao's --cache_size: a static cache every step attends whole) is a setting too
    (simulate_inference's cache_size; None where the run states none), and so are "compiled" (torch.compile's
    fused kernels, simulate --compile; with cuda_graphs replayed from a graph, as mode "reduce-overhead" runs
    them: false where neither states it) and "eager_prefill" (the prefill eager beside compiled steps,
    simulate --eager-prefill: gpt-fast's generate.py without --compile_prefill; false where neither states it),
    and "mla" (latent attention's form, simulate --mla: decode_mla's)."""
    cfg = run_model(run)
    settings = {key: stated(run, source, key) for key in DECODE_SETTINGS}
    settings["dtype"] = settings["dtype"] or "bf16"
    settings["cache_size"] = run.get("cache_size")  # torchao's --cache_size
    settings["implementation"] = settings["implementation"] or "transformers"
    settings["sampling"] = settings["sampling"] or "greedy"
    settings["compiled"] = bool(settings["compiled"])  # torch.compile's kernels (graphed where cuda_graphs): --compile
    settings["eager_prefill"] = bool(settings["eager_prefill"])  # simulate --eager-prefill
    settings["mla"] = decode_mla(run, source)  # latent attention's form: simulate --mla
    quantization = {k: run[k] for k in DECODE_QUANTIZATION if k in run}
    if "weight_dtype" in quantization and source.get("quantize_head"):  # gpt-fast's, torchao's head
        quantization["quantize_head"] = True
    layout = run.get("quant_layout", source.get("quant_layout"))  # a run's own: the kernel its id names (AutoAWQ's)
    if quantization.get("weight_dtype") in ("int8", "int4") and layout:  # how they store and run it
        quantization["quant_layout"] = layout
    return cfg, run_hardware(source, run), settings, quantization


#: What a decode source's tokens/s divides (its "rate" in published_runs.json, with "rate_source"):
#: "end_to_end", every new token over the prefill and the gen - 1 decode steps after the prefill's
#: first token (gpt-fast's and torchao's generate.py time generate(); vLLM's benchmark_latency.py
#: times llm.generate); "decode", the gen - 1 steps' tokens over the steps' seconds alone;
#: "prompt_and_generation", the prompt's and the new tokens over the end-to-end seconds (Qwen3's
#: speed benchmark: Speed = (tokens_prompt + tokens_generation) / time).
DECODE_RATES = ("end_to_end", "decode", "prompt_and_generation")


def sequence_rate(generation: dict[str, Any], rate: str, prompt: int, gen: int, batch: int) -> float:
    """One sequence's tokens/s under a source's rate (DECODE_RATES), from a generation's rates
    (costmodel/roofline.generation_rates): the prompt_and_generation rate counts the prompt's tokens
    too over the same end-to-end seconds."""
    if rate == "prompt_and_generation":
        return generation["end_to_end_tokens_per_second"] / batch * (prompt + gen) / gen
    return generation[f"{rate}_tokens_per_second"] / batch


def vllm_host_time(run: dict[str, Any], source: dict[str, Any]) -> Any:
    """The vLLM host time a step (costmodel/serving/host_time.py, the rule serve's published vLLM runs take
    theirs by: host_time_for_release) of a decode run whose source or row states its vLLM release and engine
    ("vllm_release", "vllm_engine": v0 or v1); None where neither is stated or the release's rule gives none."""
    from costmodel.serving.host_time import host_time, host_time_for_release

    release = stated(run, source, "vllm_release")
    if release is None:
        return None
    return host_time(host_time_for_release(stated(run, source, "vllm_engine"), release))


def hosted_generation(host: Any, generation: dict[str, Any], batch: int, gen: int, shortest_s: float) -> dict[str, Any]:
    """A generation's rates (costmodel/roofline.generation_rates) with the engine's host time on each step
    (HostTime.static_run: the prefill's step and each decode step of `batch` sequences; shortest_s: the first
    decode step's kernels)."""
    from costmodel.roofline import generation_rates

    decode_s = generation["decode_seconds"]
    prefill_s, decode_s = host.static_run(generation["end_to_end_seconds"] - decode_s, decode_s,
                                          generation["decode_steps"], shortest_s, batch)
    return generation_rates(batch, gen, prefill_s, decode_s)


def decode_run(run: dict[str, Any], source: dict[str, Any], time_model: str) -> float:
    """Tokens per second of one sequence, the quantity its source's script measures (the source's
    "rate", DECODE_RATES), from decode_generation's generation."""
    generation, s = decode_generation(run, source, time_model)
    return sequence_rate(generation, source["rate"], s["prompt"], s["gen"], s["batch"])


def decode_generation(run: dict[str, Any], source: dict[str, Any], time_model: str) -> tuple[dict[str, Any], dict]:
    """One decode run's generation (costmodel/roofline.generation_rates: its prefill, its gen - 1 steps, their
    seconds and rates) and its settings (decode_setup): without tensor parallelism simulate_inference's, with it
    the layout model's (simulate_decode's "generation"); a vLLM row that states its release with vLLM's host
    time on each step (vllm_host_time, hosted_generation). validate/decode_gap.py splits it."""
    from costmodel.config import ConfigError
    from costmodel.roofline import simulate_inference

    rate = source["rate"]
    if rate not in DECODE_RATES:
        raise ValueError(f"{run['id']}: its source's rate must be one of {DECODE_RATES}, got {rate!r}.")
    cfg, hardware, s, quantization = decode_setup(run, source)
    host = vllm_host_time(run, source)  # vLLM's CPU time a step, where the row states its release
    if run["tp"] > 1:
        if s["cache_size"] is not None:
            raise ConfigError(f"{run['id']}: a static cache_size is simulate_inference's, one GPU's; "
                              "the layout model's decode attends the tokens so far.")
        layout_run = decode_layout_run(run, source, time_model, prefill=True)
        generation = layout_run["generation"]
        if host is not None:  # the token's step: the first decode step's (its context the prompt's)
            generation = hosted_generation(host, generation, s["batch"], s["gen"],
                                           layout_run["token"]["seconds_per_token"])
        return generation, s
    result = simulate_inference(cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=s["batch"],
                                dtype=s["dtype"], attention=s["attention"], kv_cache=s["kv_cache"],
                                cuda_graphs=s["cuda_graphs"], quantization=quantization, time_model=time_model,
                                implementation=s["implementation"], decode_kernel=s["decode_kernel"],
                                sampling=s["sampling"], cache_size=s["cache_size"], compiled=s["compiled"],
                                eager_prefill=s["eager_prefill"], mla=s["mla"])
    generation = result["decode"]
    if host is not None:
        first = generation["first_token"]["seconds"] if generation["decode_steps"] else 0.0  # no step: none read
        generation = hosted_generation(host, generation, s["batch"], s["gen"], first)
    return generation, s


def decode_layout_run(run: dict[str, Any], source: dict[str, Any], time_model: str,
                      prefill: bool = False) -> dict[str, Any]:
    """A tensor-parallel decode run as its source states it (decode_setup, decode_layout), through
    the layout model's simulate_decode (quantized weights: each rank's shards as stored); with
    `prefill`, the prefill and the generation's steps and rates too."""
    from costmodel.layout.timing import simulate_decode

    cfg, hardware, s, quantization = decode_setup(run, source)
    if s["sampling"] != "greedy":  # the layout's decode counts greedy's step: a sampled run was timed as greedy
        raise ConfigError(f"sampling {s['sampling']!r} is counted by one GPU's simulate only (generate_windows); "
                          f"the layout model's decode step is greedy's, tp {run['tp']} here.")
    workload = Workload(seq_len=s["prompt"], gen_tokens=s["gen"], batch=s["batch"], dtype=s["dtype"],
                        attention=s["attention"], precision="pure", kv_cache=s["kv_cache"], mla=s["mla"],
                        **quantization)
    return simulate_decode(cfg, workload, decode_layout(run, source), hardware, cuda_graphs=s["cuda_graphs"],
                           time_model=time_model, prefill=prefill, implementation=s["implementation"],
                           decode_kernel=s["decode_kernel"], compiled=s["compiled"], eager_prefill=s["eager_prefill"])
