"""One serving replica: the profile of a model's formats under an engine, the options checked, the KV
cache sized, the scheduler class and the StepTime built (build_replica), and the setup dict that says
what was chosen. serve (api.py), plan --serve's search (capacity.py) and the published serving rows
build their replicas here."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ..checkpoint import checkpoint_kept, inference_layout, inference_weights
from ..config import ConfigError, show
from ..decode_codes import runs_classes, serving_cache, serving_code
from ..attention_kernels import DEFAULT_KERNEL, DEFAULT_SERVING_BACKEND, kernel_entry, serving_kernel
from ..hardware import time_model_for
from ..layout.tensor_split import spreads
from ..kernel_rates import kernel_facts
from ..quantized_matmul import runs_w8a8
from .. import spec
from ..spec import MLA_FORMS
from ..tree import check_weight_scope
from .graphs import engine_graphs
from .host_time import (NO_HOST_TIME, RELEASE_PREFIX, SCHEDULER_ENGINES, host_time as host_time_of,
                        host_time_schedulers, profile_for)
from .kv_paging import PAGED_SCHEDULERS, kv_paging
from .kvcache import BlockPool, cache_sizing, check_block_size, profile_run_facts
from .budgets import default_budget
from .scheduler_state import check_caps
from .schedulers import SCHEDULERS
from .sglang import max_running_requests, mem_fraction_static, sglang_release
from .state_slots import STATE_PREFIX_NOTE, check_ssm_cache_dtype, vllm_layer_states, with_state_traffic
from .host_step import host_bound, host_fields, refuse_uncounted_parts
from .sampler import check_sampling, with_sampler
from .profile import held_weights_note
from .steptime import StepTime, check_tensor_parallel_groups, serving_profile
from .workload import check_whole


PAGED_PREFIX_NOTE = ("the simulator shares no prefix over layer-group block tables (kv_paging.py); vLLM's hybrid "
                     "KV cache manager caches prefixes per group, which is not modelled")


def require_decoder_only(cfg: Any) -> None:
    """The engines serve decoder-only models: anything else is one line."""
    if cfg.architecture != "decoder" or not cfg.n_decoder_layers:
        raise ConfigError(f"serving simulates decoder-only models; {cfg.name} is {cfg.architecture}.")


def default_block_size(scheduler: str) -> int:
    """serve's --block-size when not given: 16 tokens (vLLM's default), 1 under sglang (SGLang's TokenToKVPool pages
    single tokens)."""
    return 1 if scheduler == "sglang" else 16


def engine_release_for(scheduler: str, engine_release: str | None, pp: int = 1) -> Any:
    """The SGLang release the sglang scheduler runs (sglang.sglang_release; None under another scheduler), or a
    ConfigError: a release named for another scheduler, or pipeline stages those releases cannot launch."""
    if scheduler != "sglang":
        if engine_release is not None:
            raise ConfigError(f"--engine-release names an SGLang release; the {scheduler} scheduler takes none.")
        return None
    release = sglang_release(engine_release)
    if pp != 1:  # it ran a layout those releases cannot launch, mem_fraction_static taken by tp alone
        raise ConfigError(f"--pp {pp}: SGLang {release.tag} has no pipeline parallelism (server_args.py's ServerArgs "
                          "holds tp_size and dp_size, no pp_size, at v0.3.0 and v0.4.0); serve --scheduler sglang "
                          "splits a replica by --tp alone (--replicas for more copies).")
    return release


def replica_profile(cfg: Any, scheduler: str = "vllm", *, weight_dtype: str | None = None,
                    kv_dtype: str | None = None, attention: str = "flash", mla: str = "absorbed",
                    fp8_gemm: str = spec.DEFAULT_FP8_GEMM, weight_group: int | None = None,
                    quant_layout: str = spec.DEFAULT_QUANT_LAYOUT, decode_code: str | None = None) -> Any:
    """The serving profile of cfg's formats under `scheduler`'s engine, or a ConfigError about the
    options (no hardware, tp or budget in it: a search checks them once, before its configurations).
    decode_code: the code that decodes (decode_codes.serving_code: None, the scheduler's engine's)."""
    if mla not in MLA_FORMS:
        raise ConfigError(f"--mla must be {MLA_FORMS.listed()}, got {show(mla)}.")
    if kv_dtype is not None and scheduler.startswith("hf-"):
        raise ConfigError(f"--kv-dtype: transformers' continuous batching ({scheduler}) keeps its paged cache in the "
                          f"model's dtype (no quantized cache in transformers 5.24's continuous_batching); a quantized "
                          f"cache is modelled for the {', '.join(s for s in SCHEDULERS if not s.startswith('hf-'))} "
                          f"schedulers.")
    weight_dtype, weight_group, source = inference_weights(cfg, weight_dtype, weight_group)  # the checkpoint's by default
    quant_layout = inference_layout(cfg, source, quant_layout) or spec.DEFAULT_QUANT_LAYOUT
    code = serving_code(scheduler, decode_code)  # transformers' classes run their experts as they are; the engines route
    profile = serving_profile(cfg, attention, weight_dtype, kv_dtype, mla, fp8_gemm, weight_group, quant_layout=quant_layout,
                              decode_code=code, routed_experts=not runs_classes(code),
                              kv_cache=serving_cache(scheduler, code), weight_kept=checkpoint_kept(cfg, source))
    check_weight_scope(cfg, getattr(profile, "weight_format", None))
    return profile


def require_engine_steps(cfg: Any, profile: Any) -> None:
    """The steps every engine runs, a prefill chunk against a cache and a decode step, built once as
    the replicas build them (tree.CostModel): a model none can run is one line before a search's
    configurations, not each of them set aside for the same reason (OpenAI GPT's class holds no
    cache; DeepSeek-V4's compressed attention has no chunk against one)."""
    from ..tree import CostModel

    for phase in ("decode", "chunk"):
        CostModel(cfg, profile, phase=phase).leaves  # noqa: B018 (built for its refusals)


def backend_kernel(backend: str, hardware: Any, time_model: str | None, dtype: str | None) -> str:
    """The attention_efficiency kernel whose published figures time `backend`'s attention on this hardware
    (serving_kernel), refused in one line where the roofline would time the step (it reads no kernel's
    rates) or where the kernel has no figures on the hardware's architecture (flash-attn3 off Hopper)."""
    facts = kernel_facts()
    kernel = serving_kernel(facts["serving_attention_backends"]["backends"], backend)
    if kernel != DEFAULT_KERNEL and time_model_for(hardware, time_model, dtype or hardware.default_dtype) != "kernels":
        raise ConfigError(f"--attention-backend {backend} names a kernel's published rates, which the kernel model "
                          f"reads; the roofline times attention at the hardware's efficiencies: drop one of them.")
    kernel_entry(facts["attention_efficiency"], kernel, hardware.architecture)
    return kernel


def replica_all_reduce(scheduler: str, host_time: str | None) -> str:
    """Whose all-reduce a replica's tensor-parallel group runs (spec.ALL_REDUCES), by the one rule
    (costmodel/collectives.engine_all_reduce): vLLM's custom all-reduce for the vllm and vllm-v0 schedulers
    at the release --host-time names (vllm==0.6.3; a profile or none: a current release), vLLM's for sglang (SGLang
    ran vLLM's kernel at every release), NCCL's for the
    others (Sarathi-Serve's, Orca's, TensorRT-LLM's and static batching's). Whether each call runs it (the
    fabric, its size) is collectives.custom_all_reduce's."""
    from ..collectives import engine_all_reduce

    if scheduler == "sglang":  # SGLang runs vLLM's kernel at every release (engine_all_reduce)
        return engine_all_reduce("sglang")
    text = str(host_time)
    release = text.removeprefix(RELEASE_PREFIX) if text.startswith(RELEASE_PREFIX) else None
    return engine_all_reduce("vllm" if scheduler in SCHEDULER_ENGINES else None, release)


def given_budget(seqs_given: bool, tokens_given: bool, default_source: str) -> str:
    """Where serve's budgets came from: the scheduler's defaults, both typed ("given"), or one typed and the other
    the default ("--max-num-seqs 8" alone read "max-batched-tokens 8192 (given)", though 8,192 was the default)."""
    if seqs_given == tokens_given:
        return "given" if seqs_given else default_source
    return f"{'--max-num-seqs' if seqs_given else '--max-batched-tokens'} given; the other: {default_source}"


def build_replica(cfg: Any, hardware: Any, *, scheduler: str = "vllm", max_num_seqs: int | None = None,
                  max_batched_tokens: int | None = None, block_size: int | None = None,
                  gpu_memory_utilization: float | None = None, num_blocks: int | None = None, tp: int = 1, pp: int = 1,
                  dtype: str | None = None, weight_dtype: str | None = None, kv_dtype: str | None = None,
                  attention: str | None = None, mla: str = "absorbed", fp8_gemm: str = spec.DEFAULT_FP8_GEMM,
                  weight_group: int | None = None, quant_layout: str = spec.DEFAULT_QUANT_LAYOUT,
                  prefix_caching: bool | None = None, num_scheduler_steps: int = 1,
                  efficiency: Any = None, time_model: str | None = None, cuda_graphs: str = "auto",
                  step: StepTime | None = None, attention_backend: str | None = None,
                  sizings: dict | None = None, mamba_ssm_cache_dtype: str = "auto",
                  max_capture_len: int | None = None, host: bool = True,
                  host_time: str = NO_HOST_TIME, decode_kernel: str | None = None,
                  decode_code: str | None = None, sampling: str | None = "random",
                  sampler: str | None = None, all_reduce: str | None = None,
                  engine_release: str | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """The scheduler class's arguments, a StepTime and the setup dict of one replica (a search
    passes the StepTime it built for this hardware and tp, and a dict that keeps the cache
    sizings by token budget). cuda_graphs: "auto" (the scheduler's engine's default: graphs.py
    ENGINE_GRAPHS), "on" (the same; an error where that engine has none) or "off" (eager). attention:
    the kernel; None: flash, or sdpa where FlashAttention-2 does not run (defaults.serving_attention,
    said in the setup's attention_note); a typed flash there is refused. attention_backend: the engine's
    attention backend (kernel_facts.json "serving_attention_backends"; None: flash-attn2), whose kernel's
    published figures time the step's attention call (the kernel model only). max_capture_len: vLLM v0's
    max_seq_len_to_capture (graphs.py; None: its 8,192), the longest sequence a graphed decode step holds.
    host: an eager GPU step of the scheduler's counted code weighs its host (host_step.py); False where the
    schedule stands for another engine's runtime (benchmarks/published_trtllm_static.py: TensorRT-LLM's
    static batching, whose C++ runtime issues no Python ops). host_time: an engine's host time a step
    between forward passes (host_time.json: vllm-v0.5.4, vllm-v0.6.0, vllm-v1, sarathi-serve, each beside its
    own engine's schedulers; none: the GPU's kernels alone),
    the step's `host_time` attribute, which run_replicas hands the event loop (apart from host_step.py's ops,
    which the vLLM schedulers do not take). decode_kernel: the kernel a decode sequence's attention runs where the
    engine's code states one (kernel_facts.json decode_attention_kernels: "trtllm-mmha", TensorRT-LLM v0.6.1's masked
    MHA, as benchmarks/published_trtllm_static.py runs its rows); None: the attention backend's kernel.
    decode_code: the code that decodes (costmodel/decode_codes.py: its KV cache's heads, how its attention reads a
    quantized cache, whether its experts are routed); None: the scheduler's engine's (decode_codes.serving_code).
    sampling: what the requests ask the engine's sampler (sampler.py, sampler_passes.json): "random" (vLLM's
    SamplingParams defaults, temperature 1.0, as its benchmark_throughput sets) or "greedy" (temperature 0, as
    its benchmark_serving sends); each step pays the sampler's passes over its emitting rows' logits; None: no
    sampler priced (a schedule standing for an engine whose sampler was not read). block_size: None, default_block_size's. sampler: whose sampler code runs
    (a key of sampler_passes.json; None: the scheduler's engine's, as the scheduler's name says)."""
    require_decoder_only(cfg)
    block_size = default_block_size(scheduler) if block_size is None else block_size
    if sampling is not None:
        check_sampling(sampling)
    from ..defaults import serving_attention

    attention, attention_note = serving_attention(attention, hardware, cfg.family)
    for option, value in (("--block-size", block_size), ("--tp", tp), ("--pp", pp), ("--num-blocks", num_blocks),
                          ("--max-num-seqs", max_num_seqs), ("--max-batched-tokens", max_batched_tokens)):
        if value is not None:  # from Python: 2.5 sequences or True tokens are refused, not cut (the ranges below)
            check_whole(option, value, None)
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"--scheduler must be one of {', '.join(SCHEDULERS)}, got {show(scheduler)}.")
    check_block_size(block_size)
    if tp < 1:
        raise ConfigError(f"--tp must be at least 1, got {tp}.")
    from ..layout.spec import tensor_split_error

    reason = tensor_split_error(cfg, tp, inference=True)  # as a layout's check: whole heads and widths a rank
    if reason:
        raise ConfigError(f"--tp {tp} {reason}.")
    if num_blocks is not None and num_blocks < max(1, pp):
        raise ConfigError(f"--num-blocks must be at least {max(1, pp)}" + (" (a block a pipeline stage)" if pp > 1
                          else "") + f", got {num_blocks}.")
    if not 1 <= pp <= cfg.pipeline_layers:  # decoder layers as the model's code counts them (Falcon-H1's 3 in 1)
        raise ConfigError(f"--pp must be between 1 and the model's {cfg.pipeline_layers} layers, got {pp}.")
    if scheduler == "static" and max_batched_tokens is not None:  # StaticScheduler never read it
        raise ConfigError("--max-batched-tokens: static batching (generate()) prefills its whole padded batch in one "
                          "step, with no token budget; leave it out (--max-num-seqs sets the batch).")
    seqs, tokens, budget_source = default_budget(scheduler, hardware, cfg.max_positions)
    sglang = scheduler == "sglang"
    release = engine_release_for(scheduler, engine_release, pp)
    if sglang and block_size != 1:
        raise ConfigError(f"--block-size {block_size}: SGLang's pool pages one token at a time (TokenToKVPool); "
                          "--scheduler sglang takes --block-size 1.")
    max_num_seqs = seqs if max_num_seqs is None else max_num_seqs
    max_batched_tokens = tokens if max_batched_tokens is None else max_batched_tokens
    check_caps(1 if max_num_seqs is None else max_num_seqs, max_batched_tokens)
    if scheduler in ("vllm", "vllm-v0") and max_batched_tokens < max_num_seqs:
        raise ConfigError(f"--max-batched-tokens ({max_batched_tokens}) must be at least --max-num-seqs "
                          f"({max_num_seqs}): vLLM refuses a token budget below its sequence cap "
                          f"(SchedulerConfig._verify_args: vllm/config.py in v0, vllm/config/scheduler.py in v1).")
    dtype = dtype or hardware.default_dtype
    hardware.require_peak(spec.CANONICAL_DTYPE.get(dtype, dtype))
    if prefix_caching and scheduler != "vllm":
        raise ConfigError(f"--prefix-caching is modelled for vLLM's scheduler only, not {scheduler}.")
    prefix_caching = scheduler == "vllm" if prefix_caching is None else prefix_caching
    if isinstance(num_scheduler_steps, bool) or not isinstance(num_scheduler_steps, int) or num_scheduler_steps < 1:
        raise ConfigError(f"--num-scheduler-steps must be a whole number of steps, at least 1; got "
                          f"{show(num_scheduler_steps)}.")
    if num_scheduler_steps != 1 and scheduler != "vllm-v0":
        raise ConfigError(f"--num-scheduler-steps (vLLM v0's multi-step scheduling) is modelled for the vllm-v0 "
                          f"scheduler only, not {scheduler}.")
    profile = replica_profile(cfg, scheduler, weight_dtype=weight_dtype, kv_dtype=kv_dtype, attention=attention,
                              mla=mla, fp8_gemm=fp8_gemm, weight_group=weight_group, quant_layout=quant_layout,
                              decode_code=decode_code)
    from ..decode_codes import check_runs_on

    check_runs_on(profile.decode_code, hardware, f"--decode-code {decode_code}" if decode_code else f"--scheduler {scheduler}")
    weight_dtype, _, weight_source = inference_weights(cfg, weight_dtype, weight_group)  # as replica_profile's
    refuse_uncounted_parts(cfg, profile.decode_code, spec.CANONICAL_DTYPE.get(dtype, dtype), profile.attention)
    check_tensor_parallel_groups(cfg, profile, tp)
    from ..config import DTYPE_BYTES, Workload

    paging = kv_paging(cfg, scheduler, block_size)
    check_ssm_cache_dtype(cfg, mamba_ssm_cache_dtype)
    layer_states = vllm_layer_states(scheduler, mamba_ssm_cache_dtype)  # None: transformers' state layout
    sizings = {} if sizings is None else sizings
    utilization_given = gpu_memory_utilization is not None
    if utilization_given and num_blocks is not None:  # the budget sized nothing, and the header named it
        raise ConfigError(f"--num-blocks {num_blocks} sets the KV cache's blocks; --gpu-memory-utilization "
                          f"{gpu_memory_utilization:g} sizes them from the GPU's memory (vLLM's num_gpu_blocks_override "
                          "replaces what it would size): give one of them.")
    if gpu_memory_utilization is None and sglang:  # SGLang's mem_fraction_static default by tp
        gpu_memory_utilization = mem_fraction_static(tp, release)
    if gpu_memory_utilization is None:  # the hardware file's, as simulate's and plan's fits read it (0.9: vLLM's)
        gpu_memory_utilization = hardware.serving_memory_utilization
    profile_run = scheduler if scheduler in profile_run_facts() else None  # vLLM's: its profile run's batch
    key = (max_batched_tokens, max_num_seqs if profile_run else None)
    def sizing_at(utilization: float):  # the KV cache at a --gpu-memory-utilization
        return cache_sizing(
            cfg, profile, DTYPE_BYTES[Workload(dtype=dtype).dtype], hardware.usable_memory_bytes, utilization,
            hardware.memory_reserve_bytes, block_size, min(max_batched_tokens, cfg.max_positions), tp, pp, paging,
            PAGED_SCHEDULERS.get(scheduler), layer_states, profile_run, max_num_seqs, "sglang" if sglang else "vllm")

    if key not in sizings:
        sizings[key] = sizing_at(gpu_memory_utilization)
    sizing = sizings[key]
    if sizing.state_bytes and paging is not None:
        raise ConfigError(f"{cfg.name}: recurrent states beside windowed layers' block tables are not modelled.")
    blocks = sizing.num_blocks if num_blocks is None else num_blocks
    if blocks < pp:
        # a --gpu-memory-utilization typed below what the weights need: the least hundredth that holds a block a stage
        least = next((u / 100 for u in range(math.floor(100 * gpu_memory_utilization) + 1, 101)
                      if sizing_at(u / 100).num_blocks >= pp), None) if utilization_given and num_blocks is None else None
        raise ConfigError(f"{cfg.name} does not leave room for one KV block on {hardware.name} at tp {tp}: "
                          f"weights {sizing.weight_bytes / 2**30:.1f} GiB and activations "
                          f"{sizing.activation_bytes / 2**30:.1f} GiB per GPU against "
                          f"{gpu_memory_utilization:.0%} of {hardware.usable_memory_bytes / 2**30:.4g} GiB less the "
                          f"{hardware.memory_reserve_bytes / 2**20:.0f} MiB reserve; "
                          + (f"raise --gpu-memory-utilization to {least:g} or more, " if least is not None else "")
                          + (f"lower --max-batched-tokens (the activations are sized for a step of "
                             f"{min(max_batched_tokens, cfg.max_positions):,} tokens), "
                             if sizing.activation_bytes > sizing.weight_bytes else "")
                          + f"spread it over more GPUs ({spreads(cfg, tp)}) or store its weights in fewer bytes "
                          "(--weight-dtype).")
    if sglang and max_num_seqs is None:  # max_running_requests from the pool
        max_num_seqs = seqs = max_running_requests(blocks, cfg.max_positions, release)
        check_caps(max_num_seqs, max_batched_tokens)
    graphs = engine_graphs(cuda_graphs, scheduler, max_num_seqs, max_batched_tokens, hardware, max_capture_len)
    backend = DEFAULT_SERVING_BACKEND if attention_backend is None else attention_backend  # '' is refused, not the default
    kernel = backend_kernel(backend, hardware, time_model, dtype)
    if kernel != DEFAULT_KERNEL and attention != "flash":  # the backend is the attention kernel
        raise ConfigError(f"--attention-backend {backend} runs its own FlashAttention kernel; --attention {attention} "
                          f"names another: drop one of them.")
    timed = {"attention_kernel": kernel} if kernel != DEFAULT_KERNEL else {}
    if decode_kernel is not None:  # a decode sequence's attention under a kernel stated from its code (kernel model)
        if time_model_for(hardware, time_model, dtype or hardware.default_dtype) != "kernels":
            raise ConfigError(f"decode kernel {decode_kernel} is the kernel model's; the roofline times attention at "
                              "the hardware's efficiencies: drop one of them.")
        timed["decode_kernel"] = decode_kernel
    all_reduce = all_reduce or replica_all_reduce(scheduler, host_time)  # the engine's, at its release
    if all_reduce not in spec.ALL_REDUCES:
        raise ConfigError(f"all_reduce must be {spec.ALL_REDUCES.listed()}, got {show(all_reduce)}.")
    timed["all_reduce"] = all_reduce
    step = step or StepTime(cfg, hardware, dtype, efficiency, profile, tp, pp, time_model, **timed)
    step = step.with_graphs(graphs)
    if host:  # an eager counted code on a GPU: host_step.py
        step = host_bound(step, cfg, hardware, scheduler, graphs, profile,
                          lambda bare, **more: StepTime(cfg, bare, dtype, efficiency, profile, tp, pp, time_model,
                                                        **timed, **more))
    if sampling is not None:  # (inside the state traffic, whose wrapper a search's second build recognises)
        step = with_sampler(step, sampler or scheduler, sampling, cfg, hardware, efficiency, tp)
    step = with_state_traffic(step, sizing.state_bytes, hardware, efficiency, pp)
    step = with_host_time(step, host_time, scheduler)
    setup = {"model": cfg.name, "hardware": hardware.name, "dtype": step.dtype, "tp": tp, "pp": pp,
             **({"all_reduce": all_reduce} if tp > 1 else {}),
             "time_model": step.time_model, "cuda_graphs": graphs.mode, "cuda_graphs_source": graphs.source,
             **({"max_capture_len": graphs.max_context} if graphs.max_context is not None else {}),
             "scheduler": scheduler, "scheduler_source": SCHEDULERS[scheduler].source,
             "max_num_seqs": max_num_seqs, "max_batched_tokens": max_batched_tokens,
             "budget_source": given_budget(max_num_seqs != seqs, max_batched_tokens != tokens, budget_source),
             "block_size": block_size, "num_blocks": blocks,
             "kv_cache": {**sizing.to_dict(blocks), **({} if num_blocks is None else {"most_blocks": sizing.most_blocks})},
             "weight_dtype": weight_dtype, "weight_group": profile.weight_format.group if weight_dtype else None,
             "weight_dtype_source": weight_source,
             "quant_layout": profile.weight_format.quant_layout if weight_dtype else None,
             "kv_dtype": kv_dtype, "decode_code": profile.decode_code, "attention": attention, "attention_backend": backend,
             **({"attention_note": attention_note} if attention_note else {}),
             "fp8_gemm": fp8_gemm if weight_dtype == "fp8" else None,
             "fp8_gemm_runs": (("w8a8" if runs_w8a8(profile.weight_format, hardware) else "w8a16")
                               if weight_dtype == "fp8" else None),  # what auto chose on this hardware
             "mla": mla if cfg.mla else None,
             "max_model_len": cfg.max_positions,
             **(step.host_time.describe() if step.host_time is not None else {"host_time": NO_HOST_TIME}),
             **({"host_time_asked": host_time, "host_time_engine": SCHEDULER_ENGINES[scheduler].upper()}
                if str(host_time).startswith(RELEASE_PREFIX) else {})}  # a release: what it resolved to, said
    host = host_fields(step, hardware)
    if host:
        setup["host"] = host
    held = held_weights_note(cfg, profile)  # LongCat-Flash: the engine's loader or transformers' class
    if held:
        setup["params_held"], setup["weights_note"] = held
    needed = -(-cfg.max_positions // block_size)  # vLLM v1 starts only if one max_model_len request fits
    if scheduler == "vllm" and paging is None and not sizing.state_bytes and blocks < needed:
        setup["max_model_len_note"] = (
            f"vLLM v1 would not start this engine: one request of max_model_len {cfg.max_positions:,} needs "
            f"{needed:,} blocks, the cache holds {blocks:,} ({blocks * block_size:,} tokens; "
            "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory); it runs with vLLM's "
            f"--max-model-len {blocks * block_size:,} or less, as simulated here")
    if paging is not None and prefix_caching:  # (scheduler_state.py: no prefix shared over the groups' tables)
        prefix_caching = False
        setup["prefix_caching_note"] = PAGED_PREFIX_NOTE
    if sizing.state_bytes:
        setup["state_layout"] = "transformers" if layer_states is None else "vllm"
        setup["mamba_ssm_cache_dtype"] = None if layer_states is None else mamba_ssm_cache_dtype
    if sizing.state_bytes and prefix_caching:
        prefix_caching = False
        setup["prefix_caching_note"] = STATE_PREFIX_NOTE
    options = {**({"prefix_caching": True} if prefix_caching else {}),
               **({"release": release.tag} if sglang else {}),
               **({"num_scheduler_steps": num_scheduler_steps} if num_scheduler_steps != 1 else {})}
    cls = partial(SCHEDULERS[scheduler], **options) if options else SCHEDULERS[scheduler]
    if paging is not None:
        cls = _paged(cls, paging)
        setup["kv_paging"] = paging.describe()
    if sizing.state_bytes:
        cls = _with_states(cls, sizing.state_blocks)
    setup["prefix_caching"] = prefix_caching
    setup["num_scheduler_steps"] = num_scheduler_steps
    if sglang:
        setup["engine_release"], setup["engine_release_source"] = release.tag, release.source
    return (cls, blocks, block_size, max_num_seqs, max_batched_tokens), step, setup


def with_host_time(step: Any, version: str | None, scheduler: str) -> Any:
    """A copy of the step model carrying an engine's host time (host_time.py; None for none), refused
    beside a scheduler whose engine the version does not time (host_time.json's "schedulers")."""
    import copy

    host = host_time_of(profile_for(version, scheduler))
    if host is not None and scheduler not in host_time_schedulers(host.version):
        raise ConfigError(f"--host-time {version} is the host time a step of "
                          f"{' and '.join(host_time_schedulers(host.version))}'s engine, not {scheduler}'s.")
    hosted = copy.copy(step)
    hosted.host_time = host
    return hosted


def _paged(cls: Any, paging: Any) -> Any:
    """The scheduler class, building on a pool that pages the model's layer groups."""
    def build(pool: BlockPool, *args: Any) -> Any:
        pool.paging = paging
        return cls(pool, *args)
    return build


def _with_states(cls: Any, count: int) -> Any:
    """The scheduler class, building on a pool whose running requests each hold `count` state blocks."""
    def build(pool: BlockPool, *args: Any) -> Any:
        pool.state_blocks = count
        return cls(pool, *args)
    return build
