"""`plan --serve --rate R --slo-ttft T --slo-tpot P`: the deployments that serve R requests per
second within the SLOs (p99 TTFT and p99 TPOT), ranked by GPU count, then by $/h where the
hardware file gives a price.

The search space: hardware presets x tensor-parallel sizes (divisors of the KV heads, or multiples
that replicate them, split.kv_heads_per_rank; within a node) x pipeline stages (pps; default 1) x max_num_seqs x the token budget (chunk size). For each, the fewest replicas: requests are
routed round-robin, so a replica sees rate / replicas; its p99s are simulated at that rate for
doubling replica counts, then bisected. Each configuration is one task in a local process pool
(fork: the step-time models, built once per (hardware, tp) in the parent, are inherited; handed out
in chunks of one model's configurations, so that a worker fills each model's tables once), or,
with `ray_address` (`plan --serve --rate --ray ADDRESS`), in a Ray cluster: one Ray task per
(hardware, tp, pp) builds that step-time model once, as the parent does, and runs the same
per-configuration search (`_task`) on each of its configurations, so both paths rank the same
results. Ray is the optional extra `pip install '.[ray]'`; it is imported only on that path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..checkpoint import inference_weights
from ..layout.spec import tensor_split_error
from ..config import ConfigError, show
from ..cost import check_price, serving_cost
from ..leaves import require_chunks
from ..quantized_matmul import runs_w8a8
from ..spec import DEFAULT_GEN_TOKENS
from ..attention_kernels import DEFAULT_SERVING_BACKEND
from .api import check_drawn_lengths, run_replicas
from .replica import (backend_kernel, build_replica, engine_release_for, replica_profile, require_decoder_only,
                      require_engine_steps)
from .metrics import sustained_output
from .workload import Lengths, check_requests, poisson
from .state_slots import check_ssm_cache_dtype

MAX_REPLICAS = 256


@dataclass(frozen=True)
class Target:
    rate: float
    slo_ttft: float
    slo_tpot: float
    requests: int = 300
    prompt: str = "512"
    output: str = str(DEFAULT_GEN_TOKENS)
    seed: int = 0


_REPLICAS: dict[tuple, Any] = {}  # (hardware, tp, pp, seqs, tokens) -> (replica, step, setup), filled before forking


def _p99(key: tuple, target: Target, replicas: int,
         max_model_len: int) -> tuple[float, float, float, float, float, float, tuple[float, str]]:
    """p99 TTFT and TPOT of one replica at rate / replicas, its throughput in requests/s and in
    output tokens/s (metrics.summarize's: the tokens over the first arrival to the last finish), and
    its requests' p99 end-to-end latency beside the time they arrive over (requests x replicas /
    rate): a window shorter than the latency is a burst, every request in flight at once, whose
    p99s are bounded by the request count, not a sustained rate (sustained); and the output rate it
    sustains with its basis (metrics.sustained_output: the offered rate where it keeps up), which the
    price per token is over."""
    import numpy as np

    replica, step, _ = _REPLICAS[key]
    requests = poisson(target.rate / replicas, target.requests, Lengths.parse(target.prompt),
                       Lengths.parse(target.output), target.seed)
    rows, _, _ = run_replicas(requests, replica, step, 1, max_model_len, record=False)
    ttft = np.percentile([r["ttft_s"] for r in rows], 99)
    tpots = [r["tpot_s"] for r in rows if not math.isnan(r["tpot_s"])]
    tpot = float(np.percentile(tpots, 99)) if tpots else 0.0
    span = max(r["finish_s"] for r in rows) - min(r["arrival_s"] for r in rows)
    e2e = float(np.percentile([r["e2e_s"] for r in rows], 99))
    return (float(ttft), tpot, len(rows) / span, sum(r["output_tokens"] for r in rows) / span, e2e,
            target.requests * replicas / target.rate, sustained_output(rows, target.rate / replicas))


def sustained(figures: tuple) -> bool:
    """Whether a point measured a sustained rate: its requests arrive over at least their p99
    end-to-end latency (`plan --serve --rate 1e9 --requests 50` met the SLOs on one H100: 50 requests
    at once, each served within 0.6 s, is no rate of 1e9 a second)."""
    return figures[5] >= figures[4]


def unloaded_latencies(key: tuple, target: Target) -> tuple[float, float]:
    """The latencies of a request alone (no queue, batch 1): the prefill of the longest prompt in
    one step, and the decode step at its last context. No replica count beats these."""
    _, step, _ = _REPLICAS[key]
    (_, _, _, _, tokens) = _REPLICAS[key][0]
    prompt = max(1, _shortest(target.prompt))
    output = max(1, _shortest(target.output))
    chunks = [min(tokens, prompt - done) for done in range(0, prompt, tokens)]
    ttft = sum(step.seconds([q], [done + q]) for done, q in zip(range(0, prompt, tokens), chunks))
    return ttft, step.seconds([1], [prompt + output])


def _shortest(lengths: str) -> int:
    """The smallest length a distribution gives (the optimistic bound)."""
    parsed = Lengths.parse(lengths)
    return {"fixed": parsed.mean, "uniform": parsed.low, "lognormal": parsed.low}.get(
        parsed.kind, min(parsed.values) if parsed.values else 1)


def fewest_replicas(key: tuple, target: Target, max_model_len: int) -> dict[str, Any]:
    """The smallest replica count that meets both SLOs (doubling, then bisection)."""
    floor = unloaded_latencies(key, target)
    if floor[0] > target.slo_ttft or floor[1] > target.slo_tpot:
        return {"replicas": None, "reason": f"unreachable: even alone a request takes {floor[0]:.3f} s to its "
                                            f"first token and {floor[1]:.4f} s per output token"}
    meets = lambda r: (lambda p: (p[0] <= target.slo_ttft and p[1] <= target.slo_tpot and sustained(p), p))(  # noqa: E731
        _p99(key, target, r, max_model_len))
    low, high, tried = 0, 1, {}
    while True:
        ok, figures = meets(high)
        tried[high] = figures
        if ok:
            break
        if not sustained(figures) and high < MAX_REPLICAS:  # more replicas stretch each one's window
            low, high = high, min(2 * high, MAX_REPLICAS)
            continue
        if not sustained(figures):
            return {"replicas": None, "reason": f"a burst, not a sustained rate: {target.requests} requests at "
                                                f"{target.rate:g} / {high} replicas arrive within {figures[5]:.3g} s, "
                                                f"less than their p99 end-to-end latency ({figures[4]:.3g} s); "
                                                "raise --requests"}
        if high >= MAX_REPLICAS or (high > 1 and sustained(tried[low]) and figures[:2] >= tried[low][:2]):
            return {"replicas": None, "reason": f"not met with {high} replicas (more do not help)"}
        low, high = high, min(2 * high, MAX_REPLICAS)
    while high - low > 1:
        middle = (low + high) // 2
        ok, figures = meets(middle)
        tried[middle] = figures
        low, high = (low, middle) if ok else (middle, high)
    ttft, tpot, throughput, output_rate = tried[high][:4]
    sustained_rate, basis = tried[high][6]
    return {"replicas": high, "p99_ttft_s": ttft, "p99_tpot_s": tpot, "replica_requests_per_s": throughput,
            "replica_output_tokens_per_s": output_rate, "replica_sustained_output_tokens_per_s": sustained_rate,
            "sustained_basis": basis}


def _task(args: tuple) -> dict[str, Any]:
    key, target, max_model_len = args
    try:
        return {"key": key, **fewest_replicas(key, target, max_model_len)}
    except ConfigError as error:
        return {"key": key, "replicas": None, "reason": str(error)}


def _group_task(cfg: Any, hardware: Any, scheduler: str, keys: list[tuple], target: Target,
                replica_options: dict[str, Any]) -> list[dict[str, Any]]:
    """One (hardware, tp, pp): build its replicas as plan_capacity does (one StepTime, one sizing
    per token budget), then each configuration's `_task`, in `keys` order (a Ray worker's job)."""
    step, sizings = None, {}
    for key in keys:
        _, tp, pp, seqs, tokens = key
        _REPLICAS[key] = build_replica(cfg, hardware, scheduler=scheduler, tp=tp, pp=pp, max_num_seqs=seqs,
                                       max_batched_tokens=tokens, step=step, sizings=sizings, **replica_options)
        step = _REPLICAS[key][1]
    return [_task((key, target, cfg.max_positions)) for key in keys]


def _ray_results(address: str, cfg: Any, hardwares: list[Any], scheduler: str, keys: list[tuple], target: Target,
                 replica_options: dict[str, Any]) -> list[dict[str, Any]]:
    """`_task`'s results for `keys`, in that order, from Ray tasks (one per hardware, tp and pp)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'transformer-costmodel[ray]' (or '.[ray]' in a checkout).") \
            from None
    if not ray.is_initialized():  # a local instance without its dashboard; a cluster as it is configured
        if not address.strip():
            raise ConfigError("--ray needs an address: 'local', 'auto' or a cluster's HOST:PORT.")
        try:
            ray.init(address=address, **({"include_dashboard": False} if address == "local" else {}))
        except (ValueError, ConnectionError, RuntimeError) as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConfigError(f"--ray {address!r}: Ray could not connect ({message}).") from None
    by_name = {hardware.name: hardware for hardware in hardwares}
    groups: dict[tuple, list[tuple]] = {}
    for key in keys:
        groups.setdefault((key[0], key[1], key[2]), []).append(key)
    remote = ray.remote(_group_task)
    futures = {group: remote.remote(cfg, by_name[group[0]], scheduler, members, target, replica_options)
               for group, members in groups.items()}
    results = {}
    for group, future in futures.items():
        results.update({result["key"]: result for result in ray.get(future)})
    return [results[key] for key in keys]


def tensor_sizes(cfg: Any, hardware: Any) -> list[int]:
    """1, 2, 4 and 8 where a node holds them and they split the model as serving does (key/value
    heads replicated where tp exceeds them: layout/tensor_split.tensor_split_error)."""
    return [tp for tp in (1, 2, 4, 8) if tp <= max(1, hardware.gpus_per_node)
            and tensor_split_error(cfg, tp, inference=True) is None]


def require_w8a8_somewhere(fmt: Any, hardwares: list[Any]) -> None:
    """fp8 weights no hardware of the search runs (--fp8-gemm w8a8 without an FP8 peak, or a GPU
    with neither FP8 path): runs_w8a8's one line, not a table of configurations each refused for
    the same reason (one of several is left out configuration by configuration, its reason in the
    JSON)."""
    errors = []
    for hardware in hardwares:
        try:
            runs_w8a8(fmt, hardware)
            return
        except ConfigError as error:
            errors.append(error)
    if errors:
        raise errors[0]


def check_target_numbers(rate: float | None, slo_ttft: float | None, slo_tpot: float | None) -> None:
    """Refuse a rate or SLO that is not a positive, finite number (None: not given), in one line: a
    bad number is named before anything missing (`plan --serve --rate nan` named the SLOs first)."""
    for name, value in (("--rate", rate), ("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ConfigError(f"{name} must be a positive, finite number, got {show(value)}.")


def fork_is_safe() -> bool:
    """Whether a forked pool can run the searches: only from a process of one thread that has not
    loaded torch. A child forked while another thread holds a lock (torch's intra-op pool, a test
    runner's threads) can wait on it forever; the CLI's core never imports torch, so it keeps its
    pool, and a process that did runs the searches one by one."""
    import sys
    import threading

    return threading.active_count() == 1 and "torch" not in sys.modules


def plan_capacity(cfg: Any, hardwares: list[Any], target: Target, *, scheduler: str = "vllm",
                  tps: list[int] | None = None, pps: list[int] | None = None, max_num_seqs: list[int] | None = None,
                  max_batched_tokens: list[int] | None = None, processes: int | None = None,
                  ray_address: str | None = None, price: float | None = None,
                  **replica_options: Any) -> dict[str, Any]:
    """Every configuration's fewest replicas meeting the target, ranked by GPUs then $/h (price:
    dollars per GPU-hour of the one hardware searched, else each hardware file's); the
    searches run in a local process pool, or in the Ray cluster at ray_address ("local" starts
    one on this machine; an already initialised Ray is used as it is)."""
    import multiprocessing
    import os

    check_target_numbers(target.rate, target.slo_ttft, target.slo_tpot)
    require_decoder_only(cfg)  # else every configuration read "not feasible" and the search exited 0
    require_chunks(cfg)  # DeepSeek-V4: as serve's one line, not 36 configurations each "not feasible"
    check_ssm_cache_dtype(cfg, replica_options.get("mamba_ssm_cache_dtype", "auto"))  # else every one set aside
    check_requests(target.requests)
    # serve's rule: a request past the context is refused (vLLM's max_model_len), not a table of
    # configurations each "not feasible" (request 0) and exit 1
    check_drawn_lengths(poisson(target.rate, target.requests, Lengths.parse(target.prompt),
                                Lengths.parse(target.output), target.seed),
                        target.prompt, target.output, cfg.max_positions)
    check_price(price)
    release = engine_release_for(scheduler, replica_options.get("engine_release"))  # one line, not one a configuration
    for pp in pps or []:
        engine_release_for(scheduler, replica_options.get("engine_release"), pp)
    for tp in tps or []:  # a typed --tp the model cannot take: serve's one line, not a table of
        why = tensor_split_error(cfg, tp, inference=True)  # configurations each refused for it (exit 1)
        if why is not None:
            raise ConfigError(f"--tp {tp} {why}.")
    names = [hardware.name for hardware in hardwares]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:  # else each of its configurations was searched and listed twice
        raise ConfigError(f"--hardware: {twice} is named twice (its spellings and aliases are one hardware).")
    if price is not None and len(hardwares) > 1:
        raise ConfigError("--price is one hardware's dollars per GPU-hour; to compare several, give each hardware "
                          "file its price_per_gpu_hour.")
    formats = ("weight_dtype", "kv_dtype", "attention", "mla", "fp8_gemm", "weight_group", "quant_layout", "decode_code")
    profile = replica_profile(cfg, scheduler, **{name: replica_options[name] for name in formats
                                                 if name in replica_options})
    require_w8a8_somewhere(getattr(profile, "weight_format", None), hardwares)
    backend = replica_options.get("attention_backend") or DEFAULT_SERVING_BACKEND
    for hardware in hardwares:  # serve's one line (a name without rates, the roofline, flash-attn3 off Hopper)
        backend_kernel(backend, hardware, replica_options.get("time_model"), replica_options.get("dtype"))
    require_engine_steps(cfg, profile)  # else every configuration set aside for the model's one reason
    seqs_list = max_num_seqs or [64, 128, 256]
    tokens_list = max_batched_tokens or ([None] if scheduler == "static" else [512, 2048, 8192])  # static: no budget
    keys, infeasible = [], []
    for hardware in hardwares:
        for tp in tps or tensor_sizes(cfg, hardware):
            for pp in pps or [1]:
                step, sizings = None, {}  # one step-time model per (hardware, tp, pp), one sizing per budget
                for tokens in tokens_list:
                    for seqs in seqs_list:
                        key = (hardware.name, tp, pp, seqs, tokens)
                        try:
                            _REPLICAS[key] = build_replica(cfg, hardware, scheduler=scheduler, tp=tp, pp=pp,
                                                           max_num_seqs=seqs, max_batched_tokens=tokens, step=step,
                                                           sizings=sizings, **replica_options)
                            step = _REPLICAS[key][1]
                            keys.append(key)
                        except ConfigError as error:
                            infeasible.append({"hardware": hardware.name, "tp": tp, "pp": pp, "max_num_seqs": seqs,
                                               "max_batched_tokens": tokens, "reason": str(error)})
    tasks = [(key, target, cfg.max_positions) for key in keys]
    configurations = len(keys) + len(infeasible)
    processes = processes or os.cpu_count() or 1
    if ray_address is not None:
        results = _ray_results(ray_address, cfg, hardwares, scheduler, keys, target, replica_options)
    elif processes > 1 and len(tasks) > 1 and fork_is_safe():
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            # Each worker fills its own copy of a step-time model's tables (decode rows, chunks, token
            # counts): a chunk of one model's configurations (consecutive in tasks) fills them once a
            # worker, not in both; at most half the tasks a chunk, so that both workers run.
            chunk = max(1, min(len(seqs_list) * len(tokens_list), -(-len(tasks) // processes)))
            results = pool.map(_task, tasks, chunksize=chunk)
    else:
        results = [_task(task) for task in tasks]
    prices = {h.name: price if price is not None else getattr(h, "price_per_gpu_hour", None) for h in hardwares}
    feasible = []
    for result in results:
        name, tp, pp, seqs, tokens = result.pop("key")
        row = {"hardware": name, "tp": tp, "pp": pp, "max_num_seqs": seqs, "max_batched_tokens": tokens, **result}
        if row["replicas"] is None:
            infeasible.append(row)
            continue
        row["gpus"] = row["replicas"] * tp * pp
        price = prices.get(name)
        row["dollars_per_hour"] = price * row["gpus"] if price else None
        # dollars per million output tokens over the rate the replicas sustain (serve --price's rule)
        row["dollars_per_million_output_tokens"] = serving_cost(
            row["replicas"] * row["replica_sustained_output_tokens_per_s"], row["gpus"], price
        )["dollars_per_million_output_tokens"] if price else None
        row["num_blocks"] = _REPLICAS[(name, tp, pp, seqs, tokens)][2]["num_blocks"]
        feasible.append(row)
    feasible.sort(key=lambda r: (r["gpus"], r["dollars_per_hour"] or 0.0, r["p99_ttft_s"]))
    weight_dtype, _, source = inference_weights(cfg, replica_options.get("weight_dtype"),
                                                replica_options.get("weight_group"))  # as build_replica's
    # fp8 weights: how each hardware multiplies them (W8A8 at an FP8 peak, else weight-only), as serve's setup says
    fp8_gemms = {setup["hardware"]: {key: setup[key] for key in ("fp8_gemm", "fp8_gemm_runs", "dtype")}
                 for _, _, setup in (_REPLICAS[(r["hardware"], r["tp"], r["pp"], r["max_num_seqs"], r["max_batched_tokens"])]
                                     for r in feasible) if setup.get("fp8_gemm_runs")}
    return {"target": target.__dict__, "scheduler": scheduler,
            **({"engine_release": release.tag, "engine_release_source": release.source} if release else {}),
            "decode_code": profile.decode_code,
            "attention_backend": backend,
            "configurations": configurations,
            "weight_dtype": weight_dtype, "weight_dtype_source": source,
            **({"fp8_gemms": fp8_gemms} if fp8_gemms else {}),
            "feasible": feasible, "infeasible": infeasible}
