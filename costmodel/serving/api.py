"""`costmodel.serve(...)`: build the requests, the replica (replica.py: KV cache, scheduler, step
time), run the event loop on each replica and return frames. `python cli.py serve` calls this."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError, show
from ..cost import check_price, price_of, priced_from, serving_cost
from ..plain import plain_arguments
from ..sizes import spelled_out
from .. import spec
from ..json_units import JSON_UNITS
from . import metrics
from .engine import ROUTERS, simulate_replicas
from .scheduler_state import SchedulingError
from .kvcache import BlockPool
from .replica import build_replica, require_decoder_only
from .steptime import StepTime
from .workload import Lengths, Request, check_whole, poisson, read_trace


@dataclass
class ServeRun:
    """A finished simulation: per-request and per-step frames and the setup."""

    requests: Any
    steps: Any
    itl: Any
    setup: dict[str, Any] = field(default_factory=dict)

    def summary(self, slo_ttft: float | None = None, slo_tpot: float | None = None) -> dict[str, Any]:
        """What `serve --json` prints: the setup, TTFT/TPOT percentiles, throughput, goodput at the SLOs
        (the run's unless given), with a price the cost, and the units (json_units.JSON_UNITS["serve"]: the
        command added them, so `run.summary()`, documented as its JSON, lacked them)."""
        slo_ttft = self.setup.get("slo_ttft_s") if slo_ttft is None else slo_ttft
        slo_tpot = self.setup.get("slo_tpot_s") if slo_tpot is None else slo_tpot
        summary = {"setup": self.setup, **metrics.summarize(self.requests, self.steps, self.itl, slo_ttft, slo_tpot,
                                                                    self.setup.get("rate"))}
        price = self.setup.get("price_per_gpu_hour")
        if price is not None:  # serve --price, or the hardware file's price_per_gpu_hour
            throughput = summary["throughput"]  # over the rate it sustains (metrics.sustained_output), not the run's
            summary["cost"] = serving_cost(throughput["sustained_output_tokens_per_s"], self.setup["gpus"], price,
                                           throughput["sustained_basis"], self.setup.get("price_source"))
        return {**summary, "units": JSON_UNITS["serve"]}

    def to_dict(self) -> dict[str, Any]:
        """Exactly what `serve --json` prints: summary() (its units included), a NaN (the percentiles of no
        value: TPOT where every request emits one token) as null and --rate inf as "inf". summary()
        keeps the NaN, which json.dumps writes as NaN, not JSON."""
        from ..plain import finite

        summary = self.summary()
        return finite({**summary, "setup": {**summary["setup"], "rate": json_rate(summary["setup"]["rate"])}}, nan=True)

    def text(self) -> str:
        """The `serve` command's text (printing the run shows it, as simulate's and plan's results do; it
        printed the dataclass: two DataFrames' reprs and the setup dict)."""
        from ..tools_path import tool

        return tool("reports.serving").render_serve(self.summary())

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(self.text())}</pre>"


def json_rate(rate: float | None) -> float | str | None:
    """A request rate as --json writes it: --rate inf (every request at time 0, vLLM's benchmark
    default) as the string "inf", which finite() would make the null of a run with no rate."""
    return "inf" if rate is not None and math.isinf(rate) else rate


def make_requests(rate: float | None = None, requests: int = 1000, trace: str | None = None,
                  prompt: str | Lengths = "512", output: str | Lengths = str(spec.DEFAULT_GEN_TOKENS), seed: int = 0,
                  concurrency: int | None = None, context: int | None = None) -> list[Request]:
    """The requests of a run: a trace's (a line past `context`, the model's, named); Poisson arrivals
    at `rate`; or, with `concurrency`, the lengths of `requests` requests (or of the trace's, in its
    order) whose arrivals the closed loop sets (engine.simulate_replicas)."""
    if concurrency is not None:
        if rate is not None:
            raise ConfigError("--concurrency and --rate are two load generators: give one of them.")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"--concurrency must be a positive number of clients, got {show(concurrency)}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"--seed must be a whole number, at least 0, got {show(seed)}.")
    if trace is not None:  # its count, lengths and arrivals: what would draw others is refused, not dropped
        unread = [name for name, given in (("--requests", requests != 1000), ("--prompt", str(prompt) != "512"),
                                           ("--output", str(output) != str(spec.DEFAULT_GEN_TOKENS)), ("--seed", seed != 0)) if given]
        if unread:
            raise ConfigError(f"{', '.join(unread)}: --trace gives the requests and their lengths; "
                              "leave them out with a trace (they draw requests for --rate or --concurrency).")
        return read_trace(trace, context)
    if rate is None and concurrency is None:
        raise ConfigError("give --rate (requests per second), --concurrency (clients) or --trace.")
    # A closed loop draws its lengths as the all-at-once Poisson stream does (rate inf: no gaps).
    return poisson(math.inf if concurrency is not None else rate, requests,
                   as_lengths(prompt, "--prompt"), as_lengths(output, "--output"), seed)


def check_drawn_lengths(chosen: list[Request], prompt: Any, output: Any, context: int) -> None:
    """A drawn request past the model's context, with the options that drew it: an unbounded
    distribution (lognormal:MEDIAN:SIGMA) needs the bounds that keep it inside."""
    past = next((r for r in chosen if r.prompt_tokens + r.output_tokens > context), None)
    if past is not None:
        drawn = any(as_lengths(value, "").kind != "fixed" for value in (prompt, output))
        if not drawn:  # every request is the same: "request 0" named none of them and nothing to do
            raise ConfigError(f"--prompt {prompt} + --output {output} tokens pass the model's context of {context}; "
                              f"give them at most {context} together.")
        raise ConfigError(f"request {past.id}: prompt {past.prompt_tokens} + output {past.output_tokens} tokens "
                          f"pass the model's context of {context}"
                          + f" (drawn from --prompt {prompt} --output {output}: bound the distribution inside it, "
                            "e.g. lognormal:MEDIAN:SIGMA:LOW:HIGH).")


def as_lengths(value: str | Lengths, option: str) -> Lengths:
    """A length distribution from an option's text; an error names the option."""
    if isinstance(value, Lengths):
        return value
    try:
        return Lengths.parse(str(value))
    except ConfigError as error:
        raise ConfigError(f"{option}: {error}") from None


def load_mode(rate: float | None, trace: str | None, concurrency: int | None) -> str:
    """The load generator's name, as the setup and the per-request CSV give it."""
    return "concurrency" if concurrency is not None else "trace" if trace is not None else "poisson"


def run_replicas(requests: list[Request], replica: tuple, step: StepTime, replicas: int,
                 max_model_len: int, record: bool = True, router: str = "round-robin",
                 concurrency: int | None = None) -> tuple[list, list, list]:
    """Simulate the replicas behind the router (steady decoding advanced several steps at a time;
    record=False keeps no per-step timeline, and gives no inter-token latencies: an empty array).

    A replica of pp pipeline stages is pp virtual engines, as vLLM's pipeline parallelism runs it
    (v0: one scheduler and 1/pp of the KV blocks per virtual engine; v1 keeps pp batches in flight
    in a batch queue): each engine's batch takes the whole pipeline's step (StepTime with pp), and
    pp such batches run at once, one per stage. The stages' contention when the batches differ in
    size is not modelled. The router sees the virtual engines as replicas."""
    import numpy as np

    cls, blocks, block_size, seqs, tokens = replica
    pp = getattr(step, "pp", 1)
    schedulers = [cls(BlockPool(blocks // pp, block_size), seqs, tokens) for _ in range(replicas * pp)]
    timelines = simulate_replicas(requests, schedulers, step.seconds, max_model_len, router, record, step.decode_run,
                                  concurrency, getattr(step, "host_time", None))
    rows, steps, itl = [], [], []
    for index, timeline in enumerate(timelines):
        rows += metrics.request_rows(timeline, index)
        steps += metrics.step_rows(timeline, index)
        if record:  # (record=False: a search's point, which reads the request rows alone)
            itl.append(metrics.inter_token_latencies(timeline))
    return rows, steps, [np.concatenate(itl) if itl else np.zeros(0)]


def check_replica_keywords(options: dict[str, Any]) -> None:
    """Each of serve's replica keywords one of build_replica's (scheduler, max_num_seqs, tp, ...), else one
    ConfigError naming the likely one: serve(..., foo=1) raised Python's TypeError naming build_replica."""
    import difflib
    import inspect

    known = [name for name in inspect.signature(build_replica).parameters if name not in ("cfg", "hardware")]
    for name in options:
        if name in spec.NOT_A_REPLICA:
            raise ConfigError(f"serve: unknown keyword {name!r}: {spec.NOT_A_REPLICA[name]}.")
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            raise ConfigError(f"serve: unknown keyword {name!r}{f' (did you mean {near[0]}?)' if near else ''}; a replica "
                              f"takes {', '.join(known)}.")



@plain_arguments
def serve(model: Any, hardware: Any = "h100-sxm", *, rate: float | None = None, requests: int = 1000,
          trace: str | None = None, prompt: str | Lengths = "512", output: str | Lengths = str(spec.DEFAULT_GEN_TOKENS),
          seed: int = 0, replicas: int = 1, router: str | None = None, slo_ttft: float | None = None,
          slo_tpot: float | None = None, disaggregate: tuple[int, int] | None = None,
          concurrency: int | None = None, price: float | None = None, **replica_options: Any) -> ServeRun:
    """Simulate serving `model` on `replicas` replicas of `hardware` (a preset name or Hardware),
    or, with disaggregate=(P, D), on P prefill-only and D decode-only replicas
    (costmodel/serving/disaggregated.py). The load: Poisson arrivals at `rate`, a `trace`, or
    `concurrency` clients in a closed loop (each sends its next request when its previous one
    finishes; `requests` in all, or the trace's lengths in its order). replica_options: scheduler, max_num_seqs,
    max_batched_tokens, block_size, gpu_memory_utilization, num_blocks, tp, pp, dtype, weight_dtype,
    weight_group, quant_layout, kv_dtype, attention, attention_backend (flash-attn2, flash-attn3; kernel_facts.json
    "serving_attention_backends"), mla, fp8_gemm, prefix_caching (default: on for vllm, as vLLM v1),
    num_scheduler_steps (vllm-v0's multi-step scheduling; default 1), efficiency,
    time_model (default: hardware.time_model_for's), cuda_graphs (auto: the engine's, graphs.py; on; off),
    max_capture_len (vllm-v0: vLLM's max_seq_len_to_capture; default 8,192),
    mamba_ssm_cache_dtype (vllm and vllm-v0: a hybrid's SSM states in the model dtype, auto, or float32),
    engine_release (sglang: v0.3.0 or v0.4.0, the default; serving/sglang.py).
    price: dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one), which
    adds the summary's cost (costmodel/cost.py serving_cost)."""
    import pandas as pd

    from ..api import load_model
    from ..hardware import Hardware, load_hardware

    cfg = load_model(model)
    require_decoder_only(cfg)  # before the requests: BERT's 512 + 128 default lengths read as "pass the context"
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(str(hardware))
    check_whole("--replicas", replicas)
    check_price(price)
    for name, value in (("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not (value > 0 and math.isfinite(value))):  # "1" raised a TypeError
            raise ConfigError(f"{name} must be a positive number of seconds, got {show(value)}.")
    pools = (replicas,) if disaggregate is None else tuple(disaggregate)
    if router is not None and max(pools) == 1:
        raise ConfigError(f"--router {router} spreads arrivals over replicas; {'each pool has' if disaggregate else 'there is'} "
                          "one replica, so nothing is routed: add --replicas (or a larger --disaggregate pool), or "
                          "leave --router out.")
    router = router or ROUTERS[0]
    chosen = make_requests(rate, requests, trace, prompt, output, seed, concurrency, cfg.max_positions)
    if trace is None:
        check_drawn_lengths(chosen, prompt, output, cfg.max_positions)
    if concurrency is not None and disaggregate is not None:
        raise ConfigError("--concurrency runs aggregated replicas; --disaggregate takes --rate or --trace.")
    if disaggregate is not None and replicas != 1:
        raise ConfigError(f"--disaggregate {':'.join(map(str, disaggregate))} replaces --replicas (its P + D replicas "
                          f"are the deployment); give one of them.")
    check_replica_keywords(replica_options)
    replica, step, setup = build_replica(cfg, hw, **replica_options)
    most = setup["kv_cache"].get("most_blocks")
    if most is not None and setup["num_blocks"] > most:  # (build_replica's own callers may ask for an unbounded pool)
        kv = setup["kv_cache"]
        raise ConfigError(f"--num-blocks {setup['num_blocks']:,}: {hw.name} holds at most {most:,} blocks of "
                          f"{setup['block_size']} tokens at tp {setup['tp']} (all of its {kv['memory_bytes'] / 2**30:.4g} "
                          f"GiB less the reserve, weights {kv['weight_bytes'] / 2**30:.1f} GiB and activations "
                          f"{kv['activation_bytes'] / 2**30:.2f} GiB per GPU); the engine would run out of memory "
                          "allocating more.")
    if disaggregate is not None and "state_bytes_per_request" in setup["kv_cache"]:
        raise ConfigError(f"--disaggregate: moving {cfg.name}'s recurrent states to the decode pool is not modelled.")
    if disaggregate is not None:
        from .disaggregated import run_disaggregated
        from .schedulers import SCHEDULERS

        why = SCHEDULERS[setup["scheduler"]].no_disaggregation
        if why:
            raise ConfigError(f"--disaggregate splits prefill and decode over two pools of one engine; the "
                              f"{setup['scheduler']} scheduler's cannot: {why}. Use --scheduler vllm (or another "
                              "serving engine's), or leave --disaggregate out.")

        if setup["pp"] > 1:
            raise ConfigError("--disaggregate runs tensor-parallel pools only; drop --pp.")
        if len(disaggregate) != 2 or min(disaggregate) < 1:
            raise ConfigError(f"--disaggregate is PREFILL:DECODE replicas, each at least 1; got {show(disaggregate)}.")
        replicas = sum(disaggregate)
        rows, steps, itl = run_disaggregated(chosen, replica, step, disaggregate[0], disaggregate[1], cfg.max_positions,
                                             hw, setup["kv_cache"]["kv_bytes_per_token"], router)
    else:
        try:
            rows, steps, itl = run_replicas(chosen, replica, step, replicas, cfg.max_positions, router=router,
                                            concurrency=concurrency)
        except SchedulingError as error:
            _beyond_any_utilization(error, cfg, hw, replica_options, setup)
            raise
    load = load_mode(rate, trace, concurrency)
    setup.update({"replicas": replicas, "router": router, "load": load, "concurrency": concurrency,
                  "rate": rate, "trace": trace,
                  "prompt": _lengths([r.prompt_tokens for r in chosen]) if trace else spelled_out(prompt),
                  "output": _lengths([r.output_tokens for r in chosen]) if trace else spelled_out(output),
                  "seed": seed, "disaggregate": disaggregate,
                  "slo_ttft_s": slo_ttft, "slo_tpot_s": slo_tpot, "gpus": replicas * setup["tp"] * setup["pp"],
                  "price_per_gpu_hour": price_of(price, hw)[0], **priced_from(price_of(price, hw)[1])})
    frame = pd.DataFrame(rows).sort_values("id").reset_index(drop=True)
    frame["load"] = load
    return ServeRun(frame, pd.DataFrame(steps), itl[0], setup)


def _beyond_any_utilization(error: Exception, cfg: Any, hw: Any, replica_options: dict[str, Any],
                            setup: dict[str, Any]) -> None:
    """A request longer than the KV cache holds was told to "raise --gpu-memory-utilization" even where
    all of the GPU's memory holds too few blocks (Llama 3.1 8B, a 100,000-token prompt on an RTX 4090:
    6,257 blocks needed, 3,105 at 0.9, 4,226 at 1.0): then the ConfigError names what does shrink it."""
    needed = getattr(error, "blocks_needed", None)
    if needed is None or replica_options.get("num_blocks") is not None:
        return
    whole = build_replica(cfg, hw, **{**replica_options, "gpu_memory_utilization": 1.0})[0][1] // setup["pp"]
    if whole >= needed:
        return
    kv = setup["kv_cache"]
    fewer = "" if setup["kv_dtype"] not in (None, "bf16", "fp16", "fp32") else "store the KV cache in fewer bytes (--kv-dtype fp8), "
    raise ConfigError(
        f"request {error.request_id} needs {needed:,} KV blocks of {kv['block_size']} tokens; the cache holds "
        f"{error.blocks_held:,} at --gpu-memory-utilization {kv['gpu_memory_utilization']:g}, and all of "
        f"{hw.name}'s memory {whole:,}: {fewer}spread the model over more GPUs (--tp, --pp), store its weights in "
        "fewer bytes (--weight-dtype), or shorten the request (--prompt, --output).") from None


def _lengths(tokens: list[int]) -> str:
    """A trace's lengths in words (its own, not the --prompt/--output defaults it overrides)."""
    low, high = min(tokens), max(tokens)
    return f"{low}" if low == high else f"{low}-{high} (mean {sum(tokens) / len(tokens):.0f})"
